/*
 * host_tool_exec.c — reaching the host from inside: a program's host-tool calls carried over
 * exec and the file operations (the C form of the seed's host_tool_calls_over_exec).
 *
 * The guest speaks an exit code, stdout and a stat-and-read pull surface, so the channel is
 * built from those and nothing else: the program is started detached (so its bound expires
 * here, in the supervisor, not inside an exec a backend might tear down with the sandbox);
 * each call is a request file, written to a temporary name and renamed, that this loop finds
 * by its sequence number — no listing, so no files_list — resolves through the run's one
 * door and answers with a response file and then an empty marker, so the shim never reads a
 * response half written. Every guest script uses relative paths only: a boundary sharing the
 * host's filesystem maps just the working directory a request names.
 *
 * Costs, counted: one exec to start, two stats per poll, a read and two writes per call, one
 * exec to read the output back, one to remove the transport's files, and one more to signal a
 * program that overran.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host_tool_internal.h"

/* What the program's output may cost to read back, per stream. */
#define OUTPUT_CAP (64u * 1024u)
/* How many arguments one request line-set may carry; more is refused unparsed. */
#define MAX_REQUEST_ARGS (MSB_HOST_TOOL_MAX_PARAMS + 4)

static const char SHIM[] =
	"#!/bin/sh\n"
	"# msb-host-tool NAME [TYPE:KEY=VALUE]... (TYPE: s, i, d, b) - one host-tool call.\n"
	"# Not a control: every gate is the host's. Prints the answer; exits 1 on a refusal.\n"
	"d=${MSB_HOST_TOOL_CALLS:?}\n"
	"n=$(cat \"$d/next\" 2>/dev/null)\n"
	"[ -n \"$n\" ] || n=1\n"
	"echo $((n + 1)) > \"$d/next\"\n"
	"{ printf 'tool %s\\n' \"$1\"; shift; for a in \"$@\"; do printf 'arg %s\\n' \"$a\"; done; }"
	" > \"$d/$n.req.tmp\" && mv \"$d/$n.req.tmp\" \"$d/$n.req\" || exit 2\n"
	"while [ ! -e \"$d/$n.done\" ]; do sleep 0.02; done\n"
	"IFS= read -r status < \"$d/$n.resp\"\n"
	"tail -n +2 \"$d/$n.resp\"\n"
	"[ \"$status\" = ok ]\n";

/*
 * The launcher: the program in a session of its own where setsid exists (so a group kill
 * reaches what it spawned), its pid recorded, its status written to a temporary name and
 * renamed, so the exit marker is never read half written.
 */
static const char LAUNCH_HEAD[] =
	"#!/bin/sh\n"
	"here=$(pwd)\n"
	"export MSB_HOST_TOOL=\"$here/msb-host-tool\" MSB_HOST_TOOL_CALLS=\"$here/calls\"\n"
	"mkdir -p calls ../work || exit 125\n"
	"s=; r=program; command -v setsid >/dev/null 2>&1 && s=setsid && r=group\n"
	"echo $r > reach\n"
	"$s sh -c 'echo $$ > \"$0/pid.tmp\" && mv \"$0/pid.tmp\" \"$0/pid\" && cd \"$0/../work\" && "
	"exec \"$@\"' \"$here\"";
static const char LAUNCH_TAIL[] = " < /dev/null > out 2> err\n"
				  "echo $? > exit.tmp && mv exit.tmp exit\n";

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* argv, single-quoted for sh: nothing in it is ever read as syntax. */
static msb_errc launcher(const char *const *argv, msb_buf *out, msb_error *err)
{
	msb_errc rc = msb_buf_append(out, LAUNCH_HEAD, strlen(LAUNCH_HEAD), err);
	for (size_t i = 0; !rc && argv[i]; i++) {
		rc = msb_buf_append(out, " '", 2, err);
		for (const char *p = argv[i]; !rc && *p; p++)
			rc = *p == '\'' ? msb_buf_append(out, "'\\''", 4, err) : msb_buf_append(out, p, 1, err);
		if (!rc)
			rc = msb_buf_append(out, "'", 1, err);
	}
	return rc ? rc : msb_buf_append(out, LAUNCH_TAIL, strlen(LAUNCH_TAIL), err);
}

static msb_errc run_sh(msb_sandbox *sb, const char *dir, const char *script, double timeout,
		       msb_exec_result *res, msb_error *err)
{
	const char *argv[] = { "sh", "-c", script, NULL };
	msb_exec_request req = { .argv = argv, .working_directory = dir, .timeout = timeout,
				 .max_output = OUTPUT_CAP };
	return msb_sandbox_exec(sb, &req, res, err);
}

static bool exists(msb_sandbox *sb, const char *dir, const char *name)
{
	msb_entry e = { 0 };
	bool found = false;
	msb_errc rc = msb_sandbox_stat_file(sb, name, dir, &e, &found, NULL);
	free(e.path);
	return rc == MSB_OK && found;
}

/*
 * One "arg T:KEY=VALUE" line, read as best it can be and never refused here: the door names
 * what is wrong with it, and counts it against the run's cap like every other refusal, so a
 * malformed request is not a free probe. A value that does not parse as its type stays a
 * string ("must be an int64, not string"); an unknown type letter or a line of another shape
 * becomes an argument of no type.
 */
static void parse_arg(char *line, msb_host_tool_arg *a)
{
	*a = (msb_host_tool_arg){ .name = "", .type = 0 };
	if (strncmp(line, "arg ", 4) != 0 || !line[4] || line[5] != ':')
		return;
	char type = line[4], *key = line + 6, *eq = strchr(key, '=');
	if (!eq)
		return;
	*eq = '\0';
	char *value = eq + 1, *end = NULL;
	a->name = key;
	a->type = MSB_ARG_STRING;
	a->v.s = value;
	errno = 0;
	if (type == 'i') {
		long long v = strtoll(value, &end, 10);
		if (*value && !*end && errno == 0)
			*a = (msb_host_tool_arg){ key, MSB_ARG_INT64, { .i = v } };
	} else if (type == 'd') {
		double v = strtod(value, &end);
		if (*value && !*end && errno == 0)
			*a = (msb_host_tool_arg){ key, MSB_ARG_DOUBLE, { .d = v } };
	} else if (type == 'b') {
		if (strcmp(value, "true") == 0 || strcmp(value, "false") == 0)
			*a = (msb_host_tool_arg){ key, MSB_ARG_BOOL, { .b = value[0] == 't' } };
	} else if (type != 's') {
		a->type = 0;
	}
}

/* Parse one request and put it through the door; the answer is "ok\n…" or "refused\n…". */
static msb_errc answer_request(msb_host_tool_run *run, msb_buf *request, msb_buf *answer,
			       msb_error *err)
{
	msb_host_tool_arg args[MAX_REQUEST_ARGS + 1];
	size_t n = 0;
	const char *tool = NULL;
	char *save = NULL;
	for (char *line = strtok_r((char *)request->data, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!tool && strncmp(line, "tool ", 5) == 0)
			tool = line + 5;
		else if (n < MAX_REQUEST_ARGS)
			parse_arg(line, &args[n++]);
		else {
			args[MAX_REQUEST_ARGS] = (msb_host_tool_arg){ "(more than 20 arguments)", 0, { 0 } };
			n = MAX_REQUEST_ARGS + 1;
		}
	}
	msb_host_tool_result r = { 0 };
	msb_errc rc = msb_host_tool_run_call(run, tool, args, n, &r, err);
	const char *status = r.code ? "refused\n" : "ok\n";
	if (!rc)
		rc = msb_buf_append(answer, status, strlen(status), err);
	if (!rc && r.code)
		rc = msb_buf_append(answer, r.refusal, strlen(r.refusal), err);
	else if (!rc)
		rc = msb_buf_append(answer, r.response.data ? (const char *)r.response.data : "",
				    r.response.len, err);
	msb_host_tool_result_free(&r);
	return rc;
}

/* Serve request number `seq` if it is there; *served says whether it was. */
static msb_errc serve_one(msb_sandbox *sb, msb_host_tool_run *run, const char *dir, uint64_t seq,
			  uint64_t max_request, bool *served, msb_error *err)
{
	char req_name[64], resp_name[64], done_name[64];
	snprintf(req_name, sizeof req_name, "calls/%" PRIu64 ".req", seq);
	*served = exists(sb, dir, req_name);
	if (!*served)
		return MSB_OK;
	snprintf(resp_name, sizeof resp_name, "calls/%" PRIu64 ".resp", seq);
	snprintf(done_name, sizeof done_name, "calls/%" PRIu64 ".done", seq);
	msb_buf request = { 0 }, answer = { 0 };
	msb_error local = MSB_ERROR_INIT;
	msb_errc rc;
	/* The size a response may be is the size a request may be: one ceiling for one concern. */
	if (msb_sandbox_read_file(sb, req_name, dir, max_request, &request, &local) != MSB_OK) {
		const char *why = "refused\nError: the host-tool request could not be read (too large?)";
		rc = msb_buf_append(&answer, why, strlen(why), err);
	} else {
		if (!request.data)
			msb_buf_append(&request, "", 0, NULL);
		rc = request.data ? answer_request(run, &request, &answer, err)
				  : msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	if (!rc)
		rc = msb_sandbox_write_file(sb, resp_name, answer.data, answer.len, dir, err);
	if (!rc)
		rc = msb_sandbox_write_file(sb, done_name, "", 0, dir, err);
	msb_error_clear(&local);
	msb_buf_free(&request);
	msb_buf_free(&answer);
	return rc;
}

/* The program's status from the exit marker; false while there is none. */
static bool finished(msb_sandbox *sb, const char *dir, int *status)
{
	if (!exists(sb, dir, "exit"))
		return false;
	msb_buf text = { 0 };
	*status = -1;
	if (msb_sandbox_read_file(sb, "exit", dir, 32, &text, NULL) == MSB_OK && text.data)
		*status = atoi((const char *)text.data);
	msb_buf_free(&text);
	return true;
}

/*
 * A signal, not a guarantee: the pid comes from a file the program can rewrite. The group
 * only where the launcher had setsid: without it the program shares the launcher's group,
 * and a group signal there could reach far more than the program. Exit 3 says the program
 * alone was signalled. `kill -s KILL -- -P` is the spelling every kill takes (dash's refuses
 * `-KILL --`).
 */
static bool stop(msb_sandbox *sb, const char *dir, bool *group)
{
	msb_exec_result res = { 0 };
	bool sent = run_sh(sb, dir,
			   "p=$(cat pid) || exit 1; case $p in ''|*[!0-9]*|1) exit 1;; esac; "
			   "if [ \"$(cat reach 2>/dev/null)\" = group ]; then kill -s KILL -- \"-$p\"; "
			   "else kill -s KILL \"$p\" && exit 3; fi",
			   10, &res, NULL) == MSB_OK &&
		    (res.exit_code == 0 || res.exit_code == 3);
	*group = sent && res.exit_code == 0;
	msb_exec_result_free(&res);
	return sent;
}

static void collect_output(msb_sandbox *sb, const char *dir, msb_host_tool_calls_result *result)
{
	msb_exec_result res = { 0 };
	if (run_sh(sb, dir, "cat out 2>/dev/null; cat err >&2 2>/dev/null; exit 0", 30, &res, NULL) ==
	    MSB_OK) {
		result->out = res.out;
		result->err = res.err;
		res.out = (msb_buf){ 0 };
		res.err = (msb_buf){ 0 };
	}
	msb_exec_result_free(&res);
}

/*
 * Removed again while something still writes in it: after an overrun's kill, the launcher —
 * outside the killed group — wakes and writes the exit marker into run/ a moment later, and
 * a removal that lost that race finds the directory not empty. Once it is gone nothing can
 * make it again (the launcher's directory is then unlinked).
 */
static bool remove_run_dir(msb_sandbox *sb, const char *base)
{
	msb_exec_result res = { 0 };
	bool ok = run_sh(sb, base,
			 "for t in 1 2 3 4 5 6 7 8 9 10; do rm -rf run 2>/dev/null; [ -e run ] || exit 0; "
			 "sleep 0.05 2>/dev/null || sleep 1; done; rm -rf run",
			 30, &res, NULL) == MSB_OK && res.exit_code == 0;
	msb_exec_result_free(&res);
	return ok;
}

/*
 * `base` relative to the spec's work_dir, or NULL when it is not beneath it. The first writes
 * go through work_dir, the one directory a backend is sure to have: no backend creates a
 * call's own path, and a write creates parents beneath its working directory, never it.
 */
static const char *beneath_work_dir(msb_sandbox *sb, const char *base)
{
	const char *work = msb_sandbox_spec(sb)->work_dir;
	size_t n = strlen(work);
	while (n > 1 && work[n - 1] == '/')
		n--;
	if (strncmp(base, work, n) != 0 || base[n] != '/')
		return NULL;
	const char *rel = base + n;
	while (*rel == '/')
		rel++;
	return *rel ? rel : NULL;
}

/* Write the shim and the launcher, and start the launcher detached. */
static msb_errc start(msb_sandbox *sb, const char *rel, const char *dir, const char *const *argv,
		      msb_error *err)
{
	msb_buf launch = { 0 };
	char path[4096];
	msb_errc rc = launcher(argv, &launch, err);
	snprintf(path, sizeof path, "%s/run/msb-host-tool", rel);
	if (!rc)
		rc = msb_sandbox_write_file(sb, path, SHIM, strlen(SHIM), NULL, err);
	snprintf(path, sizeof path, "%s/run/launch.sh", rel);
	if (!rc)
		rc = msb_sandbox_write_file(sb, path, launch.data, launch.len, NULL, err);
	msb_buf_free(&launch);
	msb_exec_result res = { 0 };
	if (!rc)
		rc = run_sh(sb, dir,
			    "chmod +x msb-host-tool && mkdir -p calls && "
			    "{ sh ./launch.sh < /dev/null > /dev/null 2>&1 & }",
			    30, &res, err);
	if (!rc && res.exit_code != 0)
		rc = msb_error_set(err, MSB_E_BACKEND,
				   "host-tool calls over exec: the launcher could not be started in '%s' "
				   "(exit %d), so the program never ran",
				   dir, res.exit_code);
	msb_exec_result_free(&res);
	return rc;
}

static msb_errc serve(msb_sandbox *sb, msb_host_tool_run *run, const char *dir, double timeout,
		      msb_host_tool_calls_result *result, msb_error *err)
{
	uint64_t max_request = host_tool_run_registry(run)->opt.response_limits.max_bytes_per_file;
	double deadline = now_s() + timeout;
	long pause = 5;
	for (;;) {
		/* First, every time round: a program that never stops asking must not be
		 * served past its bound. */
		if (now_s() >= deadline) {
			result->timed_out = true;
			result->signalled = stop(sb, dir, &result->group);
			return MSB_OK;
		}
		bool served = false;
		msb_errc rc = serve_one(sb, run, dir, result->requests + 1, max_request, &served, err);
		if (rc)
			return rc;
		if (served) {
			result->requests++;
			pause = 5;
			continue;
		}
		if (finished(sb, dir, &result->exit_code))
			return MSB_OK;
		sleep_ms(pause);
		pause = pause < 80 ? pause * 2 : 80;
	}
}

msb_errc msb_host_tool_calls_over_exec(msb_sandbox *sb, msb_host_tool_run *run, const char *base,
				       const char *const *argv, double timeout,
				       msb_host_tool_calls_result *result, msb_error *err)
{
	*result = (msb_host_tool_calls_result){ .exit_code = -1 };
	if (!sb || !run || !base || base[0] != '/' || !argv || !argv[0])
		return msb_error_set(err, MSB_E_VALUE,
				     "host-tool calls over exec: a sandbox, a run, an absolute base "
				     "directory and a non-empty argv are required");
	if (!isfinite(timeout) || timeout <= 0)
		return msb_error_set(err, MSB_E_VALUE,
				     "host-tool calls over exec: timeout must be a finite positive number "
				     "of seconds, not %g; the program is detached, so nothing else bounds it",
				     timeout);
	const char *rel = beneath_work_dir(sb, base);
	if (!rel || strlen(base) > 3000)
		return msb_error_set(err, MSB_E_VALUE,
				     "host-tool calls over exec: base '%.200s' is not a directory beneath "
				     "the spec's work_dir '%s'; each run's files go in a directory of its own "
				     "under work_dir, never work_dir itself or a path outside it",
				     base, msb_sandbox_spec(sb)->work_dir);
	size_t n = strlen(base) + sizeof "/run";
	char *dir = malloc(n);
	if (!dir)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	snprintf(dir, n, "%s/run", base);
	msb_errc rc = start(sb, rel, dir, argv, err);
	if (!rc)
		rc = serve(sb, run, dir, timeout, result, err);
	if (!rc)
		collect_output(sb, dir, result);
	/* On every way out, success included: requests and answers are conversation data. */
	result->cleaned = remove_run_dir(sb, base);
	free(dir);
	return rc;
}

void msb_host_tool_calls_result_free(msb_host_tool_calls_result *result)
{
	if (!result)
		return;
	msb_buf_free(&result->out);
	msb_buf_free(&result->err);
}
