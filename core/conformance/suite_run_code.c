/*
 * suite_run_code.c — the run_code suite: the program is really evaluated (its answer carries
 * a nonce no canned reply can know), its exit status comes back, and the timeout is
 * wall-clock from the call — time spent queued behind another program counts.
 *
 * The kit writes its programs in the language the options name ("python" or "sh").
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kit.h"

typedef struct program_set {
	const char *print_head; /* with the nonce and print_tail: prints rc-42-<nonce> */
	const char *print_tail;
	const char *exit3;  /* ends with status 3 */
	const char *sleep;  /* sleeps 30s */
	const char *nap;    /* sleeps about 2.5s */
} program_set;

static const program_set python_programs = {
	"print('rc-' + str(6 * 7) + '-", "')\n",
	"import sys\nsys.exit(3)\n",
	"import time\ntime.sleep(30)\n",
	"import time\ntime.sleep(2.5)\n",
};

static const program_set sh_programs = {
	"printf 'rc-%s-", "\\n' $((6 * 7))\n",
	"exit 3\n",
	"sleep 30\n",
	"sleep 2.5\n",
};

static const program_set *programs(const conf_run *run)
{
	const char *lang = run->opts->run_code_language;
	return lang && strcmp(lang, "sh") == 0 ? &sh_programs : &python_programs;
}

static void case_evaluates(conf_run *run)
{
	conf_box *box = conf_main_box(run);
	if (!box)
		return;
	char nonce[96], code[256], want[128];
	conf_unique(run, "n", nonce, sizeof(nonce));
	snprintf(code, sizeof(code), "%s%s%s", programs(run)->print_head, nonce,
		 programs(run)->print_tail);
	snprintf(want, sizeof(want), "rc-42-%s", nonce);
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = run->ops->run_code(box->handle, code, 30, &res, &err);
	if (rc != MSB_OK) {
		conf_fail_call(run, "run_code of a program printing a computed value to succeed", &err);
	} else {
		size_t len = res.out.len;
		while (len && (res.out.data[len - 1] == '\n' || res.out.data[len - 1] == '\r'))
			len--;
		if (len != strlen(want) || memcmp(res.out.data, want, len) != 0) {
			char seen[256], err_text[256];
			conf_quote(res.out.data, res.out.len, seen, sizeof(seen));
			conf_quote(res.err.data, res.err.len, err_text, sizeof(err_text));
			conf_fail(run, "stdout to be the program's computed answer (rc-42-NONCE)",
				  "stdout was \"%s\" (stderr \"%s\", exit status %d): the program was not "
				  "evaluated — or the guest speaks another language than --run-code-language %s",
				  seen, err_text, res.exit_code, programs(run) == &sh_programs ? "sh" : "python");
		} else if (res.exit_code != 0) {
			conf_fail(run, "exit status 0", "exit status %d", res.exit_code);
		}
	}
	msb_exec_result_free(&res);
	msb_error_clear(&err);
}

static void case_exit_status(conf_run *run)
{
	conf_box *box = conf_main_box(run);
	if (!box)
		return;
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = run->ops->run_code(box->handle, programs(run)->exit3, 30, &res, &err);
	if (rc != MSB_OK)
		conf_fail_call(run, "run_code of a program exiting 3 to return its status", &err);
	else if (res.exit_code != 3)
		conf_fail(run, "exit status 3", "exit status %d", res.exit_code);
	msb_exec_result_free(&res);
	msb_error_clear(&err);
}

static bool is_timeout(msb_errc rc, const msb_exec_result *res)
{
	return (rc == MSB_OK && res->timed_out) || rc == MSB_E_TIMEOUT ||
	       rc == MSB_E_PROGRAM_TIMEOUT || rc == MSB_E_QUEUED_TIMEOUT;
}

static void case_timeout(conf_run *run)
{
	conf_box *box = conf_main_box(run);
	if (!box)
		return;
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	double t0 = conf_now();
	msb_errc rc = run->ops->run_code(box->handle, programs(run)->sleep, 1.0, &res, &err);
	double took = conf_now() - t0;
	if (!is_timeout(rc, &res) && rc != MSB_OK)
		conf_fail(run, "a timeout from a 30s program under a 1s bound",
			  "the call failed after %.1fs with %s: %s", took, msb_errc_name(rc),
			  msb_error_message(&err));
	else if (!is_timeout(rc, &res))
		conf_fail(run, "a timeout from a 30s program under a 1s bound",
			  "the program ended after %.1fs with exit status %d and timed_out false", took,
			  res.exit_code);
	else if (took < 0.5 || took > 10.0)
		conf_fail(run, "the timeout to fire about 1s after the call", "it fired after %.2fs", took);
	msb_exec_result_free(&res);
	msb_error_clear(&err);
}

typedef struct napper {
	conf_run *run;
	conf_box *box;
} napper;

static void *nap(void *arg)
{
	napper *n = arg;
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	n->run->ops->run_code(n->box->handle, programs(n->run)->nap, 20, &res, &err);
	msb_exec_result_free(&res);
	msb_error_clear(&err);
	return NULL;
}

/*
 * A second program submitted while the first still runs: whether the backend runs them side
 * by side or one after the other, the second's 1s bound starts at its call, so it must be
 * answered (served, or refused as a queued or program timeout) well before the first ends.
 */
static void case_deadline_from_the_call(conf_run *run)
{
	conf_box *box = conf_main_box(run);
	if (!box)
		return;
	napper n = { run, box };
	pthread_t t;
	if (pthread_create(&t, NULL, nap, &n) != 0) {
		conf_skip(run, "could not start a thread to hold the sandbox busy");
		return;
	}
	usleep(300 * 1000);
	char nonce[96], code[256];
	conf_unique(run, "q", nonce, sizeof(nonce));
	snprintf(code, sizeof(code), "%s%s%s", programs(run)->print_head, nonce,
		 programs(run)->print_tail);
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	double t0 = conf_now();
	msb_errc rc = run->ops->run_code(box->handle, code, 1.0, &res, &err);
	double took = conf_now() - t0;
	pthread_join(t, NULL);
	if (rc != MSB_OK && !is_timeout(rc, &res))
		conf_fail_call(run, "a served program, or SandboxQueuedTimeout / a timeout", &err);
	else if (took > 1.9)
		conf_fail(run, "an answer within about 1s of the call, queued or not",
			  "%s after %.2fs: the deadline was counted from when the program started, "
			  "not from the call",
			  msb_errc_name(rc), took);
	msb_exec_result_free(&res);
	msb_error_clear(&err);
}

static const char *run_code_inapplicable(conf_run *run)
{
	return conf_has(run, MSB_CAP_RUN_CODE) ? NULL : "the backend does not declare run_code";
}

static const conf_case run_code_cases[] = {
	{ "evaluates", MSB_BIT(MSB_CAP_RUN_CODE), case_evaluates },
	{ "exit-status", MSB_BIT(MSB_CAP_RUN_CODE), case_exit_status },
	{ "timeout", MSB_BIT(MSB_CAP_RUN_CODE), case_timeout },
	{ "deadline-from-the-call", MSB_BIT(MSB_CAP_RUN_CODE), case_deadline_from_the_call },
};

const conf_suite conf_suite_run_code = {
	.name = "run_code",
	.inapplicable = run_code_inapplicable,
	.cases = run_code_cases,
	.n_cases = sizeof(run_code_cases) / sizeof(run_code_cases[0]),
};
