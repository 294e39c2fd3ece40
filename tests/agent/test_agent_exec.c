/*
 * test_agent_exec.c — the real msb-agent, driven through the host client: exec semantics
 * (argv verbatim, separate streams, exit status, signals, stdin, scrubbed environment,
 * timeouts that kill the whole tree, output caps that truncate and say so), run_code, and
 * the agent's answers to a program that cannot start.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <msb/agent.h>

#include "agent_fixture.h"

typedef agent_session ctx;

static int setup(void **state)
{
	static const char *const extra[] = { "--run-code", "sh", "--timeout", "20", NULL };
	setenv("MSB_TEST_SECRET", "leaked", 1);
	return agent_session_setup_fd(state, extra);
}

static msb_errc run_argv(ctx *c, const char *const *argv, double timeout, size_t max_output,
			 msb_exec_result *res, msb_error *err)
{
	msb_exec_request req = { .argv = argv, .timeout = timeout, .max_output = max_output };
	return msb_agent_exec(c->client, &req, NULL, res, err);
}

static void test_argv_verbatim(void **state)
{
	ctx *c = *state;
	/* Spaces, quotes, an empty argument and bytes that are not UTF-8 arrive untouched. */
	const char *const argv[] = { "printf", "[%s]", "a b", "\"q'$HOME", "", "\xff\xfe", "*", NULL };
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(run_argv(c, argv, 10, 0, &res, &err), MSB_OK);
	assert_string_equal((char *)res.out.data, "[a b][\"q'$HOME][][\xff\xfe][*]");
	assert_int_equal(res.exit_code, 0);
	assert_false(res.timed_out);
	msb_exec_result_free(&res);
}

static void test_streams_and_status(void **state)
{
	ctx *c = *state;
	const char *const argv[] = { "sh", "-c", "echo out; echo err >&2; exit 3", NULL };
	msb_exec_result res = { 0 };
	assert_int_equal(run_argv(c, argv, 10, 0, &res, NULL), MSB_OK);
	assert_string_equal((char *)res.out.data, "out\n");
	assert_string_equal((char *)res.err.data, "err\n");
	assert_int_equal(res.exit_code, 3);
	assert_int_equal(res.term_signal, 0);
	msb_exec_result_free(&res);

	const char *const killed[] = { "sh", "-c", "kill -TERM $$", NULL };
	assert_int_equal(run_argv(c, killed, 10, 0, &res, NULL), MSB_OK);
	assert_int_equal(res.term_signal, SIGTERM);
	assert_int_equal(res.exit_code, 128 + SIGTERM);
	msb_exec_result_free(&res);
}

static void test_stdin(void **state)
{
	ctx *c = *state;
	/* Bigger than a pipe buffer, with NULs, so feeding must interleave with draining. */
	size_t n = 300000;
	unsigned char *data = malloc(n);
	for (size_t i = 0; i < n; i++)
		data[i] = (unsigned char)(i * 7);
	const char *const argv[] = { "cat", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 10, .max_output = n, .stdin_data = data,
				 .stdin_len = n };
	msb_exec_result res = { 0 };
	assert_int_equal(msb_agent_exec(c->client, &req, NULL, &res, NULL), MSB_OK);
	assert_int_equal(res.out.len, n);
	assert_memory_equal(res.out.data, data, n);
	assert_false(res.out_truncated);
	msb_exec_result_free(&res);
	free(data);
}

static void test_environment_scrubbed(void **state)
{
	ctx *c = *state;
	const char *const argv[] = { "env", NULL };
	const char *const env[] = { "EXTRA=yes", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 10 };
	msb_exec_result res = { 0 };
	assert_int_equal(msb_agent_exec(c->client, &req, env, &res, NULL), MSB_OK);
	const char *out = (char *)res.out.data;
	assert_null(strstr(out, "MSB_TEST_SECRET")); /* the agent's own environment never leaks */
	assert_non_null(strstr(out, "EXTRA=yes\n"));
	assert_non_null(strstr(out, "PATH=/usr/local/bin:/usr/bin:/bin\n"));
	char home[160];
	snprintf(home, sizeof home, "HOME=%s\n", c->fx.work);
	assert_non_null(strstr(out, home));
	msb_exec_result_free(&res);

	const char *const pwd[] = { "pwd", NULL };
	assert_int_equal(run_argv(c, pwd, 10, 0, &res, NULL), MSB_OK);
	char expect[160];
	snprintf(expect, sizeof expect, "%s\n", c->fx.work);
	assert_string_equal((char *)res.out.data, expect);
	msb_exec_result_free(&res);
}

static void test_timeout_kills_tree(void **state)
{
	ctx *c = *state;
	/* A grandchild in the command's group that would outlive the command. */
	const char *const argv[] = { "sh", "-c", "sleep 1000 & echo $!; sleep 1000", NULL };
	msb_exec_result res = { 0 };
	int64_t t0 = msb_agent_now_ms();
	assert_int_equal(run_argv(c, argv, 0.5, 0, &res, NULL), MSB_OK);
	int64_t took = msb_agent_now_ms() - t0;
	assert_true(res.timed_out);
	assert_int_equal(res.term_signal, SIGKILL);
	assert_true(took >= 450 && took < 5000);
	pid_t grandchild = (pid_t)atol((char *)res.out.data);
	assert_true(grandchild > 0);
	msb_exec_result_free(&res);
	assert_int_equal(msb_agent_ping(c->client, 5, NULL), MSB_OK); /* lets the agent reap */
	assert_true(fixture_wait_gone(grandchild, 2000));
}

static void test_output_cap(void **state)
{
	ctx *c = *state;
	const char *const argv[] = { "sh", "-c", "head -c 200000 /dev/zero; echo tail >&2", NULL };
	msb_exec_result res = { 0 };
	assert_int_equal(run_argv(c, argv, 10, 1000, &res, NULL), MSB_OK);
	assert_int_equal(res.out.len, 1000);
	assert_true(res.out_truncated);
	assert_false(res.err_truncated);
	assert_string_equal((char *)res.err.data, "tail\n");
	assert_int_equal(res.exit_code, 0); /* drained, never blocked into a timeout */
	assert_false(res.timed_out);
	msb_exec_result_free(&res);
}

static void test_not_found(void **state)
{
	ctx *c = *state;
	const char *const argv[] = { "no-such-program-xyz", NULL };
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(run_argv(c, argv, 10, 0, &res, &err), MSB_E_NOT_FOUND);
	assert_non_null(strstr(msb_error_message(&err), "no-such-program-xyz"));
	assert_non_null(strstr(msb_error_message(&err), "msb-agent"));
	msb_error_clear(&err);

	const char *const pwd[] = { "pwd", NULL };
	msb_exec_request req = { .argv = pwd, .timeout = 10, .working_directory = "/nonexistent-dir" };
	assert_int_equal(msb_agent_exec(c->client, &req, NULL, &res, &err), MSB_E_NOT_FOUND);
	assert_non_null(strstr(msb_error_message(&err), "/nonexistent-dir"));
	msb_error_clear(&err);
}

/* A request a host got wrong is refused by name, never run on a guess. */
static void test_malformed_requests_refused(void **state)
{
	ctx *c = *state;
	const char *const argv[] = { "true", NULL };
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	msb_exec_request req = { .argv = argv, .timeout = NAN };
	assert_int_equal(msb_agent_exec(c->client, &req, NULL, &res, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "timeout is not a number"));
	req = (msb_exec_request){ .argv = argv, .timeout = 10, .stdin_len = 5 };
	assert_int_equal(msb_agent_exec(c->client, &req, NULL, &res, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "stdin_data is NULL"));
	assert_int_equal(msb_agent_run_code(c->client, "true", NAN, 0, &res, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "run_code refused"));
	msb_error_clear(&err);
	/* Past the longest duration kept, a timeout is that duration: the command runs. */
	req = (msb_exec_request){ .argv = argv, .timeout = INFINITY };
	assert_int_equal(msb_agent_exec(c->client, &req, NULL, &res, NULL), MSB_OK);
	assert_int_equal(res.exit_code, 0);
	msb_exec_result_free(&res);
}

static void test_run_code(void **state)
{
	ctx *c = *state;
	msb_exec_result res = { 0 };
	assert_int_equal(msb_agent_run_code(c->client, "echo hi; echo oops >&2; exit 4", 10, 0,
					    &res, NULL), MSB_OK);
	assert_string_equal((char *)res.out.data, "hi\n");
	assert_string_equal((char *)res.err.data, "oops\n");
	assert_int_equal(res.exit_code, 4);
	msb_exec_result_free(&res);

	assert_int_equal(msb_agent_run_code(c->client, "sleep 5", 0.3, 0, &res, NULL), MSB_OK);
	assert_true(res.timed_out);
	msb_exec_result_free(&res);
}

static void test_queued_timeout(void **state)
{
	ctx *c = *state;
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	/* A deadline already gone when the call is made never starts the program. */
	assert_int_equal(msb_agent_run_code(c->client, "echo hi", 1e-9, 0, &res, &err),
			 MSB_E_QUEUED_TIMEOUT);
	assert_non_null(strstr(msb_error_message(&err), "not started"));
	msb_error_clear(&err);
}

typedef struct hold {
	msb_agent_client *client;
	msb_errc rc;
} hold;

static void *hold_stream(void *arg)
{
	hold *h = arg;
	msb_exec_result res = { 0 };
	h->rc = msb_agent_run_code(h->client, "sleep 1", 10, 0, &res, NULL);
	msb_exec_result_free(&res);
	return NULL;
}

/*
 * One stream serves one request at a time, so a call waits for the one before it; a
 * deadline that passes while it waits is SandboxQueuedTimeout, and its program never runs.
 */
static void test_queued_behind_another_call(void **state)
{
	ctx *c = *state;
	hold h = { .client = c->client };
	pthread_t t;
	pthread_create(&t, NULL, hold_stream, &h);
	fixture_sleep_ms(200);
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_agent_run_code(c->client, "touch ran", 0.2, 0, &res, &err),
			 MSB_E_QUEUED_TIMEOUT);
	assert_non_null(strstr(msb_error_message(&err), "run_code"));
	msb_error_clear(&err);
	pthread_join(t, NULL);
	assert_int_equal(h.rc, MSB_OK);
	char path[160];
	snprintf(path, sizeof path, "%s/ran", c->fx.work);
	assert_int_not_equal(access(path, F_OK), 0);
	/* The stream is still in step afterwards. */
	assert_int_equal(msb_agent_ping(c->client, 5, NULL), MSB_OK);
}

/* An agent started with 0, 1 and 2 closed still gives each command its own three. */
static void test_agent_started_without_std_fds(void **state)
{
	static const char *const extra[] = { "--run-code", "sh", NULL };
	static agent_fixture fx; /* static: teardown may have to stop it */
	fixture_close_std = 1;
	fixture_start(&fx, "--listen", extra);
	fixture_close_std = 0;
	msb_agent_client *client = NULL;
	assert_int_equal(msb_agent_client_open_unix(fx.sock, 10, &client, NULL), MSB_OK);
	const char *const argv[] = { "sh", "-c", "cat; echo err >&2", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 10, .stdin_data = "in\n", .stdin_len = 3 };
	msb_exec_result res = { 0 };
	assert_int_equal(msb_agent_exec(client, &req, NULL, &res, NULL), MSB_OK);
	assert_string_equal((char *)res.out.data, "in\n");
	assert_string_equal((char *)res.err.data, "err\n");
	assert_int_equal(res.exit_code, 0);
	msb_exec_result_free(&res);
	assert_int_equal(msb_agent_run_code(client, "echo code", 10, 0, &res, NULL), MSB_OK);
	assert_string_equal((char *)res.out.data, "code\n");
	msb_exec_result_free(&res);
	msb_agent_client_close(client);
	fixture_stop(&fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_argv_verbatim),
		cmocka_unit_test(test_streams_and_status),
		cmocka_unit_test(test_stdin),
		cmocka_unit_test(test_environment_scrubbed),
		cmocka_unit_test(test_timeout_kills_tree),
		cmocka_unit_test(test_output_cap),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_malformed_requests_refused),
		cmocka_unit_test(test_run_code),
		cmocka_unit_test(test_queued_timeout),
		cmocka_unit_test(test_queued_behind_another_call),
		cmocka_unit_test(test_agent_started_without_std_fds),
	};
	return cmocka_run_group_tests(tests, setup, agent_session_teardown);
}
