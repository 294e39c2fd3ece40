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
 * Targets (issue 7): cold within 1.1x (bare + agent start); warm under 1 ms. Figures are
 * medians of interleaved samples (see main), because the machine is shared.
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

#include "bench_stats.h"
#include "msb_test.h"

#define PLUGIN MSB_TEST_MODULE("plugins/process", "process")
#define AGENT MSB_TOP_BUILDDIR "/sdk/agent/msb-agent"

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

/* One cold cycle: acquire a new key, exec true, dispose; the three times in ms. */
static void cold_once(bench_backend *b, int i, double *acq, double *ex, double *disp)
{
	char thread[32];
	snprintf(thread, sizeof thread, "cold-%d", i);
	msb_key key = { "bench", thread, "agent", "" };
	double t0 = bench_now_ms();
	msb_sandbox_handle *h = acquire(b, &key);
	double t1 = bench_now_ms();
	exec_true(b, h);
	b->ops->release(h);
	double t2 = bench_now_ms();
	dispose(b, &key);
	double t3 = bench_now_ms();
	*acq = t1 - t0, *ex = t2 - t1, *disp = t3 - t2;
}

/* write_file then read_file of `len` bytes through the agent; exits on a failure. */
static void files_round_trip(bench_backend *b, msb_sandbox_handle *h, const char *bytes, size_t len)
{
	msb_error err = MSB_ERROR_INIT;
	msb_buf out = { 0 };
	if (b->ops->write_file(h, "bench.bin", bytes, len, b->spec.work_dir, &err) ||
	    b->ops->read_file(h, "bench.bin", b->spec.work_dir, len, &out, &err) || out.len != len) {
		fprintf(stderr, "bench_process: files: %s\n", msb_error_message(&err));
		exit(1);
	}
	msb_buf_free(&out);
}

/* The same bytes written to `path` and read back with plain system calls. */
static void plain_round_trip(const char *path, const char *bytes, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	char *back = malloc(len);
	if (fd < 0 || !back || write(fd, bytes, len) != (ssize_t)len || close(fd) != 0 ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || read(fd, back, len) != (ssize_t)len) {
		fprintf(stderr, "bench_process: plain file round trip failed\n");
		exit(1);
	}
	close(fd);
	free(back);
	unlink(path);
}

static void close_backend(bench_backend *b)
{
	msb_backend_close(b->backend);
	msb_loader_free(b->loader);
}

#define COLD_ROUNDS 60
#define WARM_ROUNDS 1000
#define CROWD 100
#define CROWD_ROUNDS 30
#define FILE_MIB 8
#define FILE_ROUNDS 15

int main(void)
{
	if (geteuid() != 0) {
		printf("bench_process: skipped (the bare agent-start baseline unshares namespaces as root)\n");
		return 0;
	}
	char dir[] = "/tmp/msb-bench-process-XXXXXX";
	char shm[] = "/dev/shm/msb-bench-process-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	bool have_shm = mkdtemp(shm) != NULL;
	/* The baseline starts its agent where the tmpfs cold runs keep their state. */
	const char *fast = have_shm ? shm : dir;

	/*
	 * Every figure is the median of samples taken interleaved — one bare run, one agent
	 * start, one cold cycle on tmpfs, one on disk, and round again — so a burst of load
	 * from elsewhere on the machine lands on baseline and subject alike.
	 */
	static double bare[COLD_ROUNDS], start[COLD_ROUNDS], base[COLD_ROUNDS], cold[COLD_ROUNDS],
		acq[COLD_ROUNDS],
		ex[COLD_ROUNDS], disp[COLD_ROUNDS], cold_disk[COLD_ROUNDS], acq_d[COLD_ROUNDS],
		ex_d[COLD_ROUNDS], disp_d[COLD_ROUNDS];
	bench_backend mem, disk;
	open_backend(&mem, fast);
	open_backend(&disk, dir);
	for (int i = 0; i < 10; i++)
		bench_bare_true();
	agent_start(fast);
	for (int r = 0; r < COLD_ROUNDS; r++) {
		double t = bench_now_ms();
		bench_bare_true();
		bare[r] = bench_now_ms() - t;
		t = bench_now_ms();
		agent_start(fast);
		start[r] = bench_now_ms() - t;
		base[r] = bare[r] + start[r];
		cold_once(&mem, r, &acq[r], &ex[r], &disp[r]);
		cold[r] = acq[r] + ex[r] + disp[r];
		cold_once(&disk, r, &acq_d[r], &ex_d[r], &disp_d[r]);
		cold_disk[r] = acq_d[r] + ex_d[r] + disp_d[r];
	}
	close_backend(&disk);

	static double warm[WARM_ROUNDS], warm_bare[WARM_ROUNDS];
	msb_key key = { "bench", "warm", "agent", "" };
	msb_sandbox_handle *h = acquire(&mem, &key);
	for (int i = 0; i < 50; i++)
		exec_true(&mem, h);
	for (int r = 0; r < WARM_ROUNDS; r++) {
		double t = bench_now_ms();
		exec_true(&mem, h);
		warm[r] = bench_now_ms() - t;
		t = bench_now_ms();
		bench_bare_true();
		warm_bare[r] = bench_now_ms() - t;
	}
	mem.ops->release(h);
	dispose(&mem, &key);

	/*
	 * Dispose among a crowd: CROWD live sandboxes of other keys in mem's state directory,
	 * cycles there interleaved with cycles in an empty one (`alone`). A dispose that read
	 * every sandbox's metadata would grow with the crowd.
	 */
	char lone[] = "/dev/shm/msb-bench-alone-XXXXXX";
	bench_backend alone;
	bool have_lone = mkdtemp(lone) != NULL;
	open_backend(&alone, have_lone ? lone : dir);
	for (int i = 0; i < CROWD; i++) {
		char thread[32];
		snprintf(thread, sizeof thread, "c-%d", i);
		msb_key k = { "crowd", thread, "agent", "" };
		mem.ops->release(acquire(&mem, &k));
	}
	static double disp_alone[CROWD_ROUNDS], disp_crowd[CROWD_ROUNDS];
	for (int r = 0; r < CROWD_ROUNDS; r++) {
		double a, e;
		cold_once(&alone, COLD_ROUNDS + r, &a, &e, &disp_alone[r]);
		cold_once(&mem, COLD_ROUNDS + r, &a, &e, &disp_crowd[r]);
	}
	close_backend(&alone);

	/*
	 * A file through the agent: write_file then read_file of FILE_MIB, against writing and
	 * reading the same bytes to a file beside the state directory with plain system calls.
	 */
	static double through[FILE_ROUNDS], plain[FILE_ROUNDS];
	size_t file_len = (size_t)FILE_MIB << 20;
	char *bytes = malloc(file_len), plain_path[96];
	if (!bytes)
		return 1;
	memset(bytes, 'x', file_len);
	snprintf(plain_path, sizeof plain_path, "%s/plain.bin", fast);
	msb_key fkey = { "bench", "files", "agent", "" };
	msb_sandbox_handle *fh = acquire(&mem, &fkey);
	for (int r = 0; r < FILE_ROUNDS; r++) {
		double t = bench_now_ms();
		files_round_trip(&mem, fh, bytes, file_len);
		through[r] = bench_now_ms() - t;
		t = bench_now_ms();
		plain_round_trip(plain_path, bytes, file_len);
		plain[r] = bench_now_ms() - t;
	}
	mem.ops->release(fh);
	dispose(&mem, &fkey);
	free(bytes);
	double t_scope = bench_now_ms();
	msb_scope_purge purge = { 0 };
	for (int i = 0; i < CROWD; i++) {
		char thread[32];
		snprintf(thread, sizeof thread, "c-%d", i);
		mem.ops->dispose_scope(mem.inst, "crowd", thread, &purge);
	}
	t_scope = (bench_now_ms() - t_scope) / CROWD;
	if (purge.disposed != CROWD || purge.has_undisposed) {
		fprintf(stderr, "bench_process: dispose_scope left the crowd's sandboxes\n");
		return 1;
	}
	msb_scope_purge_free(&purge);
	close_backend(&mem);
	char cmd[160];
	snprintf(cmd, sizeof cmd, "rm -rf %s %s %s", dir, have_shm ? shm : "", have_lone ? lone : "");
	if (system(cmd) != 0)
		fprintf(stderr, "bench_process: could not remove %s\n", dir);

	/* Cold is compared with the same round's bare + start, medians of sums on both sides. */
	double m_bare = bench_median(bare, COLD_ROUNDS), m_start = bench_median(start, COLD_ROUNDS);
	double m_base = bench_median(base, COLD_ROUNDS);
	double m_cold = bench_median(cold, COLD_ROUNDS), m_disk = bench_median(cold_disk, COLD_ROUNDS);
	double m_warm = bench_median(warm, WARM_ROUNDS), m_wbare = bench_median(warm_bare, WARM_ROUNDS);
	printf("medians of %d interleaved rounds (warm: %d)\n", COLD_ROUNDS, WARM_ROUNDS);
	printf("bare fork+exec true:              %8.3f ms\n", m_bare);
	printf("bare agent start (netns+pidns):   %8.3f ms  (bare + start, per round: %.3f ms)\n",
	       m_start, m_base);
	printf("cold acquire+exec true+dispose:   %8.3f ms  = %.2fx (bare + agent start)  [target <= 1.1x]"
	       "  (state dir on tmpfs)\n", m_cold, m_cold / m_base);
	printf("  of which acquire %.3f ms, first exec %.3f ms, dispose %.3f ms\n",
	       bench_median(acq, COLD_ROUNDS), bench_median(ex, COLD_ROUNDS), bench_median(disp, COLD_ROUNDS));
	printf("cold, state dir on the disk (/tmp): %6.3f ms  = %.2fx (bare + agent start)\n",
	       m_disk, m_disk / m_base);
	printf("  of which acquire %.3f ms, first exec %.3f ms, dispose %.3f ms\n",
	       bench_median(acq_d, COLD_ROUNDS), bench_median(ex_d, COLD_ROUNDS), bench_median(disp_d, COLD_ROUNDS));
	printf("warm exec true round trip:        %8.3f ms  = %.2fx bare fork+exec (%.3f ms)  [target < 1 ms]\n",
	       m_warm, m_warm / m_wbare, m_wbare);
	double m_alone = bench_median(disp_alone, CROWD_ROUNDS), m_crowd = bench_median(disp_crowd, CROWD_ROUNDS);
	printf("dispose among %d live sandboxes:  %8.3f ms  = %.2fx dispose alone (%.3f ms)\n", CROWD,
	       m_crowd, m_crowd / m_alone, m_alone);
	printf("dispose_scope, each of %d:        %8.3f ms\n", CROWD, t_scope);
	double m_through = bench_median(through, FILE_ROUNDS), m_plain = bench_median(plain, FILE_ROUNDS);
	printf("%d MiB write_file + read_file:     %8.3f ms  = %.2fx plain write + read (%.3f ms)\n",
	       FILE_MIB, m_through, m_through / m_plain, m_plain);
	return 0;
}
