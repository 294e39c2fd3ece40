/*
 * forged_caps.c — the host holds every configured cap itself, whatever the agent says. The
 * `process` backend is configured with `agent:` pointing at tests/agent/forged_agent (an
 * impostor that greets correctly and then lies) and `max_output: 1MiB`; each case asks for
 * one lie through the driver's own operations and checks that the host refused it, naming
 * the cap, and kept nothing of it. The driver is the same for every agent-backed backend, so
 * what holds here holds for bwrap, gvisor and qemu: their agent can be replaced by their
 * guest in the same way.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend_fixture.h"

#define PLUGIN MSB_TEST_MODULE("plugins/process", "process")
#define FORGED MSB_TOP_BUILDDIR "/tests/agent/forged_agent"

typedef struct world {
	backend_fixture fx;
	msb_spec spec;
	msb_sandbox_handle *h;
} world;

static int setup(void **state)
{
	static world w;
	msb_error err = MSB_ERROR_INIT;
	memset(&w, 0, sizeof w);
	if (backend_fixture_state(&w.fx, NULL, "/tmp/msb-forged-XXXXXX", &err) != MSB_OK ||
	    backend_fixture_load(&w.fx, PLUGIN, &err,
				 "state_dir: %s\nagent: %s\nmax_output: 1MiB\ntimeout: 20\n",
				 w.fx.state, FORGED) != MSB_OK) {
		fprintf(stderr, "opening the process backend: %s\n", msb_error_message(&err));
		return -1;
	}
	msb_spec_init(&w.spec, "default");
	msb_key key = { "forged", "t1", "", "" };
	if (w.fx.ops->acquire(w.fx.self, &key, &w.spec, &w.h, &err) != MSB_OK) {
		fprintf(stderr, "acquire with the forged agent: %s\n", msb_error_message(&err));
		return -1;
	}
	*state = &w;
	return 0;
}

static int teardown(void **state)
{
	world *w = *state;
	msb_key key = { "forged", "t1", "", "" };
	msb_disposal_failure f = { 0 };
	w->fx.ops->release(w->h);
	bool failed = w->fx.ops->dispose(w->fx.self, &key, &f);
	msb_disposal_failure_free(&f);
	backend_fixture_close(&w->fx);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", w->fx.state);
	if (system(cmd) != 0 || failed)
		return -1;
	return 0;
}

static msb_errc forged_exec(world *w, size_t max_output, const char *what, const char *n,
			    msb_exec_result *res, msb_error *err)
{
	const char *argv[] = { what, n, NULL };
	msb_exec_request req = { .argv = argv, .timeout = 10, .max_output = max_output };
	memset(res, 0, sizeof *res);
	return w->fx.ops->exec(w->h, &req, res, err);
}

/* Peak RSS of this process in KiB. */
static long peak_kib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* 16 MiB of stdout under the backend's configured 1 MiB (the call asked for the default). */
static void configured_cap_holds_stdout(void **state)
{
	world *w = *state;
	msb_exec_result res;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = forged_exec(w, 0, "flood-out", "16777216", &res, &err);
	assert_int_equal(rc, MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "1048576"));
	assert_null(res.out.data);
	msb_error_clear(&err);
	/* One byte over, on stderr, is refused as well: the bound is the cap, not a margin. */
	rc = forged_exec(w, 0, "flood-err", "1048577", &res, &err);
	assert_int_equal(rc, MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "stderr"));
	msb_error_clear(&err);
	/* At the cap is an honest answer. */
	rc = forged_exec(w, 0, "flood-out", "1048576", &res, &err);
	assert_int_equal(rc, MSB_OK);
	assert_int_equal(res.out.len, 1048576);
	msb_exec_result_free(&res);
}

/* The call's own cap, below the configured one, is held too. */
static void call_cap_holds(void **state)
{
	world *w = *state;
	msb_exec_result res;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(forged_exec(w, 100, "flood-out", "101", &res, &err), MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "100 per stream"));
	msb_error_clear(&err);
	assert_int_equal(forged_exec(w, 100, "flood-out", "100", &res, &err), MSB_OK);
	msb_exec_result_free(&res);
}

/* run_code has no cap of its own in the contract: the configured one is what holds it. */
static void run_code_holds_configured_cap(void **state)
{
	world *w = *state;
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = w->fx.ops->run_code(w->h, "flood-out 2000000", 10, &res, &err);
	assert_int_equal(rc, MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "1048576"));
	msb_error_clear(&err);
}

/*
 * A header that claims 60 MiB for an exec allowed 2 x 1 MiB is refused on the header, before
 * anything is allocated: this process's peak RSS does not grow by the claim.
 */
static void frame_length_refused_before_allocation(void **state)
{
	world *w = *state;
	msb_exec_result res;
	msb_error err = MSB_ERROR_INIT;
	long before = peak_kib();
	msb_errc rc = forged_exec(w, 0, "frame", "62914560", &res, &err);
	assert_int_equal(rc, MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "62914560"));
	msb_error_clear(&err);
	assert_true(peak_kib() - before < 20 * 1024);
}

/* A signal or a kill reach that does not exist is a lie the host would print as fact. */
static void signal_lie_refused(void **state)
{
	world *w = *state;
	msb_exec_result res;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(forged_exec(w, 0, "signal", "100000", &res, &err), MSB_E_PROTOCOL);
	msb_error_clear(&err);
	assert_int_equal(forged_exec(w, 0, "reach", "7", &res, &err), MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "kill reach of 7"));
	msb_error_clear(&err);
	assert_int_equal(forged_exec(w, 0, "reach", "2", &res, &err), MSB_OK);
	assert_true(res.timed_out);
	assert_int_equal(res.kill_reach, MSB_REACH_TREE);
	msb_exec_result_free(&res);
}

/* read_file's max_bytes, whatever the agent sends; nothing of the answer is kept. */
static void read_file_cap_holds(void **state)
{
	world *w = *state;
	msb_buf out = { 0 };
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = w->fx.ops->read_file(w->h, "big-5000", MSB_DEFAULT_WORK_DIR, 4096, &out, &err);
	assert_int_equal(rc, MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "4096"));
	assert_null(out.data);
	msb_error_clear(&err);
	rc = w->fx.ops->read_file(w->h, "big-4096", MSB_DEFAULT_WORK_DIR, 4096, &out, &err);
	assert_int_equal(rc, MSB_OK);
	assert_int_equal(out.len, 4096);
	msb_buf_free(&out);
}

/* list_dir: a count, a path length and a size no honest agent says are refused, nothing kept. */
static void list_dir_lies_refused(void **state)
{
	world *w = *state;
	const char *lies[] = { "many-70000", "long", "negative" };
	for (size_t i = 0; i < sizeof lies / sizeof *lies; i++) {
		msb_entry_list list = { 0 };
		msb_error err = MSB_ERROR_INIT;
		msb_errc rc = w->fx.ops->list_dir(w->h, lies[i], MSB_DEFAULT_WORK_DIR, &list, &err);
		if (rc != MSB_E_PROTOCOL)
			fprintf(stderr, "list_dir %s: %d %s\n", lies[i], rc, msb_error_message(&err));
		assert_int_equal(rc, MSB_E_PROTOCOL);
		assert_int_equal(list.len, 0);
		assert_null(list.items);
		msb_error_clear(&err);
	}
	msb_entry_list list = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(w->fx.ops->list_dir(w->h, "many-3", MSB_DEFAULT_WORK_DIR, &list, &err), MSB_OK);
	assert_int_equal(list.len, 3);
	msb_entry_list_free(&list);
}

int main(void)
{
	if (access(FORGED, X_OK) != 0 || access(PLUGIN, R_OK) != 0) {
		printf("SKIP: %s or %s is not built\n", FORGED, PLUGIN);
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(configured_cap_holds_stdout),
		cmocka_unit_test(call_cap_holds),
		cmocka_unit_test(run_code_holds_configured_cap),
		cmocka_unit_test(frame_length_refused_before_allocation),
		cmocka_unit_test(signal_lie_refused),
		cmocka_unit_test(read_file_cap_holds),
		cmocka_unit_test(list_dir_lies_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
