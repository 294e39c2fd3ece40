/*
 * test_tool_session.c — the tool-call session against the inprocess fake: attach nothing
 * when unconfigured, the wiring refusals, a fresh unguessable call path per call, the reclaim
 * on every exit path, a failed reclaim disposed before the host hears of it (or kept, when
 * the router opts down), SandboxUnclean turned into a sentence the model reads, call scope
 * disposing its sandbox, and ToolCallEnded carrying the keys.
 *
 * A reclaim is made to fail the way a real one can: the sandbox was disposed under the call
 * (the body disposes it), so the backend refuses to remove anything from it.
 */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "router_fixture.h"

/* ---- the host's side: a caller context, a log, a reclaim-failure recorder ---------- */

struct host {
	pthread_mutex_t lock;  /* ToolCallEnded arrives from whichever thread served the call */
	const char *thread;  /* what the thread_id callback answers (NULL: no thread bound) */
	char log[8192];
	int failures;
	msb_reclaim_outcome outcome;
	char reason[512], path[256], call[64], key_call_id[64];
	bool had_disposal_failure;
	msb_disposal_code disposal_code;
	size_t disposes_when_told; /* the backend's dispose count when the host was told */
	const msb_backend *backend;
	/* ToolCallEnded */
	int ended;
	char ended_call[64], ended_tool[64], ended_error[64], ended_thread[64], ended_key_call[64];
	size_t ended_keys;
};

static const char *cb_scope(void *ctx)
{
	(void)ctx;
	return "tenant";
}

static const char *cb_thread(void *ctx)
{
	return ((struct host *)ctx)->thread;
}

static const char *cb_agent_dir(void *ctx)
{
	(void)ctx;
	return "agents/a";
}

static void host_log(void *ctx, const char *line)
{
	struct host *h = ctx;
	size_t used = strlen(h->log);
	snprintf(h->log + used, sizeof h->log - used, "%s\n", line);
}

static void on_reclaim_failure(void *ctx, const msb_reclaim_failure *f)
{
	struct host *h = ctx;
	h->failures++;
	h->outcome = f->disposal;
	snprintf(h->reason, sizeof h->reason, "%s", f->reason);
	snprintf(h->path, sizeof h->path, "%s", f->path);
	snprintf(h->call, sizeof h->call, "%s", f->call);
	snprintf(h->key_call_id, sizeof h->key_call_id, "%s", f->key->call_id);
	h->had_disposal_failure = f->disposal_failure != NULL;
	if (f->disposal_failure)
		h->disposal_code = f->disposal_failure->code;
	h->disposes_when_told = fx_count(h->backend, "dispose");
}

static int on_ended(void *ctx, const msb_tool_call_ended *e)
{
	struct host *h = ctx;
	pthread_mutex_lock(&h->lock);
	h->ended++;
	snprintf(h->ended_call, sizeof h->ended_call, "%s", e->call);
	snprintf(h->ended_tool, sizeof h->ended_tool, "%s", e->tool);
	snprintf(h->ended_error, sizeof h->ended_error, "%s", e->error ? e->error : "(null)");
	h->ended_keys = e->n_keys;
	if (e->n_keys) {
		snprintf(h->ended_thread, sizeof h->ended_thread, "%s", e->keys[0]->thread_id);
		snprintf(h->ended_key_call, sizeof h->ended_key_call, "%s", e->keys[0]->call_id);
	}
	pthread_mutex_unlock(&h->lock);
	return 0;
}

/* ---- a world: one inprocess backend, a router, a session --------------------------- */

typedef struct world {
	fx f;
	msb_backend *b;
	msb_router *router;
	msb_observer observer;
	struct host host;
	msb_caller_context caller;
	msb_spec spec;
	msb_tool_session *session;
} world;

static const char *const SCOPES_YAML =
	"isolation_scopes: [conversation, call]\ncapabilities: [exec, files_in, files_out]\n";

static void world_start(world *w, msb_reclaim_policy policy, msb_scope scope)
{
	memset(w, 0, sizeof *w);
	fx_init(&w->f, NULL);
	w->b = fx_open(&w->f, "inprocess", SCOPES_YAML);
	pthread_mutex_init(&w->host.lock, NULL);
	w->host.thread = "t1";
	w->host.backend = w->b;
	w->observer = (msb_observer)MSB_OBSERVER_INIT;
	w->observer.ctx = &w->host;
	w->observer.tool_call_ended = on_ended;
	msb_router_options o = fx_options(&w->f);
	o.reclaim = policy;
	o.observer = &w->observer;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_router_new(&w->b, 1, &o, &w->router, &err), MSB_OK);
	w->caller = (msb_caller_context){ sizeof(msb_caller_context), &w->host, cb_scope, cb_thread,
					  cb_agent_dir };
	msb_spec_init(&w->spec, "bicep");
	w->spec.work_dir = "/msb/work";
	w->spec.isolation_scope = scope;
	msb_tool_options to = MSB_TOOL_OPTIONS_INIT;
	to.name = "build_bicep";
	to.on_reclaim_failure = on_reclaim_failure;
	to.on_reclaim_failure_ctx = &w->host;
	to.log = host_log;
	to.log_ctx = &w->host;
	assert_int_equal(msb_tool_session_new(w->router, &w->caller, &w->spec, &to, &w->session, &err),
			 MSB_OK);
	assert_non_null(w->session);
}

static void world_stop(world *w)
{
	msb_tool_session_free(w->session);
	msb_router_free(w->router);
	fx_free(&w->f);
	pthread_mutex_destroy(&w->host.lock);
}

/* ---- bodies ------------------------------------------------------------------------ */

typedef struct body_ctx {
	world *w;
	int runs;
	char path[256], call_id[64];
	msb_errc fail_with;       /* non-zero: the body fails with this after writing */
	bool fail_mute;           /* …and sets no message: the session must supply one */
	bool dispose_under_call;  /* dispose the sandbox from inside the call */
	const char *then_inject;  /* after that disposal, make disposals fail with this code */
	const char *answer;
} body_ctx;

static msb_errc body(void *ctx, msb_sandbox *sb, const char *call_path, const char *call_id,
		     msb_buf *answer, msb_error *err)
{
	body_ctx *c = ctx;
	c->runs++;
	snprintf(c->path, sizeof c->path, "%s", call_path);
	snprintf(c->call_id, sizeof c->call_id, "%s", call_id);
	/* Relative to the call path: every file operation is confined to a working directory. */
	msb_errc rc = msb_sandbox_write_file(sb, "main.bicep", "x", 1, call_path, err);
	if (rc)
		return rc;
	if (c->dispose_under_call) {
		assert_true(msb_router_dispose(c->w->router, msb_sandbox_key(sb), NULL));
		if (c->then_inject)
			fx_inject(c->w->b, "dispose", c->then_inject);
	}
	if (c->fail_with && c->fail_mute)
		return c->fail_with;
	if (c->fail_with)
		return msb_error_set(err, c->fail_with, "the body failed on purpose");
	const char *text = c->answer ? c->answer : "built";
	return msb_buf_append(answer, text, strlen(text), err);
}

static msb_errc call(world *w, body_ctx *c, msb_tool_answer *a, msb_error *err)
{
	memset(a, 0, sizeof *a);
	c->w = w;
	return msb_tool_session_call(w->session, body, c, a, err);
}

/* ---- tests ------------------------------------------------------------------------- */

static void attach_nothing_when_unconfigured(void **state)
{
	(void)state;
	msb_spec spec;
	msb_spec_init(&spec, "bicep");
	msb_tool_options to = MSB_TOOL_OPTIONS_INIT;
	to.name = "t";
	msb_tool_session *s = (msb_tool_session *)&s;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_tool_session_new(NULL, NULL, &spec, &to, &s, &err), MSB_OK);
	assert_null(s);
}

static void wiring_refusals(void **state)
{
	(void)state;
	world w;
	world_start(&w, MSB_RECLAIM_DISPOSE, MSB_SCOPE_CONVERSATION);
	msb_tool_session *s = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_tool_options to = MSB_TOOL_OPTIONS_INIT;
	fx_assert_refused(&err, msb_tool_session_new(w.router, &w.caller, &w.spec, &to, &s, &err),
			  MSB_E_VALUE, "no name");
	msb_tool_options old = to;
	old.struct_size = 16;
	fx_assert_refused(&err, msb_tool_session_new(w.router, &w.caller, &w.spec, &old, &s, &err),
			  MSB_E_VALUE, "struct_size", "MSB_TOOL_OPTIONS_INIT");
	msb_tool_answer a = { 0 };
	fx_assert_refused(&err, msb_tool_session_call(w.session, NULL, NULL, &a, &err), MSB_E_VALUE,
			  "'build_bicep'", "no body");
	msb_tool_answer_free(&a);
	to.name = "t";
	to.reclaim_timeout = NAN;
	fx_assert_refused(&err, msb_tool_session_new(w.router, &w.caller, &w.spec, &to, &s, &err),
			  MSB_E_VALUE, "'t'", "reclaim_timeout", "finite positive");
	to.reclaim_timeout = 0;
	fx_assert_refused(&err, msb_tool_session_new(w.router, &w.caller, &w.spec, &to, &s, &err),
			  MSB_E_VALUE, "reclaim_timeout");
	to.reclaim_timeout = 5;
	msb_spec spec = w.spec;
	spec.work_dir = "/";
	fx_assert_refused(&err, msb_tool_session_new(w.router, &w.caller, &spec, &to, &s, &err),
			  MSB_E_VALUE, "work_dir is '/'", "one component from the guest root");
	/* A '..' spelling is refused by msb_spec_validate before it can reach the root. */
	spec.work_dir = "/msb/../";
	fx_assert_refused(&err, msb_tool_session_new(w.router, &w.caller, &spec, &to, &s, &err),
			  MSB_E_VALUE, "'/msb/../'", "'..' segment");
	spec.work_dir = "/msb/work";
	fx_assert_refused(&err, msb_tool_session_new(w.router, &w.caller, NULL, &to, &s, &err),
			  MSB_E_VALUE, "tool 't'", "no spec given");
	assert_null(s);
	spec.egress = MSB_EGRESS_UNRESTRICTED; /* the fake enforces {allowlist, closed} */
	fx_assert_refused(&err, msb_tool_session_new(w.router, &w.caller, &spec, &to, &s, &err),
			  MSB_E_EGRESS_NOT_ENFORCED, "tool 't'", "unrestricted");
	msb_caller_context no_thread = w.caller;
	no_thread.thread_id = NULL;
	fx_assert_refused(&err, msb_tool_session_new(w.router, &no_thread, &w.spec, &to, &s, &err),
			  MSB_E_VALUE, "caller context", "thread_id");
	assert_null(s);

	/* A spec that lands an artifact needs a sink, and declares files_out with its outputs. */
	const msb_declared_output outs[] = { { "out/main.json", MSB_DISPOSITION_LAND, "application/json", true, NULL } };
	spec = w.spec;
	spec.declared_outputs = outs;
	spec.n_declared_outputs = 1;
	spec.requires |= MSB_BIT(MSB_CAP_FILES_OUT);
	fx_assert_refused(&err, msb_tool_session_new(w.router, &w.caller, &spec, &to, &s, &err),
			  MSB_E_OUTPUT_SINK_REQUIRED, "tool 't'", "'bicep'", "no output_sink");
	msb_output_sink sink = MSB_OUTPUT_SINK_INIT;
	to.output_sink = &sink;
	spec.requires &= ~MSB_BIT(MSB_CAP_FILES_OUT);
	fx_assert_refused(&err, msb_tool_session_new(w.router, &w.caller, &spec, &to, &s, &err),
			  MSB_E_VALUE, "declares outputs", "'files_out'");
	spec.requires |= MSB_BIT(MSB_CAP_FILES_OUT);
	spec.n_declared_outputs = 0;
	spec.outputs_named_at_call_time = true;
	to.output_sink = NULL;
	fx_assert_refused(&err, msb_tool_session_new(w.router, &w.caller, &spec, &to, &s, &err),
			  MSB_E_OUTPUT_SINK_REQUIRED, "named at call time");
	to.output_sink = &sink;
	assert_int_equal(msb_tool_session_new(w.router, &w.caller, &spec, &to, &s, &err), MSB_OK);
	assert_ptr_equal(msb_tool_session_output_sink(s), &sink);
	assert_string_equal(msb_tool_session_name(s), "t");
	assert_true(msb_tool_session_spec(s)->outputs_named_at_call_time);
	msb_tool_session_free(s);
	world_stop(&w);
}

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return s[n] == '\0';
}

static void call_path_is_fresh_and_under_work_dir(void **state)
{
	(void)state;
	world w;
	world_start(&w, MSB_RECLAIM_DISPOSE, MSB_SCOPE_CONVERSATION);
	body_ctx c1 = { 0 }, c2 = { 0 };
	msb_tool_answer a1, a2;
	msb_error err = MSB_ERROR_INIT;
	if (call(&w, &c1, &a1, &err)) fail_msg("%s", msb_error_message(&err));
	assert_int_equal(call(&w, &c2, &a2, &err), MSB_OK);
	assert_int_equal(strncmp(c1.path, "/msb/work/", 10), 0);
	assert_true(is_hex(c1.path + 10, MSB_TOOL_CALL_ID_LEN));
	assert_string_equal(c1.path + 10, a1.call);
	assert_string_equal(c1.call_id, a1.call);
	assert_string_not_equal(c1.path, c2.path);
	assert_string_equal(a1.text.data, "built");
	assert_int_equal(a1.refusal, MSB_OK);
	msb_tool_answer_free(&a1);
	msb_tool_answer_free(&a2);
	world_stop(&w);
}

/* The path, and what the body wrote under it, is gone after each way out. */
static void assert_reclaimed(world *w, const body_ctx *c, size_t nth)
{
	assert_int_equal(fx_count(w->b, "reclaim"), nth + 1);
	assert_string_equal(fx_recorded(w->b, "reclaim", nth), c->path);
}

static void reclaim_runs_on_every_exit_path(void **state)
{
	(void)state;
	world w;
	world_start(&w, MSB_RECLAIM_DISPOSE, MSB_SCOPE_CONVERSATION);
	msb_error err = MSB_ERROR_INIT;
	msb_tool_answer a;

	msb_sandbox *sb = NULL;
	msb_key key = { "tenant", "t1", "agents/a", "" };
	assert_int_equal(msb_router_acquire(w.router, &key, &w.spec, &sb, &err), MSB_OK);
	assert_int_equal(msb_sandbox_write_file(sb, "keep.txt", "k", 1, NULL, &err), MSB_OK);

	body_ctx answered = { 0 };
	assert_int_equal(call(&w, &answered, &a, &err), MSB_OK);
	assert_reclaimed(&w, &answered, 0);
	msb_tool_answer_free(&a);

	body_ctx refusing = { .answer = "Error: the template refers to a file you did not share" };
	assert_int_equal(call(&w, &refusing, &a, &err), MSB_OK);
	assert_reclaimed(&w, &refusing, 1);
	msb_tool_answer_free(&a);

	body_ctx failing = { .fail_with = MSB_E_BACKEND };
	fx_assert_refused(&err, call(&w, &failing, &a, &err), MSB_E_BACKEND, "on purpose");
	assert_reclaimed(&w, &failing, 2);
	msb_tool_answer_free(&a);
	body_ctx mute = { .fail_with = MSB_E_BACKEND, .fail_mute = true };
	fx_assert_refused(&err, call(&w, &mute, &a, &err), MSB_E_BACKEND, "tool 'build_bicep'",
			  "the body failed and said nothing more");
	assert_reclaimed(&w, &mute, 3);
	msb_tool_answer_free(&a);

	/* What the call wrote is gone: the sandbox is warm (conversation scope), the file not. */
	msb_entry e;
	bool found = true;
	assert_int_equal(msb_sandbox_stat_file(sb, "main.bicep", failing.path, &e, &found, &err), MSB_OK);
	assert_false(found);
	/* Only the call's own path went: a file beside it in work_dir stays, and is seen. */
	assert_int_equal(msb_sandbox_stat_file(sb, "keep.txt", NULL, &e, &found, &err), MSB_OK);
	assert_true(found);
	free(e.path);
	msb_sandbox_release(sb);
	assert_int_equal(w.host.failures, 0);
	assert_int_equal(fx_count(w.b, "dispose"), 0);
	world_stop(&w);
}

static void failed_reclaim_disposes_then_notifies(void **state)
{
	(void)state;
	world w;
	world_start(&w, MSB_RECLAIM_DISPOSE, MSB_SCOPE_CONVERSATION);
	body_ctx c = { .dispose_under_call = true };
	msb_tool_answer a;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(call(&w, &c, &a, &err), MSB_OK);
	assert_string_equal(a.text.data, "built"); /* the cleanup never replaces the answer */
	assert_int_equal(w.host.failures, 1);
	assert_int_equal(w.host.outcome, MSB_RECLAIM_OUTCOME_DISPOSED);
	/* The body's disposal, then the policy's, and only then the host was told. */
	assert_int_equal(fx_count(w.b, "dispose"), 2);
	assert_int_equal(w.host.disposes_when_told, 2);
	assert_string_equal(w.host.path, c.path);
	assert_string_equal(w.host.call, a.call);
	assert_non_null(strstr(w.host.reason, "SandboxBackendError"));
	assert_false(w.host.had_disposal_failure);
	assert_non_null(strstr(w.host.log, "was not reclaimed"));
	assert_non_null(strstr(w.host.log, "disposed"));
	msb_tool_answer_free(&a);
	world_stop(&w);
}

static void keep_policy_keeps(void **state)
{
	(void)state;
	world w;
	world_start(&w, MSB_RECLAIM_KEEP, MSB_SCOPE_CONVERSATION);
	body_ctx c = { .dispose_under_call = true };
	msb_tool_answer a;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(call(&w, &c, &a, &err), MSB_OK);
	assert_int_equal(w.host.failures, 1);
	assert_int_equal(w.host.outcome, MSB_RECLAIM_OUTCOME_KEPT);
	assert_int_equal(fx_count(w.b, "dispose"), 1); /* the body's own; the policy's none */
	assert_non_null(strstr(w.host.log, "kept"));
	msb_tool_answer_free(&a);
	world_stop(&w);
}

static void unclean_after_failed_disposal_is_refused_to_the_model(void **state)
{
	(void)state;
	world w;
	world_start(&w, MSB_RECLAIM_DISPOSE, MSB_SCOPE_CONVERSATION);
	body_ctx c = { .dispose_under_call = true, .then_inject = "refused" };
	msb_tool_answer a;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(call(&w, &c, &a, &err), MSB_OK);
	assert_int_equal(w.host.outcome, MSB_RECLAIM_OUTCOME_FAILED);
	assert_true(w.host.had_disposal_failure);
	assert_int_equal(w.host.disposal_code, MSB_DISPOSAL_REFUSED);
	msb_tool_answer_free(&a);

	body_ctx next = { 0 };
	size_t acquires = fx_count(w.b, "acquire");
	assert_int_equal(call(&w, &next, &a, &err), MSB_OK);
	assert_int_equal(next.runs, 0);
	assert_int_equal(a.refusal, MSB_E_UNCLEAN);
	assert_non_null(strstr((char *)a.text.data, "SandboxUnclean"));
	assert_non_null(strstr((char *)a.text.data, "held closed"));
	/* The router's message (the backend's detail) reaches the log, never the model. */
	assert_null(strstr((char *)a.text.data, "inprocess"));
	assert_null(strstr((char *)a.text.data, "injected"));
	assert_non_null(strstr(w.host.log, "injected"));
	assert_int_equal(fx_count(w.b, "acquire"), acquires);
	assert_int_equal(w.host.ended_keys, 1); /* a refused key is a touched key */
	assert_string_equal(w.host.ended_error, "(null)");
	msb_tool_answer_free(&a);
	world_stop(&w);
}

static void refused_acquire_hides_the_backend_detail(void **state)
{
	(void)state;
	world w;
	world_start(&w, MSB_RECLAIM_DISPOSE, MSB_SCOPE_CONVERSATION);
	fx_inject(w.b, "acquire", "SandboxBackendError");
	body_ctx c = { 0 };
	msb_tool_answer a;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(call(&w, &c, &a, &err), MSB_OK);
	assert_int_equal(c.runs, 0);
	assert_int_equal(a.refusal, MSB_E_BACKEND);
	assert_string_equal((char *)a.text.data,
			    "Error: sandbox unavailable (SandboxBackendError) — degrading to T0 (LLM "
			    "self-check only)");
	assert_non_null(strstr(w.host.log, "acquire failed as injected"));
	assert_int_equal(fx_count(w.b, "reclaim"), 0); /* nothing acquired, nothing to reclaim */
	msb_tool_answer_free(&a);
	world_stop(&w);
}

static void no_thread_is_a_refusal(void **state)
{
	(void)state;
	world w;
	world_start(&w, MSB_RECLAIM_DISPOSE, MSB_SCOPE_CONVERSATION);
	w.host.thread = NULL;
	body_ctx c = { 0 };
	msb_tool_answer a;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(call(&w, &c, &a, &err), MSB_OK);
	assert_int_equal(c.runs, 0);
	assert_int_equal(a.refusal, MSB_E_VALUE);
	assert_non_null(strstr((char *)a.text.data, "no active thread context — build_bicep"));
	assert_int_equal(fx_count(w.b, "acquire"), 0);
	assert_int_equal(w.host.ended, 1);
	assert_int_equal(w.host.ended_keys, 0);
	msb_tool_answer_free(&a);
	world_stop(&w);
}

static void call_scope_disposes_its_sandbox(void **state)
{
	(void)state;
	world w;
	world_start(&w, MSB_RECLAIM_DISPOSE, MSB_SCOPE_CALL);
	body_ctx c = { 0 };
	msb_tool_answer a;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(call(&w, &c, &a, &err), MSB_OK);
	assert_reclaimed(&w, &c, 0);
	assert_int_equal(fx_count(w.b, "dispose"), 1);
	char want[256];
	snprintf(want, sizeof want, "scope=tenant thread=t1 agent_dir=agents/a call_id=%s", a.call);
	assert_string_equal(fx_recorded(w.b, "dispose", 0), want);
	assert_int_equal(fx_live(w.b), 0);
	assert_string_equal(w.host.ended_key_call, a.call); /* the call id is folded into the key */
	msb_tool_answer_free(&a);

	/* A failed reclaim at call scope is disposed whatever the policy, and said so. */
	body_ctx d = { .dispose_under_call = true };
	assert_int_equal(call(&w, &d, &a, &err), MSB_OK);
	assert_int_equal(w.host.outcome, MSB_RECLAIM_OUTCOME_DISPOSED);
	assert_string_equal(w.host.key_call_id, a.call);
	assert_int_equal(fx_count(w.b, "dispose"), 3); /* 1 before, the body's, the cleanup's */
	assert_int_equal(fx_live(w.b), 0);
	msb_tool_answer_free(&a);
	world_stop(&w);
}

static void tool_call_ended_carries_the_keys(void **state)
{
	(void)state;
	world w;
	world_start(&w, MSB_RECLAIM_DISPOSE, MSB_SCOPE_CONVERSATION);
	body_ctx c = { 0 };
	msb_tool_answer a;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(call(&w, &c, &a, &err), MSB_OK);
	assert_int_equal(w.host.ended, 1);
	assert_string_equal(w.host.ended_call, a.call);
	assert_string_equal(w.host.ended_tool, "build_bicep");
	assert_string_equal(w.host.ended_error, "(null)");
	assert_int_equal(w.host.ended_keys, 1);
	assert_string_equal(w.host.ended_thread, "t1");
	assert_string_equal(w.host.ended_key_call, ""); /* conversation scope: calls share it */
	msb_tool_answer_free(&a);

	body_ctx failing = { .fail_with = MSB_E_PROGRAM_TIMEOUT };
	fx_assert_refused(&err, call(&w, &failing, &a, &err), MSB_E_PROGRAM_TIMEOUT, "on purpose");
	assert_int_equal(w.host.ended, 2);
	assert_string_equal(w.host.ended_error, "SandboxProgramTimeout"); /* the name, never the message */
	assert_string_equal(w.host.ended_call, a.call);
	msb_tool_answer_free(&a);
	world_stop(&w);
}

/*
 * The registry and the router share one predicate and only ever refuse: a host that puts the
 * sealed registry's identities on the spec meets the router's denied_identities at attach.
 */
static int notify_user(const char *to, const char *user_identity, msb_buf *out, msb_error *err)
{
	(void)to, (void)user_identity, (void)out, (void)err;
	return 0;
}

static void registry_identities_meet_the_routers_backstop(void **state)
{
	(void)state;
	msb_host_tools_options ho = MSB_HOST_TOOLS_OPTIONS_INIT;
	ho.allowed_identities = MSB_BIT(MSB_IDENTITY_APP) | MSB_BIT(MSB_IDENTITY_USER);
	ho.log = host_log;
	struct host h = { 0 };
	ho.log_ctx = &h;
	msb_host_tools *reg = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_host_tools_new(&ho, &reg, &err), MSB_OK);
	static const msb_host_tool_param params[] = { { "to", MSB_ARG_STRING } };
	static const msb_host_tool_declaration user = { MSB_FLOW_SOURCE_NONE, MSB_FLOW_SINK_CAPPED, "internal",
							MSB_FLOW_IDENTITY_USER };
	msb_host_tool t = MSB_HOST_TOOL_INIT;
	t.name = "notify";
	t.fn = MSB_HOST_TOOL_FN(notify_user);
	t.params = params;
	t.n_params = 1;
	t.declaration = &user;
	assert_int_equal(msb_host_tools_register(reg, &t, &err), MSB_OK);
	msb_host_tools_aggregate agg;
	assert_int_equal(msb_host_tools_aggregate_seal(reg, &agg, &err), MSB_OK);

	fx f;
	fx_init(&f, NULL);
	msb_backend *b = fx_open(&f, "inprocess", NULL);
	msb_router_options o = fx_options(&f);
	o.denied_identities = MSB_BIT(MSB_IDENTITY_USER);
	msb_router *router = NULL;
	assert_int_equal(msb_router_new(&b, 1, &o, &router, &err), MSB_OK);
	msb_caller_context caller = { sizeof caller, &h, cb_scope, cb_thread, NULL };
	msb_spec spec;
	msb_spec_init(&spec, "execute_code");
	spec.identities = agg.identities;
	msb_tool_options to = MSB_TOOL_OPTIONS_INIT;
	to.name = "execute_code";
	msb_tool_session *s = NULL;
	fx_assert_refused(&err, msb_tool_session_new(router, &caller, &spec, &to, &s, &err),
			  MSB_E_IDENTITY_DENIED, "tool 'execute_code'", "user");
	assert_null(s);
	msb_router_free(router);
	fx_free(&f);
	msb_host_tools_free(reg);
}

/* One session, many calls at once: each its own path, each path reclaimed once. */
#define PARALLEL 8
struct racer {
	world *w;
	body_ctx c;
	msb_tool_answer a;
	msb_errc rc;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	msb_error err = MSB_ERROR_INIT;
	r->rc = call(r->w, &r->c, &r->a, &err);
	msb_error_clear(&err);
	return NULL;
}

static void concurrent_calls_get_their_own_paths(void **state)
{
	(void)state;
	world w;
	world_start(&w, MSB_RECLAIM_DISPOSE, MSB_SCOPE_CONVERSATION);
	struct racer racers[PARALLEL];
	pthread_t threads[PARALLEL];
	memset(racers, 0, sizeof racers);
	for (int i = 0; i < PARALLEL; i++) {
		racers[i].w = &w;
		assert_int_equal(pthread_create(&threads[i], NULL, race, &racers[i]), 0);
	}
	for (int i = 0; i < PARALLEL; i++)
		pthread_join(threads[i], NULL);
	assert_int_equal(fx_count(w.b, "reclaim"), PARALLEL);
	for (int i = 0; i < PARALLEL; i++) {
		assert_int_equal(racers[i].rc, MSB_OK);
		int reclaimed = 0;
		for (int j = 0; j < PARALLEL; j++) {
			if (j != i)
				assert_string_not_equal(racers[i].c.path, racers[j].c.path);
			reclaimed += strcmp(fx_recorded(w.b, "reclaim", (size_t)j), racers[i].c.path) == 0;
		}
		assert_int_equal(reclaimed, 1);
		msb_tool_answer_free(&racers[i].a);
	}
	assert_int_equal(fx_count(w.b, "acquire"), 1); /* one conversation, one sandbox */
	assert_int_equal(w.host.ended, PARALLEL);
	world_stop(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(attach_nothing_when_unconfigured),
		cmocka_unit_test(wiring_refusals),
		cmocka_unit_test(call_path_is_fresh_and_under_work_dir),
		cmocka_unit_test(reclaim_runs_on_every_exit_path),
		cmocka_unit_test(failed_reclaim_disposes_then_notifies),
		cmocka_unit_test(keep_policy_keeps),
		cmocka_unit_test(unclean_after_failed_disposal_is_refused_to_the_model),
		cmocka_unit_test(refused_acquire_hides_the_backend_detail),
		cmocka_unit_test(no_thread_is_a_refusal),
		cmocka_unit_test(call_scope_disposes_its_sandbox),
		cmocka_unit_test(tool_call_ended_carries_the_keys),
		cmocka_unit_test(concurrent_calls_get_their_own_paths),
		cmocka_unit_test(registry_identities_meet_the_routers_backstop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
