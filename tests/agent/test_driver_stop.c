/*
 * test_driver_stop.c — one polarity for "failed" across disposal (msb/driver.h): a
 * boundary's stop returns true when it FAILED, as the backend's dispose does, and a stop
 * that fills its failure is failed whatever it returns. Each way is checked on a real
 * sandbox (msb-agent started by msb_launch_agent, no namespaces): what dispose returns, the
 * failure's text, and that a failed stop keeps the sandbox's directory for the retry that
 * then lands.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/driver.h>
#include <msb/launch.h>

#define AGENT MSB_TOP_BUILDDIR "/sdk/agent/msb-agent"

enum stop_mode { STOP_CLEAN, STOP_FAILED_SILENT, STOP_FAILED_SAYS, STOP_FILLS_ONLY };

static enum stop_mode mode;

static msb_errc t_start(void *ctx, const msb_driver_box *box, msb_error *err)
{
	(void)ctx;
	char fd[16], **argv = NULL;
	snprintf(fd, sizeof fd, "%d", MSB_LAUNCH_LISTEN_FD);
	msb_errc rc = msb_driver_agent_argv(box, "--listen-fd", fd, NULL, NULL, -1, &argv, err);
	if (rc != MSB_OK)
		return rc;
	msb_launch l = MSB_LAUNCH_INIT;
	l.argv = argv;
	rc = msb_launch_agent(box, &l, err);
	free(argv);
	return rc;
}

static bool t_stop(void *ctx, const msb_driver_box *box, msb_disposal_failure *failure)
{
	(void)ctx;
	switch (mode) {
	case STOP_CLEAN:
		return false;
	case STOP_FAILED_SILENT:
		return true;
	case STOP_FAILED_SAYS:
		msb_disposal_failure_set(failure, MSB_DISPOSAL_TIMEOUT, "test: sandbox %s: its "
					 "mount would not go", box->name);
		return true;
	case STOP_FILLS_ONLY:
		msb_disposal_failure_set(failure, MSB_DISPOSAL_REFUSED, "test: sandbox %s: its "
					 "cgroup refused", box->name);
		return false;
	}
	return true;
}

static size_t sandboxes_in(const char *dir)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += !strncmp(e->d_name, "sk-", 3) && !strchr(e->d_name, '.');
	if (d)
		closedir(d);
	return n;
}

static void stop_polarity(void **state)
{
	(void)state;
	char dir[] = "/var/tmp/msb-driver-stop-XXXXXX";
	assert_non_null(mkdtemp(dir));
	msb_node v_state = { .kind = MSB_NODE_SCALAR, .file = "<memory>", .scalar = dir };
	msb_node v_agent = { .kind = MSB_NODE_SCALAR, .file = "<memory>", .scalar = AGENT };
	msb_node_pair pairs[] = { { .key = "state_dir", .value = &v_state },
				  { .key = "agent", .value = &v_agent } };
	msb_node config = { .kind = MSB_NODE_MAP, .file = "<memory>", .len = 2, .pairs = pairs };
	msb_boundary b = MSB_BOUNDARY_INIT;
	b.name = "stoptest";
	b.start = t_start;
	b.stop = t_stop;
	msb_backend_instance *inst = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_host host = { .struct_size = sizeof host };
	assert_int_equal(msb_driver_init(&b, &config, &host, NULL, &inst, &err), MSB_OK);
	msb_key key = { .scope = "conversation", .thread_id = "t1", .call_id = "" };
	msb_spec spec = { .kind = "k", .work_dir = "/msb/work" };
	static const struct {
		enum stop_mode mode;
		bool failed;
		const char *words;
	} ways[] = {
		{ STOP_FAILED_SILENT, true, "its boundary's stop reported a failure without saying what it left" },
		{ STOP_FAILED_SAYS, true, "its mount would not go" },
		{ STOP_FILLS_ONLY, true, "its cgroup refused" },
		{ STOP_CLEAN, false, NULL },
	};
	for (size_t i = 0; i < sizeof ways / sizeof ways[0]; i++) {
		mode = STOP_CLEAN;
		msb_sandbox_handle *h = NULL;
		msb_errc rc = msb_driver_acquire(inst, &key, &spec, &h, &err);
		if (rc != MSB_OK)
			fail_msg("acquire: %s", msb_error_message(&err));
		msb_driver_release(h);
		mode = ways[i].mode;
		msb_disposal_failure f = { 0 };
		bool failed = msb_driver_dispose(inst, &key, &f);
		printf("# stop mode %d: dispose returned %s, failure: %s\n", (int)mode,
		       failed ? "true (failed)" : "false", f.detail ? f.detail : "(none)");
		assert_int_equal(failed, ways[i].failed);
		if (ways[i].words) {
			assert_non_null(f.detail);
			assert_non_null(strstr(f.detail, ways[i].words));
			/* Kept for the retry, which lands once the stop does. */
			assert_int_equal(sandboxes_in(dir), 1);
			msb_disposal_failure_free(&f);
			mode = STOP_CLEAN;
			assert_false(msb_driver_dispose(inst, &key, &f));
		}
		assert_null(f.detail);
		assert_int_equal(sandboxes_in(dir), 0);
	}
	msb_driver_fini(inst);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(stop_polarity) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
