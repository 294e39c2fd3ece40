/*
 * test_unix_socket.c — msb/unix_socket.h: a listener replaces a stale file at its path and
 * takes a connection, an owner-only one is mode 0600 whatever the umask; both calls refuse a path no socket address can hold (ENAMETOOLONG,
 * not a cut path that names another file); a connect to nothing fails with the kernel's
 * word; every socket made is close-on-exec.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/unix_socket.h>

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/msb-unix-socket-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[96];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void a_listener_replaces_a_stale_file_and_is_reached(void **state)
{
	(void)state;
	char path[96];
	snprintf(path, sizeof path, "%s/a.sock", dir);
	FILE *f = fopen(path, "w"); /* what a crashed run might leave */
	assert_non_null(f);
	fclose(f);
	int l = msb_unix_listen(path);
	assert_true(l >= 0);
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	int c = msb_unix_connect(path);
	assert_true(c >= 0);
	int a = accept(l, NULL, NULL);
	assert_true(a >= 0);
	assert_int_equal(write(c, "x", 1), 1);
	char b = 0;
	assert_int_equal(read(a, &b, 1), 1);
	assert_int_equal(b, 'x');
	assert_true(fcntl(l, F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(c, F_GETFD) & FD_CLOEXEC);
	close(a);
	close(c);
	close(l);
}

/* Owner-only whatever the caller's umask, which comes back as it was. */
static void an_owner_only_listener_is_mode_0600(void **state)
{
	(void)state;
	char path[96];
	snprintf(path, sizeof path, "%s/o.sock", dir);
	mode_t before = umask(0);
	int l = msb_unix_listen_owner_only(path);
	mode_t after = umask(before);
	assert_true(l >= 0);
	assert_int_equal(after, 0);
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	close(l);
}

static void a_path_too_long_for_an_address_is_refused(void **state)
{
	(void)state;
	char path[200];
	memset(path, 'a', sizeof path - 1);
	path[0] = '/';
	path[sizeof path - 1] = '\0';
	errno = 0;
	assert_int_equal(msb_unix_listen(path), -1);
	assert_int_equal(errno, ENAMETOOLONG);
	errno = 0;
	assert_int_equal(msb_unix_connect(path), -1);
	assert_int_equal(errno, ENAMETOOLONG);
}

static void connecting_to_nothing_fails_with_the_kernels_word(void **state)
{
	(void)state;
	char path[96];
	snprintf(path, sizeof path, "%s/none.sock", dir);
	errno = 0;
	assert_int_equal(msb_unix_connect(path), -1);
	assert_int_equal(errno, ENOENT);
	/* A socket file with no listener behind it: refused, not a hang. */
	int l = msb_unix_listen(path);
	assert_true(l >= 0);
	close(l);
	errno = 0;
	assert_int_equal(msb_unix_connect(path), -1);
	assert_int_equal(errno, ECONNREFUSED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_listener_replaces_a_stale_file_and_is_reached),
		cmocka_unit_test(an_owner_only_listener_is_mode_0600),
		cmocka_unit_test(a_path_too_long_for_an_address_is_refused),
		cmocka_unit_test(connecting_to_nothing_fails_with_the_kernels_word),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
