/*
 * cmd_mcp.c — `msb mcp --kind K [--kind K2…] --scope S --thread T`: serve the kinds' sandbox
 * surface as MCP tools on stdin/stdout (core/mcp/). The command keeps the plugins loaded and
 * the sandboxes warm for as long as the client keeps the server running.
 *
 * The key is the operator's: --scope/--thread/--agent, or MSB_MCP_SCOPE, MSB_MCP_THREAD and
 * MSB_MCP_AGENT in the environment the MCP client launches the server with. Every kind is
 * checked against its backend before the first message is read, so a misconfigured kind is
 * a refusal the operator sees, never a tool that fails for the model.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "../mcp/mcp.h"
#include "cli.h"

static const char usage[] =
	"usage: msb mcp --kind K [--kind K…] [--scope S --thread T] [--agent A]\n"
	"               [--max-timeout SEC]\n\n"
	"Serve the sandbox surface of each KIND as Model Context Protocol tools on standard\n"
	"input and output (JSON-RPC 2.0, one message per line). The sandbox key comes from the\n"
	"options, or MSB_MCP_SCOPE, MSB_MCP_THREAD and MSB_MCP_AGENT; never from a tool argument.\n"
	"With one kind the tools are exec, run_code, write_file, read_file, list_dir, stat, remove\n"
	"and collect, each listed only when the kind's backend declares it; with several, each\n"
	"name is prefixed with its kind (python_exec). --max-timeout bounds what a call may ask\n"
	"for (default 600 s).\n";

/* A kind becomes part of a tool name: keep it to what tool names allow. */
static bool kind_is_tool_word(const char *k)
{
	if (!*k || strlen(k) > 64)
		return false;
	for (; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') ||
		      *k == '_' || *k == '-'))
			return false;
	return true;
}

int msb_cmd_mcp(int argc, char **argv)
{
	enum { OPT_KIND = 0x2000, OPT_MAX_TIMEOUT };
	static const struct option longopts[] = {
		MSB_CLI_COMMON_LONGOPTS, MSB_CLI_KEY_LONGOPTS,
		{ "kind", required_argument, NULL, OPT_KIND },
		{ "max-timeout", required_argument, NULL, OPT_MAX_TIMEOUT }, { 0 }
	};
	msb_cli_key key = { 0 };
	const char *kinds[64];
	size_t n_kinds = 0;
	double max_timeout = 600;
	msb_error err = MSB_ERROR_INIT;
	for (int c; (c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1;) {
		if (msb_cli_key_option(&key, c, optarg))
			continue;
		if (c == OPT_KIND) {
			if (n_kinds == sizeof kinds / sizeof *kinds)
				return msb_cli_usage_error("at most 64 --kind");
			kinds[n_kinds++] = optarg;
		} else if (c == OPT_MAX_TIMEOUT) {
			if (msb_parse_seconds(optarg, &max_timeout, &err) != MSB_OK || max_timeout <= 0) {
				msb_error_clear(&err);
				return msb_cli_usage_error("--max-timeout: a positive number of seconds");
			}
		} else if (msb_cli_common_option(c, usage) != 1) {
			return msb_cli_usage_error("unknown option");
		}
	}
	if (optind != argc)
		return msb_cli_usage_error("takes no operands (name kinds with --kind)");
	if (n_kinds == 0)
		return msb_cli_usage_error("needs at least one --kind: the server exposes only the "
					   "kinds the operator names");
	if (!key.scope)
		key.scope = getenv("MSB_MCP_SCOPE");
	if (!key.thread)
		key.thread = getenv("MSB_MCP_THREAD");
	if (!key.agent)
		key.agent = getenv("MSB_MCP_AGENT");
	int status = msb_cli_key_check(&key);
	if (status)
		return status;

	msb_mcp_server s = { .max_timeout = max_timeout, .out = stdout };
	msb_mcp_kind table[64];
	if (msb_cli_load(true, NULL, &s.cfg, &err) != MSB_OK ||
	    msb_config_router(s.cfg, &s.router, &err) != MSB_OK) {
		msb_config_free(s.cfg);
		return msb_cli_fail(&err);
	}
	for (size_t i = 0; i < n_kinds; i++) {
		const msb_backend *b = NULL;
		const msb_spec *spec = NULL;
		if (!kind_is_tool_word(kinds[i])) {
			msb_error_set(&err, MSB_E_VALUE, "mcp: kind '%s' cannot name a tool: a kind served "
				      "over MCP is [A-Za-z0-9_-], at most 64 bytes", kinds[i]);
		} else if (msb_config_spec_find(s.cfg, kinds[i], &spec, &err) == MSB_OK &&
			   msb_router_ensure_can_serve(s.router, spec, &b, &err) == MSB_OK) {
			table[i] = (msb_mcp_kind){ kinds[i], spec,
						   msb_backend_declarations(b)->capabilities,
						   msb_backend_name(b), false };
			const struct msb_backend_v27 *ops = msb_backend_ops(b);
			/* A sandbox per call is disposed when the call returns: nothing to come back to. */
			table[i].background = MSB_BACKEND_OP(ops, bg_start) && MSB_BACKEND_OP(ops, bg_read) &&
					      MSB_BACKEND_OP(ops, bg_signal) && MSB_BACKEND_OP(ops, bg_list) &&
					      spec->isolation_scope != MSB_SCOPE_CALL &&
					      msb_config_router_options(s.cfg)->min_isolation_scope != MSB_SCOPE_CALL;
			for (size_t j = 0; j < i; j++)
				if (!strcmp(kinds[j], kinds[i]))
					msb_error_set(&err, MSB_E_VALUE, "mcp: kind '%s' named twice",
						      kinds[i]);
			if (!err.code)
				continue;
		}
		msb_router_free(s.router);
		msb_config_free(s.cfg);
		return msb_cli_fail(&err);
	}
	s.kinds = table;
	s.n_kinds = n_kinds;
	s.key = (msb_key){ key.scope, key.thread, key.agent ? key.agent : "", "" };
	signal(SIGPIPE, SIG_IGN); /* a client that went away is an end of input, not a crash */
	/*
	 * A long-lived host: it keeps the warm pools sandbox.yaml asks for (pool: N) filled in
	 * the background, so a tool call adopts a started sandbox (issue 22). Every 30 s a
	 * failed start is retried; an adoption wakes the filler at once.
	 */
	msb_pool *pool = msb_router_pool(s.router);
	if (pool && msb_pool_start(pool, 30.0, &err) != MSB_OK) {
		fprintf(stderr, "msb: warning: %s; tool calls start cold\n", msb_error_message(&err));
		msb_error_clear(&err);
	}
	status = msb_mcp_serve(&s, stdin);
	msb_router_free(s.router);
	msb_config_free(s.cfg);
	return status;
}
