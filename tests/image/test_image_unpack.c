/*
 * test_image_unpack.c — hostile layers: every class of entry a guest-authored layer can use
 * to reach outside the image's root, as a real tar the test builds, applied with
 * msb_image_unpack_layer. Each must be refused naming the layer and the entry (or confined,
 * for setuid bits), and the `outside` directory beside the root — the target of every
 * attack — must hold exactly its canary afterwards. Run twice: with openat2 and with the
 * O_NOFOLLOW walk the confinement falls back to on kernels without it.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/confine.h>
#include <msb/image_store.h>

#include "image_test.h"

typedef struct fixture {
	img_scratch s;
	char root[160];
	char layer[160];
	int root_fd;
	msb_image_limits limits;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof *f);
	img_scratch_make(&f->s);
	snprintf(f->root, sizeof f->root, "%s/root", f->s.dir);
	snprintf(f->layer, sizeof f->layer, "%s/layer.tar", f->s.src);
	img_mkdirs(f->root);
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_confine_open_root(f->root, &f->root_fd, &err), MSB_OK);
	msb_image_limits_default(&f->limits);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	close(f->root_fd);
	img_scratch_remove(&f->s);
	free(f);
	return 0;
}

/* Apply the fixture's layer; on refusal the message must name the layer and `entry`. */
static msb_errc apply(fixture *f, const char *entry)
{
	msb_error err = MSB_ERROR_INIT;
	uint64_t total = 0;
	msb_errc rc = msb_image_unpack_layer(f->root_fd, f->layer, "L1", 1, &f->limits, &total,
					     &err);
	if (rc != MSB_OK) {
		const char *m = msb_error_message(&err);
		if (!strstr(m, "image layer L1") || (entry && !strstr(m, entry)))
			fail_msg("refusal does not name the layer and entry \"%s\": %s", entry, m);
	}
	msb_error_clear(&err);
	assert_true(img_outside_intact(&f->s));
	return rc;
}

static void dotdot_name_is_refused(void **state)
{
	fixture *f = *state;
	img_tar *t = img_tar_open(f->layer, "none");
	img_tar_file(t, "../outside/pwned", "x", 0644);
	img_tar_close(t);
	assert_int_equal(apply(f, "../outside/pwned"), MSB_E_VALUE);
	t = img_tar_open(f->layer, "gzip");
	img_tar_file(t, "a/../../outside/canary", "x", 0644);
	img_tar_close(t);
	assert_int_equal(apply(f, "a/../../outside/canary"), MSB_E_VALUE);
}

static void absolute_name_is_refused(void **state)
{
	fixture *f = *state;
	char name[200];
	snprintf(name, sizeof name, "%s/pwned", f->s.outside);
	img_tar *t = img_tar_open(f->layer, "none");
	img_tar_file(t, name, "x", 0644);
	img_tar_close(t);
	assert_int_equal(apply(f, name), MSB_E_VALUE);
}

static void writing_through_a_planted_symlink_is_refused(void **state)
{
	fixture *f = *state;
	img_tar *t = img_tar_open(f->layer, "none");
	img_tar_symlink(t, "esc", f->s.outside);
	img_tar_file(t, "esc/pwned", "x", 0644);
	img_tar_close(t);
	assert_int_equal(apply(f, "esc/pwned"), MSB_E_VALUE);
	/* The link itself is stored as written: the sandbox resolves it in its own root. */
	char buf[200];
	ssize_t n = readlinkat(f->root_fd, "esc", buf, sizeof buf - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, f->s.outside);

	t = img_tar_open(f->layer, "none");
	img_tar_symlink(t, "up", "../..");
	img_tar_file(t, "up/outside/canary", "pwned", 0644);
	img_tar_close(t);
	assert_int_equal(apply(f, "up/outside/canary"), MSB_E_VALUE);
	/* A file over an existing link replaces the link, never writes through it. */
	t = img_tar_open(f->layer, "none");
	img_tar_symlink(t, "over", "../outside/canary");
	img_tar_file(t, "over", "mine", 0644);
	img_tar_close(t);
	assert_int_equal(apply(f, NULL), MSB_OK);
	struct stat st;
	assert_int_equal(fstatat(f->root_fd, "over", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
}

static void hardlink_out_of_the_root_is_refused(void **state)
{
	fixture *f = *state;
	img_tar *t = img_tar_open(f->layer, "none");
	img_tar_hardlink(t, "h", "../outside/canary");
	img_tar_close(t);
	assert_int_equal(apply(f, "\"h\""), MSB_E_VALUE);
	char abs[200];
	snprintf(abs, sizeof abs, "%s/canary", f->s.outside);
	t = img_tar_open(f->layer, "none");
	img_tar_hardlink(t, "h2", abs);
	img_tar_close(t);
	assert_int_equal(apply(f, "h2"), MSB_E_VALUE);
	t = img_tar_open(f->layer, "none");
	img_tar_symlink(t, "esc", f->s.outside);
	img_tar_hardlink(t, "h3", "esc/canary");
	img_tar_close(t);
	assert_int_equal(apply(f, "h3"), MSB_E_VALUE);
	/* A link to what the layer itself made is fine, and is a real second name. */
	t = img_tar_open(f->layer, "none");
	img_tar_file(t, "mine", "m", 0644);
	img_tar_hardlink(t, "mine2", "mine");
	img_tar_close(t);
	assert_int_equal(apply(f, NULL), MSB_OK);
	struct stat st;
	assert_int_equal(fstatat(f->root_fd, "mine2", &st, 0), 0);
	assert_int_equal(st.st_nlink, 2);
}

static void whiteout_outside_the_root_is_refused(void **state)
{
	fixture *f = *state;
	img_tar *t = img_tar_open(f->layer, "none");
	img_tar_file(t, "../outside/.wh.canary", "", 0644);
	img_tar_close(t);
	assert_int_equal(apply(f, "../outside/.wh.canary"), MSB_E_VALUE);
	t = img_tar_open(f->layer, "none");
	img_tar_symlink(t, "esc", f->s.outside);
	img_tar_file(t, "esc/.wh.canary", "", 0644);
	img_tar_close(t);
	assert_int_equal(apply(f, "esc/.wh.canary"), MSB_E_VALUE);
	t = img_tar_open(f->layer, "none");
	img_tar_symlink(t, "esc2", "../outside");
	img_tar_file(t, "esc2/.wh..wh..opq", "", 0644);
	img_tar_close(t);
	assert_int_equal(apply(f, "esc2/.wh..wh..opq"), MSB_E_VALUE);
	t = img_tar_open(f->layer, "none");
	img_tar_file(t, ".wh...", "", 0644);
	img_tar_close(t);
	assert_int_equal(apply(f, ".wh..."), MSB_E_VALUE);
}

static void device_nodes_are_refused(void **state)
{
	fixture *f = *state;
	img_tar *t = img_tar_open(f->layer, "none");
	img_tar_device(t, "dev/mem", false);
	img_tar_close(t);
	assert_int_equal(apply(f, "dev/mem"), MSB_E_VALUE);
	t = img_tar_open(f->layer, "none");
	img_tar_device(t, "sda", true);
	img_tar_close(t);
	assert_int_equal(apply(f, "sda"), MSB_E_VALUE);
	struct stat st;
	assert_int_not_equal(fstatat(f->root_fd, "sda", &st, AT_SYMLINK_NOFOLLOW), 0);
}

static void setuid_and_setgid_bits_are_dropped(void **state)
{
	fixture *f = *state;
	img_tar *t = img_tar_open(f->layer, "none");
	img_tar_file(t, "bin/su", "#!/bin/sh\n", 06755);
	img_tar_dir(t, "shared", 03777);
	img_tar_close(t);
	assert_int_equal(apply(f, NULL), MSB_OK);
	struct stat st;
	assert_int_equal(fstatat(f->root_fd, "bin/su", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(fstatat(f->root_fd, "shared", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_mode & 07000, 0);
}

static void absurd_sizes_and_counts_are_refused(void **state)
{
	fixture *f = *state;
	f->limits.max_entry_bytes = 1024;
	img_tar *t = img_tar_open(f->layer, "gzip");
	img_tar_sized(t, "big", 4096);
	img_tar_close(t);
	assert_int_equal(apply(f, "big"), MSB_E_VALUE);
	f->limits.max_entry_bytes = 4096;
	f->limits.max_total_bytes = 6000;
	t = img_tar_open(f->layer, "none");
	img_tar_sized(t, "one", 4000);
	img_tar_sized(t, "two", 4000);
	img_tar_close(t);
	assert_int_equal(apply(f, "two"), MSB_E_VALUE);
	f->limits.max_total_bytes = 1 << 20;
	f->limits.max_entries = 10;
	t = img_tar_open(f->layer, "none");
	for (int i = 0; i < 50; i++) {
		char name[16];
		snprintf(name, sizeof name, "f%d", i);
		img_tar_file(t, name, "", 0644);
	}
	img_tar_close(t);
	assert_int_equal(apply(f, "more than 10 entries"), MSB_E_VALUE);
}

static void a_corrupt_layer_is_refused(void **state)
{
	fixture *f = *state;
	img_tar *t = img_tar_open(f->layer, "none");
	img_tar_file(t, "a", "aaaa", 0644);
	img_tar_close(t);
	/* Cut the archive inside the data of its first entry. */
	assert_int_equal(truncate(f->layer, 700), 0);
	assert_int_equal(apply(f, NULL), MSB_E_VALUE);
	img_write(f->layer, "not a tar at all, but long enough to be looked at properly......",
		  64);
	assert_int_equal(apply(f, NULL), MSB_E_VALUE);
}

static void fifos_and_whiteouts_inside_the_root_apply(void **state)
{
	fixture *f = *state;
	img_tar *t = img_tar_open(f->layer, "none");
	img_tar_file(t, "d/a", "a", 0644);
	img_tar_file(t, "d/b", "b", 0644);
	img_tar_file(t, "o/old", "o", 0644);
	img_tar_fifo(t, "pipe");
	img_tar_close(t);
	assert_int_equal(apply(f, NULL), MSB_OK);
	t = img_tar_open(f->layer, "none");
	img_tar_file(t, "d/.wh.a", "", 0644);
	img_tar_file(t, "o/new", "n", 0644);
	img_tar_file(t, "o/.wh..wh..opq", "", 0644);
	img_tar_close(t);
	assert_int_equal(apply(f, NULL), MSB_OK);
	struct stat st;
	assert_int_not_equal(fstatat(f->root_fd, "d/a", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(fstatat(f->root_fd, "d/b", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_not_equal(fstatat(f->root_fd, "o/old", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(fstatat(f->root_fd, "o/new", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_not_equal(fstatat(f->root_fd, "o/.wh..wh..opq", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(fstatat(f->root_fd, "pipe", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISFIFO(st.st_mode));
}

#define CASES                                                                    \
	cmocka_unit_test_setup_teardown(dotdot_name_is_refused, setup, teardown),     \
	cmocka_unit_test_setup_teardown(absolute_name_is_refused, setup, teardown),   \
	cmocka_unit_test_setup_teardown(writing_through_a_planted_symlink_is_refused, \
					setup, teardown),                               \
	cmocka_unit_test_setup_teardown(hardlink_out_of_the_root_is_refused, setup,   \
					teardown),                                      \
	cmocka_unit_test_setup_teardown(whiteout_outside_the_root_is_refused, setup,  \
					teardown),                                      \
	cmocka_unit_test_setup_teardown(device_nodes_are_refused, setup, teardown),   \
	cmocka_unit_test_setup_teardown(setuid_and_setgid_bits_are_dropped, setup,    \
					teardown),                                      \
	cmocka_unit_test_setup_teardown(absurd_sizes_and_counts_are_refused, setup,   \
					teardown),                                      \
	cmocka_unit_test_setup_teardown(a_corrupt_layer_is_refused, setup, teardown), \
	cmocka_unit_test_setup_teardown(fifos_and_whiteouts_inside_the_root_apply,    \
					setup, teardown)

int main(void)
{
	umask(022);
	const struct CMUnitTest with_openat2[] = { CASES };
	const struct CMUnitTest with_walk[] = { CASES };
	int failed = cmocka_run_group_tests_name("unpack (openat2)", with_openat2, NULL, NULL);
	msb_confine_force_fallback(true);
	failed += cmocka_run_group_tests_name("unpack (O_NOFOLLOW walk)", with_walk, NULL, NULL);
	return failed ? 1 : 0;
}
