/*
 * cmd_check.c — `msb check`: the wiring test a host puts in its own CI. Load every plugin,
 * open every backend, build the router (which refuses a fixed backend below the floor),
 * then ensure_can_serve every spec; a table of kind → backend or refusal. Any refusal
 * fails the command.
 */
#include <stdlib.h>

#include "cli.h"

static const char usage[] =
	"usage: msb [-c FILE] check [--json]\n\n"
	"Load every plugin sandbox.yaml names, open every backend, build the router, and check\n"
	"every spec against it (the six checks acquire runs, without acquiring). Prints each\n"
	"kind with the backend that serves it or the refusal. Exit 0 when every spec is\n"
	"served, 1 on any refusal (or when loading or building the router is refused).\n";

typedef struct outcome {
	const msb_backend *backend;
	msb_error err;
} outcome;

/*
 * Each backend as the router sees it: its effective declarations, after the instance's own
 * narrowing and the entry's. No other command shows them, and they are what every check ran on.
 */
static void print_text(const msb_config *cfg, const outcome *o, size_t n, size_t refused)
{
	printf("%s: %zu backend(s), %zu spec(s)\n", msb_config_file(cfg), msb_config_backend_count(cfg), n);
	for (size_t i = 0; i < msb_config_backend_count(cfg); i++) {
		const msb_backend *b = msb_config_backend_at(cfg, i);
		printf("  backend %-16s %s\n", msb_backend_name(b), msb_word_name(MSB_AXIS_ISOLATION, (int)msb_backend_isolation(b)));
		msb_cli_declarations_text(msb_backend_declarations(b), "    ");
	}
	for (size_t i = 0; i < n; i++) {
		const char *kind = msb_config_spec_at(cfg, i)->kind;
		if (o[i].backend)
			printf("  spec    %-16s ok: %s\n", kind, msb_backend_name(o[i].backend));
		else
			printf("  spec    %-16s REFUSED: %s: %s\n", kind, msb_errc_name(o[i].err.code),
			       msb_error_message(&o[i].err));
	}
	if (refused)
		fprintf(stderr, "msb: check: %zu of %zu spec(s) refused\n", refused, n);
}

static void print_json(const msb_config *cfg, const msb_router *router, const outcome *o,
		       size_t n, size_t refused, const msb_cli_warnings *w)
{
	printf("{\"file\": ");
	msb_json_string(stdout, msb_config_file(cfg));
	printf(", \"ok\": %s, \"backends\": [", refused ? "false" : "true");
	for (size_t i = 0; i < msb_config_backend_count(cfg); i++) {
		const msb_backend *b = msb_config_backend_at(cfg, i);
		printf("%s{\"name\": ", i ? ", " : "");
		msb_json_string(stdout, msb_backend_name(b));
		printf(", \"isolation\": ");
		msb_json_string(stdout, msb_word_name(MSB_AXIS_ISOLATION, (int)msb_backend_isolation(b)));
		printf(", ");
		msb_cli_declarations_json(msb_backend_declarations(b));
		printf("}");
	}
	printf("], \"specs\": [");
	for (size_t i = 0; i < n; i++) {
		printf("%s{\"kind\": ", i ? ", " : "");
		msb_json_string(stdout, msb_config_spec_at(cfg, i)->kind);
		if (o[i].backend) {
			printf(", \"backend\": ");
			msb_json_string(stdout, msb_backend_name(o[i].backend));
		} else {
			printf(", \"error\": ");
			msb_json_string(stdout, msb_errc_name(o[i].err.code));
			printf(", \"message\": ");
			msb_json_string(stdout, msb_error_message(&o[i].err));
			printf(", \"stage\": \"route\"");
			if (msb_router_get_options(router)->selection == MSB_SELECTION_PER_SPEC) {
				printf(", \"refusals\": ");
				msb_cli_refusals_json(router, msb_config_spec_at(cfg, i), NULL);
			}
		}
		printf("}");
	}
	printf("], \"warnings\": [");
	for (size_t i = 0; i < w->len; i++) {
		printf("%s", i ? ", " : "");
		msb_json_string(stdout, w->items[i]);
	}
	printf("]}\n");
}

int msb_cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = { MSB_CLI_COMMON_LONGOPTS, { 0 } };
	for (int c; (c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1;)
		if (msb_cli_common_option(c, usage) != 1)
			return msb_cli_usage_error("unknown option");
	if (optind != argc)
		return msb_cli_usage_error("takes no arguments");

	msb_error err = MSB_ERROR_INIT;
	msb_cli_warnings warnings = { 0 };
	msb_config *cfg = NULL;
	msb_router *router = NULL;
	if (msb_cli_load(true, &warnings, &cfg, &err) != MSB_OK ||
	    msb_cli_router(cfg, &router, &err) != MSB_OK) {
		for (size_t i = 0; !msb_cli.json && i < warnings.len; i++)
			msb_cli_warn(NULL, warnings.items[i]);
		int status = msb_cli_fail(&err);
		msb_error_clear(&err);
		msb_config_free(cfg);
		msb_cli_warnings_free(&warnings);
		return status;
	}
	size_t n = msb_config_spec_count(cfg), refused = 0;
	outcome *o = calloc(n ? n : 1, sizeof *o);
	if (!o) {
		msb_error_set(&err, MSB_E_NOMEM, "out of memory");
		msb_router_free(router);
		msb_config_free(cfg);
		return msb_cli_fail(&err);
	}
	for (size_t i = 0; i < n; i++)
		if (msb_router_ensure_can_serve(router, msb_config_spec_at(cfg, i), &o[i].backend, &o[i].err) != MSB_OK) {
			o[i].backend = NULL;
			refused++;
		}
	if (msb_cli.json)
		print_json(cfg, router, o, n, refused, &warnings);
	else
		print_text(cfg, o, n, refused);
	for (size_t i = 0; !msb_cli.json && i < warnings.len; i++)
		msb_cli_warn(NULL, warnings.items[i]);
	for (size_t i = 0; i < n; i++)
		msb_error_clear(&o[i].err);
	free(o);
	msb_router_free(router);
	msb_config_free(cfg);
	msb_cli_warnings_free(&warnings);
	return refused ? MSB_EXIT_FAILED : MSB_EXIT_OK;
}
