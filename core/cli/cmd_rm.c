/*
 * cmd_rm.c — `msb rm KIND --scope S --thread T [-r] GUEST`: remove a path in the sandbox,
 * gated by the backend's files_delete capability.
 */
#include "cli.h"

static const char usage[] =
	"usage: msb rm KIND --scope S --thread T [--agent A] [--call C] [--workdir DIR] [-r] [--json]\n"
	"              GUEST\n\n"
	"Remove GUEST (relative to the spec's work_dir) in the sandbox of KIND; -r removes a\n"
	"directory and everything under it. Needs the files_delete capability.\n"
	"Exit 0 when removed, 1 when refused or failed.\n";

int msb_cmd_rm(int argc, char **argv)
{
	msb_cli_file_args a;
	int status = msb_cli_file_options(argc, argv, usage, "recursive", 'r', &a);
	if (status)
		return status;
	if (argc - optind != 2)
		return msb_cli_usage_error("takes KIND GUEST");
	status = msb_cli_key_check(&a.key);
	if (status)
		return status;
	msb_error err = MSB_ERROR_INIT;
	msb_cli_session s;
	if (msb_cli_session_open(&s, argv[optind], &a.key, &err) != MSB_OK)
		return msb_cli_fail(&err);
	if (msb_sandbox_remove(s.sandbox, argv[optind + 1], a.workdir, a.flag, &err) != MSB_OK) {
		status = msb_cli_fail(&err);
	} else if (msb_cli.json) {
		printf("{\"removed\": ");
		msb_json_string(stdout, argv[optind + 1]);
		printf("}\n");
	}
	msb_cli_session_close(&s);
	msb_error_clear(&err);
	return status;
}
