/*
 * cmd_exec.c — `msb exec KIND --scope S --thread T [--agent A] [--call C] [--timeout SEC]
 * [--stdin] -- ARGV…`: acquire the sandbox for the key and run one command in it, as an argv
 * (never a shell string). The guest's exit status becomes msb's; 125 means msb failed and
 * no status exists.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"

static const char usage[] =
	"usage: msb exec KIND --scope S --thread T [--agent A] [--call C] [--timeout SEC]\n"
	"                [--workdir DIR] [--stdin] [-v] [--json] -- ARGV…\n\n"
	"Acquire (get or create) the sandbox of KIND for the key, run ARGV in it and pass its\n"
	"stdout and stderr through. --stdin forwards msb's standard input to the command.\n"
	"Exit status: the command's own; 124 when it timed out; 125 when msb failed (refused,\n"
	"or the sandbox could not run it), with the error line saying why. -v prints each egress\n"
	"decision of an allowlist sandbox on stderr (a JSON object a line with --json).\n";

/* All of stdin, for --stdin. */
static msb_errc read_all(int fd, msb_buf *buf, msb_error *err)
{
	char chunk[65536];
	for (ssize_t n; (n = read(fd, chunk, sizeof chunk)) != 0;) {
		if (n < 0)
			return msb_error_set_errno(err, MSB_E_OS, errno, "exec --stdin: cannot read standard input to "
						   "forward it to the command");
		if (msb_buf_append(buf, chunk, (size_t)n, err) != MSB_OK)
			return MSB_E_NOMEM;
	}
	return MSB_OK;
}

int msb_cmd_exec(int argc, char **argv)
{
	enum { OPT_TIMEOUT = 0x2000, OPT_STDIN, OPT_WORKDIR };
	static const struct option longopts[] = {
		MSB_CLI_COMMON_LONGOPTS, MSB_CLI_KEY_LONGOPTS,
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "workdir", required_argument, NULL, OPT_WORKDIR },
		{ "stdin", no_argument, NULL, OPT_STDIN },
		{ "verbose", no_argument, NULL, 'v' }, { 0 }
	};
	msb_cli_key key = { 0 };
	msb_exec_request req = { 0 };
	bool forward_stdin = false;
	msb_error err = MSB_ERROR_INIT;
	for (int c; (c = getopt_long(argc, argv, "c:hv", longopts, NULL)) != -1;) {
		if (msb_cli_key_option(&key, c, optarg))
			continue;
		if (c == OPT_TIMEOUT) {
			if (msb_parse_seconds(optarg, &req.timeout, &err) != MSB_OK) {
				int status = msb_cli_usage_error("--timeout: %s", msb_error_message(&err));
				msb_error_clear(&err);
				return status;
			}
		} else if (c == OPT_WORKDIR) {
			req.working_directory = optarg;
		} else if (c == OPT_STDIN) {
			forward_stdin = true;
		} else if (c == 'v') {
			msb_cli.egress_verbose = true;
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
	if (forward_stdin && read_all(STDIN_FILENO, &input, &err) != MSB_OK)
		return msb_cli_fail_with(&err, MSB_EXIT_NOT_RUN);
	req.stdin_data = input.data;
	req.stdin_len = input.len;
	if (msb_cli_session_open(&s, kind, &key, &err) != MSB_OK) {
		status = msb_cli_fail_with(&err, MSB_EXIT_NOT_RUN);
	} else {
		if (msb_sandbox_exec(s.sandbox, &req, &res, &err) != MSB_OK)
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
