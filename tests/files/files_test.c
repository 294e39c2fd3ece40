/*
 * files_test.c — building and tearing down the files tests' scene (see files_test.h).
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/confine.h>

#include "files_test.h"

/* Scenes made and not yet removed, by copy: a failed test's stack frame is gone. */
#define LIVE_MAX 8
static struct {
	char base[PATH_MAX];
	int root_fd;
} live[LIVE_MAX];

/* Register a scene; returns its slot, or -1 when full (then only the test cleans it). */
static int live_add(const files_scene *s)
{
	for (int i = 0; i < LIVE_MAX; i++)
		if (!live[i].base[0]) {
			memcpy(live[i].base, s->base, sizeof live[i].base);
			live[i].root_fd = -1;
			return i;
		}
	return -1;
}

static void join(char *out, const files_scene *s, const char *rel)
{
	PATHF_N(out, PATH_MAX, "%s/%s", s->root, rel);
}

void files_scene_make(files_scene *s)
{
	const char *tmp = getenv("TMPDIR");
	PATHF(s->base, sizeof s->base, "%s/msb-files-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	assert_non_null(mkdtemp(s->base));
	/* realpath, so that a symlinked TMPDIR does not make open_root refuse the scene. */
	char *real = realpath(s->base, NULL);
	assert_non_null(real);
	PATHF(s->base, sizeof s->base, "%s", real);
	free(real);
	s->root_fd = -1;
	int slot = live_add(s);
	PATHF(s->root, sizeof s->root, "%s/root", s->base);
	PATHF(s->outside, sizeof s->outside, "%s/outside", s->base);
	assert_int_equal(mkdir(s->root, 0700), 0);
	assert_int_equal(mkdir(s->outside, 0700), 0);
	char p[PATH_MAX];
	PATHF(p, sizeof p, "%s/secret", s->outside);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(FILES_SENTINEL, f);
	fclose(f);
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_confine_open_root(s->root, &s->root_fd, &err), MSB_OK);
	if (slot >= 0)
		live[slot].root_fd = s->root_fd;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

int files_scene_teardown(void **state)
{
	(void)state;
	for (int i = 0; i < LIVE_MAX; i++) {
		if (!live[i].base[0])
			continue;
		if (live[i].root_fd >= 0)
			close(live[i].root_fd);
		nftw(live[i].base, rm_one, 32, FTW_DEPTH | FTW_PHYS);
		live[i].base[0] = '\0';
	}
	return 0;
}

void files_scene_remove(files_scene *s)
{
	for (int i = 0; i < LIVE_MAX; i++)
		if (live[i].base[0] && strcmp(live[i].base, s->base) == 0)
			live[i].base[0] = '\0';
	if (s->root_fd >= 0)
		close(s->root_fd);
	s->root_fd = -1;
	if (s->base[0])
		nftw(s->base, rm_one, 32, FTW_DEPTH | FTW_PHYS);
	s->base[0] = '\0';
}

bool files_outside_untouched(const files_scene *s)
{
	DIR *d = opendir(s->outside);
	if (!d)
		return false;
	int n = 0;
	bool only_secret = true;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		n++;
		if (strcmp(de->d_name, "secret") != 0)
			only_secret = false;
	}
	closedir(d);
	char p[PATH_MAX], buf[64] = "";
	PATHF(p, sizeof p, "%s/secret", s->outside);
	FILE *f = fopen(p, "r");
	if (f) {
		size_t got = fread(buf, 1, sizeof buf - 1, f);
		buf[got] = '\0';
		fclose(f);
	}
	return n == 1 && only_secret && strcmp(buf, FILES_SENTINEL) == 0;
}

void files_put(const files_scene *s, const char *rel, const char *text)
{
	char p[PATH_MAX];
	join(p, s, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

void files_mkdir(const files_scene *s, const char *rel)
{
	char p[PATH_MAX];
	join(p, s, rel);
	for (char *c = p + strlen(s->root) + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		mkdir(p, 0700);
		*c = '/';
	}
	assert_true(mkdir(p, 0700) == 0 || files_exists(s, rel));
}

void files_link(const files_scene *s, const char *rel, const char *target)
{
	char p[PATH_MAX], t[PATH_MAX];
	join(p, s, rel);
	if (strncmp(target, "@OUT", 4) == 0)
		PATHF(t, sizeof t, "%s%s", s->outside, target + 4);
	else
		PATHF(t, sizeof t, "%s", target);
	assert_int_equal(symlink(t, p), 0);
}

bool files_exists(const files_scene *s, const char *rel)
{
	char p[PATH_MAX];
	struct stat st;
	join(p, s, rel);
	return lstat(p, &st) == 0;
}

void files_get(const files_scene *s, const char *rel, char *buf, size_t size)
{
	char p[PATH_MAX];
	join(p, s, rel);
	buf[0] = '\0';
	FILE *f = fopen(p, "r");
	if (!f)
		return;
	size_t got = fread(buf, 1, size - 1, f);
	buf[got] = '\0';
	fclose(f);
}
