/*
 * cli_result.c — a guest's result, passed on by exec and run-code: its bytes unchanged, its
 * exit status as msb's own, so `msb exec … -- make test` drops into a script like the
 * command it runs. What the guest's output cannot say by itself (a timeout, a truncation)
 * is said on stderr as a line of msb's, never mixed into the guest's stdout.
 */
#include <msb/node.h>

#include "cli.h"

/* What the kill reached, as the backend said it: never more than it said. */
static const char *reach_words(unsigned char reach)
{
	return reach == MSB_REACH_TREE ? ", with everything it started"
	     : reach == MSB_REACH_GROUP ? " with its process group; what it started outside the "
					  "group may still be running"
	     : "";
}

int msb_cli_result(const msb_exec_result *res, double timeout)
{
	int status = res->timed_out ? MSB_EXIT_TIMEOUT : res->exit_code;
	if (msb_cli.json) {
		printf("{\"exit_code\": %d, \"signal\": %d, \"timed_out\": %s, ", res->exit_code,
		       res->term_signal, res->timed_out ? "true" : "false");
		msb_json_bytes_field(stdout, "stdout", res->out.data, res->out.len);
		printf(", ");
		msb_json_bytes_field(stdout, "stderr", res->err.data, res->err.len);
		printf(", \"stdout_truncated\": %s, \"stderr_truncated\": %s, \"kill_reach\": %s}\n",
		       res->out_truncated ? "true" : "false", res->err_truncated ? "true" : "false",
		       !res->timed_out || res->kill_reach == MSB_REACH_UNSAID ? "null"
		       : res->kill_reach == MSB_REACH_TREE ? "\"tree\"" : "\"group\"");
		return status;
	}
	if (res->out.len)
		fwrite(res->out.data, 1, res->out.len, stdout);
	fflush(stdout);
	if (res->err.len)
		fwrite(res->err.data, 1, res->err.len, stderr);
	/* msb's lines start lines of their own: a guest's last line need not end. */
	bool ours = res->out_truncated || res->err_truncated || res->timed_out;
	if (ours && res->err.len && res->err.data[res->err.len - 1] != '\n')
		fputc('\n', stderr);
	if (res->out_truncated || res->err_truncated)
		fprintf(stderr, "msb: note: the guest's %s was cut at the output cap\n",
			res->out_truncated ? (res->err_truncated ? "stdout and stderr" : "stdout") : "stderr");
	if (res->timed_out && timeout > 0)
		fprintf(stderr, "msb: TimeoutError: the command ran out of time (%gs) and was killed%s\n",
			timeout, reach_words(res->kill_reach));
	else if (res->timed_out)
		fprintf(stderr, "msb: TimeoutError: the command ran out of time (the backend's configured "
			"timeout, as no --timeout was given) and was killed%s\n",
			reach_words(res->kill_reach));
	return status;
}

int msb_cli_timeout_option(const char *arg, double *timeout)
{
	msb_error err = MSB_ERROR_INIT;
	if (msb_parse_seconds(arg, timeout, &err) != MSB_OK) {
		int status = msb_cli_usage_error("--timeout: %s", msb_error_message(&err));
		msb_error_clear(&err);
		return status;
	}
	/* 0 would read as "the backend's default" underneath: a silent swap, so refused. */
	if (!(*timeout > 0))
		return msb_cli_usage_error("--timeout: '%s' is no time to run in; give a positive "
					   "duration, or leave --timeout out for the backend's "
					   "configured timeout", arg);
	return 0;
}
