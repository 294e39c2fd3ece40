/*
 * cmd_ps.c — `msb ps KIND --scope S --thread T`: the background commands of the key's
 * sandbox of KIND, running or ended, oldest first (msb exec --background starts them).
 */
#include "cli.h"

static const char usage[] =
	"usage: msb ps KIND --scope S --thread T [--agent A] [--call C] [--json]\n\n"
	"List the background commands of the sandbox of KIND for the key (started with\n"
	"`msb exec --background`), running or ended, oldest first: handle, guest pid, state,\n"
	"bytes written to stdout and stderr, command line. --json: {\"commands\": [...]}.\n";

int msb_cmd_ps(int argc, char **argv)
{
	msb_cli_session s;
	int status = msb_cli_bg_open(argc, argv, usage, "KIND", NULL, NULL, NULL, MSB_EXIT_FAILED, &s);
	if (status)
		return status;
	msb_error err = MSB_ERROR_INIT;
	msb_bg_list list;
	if (msb_sandbox_bg_list(s.sandbox, &list, &err) != MSB_OK) {
		status = msb_cli_fail(&err);
	} else if (msb_cli.json) {
		printf("{\"commands\": [");
		for (size_t i = 0; i < list.n; i++) {
			printf(i ? ", " : "");
			msb_cli_bg_status_json(&list.items[i]);
		}
		printf("]}\n");
	} else {
		printf("%-17s %7s %-12s %10s %10s  %s\n", "ID", "PID", "STATE", "STDOUT", "STDERR",
		       "COMMAND");
		for (size_t i = 0; i < list.n; i++)
			msb_cli_bg_status_text(&list.items[i]);
	}
	msb_bg_list_free(&list);
	msb_cli_session_close(&s);
	return status;
}
