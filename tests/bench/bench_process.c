/*
 * bench_process.c — the process backend against the bare engine, in one run.
 *
 *   bare        fork + exec `true` + wait: what one command costs with no sandbox at all
 *   agent start the boundary alone: fork, setsid, unshare(net, pid), fork, exec msb-agent,
 *               wait for it to listen, kill it (what every cold acquire must pay)
 *   cold        acquire a new key + exec `true` + dispose, through the loaded plugin, with
 *               the state directory on tmpfs and on the disk (/tmp): a sandbox's state is a
 *               handful of files, and on this machine's ext4 each create or unlink costs
 *               about a millisecond
 *   warm        exec `true` in a live sandbox: a socket round trip plus a fork in the guest
 *
 * Targets (issue 7): cold within 1.1x (bare + agent start); warm under 1 ms.
 */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msb/driver.h>
#include <msb/loader.h>

#include "msb_test.h"

#define PLUGIN MSB_TEST_MODULE("plugins/process", "process")
#define AGENT MSB_TOP_BUILDDIR "/sdk/agent/msb-agent"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void bare_true(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		execlp("true", "true", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, NULL, 0);
}

static void agent_start(const char *dir)
{
	char sock[256];
	snprintf(sock, sizeof sock, "%s/bench.sock", dir);
	int ready[2], report[2];
	if (pipe(ready) < 0 || pipe(report) < 0)
		exit(1);
	pid_t mid = fork();
	if (mid == 0) {
		setsid();
		if (unshare(CLONE_NEWNET | CLONE_NEWPID) < 0)
			_exit(1);
		pid_t agent = fork();
		if (agent == 0) {
			dup2(ready[1], 3);
			execl(AGENT, AGENT, "--listen", sock, "--work-dir", dir, "--ready-fd", "3",
			      (char *)NULL);
			_exit(127);
		}
		if (write(report[1], &agent, sizeof agent) < 0)
			_exit(1);
		_exit(0);
	}
	close(ready[1]);
	close(report[1]);
	pid_t agent = 0;
	char byte;
	if (read(report[0], &agent, sizeof agent) != sizeof agent || read(ready[0], &byte, 1) != 1) {
		fprintf(stderr, "bench_process: the bare agent did not start\n");
		exit(1);
	}
	close(ready[0]);
	close(report[0]);
	waitpid(mid, NULL, 0);
	kill(agent, SIGKILL);
	/* Not our child: wait until the kernel has torn it down, as dispose does. */
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)agent);
	for (;;) {
		FILE *f = fopen(path, "r");
		if (!f)
			break;
		char buf[512];
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = '\0';
		char *p = strrchr(buf, ')');
		if (p && (p[2] == 'Z' || p[2] == 'X'))
			break;
		usleep(100);
	}
}

typedef struct bench_backend {
	msb_loader *loader;
	msb_backend *backend;
	const struct msb_backend_v27 *ops;
	msb_backend_instance *inst;
	msb_spec spec;
} bench_backend;

static void open_backend(bench_backend *b, const char *state_dir)
{
	msb_node vals[2] = {
		{ .kind = MSB_NODE_SCALAR, .file = "<bench>", .path = "state_dir", .scalar = state_dir },
		{ .kind = MSB_NODE_SCALAR, .file = "<bench>", .path = "agent", .scalar = AGENT },
	};
	msb_node_pair pairs[2] = { { "state_dir", 1, 1, &vals[0] }, { "agent", 1, 1, &vals[1] } };
	msb_node root = { .kind = MSB_NODE_MAP, .file = "<bench>", .path = "config", .len = 2,
			  .pairs = pairs };
	msb_error err = MSB_ERROR_INIT;
	const msb_plugin *plugin;
	if (msb_loader_new(&b->loader, &err) != MSB_OK ||
	    msb_loader_load(b->loader, PLUGIN, &plugin, &err) != MSB_OK ||
	    msb_backend_open(plugin, &root, NULL, NULL, &b->backend, &err) != MSB_OK) {
		fprintf(stderr, "bench_process: %s\n", msb_error_message(&err));
		exit(1);
	}
	b->ops = msb_backend_ops(b->backend);
	b->inst = msb_backend_instance_of(b->backend);
	msb_spec_init(&b->spec, "bench");
}

static void exec_true(bench_backend *b, msb_sandbox_handle *h)
{
	static const char *const argv[] = { "true", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 10 };
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	if (b->ops->exec(h, &req, &res, &err) != MSB_OK || res.exit_code != 0) {
		fprintf(stderr, "bench_process: exec true: %s\n", msb_error_message(&err));
		exit(1);
	}
	msb_exec_result_free(&res);
}

static msb_sandbox_handle *acquire(bench_backend *b, const msb_key *key)
{
	msb_sandbox_handle *h;
	msb_error err = MSB_ERROR_INIT;
	if (b->ops->acquire(b->inst, key, &b->spec, &h, &err) != MSB_OK) {
		fprintf(stderr, "bench_process: acquire: %s\n", msb_error_message(&err));
		exit(1);
	}
	return h;
}

static void dispose(bench_backend *b, const msb_key *key)
{
	msb_disposal_failure f = { 0 };
	if (b->ops->dispose(b->inst, key, &f)) {
		fprintf(stderr, "bench_process: dispose: %s\n", f.detail);
		exit(1);
	}
}

typedef struct cold_run {
	double total, acquire, exec, dispose;
} cold_run;

/* acquire a new key + exec true + dispose, n times, with the state directory at `dir`. */
static cold_run run_cold(const char *dir, int n)
{
	bench_backend b;
	open_backend(&b, dir);
	cold_run r = { 0 };
	for (int i = 0; i < n; i++) {
		char thread[32];
		snprintf(thread, sizeof thread, "cold-%d", i);
		msb_key key = { "bench", thread, "agent", "" };
		double t0 = now_ms();
		msb_sandbox_handle *h = acquire(&b, &key);
		double t1 = now_ms();
		exec_true(&b, h);
		b.ops->release(h);
		double t2 = now_ms();
		dispose(&b, &key);
		double t3 = now_ms();
		r.acquire += (t1 - t0) / n, r.exec += (t2 - t1) / n, r.dispose += (t3 - t2) / n;
	}
	r.total = r.acquire + r.exec + r.dispose;
	msb_backend_close(b.backend);
	msb_loader_free(b.loader);
	return r;
}

int main(void)
{
	if (geteuid() != 0) {
		printf("bench_process: skipped (the bare agent-start baseline unshares namespaces as root)\n");
		return 0;
	}
	char dir[] = "/tmp/msb-bench-process-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	const int n_bare = 300, n_start = 40, n_cold = 40, n_warm = 2000;

	for (int i = 0; i < 20; i++)
		bare_true();
	double t = now_ms();
	for (int i = 0; i < n_bare; i++)
		bare_true();
	double bare = (now_ms() - t) / n_bare;

	/* The baseline starts its agent where the tmpfs cold runs keep their state. */
	char shm[] = "/dev/shm/msb-bench-process-XXXXXX";
	bool have_shm = mkdtemp(shm) != NULL;
	const char *fast = have_shm ? shm : dir;
	agent_start(fast);
	t = now_ms();
	for (int i = 0; i < n_start; i++)
		agent_start(fast);
	double start = (now_ms() - t) / n_start;

	cold_run disk = run_cold(dir, n_cold);
	cold_run mem = have_shm ? run_cold(shm, n_cold) : disk;
	double cold = mem.total;

	bench_backend b;
	open_backend(&b, have_shm ? shm : dir);
	msb_key key = { "bench", "warm", "agent", "" };
	msb_sandbox_handle *h = acquire(&b, &key);
	for (int i = 0; i < 50; i++)
		exec_true(&b, h);
	t = now_ms();
	for (int i = 0; i < n_warm; i++)
		exec_true(&b, h);
	double warm = (now_ms() - t) / n_warm;
	b.ops->release(h);
	dispose(&b, &key);
	msb_backend_close(b.backend);
	msb_loader_free(b.loader);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s %s", dir, have_shm ? shm : "");
	if (system(cmd) != 0)
		fprintf(stderr, "bench_process: could not remove %s\n", dir);

	printf("bare fork+exec true:              %8.3f ms\n", bare);
	printf("bare agent start (netns+pidns):   %8.3f ms\n", start);
	printf("cold acquire+exec true+dispose:   %8.3f ms  = %.2fx (bare + agent start)  [target <= 1.1x]"
	       "  (state dir on tmpfs)\n", cold, cold / (bare + start));
	printf("  of which acquire %.3f ms, first exec %.3f ms, dispose %.3f ms\n", mem.acquire,
	       mem.exec, mem.dispose);
	printf("cold, state dir on the disk (/tmp): %6.3f ms  = %.2fx (bare + agent start)\n",
	       disk.total, disk.total / (bare + start));
	printf("  of which acquire %.3f ms, first exec %.3f ms, dispose %.3f ms\n", disk.acquire,
	       disk.exec, disk.dispose);
	printf("warm exec true round trip:        %8.3f ms  = %.2fx bare fork+exec        [target < 1 ms]\n",
	       warm, warm / bare);
	return 0;
}
