/*
 * files_test.h — the scene every files test plays in: a temporary base holding `root` (the
 * working directory or sink root under attack) and `outside` (what must never be touched),
 * with a sentinel file in `outside` whose content proves it was not written through.
 */
#ifndef MSB_FILES_TEST_H
#define MSB_FILES_TEST_H

#include <limits.h>
#include <stdbool.h>

#define FILES_SENTINEL "SECRET"

/* snprintf into a path buffer, failing the test rather than truncating (needs cmocka.h). */
#define PATHF(buf, size, ...) assert_true(snprintf((buf), (size), __VA_ARGS__) < (int)(size))
#define PATHF_N PATHF

typedef struct files_scene {
	char base[PATH_MAX];
	char root[PATH_MAX];
	char outside[PATH_MAX];
	int root_fd; /* msb_confine_open_root(root) */
} files_scene;

/* Make a fresh scene under $TMPDIR (or /tmp); aborts the test on failure. */
void files_scene_make(files_scene *s);
/* Remove it all (never following links) and close root_fd. */
void files_scene_remove(files_scene *s);
/*
 * A cmocka teardown: remove every scene a test made and did not remove — the test failed an
 * assertion, which longjmps past its own cleanup. Every test making a scene uses it.
 */
int files_scene_teardown(void **state);
/* Whether `outside` still holds exactly the sentinel file with its content. */
bool files_outside_untouched(const files_scene *s);
/* Write `text` to root-relative `rel`, plainly (test setup, not under test). */
void files_put(const files_scene *s, const char *rel, const char *text);
/* mkdir -p root-relative `rel`, plainly. */
void files_mkdir(const files_scene *s, const char *rel);
/* symlink(target, root/rel); `target` may name "@OUT" to mean the absolute outside dir. */
void files_link(const files_scene *s, const char *rel, const char *target);
/* Whether root-relative `rel` exists (lstat). */
bool files_exists(const files_scene *s, const char *rel);
/* The content of root-relative `rel` into buf (NUL-terminated), or "" when unreadable. */
void files_get(const files_scene *s, const char *rel, char *buf, size_t size);

#endif
