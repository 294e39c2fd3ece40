/*
 * bench_cycle.h — one cold cycle of a backend, timed by phase: acquire a fresh key, exec
 * `true`, release, dispose. What bench_bwrap measures and ab_bwrap compares.
 */
#ifndef MSB_BENCH_CYCLE_H
#define MSB_BENCH_CYCLE_H

#include <stdbool.h>

#include <msb/backend.h>

#include "bench_stats.h"

typedef struct bench_cycle {
	double acquire, exec, dispose; /* ms */
} bench_cycle;

/* Exec `true` in `h`; false (the reason in `err`) unless it ran and exited 0. */
static inline bool bench_exec_true(const struct msb_backend_v27 *ops, msb_sandbox_handle *h,
				   msb_error *err)
{
	const char *argv[] = { "true", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 10 };
	msb_exec_result res = { 0 };
	bool ok = ops->exec(h, &req, &res, err) == MSB_OK && res.exit_code == 0;
	msb_exec_result_free(&res);
	return ok;
}

/* One cold cycle of key (bench, `thread`); false, naming the phase in *failed, on a failure. */
static inline bool bench_cold_cycle(const struct msb_backend_v27 *ops, msb_backend_instance *self,
				    const msb_spec *spec, const char *thread, bench_cycle *out,
				    const char **failed, msb_error *err)
{
	msb_key key = { "bench", thread, "a", "" };
	msb_sandbox_handle *h = NULL;
	double t0 = bench_now_ms();
	if (ops->acquire(self, &key, spec, &h, err)) {
		*failed = "acquire";
		return false;
	}
	double t1 = bench_now_ms();
	bool ran = bench_exec_true(ops, h, err);
	double t2 = bench_now_ms();
	ops->release(h);
	msb_disposal_failure f = { 0 };
	bool left = ops->dispose(self, &key, &f);
	msb_disposal_failure_free(&f);
	*out = (bench_cycle){ t1 - t0, t2 - t1, bench_now_ms() - t2 };
	*failed = !ran ? "exec true" : left ? "dispose" : NULL;
	return ran && !left;
}

#endif
