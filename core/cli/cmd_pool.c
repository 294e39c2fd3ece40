/*
 * cmd_pool.c — `msb pool fill|ls|drain [--json]`: the warm pools sandbox.yaml's `pool: N`
 * asks for (msb/pool.h). fill starts what is missing (and disposes entries of a changed
 * blueprint), ls shows each pooled spec's size and ready count, drain disposes every entry.
 * A long-lived host (msb mcp) refills by itself; fill is for everything else, e.g. cron or
 * a deploy step before the first call.
 */
#include <inttypes.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
	"usage: msb pool fill|ls|drain [--json]\n\n"
	"fill   start the sandboxes each spec's `pool: N` asks for, disposing stale ones\n"
	"ls     each pooled spec: its backend, blueprint, size and ready entries\n"
	"drain  dispose every entry of every pooled spec (current or stale)\n"
	"Exit 0 on success, 1 when a start failed (fill) or no spec has a pool.\n";

static void print_report(const char *verb, const msb_pool_report *r)
{
	if (msb_cli.json)
		printf("{\"started\": %" PRIu64 ", \"stale\": %" PRIu64 ", \"disposed\": %" PRIu64
		       ", \"failed\": %" PRIu64 "}\n", r->started, r->stale, r->disposed, r->failed);
	else if (!strcmp(verb, "fill"))
		printf("started %" PRIu64 ", disposed %" PRIu64 " stale, %" PRIu64 " failed\n",
		       r->started, r->stale, r->failed);
	else
		printf("disposed %" PRIu64 " pool sandbox(es)\n", r->disposed);
}

static int list(msb_pool *pool)
{
	msb_error err = MSB_ERROR_INIT;
	if (msb_cli.json)
		printf("{\"pools\": [");
	for (size_t i = 0; i < msb_pool_count(pool); i++) {
		msb_pool_status st;
		if (msb_pool_status_at(pool, i, &st, &err) != MSB_OK) {
			int status = msb_cli_fail(&err);
			msb_error_clear(&err);
			return status;
		}
		if (msb_cli.json) {
			printf("%s{\"kind\": ", i ? ", " : "");
			msb_json_string(stdout, st.kind);
			printf(", \"backend\": ");
			msb_json_string(stdout, st.backend);
			printf(", \"blueprint\": \"%s\", \"size\": %u, \"ready\": %u}", st.blueprint,
			       st.size, st.ready);
		} else {
			printf("%-16s %-10s %s %u/%u ready\n", st.kind, st.backend, st.blueprint, st.ready,
			       st.size);
		}
	}
	if (msb_cli.json)
		printf("]}\n");
	return MSB_EXIT_OK;
}

int msb_cmd_pool(int argc, char **argv)
{
	static const struct option longopts[] = { MSB_CLI_COMMON_LONGOPTS, { 0 } };
	for (int c; (c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1;)
		if (msb_cli_common_option(c, usage) != 1)
			return msb_cli_usage_error("unknown option");
	if (optind + 1 != argc)
		return msb_cli_usage_error("takes one action: fill, ls or drain");
	const char *verb = argv[optind];
	if (strcmp(verb, "fill") && strcmp(verb, "ls") && strcmp(verb, "drain"))
		return msb_cli_usage_error("the action is fill, ls or drain");
	msb_error err = MSB_ERROR_INIT;
	msb_config *cfg = NULL;
	msb_router *router = NULL;
	int status = MSB_EXIT_OK;
	if (msb_cli_load(true, NULL, &cfg, &err) != MSB_OK || msb_cli_router(cfg, &router, &err) != MSB_OK) {
		status = msb_cli_fail(&err);
		goto out;
	}
	msb_pool *pool = msb_router_pool(router);
	if (!pool) {
		msb_error_set(&err, MSB_E_VALUE, "%s: no spec asks for a pool (pool: N)",
			      msb_config_file(cfg));
		status = msb_cli_fail(&err);
		goto out;
	}
	msb_pool_report r;
	if (!strcmp(verb, "ls")) {
		status = list(pool);
	} else if (!strcmp(verb, "fill")) {
		msb_errc rc = msb_pool_fill(pool, &r, &err);
		/* Under --json one object: the report, or the error (its counts said in text). */
		if (rc == MSB_OK || !msb_cli.json)
			print_report(verb, &r);
		if (rc != MSB_OK)
			status = msb_cli_fail(&err);
	} else {
		msb_errc rc = msb_pool_drain(pool, &r, &err);
		if (rc == MSB_OK || !msb_cli.json)
			print_report(verb, &r);
		if (rc != MSB_OK)
			status = msb_cli_fail(&err);
	}
out:
	msb_error_clear(&err);
	msb_router_free(router);
	msb_config_free(cfg);
	return status;
}
