/*
 * exec_floor.h — running tests/bench/exec_floor inside a live sandbox through its plugin:
 * copied in with write_file, made executable, run with the same `true` the warm exec
 * benchmark starts. What one bare process start costs inside the boundary, to set beside
 * the warm exec round trip (see exec_floor.c).
 */
#ifndef MSB_BENCH_EXEC_FLOOR_H
#define MSB_BENCH_EXEC_FLOOR_H

#include <stdio.h>
#include <stdlib.h>

#include "../backends/backend_fixture.h"

#define EXEC_FLOOR_PROGRAM MSB_TOP_BUILDDIR "/tests/bench/exec_floor"

static inline msb_errc exec_floor_run(const backend_fixture *fx, msb_sandbox_handle *h,
				      const char *const *argv, msb_exec_result *res)
{
	msb_exec_request req = { .argv = argv, .timeout = 120 };
	msb_errc rc = fx->ops->exec(h, &req, res, NULL);
	return rc == MSB_OK && res->exit_code != 0 ? MSB_E_BACKEND : rc;
}

/* Median ms of one vfork + exec + wait of `true` inside the sandbox, `n` times; -1 on failure. */
static inline double exec_floor_measure(const backend_fixture *fx, msb_sandbox_handle *h,
					const char *work_dir, int n)
{
	FILE *f = fopen(EXEC_FLOOR_PROGRAM, "rb");
	if (!f)
		return -1;
	static char image[4 << 20];
	size_t len = fread(image, 1, sizeof image, f);
	fclose(f);
	if (len == 0 || len == sizeof image ||
	    fx->ops->write_file(h, "exec_floor", image, len, work_dir, NULL) != MSB_OK)
		return -1;
	char count[16];
	snprintf(count, sizeof count, "%d", n);
	const char *chmod_argv[] = { "chmod", "755", "exec_floor", NULL };
	const char *run_argv[] = { "./exec_floor", count, "true", NULL };
	msb_exec_result res = { 0 };
	double ms = -1;
	if (exec_floor_run(fx, h, chmod_argv, &res) == MSB_OK) {
		msb_exec_result_free(&res);
		res = (msb_exec_result){ 0 };
		if (exec_floor_run(fx, h, run_argv, &res) == MSB_OK && res.out.len)
			ms = strtod((const char *)res.out.data, NULL);
	}
	msb_exec_result_free(&res);
	return ms;
}

#endif
