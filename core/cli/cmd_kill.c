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
	msb_cli_key key = { 0 };
	int signal = SIGTERM;
	int status = msb_cli_bg_options(argc, argv, usage, "KIND ID", NULL, own, &signal, &key);
	if (status)
		return status;
	const char *id = argv[optind + 1];
	msb_error err = MSB_ERROR_INIT;
	msb_cli_session s;
	if (msb_cli_session_open(&s, argv[optind], &key, &err) != MSB_OK)
		return msb_cli_fail(&err);
	if (msb_sandbox_bg_signal(s.sandbox, id, signal, &err) != MSB_OK)
		status = msb_cli_fail(&err);
	else if (msb_cli.json)
		printf("{\"id\": \"%s\", \"signal\": %d}\n", id, signal);
	msb_cli_session_close(&s);
	return status;
}
