/*
 * cmd_route.c — `msb route KIND`: which backend serves a kind, and, under per_spec, why
 * each backend registered before it was passed over.
 *
 * A successful per_spec route discards the refusals it passed over (the seed's rule), so
 * they are recovered here with msb_router_check_backend: each earlier backend's own
 * refusal under the same policy, as per_spec words it.
 */
#include <string.h>

#include "cli.h"

static const char usage[] =
	"usage: msb route [--json] KIND\n\n"
	"Print the backend that serves specs of KIND (the six checks, without acquiring) and,\n"
	"under selection: per_spec, each earlier-registered backend with its own refusal.\n"
	"Exit 0 when KIND is served, 1 when it is refused.\n";

/*
 * Each backend registered before the chosen one, with its own refusal, worded as per_spec
 * routing passed over it (msb_router_check_backend): never the fixed selection's sentence
 * about falling back, which this route just did on purpose.
 */
static void print_passed_over(const msb_router *router, const msb_spec *spec,
			      const msb_backend *chosen)
{
	if (msb_cli.json) {
		msb_cli_refusals_json(router, spec, chosen);
		return;
	}
	for (size_t i = 0; i < msb_router_backend_count(router); i++) {
		const msb_backend *b = msb_router_backend_at(router, i);
		if (b == chosen)
			break;
		msb_error err = MSB_ERROR_INIT;
		msb_router_check_backend(router, i, spec, &err);
		printf("  passed over %s: %s: %s\n", msb_backend_name(b), msb_errc_name(err.code),
		       msb_error_message(&err));
		msb_error_clear(&err);
	}
}

static void print_warnings_json(const msb_cli_warnings *w)
{
	printf(", \"warnings\": [");
	for (size_t i = 0; i < w->len; i++) {
		printf("%s", i ? ", " : "");
		msb_json_string(stdout, w->items[i]);
	}
	printf("]");
}

int msb_cmd_route(int argc, char **argv)
{
	static const struct option longopts[] = { MSB_CLI_COMMON_LONGOPTS, { 0 } };
	for (int c; (c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1;)
		if (msb_cli_common_option(c, usage) != 1)
			return msb_cli_usage_error("unknown option");
	if (argc - optind != 1)
		return msb_cli_usage_error("takes one KIND");
	const char *kind = argv[optind];

	msb_error err = MSB_ERROR_INIT;
	msb_config *cfg = NULL;
	msb_router *router = NULL;
	const msb_spec *spec = NULL;
	const msb_backend *chosen = NULL;
	int status = MSB_EXIT_OK;
	/* The router's warnings: a `warnings` array under --json (as check has), else stderr. */
	msb_cli_warnings warnings = { 0 };
	if (msb_cli_load(true, &warnings, &cfg, &err) != MSB_OK || msb_config_spec_find(cfg, kind, &spec, &err) != MSB_OK ||
	    msb_cli_router(cfg, &router, &err) != MSB_OK) {
		for (size_t i = 0; !msb_cli.json && i < warnings.len; i++)
			msb_cli_warn(NULL, warnings.items[i]);
		status = msb_cli_fail(&err);
	} else if ((msb_cli.stage = "route", msb_router_ensure_can_serve(router, spec, &chosen, &err)) != MSB_OK) {
		for (size_t i = 0; !msb_cli.json && i < warnings.len; i++)
			msb_cli_warn(NULL, warnings.items[i]);
		if (msb_cli.json) {
			/* A refused route is still an answer: the class, each backend's own, the warnings. */
			printf("{\"kind\": ");
			msb_json_string(stdout, kind);
			printf(", \"error\": ");
			msb_json_string(stdout, msb_errc_name(err.code));
			printf(", \"message\": ");
			msb_json_string(stdout, msb_error_message(&err));
			printf(", \"stage\": \"route\", \"refusals\": ");
			msb_cli_refusals_json(router, spec, NULL);
			print_warnings_json(&warnings);
			printf("}\n");
			status = MSB_EXIT_FAILED;
		} else {
			status = msb_cli_fail(&err);
		}
	} else {
		bool per_spec = msb_config_router_options(cfg)->selection == MSB_SELECTION_PER_SPEC;
		const char *rung = msb_word_name(MSB_AXIS_ISOLATION, (int)msb_backend_isolation(chosen));
		if (msb_cli.json) {
			printf("{\"kind\": ");
			msb_json_string(stdout, kind);
			printf(", \"backend\": ");
			msb_json_string(stdout, msb_backend_name(chosen));
			printf(", \"isolation\": ");
			msb_json_string(stdout, rung);
			printf(", \"selection\": \"%s\", \"passed_over\": ", per_spec ? "per_spec" : "fixed");
			if (per_spec)
				print_passed_over(router, spec, chosen);
			else
				printf("[]");
			print_warnings_json(&warnings);
			printf("}\n");
		} else {
			printf("%s -> %s (%s)\n", kind, msb_backend_name(chosen), rung);
			if (per_spec)
				print_passed_over(router, spec, chosen);
		}
		for (size_t i = 0; !msb_cli.json && i < warnings.len; i++)
			msb_cli_warn(NULL, warnings.items[i]);
	}
	msb_cli_warnings_free(&warnings);
	msb_error_clear(&err);
	msb_router_free(router);
	msb_config_free(cfg);
	return status;
}
