/*
 * test_router_observer.c — the events the router emits (SandboxAcquired with the error's
 * name and never its message, SandboxDisposed, ScopeDisposed, EgressObserved through the
 * host a backend was opened with), an observer's failure never failing a call, an older
 * callbacks table never read past its end, and the EffectiveState of a served acquire.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "router_fixture.h"

/* What the recorder saw, copied out of each event (events are borrowed). */
struct seen {
	pthread_mutex_t lock;
	int acquired, disposed, scope_disposed, egress;
	char backend[64], refusal[64], call[64], kind[64], thread[64];
	msb_scope scope;
	bool dispose_failed;
	msb_disposal_code dispose_code;
	uint64_t scope_count;
	bool scope_failed;
	char destination[128];
	bool allowed;
	int answer; /* what every callback returns */
};

static void copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "(null)");
}

static int on_acquired(void *ctx, const msb_sandbox_acquired *e)
{
	struct seen *s = ctx;
	pthread_mutex_lock(&s->lock);
	s->acquired++;
	copy(s->backend, sizeof s->backend, e->backend);
	copy(s->refusal, sizeof s->refusal, e->refusal);
	copy(s->call, sizeof s->call, e->call);
	copy(s->kind, sizeof s->kind, e->spec->kind);
	copy(s->thread, sizeof s->thread, e->key->thread_id);
	s->scope = e->scope;
	pthread_mutex_unlock(&s->lock);
	return s->answer;
}

static int on_disposed(void *ctx, const msb_sandbox_disposed *e)
{
	struct seen *s = ctx;
	s->disposed++;
	s->dispose_failed = e->failed;
	s->dispose_code = e->code;
	copy(s->thread, sizeof s->thread, e->key->thread_id);
	return s->answer;
}

static int on_scope_disposed(void *ctx, const msb_scope_disposed *e)
{
	struct seen *s = ctx;
	s->scope_disposed++;
	s->scope_count = e->disposed;
	s->scope_failed = e->failed;
	copy(s->thread, sizeof s->thread, e->thread_id);
	return s->answer;
}

static int on_egress(void *ctx, const msb_egress_observed *e)
{
	struct seen *s = ctx;
	s->egress++;
	copy(s->destination, sizeof s->destination, e->destination);
	copy(s->thread, sizeof s->thread, e->key->thread_id);
	s->allowed = e->allowed;
	return s->answer;
}

static struct seen seen;
static msb_observer observer;

static int setup(void **state)
{
	static fx f;
	memset(&seen, 0, sizeof seen);
	pthread_mutex_init(&seen.lock, NULL);
	observer = (msb_observer)MSB_OBSERVER_INIT;
	observer.ctx = &seen;
	observer.sandbox_acquired = on_acquired;
	observer.sandbox_disposed = on_disposed;
	observer.scope_disposed = on_scope_disposed;
	observer.egress_observed = on_egress;
	fx_init(&f, &observer);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	fx_free(*state);
	pthread_mutex_destroy(&seen.lock);
	return 0;
}

static msb_router *observed_router(fx *f, msb_backend *b, const msb_observer *o)
{
	msb_router_options opt = fx_options(f);
	opt.observer = o;
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (msb_router_new(&b, 1, &opt, &r, &err) != MSB_OK)
		fail_msg("router: %s", msb_error_message(&err));
	return r;
}

static void a_served_acquire_is_recorded(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", NULL);
	msb_router *r = observed_router(f, b, &observer);
	msb_spec spec;
	msb_spec_init(&spec, "bicep");
	msb_key key = { "s", "t1", "a", "call-9" };
	msb_sandbox *sb = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_router_acquire(r, &key, &spec, &sb, &err), MSB_OK);
	assert_int_equal(seen.acquired, 1);
	assert_string_equal(seen.backend, "inprocess");
	assert_string_equal(seen.refusal, "(null)");
	assert_string_equal(seen.call, "call-9");
	assert_string_equal(seen.kind, "bicep");
	assert_string_equal(seen.thread, "t1");
	assert_int_equal(seen.scope, MSB_SCOPE_CONVERSATION);
	msb_sandbox_release(sb);
	msb_router_free(r);
}

/* A refusal is recorded by name; the message, which can carry an endpoint, never is. */
static void a_refused_acquire_is_recorded_by_name(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", "egress_modes: [closed]\n");
	msb_router *r = observed_router(f, b, &observer);
	msb_spec spec;
	msb_spec_init(&spec, "bicep");
	spec.egress = MSB_EGRESS_ALLOWLIST;
	msb_key key = { "s", "t", "a", "" };
	msb_sandbox *sb = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_router_acquire(r, &key, &spec, &sb, &err), MSB_E_EGRESS_NOT_ENFORCED);
	msb_error_clear(&err);
	assert_int_equal(seen.acquired, 1);
	assert_string_equal(seen.refusal, "SandboxEgressNotEnforced");
	assert_string_equal(seen.call, "(null)");
	/* And a backend's failure, likewise by name. */
	fx_inject(b, "acquire", "SandboxBackendError");
	msb_spec_init(&spec, "bicep");
	assert_int_equal(msb_router_acquire(r, &key, &spec, &sb, &err), MSB_E_BACKEND);
	msb_error_clear(&err);
	assert_int_equal(seen.acquired, 2);
	assert_string_equal(seen.refusal, "SandboxBackendError");
	assert_string_equal(seen.backend, "inprocess");
	msb_router_free(r);
}

static void disposals_are_recorded(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", NULL);
	msb_router *r = observed_router(f, b, &observer);
	msb_key key = { "s", "t5", "a", "" };
	assert_true(msb_router_dispose(r, &key, NULL));
	assert_int_equal(seen.disposed, 1);
	assert_false(seen.dispose_failed);
	assert_string_equal(seen.thread, "t5");
	fx_inject(b, "dispose", "unreachable");
	assert_false(msb_router_dispose(r, &key, NULL));
	assert_int_equal(seen.disposed, 2);
	assert_true(seen.dispose_failed);
	assert_int_equal(seen.dispose_code, MSB_DISPOSAL_UNREACHABLE);

	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_key k2 = { "s", "t6", "a", "" };
	msb_sandbox *sb = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_router_acquire(r, &k2, &spec, &sb, &err), MSB_OK);
	msb_sandbox_release(sb);
	msb_scope_purge purge;
	msb_router_dispose_scope(r, "s", "t6", &purge);
	msb_scope_purge_free(&purge);
	assert_int_equal(seen.scope_disposed, 1);
	assert_int_equal(seen.scope_count, 1);
	assert_false(seen.scope_failed);
	assert_string_equal(seen.thread, "t6");
	msb_router_free(r);
}

/* A backend reporting its egress decision reaches the observer the host was built with. */
static void egress_decisions_reach_the_observer(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", "observes_egress: true\n");
	assert_true(msb_backend_declarations(b)->observes_egress);
	msb_key key = { "s", "t7", "a", "" };
	fx_egress(b, &key, "pypi.org:443", false);
	assert_int_equal(seen.egress, 1);
	assert_string_equal(seen.destination, "pypi.org:443");
	assert_string_equal(seen.thread, "t7");
	assert_false(seen.allowed);
}

/* An observer that fails is reported and ignored: the call it watched succeeds. */
static void a_failing_observer_never_fails_a_call(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", NULL);
	msb_router *r = observed_router(f, b, &observer);
	seen.answer = -5;
	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_key key = { "s", "t", "a", "" };
	msb_sandbox *sb = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_router_acquire(r, &key, &spec, &sb, &err), MSB_OK);
	assert_non_null(sb);
	assert_true(msb_router_dispose(r, &key, NULL));
	msb_router_dispose_scope(r, "s", "t", NULL);
	assert_int_equal(seen.acquired, 1);
	assert_int_equal(seen.disposed, 1);
	assert_int_equal(seen.scope_disposed, 1);
	assert_int_equal(msb_observer_sandbox_acquired(&observer, &(msb_sandbox_acquired){ .key = &key, .spec = &spec }), -5);
	msb_sandbox_release(sb);
	msb_router_free(r);
}

/* A table built before a field existed is never read past its struct_size. */
static void an_older_table_is_read_only_as_far_as_it_goes(void **state)
{
	(void)state;
	msb_observer old = observer;
	old.struct_size = (uint32_t)offsetof(msb_observer, scope_disposed);
	msb_key key = { "s", "t", "a", "" };
	assert_int_equal(msb_observer_scope_disposed(&old, &(msb_scope_disposed){ .scope = "s", .thread_id = "t" }), 0);
	assert_int_equal(seen.scope_disposed, 0);
	msb_observer_sandbox_disposed(&old, &(msb_sandbox_disposed){ .key = &key });
	assert_int_equal(seen.disposed, 1);
	/* NULL and empty tables cost nothing and say nothing. */
	assert_int_equal(msb_observer_tool_call_ended(NULL, &(msb_tool_call_ended){ .call = "c" }), 0);
	msb_observer empty = MSB_OBSERVER_INIT;
	assert_int_equal(msb_observer_outputs_collected(&empty, &(msb_outputs_collected){ 0 }), 0);
	assert_int_equal(msb_observer_host_tool_called(&empty, &(msb_host_tool_called){ 0 }), 0);
	assert_int_equal(msb_observer_store_file_read(&empty, &(msb_store_file_read){ 0 }), 0);
}

static void no_observer_is_fine(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", NULL);
	msb_router *r = observed_router(f, b, NULL);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_key key = { "s", "t", "a", "" };
	msb_sandbox *sb = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_router_acquire(r, &key, &spec, &sb, &err), MSB_OK);
	assert_true(msb_router_dispose(r, &key, NULL));
	assert_int_equal(seen.acquired + seen.disposed, 0);
	msb_sandbox_release(sb);
	msb_router_free(r);
}

static void the_effective_state_of_a_served_acquire(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inproc_vm",
				 "capabilities: [exec, files_in, files_out, run_code]\n"
				 "isolation_scopes: [conversation, call]\n");
	msb_router *r = observed_router(f, b, NULL);
	msb_spec spec;
	msb_spec_init(&spec, "bicep");
	spec.egress = MSB_EGRESS_ALLOWLIST;
	spec.egress_allow = (const char *const[]){ "mcr.microsoft.com", "pypi.org", NULL };
	spec.requires |= MSB_BIT(MSB_CAP_FILES_OUT);
	spec.isolation_scope = MSB_SCOPE_CALL;
	char call[] = "call-3";
	msb_key key = { "s", "t", "a", call };
	msb_sandbox *sb = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_router_acquire(r, &key, &spec, &sb, &err), MSB_OK);
	call[0] = 'X'; /* the record owns its strings */
	spec.egress_allow = NULL;
	const msb_effective_state *st = msb_sandbox_effective_state(sb);
	assert_string_equal(st->backend, "inproc_vm");
	assert_int_equal(st->isolation, MSB_ISO_VM);
	assert_int_equal(st->scope, MSB_SCOPE_CALL);
	assert_int_equal(st->egress, MSB_EGRESS_ALLOWLIST);
	assert_string_equal(st->egress_allow[0], "mcr.microsoft.com");
	assert_string_equal(st->egress_allow[1], "pypi.org");
	assert_null(st->egress_allow[2]);
	assert_int_equal(st->capabilities_asked, MSB_DEFAULT_CAPABILITIES | MSB_BIT(MSB_CAP_FILES_OUT));
	assert_int_equal(st->capabilities_declared, MSB_DEFAULT_CAPABILITIES | MSB_BIT(MSB_CAP_FILES_OUT) |
							    MSB_BIT(MSB_CAP_RUN_CODE));
	assert_string_equal(st->call, "call-3");
	assert_string_equal(msb_sandbox_spec(sb)->egress_allow[1], "pypi.org");
	msb_sandbox_release(sb);
	msb_router_free(r);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(a_served_acquire_is_recorded),
		T(a_refused_acquire_is_recorded_by_name),
		T(disposals_are_recorded),
		T(egress_decisions_reach_the_observer),
		T(a_failing_observer_never_fails_a_call),
		T(an_older_table_is_read_only_as_far_as_it_goes),
		T(no_observer_is_fine),
		T(the_effective_state_of_a_served_acquire),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
