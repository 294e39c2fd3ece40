/*
 * test_abi_append.c — the descriptor's append rule, proved with one plugin source built
 * three times: `good` against today's msb/backend.h, `abi27` against a verbatim copy of the
 * header as ABI 27 first shipped (tests/fixtures/abi27_backend.h), `abi27s` against the
 * header with exec_stream appended but not yet the background operations
 * (tests/fixtures/abi27s_backend.h). Each older build loads
 * with its smaller struct_size, serves every operation it has exactly as before, and a call
 * needing an appended operation it lacks is refused naming the operation and the plugin —
 * never read past the end of its descriptor.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <msb/effective_state.h>
#include <msb/msb.h>

#include "msb_test.h"

typedef struct box {
	msb_loader *loader;
	msb_backend *backend;
	msb_router *router;
	msb_sandbox *sandbox;
} box;

static void box_open(box *b, const char *fixture)
{
	memset(b, 0, sizeof *b);
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_loader_new(&b->loader, &err), MSB_OK);
	if (msb_loader_load(b->loader, fixture, NULL, &err) != MSB_OK)
		fail_msg("load %s: %s", fixture, msb_error_message(&err));
	if (msb_backend_open(msb_loader_at(b->loader, 0), NULL, NULL, NULL, &b->backend, &err) != MSB_OK)
		fail_msg("open: %s", msb_error_message(&err));
	msb_router_options o = MSB_ROUTER_OPTIONS_INIT;
	o.min_isolation = MSB_ISO_NONE;
	assert_int_equal(msb_router_new(&b->backend, 1, &o, &b->router, &err), MSB_OK);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	/* Within the good fixture's narrow ceilings (1 MiB per file, 4 MiB, 16 files). */
	spec.files_in = spec.files_out = (msb_transfer_limits){ MSB_MIB, 4 * MSB_MIB, 16 };
	msb_key key = { "s", "t", "a", "" };
	if (msb_router_acquire(b->router, &key, &spec, &b->sandbox, &err) != MSB_OK)
		fail_msg("acquire: %s", msb_error_message(&err));
}

static void box_close(box *b)
{
	msb_sandbox_release(b->sandbox);
	msb_router_free(b->router);
	msb_backend_close(b->backend);
	msb_loader_free(b->loader);
}

typedef struct got {
	msb_buf out;
	size_t calls;
} got;

static void on_output(void *ctx, msb_stream_id stream, const void *data, size_t len)
{
	got *g = ctx;
	g->calls++;
	if (stream == MSB_STREAM_STDOUT)
		msb_buf_append(&g->out, data, len, NULL);
}

static msb_errc stream_echo(box *b, got *g, msb_exec_result *res, msb_error *err)
{
	const char *const argv[] = { "echo", "hi", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 5 };
	msb_exec_stream st = MSB_EXEC_STREAM_INIT;
	st.ctx = g;
	st.on_output = on_output;
	return msb_sandbox_exec_stream(b->sandbox, &req, &st, res, err);
}

static void test_old_build_loads_with_its_smaller_size(void **state)
{
	(void)state;
	box old, now;
	box_open(&old, MSB_TEST_FIXTURE("abi27"));
	box_open(&now, MSB_TEST_FIXTURE("good"));
	const struct msb_backend_v27 *d_old = msb_plugin_descriptor(msb_loader_at(old.loader, 0));
	const struct msb_backend_v27 *d_now = msb_plugin_descriptor(msb_loader_at(now.loader, 0));
	assert_int_equal(d_old->struct_size, MSB_BACKEND_V27_BASE_SIZE);
	assert_int_equal(d_now->struct_size, sizeof(struct msb_backend_v27));
	assert_true(d_old->struct_size < d_now->struct_size);
	assert_false(MSB_BACKEND_HAS(d_old, exec_stream));
	assert_true(MSB_BACKEND_HAS(d_now, exec_stream));
	/* Issue 22's adopt: past the old build's end, never read there. */
	assert_false(MSB_BACKEND_HAS(d_old, adopt));
	assert_null(MSB_BACKEND_OP(d_old, adopt));
	assert_true(MSB_BACKEND_HAS(d_now, adopt));
	/* Nor the snapshot operations appended after it (issue 22). */
	assert_false(MSB_BACKEND_HAS(d_old, snapshot_save));
	assert_false(MSB_BACKEND_HAS(d_old, snapshot_remove));
	assert_true(MSB_BACKEND_HAS(d_now, snapshot_remove));
	box_close(&old);
	box_close(&now);
}

static void test_old_build_serves_as_before(void **state)
{
	(void)state;
	box b;
	box_open(&b, MSB_TEST_FIXTURE("abi27"));
	const char *const argv[] = { "echo", "hi", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 5 };
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_sandbox_exec(b.sandbox, &req, &res, &err), MSB_OK);
	assert_string_equal((char *)res.out.data, "hi\n");
	msb_exec_result_free(&res);
	assert_int_equal(msb_sandbox_write_file(b.sandbox, "f.txt", "x", 1, NULL, &err), MSB_OK);
	msb_buf data = { 0 };
	assert_int_equal(msb_sandbox_read_file(b.sandbox, "f.txt", NULL, 10, &data, &err), MSB_OK);
	assert_int_equal(data.len, 1);
	msb_buf_free(&data);
	box_close(&b);
}

static void test_missing_operation_refused_naming_it_and_the_plugin(void **state)
{
	(void)state;
	box b;
	box_open(&b, MSB_TEST_FIXTURE("abi27"));
	got g = { 0 };
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(stream_echo(&b, &g, &res, &err), MSB_E_NOT_IMPLEMENTED);
	const char *m = msb_error_message(&err);
	assert_non_null(strstr(m, "exec_stream operation"));
	assert_non_null(strstr(m, "'fixture_good'"));
	assert_non_null(strstr(m, "abi27.so"));
	assert_non_null(strstr(m, "built before the operation was appended"));
	assert_int_equal(g.calls, 0);
	msb_error_clear(&err);
	box_close(&b);
}

static void test_new_build_streams(void **state)
{
	(void)state;
	box b;
	box_open(&b, MSB_TEST_FIXTURE("good"));
	got g = { 0 };
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(stream_echo(&b, &g, &res, &err), MSB_OK);
	assert_string_equal((char *)g.out.data, "hi\n");
	assert_int_equal(res.out.len, 0);
	msb_buf_free(&g.out);
	/* A bad environment name is refused before the backend, naming the entry. */
	const char *const argv[] = { "echo", NULL };
	const char *const env[] = { "BAD NAME=1", NULL };
	msb_exec_request req = { .argv = argv };
	msb_exec_stream st = MSB_EXEC_STREAM_INIT;
	st.env = env, st.ctx = &g, st.on_output = on_output;
	assert_int_equal(msb_sandbox_exec_stream(b.sandbox, &req, &st, &res, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "'BAD NAME=1'"));
	msb_error_clear(&err);
	box_close(&b);
}

/* A spec that says `streaming: true` is refused at route time by the old build, by name. */
static void test_streaming_spec_refused_at_route_time(void **state)
{
	(void)state;
	box old, now;
	box_open(&old, MSB_TEST_FIXTURE("abi27"));
	box_open(&now, MSB_TEST_FIXTURE("good"));
	msb_spec spec;
	msb_spec_init(&spec, "live");
	spec.files_in = spec.files_out = (msb_transfer_limits){ MSB_MIB, 4 * MSB_MIB, 16 };
	spec.streaming = true;
	msb_error err = MSB_ERROR_INIT;
	const msb_backend *chosen = NULL;
	assert_int_equal(msb_router_ensure_can_serve(old.router, &spec, &chosen, &err),
			 MSB_E_CAPABILITY_NOT_SUPPORTED);
	const char *m = msb_error_message(&err);
	assert_non_null(strstr(m, "exec_stream operation"));
	assert_non_null(strstr(m, "abi27.so"));
	assert_non_null(strstr(m, "streaming: true"));
	msb_error_clear(&err);
	msb_key key = { "s", "t2", "a", "" };
	msb_sandbox *sb = NULL;
	assert_int_equal(msb_router_acquire(old.router, &key, &spec, &sb, &err),
			 MSB_E_CAPABILITY_NOT_SUPPORTED);
	assert_null(sb);
	msb_error_clear(&err);
	assert_int_equal(msb_router_ensure_can_serve(now.router, &spec, &chosen, &err), MSB_OK);
	/* Not asked: the old build serves the same spec as before. */
	spec.streaming = false;
	assert_int_equal(msb_router_ensure_can_serve(old.router, &spec, &chosen, &err), MSB_OK);
	box_close(&old);
	box_close(&now);
}

/* Every background call to a build without the operations is refused naming it and the plugin. */
static void check_bg_refused(const char *fixture, const char *file)
{
	box b;
	box_open(&b, fixture);
	assert_false(msb_sandbox_can_background(b.sandbox));
	const char *const argv[] = { "echo", "hi", NULL };
	msb_exec_request req = { .argv = argv };
	msb_bg_status st;
	msb_bg_output out;
	msb_bg_read rq = { 0 };
	msb_bg_list list;
	msb_error err = MSB_ERROR_INIT;
	const char *ops[] = { "bg_start", "bg_read", "bg_signal", "bg_list" };
	for (int i = 0; i < 4; i++) {
		msb_errc rc = i == 0 ? msb_sandbox_bg_start(b.sandbox, &req, NULL, &st, &err)
			    : i == 1 ? msb_sandbox_bg_read(b.sandbox, "abc", &rq, &out, &err)
			    : i == 2 ? msb_sandbox_bg_signal(b.sandbox, "abc", 15, &err)
				     : msb_sandbox_bg_list(b.sandbox, &list, &err);
		assert_int_equal(rc, MSB_E_NOT_IMPLEMENTED);
		const char *m = msb_error_message(&err);
		char want[64];
		snprintf(want, sizeof want, "the %s operation", ops[i]);
		if (!strstr(m, want) || !strstr(m, "'fixture_good'") || !strstr(m, file) ||
		    !strstr(m, "built before the background operations were appended"))
			fail_msg("%s: %s", fixture, m);
		msb_error_clear(&err);
	}
	box_close(&b);
}

static void test_background_refused_by_older_builds(void **state)
{
	(void)state;
	check_bg_refused(MSB_TEST_FIXTURE("abi27"), "abi27.so");
	check_bg_refused(MSB_TEST_FIXTURE("abi27s"), "abi27s.so");
}

/* The build between the two: loads, streams, its size ends at exec_stream. */
static void test_stream_build_loads_and_streams(void **state)
{
	(void)state;
	box b;
	box_open(&b, MSB_TEST_FIXTURE("abi27s"));
	const struct msb_backend_v27 *d = msb_plugin_descriptor(msb_loader_at(b.loader, 0));
	assert_int_equal(d->struct_size, offsetof(struct msb_backend_v27, exec_stream) +
						 sizeof d->exec_stream);
	assert_true(MSB_BACKEND_HAS(d, exec_stream));
	assert_false(MSB_BACKEND_HAS(d, bg_start));
	got g = { 0 };
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(stream_echo(&b, &g, &res, &err), MSB_OK);
	assert_string_equal((char *)g.out.data, "hi\n");
	msb_buf_free(&g.out);
	box_close(&b);
}

static void test_new_build_backgrounds(void **state)
{
	(void)state;
	box b;
	box_open(&b, MSB_TEST_FIXTURE("good"));
	assert_true(msb_sandbox_can_background(b.sandbox));
	const char *const argv[] = { "echo", "hi", NULL };
	msb_exec_request req = { .argv = argv };
	msb_bg_status st;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_sandbox_bg_start(b.sandbox, &req, NULL, &st, &err), MSB_OK);
	assert_string_equal(st.id, "good1");
	/* A handle of the wrong shape, a signal that does not exist: refused before the backend. */
	msb_bg_output out;
	msb_bg_read rq = { 0 };
	assert_int_equal(msb_sandbox_bg_read(b.sandbox, "../x", &rq, &out, &err), MSB_E_VALUE);
	msb_error_clear(&err);
	assert_int_equal(msb_sandbox_bg_signal(b.sandbox, "good1", 0, &err), MSB_E_VALUE);
	msb_error_clear(&err);
	const char *const env[] = { "1BAD=x", NULL };
	assert_int_equal(msb_sandbox_bg_start(b.sandbox, &req, env, &st, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "'1BAD=x'"));
	msb_error_clear(&err);
	box_close(&b);
}

/* A pool on the old build (no adopt operation) is refused, naming why; the build still serves. */
static void test_pool_refused_for_old_build(void **state)
{
	(void)state;
	box old;
	box_open(&old, MSB_TEST_FIXTURE("abi27"));
	msb_pool *pool = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_pool_new(old.router, "/nonexistent/msb-pool-never-made", &pool, &err), MSB_OK);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	spec.files_in = spec.files_out = (msb_transfer_limits){ MSB_MIB, 4 * MSB_MIB, 16 };
	assert_int_equal(msb_pool_want(pool, &spec, 1, &err), MSB_E_NOT_IMPLEMENTED);
	const char *m = msb_error_message(&err);
	assert_non_null(strstr(m, "no adopt operation"));
	assert_non_null(strstr(m, "abi27.so"));
	assert_non_null(strstr(m, "built before the operation was appended"));
	msb_error_clear(&err);
	msb_pool_free(pool);
	box_close(&old);
}

/*
 * The snapshot capability (issue 22): the ABI-27 build has no snapshot operations and so
 * cannot declare it; a spec requiring `snapshot`, or one asking for a fork of a snapshot,
 * is refused at route time for it, and a snapshot of its sandbox is refused before it is
 * reached.
 */
static void test_snapshot_spec_refused_at_route_time(void **state)
{
	(void)state;
	box old;
	box_open(&old, MSB_TEST_FIXTURE("abi27"));
	msb_spec spec;
	msb_spec_init(&spec, "forkable");
	spec.files_in = spec.files_out = (msb_transfer_limits){ MSB_MIB, 4 * MSB_MIB, 16 };
	spec.requires |= MSB_BIT(MSB_CAP_SNAPSHOT);
	msb_error err = MSB_ERROR_INIT;
	const msb_backend *chosen = NULL;
	assert_int_equal(msb_router_ensure_can_serve(old.router, &spec, &chosen, &err),
			 MSB_E_CAPABILITY_NOT_SUPPORTED);
	assert_non_null(strstr(msb_error_message(&err), "snapshot"));
	assert_non_null(strstr(msb_error_message(&err), "'fixture_good'"));
	msb_error_clear(&err);
	/* A fork asked for without saying `requires: [snapshot]` needs it all the same. */
	spec.requires &= ~MSB_BIT(MSB_CAP_SNAPSHOT);
	spec.from_snapshot = "s1";
	msb_key key = { "s", "fork", "a", "" };
	msb_sandbox *sb = NULL;
	assert_int_equal(msb_router_acquire(old.router, &key, &spec, &sb, &err),
			 MSB_E_CAPABILITY_NOT_SUPPORTED);
	assert_null(sb);
	assert_non_null(strstr(msb_error_message(&err), "snapshot"));
	msb_error_clear(&err);
	assert_int_equal(msb_sandbox_snapshot_save(old.sandbox, "s1", &err), MSB_E_NOT_IMPLEMENTED);
	assert_non_null(strstr(msb_error_message(&err), "snapshot capability"));
	msb_error_clear(&err);
	msb_buf names = { 0 };
	assert_int_equal(msb_router_snapshot_list(old.router, &names, &err), MSB_OK);
	assert_int_equal(names.len, 0);
	assert_int_equal(msb_router_snapshot_remove(old.router, "s1", &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "no registered backend declares"));
	msb_error_clear(&err);
	box_close(&old);
}

/* The last SandboxAcquired an observer saw: its digest, copied. */
static char seen_digest[80];
static bool seen_null;

static int on_acquired(void *ctx, const msb_sandbox_acquired *ev)
{
	(void)ctx;
	seen_null = ev->image_digest == NULL;
	snprintf(seen_digest, sizeof seen_digest, "%s", ev->image_digest ? ev->image_digest : "");
	return 0;
}

static msb_sandbox *acquire_observed(msb_router **router, msb_backend *backend, msb_observer *o)
{
	msb_error err = MSB_ERROR_INIT;
	if (!*router) {
		msb_router_options opt = MSB_ROUTER_OPTIONS_INIT;
		opt.min_isolation = MSB_ISO_NONE;
		opt.observer = o;
		assert_int_equal(msb_router_new(&backend, 1, &opt, router, &err), MSB_OK);
	}
	msb_spec spec;
	msb_spec_init(&spec, "img");
	spec.files_in = spec.files_out = (msb_transfer_limits){ MSB_MIB, 4 * MSB_MIB, 16 };
	msb_key key = { "s", "img", "a", "" };
	msb_sandbox *sb = NULL;
	if (msb_router_acquire(*router, &key, &spec, &sb, &err) != MSB_OK)
		fail_msg("acquire: %s", msb_error_message(&err));
	return sb;
}

#define DIGEST_A "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define DIGEST_B "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

/*
 * Issue 21: the image digest the backend resolves is what SandboxAcquired and the effective
 * state report, and part of the sandbox's identity in the router's table: once the digest
 * moves (an image re-imported under its name) the cached sandbox is not served again, the
 * backend's acquire is asked afresh. The base-ABI build still loads and reports none.
 */
static void test_image_digest_reported_and_keyed(void **state)
{
	(void)state;
	box now;
	box_open(&now, MSB_TEST_FIXTURE("good"));
	msb_observer o = MSB_OBSERVER_INIT;
	o.sandbox_acquired = on_acquired;
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	setenv("FIXTURE_GOOD_DIGEST", DIGEST_A, 1);
	msb_sandbox *a = acquire_observed(&r, now.backend, &o);
	assert_string_equal(seen_digest, DIGEST_A);
	assert_string_equal(msb_sandbox_effective_state(a)->image_digest, DIGEST_A);
	msb_buf json = { 0 };
	assert_int_equal(msb_effective_state_json(msb_sandbox_effective_state(a), &json, &err), MSB_OK);
	assert_non_null(strstr((char *)json.data, "\"image_digest\":\"" DIGEST_A "\""));
	msb_buf_free(&json);
	assert_int_equal(msb_sandbox_write_file(a, "mark", "1", 1, NULL, &err), MSB_OK);
	/* Same digest: the same sandbox, its file there. */
	msb_sandbox *a2 = acquire_observed(&r, now.backend, &o);
	msb_buf data = { 0 };
	assert_int_equal(msb_sandbox_read_file(a2, "mark", NULL, 10, &data, &err), MSB_OK);
	msb_buf_free(&data);
	msb_sandbox_release(a2);
	/* Re-imported: another sandbox, from the new image; the old handle still works. */
	setenv("FIXTURE_GOOD_DIGEST", DIGEST_B, 1);
	msb_sandbox *b = acquire_observed(&r, now.backend, &o);
	assert_string_equal(seen_digest, DIGEST_B);
	assert_string_equal(msb_sandbox_effective_state(b)->image_digest, DIGEST_B);
	assert_int_not_equal(msb_sandbox_read_file(b, "mark", NULL, 10, &data, &err), MSB_OK);
	msb_error_clear(&err);
	assert_int_equal(msb_sandbox_read_file(a, "mark", NULL, 10, &data, &err), MSB_OK);
	msb_buf_free(&data);
	msb_sandbox_release(a);
	msb_sandbox_release(b);
	/* A digest of the wrong shape is the backend's error, never a table key. */
	setenv("FIXTURE_GOOD_DIGEST", "sha256:not-hex", 1);
	msb_spec spec;
	msb_spec_init(&spec, "img");
	spec.files_in = spec.files_out = (msb_transfer_limits){ MSB_MIB, 4 * MSB_MIB, 16 };
	msb_key key = { "s", "img", "a", "" };
	msb_sandbox *bad = NULL;
	assert_int_equal(msb_router_acquire(r, &key, &spec, &bad, &err), MSB_E_BACKEND);
	assert_non_null(strstr(msb_error_message(&err), "image_digest"));
	msb_error_clear(&err);
	/* No image (unset): no digest reported. */
	unsetenv("FIXTURE_GOOD_DIGEST");
	msb_sandbox *none = acquire_observed(&r, now.backend, &o);
	assert_true(seen_null);
	assert_null(msb_sandbox_effective_state(none)->image_digest);
	msb_sandbox_release(none);
	msb_router_free(r);
	box_close(&now);

	/* The base-ABI build: loads, serves, and its acquire reports no digest at all. */
	box old;
	setenv("FIXTURE_GOOD_DIGEST", DIGEST_A, 1);
	box_open(&old, MSB_TEST_FIXTURE("abi27"));
	assert_false(MSB_BACKEND_HAS(msb_plugin_descriptor(msb_loader_at(old.loader, 0)), image_digest));
	r = NULL;
	msb_sandbox *o1 = acquire_observed(&r, old.backend, &o);
	assert_true(seen_null);
	assert_null(msb_sandbox_effective_state(o1)->image_digest);
	msb_sandbox_release(o1);
	msb_router_free(r);
	unsetenv("FIXTURE_GOOD_DIGEST");
	box_close(&old);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_old_build_loads_with_its_smaller_size),
		cmocka_unit_test(test_pool_refused_for_old_build),
		cmocka_unit_test(test_snapshot_spec_refused_at_route_time),
		cmocka_unit_test(test_old_build_serves_as_before),
		cmocka_unit_test(test_missing_operation_refused_naming_it_and_the_plugin),
		cmocka_unit_test(test_new_build_streams),
		cmocka_unit_test(test_image_digest_reported_and_keyed),
		cmocka_unit_test(test_streaming_spec_refused_at_route_time),
		cmocka_unit_test(test_background_refused_by_older_builds),
		cmocka_unit_test(test_stream_build_loads_and_streams),
		cmocka_unit_test(test_new_build_backgrounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
