/*
 * cmd_exec.c — `msb exec KIND --scope S --thread T [--agent A] [--call C] [--timeout SEC]
 * [--stdin] -- ARGV…`: acquire the sandbox for the key and run one command in it, as an argv
 * (never a shell string). The guest's exit status becomes msb's; 125 means msb failed and
 * no status exists.
 */
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"

static const char usage[] =
	"usage: msb exec KIND --scope S --thread T [--agent A] [--call C] [--timeout SEC]\n"
	"                [--workdir DIR] [--stdin] [--json] -- ARGV…\n\n"
	"Acquire (get or create) the sandbox of KIND for the key, run ARGV in it and pass its\n"
	"stdout and stderr through. --stdin forwards msb's standard input to the command, up to\n"
	"the spec's files_in.max_bytes_per_file (refused past it).\n"
	"Exit status: the command's own; 124 when it timed out; 125 when msb failed (refused,\n"
	"or the sandbox could not run it), with the error line saying why.\n";

int msb_cmd_exec(int argc, char **argv)
{
	enum { OPT_TIMEOUT = 0x2000, OPT_STDIN, OPT_WORKDIR };
	static const struct option longopts[] = {
		MSB_CLI_COMMON_LONGOPTS, MSB_CLI_KEY_LONGOPTS,
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "workdir", required_argument, NULL, OPT_WORKDIR },
		{ "stdin", no_argument, NULL, OPT_STDIN }, { 0 }
	};
	msb_cli_key key = { 0 };
	msb_exec_request req = { 0 };
	bool forward_stdin = false;
	msb_error err = MSB_ERROR_INIT;
	for (int c; (c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1;) {
		if (msb_cli_key_option(&key, c, optarg))
			continue;
		if (c == OPT_TIMEOUT) {
			int status = msb_cli_timeout_option(optarg, &req.timeout);
			if (status)
				return status;
		} else if (c == OPT_WORKDIR) {
			req.working_directory = optarg;
		} else if (c == OPT_STDIN) {
			forward_stdin = true;
		} else if (msb_cli_common_option(c, usage) != 1) {
			return msb_cli_usage_error("unknown option");
		}
	}
	if (argc - optind < 2)
		return msb_cli_usage_error("needs KIND and, after --, the command to run");
	const char *kind = argv[optind];
	int status = msb_cli_key_check(&key);
	if (status)
		return status;
	req.argv = (const char *const *)argv + optind + 1;

	msb_buf input = { 0 };
	msb_cli_session s;
	msb_exec_result res = { 0 };
	if (msb_cli_session_open(&s, kind, &key, &err) != MSB_OK) {
		status = msb_cli_fail_with(&err, MSB_EXIT_NOT_RUN);
	} else {
		/* Read once the cap is known (the spec's files_in), and only up to it. */
		msb_errc rc = forward_stdin ? msb_cli_read_bounded(STDIN_FILENO, "standard input",
								   s.spec->files_in.max_bytes_per_file,
								   &input, &err)
					    : MSB_OK;
		req.stdin_data = forward_stdin ? (input.data ? input.data : (const unsigned char *)"") : NULL;
		req.stdin_len = input.len;
		if (rc != MSB_OK || msb_sandbox_exec(s.sandbox, &req, &res, &err) != MSB_OK)
			status = msb_cli_fail_with(&err, MSB_EXIT_NOT_RUN);
		else
			status = msb_cli_result(&res, req.timeout);
		msb_exec_result_free(&res);
		msb_cli_session_close(&s);
	}
	msb_buf_free(&input);
	msb_error_clear(&err);
	return status;
}
