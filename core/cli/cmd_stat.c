/*
 * cmd_stat.c — `msb stat KIND --scope S --thread T GUEST`: what GUEST is in the sandbox
 * (files_out): its kind and size, a symlink reported as one, never followed. Exit 0 when it
 * exists, 1 when it does not or the call was refused (the message says which).
 */
#include <inttypes.h>
#include <stdlib.h>

#include "cli.h"

static const char usage[] =
	"usage: msb stat KIND --scope S --thread T [--agent A] [--call C] [--workdir DIR] [--json]\n"
	"                GUEST\n\n"
	"Describe GUEST (relative to the spec's work_dir) in the sandbox of KIND: kind, size in\n"
	"bytes (-1 unknown) and path. Exit 0 when it exists, 1 when absent or refused.\n";

int msb_cmd_stat(int argc, char **argv)
{
	msb_cli_file_args a;
	int status = msb_cli_file_options(argc, argv, usage, NULL, 0, &a);
	if (status)
		return status;
	if (argc - optind != 2)
		return msb_cli_usage_error("takes KIND GUEST");
	status = msb_cli_key_check(&a.key);
	if (status)
		return status;
	const char *guest = argv[optind + 1];
	msb_error err = MSB_ERROR_INIT;
	msb_entry e = { 0 };
	bool found = false;
	msb_cli_session s;
	if (msb_cli_session_open(&s, argv[optind], &a.key, &err) != MSB_OK)
		return msb_cli_fail(&err);
	if (msb_sandbox_stat_file(s.sandbox, guest, a.workdir, &e, &found, &err) != MSB_OK) {
		status = msb_cli_fail(&err);
	} else if (msb_cli.json) {
		printf("{\"path\": ");
		msb_json_string(stdout, guest);
		printf(", \"found\": %s", found ? "true" : "false");
		if (found)
			printf(", \"kind\": \"%s\", \"size\": %" PRId64,
			       msb_word_name(MSB_AXIS_ENTRY_KIND, (int)e.kind), e.size_bytes);
		printf("}\n");
		status = found ? 0 : 1;
	} else if (found) {
		printf("%-9s %10" PRId64 "  ", msb_word_name(MSB_AXIS_ENTRY_KIND, (int)e.kind), e.size_bytes);
		msb_cli_put_text(stdout, guest, true);
		putchar('\n');
	} else {
		fputs("msb: stat: ", stderr);
		msb_cli_put_text(stderr, guest, true);
		fputs(": not found\n", stderr);
		status = 1;
	}
	free(e.path);
	msb_cli_session_close(&s);
	msb_error_clear(&err);
	return status;
}
