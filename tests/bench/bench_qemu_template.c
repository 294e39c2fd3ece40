/*
 * bench_qemu_template.c — qemu templates (issue 22) against boots of the same guest, in one
 * run:
 *
 *   cold        acquire a new key → first `exec true` → dispose: a boot (template off)
 *               against a clone of a template (template: true), same guest and memory;
 *               target (issue 22): the clone at least 10x faster under TCG
 *   python      acquire → first `python3 -c pass` in the python store image, each from its
 *               own template: one made with `template_warmup: [python3 -c pass]`, one
 *               without (skipped, saying why, when the store has no python image)
 *   memory      8 idle clones against 8 idle booted VMs: per VM, the Pss and Private_Dirty
 *               of QEMU (/proc/PID/smaps_rollup; RSS would count each clone's shared
 *               template pages in full); target: a clone at most 1/4 of a booted VM
 *
 * Making each template (a boot, the warm-up, the save) is timed and printed apart: it is
 * paid once per template input, not per sandbox. `bench_qemu_template [ROUNDS] [N_MEM]`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <msb/image_store.h>

#include "../backends/qemu_fixture.h"
#include "bench_cycle.h"
#include "bench_stats.h"

#define MAX_ROUNDS 16
#define MAX_VMS 16

static void die_err(const char *what, msb_error *err)
{
	fprintf(stderr, "bench_qemu_template: %s: %s\n", what, msb_error_message(err));
	exit(1);
}

static backend_fixture open_backend(const char *extra)
{
	backend_fixture fx;
	msb_error err = MSB_ERROR_INIT;
	if (qemu_fixture_open(&fx, NULL, extra, &err) != MSB_OK)
		die_err("open", &err);
	return fx;
}

/* One cold cycle; exits on failure. */
static bench_cycle cycle(backend_fixture *fx, const msb_spec *spec, const char *thread)
{
	bench_cycle c;
	const char *failed = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (!bench_cold_cycle(fx->ops, fx->self, spec, thread, &c, &failed, &err)) {
		fprintf(stderr, "bench_qemu_template: %s: %s failed: %s\n", thread, failed,
			msb_error_message(&err));
		exit(1);
	}
	return c;
}

static double total(bench_cycle c)
{
	return c.acquire + c.exec + c.dispose;
}

/* Whether this backend's sandbox of `thread` fell back to a boot (template.fallback). */
static bool fell_back(msb_sandbox_handle *h)
{
	char *p = msb_driver_path(msb_driver_sandbox_box(h)->dir, "template.fallback");
	bool yes = p && access(p, F_OK) == 0;
	free(p);
	return yes;
}

/* acquire → first `python3 -c pass` → dispose, ms for the first two; exits on failure. */
static void python_first(backend_fixture *fx, const msb_spec *spec, const char *thread,
			 double *acquire, double *first)
{
	msb_key key = { "bench", thread, "a", "" };
	msb_sandbox_handle *h = NULL;
	msb_error err = MSB_ERROR_INIT;
	double t0 = bench_now_ms();
	if (fx->ops->acquire(fx->self, &key, spec, &h, &err))
		die_err("python acquire", &err);
	double t1 = bench_now_ms();
	const char *argv[] = { "python3", "-c", "pass", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 60 };
	msb_exec_result res = { 0 };
	if (fx->ops->exec(h, &req, &res, &err) || res.exit_code != 0)
		die_err("python3 -c pass", &err);
	double t2 = bench_now_ms();
	msb_exec_result_free(&res);
	if (fell_back(h))
		fprintf(stderr, "bench_qemu_template: %s booted (template.fallback)\n", thread);
	fx->ops->release(h);
	msb_disposal_failure f = { 0 };
	fx->ops->dispose(fx->self, &key, &f);
	msb_disposal_failure_free(&f);
	*acquire = t1 - t0;
	*first = t2 - t1;
}

/* Pss and Private_Dirty of process `pid`, KiB, from smaps_rollup. */
static bool smaps(pid_t pid, long *pss, long *dirty)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%ld/smaps_rollup", (long)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	*pss = *dirty = -1;
	while (fgets(line, sizeof line, f)) {
		sscanf(line, "Pss: %ld kB", pss);
		sscanf(line, "Private_Dirty: %ld kB", dirty);
	}
	fclose(f);
	return *pss >= 0 && *dirty >= 0;
}

/* `n` idle sandboxes at once; the mean Pss and Private_Dirty of their QEMUs, KiB. */
static void idle_memory(backend_fixture *fx, const msb_spec *spec, const char *what, int n,
			double *pss, double *dirty)
{
	msb_sandbox_handle *h[MAX_VMS];
	msb_error err = MSB_ERROR_INIT;
	char thread[MAX_VMS][32];
	for (int i = 0; i < n; i++) {
		snprintf(thread[i], sizeof thread[i], "%s-mem-%d", what, i);
		msb_key key = { "bench", thread[i], "a", "" };
		if (fx->ops->acquire(fx->self, &key, spec, &h[i], &err))
			die_err("memory acquire", &err);
		if (!bench_exec_true(fx->ops, h[i], &err))
			die_err("memory exec", &err);
	}
	/* Idle: the guests settle (their agents blocked reading their ports). */
	sleep(3);
	long sp = 0, sd = 0;
	for (int i = 0; i < n; i++) {
		long p, d;
		char *path = msb_driver_path(msb_driver_sandbox_box(h[i])->dir, "qemu.pid");
		pid_t pid = msb_driver_read_pid_file(path);
		free(path);
		if (!smaps(pid, &p, &d)) {
			fprintf(stderr, "bench_qemu_template: no smaps_rollup for QEMU %ld\n", (long)pid);
			exit(1);
		}
		sp += p;
		sd += d;
	}
	for (int i = 0; i < n; i++) {
		fx->ops->release(h[i]);
		msb_key key = { "bench", thread[i], "a", "" };
		msb_disposal_failure f = { 0 };
		fx->ops->dispose(fx->self, &key, &f);
		msb_disposal_failure_free(&f);
	}
	*pss = (double)sp / n;
	*dirty = (double)sd / n;
}

static void close_backend(backend_fixture *fx)
{
	backend_fixture_close(fx);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf %s/templates", fx->state);
	if (system(cmd) != 0 || qemu_fixture_leaks(fx))
		fprintf(stderr, "bench_qemu_template: %s left something behind\n", fx->state);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3;
	int n_mem = argc > 2 ? atoi(argv[2]) : 8;
	rounds = rounds < 1 ? 1 : rounds > MAX_ROUNDS ? MAX_ROUNDS : rounds;
	n_mem = n_mem < 1 ? 1 : n_mem > MAX_VMS ? MAX_VMS : n_mem;
	char why[512];
	if (!qemu_fixture_usable(why, sizeof why)) {
		printf("bench_qemu_template: skipped: %s\n", why);
		return 0;
	}
	msb_spec spec;
	msb_spec_init(&spec, "code");
	backend_fixture boot = open_backend("memory: 256MiB\n");
	backend_fixture tmpl = open_backend("memory: 256MiB\ntemplate: true\n");

	double t0 = bench_now_ms();
	bench_cycle made = cycle(&tmpl, &spec, "make");
	printf("template made and first clone cycled: %.0f ms (once per template input; the "
	       "clone's own acquire %.0f ms)\n", bench_now_ms() - t0, made.acquire);

	double b[MAX_ROUNDS], c[MAX_ROUNDS], ba[MAX_ROUNDS], ca[MAX_ROUNDS];
	for (int i = 0; i < rounds; i++) {
		char thread[32];
		snprintf(thread, sizeof thread, "boot-%d", i);
		bench_cycle x = cycle(&boot, &spec, thread);
		snprintf(thread, sizeof thread, "clone-%d", i);
		bench_cycle y = cycle(&tmpl, &spec, thread);
		b[i] = total(x);
		c[i] = total(y);
		ba[i] = x.acquire;
		ca[i] = y.acquire;
		printf("round %d: boot %.0f ms (acquire %.0f, exec %.1f, dispose %.0f) | clone %.0f ms "
		       "(acquire %.0f, exec %.1f, dispose %.0f) | %.1fx\n", i, b[i], x.acquire, x.exec,
		       x.dispose, c[i], y.acquire, y.exec, y.dispose, b[i] / c[i]);
	}
	double mb = bench_median(b, (size_t)rounds), mc = bench_median(c, (size_t)rounds);
	printf("cold acquire→exec true→dispose, median of %d: boot %.0f ms, clone %.0f ms: "
	       "%.1fx (target >= 10x); acquire alone %.0f vs %.0f ms\n", rounds, mb, mc, mb / mc,
	       bench_median(ba, (size_t)rounds), bench_median(ca, (size_t)rounds));

	double cp, cd, bp, bd;
	idle_memory(&tmpl, &spec, "clone", n_mem, &cp, &cd);
	idle_memory(&boot, &spec, "boot", n_mem, &bp, &bd);
	printf("idle memory per VM, %d at once: boot Pss %.1f MiB Private_Dirty %.1f MiB | clone "
	       "Pss %.1f MiB Private_Dirty %.1f MiB | clone/boot Pss %.2f, Private_Dirty %.2f "
	       "(target <= 0.25)\n", n_mem, bp / 1024, bd / 1024, cp / 1024, cd / 1024, cp / bp,
	       cd / bd);
	close_backend(&boot);
	close_backend(&tmpl);

	msb_image_record rec;
	msb_error err = MSB_ERROR_INIT;
	if (msb_image_inspect(msb_image_store_default_dir(), "python", &rec, &err) != MSB_OK) {
		printf("python: skipped: %s (build-aux/python-image.sh imports it)\n",
		       msb_error_message(&err));
		return 0;
	}
	msb_image_record_free(&rec);
	msb_spec py;
	msb_spec_init(&py, "bench");
	py.image = "python";
	backend_fixture cold = open_backend("memory: 512MiB\ntemplate: true\n");
	backend_fixture warm = open_backend("memory: 512MiB\ntemplate: true\n"
					    "template_warmup: [\"python3 -c pass\"]\n");
	double a, f;
	python_first(&cold, &py, "py-make", &a, &f);
	python_first(&warm, &py, "py-make", &a, &f);
	double fc[MAX_ROUNDS], fw[MAX_ROUNDS], ac[MAX_ROUNDS], aw[MAX_ROUNDS];
	for (int i = 0; i < rounds; i++) {
		char thread[32];
		snprintf(thread, sizeof thread, "py-%d", i);
		python_first(&cold, &py, thread, &ac[i], &fc[i]);
		python_first(&warm, &py, thread, &aw[i], &fw[i]);
		printf("python round %d: no warm-up: acquire %.0f ms, first python3 %.0f ms | warm-up: "
		       "acquire %.0f ms, first python3 %.0f ms\n", i, ac[i], fc[i], aw[i], fw[i]);
	}
	double mfc = bench_median(fc, (size_t)rounds), mfw = bench_median(fw, (size_t)rounds);
	printf("first python3 -c pass after a clone, median of %d: no warm-up %.0f ms, warm-up "
	       "%.0f ms: %.1fx\n", rounds, mfc, mfw, mfc / mfw);
	close_backend(&cold);
	close_backend(&warm);
	return 0;
}
