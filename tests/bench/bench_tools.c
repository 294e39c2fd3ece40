/*
 * bench_tools.c — what the tool-call layer costs a host per call.
 *
 *   a host-tool call through the one door (call cap, name lookup, argument check against the
 *   declared signature, ledger, libffi call, HostToolCalled skipped: no observer)
 *     baseline: the same C function called directly, same arguments, same response buffer
 *   a tool-session call on the inprocess fake (key read, getrandom call id, warm acquire,
 *   body, reclaim of the call path, ToolCallEnded skipped: no observer)
 *     baseline: a warm msb_router_acquire + release of the same key and spec
 *
 * Median of 7 rounds; ns per call.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <msb/config.h>
#include <msb/msb.h>

#include "bench_stats.h"
#include "msb_test.h"

#define ROUNDS 7

static void die(const char *what, msb_error *err)
{
	fprintf(stderr, "bench_tools: %s: %s\n", what, msb_error_message(err));
	exit(1);
}

static int lookup(const char *sku, int64_t qty, msb_buf *out, msb_error *err)
{
	char text[64];
	int n = snprintf(text, sizeof text, "%s x%lld", sku, (long long)qty);
	return (int)msb_buf_append(out, text, (size_t)n, err);
}

static double bench_direct(long n)
{
	msb_error err = MSB_ERROR_INIT;
	double t = bench_now_ns();
	for (long i = 0; i < n; i++) {
		msb_buf out = { 0 };
		if (lookup("A-17", i, &out, &err))
			die("lookup", &err);
		msb_buf_free(&out);
	}
	return (bench_now_ns() - t) / (double)n;
}

static double bench_door(msb_host_tools *reg, long n)
{
	msb_error err = MSB_ERROR_INIT;
	msb_host_tool_run *run = NULL;
	if (msb_host_tool_run_new(reg, NULL, NULL, &run, &err))
		die("run", &err);
	double t = bench_now_ns();
	for (long i = 0; i < n; i++) {
		const msb_host_tool_arg args[] = { { "sku", MSB_ARG_STRING, { .s = "A-17" } },
						   { "qty", MSB_ARG_INT64, { .i = i } } };
		msb_host_tool_result r = { 0 };
		if (msb_host_tool_run_call(run, "lookup", args, 2, &r, &err) || r.code)
			die("door", &err);
		msb_host_tool_result_free(&r);
	}
	double per = (bench_now_ns() - t) / (double)n;
	msb_host_tool_run_free(run);
	return per;
}

static double bench_acquire(msb_router *r, const msb_spec *spec, long n)
{
	msb_error err = MSB_ERROR_INIT;
	msb_key key = { "bench", "t1", "", "" };
	double t = bench_now_ns();
	for (long i = 0; i < n; i++) {
		msb_sandbox *sb = NULL;
		if (msb_router_acquire(r, &key, spec, &sb, &err))
			die("acquire", &err);
		msb_sandbox_release(sb);
	}
	return (bench_now_ns() - t) / (double)n;
}

static msb_errc body(void *ctx, msb_sandbox *sb, const char *path, const char *call_id,
		     msb_buf *answer, msb_error *err)
{
	(void)ctx, (void)sb, (void)path, (void)call_id;
	return msb_buf_append(answer, "ok", 2, err);
}

static double bench_session(msb_tool_session *s, long n)
{
	msb_error err = MSB_ERROR_INIT;
	double t = bench_now_ns();
	for (long i = 0; i < n; i++) {
		msb_tool_answer a = { 0 };
		if (msb_tool_session_call(s, body, NULL, &a, &err) || a.refusal)
			die("session call", &err);
		msb_tool_answer_free(&a);
	}
	return (bench_now_ns() - t) / (double)n;
}

static const char *scope_of(void *ctx)
{
	(void)ctx;
	return "bench";
}

static const char *thread_of(void *ctx)
{
	(void)ctx;
	return "t1";
}

int main(void)
{
	msb_error err = MSB_ERROR_INIT;
	/* The registry, one tool, the call cap out of the way. */
	msb_host_tools_options ho = MSB_HOST_TOOLS_OPTIONS_INIT;
	ho.max_calls_per_run = UINT64_MAX;
	ho.response_limits = (msb_transfer_limits){ UINT64_MAX, UINT64_MAX, UINT64_MAX };
	ho.log = NULL;
	static const msb_host_tool_param params[] = { { "sku", MSB_ARG_STRING }, { "qty", MSB_ARG_INT64 } };
	static const msb_host_tool_declaration decl = { MSB_FLOW_SOURCE_TRUSTED, MSB_FLOW_SINK_NONE, NULL,
							MSB_FLOW_IDENTITY_APP };
	msb_host_tool t = MSB_HOST_TOOL_INIT;
	t.name = "lookup";
	t.fn = MSB_HOST_TOOL_FN(lookup);
	t.params = params;
	t.n_params = 2;
	t.declaration = &decl;
	msb_host_tools *reg = NULL;
	if (msb_host_tools_new(&ho, &reg, &err) || msb_host_tools_register(reg, &t, &err))
		die("registry", &err);

	/* The inprocess fake behind a router and a session. */
	msb_loader *loader = NULL;
	const msb_plugin *plugin = NULL;
	msb_backend *backend = NULL;
	msb_host host;
	msb_host_init(&host, NULL);
	if (msb_loader_new(&loader, &err) ||
	    msb_loader_load(loader, MSB_TEST_MODULE("plugins/inprocess", "inprocess"), &plugin, &err) ||
	    msb_backend_open(plugin, NULL, NULL, &host, &backend, &err))
		die("inprocess", &err);
	msb_router_options ro = MSB_ROUTER_OPTIONS_INIT;
	ro.min_isolation = MSB_ISO_NONE;
	msb_router *router = NULL;
	if (msb_router_new(&backend, 1, &ro, &router, &err))
		die("router", &err);
	msb_spec spec;
	msb_spec_init(&spec, "bench");
	msb_caller_context caller = { sizeof caller, NULL, scope_of, thread_of, NULL };
	msb_tool_options to = MSB_TOOL_OPTIONS_INIT;
	to.name = "bench_tool";
	msb_tool_session *session = NULL;
	if (msb_tool_session_new(router, &caller, &spec, &to, &session, &err))
		die("session", &err);

	const long calls = 200000, sessions = 50000;
	double direct[ROUNDS], door[ROUNDS], acquire[ROUNDS], call[ROUNDS];
	for (int r = 0; r < ROUNDS; r++) {
		direct[r] = bench_direct(calls);
		door[r] = bench_door(reg, calls);
		acquire[r] = bench_acquire(router, &spec, sessions);
		call[r] = bench_session(session, sessions);
	}
	double d = bench_median(direct, ROUNDS), h = bench_median(door, ROUNDS);
	double a = bench_median(acquire, ROUNDS), c = bench_median(call, ROUNDS);
	printf("host-tool call: direct %.1f ns, through the door %.1f ns (%.1fx)\n", d, h, h / d);
	printf("tool-session call: warm acquire %.1f ns, session call %.1f ns (%.1fx)\n", a, c, c / a);

	msb_tool_session_free(session);
	msb_router_free(router);
	msb_backend_close(backend);
	msb_loader_free(loader);
	msb_host_tools_free(reg);
	return 0;
}
