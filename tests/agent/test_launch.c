/*
 * test_launch.c — msb_launch_agent's failure reports (msb/launch.h): a start that fails in a
 * child is named by its stage and errno, whichever child it failed in, and leaves no
 * process behind; the appended exec_path and uid_map are honoured, and ignored where an
 * older caller's struct_size ends before them. (Its success path is every case of the container fixture's conformance
 * run, tests/conformance.)
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/launch.h>

static int fail_prepare(void *arg, const char **stage)
{
	(void)arg;
	*stage = "the test's own prepare step";
	return EPERM;
}

static msb_errc launch_in(const char *dir, msb_launch *l, msb_error *err)
{
	char sock[512], pid[512];
	snprintf(sock, sizeof sock, "%s/agent.sock", dir);
	snprintf(pid, sizeof pid, "%s/agent.pid", dir);
	msb_driver_config cfg = { .start_timeout = 5 };
	msb_driver_box box = { .name = "sk-test", .dir = dir, .socket_path = sock, .pid_path = pid,
			       .work_dir = dir, .config = &cfg };
	return msb_launch_agent(&box, l, err);
}

static void failures_name_their_stage(void **state)
{
	(void)state;
	char dir[] = "/tmp/msb-launch-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *argv[] = { (char *)"/nonexistent/msb-agent", NULL };
	msb_launch l = MSB_LAUNCH_INIT;
	l.argv = argv;
	msb_error err = MSB_ERROR_INIT;
	/* The exec of the agent fails in the agent's own process. */
	assert_int_equal(launch_in(dir, &l, &err), MSB_E_BACKEND);
	assert_non_null(strstr(msb_error_message(&err), "exec of the agent failed"));
	assert_non_null(strstr(msb_error_message(&err), "No such file or directory"));
	msb_error_clear(&err);
	/* A prepare step that fails is named by the stage it gave, with its errno. */
	l.prepare = fail_prepare;
	assert_int_equal(launch_in(dir, &l, &err), MSB_E_BACKEND);
	assert_non_null(strstr(msb_error_message(&err), "the test's own prepare step failed"));
	assert_non_null(strstr(msb_error_message(&err), "Operation not permitted"));
	msb_error_clear(&err);
	/* exec_path is what is exec'd (argv[0] only names it)... */
	l.prepare = NULL;
	l.exec_path = "/bin/true";
	assert_int_equal(launch_in(dir, &l, &err), MSB_E_BACKEND);
	assert_non_null(strstr(msb_error_message(&err), "the agent exited at start"));
	msb_error_clear(&err);
	/* ...but only where the caller's struct_size covers it: a launch of the size before
	 * the appended fields is served, and they read as absent. */
	char *true_argv[] = { (char *)"/bin/true", NULL };
	l.argv = true_argv;
	l.exec_path = "/nonexistent/exec-path";
	l.uid_map = "bogus";
	l.struct_size = (uint32_t)offsetof(msb_launch, exec_path);
	assert_int_equal(launch_in(dir, &l, &err), MSB_E_BACKEND);
	assert_non_null(strstr(msb_error_message(&err), "the agent exited at start"));
	msb_error_clear(&err);
	/* A user namespace asked for is entered first; a map the kernel refuses names it. */
	l.struct_size = sizeof l;
	l.exec_path = NULL;
	assert_int_equal(launch_in(dir, &l, &err), MSB_E_BACKEND);
	assert_non_null(strstr(msb_error_message(&err), "the user namespace failed"));
	msb_error_clear(&err);
	if (geteuid() == 0) {
		l.uid_map = "0 0 1\n";
		assert_int_equal(launch_in(dir, &l, &err), MSB_E_BACKEND);
		assert_non_null(strstr(msb_error_message(&err), "the agent exited at start"));
		msb_error_clear(&err);
	}
	l.uid_map = NULL;
	/* No launch at all is refused before anything is spawned. */
	assert_int_equal(msb_launch_agent(NULL, NULL, &err), MSB_E_VALUE);
	msb_error_clear(&err);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(failures_name_their_stage) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
