/*
 * cli_result.c — a guest's result, passed on by exec and run-code: its bytes unchanged, its
 * exit status as msb's own, so `msb exec … -- make test` drops into a script like the
 * command it runs. What the guest's output cannot say by itself (a timeout, a truncation)
 * is said on stderr as a line of msb's, never mixed into the guest's stdout.
 */
#include "cli.h"

int msb_cli_result(const msb_exec_result *res, double timeout)
{
	int status = res->timed_out ? MSB_EXIT_TIMEOUT : res->exit_code;
	if (msb_cli.json) {
		printf("{\"exit_code\": %d, \"signal\": %d, \"timed_out\": %s, ", res->exit_code,
		       res->term_signal, res->timed_out ? "true" : "false");
		msb_json_bytes_field(stdout, "stdout", res->out.data, res->out.len);
		printf(", ");
		msb_json_bytes_field(stdout, "stderr", res->err.data, res->err.len);
		printf(", \"stdout_truncated\": %s, \"stderr_truncated\": %s}\n",
		       res->out_truncated ? "true" : "false", res->err_truncated ? "true" : "false");
		return status;
	}
	if (res->out.len)
		fwrite(res->out.data, 1, res->out.len, stdout);
	fflush(stdout);
	if (res->err.len)
		fwrite(res->err.data, 1, res->err.len, stderr);
	if (res->out_truncated || res->err_truncated)
		fprintf(stderr, "msb: note: the guest's %s was cut at the output cap\n",
			res->out_truncated ? (res->err_truncated ? "stdout and stderr" : "stdout") : "stderr");
	if (res->timed_out)
		fprintf(stderr, "msb: TimeoutError: the command ran out of time (%gs) and was killed\n", timeout);
	return status;
}
