/*
 * cmd_dispose.c — `msb dispose --scope S --thread T [--agent A] [--call C]`: delete a
 * conversation's sandboxes on every registered backend (dispose_scope), or, with --agent or
 * --call, the one key's (dispose). A delete known not to have landed fails the command
 * with the backend's code and sentence: a sandbox nobody reclaims is one somebody pays for.
 */
#include <inttypes.h>

#include "cli.h"

static const char usage[] =
	"usage: msb dispose --scope S --thread T [--agent A] [--call C] [--json]\n\n"
	"Delete the sandboxes of the conversation (S, T) on every registered backend, or with\n"
	"--agent/--call only those of that one key. Prints how many went. Exit 0 when every\n"
	"backend reported success, 1 when a delete is known not to have landed.\n";

static int report(uint64_t disposed, bool counted, const msb_disposal_failure *undisposed)
{
	const char *code = undisposed ? msb_word_name(MSB_AXIS_DISPOSAL_CODE, (int)undisposed->code) : NULL;
	if (msb_cli.json) {
		printf("{");
		if (counted)
			printf("\"disposed\": %" PRIu64 ", ", disposed);
		printf("\"undisposed\": ");
		if (undisposed) {
			printf("{\"code\": ");
			msb_json_string(stdout, code);
			printf(", \"detail\": ");
			msb_json_string(stdout, undisposed->detail);
			printf("}");
		} else {
			printf("null");
		}
		printf("}\n");
	} else {
		if (counted)
			printf("disposed %" PRIu64 " sandbox(es)\n", disposed);
		if (undisposed) {
			fprintf(stderr, "msb: SandboxUnclean: a delete did not land (%s): ", code);
			msb_cli_put_text(stderr, undisposed->detail ? undisposed->detail : "", false);
			fputc('\n', stderr);
		}
	}
	return undisposed ? MSB_EXIT_FAILED : MSB_EXIT_OK;
}

int msb_cmd_dispose(int argc, char **argv)
{
	static const struct option longopts[] = { MSB_CLI_COMMON_LONGOPTS, MSB_CLI_KEY_LONGOPTS, { 0 } };
	msb_cli_key key = { 0 };
	for (int c; (c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1;)
		if (!msb_cli_key_option(&key, c, optarg) && msb_cli_common_option(c, usage) != 1)
			return msb_cli_usage_error("unknown option");
	if (optind != argc)
		return msb_cli_usage_error("takes no arguments");
	int status = msb_cli_key_check(&key);
	if (status)
		return status;
	msb_error err = MSB_ERROR_INIT;
	msb_config *cfg = NULL;
	msb_router *router = NULL;
	/*
	 * Collected and dropped: what the router would warn about here is the failed delete this
	 * command reports itself, and a second line saying it again is noise.
	 */
	msb_cli_warnings warnings = { 0 };
	if (msb_cli_load(true, &warnings, &cfg, &err) != MSB_OK || msb_cli_router(cfg, &router, &err) != MSB_OK) {
		status = msb_cli_fail(&err);
		msb_error_clear(&err);
		msb_config_free(cfg);
		msb_cli_warnings_free(&warnings);
		return status;
	}
	if (key.agent || key.call) {
		msb_key k = { key.scope, key.thread, key.agent ? key.agent : "", key.call ? key.call : "" };
		msb_disposal_failure failure = { MSB_DISPOSAL_UNKNOWN, NULL };
		bool clean = msb_router_dispose(router, &k, &failure);
		status = report(0, false, clean ? NULL : &failure);
		msb_disposal_failure_free(&failure);
	} else {
		msb_scope_purge purge = { 0 };
		msb_router_dispose_scope(router, key.scope, key.thread, &purge);
		status = report(purge.disposed, true, purge.has_undisposed ? &purge.undisposed : NULL);
		msb_scope_purge_free(&purge);
	}
	msb_router_free(router);
	msb_config_free(cfg);
	msb_cli_warnings_free(&warnings);
	return status;
}
