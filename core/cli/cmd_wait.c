/*
 * cmd_wait.c — `msb wait KIND ID [--timeout SEC]`: wait, bounded, for a background command
 * to end; exit with its status as exec does. Still running when the bound passes: 124 and
 * a line saying so (the command is left running).
 */
#include "cli.h"

static const char usage[] =
	"usage: msb wait KIND ID --scope S --thread T [--agent A] [--call C] [--timeout SEC] [--json]\n\n"
	"Wait up to SEC seconds (30 by default, 600 at most) for the background command ID of the\n"
	"sandbox of KIND to end, and exit with its exit status (124 when its own timeout killed\n"
	"it). Still running after SEC: exit 124, the command left running. --json prints its\n"
	"status object.\n";

enum { OPT_TIMEOUT = 0x2000 };

static int own(int c, const char *arg, void *ctx)
{
	if (c != OPT_TIMEOUT)
		return 0;
	return msb_cli_timeout_option(arg, ctx) ? -1 : 1;
}

int msb_cmd_wait(int argc, char **argv)
{
	static const struct option extra[] = { { "timeout", required_argument, NULL, OPT_TIMEOUT }, { 0 } };
	double timeout = 30;
	msb_cli_session s;
	int status = msb_cli_bg_open(argc, argv, usage, "KIND ID", extra, own, &timeout,
				     MSB_EXIT_NOT_RUN, &s);
	if (status)
		return status;
	const char *id = argv[optind + 1];
	msb_error err = MSB_ERROR_INIT;
	/* Only the status is wanted: one byte of each stream, from the end. */
	msb_bg_read rq = { .out_offset = UINT64_MAX, .err_offset = UINT64_MAX, .max_bytes = 1,
			   .wait = timeout > 600 ? 600 : timeout, .until_exit = true };
	msb_bg_output out;
	if (msb_sandbox_bg_read(s.sandbox, id, &rq, &out, &err) != MSB_OK) {
		status = msb_cli_fail_with(&err, MSB_EXIT_NOT_RUN);
	} else {
		status = out.status.running ? MSB_EXIT_TIMEOUT : msb_cli_bg_exit_status(&out.status);
		if (msb_cli.json) {
			msb_cli_bg_status_json(&out.status);
			putchar('\n');
		} else if (out.status.running) {
			fprintf(stderr, "msb: TimeoutError: background command %s still runs after %gs; "
				"it was left running\n", id, timeout);
		} else if (out.status.timed_out) {
			fprintf(stderr, "msb: TimeoutError: background command %s ran out of its time and "
				"was killed\n", id);
		}
	}
	msb_bg_output_free(&out);
	msb_cli_session_close(&s);
	return status;
}
