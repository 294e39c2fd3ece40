/*
 * bwrap_launch.c — the launch chain of plugins/bwrap/bwrap_launch.c on its own, with a
 * stand-in for bwrap: it joins the network namespace it is handed before anything of the
 * sandbox is born, and a descriptor that is not one fails the start, naming the step.
 * Skips (77) where this process cannot make a network namespace (not root).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/netns.h>

#include "bwrap_launch.h"
#include "msb_test.h"

#define AGENT MSB_TOP_BUILDDIR "/sdk/agent/msb-agent"

static char dir[64], sock[96];

/*
 * Launch `argv` with the namespace `netns_fd`, and collect what it wrote on stderr (bwrap's
 * log) until every holder has closed it; then reap what the launch left to this subreaper
 * (the keeper, as msb-agent --reap).
 */
static msb_errc launch(char *const *argv, int netns_fd, char *said, size_t cap, msb_error *err)
{
	int out[2];
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	msb_bwrap_launch l = { .argv = argv, .listen_path = sock, .log_fd = out[1],
			       .netns_fd = netns_fd, .uid = -1, .gid = -1, .reaper = AGENT };
	for (int i = 0; i < MSB_BWRAP_FD_COUNT; i++)
		l.fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	msb_bwrap_launching going;
	pid_t pid = 0;
	msb_errc rc = msb_bwrap_launch_start(&l, &going, err);
	if (!rc)
		rc = msb_bwrap_launch_finish(&going, &pid, err);
	for (int i = 0; i < MSB_BWRAP_FD_COUNT; i++)
		close(l.fds[i]);
	close(out[1]);
	size_t got = 0;
	for (ssize_t n; got < cap - 1 && (n = read(out[0], said + got, cap - 1 - got)) > 0;)
		got += (size_t)n;
	said[got] = '\0';
	close(out[0]);
	unlink(sock);
	while (wait(NULL) > 0)
		;
	return rc;
}

static void the_stand_in_runs_in_the_namespace_it_is_given(void **state)
{
	(void)state;
	int ns = -1;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_netns_make(&ns, &err), MSB_OK);
	struct stat st;
	assert_int_equal(fstat(ns, &st), 0);
	char *const argv[] = { "/bin/sh", "-c", "stat -L -c %i /proc/self/ns/net >&2", NULL };
	char said[64];
	msb_errc rc = launch(argv, ns, said, sizeof said, &err);
	close(ns);
	assert_int_equal(rc, MSB_OK);
	assert_true(said[0] != '\0');
	assert_int_equal(strtoul(said, NULL, 10), (unsigned long)st.st_ino);
}

static void a_namespace_that_cannot_be_joined_fails_the_start(void **state)
{
	(void)state;
	int not_ns = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(not_ns >= 0);
	char *const argv[] = { "/bin/sh", "-c", "echo ran >&2", NULL };
	msb_error err = MSB_ERROR_INIT;
	char said[64];
	msb_errc rc = launch(argv, not_ns, said, sizeof said, &err);
	close(not_ns);
	assert_int_equal(rc, MSB_E_BACKEND);
	assert_non_null(strstr(msb_error_message(&err), "joining the network namespace made ahead failed"));
	assert_non_null(strstr(msb_error_message(&err), "Invalid argument"));
	assert_string_equal(said, ""); /* nothing ran */
	msb_error_clear(&err);
}

int main(void)
{
	if (geteuid() != 0) {
		printf("skip: making a network namespace needs root here\n");
		return MSB_TEST_SKIP;
	}
	/* The keeper is nobody's child once A exits: it comes back here to be reaped. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	snprintf(dir, sizeof dir, "/tmp/msb-bwrap-launch-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(sock, sizeof sock, "%s/agent.sock", dir);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_stand_in_runs_in_the_namespace_it_is_given),
		cmocka_unit_test(a_namespace_that_cannot_be_joined_fails_the_start),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(sock);
	rmdir(dir);
	return failed;
}
