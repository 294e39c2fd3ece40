/*
 * test_router_sandbox.c — the acquired sandbox: each operation gated by the backend's
 * declared capability (reclaim by nothing), and the inprocess fake's surface behind it —
 * scripted exec and run_code, recorded calls, and a confined in-memory file tree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "router_fixture.h"

struct ctx {
	fx f;
	msb_router *r;
	msb_sandbox *sb;
	msb_backend *b;
};

static struct ctx *open_sandbox_spec(void **state, const char *yaml, const msb_spec *spec)
{
	static struct ctx c;
	memset(&c, 0, sizeof c);
	fx_init(&c.f, NULL);
	c.b = fx_open(&c.f, "inprocess", yaml);
	msb_router_options o = fx_options(&c.f);
	msb_error err = MSB_ERROR_INIT;
	if (msb_router_new(&c.b, 1, &o, &c.r, &err) != MSB_OK)
		fail_msg("router: %s", msb_error_message(&err));
	msb_key key = { "s", "t", "a", "" };
	if (msb_router_acquire(c.r, &key, spec, &c.sb, &err) != MSB_OK)
		fail_msg("acquire: %s", msb_error_message(&err));
	*state = &c;
	return &c;
}

static struct ctx *open_sandbox(void **state, const char *yaml, msb_set requires)
{
	msb_spec spec;
	msb_spec_init(&spec, "k");
	spec.requires = requires;
	return open_sandbox_spec(state, yaml, &spec);
}

static int teardown(void **state)
{
	struct ctx *c = *state;
	msb_sandbox_release(c->sb);
	msb_router_free(c->r);
	fx_free(&c->f);
	return 0;
}

static const char full_caps[] =
	"capabilities: [exec, run_code, files_in, files_out, files_list, files_delete]\n";

/* ---- gating --------------------------------------------------------------------------- */

static void undeclared_operations_never_reach_the_backend(void **state)
{
	struct ctx *c = open_sandbox(state, "capabilities: [exec]\n", MSB_BIT(MSB_CAP_EXEC));
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, msb_sandbox_write_file(c->sb, "a.txt", "x", 1, NULL, &err),
			  MSB_E_NOT_IMPLEMENTED, "'inprocess'", "files_in", "write_file");
	fx_assert_refused(&err, msb_sandbox_run_code(c->sb, "print(1)", 5, &(msb_exec_result){ 0 }, &err),
			  MSB_E_NOT_IMPLEMENTED, "run_code");
	msb_entry e;
	bool found;
	fx_assert_refused(&err, msb_sandbox_stat_file(c->sb, "a", NULL, &e, &found, &err), MSB_E_NOT_IMPLEMENTED,
			  "files_out", "stat_file");
	msb_buf buf = { 0 };
	fx_assert_refused(&err, msb_sandbox_read_file(c->sb, "a", NULL, 10, &buf, &err), MSB_E_NOT_IMPLEMENTED,
			  "files_out", "read_file");
	msb_entry_list list = { 0 };
	fx_assert_refused(&err, msb_sandbox_list_dir(c->sb, "", NULL, &list, &err), MSB_E_NOT_IMPLEMENTED,
			  "files_list");
	fx_assert_refused(&err, msb_sandbox_remove(c->sb, "a", NULL, false, &err), MSB_E_NOT_IMPLEMENTED,
			  "files_delete");
	assert_int_equal(fx_count(c->b, "write_file") + fx_count(c->b, "run_code") + fx_count(c->b, "remove"), 0);
	/* reclaim is gated by nothing: a backend declaring exec alone still serves it. */
	assert_int_equal(msb_sandbox_reclaim(c->sb, "/msb/work/.run-1f3a", "/msb/work", 5, &err), MSB_OK);
	assert_int_equal(fx_count(c->b, "reclaim"), 1);
	assert_string_equal(fx_recorded(c->b, "reclaim", 0), "/msb/work/.run-1f3a");
}

static void exec_is_gated_too(void **state)
{
	struct ctx *c = open_sandbox(state, "capabilities: [files_in]\n", MSB_BIT(MSB_CAP_FILES_IN));
	msb_error err = MSB_ERROR_INIT;
	msb_exec_result res = { 0 };
	fx_assert_refused(&err, msb_sandbox_exec(c->sb, &(msb_exec_request){ .argv = MSB_WORDS("ls") }, &res, &err),
			  MSB_E_NOT_IMPLEMENTED, "exec");
	assert_int_equal(fx_count(c->b, "exec"), 0);
}

/* ---- scripted commands ---------------------------------------------------------------- */

static void exec_and_run_code_answer_from_separate_scripts(void **state)
{
	struct ctx *c = open_sandbox(state,
				     "capabilities: [exec, run_code, files_in]\n"
				     "outputs: [{match: 'bicep build', stdout: compiled, stderr: warn, exit_code: 3}]\n"
				     "programs: [{match: 'print', stdout: '42'}]\n"
				     "default_stdout: nothing\n",
				     MSB_DEFAULT_CAPABILITIES | MSB_BIT(MSB_CAP_RUN_CODE));
	msb_error err = MSB_ERROR_INIT;
	msb_exec_result res = { 0 };
	assert_int_equal(msb_sandbox_exec(c->sb, &(msb_exec_request){ .argv = MSB_WORDS("bicep", "build", "main.bicep") },
					  &res, &err), MSB_OK);
	assert_string_equal((char *)res.out.data, "compiled");
	assert_string_equal((char *)res.err.data, "warn");
	assert_int_equal(res.exit_code, 3);
	msb_exec_result_free(&res);
	/* A program matching an exec script gets the default: the lists are separate. */
	assert_int_equal(msb_sandbox_run_code(c->sb, "bicep build", 5, &res, &err), MSB_OK);
	assert_string_equal((char *)res.out.data, "nothing");
	msb_exec_result_free(&res);
	assert_int_equal(msb_sandbox_run_code(c->sb, "print(6*7)", 5, &res, &err), MSB_OK);
	assert_string_equal((char *)res.out.data, "42");
	msb_exec_result_free(&res);
	/* Output caps truncate and say so. */
	assert_int_equal(msb_sandbox_exec(c->sb, &(msb_exec_request){ .argv = MSB_WORDS("bicep", "build"), .max_output = 4 },
					  &res, &err), MSB_OK);
	assert_string_equal((char *)res.out.data, "comp");
	assert_true(res.out_truncated);
	assert_false(res.err_truncated);
	msb_exec_result_free(&res);
	assert_int_equal(fx_count(c->b, "exec"), 2);
	assert_string_equal(fx_recorded(c->b, "exec", 0), "bicep build main.bicep");
	assert_int_equal(fx_count(c->b, "run_code"), 2);
	assert_string_equal(fx_recorded(c->b, "run_code", 1), "print(6*7)");
}

/* ---- files ---------------------------------------------------------------------------- */

static void files_round_trip_under_the_work_dir(void **state)
{
	struct ctx *c = open_sandbox(state, full_caps, MSB_DEFAULT_CAPABILITIES);
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_sandbox_write_file(c->sb, "out/a.txt", "hello", 5, NULL, &err), MSB_OK);
	assert_int_equal(msb_sandbox_write_file(c->sb, "out/sub/b.txt", "xy", 2, NULL, &err), MSB_OK);
	assert_int_equal(msb_sandbox_write_file(c->sb, "c.txt", "", 0, NULL, &err), MSB_OK);
	assert_string_equal(fx_recorded(c->b, "write_file", 0), "/msb/work/out/a.txt");
	msb_entry e = { 0 };
	bool found = false;
	assert_int_equal(msb_sandbox_stat_file(c->sb, "out/a.txt", NULL, &e, &found, &err), MSB_OK);
	assert_true(found);
	assert_string_equal(e.path, "out/a.txt");
	assert_int_equal(e.kind, MSB_ENTRY_FILE);
	assert_int_equal(e.size_bytes, 5);
	free(e.path);
	assert_int_equal(msb_sandbox_stat_file(c->sb, "out", NULL, &e, &found, &err), MSB_OK);
	assert_true(found);
	assert_int_equal(e.kind, MSB_ENTRY_DIRECTORY);
	free(e.path);
	assert_int_equal(msb_sandbox_stat_file(c->sb, "missing", NULL, &e, &found, &err), MSB_OK);
	assert_false(found);

	msb_buf buf = { 0 };
	assert_int_equal(msb_sandbox_read_file(c->sb, "out/a.txt", NULL, 5, &buf, &err), MSB_OK);
	assert_string_equal((char *)buf.data, "hello");
	msb_buf_free(&buf);
	/* Over max_bytes: refused, never truncated. */
	fx_assert_refused(&err, msb_sandbox_read_file(c->sb, "out/a.txt", NULL, 4, &buf, &err),
			  MSB_E_TRANSFER_CAP_EXCEEDED, "5 bytes", "allowed 4");
	assert_int_equal(buf.len, 0);
	fx_assert_refused(&err, msb_sandbox_read_file(c->sb, "out", NULL, 4, &buf, &err), MSB_E_IS_DIR, "directory");
	fx_assert_refused(&err, msb_sandbox_read_file(c->sb, "nope", NULL, 4, &buf, &err), MSB_E_NOT_FOUND, "nope");

	msb_entry_list list = { 0 };
	assert_int_equal(msb_sandbox_list_dir(c->sb, "out", NULL, &list, &err), MSB_OK);
	assert_int_equal(list.len, 2);
	bool saw_file = false, saw_dir = false;
	for (size_t i = 0; i < list.len; i++) {
		saw_file |= strcmp(list.items[i].path, "out/a.txt") == 0 && list.items[i].kind == MSB_ENTRY_FILE;
		saw_dir |= strcmp(list.items[i].path, "out/sub") == 0 && list.items[i].kind == MSB_ENTRY_DIRECTORY;
	}
	assert_true(saw_file && saw_dir);
	msb_entry_list_free(&list);
	assert_int_equal(msb_sandbox_list_dir(c->sb, ".", NULL, &list, &err), MSB_OK);
	assert_int_equal(list.len, 2); /* out, c.txt */
	msb_entry_list_free(&list);
	fx_assert_refused(&err, msb_sandbox_list_dir(c->sb, "c.txt", NULL, &list, &err), MSB_E_NOT_DIR, "file");
	fx_assert_refused(&err, msb_sandbox_list_dir(c->sb, "zz", NULL, &list, &err), MSB_E_NOT_FOUND, "zz");

	/* Overwrite replaces; a path through a file and a write over a directory are refused. */
	assert_int_equal(msb_sandbox_write_file(c->sb, "out/a.txt", "bye", 3, NULL, &err), MSB_OK);
	assert_int_equal(msb_sandbox_read_file(c->sb, "out/a.txt", NULL, 100, &buf, &err), MSB_OK);
	assert_string_equal((char *)buf.data, "bye");
	msb_buf_free(&buf);
	fx_assert_refused(&err, msb_sandbox_write_file(c->sb, "c.txt/x", "1", 1, NULL, &err), MSB_E_NOT_DIR, "c.txt");
	fx_assert_refused(&err, msb_sandbox_write_file(c->sb, "out", "1", 1, NULL, &err), MSB_E_IS_DIR, "directory");

	/* Another working directory is another place. */
	assert_int_equal(msb_sandbox_write_file(c->sb, "a.txt", "o", 1, "/other", &err), MSB_OK);
	assert_int_equal(msb_sandbox_stat_file(c->sb, "a.txt", NULL, &e, &found, &err), MSB_OK);
	assert_false(found);

	/* remove: a directory needs recursive. */
	fx_assert_refused(&err, msb_sandbox_remove(c->sb, "out", NULL, false, &err), MSB_E_IS_DIR, "recursive");
	assert_int_equal(msb_sandbox_remove(c->sb, "out", NULL, true, &err), MSB_OK);
	assert_int_equal(msb_sandbox_stat_file(c->sb, "out/sub/b.txt", NULL, &e, &found, &err), MSB_OK);
	assert_false(found);
	fx_assert_refused(&err, msb_sandbox_remove(c->sb, "out", NULL, true, &err), MSB_E_NOT_FOUND, "out");
	assert_int_equal(msb_sandbox_remove(c->sb, "c.txt", NULL, false, &err), MSB_OK);
}

static void paths_are_confined(void **state)
{
	struct ctx *c = open_sandbox(state, full_caps, MSB_DEFAULT_CAPABILITIES);
	msb_error err = MSB_ERROR_INIT;
	static const char *const escapes[] = { "../x", "a/../../x", "/etc/passwd", "a/./b", "a//b", "a\\b" };
	for (size_t i = 0; i < sizeof escapes / sizeof escapes[0]; i++) {
		msb_errc rc = msb_sandbox_write_file(c->sb, escapes[i], "x", 1, NULL, &err);
		fx_assert_refused(&err, rc, MSB_E_VALUE, "");
		msb_buf buf = { 0 };
		rc = msb_sandbox_read_file(c->sb, escapes[i], NULL, 10, &buf, &err);
		fx_assert_refused(&err, rc, MSB_E_VALUE, "");
	}
	/* The working directory itself is never written over or removed. */
	fx_assert_refused(&err, msb_sandbox_write_file(c->sb, "", "x", 1, NULL, &err), MSB_E_VALUE, "working directory");
	fx_assert_refused(&err, msb_sandbox_write_file(c->sb, ".", "x", 1, NULL, &err), MSB_E_VALUE, "working directory");
	fx_assert_refused(&err, msb_sandbox_remove(c->sb, ".", NULL, true, &err), MSB_E_VALUE, "working directory");
	assert_int_equal(fx_count(c->b, "write_file"), 0);
	/* A relative working directory is refused too. */
	fx_assert_refused(&err, msb_sandbox_write_file(c->sb, "a", "x", 1, "work", &err), MSB_E_VALUE, "not absolute");
}

static void reclaim_removes_and_absent_is_success(void **state)
{
	struct ctx *c = open_sandbox(state, full_caps, MSB_DEFAULT_CAPABILITIES);
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_sandbox_write_file(c->sb, ".run-7/prog.py", "p", 1, NULL, &err), MSB_OK);
	assert_int_equal(msb_sandbox_write_file(c->sb, "keep.txt", "k", 1, NULL, &err), MSB_OK);
	assert_int_equal(msb_sandbox_reclaim(c->sb, "/msb/work/.run-7", NULL, 5, &err), MSB_OK);
	msb_entry e;
	bool found = true;
	assert_int_equal(msb_sandbox_stat_file(c->sb, ".run-7/prog.py", NULL, &e, &found, &err), MSB_OK);
	assert_false(found);
	assert_int_equal(msb_sandbox_stat_file(c->sb, "keep.txt", NULL, &e, &found, &err), MSB_OK);
	assert_true(found);
	free(e.path);
	assert_int_equal(msb_sandbox_reclaim(c->sb, "/msb/work/.run-7", NULL, 5, &err), MSB_OK);
	fx_assert_refused(&err, msb_sandbox_reclaim(c->sb, "relative", NULL, 5, &err), MSB_E_VALUE, "absolute");
	assert_int_equal(fx_count(c->b, "reclaim"), 3);
}

/* A sandbox disposed under a handle refuses work, as an engine whose sandbox is gone does. */
static void a_disposed_sandbox_refuses_work(void **state)
{
	struct ctx *c = open_sandbox(state, full_caps, MSB_DEFAULT_CAPABILITIES);
	msb_error err = MSB_ERROR_INIT;
	assert_true(msb_router_dispose(c->r, msb_sandbox_key(c->sb), NULL));
	fx_assert_refused(&err, msb_sandbox_write_file(c->sb, "a", "x", 1, NULL, &err), MSB_E_BACKEND, "disposed");
	msb_exec_result res = { 0 };
	fx_assert_refused(&err, msb_sandbox_exec(c->sb, &(msb_exec_request){ .argv = MSB_WORDS("ls") }, &res, &err),
			  MSB_E_BACKEND, "disposed");
}

/* The fake's config is read strictly: a typo is refused, never read as "not stated". */
static void the_fakes_config_is_strict(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"capabilitys: [exec]\n",
		"capabilities: [exec, teleport]\n",
		"fail_dispose: sometimes\n",
		"fail_acquire: NotAnError\n",
		"outputs: [{stdout: x}]\n",
		"limits: {files_in: {max_filez: 3}}\n",
	};
	static fx f;
	fx_init(&f, NULL);
	const msb_plugin *p = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_loader_load(f.loader, MSB_TOP_BUILDDIR "/plugins/inprocess/.libs/inprocess.so", &p, &err), MSB_OK);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		msb_config_doc *doc = NULL;
		assert_int_equal(msb_config_doc_parse(bad[i], strlen(bad[i]), "<test>", &doc, &err), MSB_OK);
		msb_backend *b = NULL;
		msb_errc rc = msb_backend_open(p, msb_config_doc_root(doc), NULL, NULL, &b, &err);
		if (rc == MSB_OK)
			fail_msg("config accepted: %s", bad[i]);
		assert_null(b);
		msb_error_clear(&err);
		msb_config_doc_free(doc);
	}
	fx_free(&f);
}
/*
 * What goes in is held to the spec's files_in as what comes out is to its files_out, by the
 * library, whatever the backend would take: a write over any of the three caps, stdin and a
 * run_code program over the per-file cap are refused naming the cap and the file, and the
 * backend never sees them.
 */
static void files_in_caps_hold_going_in(void **state)
{
	msb_spec spec;
	msb_spec_init(&spec, "k");
	spec.requires = MSB_DEFAULT_CAPABILITIES | MSB_BIT(MSB_CAP_RUN_CODE);
	spec.files_in = (msb_transfer_limits){ 100, 80, 2 };
	struct ctx *c = open_sandbox_spec(state, full_caps, &spec);
	msb_error err = MSB_ERROR_INIT;
	char data[102] = { 0 };
	memset(data, 'x', 101);
	fx_assert_refused(&err, msb_sandbox_write_file(c->sb, "big.bin", data, 101, NULL, &err),
			  MSB_E_TRANSFER_CAP_EXCEEDED, "'big.bin' is 101 bytes", "max_bytes_per_file of 100");
	fx_assert_refused(&err, msb_sandbox_write_file(c->sb, "big.bin", data, 81, NULL, &err),
			  MSB_E_TRANSFER_CAP_EXCEEDED, "'big.bin' is 81 bytes", "max_total_bytes of 80");
	assert_null(fx_recorded(c->b, "write_file", 0));
	assert_int_equal(msb_sandbox_write_file(c->sb, "ok.bin", data, 80, NULL, &err), MSB_OK);
	const char *argv[] = { "cat", NULL };
	msb_exec_request req = { .argv = argv, .stdin_data = data, .stdin_len = 101 };
	msb_exec_result res = { 0 };
	fx_assert_refused(&err, msb_sandbox_exec(c->sb, &req, &res, &err), MSB_E_TRANSFER_CAP_EXCEEDED,
			  "standard input of 'cat'", "max_bytes_per_file of 100");
	fx_assert_refused(&err, msb_sandbox_run_code(c->sb, data, 5, &res, &err),
			  MSB_E_TRANSFER_CAP_EXCEEDED, "run_code program", "max_bytes_per_file of 100");
	assert_null(fx_recorded(c->b, "exec", 0));
	assert_null(fx_recorded(c->b, "run_code", 0));
}

int main(void)
{
#define T(fn) cmocka_unit_test_teardown(fn, teardown)
	const struct CMUnitTest tests[] = {
		T(undeclared_operations_never_reach_the_backend),
		T(exec_is_gated_too),
		T(exec_and_run_code_answer_from_separate_scripts),
		T(files_round_trip_under_the_work_dir),
		T(files_in_caps_hold_going_in),
		T(paths_are_confined),
		T(reclaim_removes_and_absent_is_success),
		T(a_disposed_sandbox_refuses_work),
		cmocka_unit_test(the_fakes_config_is_strict),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
