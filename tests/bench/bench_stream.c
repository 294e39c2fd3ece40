/*
 * bench_stream.c — the streamed exec on process, bwrap and qemu (`make bench`, or
 * tests/bench/bench_stream [process|bwrap|qemu]…).
 *
 * First byte: one long-running `cat` under exec_stream; the host writes one byte to its
 * stdin and times until the callback hands it back, 200 times (after 20 unmeasured). The
 * floor, measured in the same run: the same echo through a local `cat` over two pipes —
 * for process and bwrap exactly what the guest's side costs (the same kernel, the same
 * pipes), for qemu a host figure (the guest has no clock this one can read, so its own
 * floor is not measured). Both are round trips; the streaming overhead on a first byte
 * is estimated as half their difference (host to guest and back cost alike).
 *
 * Throughput: 64 MiB of output as four 16 MiB commands (16 MiB is the per-stream cap an
 * agent allows, MSB_AGENT_MAX_OUTPUT), buffered exec against exec_stream, alternated, the
 * best of three rounds each.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../backends/qemu_fixture.h"
#include "bench_stats.h"

#define ROUNDS 200
#define WARMUP 20
#define CHUNK ((size_t)16 * 1024 * 1024)

typedef struct echo {
	int in_w;
	int i;
	double t0;
	double rtt[WARMUP + ROUNDS];
} echo;

static void on_echo(void *ctx, msb_stream_id stream, const void *data, size_t len)
{
	(void)stream, (void)data;
	echo *e = ctx;
	for (size_t k = 0; k < len && e->i < WARMUP + ROUNDS; k++) {
		double now = bench_now_ms();
		e->rtt[e->i++] = now - e->t0;
		if (e->i == WARMUP + ROUNDS) {
			close(e->in_w);
			e->in_w = -1;
			return;
		}
		e->t0 = bench_now_ms();
		if (write(e->in_w, "x", 1) != 1)
			return;
	}
}

/* The floor: the same one-byte echo through a local cat. */
static double local_floor_ms(void)
{
	int to[2], from[2];
	if (pipe(to) || pipe(from))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(to[0], 0), dup2(from[1], 1);
		close(to[1]), close(from[0]);
		execlp("cat", "cat", (char *)NULL);
		_exit(127);
	}
	close(to[0]), close(from[1]);
	static double v[WARMUP + ROUNDS];
	char c;
	for (int i = 0; i < WARMUP + ROUNDS; i++) {
		double t0 = bench_now_ms();
		if (write(to[1], "x", 1) != 1 || read(from[0], &c, 1) != 1)
			return -1;
		v[i] = bench_now_ms() - t0;
	}
	close(to[1]), close(from[0]);
	waitpid(pid, NULL, 0);
	return bench_median(v + WARMUP, ROUNDS);
}

static double stream_rtt_ms(backend_fixture *fx, msb_sandbox_handle *h)
{
	int p[2];
	if (pipe(p))
		return -1;
	static echo e;
	memset(&e, 0, sizeof e);
	e.in_w = p[1];
	const char *argv[] = { "cat", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 120 };
	msb_exec_stream st = MSB_EXEC_STREAM_INIT;
	st.stdin_fd = p[0], st.ctx = &e, st.on_output = on_echo;
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	e.t0 = bench_now_ms();
	if (write(p[1], "x", 1) != 1)
		return -1;
	msb_errc rc = fx->ops->exec_stream(h, &req, &st, &res, &err);
	close(p[0]);
	if (e.in_w >= 0)
		close(e.in_w);
	msb_exec_result_free(&res);
	if (rc != MSB_OK || e.i < WARMUP + ROUNDS) {
		fprintf(stderr, "bench_stream: the echo failed after %d bytes: %s\n", e.i,
			msb_error_message(&err));
		msb_error_clear(&err);
		return -1;
	}
	return bench_median(e.rtt + WARMUP, ROUNDS);
}

static void on_bulk(void *ctx, msb_stream_id stream, const void *data, size_t len)
{
	(void)stream, (void)data;
	*(size_t *)ctx += len;
}

/* One 16 MiB command, buffered or streamed; its seconds, -1 when it did not deliver it all. */
static double bulk_s(backend_fixture *fx, msb_sandbox_handle *h, bool streamed)
{
	const char *argv[] = { "head", "-c", "16777216", "/dev/zero", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 120, .max_output = CHUNK };
	msb_exec_result res = { 0 };
	size_t got = 0;
	double t0 = bench_now_ms();
	msb_errc rc;
	if (streamed) {
		msb_exec_stream st = MSB_EXEC_STREAM_INIT;
		st.ctx = &got, st.on_output = on_bulk;
		rc = fx->ops->exec_stream(h, &req, &st, &res, NULL);
	} else {
		rc = fx->ops->exec(h, &req, &res, NULL);
		got = res.out.len;
	}
	double s = (bench_now_ms() - t0) / 1000.0;
	msb_exec_result_free(&res);
	return rc == MSB_OK && got == CHUNK ? s : -1;
}

static void remove_state(const char *state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", state);
	if (state[0] && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", state);
}

static int bench(const char *name)
{
	backend_fixture fx;
	msb_error err = MSB_ERROR_INIT;
	char tmpl[64];
	snprintf(tmpl, sizeof tmpl, "/tmp/msb-bench-stream-%s-XXXXXX", name);
	char plugin[256];
	msb_errc rc;
	if (!strcmp(name, "qemu")) {
		rc = qemu_fixture_open(&fx, NULL, "", &err); /* its own fresh state dir */
	} else {
		if (backend_fixture_state(&fx, NULL, tmpl, &err) != MSB_OK)
			return 1;
		chmod(fx.state, 0755); /* bwrap binds it as the sandbox's user */
		snprintf(plugin, sizeof plugin, MSB_TOP_BUILDDIR "/plugins/%s/.libs/%s.so", name, name);
		rc = backend_fixture_load(&fx, plugin, &err, "state_dir: %s\nagent: %s\n", fx.state,
					  BACKEND_FIXTURE_AGENT);
	}
	msb_spec spec;
	msb_spec_init(&spec, "bench");
	msb_key key = { "bench", "stream", "", "" };
	msb_sandbox_handle *h = NULL;
	if (rc == MSB_OK)
		rc = fx.ops->acquire(fx.self, &key, &spec, &h, &err);
	if (rc != MSB_OK) {
		printf("%-8s skipped: %s\n", name, msb_error_message(&err));
		msb_error_clear(&err);
		backend_fixture_close(&fx);
		remove_state(fx.state);
		return 0;
	}
	double floor_ms = local_floor_ms(), rtt = stream_rtt_ms(&fx, h);
	double best_b = 1e9, best_s = 1e9;
	for (int r = 0; r < 3; r++) {
		double b = 0, s = 0;
		for (int k = 0; k < 4 && b >= 0; k++) {
			double x = bulk_s(&fx, h, false);
			b = x < 0 ? -1 : b + x;
		}
		for (int k = 0; k < 4 && s >= 0; k++) {
			double x = bulk_s(&fx, h, true);
			s = x < 0 ? -1 : s + x;
		}
		if (b > 0 && b < best_b)
			best_b = b;
		if (s > 0 && s < best_s)
			best_s = s;
	}
	printf("%-8s first byte: echo round trip %.3f ms, local floor %.3f ms%s: one-way over the "
	       "floor ~%.3f ms\n", name, rtt, floor_ms, strcmp(name, "qemu") ? "" : " (host's)",
	       (rtt - floor_ms) / 2);
	printf("%-8s 64 MiB: buffered %.0f MiB/s, streamed %.0f MiB/s (x%.2f)\n", name,
	       64 / best_b, 64 / best_s, best_b / best_s);
	msb_disposal_failure failure = { 0 };
	fx.ops->release(h);
	fx.ops->dispose(fx.self, &key, &failure);
	msb_disposal_failure_free(&failure);
	backend_fixture_close(&fx);
	remove_state(fx.state);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	static const char *const all[] = { "process", "bwrap", "qemu", NULL };
	int rc = 0;
	if (argc > 1)
		for (int i = 1; i < argc; i++)
			rc |= bench(argv[i]);
	else
		for (const char *const *p = all; *p; p++)
			rc |= bench(*p);
	return rc;
}
