/*
 * test_router_construct.c — what a router refuses, resolves and warns about when it is
 * built: the selection modes, the floor judged at construction, the per_spec warnings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "router_fixture.h"

/* Configuring nothing is the production posture: the microvm floor refuses a `none` fake. */
static void default_floor_is_microvm_and_refuses_a_weaker_backend(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", NULL);
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_router_options o = MSB_ROUTER_OPTIONS_INIT;
	assert_int_equal(o.min_isolation, MSB_ISO_MICROVM);
	assert_int_equal(o.min_isolation_scope, MSB_SCOPE_CONVERSATION);
	assert_int_equal(o.selection, MSB_SELECTION_FIXED);
	assert_int_equal(o.reclaim, MSB_RECLAIM_DISPOSE);
	msb_errc rc = msb_router_new(&b, 1, &o, &r, &err);
	fx_assert_refused(&err, rc, MSB_E_BACKEND_NOT_PERMITTED, "'inprocess'", "'none'", "'microvm'",
			  "none, runtime, os_process, container, hardened_container, microvm, vm",
			  "min_isolation");
	assert_null(r);
	/* NULL options are the same production posture. */
	rc = msb_router_new(&b, 1, NULL, &r, &err);
	fx_assert_refused(&err, rc, MSB_E_BACKEND_NOT_PERMITTED, "'microvm'");
}

static void a_lowered_floor_admits_it(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", NULL);
	msb_router_options o = fx_options(f);
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_router_new(&b, 1, &o, &r, &err), MSB_OK);
	assert_int_equal(msb_router_backend_count(r), 1);
	assert_ptr_equal(msb_router_backend_at(r, 0), b);
	assert_null(msb_router_backend_at(r, 1));
	assert_int_equal(msb_router_get_options(r)->min_isolation, MSB_ISO_NONE);
	msb_router_free(r);
	/* A floor exactly at the backend's rung admits it too. */
	msb_backend *vm = fx_open(f, "inproc_microvm", NULL);
	o = (msb_router_options)MSB_ROUTER_OPTIONS_INIT;
	assert_int_equal(msb_router_new(&vm, 1, &o, &r, &err), MSB_OK);
	msb_router_free(r);
}

static void selected_with_per_spec_is_refused(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", NULL);
	msb_router_options o = fx_options(f);
	o.selection = MSB_SELECTION_PER_SPEC;
	o.selected = "inprocess";
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = msb_router_new(&b, 1, &o, &r, &err);
	fx_assert_refused(&err, rc, MSB_E_VALUE, "selected 'inprocess'", "per_spec", "cannot be combined");
	assert_null(r);
}

static void an_unregistered_selected_name_lists_what_is(void **state)
{
	fx *f = *state;
	msb_backend *bs[2] = { fx_open(f, "inprocess", NULL), fx_open(f, "inproc_b", NULL) };
	msb_router_options o = fx_options(f);
	o.selected = "docker";
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = msb_router_new(bs, 2, &o, &r, &err);
	fx_assert_refused(&err, rc, MSB_E_NO_BACKEND, "'docker' is not registered",
			  "registered: inprocess, inproc_b");
	assert_null(r);
}

static void fixed_resolves_the_first_or_the_selected(void **state)
{
	fx *f = *state;
	msb_backend *bs[2] = { fx_open(f, "inprocess", NULL), fx_open(f, "inproc_b", NULL) };
	msb_router_options o = fx_options(f);
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_spec spec;
	msb_spec_init(&spec, "k");
	const msb_backend *chosen = NULL;
	assert_int_equal(msb_router_new(bs, 2, &o, &r, &err), MSB_OK);
	assert_int_equal(msb_router_ensure_can_serve(r, &spec, &chosen, &err), MSB_OK);
	assert_ptr_equal(chosen, bs[0]);
	msb_router_free(r);
	o.selected = "inproc_b";
	assert_int_equal(msb_router_new(bs, 2, &o, &r, &err), MSB_OK);
	assert_int_equal(msb_router_ensure_can_serve(r, &spec, &chosen, &err), MSB_OK);
	assert_ptr_equal(chosen, bs[1]);
	assert_string_equal(msb_router_get_options(r)->selected, "inproc_b");
	msb_router_free(r);
}

/* Under fixed, the floor is judged on the one resolved backend, whatever else is registered. */
static void fixed_refuses_a_selected_backend_below_the_floor(void **state)
{
	fx *f = *state;
	msb_backend *bs[2] = { fx_open(f, "inproc_vm", NULL), fx_open(f, "inproc_container", NULL) };
	msb_router_options o = MSB_ROUTER_OPTIONS_INIT;
	o.selected = "inproc_container";
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = msb_router_new(bs, 2, &o, &r, &err);
	fx_assert_refused(&err, rc, MSB_E_BACKEND_NOT_PERMITTED, "'inproc_container'", "'container'",
			  "'microvm'", "ladder");
	/* And the first registered, when nothing is selected, is what is judged. */
	msb_backend *rev[2] = { bs[1], bs[0] };
	o.selected = NULL;
	rc = msb_router_new(rev, 2, &o, &r, &err);
	fx_assert_refused(&err, rc, MSB_E_BACKEND_NOT_PERMITTED, "'inproc_container'");
}

static void per_spec_refuses_when_nothing_clears_the_floor(void **state)
{
	fx *f = *state;
	msb_backend *bs[2] = { fx_open(f, "inprocess", NULL), fx_open(f, "inproc_container", NULL) };
	msb_router_options o = MSB_ROUTER_OPTIONS_INIT;
	o.selection = MSB_SELECTION_PER_SPEC;
	o.warn = fx_warn;
	o.warn_ctx = f;
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = msb_router_new(bs, 2, &o, &r, &err);
	fx_assert_refused(&err, rc, MSB_E_BACKEND_NOT_PERMITTED, "'microvm'",
			  "'inprocess' declares 'none'", "'inproc_container' declares 'container'");
	assert_null(r);
}

/* One warning per backend below the floor; none for those above; never advice to unregister. */
static void per_spec_warns_once_per_backend_below_the_floor(void **state)
{
	fx *f = *state;
	msb_backend *bs[3] = { fx_open(f, "inprocess", NULL), fx_open(f, "inproc_vm", NULL),
			       fx_open(f, "inproc_container", NULL) };
	msb_router_options o = MSB_ROUTER_OPTIONS_INIT;
	o.selection = MSB_SELECTION_PER_SPEC;
	o.warn = fx_warn;
	o.warn_ctx = f;
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_router_new(bs, 3, &o, &r, &err), MSB_OK);
	assert_int_equal(f->n_warnings, 2);
	assert_non_null(strstr(f->warnings, "'inprocess' declares 'none'"));
	assert_non_null(strstr(f->warnings, "'inproc_container' declares 'container'"));
	assert_null(strstr(f->warnings, "inproc_vm"));
	assert_null(strstr(f->warnings, "unregister"));
	assert_non_null(strstr(f->warnings, "dispose"));
	/* Kept and never routed to: every spec goes to the vm backend. */
	msb_spec spec;
	msb_spec_init(&spec, "k");
	const msb_backend *chosen = NULL;
	assert_int_equal(msb_router_ensure_can_serve(r, &spec, &chosen, &err), MSB_OK);
	assert_ptr_equal(chosen, bs[1]);
	assert_int_equal(msb_router_backend_count(r), 3);
	msb_router_free(r);
}

static void nothing_registered(void **state)
{
	fx *f = *state;
	msb_router_options o = fx_options(f);
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	/* fixed over nothing: built, serves nothing, and acquire says so. */
	assert_int_equal(msb_router_new(NULL, 0, &o, &r, &err), MSB_OK);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	const msb_backend *chosen = (const msb_backend *)1;
	assert_int_equal(msb_router_ensure_can_serve(r, &spec, &chosen, &err), MSB_OK);
	assert_null(chosen);
	msb_key key = { "s", "t", "a", "" };
	msb_sandbox *sb = NULL;
	msb_errc rc = msb_router_acquire(r, &key, &spec, &sb, &err);
	fx_assert_refused(&err, rc, MSB_E_NO_BACKEND, "no sandbox backend is configured", "nothing to serve the");
	assert_null(sb);
	msb_router_free(r);
	/* per_spec over nothing has nothing to route to. */
	o.selection = MSB_SELECTION_PER_SPEC;
	rc = msb_router_new(NULL, 0, &o, &r, &err);
	fx_assert_refused(&err, rc, MSB_E_NO_BACKEND, "no sandbox backend is registered");
}

static void options_outside_their_axes_are_refused(void **state)
{
	fx *f = *state;
	msb_backend *b = fx_open(f, "inprocess", NULL);
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_router_options o = fx_options(f);
	o.denied_capabilities = MSB_BIT(MSB_CAP__COUNT);
	msb_errc rc = msb_router_new(&b, 1, &o, &r, &err);
	fx_assert_refused(&err, rc, MSB_E_VALUE, "denied_capabilities");
	o = fx_options(f);
	o.denied_identities = MSB_BIT(MSB_IDENTITY__COUNT);
	rc = msb_router_new(&b, 1, &o, &r, &err);
	fx_assert_refused(&err, rc, MSB_E_VALUE, "denied_identities");
	o = fx_options(f);
	o.min_isolation = MSB_ISO__COUNT;
	rc = msb_router_new(&b, 1, &o, &r, &err);
	fx_assert_refused(&err, rc, MSB_E_VALUE, "min_isolation", "ladder");
	o = fx_options(f);
	o.struct_size = 8;
	rc = msb_router_new(&b, 1, &o, &r, &err);
	fx_assert_refused(&err, rc, MSB_E_VALUE, "struct_size", "MSB_ROUTER_OPTIONS_INIT");
	o = fx_options(f);
	o.min_isolation_scope = MSB_SCOPE__COUNT;
	rc = msb_router_new(&b, 1, &o, &r, &err);
	fx_assert_refused(&err, rc, MSB_E_VALUE, "router options", "min_isolation_scope", "is not a scope");
	o = fx_options(f);
	o.selection = (msb_selection)7;
	rc = msb_router_new(&b, 1, &o, &r, &err);
	fx_assert_refused(&err, rc, MSB_E_VALUE, "router options", "selection 7", "neither fixed nor per_spec");
	o = fx_options(f);
	o.reclaim = (msb_reclaim_policy)7;
	rc = msb_router_new(&b, 1, &o, &r, &err);
	fx_assert_refused(&err, rc, MSB_E_VALUE, "router options", "reclaim 7", "neither dispose nor keep");
	o = fx_options(f);
	msb_backend *two[2] = { b, NULL };
	rc = msb_router_new(two, 2, &o, &r, &err);
	fx_assert_refused(&err, rc, MSB_E_VALUE, "router", "backend 1 is NULL");
	assert_null(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(default_floor_is_microvm_and_refuses_a_weaker_backend),
		FX_TEST(a_lowered_floor_admits_it),
		FX_TEST(selected_with_per_spec_is_refused),
		FX_TEST(an_unregistered_selected_name_lists_what_is),
		FX_TEST(fixed_resolves_the_first_or_the_selected),
		FX_TEST(fixed_refuses_a_selected_backend_below_the_floor),
		FX_TEST(per_spec_refuses_when_nothing_clears_the_floor),
		FX_TEST(per_spec_warns_once_per_backend_below_the_floor),
		FX_TEST(nothing_registered),
		FX_TEST(options_outside_their_axes_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
