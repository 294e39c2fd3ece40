/*
 * cmd_run_code.c — `msb run-code KIND --scope S --thread T [-e CODE] [--timeout SEC]`: run a
 * program with the backend's run_code (the program text from -e, or else all of stdin).
 * Exit status as for exec.
 */
#include <unistd.h>

#include "cli.h"

static const char usage[] =
	"usage: msb run-code KIND --scope S --thread T [--agent A] [--call C] [--timeout SEC]\n"
	"                    [-e CODE] [--json]\n\n"
	"Run a program in the sandbox of KIND with the backend's run_code capability; the\n"
	"program is CODE, or standard input when -e is not given (up to the spec's files_in\n"
	"max_bytes_per_file, refused past it). The timeout is wall-clock from\n"
	"the call. Exit status: the program's; 124 timed out; 125 msb failed (the line says why).\n";

int msb_cmd_run_code(int argc, char **argv)
{
	enum { OPT_TIMEOUT = 0x2000 };
	static const struct option longopts[] = {
		MSB_CLI_COMMON_LONGOPTS, MSB_CLI_KEY_LONGOPTS,
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "code", required_argument, NULL, 'e' }, { 0 }
	};
	msb_cli_key key = { 0 };
	const char *code = NULL;
	double timeout = 0;
	msb_error err = MSB_ERROR_INIT;
	for (int c; (c = getopt_long(argc, argv, "c:he:", longopts, NULL)) != -1;) {
		if (msb_cli_key_option(&key, c, optarg))
			continue;
		if (c == 'e') {
			code = optarg;
		} else if (c == OPT_TIMEOUT) {
			int status = msb_cli_timeout_option(optarg, &timeout);
			if (status)
				return status;
		} else if (msb_cli_common_option(c, usage) != 1) {
			return msb_cli_usage_error("unknown option");
		}
	}
	if (argc - optind != 1)
		return msb_cli_usage_error("takes one KIND");
	int status = msb_cli_key_check(&key);
	if (status)
		return status;
	msb_buf program = { 0 };
	msb_cli_session s;
	msb_exec_result res = { 0 };
	if (msb_cli_session_open(&s, argv[optind], &key, &err) != MSB_OK) {
		status = msb_cli_fail_with(&err, MSB_EXIT_NOT_RUN);
	} else {
		/* The program from stdin, read once the cap is known (files_in), only up to it. */
		msb_errc rc = MSB_OK;
		if (!code && (rc = msb_cli_read_bounded(STDIN_FILENO, "the program from standard input",
							s.spec->files_in.max_bytes_per_file, &program,
							&err)) == MSB_OK)
			code = program.data ? (const char *)program.data : "";
		if (rc != MSB_OK || msb_sandbox_run_code(s.sandbox, code, timeout, &res, &err) != MSB_OK)
			status = msb_cli_fail_with(&err, MSB_EXIT_NOT_RUN);
		else
			status = msb_cli_result(&res, timeout);
		msb_exec_result_free(&res);
		msb_cli_session_close(&s);
	}
	msb_buf_free(&program);
	msb_error_clear(&err);
	return status;
}
