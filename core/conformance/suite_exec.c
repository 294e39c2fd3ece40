/*
 * suite_exec.c — the exec suite: an argv reaches the program exactly as given, the exit
 * status and the two output streams come back apart and intact, the working directory is
 * honoured, a timeout ends the whole process tree, and an output cap truncates and says so.
 *
 * The guest needs a POSIX sh with printf, sleep, head and cat; the kit speaks nothing else.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kit.h"

#define CALL_TIMEOUT 30.0

static msb_errc run_argv(conf_run *run, conf_box *box, const char *const *argv, const char *wd,
			 double timeout, size_t max_output, msb_exec_result *res, msb_error *err)
{
	msb_exec_request req = {
		.argv = argv,
		.working_directory = wd ? wd : run->work_dir,
		.timeout = timeout,
		.max_output = max_output,
	};
	memset(res, 0, sizeof(*res));
	return run->ops->exec(box->handle, &req, res, err);
}

/* Fail the case unless the call returned MSB_OK; true when it did. */
static bool call_ok(conf_run *run, const char *what, msb_errc rc, const msb_error *err)
{
	if (rc == MSB_OK)
		return true;
	conf_fail_call(run, what, err);
	return false;
}

static void expect_stream(conf_run *run, const char *which, const msb_buf *got, const char *want,
			  size_t want_len)
{
	if (got->len == want_len && (want_len == 0 || memcmp(got->data, want, want_len) == 0))
		return;
	char w[512], g[512], expected[600];
	conf_quote(want, want_len, w, sizeof(w));
	conf_quote(got->data, got->len, g, sizeof(g));
	snprintf(expected, sizeof(expected), "%s to be \"%s\"", which, w);
	conf_fail(run, expected, "%s was \"%s\"", which, g);
}

static void case_runs_a_program(conf_run *run)
{
	conf_box *box = conf_main_box(run);
	if (!box)
		return;
	char nonce[96];
	conf_unique(run, "ran", nonce, sizeof(nonce));
	const char *argv[] = { "printf", "%s", nonce, NULL };
	msb_exec_result res;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = run_argv(run, box, argv, NULL, CALL_TIMEOUT, 0, &res, &err);
	if (call_ok(run, "exec(printf %s NONCE) to run", rc, &err)) {
		if (res.exit_code != 0 || res.timed_out)
			conf_fail(run, "exit status 0", "exit status %d%s", res.exit_code,
				  res.timed_out ? " (timed out)" : "");
		expect_stream(run, "stdout", &res.out, nonce, strlen(nonce));
		if (res.out_truncated || res.err_truncated)
			conf_fail(run, "no truncation flag on a few bytes of output",
				  "out_truncated=%d err_truncated=%d", res.out_truncated, res.err_truncated);
	}
	msb_exec_result_free(&res);
	msb_error_clear(&err);
}

static void case_argv_verbatim(conf_run *run)
{
	conf_box *box = conf_main_box(run);
	if (!box)
		return;
	/* Each argument comes back bracketed: a split shows as two brackets, a join as one, a
	 * dropped empty string as a missing "[]", and an expansion as its output. */
	static const char *const hostile[] = {
		"two words", "", "it's", "\"quoted\"", "$(echo injected)", "`id`", "*",
		"semi;colon", "tab\there", "new\nline", "\x80\xfe\xff not utf-8", "-n", NULL,
	};
	const char *argv[32] = { "sh", "-c", "for a; do printf '[%s]' \"$a\"; done", "sh" };
	size_t n = 4;
	char want[512] = "";
	for (size_t i = 0; hostile[i]; i++) {
		argv[n++] = hostile[i];
		strcat(want, "[");
		strcat(want, hostile[i]);
		strcat(want, "]");
	}
	argv[n] = NULL;
	msb_exec_result res;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = run_argv(run, box, argv, NULL, CALL_TIMEOUT, 0, &res, &err);
	if (call_ok(run, "exec of an argv with spaces, quotes, empty strings and non-UTF-8 bytes", rc, &err)) {
		/* The stream first: a mangled argv usually also breaks the exit status, and the
		 * stream shows how it was mangled. */
		expect_stream(run, "each argument back unchanged, stdout", &res.out, want, strlen(want));
		if (res.exit_code != 0)
			conf_fail(run, "exit status 0", "exit status %d", res.exit_code);
	}
	msb_exec_result_free(&res);
	msb_error_clear(&err);
}

static void case_exit_status(conf_run *run)
{
	conf_box *box = conf_main_box(run);
	if (!box)
		return;
	static const int codes[] = { 0, 1, 7, 42, 255 };
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]) && !conf_decided(run); i++) {
		char script[32];
		snprintf(script, sizeof(script), "exit %d", codes[i]);
		msb_exec_result res;
		msb_error err = MSB_ERROR_INIT;
		msb_errc rc = conf_sh(run, box, NULL, script, NULL, CALL_TIMEOUT, &res, &err);
		if (call_ok(run, "exec(sh -c 'exit N') to return", rc, &err) && res.exit_code != codes[i]) {
			char expected[64];
			snprintf(expected, sizeof(expected), "exit status %d", codes[i]);
			conf_fail(run, expected, "exit status %d from sh -c '%s'", res.exit_code, script);
		}
		msb_exec_result_free(&res);
		msb_error_clear(&err);
	}
}

static void case_killed_by_signal(conf_run *run)
{
	conf_box *box = conf_main_box(run);
	if (!box)
		return;
	msb_exec_result res;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = conf_sh(run, box, NULL, "kill -KILL $$", NULL, CALL_TIMEOUT, &res, &err);
	if (call_ok(run, "exec of a program that kills itself to return", rc, &err) &&
	    (res.term_signal != 9 || res.exit_code != 128 + 9))
		conf_fail(run, "term_signal 9 and exit status 137 (128+signal)",
			  "term_signal %d, exit status %d", res.term_signal, res.exit_code);
	msb_exec_result_free(&res);
	msb_error_clear(&err);
}

static void case_stderr_separate(conf_run *run)
{
	conf_box *box = conf_main_box(run);
	if (!box)
		return;
	msb_exec_result res;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = conf_sh(run, box, NULL, "printf to-out; printf to-err >&2; printf more-out",
			      NULL, CALL_TIMEOUT, &res, &err);
	if (call_ok(run, "exec writing to both streams to return", rc, &err)) {
		expect_stream(run, "stdout", &res.out, "to-outmore-out", 14);
		expect_stream(run, "stderr", &res.err, "to-err", 6);
	}
	msb_exec_result_free(&res);
	msb_error_clear(&err);
}

static void case_stdin_delivered(conf_run *run)
{
	conf_box *box = conf_main_box(run);
	if (!box)
		return;
	static const char input[] = "line one\n\x00\xff binary\n";
	const char *argv[] = { "cat", NULL };
	msb_exec_request req = {
		.argv = argv, .working_directory = run->work_dir, .timeout = CALL_TIMEOUT,
		.stdin_data = input, .stdin_len = sizeof(input) - 1,
	};
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = run->ops->exec(box->handle, &req, &res, &err);
	if (call_ok(run, "exec(cat) with stdin to return", rc, &err))
		expect_stream(run, "stdout of cat (stdin echoed)", &res.out, input, sizeof(input) - 1);
	msb_exec_result_free(&res);
	msb_error_clear(&err);
}

/*
 * The working directory is judged by where a relative write lands, not by what `pwd`
 * prints: a backend may map guest paths (a host directory standing in for the guest's
 * work dir), and then `pwd` names the mapping while relative paths still mean the same.
 */
static void case_working_directory(conf_run *run)
{
	conf_box *box = conf_main_box(run);
	if (!box)
		return;
	char rel[96], sub[512], mark[96], landed[200];
	conf_unique(run, "cwd", rel, sizeof(rel));
	conf_unique(run, "here", mark, sizeof(mark));
	conf_path(run, rel, sub, sizeof(sub));
	snprintf(landed, sizeof(landed), "%s/%s", rel, mark);
	const char *args[] = { rel, NULL };
	if (!conf_sh_ok(run, box, NULL, "a directory to run in", "mkdir -p \"$1\"", args))
		return;
	const char *margs[] = { mark, NULL };
	msb_exec_result res;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = conf_sh(run, box, sub, "printf x > \"$1\"", margs, CALL_TIMEOUT, &res, &err);
	if (call_ok(run, "exec in a subdirectory to return", rc, &err)) {
		int there = conf_exists(run, box, landed), in_work = conf_exists(run, box, mark);
		if (res.exit_code != 0)
			conf_fail(run, "a relative write in the working directory to succeed",
				  "exit status %d", res.exit_code);
		else if (there != 1)
			conf_fail(run, "a relative path to resolve against the working directory the call named",
				  "%s is not there%s", landed, in_work == 1 ? "; it landed in the work dir instead" : "");
	}
	msb_exec_result_free(&res);
	msb_error_clear(&err);
}

static void case_output_cap(conf_run *run)
{
	conf_box *box = conf_main_box(run);
	if (!box)
		return;
	const char *argv[] = { "sh", "-c", "yes abcdefgh | head -c 200000; yes ijk | head -c 200000 >&2", NULL };
	msb_exec_result res;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = run_argv(run, box, argv, NULL, CALL_TIMEOUT, 4096, &res, &err);
	if (call_ok(run, "exec producing 200000 bytes on each stream under a 4096-byte cap", rc, &err)) {
		if (res.out.len > 4096 || res.err.len > 4096)
			conf_fail(run, "at most 4096 bytes kept per stream",
				  "%zu bytes of stdout and %zu of stderr", res.out.len, res.err.len);
		else if (!res.out_truncated || !res.err_truncated)
			conf_fail(run, "out_truncated and err_truncated set",
				  "out_truncated=%d err_truncated=%d", res.out_truncated, res.err_truncated);
		else if (res.out.len < 8 || memcmp(res.out.data, "abcdefgh", 8) != 0)
			conf_fail(run, "the first bytes of stdout kept", "%zu bytes beginning \"%.8s\"",
				  res.out.len, res.out.len ? (const char *)res.out.data : "");
	}
	msb_exec_result_free(&res);
	msb_error_clear(&err);
}

/* Whether `rel` exists in the box, asked through exec; -1 when the question failed. */
static int exists(conf_run *run, conf_box *box, const char *rel)
{
	const char *args[] = { rel, NULL };
	msb_exec_result res;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = conf_sh(run, box, NULL, "test -e \"$1\"", args, CALL_TIMEOUT, &res, &err);
	int answer = rc != MSB_OK ? -1 : res.exit_code == 0 ? 1 : res.exit_code == 1 ? 0 : -1;
	msb_exec_result_free(&res);
	msb_error_clear(&err);
	return answer;
}

/*
 * Last, because the protocol lets a backend discard a sandbox to stop a hung command: the
 * marker check re-acquires when the old handle no longer answers.
 */
static void case_timeout_kills_tree(conf_run *run)
{
	conf_box *box = conf_main_box(run);
	if (!box)
		return;
	char marker[96];
	conf_unique(run, "late", marker, sizeof(marker));
	const char *args[] = { marker, NULL };
	/* A background grandchild that outlives its parent's kill would write the marker at 2s. */
	const char *script = "(sleep 2; echo late > \"$1\") & sleep 30; echo not-killed";
	msb_exec_result res;
	msb_error err = MSB_ERROR_INIT;
	double t0 = conf_now();
	msb_errc rc = conf_sh(run, box, NULL, script, args, 1.0, &res, &err);
	double took = conf_now() - t0;
	bool timed_out = (rc == MSB_OK && res.timed_out) || rc == MSB_E_TIMEOUT ||
			 rc == MSB_E_PROGRAM_TIMEOUT;
	if (!timed_out) {
		if (rc != MSB_OK)
			conf_fail_call(run, "timed_out (or TimeoutError) from a 30s command under a 1s timeout", &err);
		else
			conf_fail(run, "timed_out from a 30s command under a 1s timeout",
				  "the call returned after %.1fs with exit status %d and timed_out false",
				  took, res.exit_code);
	} else if (took < 0.5 || took > 10.0) {
		conf_fail(run, "the timeout to fire about 1s after the call",
			  "it fired after %.2fs", took);
	}
	msb_exec_result_free(&res);
	msb_error_clear(&err);
	if (conf_decided(run))
		return;
	/* Give the grandchild its chance: it would have written at 2s. */
	double wait = 3.0 - (conf_now() - t0);
	if (wait > 0)
		usleep((useconds_t)(wait * 1e6));
	int seen = exists(run, box, marker);
	if (seen < 0 && conf_box_reacquire(run, box))
		seen = exists(run, box, marker);
	if (seen < 0)
		conf_fail(run, "a working sandbox after a timeout", "test -e could not be run");
	else if (seen > 0)
		conf_fail(run, "the whole process tree killed at the timeout",
			  "a background grandchild survived and wrote %s 2s after the call began", marker);
}

static const char *exec_inapplicable(conf_run *run)
{
	if (!conf_has(run, MSB_CAP_EXEC))
		return "the backend does not declare exec";
	/* An empty os_families is the absence of an answer, not a claim of another shape. */
	if (run->decl->os_families && !(run->decl->os_families & MSB_BIT(MSB_OS_POSIX)))
		return "the backend declares os_families without posix, and the kit's commands are POSIX sh";
	return NULL;
}

static const conf_case exec_cases[] = {
	{ "runs-a-program", MSB_BIT(MSB_CAP_EXEC), case_runs_a_program },
	{ "argv-verbatim", MSB_BIT(MSB_CAP_EXEC), case_argv_verbatim },
	{ "exit-status", MSB_BIT(MSB_CAP_EXEC), case_exit_status },
	{ "killed-by-signal", MSB_BIT(MSB_CAP_EXEC), case_killed_by_signal },
	{ "stderr-separate", MSB_BIT(MSB_CAP_EXEC), case_stderr_separate },
	{ "stdin-delivered", MSB_BIT(MSB_CAP_EXEC), case_stdin_delivered },
	{ "working-directory", MSB_BIT(MSB_CAP_EXEC), case_working_directory },
	{ "output-cap", MSB_BIT(MSB_CAP_EXEC), case_output_cap },
	{ "timeout-kills-tree", MSB_BIT(MSB_CAP_EXEC), case_timeout_kills_tree },
};

const conf_suite conf_suite_exec = {
	.name = "exec",
	.inapplicable = exec_inapplicable,
	.cases = exec_cases,
	.n_cases = sizeof(exec_cases) / sizeof(exec_cases[0]),
};
