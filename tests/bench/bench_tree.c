/*
 * bench_tree.c — what "a timeout leaves nothing it started" costs each command (issue 17),
 * on the process and bwrap backends, in one run:
 *
 *   bare       fork + exec `true` + wait, no sandbox: the baseline every ratio is against
 *   warm       exec `true` in a live sandbox with nothing left behind: the common path, where
 *              noting what the command must spare is one waitpid (plus, per connection and
 *              off the request's path, one prctl making the runner a subreaper)
 *   warm+left  the same in a sandbox where an earlier command on the connection left a
 *              daemon: the runner walks /proc before each command to note what to spare
 *   kill       a command timed out after 50 ms that had started a setsid child, minus the
 *              50 ms: the group kill, the /proc sweep and the answer
 *
 * Rounds interleave the three warm kinds (the machine is shared); figures are medians.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_warm.h"

#define PROCESS_PLUGIN MSB_TEST_MODULE("plugins/process", "process")
#define BWRAP_PLUGIN MSB_TEST_MODULE("plugins/bwrap", "bwrap")
#define ROUNDS 400
#define KILLS 20

static msb_sandbox_handle *acquire(backend_fixture *fx, const msb_spec *spec, const char *thread)
{
	msb_key key = { "bench", thread, "agent", "" };
	msb_sandbox_handle *h = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (fx->ops->acquire(fx->self, &key, spec, &h, &err) != MSB_OK) {
		fprintf(stderr, "acquire: %s\n", msb_error_message(&err));
		exit(1);
	}
	return h;
}

static void run_sh(backend_fixture *fx, msb_sandbox_handle *h, double timeout, const char *script)
{
	const char *argv[] = { "sh", "-c", script, NULL };
	msb_exec_request req = { .argv = argv, .timeout = timeout };
	msb_exec_result res = { 0 };
	fx->ops->exec(h, &req, &res, NULL);
	msb_exec_result_free(&res);
}

static void one_backend(const char *name, const char *plugin, const char *extra)
{
	backend_fixture fx;
	msb_error err = MSB_ERROR_INIT;
	if (backend_fixture_state(&fx, NULL, "/tmp/msb-bench-tree-XXXXXX", &err) != MSB_OK)
		exit(1);
	chmod(fx.state, 0755); /* bwrap's sandbox user must reach its directories */
	if (backend_fixture_load(&fx, plugin, &err, "state_dir: %s\nagent: %s\n%s", fx.state,
				 BACKEND_FIXTURE_AGENT, extra) != MSB_OK) {
		printf("%s: skipped: %s\n", name, msb_error_message(&err));
		return;
	}
	msb_spec spec;
	msb_spec_init(&spec, "default");
	msb_sandbox_handle *clean = acquire(&fx, &spec, "clean"), *left = acquire(&fx, &spec, "left");
	run_sh(&fx, left, 30, "sleep 100000 </dev/null >/dev/null 2>&1 &");
	static double bare[ROUNDS], warm[ROUNDS], warm_left[ROUNDS], kill_ms[KILLS];
	for (int i = 0; i < 20; i++)
		bench_exec_true(&fx, clean), bench_exec_true(&fx, left);
	/* Each round takes the three in another order, so no kind always follows another. */
	for (int r = 0; r < ROUNDS; r++)
		for (int j = 0; j < 3; j++) {
			int kind = (r + j) % 3;
			double t = bench_now_ms();
			if (kind == 0)
				bench_bare_true();
			else if (bench_exec_true(&fx, kind == 1 ? clean : left))
				exit(1);
			(kind == 0 ? bare : kind == 1 ? warm : warm_left)[r] = bench_now_ms() - t;
		}
	for (int k = 0; k < KILLS; k++) {
		double t = bench_now_ms();
		run_sh(&fx, clean, 0.05, "setsid sleep 100000 </dev/null >/dev/null 2>&1 & sleep 100");
		kill_ms[k] = bench_now_ms() - t - 50.0;
	}
	double mb = bench_median(bare, ROUNDS), mw = bench_median(warm, ROUNDS);
	double ml = bench_median(warm_left, ROUNDS), mk = bench_median(kill_ms, KILLS);
	printf("%s: medians of %d interleaved rounds (kill: %d)\n", name, ROUNDS, KILLS);
	printf("  bare fork+exec true:             %8.3f ms\n", mb);
	printf("  warm exec true, nothing left:    %8.3f ms  = %.2fx bare  [target < 1 ms]\n", mw, mw / mb);
	printf("  warm exec true, a daemon left:   %8.3f ms  = %.2fx bare, %.2fx warm\n", ml, ml / mb,
	       ml / mw);
	printf("  timeout kill (group + sweep):    %8.3f ms past the deadline  = %.2fx warm\n", mk,
	       mk / mw);
	fx.ops->release(clean);
	fx.ops->release(left);
	msb_key k1 = { "bench", "clean", "agent", "" }, k2 = { "bench", "left", "agent", "" };
	msb_disposal_failure f = { 0 };
	fx.ops->dispose(fx.self, &k1, &f);
	msb_disposal_failure_free(&f);
	fx.ops->dispose(fx.self, &k2, &f);
	msb_disposal_failure_free(&f);
	backend_fixture_close(&fx);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx.state);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", fx.state);
}

int main(void)
{
	one_backend("process", PROCESS_PLUGIN, "");
	one_backend("bwrap", BWRAP_PLUGIN, "memory: 0\npids: 0\ncpus: 0\n");
	return 0;
}
