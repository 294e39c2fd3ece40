/*
 * cmd_attach.c — `msb attach KIND ID`: a background command's output so far, then what it
 * writes as it writes it, until it ends (exiting with its status, as exec) or msb is
 * interrupted (Ctrl-C detaches: the command keeps running). Bytes the guest's ring dropped
 * before they were read are said on stderr (or as an event with --json), never hidden.
 */
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char usage[] =
	"usage: msb attach KIND ID --scope S --thread T [--agent A] [--call C] [--no-follow] [--json]\n\n"
	"Print what the background command ID of the sandbox of KIND has written (stdout to\n"
	"stdout, stderr to stderr), then follow it until it ends and exit with its exit status\n"
	"(124 when its own timeout killed it). Interrupting msb (Ctrl-C) detaches: the command\n"
	"keeps running, msb exits 130. --no-follow prints what there is and exits 0 while it\n"
	"runs. Bytes the guest's ring dropped before they were read are reported on stderr.\n"
	"--json: one JSON line per chunk ({\"event\": \"output\", ...}) or drop ({\"event\":\n"
	"\"dropped\", ...}), then the command's status object.\n";

enum { OPT_NO_FOLLOW = 0x2000 };

static volatile sig_atomic_t detached;

static void on_interrupt(int sig)
{
	(void)sig;
	detached = 1;
}

static int own(int c, const char *arg, void *ctx)
{
	(void)arg;
	if (c != OPT_NO_FOLLOW)
		return 0;
	*(bool *)ctx = false;
	return 1;
}

/* One stream's part of a read: its drop said, its bytes passed on; the next offset. */
static uint64_t pass_on(const char *name, const msb_buf *data, uint64_t start, uint64_t dropped)
{
	if (dropped && msb_cli.json)
		printf("{\"event\": \"dropped\", \"stream\": \"%s\", \"bytes\": %" PRIu64 "}\n", name,
		       dropped);
	else if (dropped)
		fprintf(stderr, "\nmsb: note: %" PRIu64 " bytes of the command's %s were dropped by "
			"the guest's ring before they were read\n", dropped, name);
	if (data->len && msb_cli.json) {
		printf("{\"event\": \"output\", \"stream\": \"%s\", \"offset\": %" PRIu64 ", \"data\": ",
		       name, start);
		msb_json_bytes(stdout, data->data, data->len);
		printf("}\n");
	} else if (data->len) {
		msb_cli_put_all(strcmp(name, "stdout") ? STDERR_FILENO : STDOUT_FILENO, data->data, data->len);
	}
	fflush(stdout);
	return start + data->len;
}

int msb_cmd_attach(int argc, char **argv)
{
	static const struct option extra[] = { { "no-follow", no_argument, NULL, OPT_NO_FOLLOW }, { 0 } };
	bool follow = true;
	msb_cli_session s;
	int status = msb_cli_bg_open(argc, argv, usage, "KIND ID", extra, own, &follow,
				     MSB_EXIT_NOT_RUN, &s);
	if (status)
		return status;
	const char *id = argv[optind + 1];
	msb_error err = MSB_ERROR_INIT;
	struct sigaction sa = { .sa_handler = on_interrupt };
	sigaction(SIGINT, &sa, NULL);
	msb_bg_read rq = { 0 };
	msb_bg_output out = { 0 };
	for (;;) {
		if (msb_sandbox_bg_read(s.sandbox, id, &rq, &out, &err) != MSB_OK) {
			status = msb_cli_fail_with(&err, MSB_EXIT_NOT_RUN);
			break;
		}
		rq.out_offset = pass_on("stdout", &out.out, out.out_start, out.out_dropped);
		rq.err_offset = pass_on("stderr", &out.err, out.err_start, out.err_dropped);
		bool more = rq.out_offset < out.status.out_written || rq.err_offset < out.status.err_written;
		if (!more && (!out.status.running || !follow || detached)) {
			status = out.status.running ? (detached ? 130 : MSB_EXIT_OK)
						    : msb_cli_bg_exit_status(&out.status);
			if (msb_cli.json) {
				msb_cli_bg_status_json(&out.status);
				putchar('\n');
			} else if (detached) {
				fprintf(stderr, "\nmsb: detached; background command %s keeps running\n", id);
			}
			break;
		}
		/* Nothing new: wait for more, a short while at a time so an interrupt is seen. */
		rq.wait = more ? 0 : 0.5;
		msb_bg_output_free(&out);
	}
	msb_bg_output_free(&out);
	msb_cli_session_close(&s);
	return status;
}
