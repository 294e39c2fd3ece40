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
	enum { OPT_WORKDIR = 0x2000 };
	static const struct option longopts[] = { MSB_CLI_COMMON_LONGOPTS, MSB_CLI_KEY_LONGOPTS,
						  { "workdir", required_argument, NULL, OPT_WORKDIR },
						  { "recursive", no_argument, NULL, 'r' }, { 0 } };
	msb_cli_key key = { 0 };
	const char *workdir = NULL;
	bool recursive = false;
	for (int c; (c = getopt_long(argc, argv, "c:hr", longopts, NULL)) != -1;) {
		if (msb_cli_key_option(&key, c, optarg))
			continue;
		if (c == OPT_WORKDIR)
			workdir = optarg;
		else if (c == 'r')
			recursive = true;
		else if (msb_cli_common_option(c, usage) != 1)
			return msb_cli_usage_error("unknown option");
	}
	if (argc - optind != 2)
		return msb_cli_usage_error("takes KIND GUEST");
	int status = msb_cli_key_check(&key);
	if (status)
		return status;
	msb_error err = MSB_ERROR_INIT;
	msb_cli_session s;
	if (msb_cli_session_open(&s, argv[optind], &key, &err) != MSB_OK)
		return msb_cli_fail(&err);
	if (msb_sandbox_remove(s.sandbox, argv[optind + 1], workdir, recursive, &err) != MSB_OK) {
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
