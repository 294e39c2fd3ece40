/*
 * cmd_snapshot.c — `msb snapshot save KIND --scope S --thread T … NAME`, `msb snapshot ls`,
 * `msb snapshot rm NAME` (issue 22): a running sandbox's whole state under a name, through
 * a backend that declares the snapshot capability; `msb exec --from NAME` forks one.
 */
#include <string.h>

#include "cli.h"

static const char usage[] =
	"usage: msb snapshot save KIND --scope S --thread T [--agent A] [--call C] NAME\n"
	"       msb snapshot ls [--json]\n"
	"       msb snapshot rm NAME\n\n"
	"save: save the running sandbox of KIND for the key (acquired if need be) under NAME —\n"
	"its memory, files and running processes; the sandbox runs on. Needs a backend that\n"
	"declares the snapshot capability. NAME is 1 to 64 of [A-Za-z0-9._-].\n"
	"ls: every snapshot, as BACKEND<TAB>NAME lines. rm: delete one.\n"
	"Start a sandbox from one with `msb exec KIND --from NAME …` (a fork).\n"
	"Exit 0 on success, 1 when refused or failed.\n";

static int save(int argc, char **argv)
{
	msb_cli_file_args a;
	int status = msb_cli_file_options(argc, argv, usage, NULL, 0, &a);
	if (status)
		return status;
	if (argc - optind != 2)
		return msb_cli_usage_error("snapshot save takes KIND NAME");
	if ((status = msb_cli_key_check(&a.key)))
		return status;
	msb_error err = MSB_ERROR_INIT;
	msb_cli_session s;
	if (msb_cli_session_open(&s, argv[optind], &a.key, &err) != MSB_OK)
		return msb_cli_fail(&err);
	if (msb_sandbox_snapshot_save(s.sandbox, argv[optind + 1], &err) != MSB_OK) {
		status = msb_cli_fail(&err);
	} else if (msb_cli.json) {
		printf("{\"saved\": ");
		msb_json_string(stdout, argv[optind + 1]);
		printf("}\n");
	}
	msb_cli_session_close(&s);
	return status;
}

static int ls_or_rm(int argc, char **argv, bool rm)
{
	static const struct option longopts[] = { MSB_CLI_COMMON_LONGOPTS, { 0 } };
	for (int c; (c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1;)
		if (msb_cli_common_option(c, usage) != 1)
			return msb_cli_usage_error("unknown option");
	if (argc - optind != (rm ? 1 : 0))
		return msb_cli_usage_error(rm ? "snapshot rm takes NAME" : "snapshot ls takes nothing");
	msb_error err = MSB_ERROR_INIT;
	msb_config *cfg = NULL;
	msb_router *router = NULL;
	msb_errc rc = msb_cli_load(true, NULL, &cfg, &err);
	if (rc == MSB_OK)
		rc = msb_cli_router(cfg, &router, &err);
	msb_buf names = { 0 };
	if (rc == MSB_OK)
		rc = rm ? msb_router_snapshot_remove(router, argv[optind], &err)
			: msb_router_snapshot_list(router, &names, &err);
	int status = rc == MSB_OK ? 0 : msb_cli_fail(&err);
	if (rc == MSB_OK && !rm && msb_cli.json) {
		printf("[");
		const char *p = names.data ? (const char *)names.data : "";
		for (bool first = true; *p; first = false) {
			const char *tab = strchr(p, '\t'), *nl = strchr(p, '\n');
			if (!tab || !nl)
				break;
			printf("%s{\"backend\": ", first ? "" : ", ");
			char field[256];
			snprintf(field, sizeof field, "%.*s", (int)(tab - p), p);
			msb_json_string(stdout, field);
			printf(", \"name\": ");
			snprintf(field, sizeof field, "%.*s", (int)(nl - tab - 1), tab + 1);
			msb_json_string(stdout, field);
			printf("}");
			p = nl + 1;
		}
		printf("]\n");
	} else if (rc == MSB_OK && !rm && names.data) {
		fputs((const char *)names.data, stdout);
	}
	msb_buf_free(&names);
	msb_router_free(router);
	msb_config_free(cfg);
	return status;
}

int msb_cmd_snapshot(int argc, char **argv)
{
	if (argc < 2)
		return msb_cli_usage_error("snapshot needs save, ls or rm");
	const char *verb = argv[1];
	if (!strcmp(verb, "-h") || !strcmp(verb, "--help")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(verb, "save"))
		return save(argc - 1, argv + 1);
	if (!strcmp(verb, "ls"))
		return ls_or_rm(argc - 1, argv + 1, false);
	if (!strcmp(verb, "rm"))
		return ls_or_rm(argc - 1, argv + 1, true);
	return msb_cli_usage_error("snapshot: unknown verb '%s' (save, ls, rm)", verb);
}
