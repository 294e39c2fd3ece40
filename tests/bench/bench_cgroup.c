/*
 * bench_cgroup.c — what starting a child inside a sandbox's cgroup costs, two ways, in the
 * same run and interleaved:
 *
 *   moved:  fork, then the parent writes the child's pid to every directory's cgroup.procs
 *           (what a supervisor that moves a started process does)
 *   born:   msb_cgroup_fork (clone3 CLONE_INTO_CGROUP into the v2 directory, the child's
 *           own thread joining each v1 hierarchy through `tasks`)
 *
 * Each is timed from the fork until the child, inside every directory, has said so through
 * a pipe. A fresh cgroup per round (memory, pids and cpu limits plus the kill handle, as a
 * bwrap sandbox has), created and destroyed outside the timing. Rounds are PAUSE_MS apart,
 * as sandbox starts are in use: the lock a move takes waits for an RCU grace period only
 * when no other move happened in the last one, so moves back to back would measure the
 * warm case alone. Root only; prints why not.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msb/cgroup.h>

#include "bench_stats.h"

#define ROUNDS 31
#define PAUSE_MS 100

/* Move `pid` into every directory of `cg` by its cgroup.procs. 0 or an errno. */
static int move_into(const msb_cgroup *cg, pid_t pid)
{
	char text[24];
	int len = snprintf(text, sizeof text, "%ld", (long)pid);
	for (size_t i = 0; i < msb_cgroup_count(cg); i++) {
		char path[4200];
		snprintf(path, sizeof path, "%s/cgroup.procs", msb_cgroup_dir(cg, i));
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return errno;
		ssize_t n = write(fd, text, (size_t)len);
		int e = errno;
		close(fd);
		if (n != len)
			return e;
	}
	return 0;
}

/* One start, `born` or moved; ms from the fork to the child's word, or -1. */
static double start_once(const msb_cgroup *cg, bool born)
{
	int go[2], said[2];
	if (pipe(go) || pipe(said))
		return -1;
	double t0 = bench_now_ms();
	int join = 0;
	pid_t pid = born ? msb_cgroup_fork(cg, &join) : fork();
	if (pid == 0) {
		char c;
		if (!born && read(go[0], &c, 1) != 1)
			_exit(1);
		c = join ? 'F' : 'J';
		_exit(write(said[1], &c, 1) == 1 ? 0 : 1);
	}
	double t = -1;
	char c = 0;
	if (pid > 0 && (born || (move_into(cg, pid) == 0 && write(go[1], "g", 1) == 1)) &&
	    read(said[0], &c, 1) == 1 && c == 'J')
		t = bench_now_ms() - t0;
	if (pid > 0)
		waitpid(pid, NULL, 0);
	close(go[0]);
	close(go[1]);
	close(said[0]);
	close(said[1]);
	return t;
}

int main(void)
{
	if (geteuid() != 0) {
		printf("bench_cgroup: skipped: creating cgroups needs root\n");
		return 0;
	}
	msb_cgroup_limits lim = { 256u << 20, 256, 1.0 };
	double moved[ROUNDS], born[ROUNDS];
	char parent[64];
	snprintf(parent, sizeof parent, "msb-bench-cgroup-%ld", (long)getpid());
	for (int r = 0; r < 2 * ROUNDS; r++) {
		msb_cgroup *cg = NULL;
		msb_error err = MSB_ERROR_INIT;
		char name[32];
		snprintf(name, sizeof name, "r%d", r);
		if (msb_cgroup_create(parent, name, &lim, &cg, &err)) {
			printf("bench_cgroup: skipped: %s\n", msb_error_message(&err));
			msb_error_clear(&err);
			return 0;
		}
		nanosleep(&(struct timespec){ 0, PAUSE_MS * 1000000L }, NULL);
		double t = start_once(cg, r % 2);
		if (msb_cgroup_destroy(cg, 5.0, &err) || t < 0) {
			fprintf(stderr, "bench_cgroup: round %d: %s\n", r,
				t < 0 ? "the child did not start inside" : msb_error_message(&err));
			return 1;
		}
		(r % 2 ? born : moved)[r / 2] = t;
		msb_cgroup_free(cg);
	}
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rmdir /sys/fs/cgroup/*/%s /sys/fs/cgroup/unified/%s 2>/dev/null",
		 parent, parent);
	if (system(cmd) < 0)
		return 1;
	double m = bench_median(moved, ROUNDS), b = bench_median(born, ROUNDS);
	printf("(median of %d interleaved rounds each, %d ms apart)\n", ROUNDS, PAUSE_MS);
	printf("fork, then moved by pid (cgroup.procs)   %8.3f ms\n", m);
	printf("born inside (msb_cgroup_fork)            %8.3f ms   %.1fx faster\n", b, m / b);
	return 0;
}
