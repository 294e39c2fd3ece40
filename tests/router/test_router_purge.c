/*
 * test_router_purge.c — what a dispose_scope that did not land leaves behind: the keys of the
 * conversation the router routed to a backend whose purge failed are held closed with
 * SandboxUnclean, exactly as a failed dispose(key) holds its key, and keys served only by
 * backends whose purge landed stay open. A backend answers a purge for the whole
 * conversation, so the backend a key was routed to is the finest attribution there is.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
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

static void acquire_ok(msb_router *r, const msb_key *key, const msb_spec *spec)
{
	msb_sandbox *sb = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (msb_router_acquire(r, key, spec, &sb, &err) != MSB_OK)
		fail_msg("acquire (thread %s, agent_dir %s, kind %s): %s: %s", key->thread_id,
			 key->agent_dir, spec->kind, msb_errc_name(err.code), msb_error_message(&err));
	assert_non_null(sb);
	msb_sandbox_release(sb);
}

/* Assert acquire is refused with SandboxUnclean, before any backend was asked. */
#define assert_unclean(r, key, spec, bs, n, ...)                                                   \
	do {                                                                                       \
		size_t asked_ = 0;                                                                 \
		for (size_t i_ = 0; i_ < (n); i_++)                                                \
			asked_ += fx_count((bs)[i_], "acquire");                                   \
		msb_sandbox *sb_ = NULL;                                                           \
		msb_error err_ = MSB_ERROR_INIT;                                                   \
		fx_assert_refused(&err_, msb_router_acquire((r), (key), (spec), &sb_, &err_),       \
				  MSB_E_UNCLEAN, __VA_ARGS__);                                     \
		assert_null(sb_);                                                                  \
		size_t now_ = 0;                                                                   \
		for (size_t i_ = 0; i_ < (n); i_++)                                                \
			now_ += fx_count((bs)[i_], "acquire");                                     \
		assert_int_equal(now_, asked_);                                                    \
	} while (0)

/*
 * Two backends under per_spec: kind "a" (closed egress) routes to the first, kind "b"
 * (allowlist) to the second. Only the second's purge fails.
 */
static void a_failed_purge_holds_closed_only_the_keys_its_backend_served(void **state)
{
	fx *f = *state;
	msb_backend *bs[2] = { fx_open(f, "inprocess", "egress_modes: [closed]\n"),
			       fx_open(f, "inproc_b", "egress_modes: [allowlist]\n") };
	msb_router *r = router_of(f, bs, 2, MSB_SELECTION_PER_SPEC);
	msb_spec a, b;
	msb_spec_init(&a, "a");
	msb_spec_init(&b, "b");
	b.egress = MSB_EGRESS_ALLOWLIST;
	msb_key landed = { "s", "t", "landed", "" }, failed = { "s", "t", "failed", "" },
		both = { "s", "t", "both", "" }, elsewhere = { "s", "u", "failed", "" };
	acquire_ok(r, &landed, &a);
	acquire_ok(r, &failed, &b);
	acquire_ok(r, &both, &a);
	acquire_ok(r, &both, &b);
	acquire_ok(r, &elsewhere, &b);

	fx_inject(bs[1], "dispose_scope", "timeout");
	msb_scope_purge purge;
	msb_router_dispose_scope(r, "s", "t", &purge);
	assert_true(purge.has_undisposed);
	assert_int_equal(purge.undisposed.code, MSB_DISPOSAL_TIMEOUT);
	assert_int_equal(purge.disposed, 2); /* the first backend's two went */
	msb_scope_purge_free(&purge);

	/* Routed to the failing backend: refused, quoting that backend, before it is asked. */
	assert_unclean(r, &failed, &b, bs, 2, "thread 't'", "agent_dir 'failed'", "did not land",
		       "timeout: inprocess backend 'inproc_b': the purge of", "dispose the key again");
	/* The key is the unit: a kind whose own backend landed is refused under it too. */
	assert_unclean(r, &both, &a, bs, 2, "agent_dir 'both'", "'inproc_b'");
	/* Routed only to the backend whose purge landed: disposed cleanly, so open. */
	acquire_ok(r, &landed, &a);
	acquire_ok(r, &landed, &b);
	/* Another conversation was never purged. */
	acquire_ok(r, &elsewhere, &b);
	/* The host's log hears it once, with how many keys are held. */
	assert_int_equal(f->n_warnings, 1);
	assert_non_null(strstr(f->warnings, "left sandboxes behind (timeout)"));
	assert_non_null(strstr(f->warnings, "2 key(s)"));
	assert_non_null(strstr(f->warnings, "SandboxUnclean"));

	/* A disposal of the key that lands opens it; the other held key stays held. */
	assert_true(msb_router_dispose(r, &failed, NULL));
	acquire_ok(r, &failed, &b);
	assert_unclean(r, &both, &b, bs, 2, "agent_dir 'both'");

	/* And a purge that lands whole opens every key of the conversation. */
	fx_inject(bs[1], "dispose_scope", NULL);
	msb_router_dispose_scope(r, "s", "t", &purge);
	assert_false(purge.has_undisposed);
	msb_scope_purge_free(&purge);
	acquire_ok(r, &both, &a);
	acquire_ok(r, &both, &b);
	msb_router_free(r);
}

/*
 * One backend: it cannot say which of its sandboxes stayed, so every key of the
 * conversation it served is held, call-scoped ones by their own call id. Keys it never
 * served through this router are not the router's to hold.
 */
static void a_failed_purge_holds_every_key_its_backend_served(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", "isolation_scopes: [conversation, call]\n");
	msb_router *r = router_of(f, &b, 1, MSB_SELECTION_FIXED);
	msb_spec conv, call;
	msb_spec_init(&conv, "k");
	msb_spec_init(&call, "k");
	call.isolation_scope = MSB_SCOPE_CALL;
	msb_key one = { "s", "t", "one", "" }, two = { "s", "t", "two", "" },
		in_call = { "s", "t", "one", "call-1" }, other_call = { "s", "t", "one", "call-2" },
		never = { "s", "t", "never", "" };
	acquire_ok(r, &one, &conv);
	acquire_ok(r, &two, &conv);
	acquire_ok(r, &in_call, &call);

	fx_inject(b, "dispose_scope", "refused");
	msb_scope_purge purge;
	msb_router_dispose_scope(r, "s", "t", &purge);
	assert_true(purge.has_undisposed);
	msb_scope_purge_free(&purge);

	msb_backend *bs[1] = { b };
	assert_unclean(r, &one, &conv, bs, 1, "agent_dir 'one'", "refused");
	assert_unclean(r, &two, &conv, bs, 1, "agent_dir 'two'", "refused");
	assert_unclean(r, &in_call, &call, bs, 1, "call 'call-1'", "refused");
	/* A call the purge never saw is a new sandbox, and a key never served is not held. */
	acquire_ok(r, &other_call, &call);
	acquire_ok(r, &never, &conv);
	assert_non_null(strstr(f->warnings, "3 key(s)"));
	msb_router_free(r);
}

/* A purge that fails with nothing of the conversation routed here holds no key. */
static void a_failed_purge_of_nothing_served_holds_nothing(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", NULL);
	msb_router *r = router_of(f, &b, 1, MSB_SELECTION_FIXED);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_key key = { "s", "t", "a", "" };
	fx_inject(b, "dispose_scope", "unreachable");
	msb_router_dispose_scope(r, "s", "t", NULL);
	assert_non_null(strstr(f->warnings, "0 key(s)"));
	acquire_ok(r, &key, &spec);
	msb_router_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(a_failed_purge_holds_closed_only_the_keys_its_backend_served),
		FX_TEST(a_failed_purge_holds_every_key_its_backend_served),
		FX_TEST(a_failed_purge_of_nothing_served_holds_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
