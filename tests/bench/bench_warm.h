/*
 * bench_warm.h — the warm half of the agent-backed plugins' benchmarks (bench_gvisor.c,
 * bench_qemu.c): `exec true` and a stat_file of a missing file, each a round trip to the
 * agent of one live sandbox, timed many times after a few unmeasured rounds.
 */
#ifndef MSB_BENCH_WARM_H
#define MSB_BENCH_WARM_H

#include "../backends/backend_fixture.h"
#include "bench_stats.h"

/* One `exec true` in `h`: MSB_OK only when it ran and exited 0. */
static inline msb_errc bench_exec_true(const backend_fixture *fx, msb_sandbox_handle *h)
{
	const char *argv[] = { "true", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 30 };
	msb_exec_result res = { 0 };
	msb_errc rc = fx->ops->exec(h, &req, &res, NULL);
	if (rc == MSB_OK && res.exit_code != 0)
		rc = MSB_E_BACKEND;
	msb_exec_result_free(&res);
	return rc;
}

/*
 * `warmup` unmeasured exec rounds, then `n` (at most 1000) timed ones and `n` timed
 * stat_file round trips in `h`; their medians in ms. -1 when an exec failed.
 */
static inline int bench_warm(const backend_fixture *fx, const msb_spec *spec, msb_sandbox_handle *h,
			     int warmup, size_t n, double *exec_ms, double *stat_ms)
{
	static double w[1000], s[1000];
	n = n > 1000 ? 1000 : n;
	for (int i = 0; i < warmup; i++)
		bench_exec_true(fx, h);
	for (size_t i = 0; i < n; i++) {
		double t0 = bench_now_ms();
		if (bench_exec_true(fx, h))
			return -1;
		w[i] = bench_now_ms() - t0;
	}
	for (size_t i = 0; i < n; i++) {
		msb_entry e = { 0 };
		bool found;
		double t0 = bench_now_ms();
		fx->ops->stat_file(h, "nothing", spec->work_dir, &e, &found, NULL);
		s[i] = bench_now_ms() - t0;
		free(e.path);
	}
	*exec_ms = bench_median(w, n);
	*stat_ms = bench_median(s, n);
	return 0;
}

#endif
