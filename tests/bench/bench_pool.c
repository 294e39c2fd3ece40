/*
 * bench_pool.c — warm pools (issue 22): acquire → first `exec true` of a sandbox adopted from
 * a pool, against a cold acquire of the same spec on the same backend in the same run, on
 * process, bwrap and qemu (each skipped with a reason when it cannot serve here). Rounds alternate
 * cold and pooled so drift hits both; the refill (msb_pool_fill) and every disposal are
 * outside the timed span — a long-lived host refills in the background. Prints medians and
 * the ratio; doc/performance.md records them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <msb/msb.h>

#include "bench_stats.h"

#define ROUNDS 8

/* One acquire + `exec true`, timed; then disposed (untimed). -1 on failure. */
static double one(msb_router *r, const msb_spec *spec, const char *thread)
{
	msb_key key = { "bench-pool", thread, "", "" };
	msb_error err = MSB_ERROR_INIT;
	msb_sandbox *sb = NULL;
	const char *const argv[] = { "true", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 30 };
	msb_exec_result res = { 0 };
	double t0 = bench_now_ms();
	msb_errc rc = msb_router_acquire(r, &key, spec, &sb, &err);
	if (rc == MSB_OK)
		rc = msb_sandbox_exec(sb, &req, &res, &err);
	double t = bench_now_ms() - t0;
	if (rc != MSB_OK)
		fprintf(stderr, "bench_pool: %s\n", msb_error_message(&err));
	msb_exec_result_free(&res);
	msb_sandbox_release(sb);
	msb_disposal_failure f = { 0 };
	msb_router_dispose(r, &key, &f);
	msb_disposal_failure_free(&f);
	msb_error_clear(&err);
	return rc == MSB_OK && res.exit_code == 0 ? t : -1;
}

static void bench(const char *name, const char *floor, int rounds)
{
	char dir[] = "/var/tmp/msb-bench-pool-XXXXXX";
	if (!mkdtemp(dir))
		return;
	char path[256], cmd[300];
	snprintf(path, sizeof path, "%s/sandbox.yaml", dir);
	FILE *f = fopen(path, "w");
	fprintf(f, "version: 1\nrouter: {min_isolation: %s}\npool_dir: %s/pool\nbackends:\n"
		"  - plugin: %s/plugins/%s/.libs/%s.so\n"
		"    config: {state_dir: %s/state%s%s%s}\n"
		"specs:\n  pooled: {pool: 1}\n  cold: {}\n",
		floor, dir, MSB_TOP_BUILDDIR, name, name, dir,
		/* qemu's guest runs its own agent; the others run the one built here */
		strcmp(name, "qemu") ? ", agent: " : "", strcmp(name, "qemu") ? MSB_TOP_BUILDDIR : "",
		strcmp(name, "qemu") ? "/sdk/agent/msb-agent" : "");
	fclose(f);
	msb_config *cfg = NULL;
	msb_router *r = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (msb_config_load(path, NULL, &cfg, &err) != MSB_OK || msb_config_router(cfg, &r, &err) != MSB_OK) {
		printf("%-8s skipped: %s\n", name, msb_error_message(&err));
		goto out;
	}
	msb_pool *pool = msb_router_pool(r);
	const msb_spec *pooled = msb_config_spec(cfg, "pooled"), *cold = msb_config_spec(cfg, "cold");
	double tc[ROUNDS], tp[ROUNDS];
	size_t n = 0;
	for (int i = 0; i < rounds; i++) {
		msb_pool_report rep;
		if (msb_pool_fill(pool, &rep, &err) != MSB_OK) {
			printf("%-8s skipped: fill: %s\n", name, msb_error_message(&err));
			break;
		}
		char t[32];
		snprintf(t, sizeof t, "c%d", i);
		double c = one(r, cold, t);
		snprintf(t, sizeof t, "p%d", i);
		double p = one(r, pooled, t);
		if (c < 0 || p < 0)
			break;
		tc[n] = c, tp[n] = p, n++;
	}
	msb_pool_report rep;
	msb_pool_drain(pool, &rep, NULL);
	if (n == (size_t)rounds) {
		double mc = bench_median(tc, n), mp = bench_median(tp, n);
		printf("%-8s cold acquire+exec %8.2f ms   pooled %8.2f ms   %5.1fx faster (median of %d)\n",
		       name, mc, mp, mc / mp, rounds);
	}
out:
	msb_error_clear(&err);
	msb_router_free(r);
	msb_config_free(cfg);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_pool: could not remove %s\n", dir);
}

int main(void)
{
	bench("process", "none", ROUNDS);
	bench("bwrap", "container", ROUNDS);
	/* A pooled microVM is a pre-booted one; three rounds, each boots two VMs (cold, refill). */
	if (getenv("MSB_QEMU_GUEST"))
		bench("qemu", "microvm", 3);
	else
		printf("qemu     skipped: set MSB_QEMU_GUEST to the guest directory\n");
	return 0;
}
