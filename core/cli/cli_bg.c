/*
 * cli_bg.c — what msb's background subcommands share (exec --background, ps, attach, kill,
 * wait): their operands, one command's status as text or JSON, and the exit status a
 * command that ended hands on (its own, 124 when its own timeout killed it, as exec's).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int msb_cli_bg_open(int argc, char **argv, const char *usage, const char *takes,
		    const struct option *extra, int (*own)(int c, const char *arg, void *ctx),
		    void *ctx, int fail_status, msb_cli_session *s)
{
	msb_cli_key k = { 0 }, *key = &k;
	struct option longopts[16] = { MSB_CLI_COMMON_LONGOPTS, MSB_CLI_KEY_LONGOPTS };
	size_t n = 7;
	for (const struct option *o = extra; o && o->name && n < 15; o++)
		longopts[n++] = *o;
	for (int c; (c = getopt_long(argc, argv, "c:hs:", longopts, NULL)) != -1;) {
		if (msb_cli_key_option(key, c, optarg))
			continue;
		int mine = own ? own(c, optarg, ctx) : 0;
		if (mine < 0)
			return MSB_EXIT_USAGE;
		if (!mine && msb_cli_common_option(c, usage) != 1)
			return msb_cli_usage_error("unknown option");
	}
	int want = strcmp(takes, "KIND") ? 2 : 1;
	if (argc - optind != want)
		return msb_cli_usage_error("takes %s", takes);
	if (want == 2 && !msb_bg_id_valid(argv[optind + 1]))
		return msb_cli_usage_error("'%.40s' is not a background command's handle (what "
					   "`msb exec --background` printed)", argv[optind + 1]);
	int status = msb_cli_key_check(key);
	if (status)
		return status;
	msb_error err = MSB_ERROR_INIT;
	return msb_cli_session_open(s, argv[optind], key, &err) == MSB_OK
		       ? 0 : msb_cli_fail_with(&err, fail_status);
}

static const char *state_word(const msb_bg_status *st)
{
	return st->running ? "running" : st->timed_out ? "timed_out" : st->signal ? "signalled" : "exited";
}

void msb_cli_bg_status_json(const msb_bg_status *st)
{
	printf("{\"id\": ");
	msb_json_string(stdout, st->id);
	printf(", \"pid\": %" PRId64 ", \"state\": \"%s\", \"running\": %s, ", st->pid,
	       state_word(st), st->running ? "true" : "false");
	if (st->running)
		printf("\"exit_code\": null, \"signal\": null, ");
	else
		printf("\"exit_code\": %d, \"signal\": %d, ", st->exit_code, st->signal);
	printf("\"timed_out\": %s, \"ring\": %" PRIu64 ", \"stdout_written\": %" PRIu64
	       ", \"stderr_written\": %" PRIu64 ", \"stdout_dropped\": %" PRIu64
	       ", \"stderr_dropped\": %" PRIu64 ", \"started\": %.3f, \"command\": ",
	       st->timed_out ? "true" : "false", st->ring, st->out_written, st->err_written,
	       st->out_written > st->ring ? st->out_written - st->ring : 0,
	       st->err_written > st->ring ? st->err_written - st->ring : 0, st->started);
	msb_json_string(stdout, st->command);
	printf("}");
}

void msb_cli_bg_status_text(const msb_bg_status *st)
{
	printf("%-17s %7" PRId64 " ", st->id, st->pid);
	if (st->running)
		printf("%-12s", "running");
	else if (st->timed_out)
		printf("%-12s", "timed-out");
	else if (st->signal)
		printf("signal %-5d", st->signal);
	else
		printf("exit %-7d", st->exit_code);
	printf(" %10" PRIu64 " %10" PRIu64 "  ", st->out_written, st->err_written);
	msb_cli_put_text(stdout, st->command, false);
	putchar('\n');
}

int msb_cli_bg_exit_status(const msb_bg_status *st)
{
	return st->timed_out ? MSB_EXIT_TIMEOUT : st->exit_code;
}

int msb_cli_signal_option(const char *arg, int *signal)
{
	static const struct { const char *name; int number; } names[] = {
		{ "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT }, { "KILL", SIGKILL },
		{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "TERM", SIGTERM }, { "CONT", SIGCONT },
		{ "STOP", SIGSTOP }, { "TSTP", SIGTSTP }, { "ALRM", SIGALRM }, { "WINCH", SIGWINCH },
	};
	const char *name = strncmp(arg, "SIG", 3) ? arg : arg + 3;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (!strcmp(name, names[i].name)) {
			*signal = names[i].number;
			return 0;
		}
	char *end;
	long v = strtol(arg, &end, 10);
	if (end != arg && !*end && v >= 1 && v <= 64) {
		*signal = (int)v;
		return 0;
	}
	return msb_cli_usage_error("-s: '%.40s' is no signal: a name (TERM, KILL, INT, HUP…) or a "
				   "number 1..64", arg);
}

int msb_cli_exec_background(const char *kind, const msb_cli_key *key, msb_exec_request *req,
			    bool forward_stdin)
{
	msb_error err = MSB_ERROR_INIT;
	msb_cli_session s;
	if (msb_cli_session_open(&s, kind, key, &err) != MSB_OK)
		return msb_cli_fail(&err);
	msb_buf input = { 0 };
	msb_errc rc = MSB_OK;
	/* Its stdin is given whole at the start, then end of file: read up to files_in's cap. */
	if (forward_stdin &&
	    (rc = msb_cli_read_bounded(STDIN_FILENO, "standard input",
				       s.spec->files_in.max_bytes_per_file, &input, &err)) == MSB_OK) {
		req->stdin_data = input.data ? input.data : (const unsigned char *)"";
		req->stdin_len = input.len;
	}
	msb_bg_status st;
	if (rc == MSB_OK)
		rc = msb_sandbox_bg_start(s.sandbox, req, NULL, &st, &err);
	int status = MSB_EXIT_OK;
	if (rc != MSB_OK) {
		status = msb_cli_fail(&err);
	} else if (msb_cli.json) {
		msb_cli_bg_status_json(&st);
		putchar('\n');
	} else {
		printf("%s\n", st.id);
	}
	msb_buf_free(&input);
	msb_cli_session_close(&s);
	return status;
}
