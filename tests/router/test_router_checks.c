/*
 * test_router_checks.c — the six checks and their silence rules, each refusal with its seed
 * name and a sentence naming what was refused, the order they run in, and per_spec routing
 * (including the migration case of dropping `selected`).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "router_fixture.h"

/* A fixed router over one backend of `plugin` configured with `yaml`. */
static msb_router *router_over(fx *f, const char *plugin, const char *yaml, msb_router_options *o)
{
	msb_backend *b = fx_open(f, plugin, yaml);
	msb_router_options local = fx_options(f);
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (msb_router_new(&b, 1, o ? o : &local, &r, &err) != MSB_OK)
		fail_msg("router: %s", msb_error_message(&err));
	return r;
}

static msb_errc serve(msb_router *r, const msb_spec *spec, msb_error *err)
{
	const msb_backend *chosen = NULL;
	return msb_router_ensure_can_serve(r, spec, &chosen, err);
}

/* ---- denials ---------------------------------------------------------------------- */

static void a_denied_capability_is_refused_first(void **state)
{
	fx *f = *state;
	msb_router_options o = fx_options(f);
	o.denied_capabilities = MSB_BIT(MSB_CAP_HOST_TOOLS);
	/* The backend lacks host_tools too; the denial, a posture statement, is what is reported. */
	msb_router *r = router_over(f, "inprocess", NULL, &o);
	msb_spec spec;
	msb_spec_init(&spec, "bicep");
	spec.requires |= MSB_BIT(MSB_CAP_HOST_TOOLS);
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_CAPABILITY_DENIED, "'bicep'", "host_tools",
			  "denied_capabilities");
	/* Not requiring it: served. */
	msb_spec_init(&spec, "bicep");
	assert_int_equal(serve(r, &spec, &err), MSB_OK);
	msb_router_free(r);
}

static void a_denied_identity_is_refused(void **state)
{
	fx *f = *state;
	msb_router_options o = fx_options(f);
	o.denied_identities = MSB_BIT(MSB_IDENTITY_USER);
	msb_router *r = router_over(f, "inprocess", NULL, &o);
	msb_spec spec;
	msb_spec_init(&spec, "ops");
	spec.identities = MSB_BIT(MSB_IDENTITY_USER) | MSB_BIT(MSB_IDENTITY_APP);
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_IDENTITY_DENIED, "'ops'", "user",
			  "denied_identities");
	spec.identities = MSB_BIT(MSB_IDENTITY_APP);
	assert_int_equal(serve(r, &spec, &err), MSB_OK);
	msb_router_free(r);
}

/* ---- the floor -------------------------------------------------------------------- */

static void a_spec_raises_the_floor(void **state)
{
	fx *f = *state;
	msb_router *r = router_over(f, "inproc_container", NULL, NULL);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	spec.min_isolation = MSB_ISO_MICROVM;
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_BACKEND_NOT_PERMITTED, "'k'",
			  "at least 'microvm'", "'inproc_container' declares 'container'", "ladder");
	spec.min_isolation = MSB_ISO_CONTAINER;
	assert_int_equal(serve(r, &spec, &err), MSB_OK);
	msb_router_free(r);
}

/* A spec asking for less than the host never lowers it: per_spec still skips the weak one. */
static void a_spec_never_lowers_the_floor(void **state)
{
	fx *f = *state;
	msb_backend *bs[2] = { fx_open(f, "inprocess", NULL), fx_open(f, "inproc_microvm", NULL) };
	msb_router_options o = MSB_ROUTER_OPTIONS_INIT;
	o.selection = MSB_SELECTION_PER_SPEC;
	o.warn = fx_warn;
	o.warn_ctx = f;
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_router_new(bs, 2, &o, &r, &err), MSB_OK);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	spec.min_isolation = MSB_ISO_NONE;
	const msb_backend *chosen = NULL;
	assert_int_equal(msb_router_ensure_can_serve(r, &spec, &chosen, &err), MSB_OK);
	assert_ptr_equal(chosen, bs[1]);
	msb_router_free(r);
}

/* ---- capabilities ----------------------------------------------------------------- */

static void a_missing_capability_is_named(void **state)
{
	fx *f = *state;
	msb_router *r = router_over(f, "inprocess", "capabilities: [exec, files_in, run_code]\n", NULL);
	msb_spec spec;
	msb_spec_init(&spec, "codeact");
	spec.requires |= MSB_BIT(MSB_CAP_FILES_OUT) | MSB_BIT(MSB_CAP_FILES_LIST) | MSB_BIT(MSB_CAP_RUN_CODE);
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_CAPABILITY_NOT_SUPPORTED, "'inprocess'",
			  "files_out, files_list", "'codeact'", "declares exec, run_code, files_in");
	msb_router_free(r);
}

/* Unstated capabilities read as {exec, files_in}: a default spec is served, more is not. */
static void unstated_capabilities_read_as_the_default(void **state)
{
	fx *f = *state;
	msb_router *r = router_over(f, "inproc_silent", NULL, NULL);
	const msb_backend *b = msb_router_backend_at(r, 0);
	assert_int_equal(msb_backend_declarations(b)->capabilities, MSB_DEFAULT_CAPABILITIES);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	assert_int_equal(spec.requires, MSB_DEFAULT_CAPABILITIES);
	spec.requires |= MSB_BIT(MSB_CAP_RUN_CODE);
	spec.egress = MSB_EGRESS_CLOSED;
	msb_error err = MSB_ERROR_INIT;
	/* Capabilities run before egress, so the run_code refusal is what is reported. */
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_CAPABILITY_NOT_SUPPORTED, "run_code",
			  "declares exec, files_in");
	msb_router_free(r);
}

/* ---- OS family -------------------------------------------------------------------- */

static void os_family_absence_refuses_only_a_spec_that_asks(void **state)
{
	fx *f = *state;
	msb_router *r = router_over(f, "inprocess", NULL, NULL); /* os_families: [] */
	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(serve(r, &spec, &err), MSB_OK);
	spec.requires_os_family = MSB_OS_POSIX;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_OS_FAMILY_NOT_SUPPORTED,
			  "no guest whose shape it states", "'posix'");
	msb_router_free(r);
	r = router_over(f, "inprocess", "os_families: [windows]\n", NULL);
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_OS_FAMILY_NOT_SUPPORTED, "hands out windows",
			  "'posix' guest");
	msb_router_free(r);
	r = router_over(f, "inprocess", "os_families: [posix, windows]\n", NULL);
	assert_int_equal(serve(r, &spec, &err), MSB_OK);
	msb_router_free(r);
}

/* ---- transfer ceilings ------------------------------------------------------------ */

static void each_transfer_field_in_each_direction_is_refused_not_clamped(void **state)
{
	fx *f = *state;
	msb_router *r = router_over(f, "inprocess", NULL, NULL); /* the default ceilings */
	const msb_transfer_limits def = MSB_DEFAULT_TRANSFER_LIMITS;
	msb_spec spec;
	msb_error err = MSB_ERROR_INIT;
	msb_spec_init(&spec, "k");
	assert_int_equal(serve(r, &spec, &err), MSB_OK); /* default ask meets default ceiling */

	msb_spec_init(&spec, "k");
	spec.files_in.max_bytes_per_file = def.max_bytes_per_file + 1;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_TRANSFER_LIMITS_NOT_PERMITTED,
			  "files_in limits", "files_in.max_bytes_per_file asks 8388609 and the ceiling is 8388608",
			  "clamped");
	assert_int_equal(spec.files_in.max_bytes_per_file, def.max_bytes_per_file + 1);

	msb_spec_init(&spec, "k");
	spec.files_in.max_total_bytes = def.max_total_bytes * 2;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_TRANSFER_LIMITS_NOT_PERMITTED,
			  "files_in.max_total_bytes asks 67108864 and the ceiling is 33554432");

	msb_spec_init(&spec, "k");
	spec.files_in.max_files = 65;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_TRANSFER_LIMITS_NOT_PERMITTED,
			  "files_in.max_files asks 65 and the ceiling is 64");

	msb_spec_init(&spec, "k");
	spec.files_out.max_bytes_per_file = def.max_bytes_per_file + 1;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_TRANSFER_LIMITS_NOT_PERMITTED,
			  "files_out.max_bytes_per_file asks 8388609");

	msb_spec_init(&spec, "k");
	spec.files_out.max_total_bytes = def.max_total_bytes + 1;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_TRANSFER_LIMITS_NOT_PERMITTED,
			  "files_out.max_total_bytes asks 33554433");

	msb_spec_init(&spec, "k");
	spec.files_out.max_files = 100;
	spec.files_out.max_total_bytes = def.max_total_bytes + 1;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_TRANSFER_LIMITS_NOT_PERMITTED,
			  "files_out.max_total_bytes asks 33554433", "files_out.max_files asks 100 and the ceiling is 64");
	msb_router_free(r);
}

static void a_lower_declared_ceiling_refuses_a_default_ask(void **state)
{
	fx *f = *state;
	msb_router *r = router_over(f, "inprocess", "limits: {files_out: {max_files: 4}}\n", NULL);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_TRANSFER_LIMITS_NOT_PERMITTED,
			  "files_out.max_files asks 64 and the ceiling is 4");
	spec.files_out.max_files = 4;
	assert_int_equal(serve(r, &spec, &err), MSB_OK);
	msb_router_free(r);
	/* A raised ceiling serves a bigger ask. */
	r = router_over(f, "inprocess", "limits: {files_in: {max_files: 1000, max_total_bytes: 1GiB}}\n", NULL);
	spec.files_in.max_files = 1000;
	spec.files_in.max_total_bytes = 1024ull * 1024 * 1024;
	assert_int_equal(serve(r, &spec, &err), MSB_OK);
	msb_router_free(r);
}

/* Unstated limits read as the default ceilings: a bigger ask is refused. */
static void unstated_limits_read_as_the_default_ceilings(void **state)
{
	fx *f = *state;
	msb_router *r = router_over(f, "inproc_silent", NULL, NULL);
	const msb_sandbox_limits def = MSB_DEFAULT_SANDBOX_LIMITS;
	assert_memory_equal(&msb_backend_declarations(msb_router_backend_at(r, 0))->limits, &def, sizeof def);
	msb_router_free(r);
}

/* ---- egress ----------------------------------------------------------------------- */

static void egress_is_exact_in_both_directions(void **state)
{
	fx *f = *state;
	msb_router *r = router_over(f, "inprocess", "egress_modes: [closed]\n", NULL);
	msb_spec spec;
	msb_spec_init(&spec, "bicep");
	spec.egress = MSB_EGRESS_ALLOWLIST;
	spec.egress_allow = (const char *const[]){ "mcr.microsoft.com", NULL };
	msb_error err = MSB_ERROR_INIT;
	/* Confining more than asked is refused, with the seed's sentence. */
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_EGRESS_NOT_ENFORCED,
			  "sandbox backend 'inprocess' cannot enforce the 'allowlist' egress the 'bicep' "
			  "workload runs in (it enforces closed)");
	msb_spec_init(&spec, "bicep");
	assert_int_equal(serve(r, &spec, &err), MSB_OK); /* closed on closed */
	msb_router_free(r);

	/* Confining less than asked is refused too. */
	r = router_over(f, "inprocess", "egress_modes: [unrestricted, allowlist]\n", NULL);
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_EGRESS_NOT_ENFORCED,
			  "cannot enforce the 'closed' egress", "(it enforces unrestricted, allowlist)");
	spec.egress = MSB_EGRESS_UNRESTRICTED;
	assert_int_equal(serve(r, &spec, &err), MSB_OK);
	msb_router_free(r);
}

/* The seed's old closed-vs-allowlist warning: since 0.19 a refusal, and neither path warns. */
static void no_egress_warning_on_either_path(void **state)
{
	fx *f = *state;
	msb_router *r = router_over(f, "inprocess", "egress_modes: [closed]\n", NULL);
	msb_spec spec;
	msb_spec_init(&spec, "bicep");
	spec.egress = MSB_EGRESS_ALLOWLIST;
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_EGRESS_NOT_ENFORCED, "'allowlist'");
	msb_key key = { "s", "t", "a", "" };
	msb_sandbox *sb = NULL;
	fx_assert_refused(&err, msb_router_acquire(r, &key, &spec, &sb, &err), MSB_E_EGRESS_NOT_ENFORCED,
			  "'allowlist'");
	assert_int_equal(f->n_warnings, 0);
	msb_router_free(r);
}

/* An undeclared egress_modes enforces nothing: every spec is refused, closed included. */
static void undeclared_egress_refuses_every_spec(void **state)
{
	fx *f = *state;
	msb_router *r = router_over(f, "inproc_silent", NULL, NULL);
	msb_spec spec;
	msb_error err = MSB_ERROR_INIT;
	for (int mode = 0; mode < MSB_EGRESS__COUNT; mode++) {
		msb_spec_init(&spec, "k");
		spec.egress = (msb_egress)mode;
		fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_EGRESS_NOT_ENFORCED, "(it enforces nothing)");
	}
	msb_router_free(r);
}

/* ---- isolation scope -------------------------------------------------------------- */

static void scope_is_the_stricter_of_host_and_spec(void **state)
{
	fx *f = *state;
	msb_router *r = router_over(f, "inprocess", NULL, NULL); /* isolation_scopes: [conversation] */
	msb_spec spec;
	msb_spec_init(&spec, "k");
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(serve(r, &spec, &err), MSB_OK);
	spec.isolation_scope = MSB_SCOPE_CALL;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_SCOPE_NOT_ENFORCED, "needs 'call'",
			  "serves conversation", "shared");
	msb_router_free(r);

	/* The host's floor raises a conversation spec to call. */
	msb_router_options o = fx_options(f);
	o.min_isolation_scope = MSB_SCOPE_CALL;
	r = router_over(f, "inprocess", NULL, &o);
	msb_spec_init(&spec, "k");
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_SCOPE_NOT_ENFORCED, "needs 'call'",
			  "host's 'call' floor");
	msb_router_free(r);
	r = router_over(f, "inprocess", "isolation_scopes: [conversation, call]\n", &o);
	assert_int_equal(serve(r, &spec, &err), MSB_OK);
	msb_router_free(r);
}

/* Unstated isolation_scopes read as a claim of {conversation}. */
static void unstated_scopes_read_as_conversation(void **state)
{
	fx *f = *state;
	msb_router *r = router_over(f, "inproc_silent", NULL, NULL);
	const msb_effective_declarations *d = msb_backend_declarations(msb_router_backend_at(r, 0));
	assert_int_equal(d->isolation_scopes, MSB_BIT(MSB_SCOPE_CONVERSATION));
	assert_int_equal(d->os_families, 0);
	assert_int_equal(d->egress_modes, 0);
	assert_false(d->observes_egress);
	msb_router_free(r);
}

/* ---- order ------------------------------------------------------------------------ */

static void checks_run_in_the_seed_order(void **state)
{
	fx *f = *state;
	msb_router_options o = fx_options(f);
	o.denied_capabilities = MSB_BIT(MSB_CAP_SNAPSHOT);
	msb_router *r = router_over(f, "inproc_container",
				    "egress_modes: [closed]\nlimits: {files_in: {max_files: 1}}\n", &o);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	/* Everything wrong at once; peel one failure off at a time. */
	spec.requires |= MSB_BIT(MSB_CAP_SNAPSHOT) | MSB_BIT(MSB_CAP_FILES_OUT);
	spec.min_isolation = MSB_ISO_VM;
	spec.requires_os_family = MSB_OS_WINDOWS;
	spec.egress = MSB_EGRESS_UNRESTRICTED;
	spec.isolation_scope = MSB_SCOPE_CALL;
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_CAPABILITY_DENIED, "snapshot");
	spec.requires &= ~MSB_BIT(MSB_CAP_SNAPSHOT);
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_BACKEND_NOT_PERMITTED, "'vm'");
	spec.min_isolation = MSB_UNSET;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_CAPABILITY_NOT_SUPPORTED, "files_out");
	spec.requires = MSB_DEFAULT_CAPABILITIES;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_OS_FAMILY_NOT_SUPPORTED, "'windows'");
	spec.requires_os_family = MSB_UNSET;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_TRANSFER_LIMITS_NOT_PERMITTED, "files_in.max_files");
	spec.files_in.max_files = 1;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_EGRESS_NOT_ENFORCED, "'unrestricted'");
	spec.egress = MSB_EGRESS_CLOSED;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_SCOPE_NOT_ENFORCED, "'call'");
	spec.isolation_scope = MSB_SCOPE_CONVERSATION;
	assert_int_equal(serve(r, &spec, &err), MSB_OK);
	msb_router_free(r);
}

static void an_invalid_spec_is_refused_before_routing(void **state)
{
	fx *f = *state;
	msb_router *r = router_over(f, "inprocess", NULL, NULL);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	spec.egress_allow = (const char *const[]){ "example.invalid", NULL }; /* with egress closed */
	msb_error err = MSB_ERROR_INIT;
	msb_key key = { "s", "t", "a", "" };
	msb_sandbox *sb = NULL;
	fx_assert_refused(&err, msb_router_acquire(r, &key, &spec, &sb, &err), MSB_E_VALUE, "egress_allow");
	msb_router_free(r);
}

/* ---- per_spec --------------------------------------------------------------------- */

static msb_router *per_spec(fx *f, msb_backend **bs, size_t n)
{
	msb_router_options o = fx_options(f);
	o.selection = MSB_SELECTION_PER_SPEC;
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (msb_router_new(bs, n, &o, &r, &err) != MSB_OK)
		fail_msg("router: %s", msb_error_message(&err));
	return r;
}

static void per_spec_routes_to_the_first_that_passes(void **state)
{
	fx *f = *state;
	msb_backend *bs[3] = {
		fx_open(f, "inprocess", "egress_modes: [closed]\n"),
		fx_open(f, "inproc_b", "egress_modes: [allowlist]\ncapabilities: [exec, files_in, files_out]\n"),
		fx_open(f, "inproc_vm", "egress_modes: [allowlist, closed]\ncapabilities: [exec, files_in, files_out]\n"),
	};
	msb_router *r = per_spec(f, bs, 3);
	msb_spec spec;
	const msb_backend *chosen = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_spec_init(&spec, "k");
	assert_int_equal(msb_router_ensure_can_serve(r, &spec, &chosen, &err), MSB_OK);
	assert_ptr_equal(chosen, bs[0]);
	spec.egress = MSB_EGRESS_ALLOWLIST;
	assert_int_equal(msb_router_ensure_can_serve(r, &spec, &chosen, &err), MSB_OK);
	assert_ptr_equal(chosen, bs[1]);
	/* One spec always routes to the same backend. */
	for (int i = 0; i < 5; i++) {
		const msb_backend *again = NULL;
		assert_int_equal(msb_router_ensure_can_serve(r, &spec, &again, &err), MSB_OK);
		assert_ptr_equal(again, bs[1]);
	}
	msb_spec_init(&spec, "k");
	spec.requires |= MSB_BIT(MSB_CAP_FILES_OUT);
	assert_int_equal(msb_router_ensure_can_serve(r, &spec, &chosen, &err), MSB_OK);
	assert_ptr_equal(chosen, bs[2]);
	msb_router_free(r);
}

static void per_spec_refusal_quotes_every_backend(void **state)
{
	fx *f = *state;
	msb_backend *bs[2] = {
		fx_open(f, "inprocess", "egress_modes: [closed]\n"),
		fx_open(f, "inproc_b", "egress_modes: [allowlist]\n"),
	};
	msb_router *r = per_spec(f, bs, 2);
	msb_spec spec;
	const msb_backend *chosen = NULL;
	msb_error err = MSB_ERROR_INIT;
	/*
	 * Different reasons: the first floor-clearing backend's own class (router.h's rule),
	 * never NoSandboxBackend, with each backend's own refusal quoted.
	 */
	msb_spec_init(&spec, "k");
	spec.requires |= MSB_BIT(MSB_CAP_RUN_CODE);
	spec.egress = MSB_EGRESS_CLOSED;
	msb_router_free(r);
	bs[0] = fx_open(f, "inproc_container", "capabilities: [exec, files_in, run_code]\negress_modes: [allowlist]\n");
	r = per_spec(f, bs, 2);
	msb_errc rc = msb_router_ensure_can_serve(r, &spec, &chosen, &err);
	fx_assert_refused(&err, rc, MSB_E_EGRESS_NOT_ENFORCED,
			  "no registered sandbox backend can serve the 'k' workload",
			  "'inproc_container' (SandboxEgressNotEnforced)", "cannot enforce the 'closed'",
			  "'inproc_b' (SandboxCapabilityNotSupported)", "does not support run_code");
	assert_null(chosen);
	/* Each backend's own refusal, one by one, by its own class. */
	assert_int_equal(msb_router_check_backend(r, 0, &spec, &err), MSB_E_EGRESS_NOT_ENFORCED);
	assert_int_equal(msb_router_check_backend(r, 1, &spec, &err), MSB_E_CAPABILITY_NOT_SUPPORTED);
	assert_int_equal(msb_router_check_backend(r, 2, &spec, &err), MSB_E_VALUE);
	/*
	 * Registered below-floor first (inproc_b, rung none) and a floor of container: the
	 * below-floor backend is no candidate, so the class is the next one's (egress), not
	 * its floor refusal.
	 */
	assert_int_equal(msb_backend_isolation(bs[1]), MSB_ISO_NONE);
	assert_int_equal(msb_backend_isolation(bs[0]), MSB_ISO_CONTAINER);
	msb_backend *reordered[2] = { bs[1], bs[0] };
	msb_router *r2 = per_spec(f, reordered, 2);
	spec.min_isolation = MSB_ISO_CONTAINER;
	rc = msb_router_ensure_can_serve(r2, &spec, &chosen, &err);
	fx_assert_refused(&err, rc, MSB_E_EGRESS_NOT_ENFORCED, "'inproc_b' (SandboxBackendNotPermitted)",
			  "'inproc_container' (SandboxEgressNotEnforced)");
	/* Nothing clears the spec's floor: the floor's class. */
	spec.min_isolation = MSB_ISO_VM;
	rc = msb_router_ensure_can_serve(r2, &spec, &chosen, &err);
	assert_int_equal(rc, MSB_E_BACKEND_NOT_PERMITTED);
	msb_router_free(r2);
	spec.min_isolation = MSB_UNSET;
	msb_error_clear(&err);
	/* The same reason everywhere: that reason's own name, still quoting each. */
	msb_spec_init(&spec, "k");
	spec.requires_os_family = MSB_OS_POSIX;
	spec.egress = MSB_EGRESS_ALLOWLIST;
	rc = msb_router_ensure_can_serve(r, &spec, &chosen, &err);
	fx_assert_refused(&err, rc, MSB_E_OS_FAMILY_NOT_SUPPORTED, "'inproc_container'", "'inproc_b'", "'posix'");
	msb_router_free(r);
}

/*
 * The migration case: a host drops selected="inproc_b" to adopt per_spec, and a workload
 * the pinned second backend served moves to the first registered one that passes.
 */
static void dropping_selected_moves_routing_to_the_first_registered(void **state)
{
	fx *f = *state;
	msb_backend *bs[2] = { fx_open(f, "inprocess", NULL), fx_open(f, "inproc_b", NULL) };
	msb_router_options o = fx_options(f);
	o.selected = "inproc_b";
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_router_new(bs, 2, &o, &r, &err), MSB_OK);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	const msb_backend *chosen = NULL;
	assert_int_equal(msb_router_ensure_can_serve(r, &spec, &chosen, &err), MSB_OK);
	assert_ptr_equal(chosen, bs[1]);
	msb_router_free(r);
	r = per_spec(f, bs, 2);
	assert_int_equal(msb_router_ensure_can_serve(r, &spec, &chosen, &err), MSB_OK);
	assert_ptr_equal(chosen, bs[0]);
	msb_router_free(r);
	/* Reordering the registration is what keeps it where it was. */
	msb_backend *reordered[2] = { bs[1], bs[0] };
	r = per_spec(f, reordered, 2);
	assert_int_equal(msb_router_ensure_can_serve(r, &spec, &chosen, &err), MSB_OK);
	assert_ptr_equal(chosen, bs[1]);
	msb_router_free(r);
}

/* Every axis, alone, passes over the first backend and routes to the second. */
static void per_spec_skips_on_every_axis(void **state)
{
	fx *f = *state;
	msb_backend *bs[2] = {
		fx_open(f, "inproc_container", "limits: {files_in: {max_files: 1}, files_out: {max_files: 1}}\n"),
		fx_open(f, "inproc_vm", "capabilities: [exec, files_in, files_out]\nos_families: [posix]\n"
					"isolation_scopes: [conversation, call]\negress_modes: [closed, unrestricted]\n"),
	};
	msb_router *r = per_spec(f, bs, 2);
	msb_spec spec;
	const msb_backend *chosen = NULL;
	msb_error err = MSB_ERROR_INIT;
	for (int axis = 0; axis < 7; axis++) {
		msb_spec_init(&spec, "k");
		spec.files_in.max_files = spec.files_out.max_files = 1;
		switch (axis) {
		case 0: spec.min_isolation = MSB_ISO_VM; break;
		case 1: spec.requires |= MSB_BIT(MSB_CAP_FILES_OUT); break;
		case 2: spec.requires_os_family = MSB_OS_POSIX; break;
		case 3: spec.files_in.max_files = 2; break;
		case 4: spec.files_out.max_files = 2; break;
		case 5: spec.egress = MSB_EGRESS_UNRESTRICTED; break;
		case 6: spec.isolation_scope = MSB_SCOPE_CALL; break;
		}
		assert_int_equal(msb_router_ensure_can_serve(r, &spec, &chosen, &err), MSB_OK);
		assert_ptr_equal(chosen, bs[1]);
	}
	msb_spec_init(&spec, "k");
	spec.files_in.max_files = spec.files_out.max_files = 1;
	assert_int_equal(msb_router_ensure_can_serve(r, &spec, &chosen, &err), MSB_OK);
	assert_ptr_equal(chosen, bs[0]);
	msb_router_free(r);
}

/* Under fixed, a spec the resolved backend cannot serve is refused, the others untouched. */
static void fixed_never_falls_back(void **state)
{
	fx *f = *state;
	msb_backend *bs[2] = { fx_open(f, "inprocess", "egress_modes: [closed]\n"),
			       fx_open(f, "inproc_b", "egress_modes: [allowlist]\n") };
	msb_router_options o = fx_options(f);
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_router_new(bs, 2, &o, &r, &err), MSB_OK);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	spec.egress = MSB_EGRESS_ALLOWLIST;
	fx_assert_refused(&err, serve(r, &spec, &err), MSB_E_EGRESS_NOT_ENFORCED, "'inprocess'");
	msb_router_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(a_denied_capability_is_refused_first),
		FX_TEST(a_denied_identity_is_refused),
		FX_TEST(a_spec_raises_the_floor),
		FX_TEST(a_spec_never_lowers_the_floor),
		FX_TEST(a_missing_capability_is_named),
		FX_TEST(unstated_capabilities_read_as_the_default),
		FX_TEST(os_family_absence_refuses_only_a_spec_that_asks),
		FX_TEST(each_transfer_field_in_each_direction_is_refused_not_clamped),
		FX_TEST(a_lower_declared_ceiling_refuses_a_default_ask),
		FX_TEST(unstated_limits_read_as_the_default_ceilings),
		FX_TEST(egress_is_exact_in_both_directions),
		FX_TEST(no_egress_warning_on_either_path),
		FX_TEST(undeclared_egress_refuses_every_spec),
		FX_TEST(scope_is_the_stricter_of_host_and_spec),
		FX_TEST(unstated_scopes_read_as_conversation),
		FX_TEST(checks_run_in_the_seed_order),
		FX_TEST(an_invalid_spec_is_refused_before_routing),
		FX_TEST(per_spec_routes_to_the_first_that_passes),
		FX_TEST(per_spec_refusal_quotes_every_backend),
		FX_TEST(dropping_selected_moves_routing_to_the_first_registered),
		FX_TEST(per_spec_skips_on_every_axis),
		FX_TEST(fixed_never_falls_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
