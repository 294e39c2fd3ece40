/*
 * cmd_reclaim.c — `msb reclaim KIND --scope S --thread T DIR`: remove DIR and everything
 * under it in the sandbox, as a kind does with a run directory it has collected. Gated by
 * no capability (the host must always be able to clean up); a missing DIR is success.
 * Exit 0 when DIR is gone, 1 otherwise.
 */
#include <stdlib.h>

#include "cli.h"

static const char usage[] =
	"usage: msb reclaim KIND --scope S --thread T [--agent A] [--call C] [--workdir DIR]\n"
	"                   [--json] GUEST_DIR\n\n"
	"Remove GUEST_DIR (absolute, inside the working directory) and all beneath it in the\n"
	"sandbox of KIND, within 30 seconds. A missing GUEST_DIR is success. Exit 0 when it is\n"
	"gone, 1 when refused or failed.\n";

int msb_cmd_reclaim(int argc, char **argv)
{
	msb_cli_file_args a;
	int status = msb_cli_file_options(argc, argv, usage, NULL, 0, &a);
	if (status)
		return status;
	if (argc - optind != 2)
		return msb_cli_usage_error("takes KIND GUEST_DIR");
	status = msb_cli_key_check(&a.key);
	if (status)
		return status;
	const char *dir = argv[optind + 1];
	msb_error err = MSB_ERROR_INIT;
	msb_cli_session s;
	if (msb_cli_session_open(&s, argv[optind], &a.key, &err) != MSB_OK)
		return msb_cli_fail(&err);
	if (msb_sandbox_reclaim(s.sandbox, dir, a.workdir, 30.0, &err) != MSB_OK) {
		status = msb_cli_fail(&err);
	} else if (msb_cli.json) {
		printf("{\"reclaimed\": ");
		msb_json_string(stdout, dir);
		printf("}\n");
	}
	msb_cli_session_close(&s);
	msb_error_clear(&err);
	return status;
}
