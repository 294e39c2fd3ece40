/*
 * test_host_tools.c — the host-tool registry and its one door: empty at birth, every
 * registration refusal by its seed name, the declaration captured once, the aggregate that
 * seals, ordinary C functions called through libffi by their declared signature, the
 * argument check, the call cap (refusals count), the response caps, USER authority only
 * where a host mints it, a tool's failure kept out of the guest's sentence, and
 * HostToolCalled.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <msb/msb.h>

/* ---- tools: ordinary C functions ---------------------------------------------------- */

static _Atomic int tool_runs; /* tools run on the racing test's threads too */

static int lookup(const char *sku, int64_t qty, msb_buf *out, msb_error *err)
{
	tool_runs++;
	char text[128];
	int n = snprintf(text, sizeof text, "%s x%lld", sku, (long long)qty);
	return (int)msb_buf_append(out, text, (size_t)n, err);
}

static int scale(double factor, bool round_up, int64_t base, msb_buf *out, msb_error *err)
{
	tool_runs++;
	double v = factor * (double)base;
	char text[64];
	int n = snprintf(text, sizeof text, "%.2f %s", round_up ? ceil(v) : v, round_up ? "up" : "exact");
	return (int)msb_buf_append(out, text, (size_t)n, err);
}

static int echo(const char *text, msb_buf *out, msb_error *err)
{
	tool_runs++;
	return (int)msb_buf_append(out, text, strlen(text), err);
}

static int broken(msb_buf *out, msb_error *err)
{
	tool_runs++;
	msb_buf_append(out, "partial", 7, NULL);
	return (int)msb_error_set(err, MSB_E_BACKEND, "db at 10.0.0.7:5432 refused the login for svc-app");
}

static int whoami(const char *greeting, const char *user_identity, msb_buf *out, msb_error *err)
{
	tool_runs++;
	char text[128];
	int n = snprintf(text, sizeof text, "%s, %s", greeting, user_identity);
	return (int)msb_buf_append(out, text, (size_t)n, err);
}

static const msb_host_tool_param LOOKUP_PARAMS[] = { { "sku", MSB_ARG_STRING }, { "qty", MSB_ARG_INT64 } };
static const msb_host_tool_param SCALE_PARAMS[] = {
	{ "factor", MSB_ARG_DOUBLE }, { "round_up", MSB_ARG_BOOL }, { "base", MSB_ARG_INT64 }
};
static const msb_host_tool_param ECHO_PARAMS[] = { { "text", MSB_ARG_STRING } };
static const msb_host_tool_param WHOAMI_PARAMS[] = { { "greeting", MSB_ARG_STRING } };

static const msb_host_tool_declaration TRUSTED_APP = { MSB_FLOW_SOURCE_TRUSTED, MSB_FLOW_SINK_NONE, NULL,
							MSB_FLOW_IDENTITY_APP };
static const msb_host_tool_declaration PURE = { MSB_FLOW_SOURCE_NONE, MSB_FLOW_SINK_NONE, NULL,
						 MSB_FLOW_IDENTITY_NONE };

static msb_host_tool tool_of(const char *name, msb_host_tool_fn fn, const msb_host_tool_param *params,
			     size_t n, const msb_host_tool_declaration *decl)
{
	msb_host_tool t = MSB_HOST_TOOL_INIT;
	t.name = name;
	t.fn = fn;
	t.params = params;
	t.n_params = n;
	t.declaration = decl;
	return t;
}

#define LOOKUP(decl) tool_of("lookup", MSB_HOST_TOOL_FN(lookup), LOOKUP_PARAMS, 2, (decl))

/* ---- the host's side: a log and a recorder ---------------------------------------- */

struct seen {
	char log[4096];
	int events;
	char tool[200], sink[64], outcome[16], refusal[600], call[64], thread[64];
	int identity;
	uint64_t bytes;
	int mints;
	bool mint_fails;
};

static void host_log(void *ctx, const char *line)
{
	struct seen *s = ctx;
	size_t used = strlen(s->log);
	snprintf(s->log + used, sizeof s->log - used, "%s\n", line);
}

static int on_called(void *ctx, const msb_host_tool_called *e)
{
	struct seen *s = ctx;
	s->events++;
	snprintf(s->tool, sizeof s->tool, "%s", e->tool ? e->tool : "(null)");
	snprintf(s->sink, sizeof s->sink, "%s", e->sink ? e->sink : "(null)");
	snprintf(s->outcome, sizeof s->outcome, "%s", e->outcome);
	snprintf(s->refusal, sizeof s->refusal, "%s", e->refusal ? e->refusal : "(null)");
	snprintf(s->call, sizeof s->call, "%s", e->call ? e->call : "(null)");
	snprintf(s->thread, sizeof s->thread, "%s", e->key ? e->key->thread_id : "(null)");
	s->identity = e->identity;
	s->bytes = e->response_bytes;
	return 0;
}

static msb_errc mint(void *ctx, const msb_key *key, const char *call, msb_buf *identity, msb_error *err)
{
	struct seen *s = ctx;
	(void)call;
	s->mints++;
	if (s->mint_fails)
		return msb_error_set(err, MSB_E_PERMISSION, "token service said no");
	char text[64];
	int n = snprintf(text, sizeof text, "user-of-%s", key ? key->thread_id : "?");
	return msb_buf_append(identity, text, (size_t)n, err);
}

static msb_observer observer_for(struct seen *s)
{
	msb_observer o = MSB_OBSERVER_INIT;
	o.ctx = s;
	o.host_tool_called = on_called;
	return o;
}

static msb_host_tools_options options_for(struct seen *s, const msb_observer *o)
{
	msb_host_tools_options opt = MSB_HOST_TOOLS_OPTIONS_INIT;
	opt.observer = o;
	opt.log = host_log;
	opt.log_ctx = s;
	return opt;
}

static msb_host_tools *registry(const msb_host_tools_options *opt)
{
	msb_host_tools *reg = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (msb_host_tools_new(opt, &reg, &err))
		fail_msg("registry: %s", msb_error_message(&err));
	return reg;
}

static void must_register(msb_host_tools *reg, msb_host_tool t)
{
	msb_error err = MSB_ERROR_INIT;
	if (msb_host_tools_register(reg, &t, &err))
		fail_msg("register %s: %s", t.name, msb_error_message(&err));
}

#define assert_refused(err, rc, expected, ...)                                                      \
	assert_refused_impl((err), (rc), (expected), (const char *const[]){ __VA_ARGS__, NULL }, \
			    __LINE__)
static void assert_refused_impl(msb_error *err, msb_errc rc, msb_errc expected, const char *const *words,
				int line)
{
	if (rc != expected || err->code != expected)
		fail_msg("line %d: expected %s, got %s: %s", line, msb_errc_name(expected), msb_errc_name(rc),
			 msb_error_message(err));
	for (size_t i = 0; words[i]; i++)
		if (!strstr(msb_error_message(err), words[i]))
			fail_msg("line %d: message lacks \"%s\": %s", line, words[i], msb_error_message(err));
	msb_error_clear(err);
}

/* A guest's call; returns the result (freed by the caller). */
static msb_host_tool_result call(msb_host_tool_run *run, const char *name, const msb_host_tool_arg *args,
				 size_t n)
{
	msb_host_tool_result r = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_host_tool_run_call(run, name, args, n, &r, &err), MSB_OK);
	return r;
}

static void assert_guest_refused(msb_host_tool_result *r, msb_errc code, const char *words)
{
	if (r->code != code || !r->refusal || !strstr(r->refusal, words))
		fail_msg("expected a %s refusal with \"%s\", got %s: %s", msb_errc_name(code), words,
			 msb_errc_name(r->code), r->refusal ? r->refusal : "(served)");
	msb_host_tool_result_free(r);
}

#define STR(n, val) { n, MSB_ARG_STRING, { .s = (val) } }
#define INT(n, val) { n, MSB_ARG_INT64, { .i = (val) } }
#define DBL(n, val) { n, MSB_ARG_DOUBLE, { .d = (val) } }
#define BOOL(n, val) { n, MSB_ARG_BOOL, { .b = (val) } }

/* ---- tests -------------------------------------------------------------------------- */

static void starts_empty_and_nothing_is_callable(void **state)
{
	(void)state;
	struct seen s = { 0 };
	msb_host_tools_options opt = options_for(&s, NULL);
	msb_host_tools *reg = registry(&opt);
	assert_int_equal(msb_host_tools_count(reg), 0);
	msb_host_tool_run *run = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_host_tool_run_new(reg, NULL, NULL, &run, &err), MSB_OK);
	msb_host_tool_result r = call(run, "lookup", NULL, 0);
	assert_guest_refused(&r, MSB_E_VALUE, "'lookup' is not a registered host tool");
	assert_string_equal(s.log, ""); /* no registration, no notice */
	msb_host_tool_run_free(run);
	msb_host_tools_free(reg);
}

static void construction_refusals(void **state)
{
	(void)state;
	msb_host_tools *reg = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_host_tools_options opt = MSB_HOST_TOOLS_OPTIONS_INIT;
	assert_int_equal(opt.max_calls_per_run, 16); /* the seed's DEFAULT_MAX_HOST_TOOL_CALLS_PER_RUN */
	opt.max_calls_per_run = 0;
	assert_refused(&err, msb_host_tools_new(&opt, &reg, &err), MSB_E_VALUE, "max_calls_per_run",
		       "empty registry");
	opt.max_calls_per_run = 4;
	opt.response_limits.max_total_bytes = 0;
	assert_refused(&err, msb_host_tools_new(&opt, &reg, &err), MSB_E_VALUE,
		       "response_limits.max_total_bytes is 0");
	opt.response_limits = (msb_transfer_limits)MSB_DEFAULT_TRANSFER_LIMITS;
	opt.allowed_identities = MSB_BIT(MSB_IDENTITY__COUNT);
	assert_refused(&err, msb_host_tools_new(&opt, &reg, &err), MSB_E_VALUE, "allowed_identities",
		       "outside the identity axis");
	opt.allowed_identities = MSB_BIT(MSB_IDENTITY_APP);
	opt.struct_size = 8;
	assert_refused(&err, msb_host_tools_new(&opt, &reg, &err), MSB_E_VALUE, "struct_size",
		       "MSB_HOST_TOOLS_OPTIONS_INIT");
	assert_refused(&err, msb_host_tools_new(NULL, &reg, &err), MSB_E_VALUE, "options missing");
	assert_null(reg);
}

static void registration_refusals(void **state)
{
	(void)state;
	struct seen s = { 0 };
	msb_host_tools_options opt = options_for(&s, NULL);
	opt.require_declared = true;
	msb_host_tools *reg = registry(&opt);
	msb_error err = MSB_ERROR_INIT;

	msb_host_tool t = LOOKUP(NULL);
	assert_refused(&err, msb_host_tools_register(reg, &t, &err), MSB_E_HOST_TOOL_NOT_DECLARED,
		       "'lookup'", "require_declared", "none is an answer");
	/* A partial answer is no declaration at all. */
	msb_host_tool_declaration partial = TRUSTED_APP;
	partial.sink = MSB_FLOW_SINK_UNANSWERED;
	t = LOOKUP(&partial);
	assert_refused(&err, msb_host_tools_register(reg, &t, &err), MSB_E_HOST_TOOL_NOT_DECLARED, "'lookup'");
	partial = TRUSTED_APP;
	partial.sink = MSB_FLOW_SINK_CAPPED; /* capped, and no cap named */
	t = LOOKUP(&partial);
	assert_refused(&err, msb_host_tools_register(reg, &t, &err), MSB_E_HOST_TOOL_NOT_DECLARED, "'lookup'");

	msb_host_tool_declaration user = TRUSTED_APP;
	user.identity = MSB_FLOW_IDENTITY_USER;
	t = LOOKUP(&user);
	assert_refused(&err, msb_host_tools_register(reg, &t, &err), MSB_E_HOST_TOOL_IDENTITY_NOT_ALLOWED,
		       "'lookup'", "'user' authority", "allowed_identities: {app}");

	t = tool_of("no fn", MSB_HOST_TOOL_FN(lookup), LOOKUP_PARAMS, 2, &TRUSTED_APP);
	assert_refused(&err, msb_host_tools_register(reg, &t, &err), MSB_E_VALUE, "'no fn'", "[A-Za-z0-9_.-]");
	t = tool_of("nofn", NULL, NULL, 0, &TRUSTED_APP);
	assert_refused(&err, msb_host_tools_register(reg, &t, &err), MSB_E_VALUE, "'nofn'", "no function");
	const msb_host_tool_param untyped[] = { { "sku", 0 } };
	t = tool_of("untyped", MSB_HOST_TOOL_FN(echo), untyped, 1, &TRUSTED_APP);
	assert_refused(&err, msb_host_tools_register(reg, &t, &err), MSB_E_VALUE, "'untyped'", "'sku'",
		       "no type");
	const msb_host_tool_param twice[] = { { "a", MSB_ARG_STRING }, { "a", MSB_ARG_INT64 } };
	t = tool_of("twice", MSB_HOST_TOOL_FN(lookup), twice, 2, &TRUSTED_APP);
	assert_refused(&err, msb_host_tools_register(reg, &t, &err), MSB_E_VALUE, "'a' is declared twice");
	t = tool_of("many", MSB_HOST_TOOL_FN(lookup), LOOKUP_PARAMS, MSB_HOST_TOOL_MAX_PARAMS + 1, &TRUSTED_APP);
	assert_refused(&err, msb_host_tools_register(reg, &t, &err), MSB_E_VALUE, "'many'", "at most 16");
	t = tool_of("nolist", MSB_HOST_TOOL_FN(lookup), NULL, 2, &TRUSTED_APP);
	assert_refused(&err, msb_host_tools_register(reg, &t, &err), MSB_E_VALUE, "'nolist'",
		       "gives no list");
	const msb_host_tool_param unnamed[] = { { "", MSB_ARG_STRING } };
	t = tool_of("unnamed", MSB_HOST_TOOL_FN(echo), unnamed, 1, &TRUSTED_APP);
	assert_refused(&err, msb_host_tools_register(reg, &t, &err), MSB_E_VALUE, "'unnamed'",
		       "parameter 1 has no usable name");
	t = LOOKUP(&TRUSTED_APP);
	t.struct_size = 4;
	assert_refused(&err, msb_host_tools_register(reg, &t, &err), MSB_E_VALUE, "struct_size",
		       "MSB_HOST_TOOL_INIT");
	char long_name[MSB_HOST_TOOL_MAX_NAME + 2];
	memset(long_name, 'n', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = '\0';
	t = tool_of(long_name, MSB_HOST_TOOL_FN(echo), ECHO_PARAMS, 1, &TRUSTED_APP);
	assert_refused(&err, msb_host_tools_register(reg, &t, &err), MSB_E_VALUE, "1-64 characters");

	must_register(reg, LOOKUP(&TRUSTED_APP));
	t = LOOKUP(&PURE);
	assert_refused(&err, msb_host_tools_register(reg, &t, &err), MSB_E_VALUE, "'lookup' is already registered",
		       "refused rather than replaced");
	assert_int_equal(msb_host_tools_count(reg), 1);
	assert_non_null(strstr(s.log, "host process with the host's authority"));
	msb_host_tools_free(reg);
}

static void undeclared_reads_as_app_and_none_is_always_allowed(void **state)
{
	(void)state;
	struct seen s = { 0 };
	msb_host_tools_options opt = options_for(&s, NULL);
	opt.allowed_identities = 0; /* a registry that allows no authority at all */
	msb_host_tools *reg = registry(&opt);
	msb_error err = MSB_ERROR_INIT;
	msb_host_tool t = LOOKUP(NULL);
	assert_refused(&err, msb_host_tools_register(reg, &t, &err), MSB_E_HOST_TOOL_IDENTITY_NOT_ALLOWED,
		       "'app' authority (undeclared, read as 'app')");
	t = LOOKUP(&TRUSTED_APP);
	assert_refused(&err, msb_host_tools_register(reg, &t, &err), MSB_E_HOST_TOOL_IDENTITY_NOT_ALLOWED,
		       "'app' authority, which");
	must_register(reg, LOOKUP(&PURE));
	assert_int_equal(msb_host_tools_count(reg), 1);
	msb_host_tools_free(reg);
}

static void declaration_is_captured_at_registration(void **state)
{
	(void)state;
	struct seen s = { 0 };
	msb_host_tools_options opt = options_for(&s, NULL);
	msb_host_tools *reg = registry(&opt);
	char cap[16] = "internal";
	msb_host_tool_declaration d = { MSB_FLOW_SOURCE_TRUSTED, MSB_FLOW_SINK_CAPPED, cap, MSB_FLOW_IDENTITY_APP };
	must_register(reg, LOOKUP(&d));
	/* The host swaps its stamp afterwards: nothing reads it again. */
	d.source = MSB_FLOW_SOURCE_UNTRUSTED;
	d.identity = MSB_FLOW_IDENTITY_USER;
	strcpy(cap, "public");
	const msb_host_tool_declaration *got = msb_host_tools_declaration(reg, "lookup");
	assert_non_null(got);
	assert_int_equal(got->source, MSB_FLOW_SOURCE_TRUSTED);
	assert_int_equal(got->identity, MSB_FLOW_IDENTITY_APP);
	assert_string_equal(got->sink_cap, "internal");
	msb_host_tools_aggregate a;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_host_tools_aggregate_seal(reg, &a, &err), MSB_OK);
	assert_int_equal(a.result_integrity, MSB_FLOW_SOURCE_TRUSTED);
	assert_int_equal(a.identities, MSB_BIT(MSB_IDENTITY_APP));
	assert_string_equal(a.outbound_caps[0], "internal");
	assert_null(a.outbound_caps[1]);
	msb_host_tools_free(reg);
}

static void aggregate_derives_policy_and_seals(void **state)
{
	(void)state;
	struct seen s = { 0 };
	msb_host_tools_options opt = options_for(&s, NULL);
	opt.allowed_identities = MSB_BIT(MSB_IDENTITY_APP) | MSB_BIT(MSB_IDENTITY_USER);
	msb_host_tools *reg = registry(&opt);
	msb_host_tools_aggregate a;
	msb_error err = MSB_ERROR_INIT;

	msb_host_tools *pure_only = registry(&opt);
	must_register(pure_only, LOOKUP(&PURE));
	assert_int_equal(msb_host_tools_aggregate_seal(pure_only, &a, &err), MSB_OK);
	assert_int_equal(a.result_integrity, MSB_FLOW_SOURCE_NONE); /* no source: no opinion */
	assert_false(a.requires_approval);
	assert_int_equal(a.identities, 0);
	msb_host_tools_free(pure_only);

	msb_host_tool_declaration sink_a = { MSB_FLOW_SOURCE_NONE, MSB_FLOW_SINK_CAPPED, "secret", MSB_FLOW_IDENTITY_APP };
	msb_host_tool_declaration sink_b = { MSB_FLOW_SOURCE_TRUSTED, MSB_FLOW_SINK_CAPPED, "secret", MSB_FLOW_IDENTITY_NONE };
	msb_host_tool_declaration untrusted_user = { MSB_FLOW_SOURCE_UNTRUSTED, MSB_FLOW_SINK_CAPPED, "public",
						     MSB_FLOW_IDENTITY_USER };
	must_register(reg, tool_of("a", MSB_HOST_TOOL_FN(echo), ECHO_PARAMS, 1, &sink_a));
	must_register(reg, tool_of("b", MSB_HOST_TOOL_FN(echo), ECHO_PARAMS, 1, &sink_b));
	assert_int_equal(msb_host_tools_aggregate_seal(reg, &a, &err), MSB_OK);
	assert_int_equal(a.result_integrity, MSB_FLOW_SOURCE_TRUSTED); /* a sink-only tool does not drag it */
	assert_false(a.has_undeclared);
	assert_true(msb_host_tools_sealed(reg));

	msb_host_tool t = tool_of("c", MSB_HOST_TOOL_FN(whoami), WHOAMI_PARAMS, 1, &untrusted_user);
	assert_refused(&err, msb_host_tools_register(reg, &t, &err), MSB_E_VALUE, "'c' cannot be registered",
		       "sealed");
	assert_int_equal(msb_host_tools_count(reg), 2);
	msb_host_tools_free(reg);

	/* Weakest source, every distinct cap, user authority raising approval, undeclared flagged. */
	reg = registry(&opt);
	must_register(reg, tool_of("a", MSB_HOST_TOOL_FN(echo), ECHO_PARAMS, 1, &sink_a));
	must_register(reg, tool_of("b", MSB_HOST_TOOL_FN(echo), ECHO_PARAMS, 1, &sink_b));
	must_register(reg, tool_of("c", MSB_HOST_TOOL_FN(whoami), WHOAMI_PARAMS, 1, &untrusted_user));
	must_register(reg, tool_of("d", MSB_HOST_TOOL_FN(echo), ECHO_PARAMS, 1, NULL));
	assert_int_equal(msb_host_tools_aggregate_seal(reg, &a, &err), MSB_OK);
	assert_int_equal(a.result_integrity, MSB_FLOW_SOURCE_UNTRUSTED);
	assert_string_equal(a.outbound_caps[0], "secret");
	assert_string_equal(a.outbound_caps[1], "public");
	assert_null(a.outbound_caps[2]);
	assert_int_equal(a.identities, MSB_BIT(MSB_IDENTITY_APP) | MSB_BIT(MSB_IDENTITY_USER));
	assert_true(a.requires_approval);
	assert_true(a.has_undeclared);
	msb_host_tools_free(reg);
}

static void calls_ordinary_c_functions_through_libffi(void **state)
{
	(void)state;
	struct seen s = { 0 };
	msb_host_tools_options opt = options_for(&s, NULL);
	msb_host_tools *reg = registry(&opt);
	must_register(reg, LOOKUP(&TRUSTED_APP));
	must_register(reg, tool_of("scale", MSB_HOST_TOOL_FN(scale), SCALE_PARAMS, 3, &PURE));
	msb_host_tool_run *run = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_host_tool_run_new(reg, NULL, NULL, &run, &err), MSB_OK);

	/* Named arguments in any order reach the function in its own. */
	const msb_host_tool_arg args[] = { INT("qty", 3), STR("sku", "A-17") };
	msb_host_tool_result r = call(run, "lookup", args, 2);
	assert_int_equal(r.code, MSB_OK);
	assert_null(r.refusal);
	assert_string_equal((char *)r.response.data, "A-17 x3");
	msb_host_tool_result_free(&r);

	const msb_host_tool_arg sargs[] = { DBL("factor", 1.5), BOOL("round_up", true), INT("base", 3) };
	r = call(run, "scale", sargs, 3);
	assert_string_equal((char *)r.response.data, "5.00 up");
	msb_host_tool_result_free(&r);
	/* An integer for a double: JSON cannot tell 2 from 2.0. */
	const msb_host_tool_arg iargs[] = { INT("factor", 2), BOOL("round_up", false), INT("base", -4) };
	r = call(run, "scale", iargs, 3);
	assert_string_equal((char *)r.response.data, "-8.00 exact");
	msb_host_tool_result_free(&r);
	uint64_t calls, delivered, bytes;
	msb_host_tool_run_ledger(run, &calls, &delivered, &bytes);
	assert_int_equal(calls, 3);
	assert_int_equal(delivered, 3);
	assert_int_equal(bytes, strlen("A-17 x3") + strlen("5.00 up") + strlen("-8.00 exact"));
	msb_host_tool_run_free(run);
	msb_host_tools_free(reg);
}

static void arguments_are_checked_at_the_door(void **state)
{
	(void)state;
	struct seen s = { 0 };
	msb_host_tools_options opt = options_for(&s, NULL);
	opt.max_calls_per_run = 100;
	msb_host_tools *reg = registry(&opt);
	must_register(reg, LOOKUP(&TRUSTED_APP));
	must_register(reg, tool_of("scale", MSB_HOST_TOOL_FN(scale), SCALE_PARAMS, 3, &PURE));
	msb_host_tool_run *run = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_host_tool_run_new(reg, NULL, NULL, &run, &err), MSB_OK);
	tool_runs = 0;

	const msb_host_tool_arg extra[] = { STR("sku", "a"), INT("qty", 1), STR("path", "/etc/passwd") };
	msb_host_tool_result r = call(run, "lookup", extra, 3);
	assert_guest_refused(&r, MSB_E_TYPE, "'lookup' takes no argument 'path'");
	const msb_host_tool_arg missing[] = { STR("sku", "a") };
	r = call(run, "lookup", missing, 1);
	assert_guest_refused(&r, MSB_E_TYPE, "needs argument 'qty' (int64)");
	const msb_host_tool_arg wrong[] = { STR("sku", "a"), STR("qty", "1") };
	r = call(run, "lookup", wrong, 2);
	assert_guest_refused(&r, MSB_E_TYPE, "'qty' of host tool 'lookup' must be an int64, not string");
	const msb_host_tool_arg dup[] = { STR("sku", "a"), INT("qty", 1), INT("qty", 2) };
	r = call(run, "lookup", dup, 3);
	assert_guest_refused(&r, MSB_E_TYPE, "'qty' of host tool 'lookup' was given twice");
	const msb_host_tool_arg nan[] = { DBL("factor", NAN), BOOL("round_up", true), INT("base", 1) };
	r = call(run, "scale", nan, 3);
	assert_guest_refused(&r, MSB_E_TYPE, "must be a finite double, not a non-finite number");
	const msb_host_tool_arg dbl_for_int[] = { DBL("factor", 1), BOOL("round_up", true), DBL("base", 1.5) };
	r = call(run, "scale", dbl_for_int, 3);
	assert_guest_refused(&r, MSB_E_TYPE, "'base' of host tool 'scale' must be an int64, not double");
	const msb_host_tool_arg bad_utf8[] = { STR("sku", "\xff\xfe"), INT("qty", 1) };
	r = call(run, "lookup", bad_utf8, 2);
	assert_guest_refused(&r, MSB_E_VALUE, "'sku' of host tool 'lookup' must be valid UTF-8");
	const msb_host_tool_arg null_str[] = { STR("sku", NULL), INT("qty", 1) };
	r = call(run, "lookup", null_str, 2);
	assert_guest_refused(&r, MSB_E_VALUE, "valid UTF-8");
	assert_int_equal(tool_runs, 0); /* nothing ran */

	/* Guest text is quoted back bounded, with its control bytes replaced. */
	char name[400];
	memset(name, 'x', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	name[3] = '\n';
	r = call(run, name, NULL, 0);
	assert_int_equal(r.code, MSB_E_VALUE);
	assert_non_null(strstr(r.refusal, "'xxx?xxx"));
	assert_non_null(strstr(r.refusal, "(truncated)"));
	assert_null(strchr(r.refusal, '\n'));
	assert_true(strlen(r.refusal) < 200);
	msb_host_tool_result_free(&r);
	msb_host_tool_run_free(run);
	msb_host_tools_free(reg);
}

static void call_cap_counts_refusals(void **state)
{
	(void)state;
	struct seen s = { 0 };
	msb_observer o = observer_for(&s);
	msb_host_tools_options opt = options_for(&s, &o);
	opt.max_calls_per_run = 3;
	msb_host_tools *reg = registry(&opt);
	must_register(reg, LOOKUP(&TRUSTED_APP));
	msb_host_tool_run *run = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_host_tool_run_new(reg, NULL, NULL, &run, &err), MSB_OK);
	const msb_host_tool_arg ok[] = { STR("sku", "a"), INT("qty", 1) };
	msb_host_tool_result r = call(run, "probe1", NULL, 0);
	assert_guest_refused(&r, MSB_E_VALUE, "not a registered host tool");
	r = call(run, "probe2", NULL, 0);
	assert_guest_refused(&r, MSB_E_VALUE, "not a registered host tool");
	r = call(run, "lookup", ok, 2);
	assert_int_equal(r.code, MSB_OK);
	msb_host_tool_result_free(&r);
	tool_runs = 0;
	r = call(run, "lookup", ok, 2);
	assert_guest_refused(&r, MSB_E_VALUE, "host-tool call cap (3) is exhausted");
	assert_int_equal(tool_runs, 0);
	assert_string_equal(s.outcome, "capped");
	msb_host_tool_run_free(run);

	/* A fresh run starts with a fresh count. */
	assert_int_equal(msb_host_tool_run_new(reg, NULL, NULL, &run, &err), MSB_OK);
	r = call(run, "lookup", ok, 2);
	assert_int_equal(r.code, MSB_OK);
	msb_host_tool_result_free(&r);
	msb_host_tool_run_free(run);
	msb_host_tools_free(reg);
}

static void response_caps_reuse_transfer_limits(void **state)
{
	(void)state;
	struct seen s = { 0 };
	msb_observer o = observer_for(&s);
	msb_host_tools_options opt = options_for(&s, &o);
	opt.response_limits = (msb_transfer_limits){ .max_bytes_per_file = 4, .max_total_bytes = 6, .max_files = 2 };
	msb_host_tools *reg = registry(&opt);
	must_register(reg, tool_of("echo", MSB_HOST_TOOL_FN(echo), ECHO_PARAMS, 1, &PURE));
	msb_host_tool_run *run = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_host_tool_run_new(reg, NULL, NULL, &run, &err), MSB_OK);
	tool_runs = 0;

	const msb_host_tool_arg big[] = { STR("text", "12345") };
	msb_host_tool_result r = call(run, "echo", big, 1);
	assert_guest_refused(&r, MSB_E_TRANSFER_CAP_EXCEEDED, "'echo''s response is 5 bytes and the per-response cap allows 4");
	assert_int_equal(tool_runs, 1); /* only its size could tell */
	assert_string_equal(s.outcome, "capped");
	const msb_host_tool_arg four[] = { STR("text", "1234") };
	r = call(run, "echo", four, 1);
	assert_int_equal(r.code, MSB_OK);
	assert_int_equal(s.bytes, 4);
	msb_host_tool_result_free(&r);
	r = call(run, "echo", four, 1);
	assert_guest_refused(&r, MSB_E_TRANSFER_CAP_EXCEEDED, "would exceed this run's total response cap (6 bytes)");
	const msb_host_tool_arg two[] = { STR("text", "12") };
	r = call(run, "echo", two, 1);
	assert_int_equal(r.code, MSB_OK); /* a refused response gave its slot back */
	msb_host_tool_result_free(&r);
	tool_runs = 0;
	const msb_host_tool_arg none[] = { STR("text", "") };
	r = call(run, "echo", none, 1);
	assert_guest_refused(&r, MSB_E_TRANSFER_CAP_EXCEEDED, "delivered-response cap (2) is exhausted");
	assert_int_equal(tool_runs, 0); /* knowable before the call, so the tool never ran */
	uint64_t delivered, bytes;
	msb_host_tool_run_ledger(run, NULL, &delivered, &bytes);
	assert_int_equal(delivered, 2);
	assert_int_equal(bytes, 6);
	msb_host_tool_run_free(run);
	msb_host_tools_free(reg);
}

static void user_identity_only_where_minted(void **state)
{
	(void)state;
	struct seen s = { 0 };
	msb_observer o = observer_for(&s);
	msb_host_tools_options opt = options_for(&s, &o);
	opt.allowed_identities = MSB_BIT(MSB_IDENTITY_APP) | MSB_BIT(MSB_IDENTITY_USER);
	msb_host_tool_declaration user = { MSB_FLOW_SOURCE_UNTRUSTED, MSB_FLOW_SINK_NONE, NULL, MSB_FLOW_IDENTITY_USER };
	const msb_host_tool_arg hi[] = { STR("greeting", "hi") };
	const msb_key key = { "tenant", "t9", "agents/a", "" };
	msb_error err = MSB_ERROR_INIT;
	msb_host_tool_run *run = NULL;

	/* Registers; every call refused without a minting host. */
	msb_host_tools *reg = registry(&opt);
	must_register(reg, tool_of("whoami", MSB_HOST_TOOL_FN(whoami), WHOAMI_PARAMS, 1, &user));
	assert_int_equal(msb_host_tool_run_new(reg, &key, "c1", &run, &err), MSB_OK);
	tool_runs = 0;
	msb_host_tool_result r = call(run, "whoami", hi, 1);
	assert_guest_refused(&r, MSB_E_IDENTITY_DENIED, "'whoami' exercises the user's identity, and this host mints none");
	assert_int_equal(tool_runs, 0);
	assert_int_equal(s.identity, MSB_IDENTITY_USER);
	msb_host_tool_run_free(run);
	msb_host_tools_free(reg);

	/* With one, the run's authority reaches the body, minted once per run. */
	opt.mint_user_identity = mint;
	opt.mint_ctx = &s;
	reg = registry(&opt);
	must_register(reg, tool_of("whoami", MSB_HOST_TOOL_FN(whoami), WHOAMI_PARAMS, 1, &user));
	assert_int_equal(msb_host_tool_run_new(reg, &key, "c1", &run, &err), MSB_OK);
	r = call(run, "whoami", hi, 1);
	assert_string_equal((char *)r.response.data, "hi, user-of-t9");
	msb_host_tool_result_free(&r);
	r = call(run, "whoami", hi, 1);
	assert_int_equal(r.code, MSB_OK);
	msb_host_tool_result_free(&r);
	assert_int_equal(s.mints, 1);
	msb_host_tool_run_free(run);

	/* A mint that fails refuses the call, its reason in the log only. */
	s.mint_fails = true;
	assert_int_equal(msb_host_tool_run_new(reg, &key, "c2", &run, &err), MSB_OK);
	tool_runs = 0;
	r = call(run, "whoami", hi, 1);
	assert_null(strstr(r.refusal, "token service"));
	assert_guest_refused(&r, MSB_E_IDENTITY_DENIED, "could not be obtained");
	assert_int_equal(tool_runs, 0);
	assert_non_null(strstr(s.log, "token service said no"));
	msb_host_tool_run_free(run);
	msb_host_tools_free(reg);
}

static void a_tool_failure_stays_in_the_host_log(void **state)
{
	(void)state;
	struct seen s = { 0 };
	msb_observer o = observer_for(&s);
	msb_host_tools_options opt = options_for(&s, &o);
	msb_host_tools *reg = registry(&opt);
	must_register(reg, tool_of("broken", MSB_HOST_TOOL_FN(broken), NULL, 0, &TRUSTED_APP));
	msb_host_tool_run *run = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_host_tool_run_new(reg, NULL, NULL, &run, &err), MSB_OK);
	msb_host_tool_result r = call(run, "broken", NULL, 0);
	assert_int_equal(r.response.len, 0); /* what it wrote before failing does not cross */
	assert_null(strstr(r.refusal, "10.0.0.7"));
	assert_guest_refused(&r, MSB_E_BACKEND, "host tool 'broken' failed — the reason is in the host's log");
	assert_non_null(strstr(s.log, "10.0.0.7:5432"));
	assert_string_equal(s.outcome, "failed");
	uint64_t delivered;
	msb_host_tool_run_ledger(run, NULL, &delivered, NULL);
	assert_int_equal(delivered, 0);
	msb_host_tool_run_free(run);
	msb_host_tools_free(reg);
}

static void host_tool_called_events(void **state)
{
	(void)state;
	struct seen s = { 0 };
	msb_observer o = observer_for(&s);
	msb_host_tools_options opt = options_for(&s, &o);
	msb_host_tools *reg = registry(&opt);
	msb_host_tool_declaration d = { MSB_FLOW_SOURCE_TRUSTED, MSB_FLOW_SINK_CAPPED, "internal", MSB_FLOW_IDENTITY_APP };
	must_register(reg, LOOKUP(&d));
	const msb_key key = { "tenant", "t1", "agents/a", "" };
	msb_host_tool_run *run = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_host_tool_run_new(reg, &key, "call-7", &run, &err), MSB_OK);
	const msb_host_tool_arg args[] = { STR("sku", "b"), INT("qty", 12) };
	msb_host_tool_result r = call(run, "lookup", args, 2);
	msb_host_tool_result_free(&r);
	assert_int_equal(s.events, 1);
	assert_string_equal(s.tool, "lookup");
	assert_string_equal(s.sink, "internal");
	assert_string_equal(s.outcome, "served");
	assert_int_equal(s.bytes, strlen("b x12"));
	assert_string_equal(s.refusal, "(null)");
	assert_string_equal(s.call, "call-7");
	assert_string_equal(s.thread, "t1");
	assert_int_equal(s.identity, MSB_IDENTITY_APP);

	r = call(run, "lookup", NULL, 0);
	assert_int_equal(s.events, 2);
	assert_string_equal(s.outcome, "refused");
	assert_string_equal(s.refusal, r.refusal); /* the sentence the guest was answered with */
	assert_int_equal(s.bytes, 0);
	msb_host_tool_result_free(&r);
	msb_host_tool_run_free(run);
	msb_host_tools_free(reg);
}

/* Calls racing on one run: the response slot is taken before the call, so a cap of one holds. */
struct racer {
	msb_host_tool_run *run;
	msb_host_tool_result r;
};

static void *race(void *arg)
{
	struct racer *x = arg;
	const msb_host_tool_arg args[] = { STR("text", "ok") };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_host_tool_run_call(x->run, "echo", args, 1, &x->r, &err), MSB_OK);
	return NULL;
}

static void racing_calls_respect_the_caps(void **state)
{
	(void)state;
	struct seen s = { 0 };
	msb_host_tools_options opt = options_for(&s, NULL);
	opt.response_limits.max_files = 1;
	opt.max_calls_per_run = 6;
	msb_host_tools *reg = registry(&opt);
	must_register(reg, tool_of("echo", MSB_HOST_TOOL_FN(echo), ECHO_PARAMS, 1, &PURE));
	msb_host_tool_run *run = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_host_tool_run_new(reg, NULL, NULL, &run, &err), MSB_OK);
	enum { N = 8 };
	struct racer racers[N];
	pthread_t threads[N];
	memset(racers, 0, sizeof racers);
	for (int i = 0; i < N; i++) {
		racers[i].run = run;
		assert_int_equal(pthread_create(&threads[i], NULL, race, &racers[i]), 0);
	}
	int served = 0, capped_calls = 0, capped_responses = 0;
	for (int i = 0; i < N; i++) {
		pthread_join(threads[i], NULL);
		served += racers[i].r.code == MSB_OK;
		capped_calls += racers[i].r.refusal && strstr(racers[i].r.refusal, "call cap (6)") != NULL;
		capped_responses += racers[i].r.refusal && strstr(racers[i].r.refusal, "delivered-response cap (1)") != NULL;
		msb_host_tool_result_free(&racers[i].r);
	}
	assert_int_equal(served, 1);
	assert_int_equal(capped_calls, 2);
	assert_int_equal(capped_responses, 5);
	uint64_t calls;
	msb_host_tool_run_ledger(run, &calls, NULL, NULL);
	assert_int_equal(calls, N);
	msb_host_tool_run_free(run);
	msb_host_tools_free(reg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(starts_empty_and_nothing_is_callable),
		cmocka_unit_test(construction_refusals),
		cmocka_unit_test(registration_refusals),
		cmocka_unit_test(undeclared_reads_as_app_and_none_is_always_allowed),
		cmocka_unit_test(declaration_is_captured_at_registration),
		cmocka_unit_test(aggregate_derives_policy_and_seals),
		cmocka_unit_test(calls_ordinary_c_functions_through_libffi),
		cmocka_unit_test(arguments_are_checked_at_the_door),
		cmocka_unit_test(call_cap_counts_refusals),
		cmocka_unit_test(response_caps_reuse_transfer_limits),
		cmocka_unit_test(user_identity_only_where_minted),
		cmocka_unit_test(a_tool_failure_stays_in_the_host_log),
		cmocka_unit_test(host_tool_called_events),
		cmocka_unit_test(racing_calls_respect_the_caps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
