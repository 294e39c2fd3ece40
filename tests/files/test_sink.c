/*
 * test_sink.c — the file-system sink: where artifacts land, what it refuses, and a race.
 *
 * The race is the point of the C sink: a thread flips a parent directory of the landing
 * names between a real directory and a symlink to outside (a rename dance, so every state
 * the deliverer can observe is one a hostile guest could leave) while 1,000 artifacts are
 * delivered. Each delivery lands inside root or is refused; the outside directory must end
 * exactly as it began. It runs via openat2 and via the O_NOFOLLOW walk.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/confine.h>
#include <msb/outputs.h>

#include "files_test.h"

static msb_errc land(msb_output_sink *sink, const char *name, const char *text,
		     msb_landed_artifact *landed, msb_error *err)
{
	msb_artifact a = { .name = name, .content = (const unsigned char *)text, .len = strlen(text),
			   .kind = "k", .media_type = "text/plain" };
	*landed = (msb_landed_artifact){ 0 };
	return sink->deliver(sink->ctx, &a, landed, err);
}

static msb_output_sink *sink_at(files_scene *s, msb_landing_existing existing, const char *display)
{
	msb_file_system_sink_options o = MSB_FILE_SYSTEM_SINK_OPTIONS_INIT;
	o.existing = existing;
	o.display = display;
	msb_output_sink *sink = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_file_system_sink_new(s->root, &o, &sink, &err), MSB_OK);
	return sink;
}

static void lands_nested_with_display_and_handle(void **state)
{
	files_scene s;
	files_scene_make(&s);
	msb_output_sink *sink = sink_at(&s, MSB_LANDING_REFUSE, NULL);
	msb_error err = MSB_ERROR_INIT;
	msb_landed_artifact l;
	assert_int_equal(land(sink, "out/deep/a.txt", "hello", &l, &err), MSB_OK);
	assert_string_equal(l.name, "out/deep/a.txt");
	assert_string_equal(l.display, "out/deep/a.txt (5 bytes)");
	assert_string_equal(l.media_type, "text/plain");
	char want[PATH_MAX], got[16];
	PATHF(want, sizeof want, "%s/out/deep/a.txt", s.root);
	assert_string_equal(l.handle, want);
	assert_null(strstr(l.display, s.base)); /* the host path never reaches the display */
	files_get(&s, "out/deep/a.txt", got, sizeof got);
	assert_string_equal(got, "hello");
	msb_landed_artifact_free(&l);
	msb_output_sink_free(sink);

	sink = sink_at(&s, MSB_LANDING_REFUSE, "Rendered {name}: {bytes} bytes of {media_type} {{ok}}");
	assert_int_equal(land(sink, "b.txt", "abc", &l, &err), MSB_OK);
	assert_string_equal(l.display, "Rendered b.txt: 3 bytes of text/plain {ok}");
	msb_landed_artifact_free(&l);
	msb_output_sink_free(sink);
	files_scene_remove(&s);
}

static void refuses_bad_template_and_missing_root(void **state)
{
	files_scene s;
	files_scene_make(&s);
	msb_file_system_sink_options o = MSB_FILE_SYSTEM_SINK_OPTIONS_INIT;
	o.display = "{name} at {handle}";
	msb_output_sink *sink = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_file_system_sink_new(s.root, &o, &sink, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "unknown placeholder"));
	o.display = "{name} }";
	assert_int_equal(msb_file_system_sink_new(s.root, &o, &sink, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "lone '}'"));
	o = (msb_file_system_sink_options){ .struct_size = 4 };
	assert_int_equal(msb_file_system_sink_new(s.root, &o, &sink, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "MSB_FILE_SYSTEM_SINK_OPTIONS_INIT"));
	char missing[PATH_MAX];
	PATHF(missing, sizeof missing, "%s/nope", s.base);
	assert_int_equal(msb_file_system_sink_new(missing, NULL, &sink, &err), MSB_E_NOT_FOUND);
	assert_non_null(strstr(msb_error_message(&err), "nope"));
	assert_non_null(strstr(msb_error_message(&err), "cannot be opened as a directory"));
	assert_int_equal(msb_file_system_sink_new(NULL, NULL, &sink, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "file-system sink: no root directory given"));
	assert_int_equal(msb_file_system_sink_new("", NULL, &sink, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "no root directory given"));
	assert_null(sink);
	msb_error_clear(&err);
	files_scene_remove(&s);
}

static void existing_refused_or_replaced(void **state)
{
	files_scene s;
	files_scene_make(&s);
	files_put(&s, "taken.txt", "first");
	msb_output_sink *sink = sink_at(&s, MSB_LANDING_REFUSE, NULL);
	msb_error err = MSB_ERROR_INIT;
	msb_landed_artifact l;
	assert_int_equal(land(sink, "taken.txt", "second", &l, &err), MSB_E_LANDING_EXISTS);
	assert_non_null(strstr(msb_error_message(&err), "'taken.txt' is already there"));
	char got[16];
	files_get(&s, "taken.txt", got, sizeof got);
	assert_string_equal(got, "first");
	msb_output_sink_free(sink);
	sink = sink_at(&s, MSB_LANDING_REPLACE, NULL);
	assert_int_equal(land(sink, "taken.txt", "second", &l, &err), MSB_OK);
	files_get(&s, "taken.txt", got, sizeof got);
	assert_string_equal(got, "second");
	msb_landed_artifact_free(&l);
	/* What the host's own tree makes impossible is refused naming the artifact and the cause. */
	assert_int_equal(land(sink, "taken.txt/under", "third", &l, &err), MSB_E_NOT_DIR);
	assert_non_null(strstr(msb_error_message(&err), "file-system sink: artifact 'taken.txt/under' was not written: "));
	char dir[PATH_MAX];
	PATHF(dir, sizeof dir, "%s/adir", s.root);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(land(sink, "adir", "fourth", &l, &err), MSB_E_IS_DIR);
	assert_non_null(strstr(msb_error_message(&err), "file-system sink: artifact 'adir' was not written: "));
	assert_non_null(strstr(msb_error_message(&err), "it is a directory"));
	msb_output_sink_free(sink);
	msb_error_clear(&err);
	files_scene_remove(&s);
}

/* The adversarial table, sink side: each plant, each mode, the expected refusal. */
typedef struct sink_case {
	const char *name;
	const char *plant_link;   /* root-relative link name, or NULL */
	const char *link_target;  /* "@OUT…" is the outside dir */
	const char *mkdir_first;  /* a directory to make before linking, or NULL */
	bool hard_link;           /* plant root/hl as a hard link to outside/secret */
	bool fifo;                /* plant root/fifo */
	msb_landing_existing existing;
	const char *artifact;
	msb_errc want;
	const char *words;
} sink_case;

static const sink_case sink_cases[] = {
	{ "link parent absolute", "ln", "@OUT", NULL, false, false, MSB_LANDING_REFUSE, "ln/x", MSB_E_LANDING_NOT_CONFINED, "'ln/x' does not stay inside" },
	{ "link parent relative", "ln", "../outside", NULL, false, false, MSB_LANDING_REPLACE, "ln/x", MSB_E_LANDING_NOT_CONFINED, "'ln/x' does not stay inside" },
	{ "link at level 2", "a/ln", "@OUT", "a", false, false, MSB_LANDING_REFUSE, "a/ln/x", MSB_E_LANDING_NOT_CONFINED, "'a/ln' is a symbolic link" },
	{ "link at level 3, new dirs below", "a/b/ln", "../../../outside", "a/b", false, false, MSB_LANDING_REFUSE, "a/b/ln/c/d/x", MSB_E_LANDING_NOT_CONFINED, "'a/b/ln' is a symbolic link" },
	{ "leaf link to outside file, replace", "ln", "@OUT/secret", NULL, false, false, MSB_LANDING_REPLACE, "ln", MSB_E_LANDING_NOT_CONFINED, "symbolic link" },
	{ "leaf link dangling to outside", "ln", "@OUT/new", NULL, false, false, MSB_LANDING_REFUSE, "ln", MSB_E_LANDING_NOT_CONFINED, "symbolic link" },
	{ "link to /", "ln", "/", NULL, false, false, MSB_LANDING_REFUSE, "ln/tmp/x", MSB_E_LANDING_NOT_CONFINED, "symbolic link" },
	{ "hard link to outside, refuse", NULL, NULL, NULL, true, false, MSB_LANDING_REFUSE, "hl", MSB_E_LANDING_EXISTS, "'hl' is already there" },
	{ "hard link to outside, replace", NULL, NULL, NULL, true, false, MSB_LANDING_REPLACE, "hl", MSB_OK, NULL },
	{ "fifo, refuse", NULL, NULL, NULL, false, true, MSB_LANDING_REFUSE, "fifo", MSB_E_LANDING_EXISTS, "'fifo' is already there" },
	{ "fifo, replace (never opened)", NULL, NULL, NULL, false, true, MSB_LANDING_REPLACE, "fifo", MSB_OK, NULL },
	{ "dotdot name", NULL, NULL, NULL, false, false, MSB_LANDING_REFUSE, "../outside/x", MSB_E_ARTIFACT_NAME_INVALID, "'..'" },
	{ "absolute name", NULL, NULL, NULL, false, false, MSB_LANDING_REFUSE, "/tmp/x", MSB_E_ARTIFACT_NAME_INVALID, "absolute" },
	{ "backslash name", NULL, NULL, NULL, false, false, MSB_LANDING_REFUSE, "a\\b", MSB_E_ARTIFACT_NAME_INVALID, "backslash" },
	{ "empty segment name", NULL, NULL, NULL, false, false, MSB_LANDING_REFUSE, "a//b", MSB_E_ARTIFACT_NAME_INVALID, "empty or '.'" },
	{ "control character name", NULL, NULL, NULL, false, false, MSB_LANDING_REFUSE, "a\nb", MSB_E_ARTIFACT_NAME_INVALID, "control character" },
};

#define N_SINK_CASES (sizeof sink_cases / sizeof sink_cases[0])

static void run_sink_case(void **state)
{
	const sink_case *c = *state;
	files_scene s;
	files_scene_make(&s);
	if (c->mkdir_first)
		files_mkdir(&s, c->mkdir_first);
	if (c->plant_link)
		files_link(&s, c->plant_link, c->link_target);
	if (c->hard_link) {
		char from[PATH_MAX], to[PATH_MAX];
		PATHF(from, sizeof from, "%s/secret", s.outside);
		PATHF(to, sizeof to, "%s/hl", s.root);
		assert_int_equal(link(from, to), 0);
	}
	if (c->fifo) {
		char p[PATH_MAX];
		PATHF(p, sizeof p, "%s/fifo", s.root);
		assert_int_equal(mkfifo(p, 0600), 0);
	}
	msb_output_sink *sink = sink_at(&s, c->existing, NULL);
	msb_error err = MSB_ERROR_INIT;
	msb_landed_artifact l;
	msb_errc rc = land(sink, c->artifact, "payload", &l, &err);
	if (rc != c->want)
		print_error("%s: got %s: %s\n", c->name, msb_errc_name(rc), msb_error_message(&err));
	assert_int_equal(rc, c->want);
	if (c->want != MSB_OK) {
		const char *msg = msb_error_message(&err);
		if (!strstr(msg, c->words))
			print_error("%s: '%s' lacks '%s'\n", c->name, msg, c->words);
		assert_non_null(strstr(msg, c->words));
		assert_null(strstr(msg, s.base)); /* no host path: the message may reach the model */
	} else {
		char got[16];
		files_get(&s, c->artifact, got, sizeof got);
		assert_string_equal(got, "payload");
		msb_landed_artifact_free(&l);
	}
	assert_true(files_outside_untouched(&s));
	msb_error_clear(&err);
	msb_output_sink_free(sink);
	files_scene_remove(&s);
}

/* ---- the race ---------------------------------------------------------------------- */

#define RACE_ARTIFACTS 1000

typedef struct flipper {
	files_scene *s;
	atomic_bool stop;
	atomic_int flips;
} flipper;

/*
 * Swap root/p with root/q — one a real directory, the other a link to outside — by
 * RENAME_EXCHANGE, so p is never missing (a missing parent would just be re-created) and
 * every state the deliverer can observe is "directory" or "link to outside".
 */
static void *flip(void *arg)
{
	flipper *f = arg;
	/* Bounded by itself too, so that a failed test (which never sets stop) ends it. */
	time_t until = time(NULL) + 30;
	while (!atomic_load(&f->stop) && time(NULL) < until) {
		if (renameat2(f->s->root_fd, "p", f->s->root_fd, "q", RENAME_EXCHANGE) == 0)
			atomic_fetch_add(&f->flips, 1);
	}
	return NULL;
}

/* How many entries the one real directory of p and q holds. */
static int landed_inside(files_scene *s)
{
	msb_entry_list l = { 0 };
	msb_error err = MSB_ERROR_INIT;
	int n = 0;
	if (msb_confine_list_dir(s->root_fd, "p", &l, &err) == MSB_OK ||
	    msb_confine_list_dir(s->root_fd, "q", &l, &err) == MSB_OK)
		n = (int)l.len;
	msb_entry_list_free(&l);
	msb_error_clear(&err);
	return n;
}

static void race_flipping_parent(void **state)
{
	files_scene s;
	files_scene_make(&s);
	files_mkdir(&s, "p");
	files_link(&s, "q", "@OUT");
	msb_output_sink *sink = sink_at(&s, MSB_LANDING_REPLACE, NULL);
	flipper f = { .s = &s };
	atomic_init(&f.stop, false);
	atomic_init(&f.flips, 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, flip, &f), 0);
	int landed = 0, refused = 0;
	for (int i = 0; i < RACE_ARTIFACTS; i++) {
		char name[32];
		snprintf(name, sizeof name, "p/a%04d", i);
		msb_error err = MSB_ERROR_INIT;
		msb_landed_artifact l;
		msb_errc rc = land(sink, name, "x", &l, &err);
		if (rc == MSB_OK) {
			landed++;
			msb_landed_artifact_free(&l);
		} else {
			refused++;
			if (rc != MSB_E_LANDING_NOT_CONFINED)
				print_error("unexpected refusal %s: %s\n", msb_errc_name(rc),
					    msb_error_message(&err));
			assert_int_equal(rc, MSB_E_LANDING_NOT_CONFINED);
		}
		msb_error_clear(&err);
	}
	atomic_store(&f.stop, true);
	pthread_join(t, NULL);
	print_message("# race (%s): %d landed, %d refused as not confined, %d flips\n",
		      msb_confine_uses_openat2() ? "openat2" : "walk", landed, refused,
		      atomic_load(&f.flips));
	assert_int_equal(landed + refused, RACE_ARTIFACTS);
	assert_true(atomic_load(&f.flips) > 0);
	/* every artifact reported landed is inside root, and nothing is outside */
	assert_int_equal(landed_inside(&s), landed);
	assert_true(files_outside_untouched(&s));
	msb_output_sink_free(sink);
	files_scene_remove(&s);
}

static int use_openat2(void **state)
{
	msb_confine_force_fallback(false);
	return msb_confine_uses_openat2() ? 0 : -1;
}

static int use_walk(void **state)
{
	msb_confine_force_fallback(true);
	return msb_confine_uses_openat2() ? -1 : 0;
}

static int run_group(const char *name, CMFixtureFunction setup)
{
	struct CMUnitTest tests[N_SINK_CASES + 4];
	size_t n = 0;
	for (size_t i = 0; i < N_SINK_CASES; i++)
		tests[n++] = (struct CMUnitTest){ sink_cases[i].name, run_sink_case, NULL, files_scene_teardown,
						  (void *)&sink_cases[i] };
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(lands_nested_with_display_and_handle, files_scene_teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(refuses_bad_template_and_missing_root, files_scene_teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(existing_refused_or_replaced, files_scene_teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(race_flipping_parent, files_scene_teardown);
	return _cmocka_run_group_tests(name, tests, n, setup, NULL);
}

int main(void)
{
	int failed = 0;
	msb_confine_force_fallback(false);
	if (msb_confine_uses_openat2())
		failed += run_group("sink via openat2", use_openat2);
	else
		printf("# this kernel has no openat2: only the walk is tested here\n");
	failed += run_group("sink via O_NOFOLLOW walk", use_walk);
	return failed ? 1 : 0;
}
