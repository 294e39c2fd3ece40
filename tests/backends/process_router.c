/*
 * process_router.c — the process backend as a host meets it: sandbox.yaml loaded, a router
 * built over it, sandboxes acquired by key and used through the msb_sandbox API (file
 * operations against the spec's work_dir, which the agent maps to the sandbox's directory),
 * `call` scope keeping calls apart, and dispose_scope counting what went.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/config.h>
#include <msb/msb.h>
#include <msb/router.h>
#include <msb/sandbox.h>

#include "process_config.h"

typedef struct ctx {
	char dir[64];
	msb_config *cfg;
	msb_router *router;
} ctx;

static int setup(void **state)
{
	ctx *c = calloc(1, sizeof *c);
	if (msb_test_process_router(c->dir, sizeof c->dir, "/tmp/msb-process-router-XXXXXX",
				    "      run_code: sh\n"
				    "specs:\n"
				    "  chat:\n"
				    "    requires: [exec, run_code, files_in, files_out, files_list, files_delete]\n"
				    "  tool:\n"
				    "    isolation_scope: call\n"
				    "    requires: [exec, files_in, files_out]\n"
				    "  imaged:\n"
				    "    image: python\n"
				    "  hosted:\n"
				    "    image: host\n",
				    &c->cfg, &c->router))
		return -1;
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	ctx *c = *state;
	msb_scope_purge purge = { 0 };
	msb_router_dispose_scope(c->router, "conv", "t1", &purge);
	msb_scope_purge_free(&purge);
	int rc = msb_test_process_router_free(c->dir, c->cfg, c->router);
	free(c);
	return rc;
}

static msb_sandbox *acquire(ctx *c, const char *kind, const char *call_id)
{
	const msb_spec *spec = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_sandbox *s = NULL;
	msb_key key = { "conv", "t1", "agent", call_id };
	if (msb_config_spec_find(c->cfg, kind, &spec, &err) != MSB_OK ||
	    msb_router_acquire(c->router, &key, spec, &s, &err) != MSB_OK) {
		fprintf(stderr, "acquire %s: %s\n", kind, msb_error_message(&err));
		fail();
	}
	return s;
}

static void test_host_round_trip(void **state)
{
	ctx *c = *state;
	msb_sandbox *s = acquire(c, "chat", "");
	msb_error err = MSB_ERROR_INIT;
	/* NULL working directory: the spec's /msb/work, which is this sandbox's directory. */
	assert_int_equal(msb_sandbox_write_file(s, "in/data.txt", "42\n", 3, NULL, &err), MSB_OK);
	const char *const argv[] = { "sh", "-c", "cat in/data.txt; echo out > result.txt", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 10 };
	msb_exec_result res = { 0 };
	assert_int_equal(msb_sandbox_exec(s, &req, &res, &err), MSB_OK);
	assert_string_equal((char *)res.out.data, "42\n");
	msb_exec_result_free(&res);
	msb_buf buf = { 0 };
	assert_int_equal(msb_sandbox_read_file(s, "result.txt", NULL, 100, &buf, &err), MSB_OK);
	assert_string_equal((char *)buf.data, "out\n");
	msb_buf_free(&buf);
	assert_int_equal(msb_sandbox_run_code(s, "pwd >/dev/null && echo ran", 10, &res, &err), MSB_OK);
	assert_string_equal((char *)res.out.data, "ran\n");
	msb_exec_result_free(&res);
	msb_entry_list list = { 0 };
	assert_int_equal(msb_sandbox_list_dir(s, "", NULL, &list, &err), MSB_OK);
	assert_int_equal(list.len, 2); /* in/, result.txt */
	msb_entry_list_free(&list);
	assert_int_equal(msb_sandbox_remove(s, "in", NULL, true, &err), MSB_OK);
	msb_sandbox_release(s);

	/* The same key later meets the same sandbox. */
	s = acquire(c, "chat", "");
	bool found = false;
	msb_entry e = { 0 };
	assert_int_equal(msb_sandbox_stat_file(s, "result.txt", NULL, &e, &found, &err), MSB_OK);
	assert_true(found);
	free(e.path);
	msb_sandbox_release(s);
}

static void test_call_scope_apart(void **state)
{
	ctx *c = *state;
	msb_sandbox *a = acquire(c, "tool", "call-a"), *b = acquire(c, "tool", "call-b");
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_sandbox_write_file(a, "mine", "a", 1, NULL, &err), MSB_OK);
	msb_entry e = { 0 };
	bool found = true;
	assert_int_equal(msb_sandbox_stat_file(b, "mine", NULL, &e, &found, &err), MSB_OK);
	assert_false(found); /* another call's leftovers are unreachable */
	msb_sandbox_release(a);
	msb_sandbox_release(b);

	msb_scope_purge purge = { 0 };
	msb_router_dispose_scope(c->router, "conv", "t1", &purge);
	assert_int_equal(purge.disposed, 3); /* chat, and one sandbox per call */
	assert_false(purge.has_undisposed);
	msb_scope_purge_free(&purge);
}

/*
 * Issue 21: a process sandbox shares the host's filesystem, so a spec naming a store image
 * is refused when it is routed — ensure_can_serve and acquire alike, before any sandbox is
 * started — with SandboxCapabilityNotSupported naming the backend, the image and why. The
 * host image (named or not) is served as before.
 */
static void test_store_image_refused_at_route_time(void **state)
{
	ctx *c = *state;
	const msb_spec *spec = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_config_spec_find(c->cfg, "imaged", &spec, &err), MSB_OK);
	const msb_backend *chosen = NULL;
	assert_int_equal(msb_router_ensure_can_serve(c->router, spec, &chosen, &err),
			 MSB_E_CAPABILITY_NOT_SUPPORTED);
	const char *m = msb_error_message(&err);
	assert_non_null(strstr(m, "'process'"));
	assert_non_null(strstr(m, "image 'python'"));
	assert_non_null(strstr(m, "share the host's filesystem"));
	assert_string_equal(msb_errc_name(err.code), "SandboxCapabilityNotSupported");
	msb_error_clear(&err);
	msb_key key = { "conv", "t1", "agent", "" };
	msb_sandbox *s = NULL;
	assert_int_equal(msb_router_acquire(c->router, &key, spec, &s, &err),
			 MSB_E_CAPABILITY_NOT_SUPPORTED);
	assert_null(s);
	msb_error_clear(&err);
	assert_int_equal(msb_config_spec_find(c->cfg, "hosted", &spec, &err), MSB_OK);
	assert_int_equal(msb_router_ensure_can_serve(c->router, spec, &chosen, &err), MSB_OK);
	s = acquire(c, "hosted", "");
	/* The host image has no content address to report. */
	assert_null(msb_sandbox_effective_state(s)->image_digest);
	msb_sandbox_release(s);
}

int main(void)
{
	if (access(MSB_TEST_AGENT, X_OK) != 0) {
		printf("msb-agent is not built at %s\n", MSB_TEST_AGENT);
		return MSB_TEST_SKIP;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_round_trip),
		cmocka_unit_test(test_call_scope_apart),
		cmocka_unit_test(test_store_image_refused_at_route_time),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
