/*
 * test_router_acquire.c — get-or-create per (key, kind), call scope, disposal across every
 * backend, SandboxUnclean, dispose_scope and the scope guard, and acquire under many racing
 * threads (also run under ThreadSanitizer).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "router_fixture.h"

static msb_router *router_of(fx *f, msb_backend **bs, size_t n, msb_selection sel)
{
	msb_router_options o = fx_options(f);
	o.selection = sel;
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (msb_router_new(bs, n, &o, &r, &err) != MSB_OK)
		fail_msg("router: %s", msb_error_message(&err));
	return r;
}

static msb_sandbox *acquire_ok(msb_router *r, const msb_key *key, const msb_spec *spec)
{
	msb_sandbox *sb = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (msb_router_acquire(r, key, spec, &sb, &err) != MSB_OK)
		fail_msg("acquire: %s: %s", msb_errc_name(err.code), msb_error_message(&err));
	assert_non_null(sb);
	return sb;
}

static void get_or_create_per_key_and_kind(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", NULL);
	msb_router *r = router_of(f, &b, 1, MSB_SELECTION_FIXED);
	msb_spec a, c;
	msb_spec_init(&a, "bicep");
	msb_spec_init(&c, "python");
	msb_key key = { "tenant", "t1", "devops", "" };
	msb_sandbox *s1 = acquire_ok(r, &key, &a);
	msb_sandbox *s2 = acquire_ok(r, &key, &a);
	assert_int_equal(fx_count(b, "acquire"), 1); /* reused, the backend asked once */
	msb_sandbox *s3 = acquire_ok(r, &key, &c);
	assert_int_equal(fx_count(b, "acquire"), 2); /* another kind is another sandbox */
	msb_key other = { "tenant", "t2", "devops", "" };
	msb_sandbox *s4 = acquire_ok(r, &other, &a);
	assert_int_equal(fx_count(b, "acquire"), 3);
	assert_int_equal(fx_live(b), 3);
	assert_string_equal(msb_sandbox_key(s1)->thread_id, "t1");
	assert_string_equal(msb_sandbox_spec(s3)->kind, "python");
	assert_ptr_equal(msb_sandbox_backend(s4), b);
	msb_sandbox_release(s1);
	msb_sandbox_release(s2);
	msb_sandbox_release(s3);
	msb_sandbox_release(s4);
	/* Releasing handles drops no sandbox: it lives until disposed. */
	assert_int_equal(fx_live(b), 3);
	msb_router_free(r);
}

static void a_refused_spec_never_reaches_the_backend(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", "egress_modes: [closed]\n");
	msb_router *r = router_of(f, &b, 1, MSB_SELECTION_FIXED);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	spec.egress = MSB_EGRESS_ALLOWLIST;
	msb_key key = { "s", "t", "a", "" };
	msb_sandbox *sb = NULL;
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, msb_router_acquire(r, &key, &spec, &sb, &err), MSB_E_EGRESS_NOT_ENFORCED,
			  "'allowlist'");
	assert_null(sb);
	assert_int_equal(fx_count(b, "acquire"), 0);
	msb_router_free(r);
}

static void a_key_needs_scope_and_thread(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", NULL);
	msb_router *r = router_of(f, &b, 1, MSB_SELECTION_FIXED);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_key key = { "", "t", "a", "" };
	msb_sandbox *sb = NULL;
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, msb_router_acquire(r, &key, &spec, &sb, &err), MSB_E_VALUE, "scope and a thread_id");
	key = (msb_key){ "s", NULL, "a", "" };
	fx_assert_refused(&err, msb_router_acquire(r, &key, &spec, &sb, &err), MSB_E_VALUE, "scope and a thread_id");
	key = (msb_key){ "s", "t", "a", "" };
	fx_assert_refused(&err, msb_router_acquire(r, &key, NULL, &sb, &err), MSB_E_VALUE, "acquire", "no spec given");
	fx_assert_refused(&err, msb_router_ensure_can_serve(r, NULL, NULL, &err), MSB_E_VALUE, "ensure_can_serve",
			  "no spec given");
	assert_null(sb);
	assert_int_equal(fx_count(b, "acquire"), 0);
	msb_router_free(r);
}

/* What no descriptor check can see, the host refuses when it happens, naming the backend. */
static void a_backend_breaking_the_contract_is_refused_by_the_host(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "misbehaving", NULL);
	msb_router *r = router_of(f, &b, 1, MSB_SELECTION_FIXED);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_key key = { "s", "t", "a", "" };
	msb_sandbox *sb = NULL;
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, msb_router_acquire(r, &key, &spec, &sb, &err), MSB_E_BACKEND,
			  "sandbox backend 'misbehaving'", "reported success from acquire and returned no sandbox");
	assert_null(sb);
	/* A failed disposal reported without a word is said by the router, naming the backend. */
	msb_disposal_failure failure = { MSB_DISPOSAL_UNKNOWN, NULL };
	assert_false(msb_router_dispose(r, &key, &failure));
	if (!failure.detail || !strstr(failure.detail, "sandbox backend 'misbehaving' reported a failed delete "
						       "and said nothing more"))
		fail_msg("dispose: %s", failure.detail ? failure.detail : "(none)");
	msb_disposal_failure_free(&failure);
	msb_scope_purge purge = { 0 };
	msb_router_dispose_scope(r, "s", "t", &purge);
	assert_true(purge.has_undisposed);
	if (!purge.undisposed.detail ||
	    !strstr(purge.undisposed.detail, "sandbox backend 'misbehaving' left sandboxes of the conversation "
					     "and said nothing more"))
		fail_msg("dispose_scope: %s", purge.undisposed.detail ? purge.undisposed.detail : "(none)");
	msb_scope_purge_free(&purge);
	msb_router_free(r);

	const msb_plugin *p = NULL;
	for (size_t i = 0; i < msb_loader_count(f->loader); i++)
		if (strcmp(msb_plugin_name(msb_loader_at(f->loader, i)), "misbehaving") == 0)
			p = msb_loader_at(f->loader, i);
	assert_non_null(p);
	msb_config_doc *doc = NULL;
	const char yaml[] = "silent_init: true\n";
	assert_int_equal(msb_config_doc_parse(yaml, sizeof yaml - 1, "<test>", &doc, &err), MSB_OK);
	msb_backend *mute = NULL;
	fx_assert_refused(&err, msb_backend_open(p, msb_config_doc_root(doc), NULL, &f->host, &mute, &err),
			  MSB_E_BACKEND, "backend misbehaving: ", "init failed (SandboxBackendError) and gave no reason");
	assert_null(mute);
	msb_config_doc_free(doc);
}

/*
 * A backend that overshoots a call's cap is held to it by the host: a file over read_file's
 * cap is refused (the backend should have refused it), output over exec's max_output is cut
 * there and flagged (what the backend should have done).
 */
static void a_backend_overshooting_a_cap_is_held_to_it(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "misbehaving", "overshoots_caps: true\n");
	msb_router *r = router_of(f, &b, 1, MSB_SELECTION_FIXED);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_key key = { "s", "t", "a", "" };
	msb_sandbox *sb = acquire_ok(r, &key, &spec);
	msb_buf out = { 0 };
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, msb_sandbox_read_file(sb, "big", NULL, 8, &out, &err),
			  MSB_E_TRANSFER_CAP_EXCEEDED,
			  "sandbox backend 'misbehaving' answered read_file of 'big' with 9 bytes",
			  "over the 8-byte cap");
	assert_int_equal(out.len, 0);
	assert_null(out.data);
	const char *argv[] = { "true", NULL };
	msb_exec_request req = { .argv = argv, .max_output = 3 };
	msb_exec_result res = { 0 };
	assert_int_equal(msb_sandbox_exec(sb, &req, &res, &err), MSB_OK);
	assert_string_equal((char *)res.out.data, "ooo");
	assert_string_equal((char *)res.err.data, "eee");
	assert_true(res.out_truncated && res.err_truncated);
	msb_exec_result_free(&res);
	msb_sandbox_release(sb);
	msb_router_free(r);
}

static void the_backends_own_acquire_failure_is_carried(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", "fail_acquire: SandboxBackendError\n");
	msb_router *r = router_of(f, &b, 1, MSB_SELECTION_FIXED);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_key key = { "s", "t", "a", "" };
	msb_sandbox *sb = NULL;
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, msb_router_acquire(r, &key, &spec, &sb, &err), MSB_E_BACKEND,
			  "acquire failed as injected");
	/* A failure is not cached: once the engine recovers, the key is served. */
	fx_inject(b, "acquire", NULL);
	msb_sandbox_release(acquire_ok(r, &key, &spec));
	assert_int_equal(fx_count(b, "acquire"), 2);
	msb_router_free(r);
}

/* Conversation scope blanks the call id (calls share); call scope names the sandbox by it. */
static void call_scope_folds_the_call_id(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", "isolation_scopes: [conversation, call]\n");
	msb_router *r = router_of(f, &b, 1, MSB_SELECTION_FIXED);
	msb_spec conv, call;
	msb_spec_init(&conv, "k");
	msb_spec_init(&call, "k");
	call.isolation_scope = MSB_SCOPE_CALL;
	msb_key c1 = { "s", "t", "a", "call-1" }, c2 = { "s", "t", "a", "call-2" };

	msb_sandbox *a = acquire_ok(r, &c1, &conv), *b2 = acquire_ok(r, &c2, &conv);
	assert_int_equal(fx_count(b, "acquire"), 1);
	assert_string_equal(fx_recorded(b, "acquire", 0), "scope=s thread=t agent_dir=a call_id= kind=k");
	assert_string_equal(msb_sandbox_key(a)->call_id, "");

	msb_sandbox *x = acquire_ok(r, &c1, &call), *y = acquire_ok(r, &c2, &call), *x2 = acquire_ok(r, &c1, &call);
	assert_int_equal(fx_count(b, "acquire"), 3);
	assert_string_equal(fx_recorded(b, "acquire", 1), "scope=s thread=t agent_dir=a call_id=call-1 kind=k");
	assert_string_equal(fx_recorded(b, "acquire", 2), "scope=s thread=t agent_dir=a call_id=call-2 kind=k");
	assert_string_equal(msb_sandbox_key(x)->call_id, "call-1");

	/* No call id at call scope: refused, never silently shared. */
	msb_key none = { "s", "t", "a", "" };
	msb_sandbox *sb = NULL;
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, msb_router_acquire(r, &none, &call, &sb, &err), MSB_E_VALUE, "call_id",
			  "'call' isolation scope");

	/* A call-scoped sandbox is disposed by its own key, leaving the conversation's. */
	assert_int_equal(fx_live(b), 3);
	assert_true(msb_router_dispose(r, msb_sandbox_key(x), NULL));
	assert_int_equal(fx_live(b), 2);
	assert_string_equal(fx_recorded(b, "dispose", 0), "scope=s thread=t agent_dir=a call_id=call-1");
	assert_true(msb_router_dispose(r, msb_sandbox_key(y), NULL));
	assert_int_equal(fx_live(b), 1);
	/* After disposal the next acquire creates afresh. */
	msb_sandbox *z = acquire_ok(r, &c1, &call);
	assert_int_equal(fx_count(b, "acquire"), 4);
	msb_sandbox_release(a);
	msb_sandbox_release(b2);
	msb_sandbox_release(x);
	msb_sandbox_release(x2);
	msb_sandbox_release(y);
	msb_sandbox_release(z);
	msb_router_free(r);
}

static void dispose_hands_backends_no_null_part(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", NULL);
	msb_router *r = router_of(f, &b, 1, MSB_SELECTION_FIXED);
	msb_key key = { "s", "t", NULL, NULL };
	assert_true(msb_router_dispose(r, &key, NULL));
	assert_string_equal(fx_recorded(b, "dispose", 0), "scope=s thread=t agent_dir= call_id=");
	msb_router_free(r);
}

static void dispose_asks_every_backend_and_folds(void **state)
{
	fx *f = *state;
	msb_backend *bs[3] = { fx_open(f, "inprocess", NULL), fx_open(f, "inproc_b", NULL),
			       fx_open(f, "inproc_vm", NULL) };
	msb_router *r = router_of(f, bs, 3, MSB_SELECTION_FIXED);
	msb_key key = { "s", "t", "a", "" };
	msb_disposal_failure failure = { MSB_DISPOSAL_UNKNOWN, NULL };
	assert_true(msb_router_dispose(r, &key, &failure));
	assert_null(failure.detail);
	for (int i = 0; i < 3; i++)
		assert_int_equal(fx_count(bs[i], "dispose"), 1);

	fx_inject(bs[0], "dispose", "unreachable");
	fx_inject(bs[2], "dispose", "refused");
	assert_false(msb_router_dispose(r, &key, &failure));
	assert_int_equal(failure.code, MSB_DISPOSAL_REFUSED); /* the most actionable wins */
	assert_non_null(strstr(failure.detail, "'inprocess'"));
	assert_non_null(strstr(failure.detail, "(unreachable, injected)"));
	assert_non_null(strstr(failure.detail, "'inproc_vm'"));
	assert_non_null(strstr(failure.detail, "(refused, injected)"));
	msb_disposal_failure_free(&failure);
	for (int i = 0; i < 3; i++)
		assert_int_equal(fx_count(bs[i], "dispose"), 2);
	/* Each code, alone, arrives as itself. */
	fx_inject(bs[2], "dispose", NULL);
	static const char *const codes[] = { "refused", "timeout", "unreachable", "unlisted", "unknown" };
	for (int c = 0; c < MSB_DISPOSAL__COUNT; c++) {
		fx_inject(bs[0], "dispose", codes[c]);
		assert_false(msb_router_dispose(r, &key, &failure));
		assert_int_equal(failure.code, c);
		msb_disposal_failure_free(&failure);
	}
	msb_router_free(r);
}

static void a_key_whose_disposal_failed_is_unclean_until_one_lands(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", NULL);
	msb_router *r = router_of(f, &b, 1, MSB_SELECTION_FIXED);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_key key = { "s", "t", "a", "" }, other = { "s", "t2", "a", "" };
	msb_sandbox_release(acquire_ok(r, &key, &spec));
	fx_inject(b, "dispose", "timeout");
	assert_false(msb_router_dispose(r, &key, NULL));
	/* The host's log hears of it too, once. */
	assert_int_equal(f->n_warnings, 1);
	assert_non_null(strstr(f->warnings, "thread 't'"));
	assert_non_null(strstr(f->warnings, "did not land (timeout)"));
	msb_sandbox *sb = NULL;
	msb_error err = MSB_ERROR_INIT;
	size_t before = fx_count(b, "acquire");
	fx_assert_refused(&err, msb_router_acquire(r, &key, &spec, &sb, &err), MSB_E_UNCLEAN,
			  "thread 't'", "did not land", "timeout: inprocess backend 'inprocess': the delete of",
			  "dispose the key again");
	assert_null(sb);
	assert_int_equal(fx_count(b, "acquire"), before); /* refused before the backend */
	/* Another key is untouched. */
	msb_sandbox_release(acquire_ok(r, &other, &spec));
	/* Still failing: still refused. */
	assert_false(msb_router_dispose(r, &key, NULL));
	fx_assert_refused(&err, msb_router_acquire(r, &key, &spec, &sb, &err), MSB_E_UNCLEAN, "timeout");
	/* A disposal that lands opens the key again. */
	fx_inject(b, "dispose", NULL);
	assert_true(msb_router_dispose(r, &key, NULL));
	msb_sandbox_release(acquire_ok(r, &key, &spec));
	msb_router_free(r);
}

static int body_ran;
static int scope_body(void *ctx)
{
	body_ran++;
	return *(int *)ctx;
}

static void dispose_scope_purges_every_backend_and_the_guard_reports(void **state)
{
	fx *f = *state;
	msb_backend *bs[2] = { fx_open(f, "inprocess", "egress_modes: [closed]\n"),
			       fx_open(f, "inproc_b", "egress_modes: [allowlist]\n") };
	msb_router *r = router_of(f, bs, 2, MSB_SELECTION_PER_SPEC);
	msb_spec closed, allow;
	msb_spec_init(&closed, "a");
	msb_spec_init(&allow, "b");
	allow.egress = MSB_EGRESS_ALLOWLIST;
	msb_key key = { "s", "t", "x", "" }, key2 = { "s", "t", "y", "" }, elsewhere = { "s", "u", "x", "" };
	/* Two kinds under one key route to two backends. */
	msb_sandbox_release(acquire_ok(r, &key, &closed));
	msb_sandbox_release(acquire_ok(r, &key, &allow));
	msb_sandbox_release(acquire_ok(r, &key2, &closed));
	msb_sandbox_release(acquire_ok(r, &elsewhere, &closed));
	assert_int_equal(fx_live(bs[0]), 3);
	assert_int_equal(fx_live(bs[1]), 1);

	msb_scope_purge purge;
	int answer = 42;
	body_ran = 0;
	assert_int_equal(msb_router_scope(r, "s", "t", scope_body, &answer, &purge), 42);
	assert_int_equal(body_ran, 1);
	assert_int_equal(purge.disposed, 3);
	assert_false(purge.has_undisposed);
	msb_scope_purge_free(&purge);
	assert_int_equal(fx_live(bs[0]), 1); /* the other conversation stays */
	assert_int_equal(fx_live(bs[1]), 0);
	assert_string_equal(fx_recorded(bs[1], "dispose_scope", 0), "scope=s thread=t");

	/* A failing body's answer comes back; the purge still ran and still reports. */
	fx_inject(bs[1], "dispose_scope", "unlisted");
	answer = -1;
	assert_int_equal(msb_router_scope(r, "s", "u", scope_body, &answer, &purge), -1);
	assert_int_equal(purge.disposed, 1);
	assert_true(purge.has_undisposed);
	assert_non_null(strstr(f->warnings, "purge of (scope 's', thread 'u') left sandboxes behind (unlisted)"));
	assert_int_equal(purge.undisposed.code, MSB_DISPOSAL_UNLISTED);
	assert_non_null(strstr(purge.undisposed.detail, "'inproc_b'"));
	msb_scope_purge_free(&purge);
	msb_router_free(r);
}

/* A purge that lands whole cleans the conversation's keys. */
static void a_landed_purge_clears_unclean_keys(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", NULL);
	msb_router *r = router_of(f, &b, 1, MSB_SELECTION_FIXED);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_key key = { "s", "t", "a", "" };
	fx_inject(b, "dispose", "refused");
	assert_false(msb_router_dispose(r, &key, NULL));
	msb_sandbox *sb = NULL;
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, msb_router_acquire(r, &key, &spec, &sb, &err), MSB_E_UNCLEAN, "refused");
	msb_router_dispose_scope(r, "s", "t", NULL);
	msb_sandbox_release(acquire_ok(r, &key, &spec));
	msb_router_free(r);
}

/* A failed cleanup disposes by default, reports a disposal that did not land, or keeps. */
static void a_failed_reclaim_follows_the_policy(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", NULL);
	msb_router *r = router_of(f, &b, 1, MSB_SELECTION_FIXED);
	assert_int_equal(msb_router_get_options(r)->reclaim, MSB_RECLAIM_DISPOSE);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_key key = { "s", "t", "a", "" };
	msb_sandbox *sb = acquire_ok(r, &key, &spec);
	assert_int_equal(msb_router_reclaim_failed(r, msb_sandbox_key(sb), NULL), MSB_RECLAIM_OUTCOME_DISPOSED);
	assert_int_equal(fx_live(b), 0);
	msb_sandbox_release(sb);
	sb = acquire_ok(r, &key, &spec);
	fx_inject(b, "dispose", "refused");
	msb_disposal_failure failure = { MSB_DISPOSAL_UNKNOWN, NULL };
	assert_int_equal(msb_router_reclaim_failed(r, &key, &failure), MSB_RECLAIM_OUTCOME_FAILED);
	assert_string_equal(msb_reclaim_outcome_name(MSB_RECLAIM_OUTCOME_FAILED), "failed");
	assert_int_equal(failure.code, MSB_DISPOSAL_REFUSED);
	msb_disposal_failure_free(&failure);
	msb_sandbox *again = NULL;
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, msb_router_acquire(r, &key, &spec, &again, &err), MSB_E_UNCLEAN, "refused");
	msb_sandbox_release(sb);
	msb_router_free(r);

	fx_inject(b, "dispose", NULL);
	msb_router_options o = fx_options(f);
	o.reclaim = MSB_RECLAIM_KEEP;
	assert_int_equal(msb_router_new(&b, 1, &o, &r, &err), MSB_OK);
	size_t disposals = fx_count(b, "dispose");
	assert_int_equal(msb_router_reclaim_failed(r, &key, NULL), MSB_RECLAIM_OUTCOME_KEPT);
	assert_string_equal(msb_reclaim_outcome_name(MSB_RECLAIM_OUTCOME_KEPT), "kept");
	assert_int_equal(fx_count(b, "dispose"), disposals);
	msb_router_free(r);
}

/* ---- racing threads ------------------------------------------------------------------- */

#define RACERS 16

struct racer {
	msb_router *router;
	const msb_key *key;
	const msb_spec *spec;
	pthread_barrier_t *start;
	msb_sandbox *got;
	msb_errc rc;
	char message[256];
};

static void *race(void *arg)
{
	struct racer *r = arg;
	msb_error err = MSB_ERROR_INIT;
	pthread_barrier_wait(r->start);
	r->rc = msb_router_acquire(r->router, r->key, r->spec, &r->got, &err);
	snprintf(r->message, sizeof r->message, "%s", msb_error_message(&err));
	msb_error_clear(&err);
	return NULL;
}

static void run_racers(struct racer *racers, size_t n, msb_router *r, const msb_key *const *keys,
		       const msb_spec *spec)
{
	pthread_t th[RACERS];
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, (unsigned)n);
	for (size_t i = 0; i < n; i++) {
		racers[i] = (struct racer){ .router = r, .key = keys[i], .spec = spec, .start = &start };
		assert_int_equal(pthread_create(&th[i], NULL, race, &racers[i]), 0);
	}
	for (size_t i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&start);
}

static atomic_int observed;
static int count_acquired(void *ctx, const msb_sandbox_acquired *event)
{
	(void)ctx;
	if (!event->refusal)
		atomic_fetch_add(&observed, 1);
	return 0;
}

static void sixteen_racers_one_backend_acquire(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", "acquire_delay: 50ms\n");
	/* The observer is entered from every racing thread at once. */
	msb_observer obs = MSB_OBSERVER_INIT;
	obs.sandbox_acquired = count_acquired;
	atomic_store(&observed, 0);
	msb_router_options o = fx_options(f);
	o.observer = &obs;
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_router_new(&b, 1, &o, &r, &err), MSB_OK);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_key key = { "s", "t", "a", "" };
	const msb_key *keys[RACERS];
	for (int i = 0; i < RACERS; i++)
		keys[i] = &key;
	struct racer racers[RACERS];
	for (int round = 0; round < 3; round++) {
		run_racers(racers, RACERS, r, keys, &spec);
		for (int i = 0; i < RACERS; i++) {
			assert_int_equal(racers[i].rc, MSB_OK);
			assert_string_equal(msb_sandbox_key(racers[i].got)->thread_id, "t");
		}
		/* One backend acquire however many raced, and every racer holds the same sandbox. */
		assert_int_equal(fx_count(b, "acquire"), (size_t)round + 1);
		assert_int_equal(fx_live(b), 1);
		for (int i = 0; i < RACERS; i++)
			msb_sandbox_release(racers[i].got);
		assert_true(msb_router_dispose(r, &key, NULL)); /* the next round creates afresh */
		assert_int_equal(fx_live(b), 0);
	}
	assert_int_equal(atomic_load(&observed), 3 * RACERS);
	msb_router_free(r);
}

static void racers_share_one_failure(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", "acquire_delay: 100ms\nfail_acquire: SandboxBackendError\n");
	msb_router *r = router_of(f, &b, 1, MSB_SELECTION_FIXED);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_key key = { "s", "t", "a", "" };
	const msb_key *keys[RACERS];
	for (int i = 0; i < RACERS; i++)
		keys[i] = &key;
	struct racer racers[RACERS];
	run_racers(racers, RACERS, r, keys, &spec);
	for (int i = 0; i < RACERS; i++) {
		assert_int_equal(racers[i].rc, MSB_E_BACKEND);
		assert_non_null(strstr(racers[i].message, "acquire failed as injected"));
		assert_null(racers[i].got);
	}
	/* Racers that arrived while it was in flight shared its answer. */
	assert_true(fx_count(b, "acquire") < RACERS);
	msb_router_free(r);
}

/*
 * Distinct keys do not queue behind each other: no lock is held across the backend's
 * acquire. The backend makes each acquire wait until all eight are inside it at once, so
 * a router that serialised them would fail every one (after the fake's 5 s bound).
 */
static void distinct_keys_acquire_in_parallel(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", "acquire_barrier: 8\n");
	msb_router *r = router_of(f, &b, 1, MSB_SELECTION_FIXED);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	enum { N = 8 };
	msb_key key[N];
	char names[N][8];
	const msb_key *keys[N];
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof names[i], "t%d", i);
		key[i] = (msb_key){ "s", names[i], "a", "" };
		keys[i] = &key[i];
	}
	struct racer racers[N];
	run_racers(racers, N, r, keys, &spec);
	for (int i = 0; i < N; i++) {
		if (racers[i].rc != MSB_OK)
			fail_msg("racer %d: %s", i, racers[i].message);
		msb_sandbox_release(racers[i].got);
	}
	assert_int_equal(fx_count(b, "acquire"), N);
	msb_router_free(r);
}

/* The barrier can fail: acquires made one after another never meet it. */
static void the_barrier_refuses_a_serial_caller(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", "acquire_barrier: 2\nacquire_barrier_timeout: 50ms\n");
	msb_router *r = router_of(f, &b, 1, MSB_SELECTION_FIXED);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_key key = { "s", "t", "a", "" };
	msb_sandbox *sb = NULL;
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, msb_router_acquire(r, &key, &spec, &sb, &err), MSB_E_TIMEOUT,
			  "only 1 of 2 acquires", "serialised");
	msb_router_free(r);
}

/* Dispose racing acquire on the same key: nothing crashes, leaks or deadlocks. */
struct churn {
	msb_router *r;
	const msb_key *key;
	const msb_spec *spec;
	int acquire;
};

static void *churn(void *arg)
{
	struct churn *c = arg;
	for (int i = 0; i < 200; i++) {
		if (c->acquire) {
			msb_sandbox *sb = NULL;
			if (msb_router_acquire(c->r, c->key, c->spec, &sb, NULL) == MSB_OK)
				msb_sandbox_release(sb);
		} else {
			msb_router_dispose(c->r, c->key, NULL);
		}
	}
	return NULL;
}

static void dispose_races_acquire(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", NULL);
	msb_router *r = router_of(f, &b, 1, MSB_SELECTION_FIXED);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_key key = { "s", "t", "a", "" };
	pthread_t th[4];
	struct churn c[4];
	for (int i = 0; i < 4; i++) {
		c[i] = (struct churn){ r, &key, &spec, i % 2 == 0 };
		pthread_create(&th[i], NULL, churn, &c[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_true(msb_router_dispose(r, &key, NULL));
	assert_int_equal(fx_live(b), 0);
	msb_router_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(get_or_create_per_key_and_kind),
		FX_TEST(a_refused_spec_never_reaches_the_backend),
		FX_TEST(a_key_needs_scope_and_thread),
		FX_TEST(a_backend_breaking_the_contract_is_refused_by_the_host),
		FX_TEST(a_backend_overshooting_a_cap_is_held_to_it),
		FX_TEST(the_backends_own_acquire_failure_is_carried),
		FX_TEST(call_scope_folds_the_call_id),
		FX_TEST(dispose_hands_backends_no_null_part),
		FX_TEST(dispose_asks_every_backend_and_folds),
		FX_TEST(a_key_whose_disposal_failed_is_unclean_until_one_lands),
		FX_TEST(dispose_scope_purges_every_backend_and_the_guard_reports),
		FX_TEST(a_landed_purge_clears_unclean_keys),
		FX_TEST(a_failed_reclaim_follows_the_policy),
		FX_TEST(sixteen_racers_one_backend_acquire),
		FX_TEST(racers_share_one_failure),
		FX_TEST(distinct_keys_acquire_in_parallel),
		FX_TEST(the_barrier_refuses_a_serial_caller),
		FX_TEST(dispose_races_acquire),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
