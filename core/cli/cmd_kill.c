/*
 * cmd_kill.c — `msb kill KIND ID [-s SIGNAL]`: send a signal (TERM unless said) to a
 * background command's process group. One that has ended is refused, saying so.
 */
#include <signal.h>

#include "cli.h"

static const char usage[] =
	"usage: msb kill KIND ID --scope S --thread T [--agent A] [--call C] [-s SIGNAL] [--json]\n\n"
	"Send SIGNAL (a name such as TERM, KILL, INT, HUP, or a number; TERM by default) to the\n"
	"background command ID of the sandbox of KIND for the key: to its process group. A\n"
	"command that has ended is refused (ValueError). `msb wait` says how it ended.\n";

static int own(int c, const char *arg, void *ctx)
{
	if (c != 's')
		return 0;
	return msb_cli_signal_option(arg, ctx) ? -1 : 1;
}

int msb_cmd_kill(int argc, char **argv)
{
	int signal = SIGTERM;
	msb_cli_session s;
	int status = msb_cli_bg_open(argc, argv, usage, "KIND ID", NULL, own, &signal,
				     MSB_EXIT_FAILED, &s);
	if (status)
		return status;
	const char *id = argv[optind + 1];
	msb_error err = MSB_ERROR_INIT;
	if (msb_sandbox_bg_signal(s.sandbox, id, signal, &err) != MSB_OK)
		status = msb_cli_fail(&err);
	else if (msb_cli.json)
		printf("{\"id\": \"%s\", \"signal\": %d}\n", id, signal);
	msb_cli_session_close(&s);
	return status;
}
