/*
 * cmd_route.c — `msb route KIND`: which backend serves a kind, and, under per_spec, why
 * each backend registered before it was passed over.
 *
 * A successful per_spec route discards the refusals it passed over (the seed's rule), so
 * they are recovered here with the public API alone: for each earlier backend, a router
 * pinned to it (fixed, selected) with the same policy is asked the same question. Its
 * construction refusal (below the floor) or its ensure_can_serve refusal is exactly why
 * routing moved past it.
 */
#include <string.h>

#include "cli.h"

static const char usage[] =
	"usage: msb route [--json] KIND\n\n"
	"Print the backend that serves specs of KIND (the six checks, without acquiring) and,\n"
	"under selection: per_spec, each earlier-registered backend with its own refusal.\n"
	"Exit 0 when KIND is served, 1 when it is refused.\n";

static void silent(void *ctx, const char *message) { (void)ctx; (void)message; }

/* Why `b` does not serve `spec`: a router pinned to it, same policy, answers. */
static void why_not(msb_config *cfg, const msb_backend *b, const msb_spec *spec, msb_error *err)
{
	msb_router_options o = *msb_config_router_options(cfg);
	o.selection = MSB_SELECTION_FIXED;
	o.selected = msb_backend_name(b);
	o.warn = silent;
	o.observer = NULL;
	msb_router *pinned = NULL;
	if (msb_router_new((msb_backend *const *)&b, 1, &o, &pinned, err) == MSB_OK) {
		const msb_backend *chosen;
		msb_router_ensure_can_serve(pinned, spec, &chosen, err);
		msb_router_free(pinned);
	}
}

static void print_passed_over(msb_config *cfg, const msb_spec *spec, const msb_backend *chosen)
{
	bool first = true;
	for (size_t i = 0; i < msb_config_backend_count(cfg); i++) {
		const msb_backend *b = msb_config_backend_at(cfg, i);
		if (b == chosen)
			break;
		msb_error err = MSB_ERROR_INIT;
		why_not(cfg, b, spec, &err);
		if (msb_cli.json) {
			printf("%s{\"backend\": ", first ? "" : ", ");
			msb_json_string(stdout, msb_backend_name(b));
			printf(", \"error\": ");
			msb_json_string(stdout, msb_errc_name(err.code));
			printf(", \"message\": ");
			msb_json_string(stdout, msb_error_message(&err));
			printf("}");
		} else {
			printf("  passed over %s: %s: %s\n", msb_backend_name(b), msb_errc_name(err.code),
			       msb_error_message(&err));
		}
		first = false;
		msb_error_clear(&err);
	}
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
	if (msb_cli_load(true, NULL, &cfg, &err) != MSB_OK || msb_config_spec_find(cfg, kind, &spec, &err) != MSB_OK ||
	    msb_config_router(cfg, &router, &err) != MSB_OK ||
	    msb_router_ensure_can_serve(router, spec, &chosen, &err) != MSB_OK) {
		status = msb_cli_fail(&err);
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
			printf(", \"selection\": \"%s\", \"passed_over\": [", per_spec ? "per_spec" : "fixed");
			if (per_spec)
				print_passed_over(cfg, spec, chosen);
			printf("]}\n");
		} else {
			printf("%s -> %s (%s)\n", kind, msb_backend_name(chosen), rung);
			if (per_spec)
				print_passed_over(cfg, spec, chosen);
		}
	}
	msb_error_clear(&err);
	msb_router_free(router);
	msb_config_free(cfg);
	return status;
}
