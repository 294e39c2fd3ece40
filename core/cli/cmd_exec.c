/*
 * cmd_exec.c — `msb exec KIND --scope S --thread T [--agent A] [--call C] [--timeout SEC]
 * [--stdin] -- ARGV…`: acquire the sandbox for the key and run one command in it, as an argv
 * (never a shell string). The guest's exit status becomes msb's; 125 means msb failed and
 * no status exists. With --background the command is left running and its handle printed
 * (cli_bg.c and the ps, attach, kill and wait subcommands take it from there).
 */
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"

static const char usage[] =
	"usage: msb exec KIND --scope S --thread T [--agent A] [--call C] [--timeout SEC]\n"
	"                [--workdir DIR] [--stdin|-i] [-t] [--stream|--no-stream] [-v] [--json]\n"
	"                [--from SNAPSHOT] -- ARGV…\n"
	"       msb exec --background KIND --scope S --thread T [--timeout SEC] [--ring BYTES]\n"
	"                [--workdir DIR] [--stdin] [--json] -- ARGV…\n\n"
	"Acquire (get or create) the sandbox of KIND for the key, run ARGV in it and pass its\n"
	"stdout and stderr through. --stdin forwards msb's standard input to the command, up to\n"
	"the spec's files_in.max_bytes_per_file (refused past it) unless streamed.\n"
	"Output is streamed as it is produced when stdout is a terminal (or with --stream;\n"
	"with --json: one JSON line per chunk, then the result); --no-stream waits for the end.\n"
	"-i forwards stdin as it is typed (streamed); -t runs ARGV under a terminal in the guest,\n"
	"sized as this one, with this terminal raw meanwhile: `msb exec -it KIND … -- sh`.\n"
	"Exit status: the command's own; 124 when it timed out; 125 when msb failed (refused,\n"
	"or the sandbox could not run it), with the error line saying why. -v prints each egress\n"
	"decision of an allowlist sandbox on stderr (a JSON object a line with --json).\n"
	"--background: start ARGV and leave it running in the sandbox (it outlives msb, and dies\n"
	"with the sandbox); print its handle (--json: its status object) and exit 0. --timeout\n"
	"then bounds its life; the guest keeps the newest --ring BYTES of each stream (the\n"
	"backend's max_output by default). See msb ps, attach, kill and wait.\n"
	"--from SNAPSHOT starts the key's sandbox as a fork of a snapshot (msb snapshot save):\n"
	"its files and processes as they were at the save; refused where no backend declares\n"
	"snapshot, and when the key's sandbox is live (a fork is never a get).\n";

int msb_cmd_exec(int argc, char **argv)
{
	enum { OPT_TIMEOUT = 0x2000, OPT_STDIN, OPT_WORKDIR, OPT_STREAM, OPT_NO_STREAM, OPT_BACKGROUND,
	       OPT_RING, OPT_FROM };
	static const struct option longopts[] = {
		MSB_CLI_COMMON_LONGOPTS, MSB_CLI_KEY_LONGOPTS,
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "workdir", required_argument, NULL, OPT_WORKDIR },
		{ "stdin", no_argument, NULL, OPT_STDIN },
		{ "stream", no_argument, NULL, OPT_STREAM },
		{ "no-stream", no_argument, NULL, OPT_NO_STREAM },
		{ "background", no_argument, NULL, OPT_BACKGROUND },
		{ "ring", required_argument, NULL, OPT_RING },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "verbose", no_argument, NULL, 'v' }, { 0 }
	};
	msb_cli_key key = { 0 };
	msb_exec_request req = { 0 };
	bool forward_stdin = false;
	int stream = -1; /* -1: when stdout is a terminal and the backend can */
	msb_error err = MSB_ERROR_INIT;
	bool tty = false, background = false;
	for (int c; (c = getopt_long(argc, argv, "c:hitv", longopts, NULL)) != -1;) {
		if (msb_cli_key_option(&key, c, optarg))
			continue;
		if (c == OPT_TIMEOUT) {
			int status = msb_cli_timeout_option(optarg, &req.timeout);
			if (status)
				return status;
		} else if (c == OPT_WORKDIR) {
			req.working_directory = optarg;
		} else if (c == OPT_FROM) {
			key.from = optarg;
		} else if (c == OPT_STDIN) {
			forward_stdin = true;
		} else if (c == OPT_STREAM || c == OPT_NO_STREAM) {
			stream = c == OPT_STREAM;
		} else if (c == 'i') {
			forward_stdin = true;
			stream = 1;
		} else if (c == 't') {
			tty = true;
			stream = 1;
		} else if (c == OPT_BACKGROUND) {
			background = true;
		} else if (c == OPT_RING) {
			char *end;
			unsigned long long v = strtoull(optarg, &end, 10);
			if (end == optarg || *end || v == 0 || optarg[0] == '-')
				return msb_cli_usage_error("--ring: '%s' is not a positive number of bytes",
							   optarg);
			req.max_output = (size_t)v;
		} else if (c == 'v') {
			msb_cli.egress_verbose = true;
		} else if (msb_cli_common_option(c, usage) != 1) {
			return msb_cli_usage_error("unknown option");
		}
	}
	if (argc - optind < 2)
		return msb_cli_usage_error("needs KIND and, after --, the command to run");
	if (tty && stream == 0)
		return msb_cli_usage_error("-t runs under a terminal, which only a streamed exec has: "
					   "drop --no-stream");
	if (background && (tty || stream == 1))
		return msb_cli_usage_error("--background leaves the command running without a "
					   "terminal or a stream; follow it with `msb attach`");
	if (!background && req.max_output)
		return msb_cli_usage_error("--ring is the ring of a --background command");
	const char *kind = argv[optind];
	int status = msb_cli_key_check(&key);
	if (status)
		return status;
	req.argv = (const char *const *)argv + optind + 1;
	if (background)
		return msb_cli_exec_background(kind, &key, &req, forward_stdin);

	msb_buf input = { 0 };
	msb_cli_session s;
	msb_exec_result res = { 0 };
	if (msb_cli_session_open(&s, kind, &key, &err) != MSB_OK) {
		status = msb_cli_fail_with(&err, MSB_EXIT_NOT_RUN);
	} else {
		/*
		 * Streaming by default only where a person watches and the backend can; asked
		 * for (--stream), a backend without the operation is refused, never downgraded.
		 */
		bool streamed = stream == 1 ||
				(stream < 0 && isatty(STDOUT_FILENO) && msb_sandbox_can_stream(s.sandbox));
		msb_errc rc = MSB_OK;
		/* Unstreamed, stdin is read whole first: once the cap is known (the spec's
		 * files_in), and only up to it. Streamed, it goes as it comes and is never held. */
		if (!streamed && forward_stdin &&
		    (rc = msb_cli_read_bounded(STDIN_FILENO, "standard input",
					       s.spec->files_in.max_bytes_per_file, &input, &err)) == MSB_OK) {
			req.stdin_data = input.data ? input.data : (const unsigned char *)"";
			req.stdin_len = input.len;
		}
		if (rc == MSB_OK)
			rc = streamed ? msb_cli_exec_stream(s.sandbox, &req, forward_stdin, tty, &res, &err)
				      : msb_sandbox_exec(s.sandbox, &req, &res, &err);
		if (rc != MSB_OK)
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
