/*
 * test_pool.c — warm pools (issue 22) on the inprocess fake: an acquire adopts a ready
 * entry (the observer hears `pooled`), the pool refills, a disposed sandbox never comes
 * back, a changed blueprint's entries are disposed and never handed out, racing acquires
 * never adopt one entry twice (threads: in TSAN_TESTS), a backend without adopt is refused,
 * and every entry a test makes is drained.
 */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "router_fixture.h"

static struct {
	pthread_mutex_t lock;
	int acquired, pooled;
} seen = { PTHREAD_MUTEX_INITIALIZER, 0, 0 };

static int on_acquired(void *ctx, const msb_sandbox_acquired *e)
{
	(void)ctx;
	pthread_mutex_lock(&seen.lock);
	seen.acquired++;
	seen.pooled += e->pooled;
	pthread_mutex_unlock(&seen.lock);
	return 0;
}

typedef struct world {
	fx f;
	char dir[64];
	msb_backend *b;
	msb_router *router;
	msb_pool *pool;
	msb_observer observer;
	msb_spec spec;
} world;

/*
 * The registry directory of the world a test has open: removed by the teardown too, so a
 * test that fails half-way (cmocka jumps out of it) leaves nothing under /tmp. Its entries
 * are inprocess sandboxes, in this process's memory only.
 */
static char live_dir[64];

static int remove_live_dir(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", live_dir);
	int rc = live_dir[0] ? system(cmd) : 0;
	live_dir[0] = '\0';
	return rc == 0 ? 0 : -1;
}

static void world_open(world *w, const char *plugin)
{
	memset(w, 0, sizeof *w);
	fx_init(&w->f, NULL);
	snprintf(w->dir, sizeof w->dir, "/tmp/msb-pool-test-XXXXXX");
	assert_non_null(mkdtemp(w->dir));
	snprintf(live_dir, sizeof live_dir, "%s", w->dir);
	w->b = fx_open(&w->f, plugin, "capabilities: [exec, files_in, files_out]\n"
				       "isolation_scopes: [conversation, call]\n");
	w->observer = (msb_observer)MSB_OBSERVER_INIT;
	w->observer.sandbox_acquired = on_acquired;
	msb_router_options opt = fx_options(&w->f);
	opt.observer = &w->observer;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_router_new(&w->b, 1, &opt, &w->router, &err), MSB_OK);
	assert_int_equal(msb_pool_new(w->router, w->dir, &w->pool, &err), MSB_OK);
	msb_router_set_pool(w->router, w->pool);
	msb_spec_init(&w->spec, "shell");
	w->spec.requires |= MSB_BIT(MSB_CAP_FILES_OUT);
	pthread_mutex_lock(&seen.lock);
	seen.acquired = seen.pooled = 0;
	pthread_mutex_unlock(&seen.lock);
}

/* Drain (every entry this test made goes), then check nothing of the pool is left. */
static void world_close(world *w)
{
	msb_pool_report r;
	msb_error err = MSB_ERROR_INIT;
	if (w->pool)
		assert_int_equal(msb_pool_drain(w->pool, &r, &err), MSB_OK);
	for (size_t i = 0; w->pool && i < msb_pool_count(w->pool); i++) {
		msb_pool_status st;
		assert_int_equal(msb_pool_status_at(w->pool, i, &st, &err), MSB_OK);
		assert_int_equal(st.ready, 0);
	}
	msb_router_free(w->router);
	fx_free(&w->f);
	assert_int_equal(remove_live_dir(NULL), 0);
}

static unsigned ready(world *w)
{
	msb_pool_status st;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_pool_status_at(w->pool, 0, &st, &err), MSB_OK);
	return st.ready;
}

static msb_sandbox *acquire(world *w, const char *thread, const char *call)
{
	msb_key key = { "s", thread, "", call };
	msb_sandbox *sb = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (msb_router_acquire(w->router, &key, &w->spec, &sb, &err) != MSB_OK)
		fail_msg("acquire: %s", msb_error_message(&err));
	return sb;
}

/* Want `size` of the world's spec and fill: the entries every test starts from. */
static msb_pool_report want_filled(world *w, unsigned size)
{
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_pool_want(w->pool, &w->spec, size, &err), MSB_OK);
	msb_pool_report r;
	if (msb_pool_fill(w->pool, &r, &err) != MSB_OK)
		fail_msg("fill: %s", msb_error_message(&err));
	return r;
}

static void test_adopts_refills_and_never_returns(void **state)
{
	(void)state;
	world w;
	world_open(&w, "inprocess");
	msb_error err = MSB_ERROR_INIT;
	msb_pool_report r = want_filled(&w, 2);
	assert_int_equal(r.started, 2);
	assert_int_equal(ready(&w), 2);
	assert_int_equal(fx_live(w.b), 2);

	/* An acquire adopts one: no new sandbox, the observer hears it was pooled. */
	msb_sandbox *sb = acquire(&w, "t1", NULL);
	assert_int_equal(fx_count(w.b, "adopt"), 1);
	assert_int_equal(fx_live(w.b), 2);
	assert_int_equal(ready(&w), 1);
	assert_int_equal(seen.pooled, 1);
	/* The adopted sandbox is the key's now: a file written is there under the key. */
	assert_int_equal(msb_sandbox_write_file(sb, "mark", "1", 1, NULL, &err), MSB_OK);
	msb_sandbox_release(sb);

	/* A second acquire of the same key reuses its sandbox (no adoption, not "pooled"). */
	sb = acquire(&w, "t1", NULL);
	assert_int_equal(fx_count(w.b, "adopt"), 1);
	assert_int_equal(seen.pooled, 1);
	msb_sandbox_release(sb);

	/* Refill brings it back to two, by a fresh start, not by taking anything back. */
	assert_int_equal(msb_pool_fill(w.pool, &r, &err), MSB_OK);
	assert_int_equal(r.started, 1);
	assert_int_equal(ready(&w), 2);

	/* Dispose the key: its sandbox is gone for good and no entry holds its file. */
	msb_disposal_failure f = { 0 };
	assert_true(msb_router_dispose(w.router, &(msb_key){ "s", "t1", "", "" }, &f));
	assert_int_equal(fx_live(w.b), 2);
	assert_int_equal(ready(&w), 2);
	for (int i = 0; i < 2; i++) {
		char thread[8];
		snprintf(thread, sizeof thread, "u%d", i);
		sb = acquire(&w, thread, NULL);
		msb_entry e;
		bool found = true;
		assert_int_equal(msb_sandbox_stat_file(sb, "mark", NULL, &e, &found, &err), MSB_OK);
		assert_false(found);
		msb_sandbox_release(sb);
	}
	assert_int_equal(seen.pooled, 3);
	/* Pool empty now: the next acquire starts cold, visibly not pooled. */
	sb = acquire(&w, "cold", NULL);
	assert_int_equal(seen.pooled, 3);
	assert_int_equal(fx_count(w.b, "adopt"), 3);
	msb_sandbox_release(sb);
	for (const char *const *t = (const char *const[]){ "u0", "u1", "cold", NULL }; *t; t++) {
		msb_disposal_failure g = { 0 };
		assert_true(msb_router_dispose(w.router, &(msb_key){ "s", *t, "", "" }, &g));
	}
	world_close(&w);
}

/* At `call` scope every call adopts an entry of its own; a finished call's is disposed. */
static void test_call_scope_never_reuses(void **state)
{
	(void)state;
	world w;
	world_open(&w, "inprocess");
	w.spec.isolation_scope = MSB_SCOPE_CALL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_pool_want(w.pool, &w.spec, 1, &err), MSB_OK);
	msb_pool_report r;
	for (int call = 0; call < 3; call++) {
		assert_int_equal(msb_pool_fill(w.pool, &r, &err), MSB_OK);
		char id[8];
		snprintf(id, sizeof id, "c%d", call);
		msb_sandbox *sb = acquire(&w, "t", id);
		msb_entry e;
		bool found = true;
		assert_int_equal(msb_sandbox_stat_file(sb, "left", NULL, &e, &found, &err), MSB_OK);
		assert_false(found); /* nothing a previous call left */
		assert_int_equal(msb_sandbox_write_file(sb, "left", "x", 1, NULL, &err), MSB_OK);
		msb_sandbox_release(sb);
		msb_disposal_failure f = { 0 };
		assert_true(msb_router_dispose(w.router, &(msb_key){ "s", "t", "", id }, &f));
	}
	assert_int_equal(seen.pooled, 3);
	world_close(&w);
}

/* A spec that changed after the fill: its old entries are never handed out, and go. */
static void test_stale_blueprint_disposed(void **state)
{
	(void)state;
	world w;
	world_open(&w, "inprocess");
	msb_error err = MSB_ERROR_INIT;
	msb_pool_report r = want_filled(&w, 2);
	assert_int_equal(fx_live(w.b), 2);
	/* The same kind, now with another image: a new pool, the same registry. */
	msb_spec changed = w.spec;
	changed.image = "other";
	/* An acquire of the changed spec through the old pool adopts nothing. */
	msb_key key = { "s", "x", "", "" };
	msb_sandbox *sb = NULL;
	assert_int_equal(msb_router_acquire(w.router, &key, &changed, &sb, &err), MSB_OK);
	assert_int_equal(fx_count(w.b, "adopt"), 0);
	assert_int_equal(seen.pooled, 0);
	msb_sandbox_release(sb);
	assert_int_equal(fx_live(w.b), 3);
	/* A pool wanting the changed spec: its fill disposes the stale entries first. */
	msb_pool *fresh = NULL;
	assert_int_equal(msb_pool_new(w.router, w.dir, &fresh, &err), MSB_OK);
	msb_router_set_pool(w.router, fresh);
	w.pool = fresh;
	w.spec = changed;
	assert_int_equal(msb_pool_want(w.pool, &w.spec, 1, &err), MSB_OK);
	assert_int_equal(msb_pool_fill(w.pool, &r, &err), MSB_OK);
	assert_int_equal(r.stale, 2);
	assert_int_equal(r.started, 1);
	assert_int_equal(fx_live(w.b), 2); /* the key's, and the one fresh entry */
	msb_disposal_failure f = { 0 };
	assert_true(msb_router_dispose(w.router, &key, &f));
	world_close(&w);
}

/* The blueprint directory the registry holds for the one wanted spec. */
static void blueprint_hash(world *w, char *hash, size_t n)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s", w->dir, msb_backend_name(w->b));
	DIR *d = opendir(path);
	assert_non_null(d);
	hash[0] = '\0';
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] != '.' && strchr(e->d_name, '-'))
			snprintf(hash, n, "%s", strchr(e->d_name, '-') + 1);
	closedir(d);
	assert_int_equal(strlen(hash), 64);
}

/* An entry whose sandbox is gone (its backend lost it) is disposed; the acquire is cold. */
static void test_dead_entry_falls_back_cold(void **state)
{
	(void)state;
	world w;
	world_open(&w, "inprocess");
	want_filled(&w, 1);
	/* Lose the entry behind the registry's back. */
	char hash[80];
	blueprint_hash(&w, hash, sizeof hash);
	msb_scope_purge purge = { 0 };
	msb_router_dispose_scope(w.router, MSB_POOL_SCOPE, hash, &purge);
	assert_int_equal(purge.disposed, 1);
	msb_scope_purge_free(&purge);
	assert_int_equal(ready(&w), 1); /* listed, but nothing behind it */
	msb_sandbox *sb = acquire(&w, "t", NULL);
	assert_int_equal(fx_count(w.b, "adopt"), 1);
	assert_int_equal(seen.pooled, 0);
	assert_non_null(strstr(w.f.warnings, "refused to adopt"));
	assert_non_null(strstr(w.f.warnings, "FileNotFoundError"));
	assert_int_equal(ready(&w), 0);
	msb_sandbox_release(sb);
	msb_disposal_failure f = { 0 };
	assert_true(msb_router_dispose(w.router, &(msb_key){ "s", "t", "", "" }, &f));
	world_close(&w);
}

/* Racing acquires of many keys over a small pool: no entry is adopted twice. */
#define RACERS 8
struct racer {
	world *w;
	int i;
	msb_sandbox *sb;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	char thread[16];
	snprintf(thread, sizeof thread, "r%d", r->i);
	r->sb = acquire(r->w, thread, NULL);
	return NULL;
}

static void test_racing_acquires_adopt_each_entry_once(void **state)
{
	(void)state;
	world w;
	world_open(&w, "inprocess");
	want_filled(&w, 4);
	pthread_t t[RACERS];
	struct racer rs[RACERS];
	for (int i = 0; i < RACERS; i++) {
		rs[i] = (struct racer){ &w, i, NULL };
		assert_int_equal(pthread_create(&t[i], NULL, race, &rs[i]), 0);
	}
	for (int i = 0; i < RACERS; i++)
		pthread_join(t[i], NULL);
	/* Four adopted (each once), four cold; every key has its own sandbox. */
	assert_int_equal(seen.pooled, 4);
	assert_int_equal(seen.acquired, RACERS);
	assert_int_equal(fx_live(w.b), RACERS);
	for (int i = 0; i < RACERS; i++)
		msb_sandbox_release(rs[i].sb);
	for (int i = 0; i < RACERS; i++) {
		char thread[16];
		snprintf(thread, sizeof thread, "r%d", i);
		msb_disposal_failure f = { 0 };
		assert_true(msb_router_dispose(w.router, &(msb_key){ "s", thread, "", "" }, &f));
	}
	world_close(&w);
}

/* The background filler refills after an adoption, and stops cleanly. */
static void test_filler_thread_refills(void **state)
{
	(void)state;
	world w;
	world_open(&w, "inprocess");
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_pool_want(w.pool, &w.spec, 2, &err), MSB_OK);
	assert_int_equal(msb_pool_start(w.pool, 30, &err), MSB_OK);
	fx_assert_refused(&err, msb_pool_want(w.pool, &(msb_spec){ .kind = "other" }, 1, &err),
			  MSB_E_VALUE, "filler is running");
	for (int i = 0; i < 500 && ready(&w) < 2; i++)
		usleep(10000);
	assert_int_equal(ready(&w), 2);
	msb_sandbox *sb = acquire(&w, "t", NULL);
	msb_sandbox_release(sb);
	for (int i = 0; i < 500 && ready(&w) < 2; i++)
		usleep(10000);
	assert_int_equal(ready(&w), 2);
	assert_int_equal(seen.pooled, 1);
	msb_pool_stop(w.pool);
	msb_disposal_failure f = { 0 };
	assert_true(msb_router_dispose(w.router, &(msb_key){ "s", "t", "", "" }, &f));
	world_close(&w);
}

static void test_refusals(void **state)
{
	(void)state;
	world w;
	world_open(&w, "inprocess");
	msb_error err = MSB_ERROR_INIT;
	fx_assert_refused(&err, msb_pool_want(w.pool, &w.spec, 0, &err), MSB_E_VALUE, "1 to 64");
	fx_assert_refused(&err, msb_pool_want(w.pool, &w.spec, 65, &err), MSB_E_VALUE, "1 to 64");
	msb_spec allow = w.spec;
	allow.egress = MSB_EGRESS_ALLOWLIST;
	static const char *const hosts[] = { "example.invalid", NULL };
	allow.egress_allow = hosts;
	fx_assert_refused(&err, msb_pool_want(w.pool, &allow, 1, &err), MSB_E_VALUE, "allowlist", "shell");
	assert_int_equal(msb_pool_want(w.pool, &w.spec, 1, &err), MSB_OK);
	fx_assert_refused(&err, msb_pool_want(w.pool, &w.spec, 1, &err), MSB_E_VALUE, "already has a pool");
	/* The pool's scope is nobody's key. */
	msb_key key = { MSB_POOL_SCOPE, "t", "", "" };
	msb_sandbox *sb = NULL;
	fx_assert_refused(&err, msb_router_acquire(w.router, &key, &w.spec, &sb, &err), MSB_E_VALUE,
			  "reserved", MSB_POOL_SCOPE);
	fx_assert_refused(&err, msb_pool_new(w.router, "relative/dir", &(msb_pool *){ NULL }, &err),
			  MSB_E_VALUE, "absolute");
	world_close(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_adopts_refills_and_never_returns, remove_live_dir),
		cmocka_unit_test_teardown(test_call_scope_never_reuses, remove_live_dir),
		cmocka_unit_test_teardown(test_stale_blueprint_disposed, remove_live_dir),
		cmocka_unit_test_teardown(test_dead_entry_falls_back_cold, remove_live_dir),
		cmocka_unit_test_teardown(test_racing_acquires_adopt_each_entry_once, remove_live_dir),
		cmocka_unit_test_teardown(test_filler_thread_refills, remove_live_dir),
		cmocka_unit_test_teardown(test_refusals, remove_live_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
