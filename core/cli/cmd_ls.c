/*
 * cmd_ls.c — `msb ls KIND --scope S --thread T [GUEST_DIR]`: a directory in the sandbox
 * (files_list), symlinks shown as symlinks, sizes as the backend reports them (-1: unknown).
 * A name is the guest's choice: its control bytes are shown escaped (msb_cli_put_text).
 */
#include <inttypes.h>

#include "cli.h"

static const char usage[] =
	"usage: msb ls KIND --scope S --thread T [--agent A] [--call C] [--workdir DIR] [--json]\n"
	"              [GUEST_DIR]\n\n"
	"List GUEST_DIR (relative to the spec's work_dir; default: the work_dir itself) in the\n"
	"sandbox of KIND: kind, size in bytes (-1 unknown) and path, one entry a line.\n"
	"Exit 0 when listed, 1 when refused or failed.\n";

int msb_cmd_ls(int argc, char **argv)
{
	msb_cli_file_args a;
	int status = msb_cli_file_options(argc, argv, usage, NULL, 0, &a);
	if (status)
		return status;
	if (argc - optind != 1 && argc - optind != 2)
		return msb_cli_usage_error("takes KIND [GUEST_DIR]");
	status = msb_cli_key_check(&a.key);
	if (status)
		return status;
	const char *dir = argc - optind == 2 ? argv[optind + 1] : ".";
	msb_error err = MSB_ERROR_INIT;
	msb_entry_list list = { 0 };
	msb_cli_session s;
	if (msb_cli_session_open(&s, argv[optind], &a.key, &err) != MSB_OK)
		return msb_cli_fail(&err);
	if (msb_sandbox_list_dir(s.sandbox, dir, a.workdir, &list, &err) != MSB_OK) {
		status = msb_cli_fail(&err);
	} else {
		if (msb_cli.json)
			printf("{\"entries\": [");
		for (size_t i = 0; i < list.len; i++) {
			const msb_entry *e = &list.items[i];
			const char *kind = msb_word_name(MSB_AXIS_ENTRY_KIND, (int)e->kind);
			if (msb_cli.json) {
				printf("%s{\"path\": ", i ? ", " : "");
				msb_json_string(stdout, e->path);
				printf(", \"kind\": \"%s\", \"size\": %" PRId64 "}", kind, e->size_bytes);
			} else {
				printf("%-9s %10" PRId64 "  ", kind, e->size_bytes);
				msb_cli_put_text(stdout, e->path, true);
				putchar('\n');
			}
		}
		if (msb_cli.json)
			printf("]}\n");
	}
	msb_entry_list_free(&list);
	msb_cli_session_close(&s);
	msb_error_clear(&err);
	return status;
}
