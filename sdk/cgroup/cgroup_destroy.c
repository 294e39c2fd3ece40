/*
 * cgroup_destroy.c — ending a sandbox's cgroup: kill every member, wait until the kernel
 * reports it empty, remove every directory. Killing by cgroup rather than by process tree is
 * the point: a daemon that double-forked, called setsid or left its process group is still a
 * member, because only a write to cgroup.procs moves a task and nothing inside the sandbox
 * can reach one.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_internal.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Exits usually land within a millisecond: start polling fine, back off to 5 ms. */
static void nap(long *us)
{
	struct timespec ts = { 0, *us * 1000 };
	nanosleep(&ts, NULL);
	if (*us < 5000)
		*us *= 2;
}

/*
 * SIGKILL every pid in `d`'s cgroup.procs; return how many were listed (0: empty or gone).
 * Our own pid is never signalled, in case a caller joined a cgroup it is now destroying.
 */
static size_t kill_members(const msb_cgroup_member_dir *d)
{
	FILE *f = fopen(d->procs, "re");
	if (!f)
		return 0;
	size_t n = 0;
	long pid;
	pid_t self = getpid();
	while (fscanf(f, "%ld", &pid) == 1) {
		if (pid > 1 && pid != (long)self) {
			kill((pid_t)pid, SIGKILL);
			n++;
		}
	}
	fclose(f);
	return n;
}

static bool freezer_is(const msb_cgroup_member_dir *d, const char *state)
{
	char file[PATH_MAX + 32], text[32] = "";
	snprintf(file, sizeof file, "%s/freezer.state", d->path);
	FILE *f = fopen(file, "re");
	if (!f)
		return false;
	bool got = fscanf(f, "%31s", text) == 1;
	fclose(f);
	return got && strcmp(text, state) == 0;
}

/*
 * v2: one write to cgroup.kill. v1: freeze first (so nothing forks between reading the list
 * and signalling it), signal every member, thaw (a frozen task acts on SIGKILL only once
 * thawed). Without either, signal in rounds until a round finds nobody.
 */
static void kill_all(msb_cgroup *cg, double deadline)
{
	for (size_t i = 0; i < cg->len; i++) {
		msb_cgroup_member_dir *d = &cg->dirs[i];
		if (d->v2 && msb_cgroup_write(d->path, "cgroup.kill", "1", NULL) == MSB_OK)
			return;
	}
	for (size_t i = 0; i < cg->len; i++) {
		msb_cgroup_member_dir *d = &cg->dirs[i];
		if (!d->freezer || msb_cgroup_write(d->path, "freezer.state", "FROZEN", NULL))
			continue;
		long us = 100;
		while (!freezer_is(d, "FROZEN") && now() < deadline)
			nap(&us);
		kill_members(d);
		msb_cgroup_write(d->path, "freezer.state", "THAWED", NULL);
		return;
	}
	for (size_t i = 0; i < cg->len; i++) {
		long us = 100;
		while (kill_members(&cg->dirs[i]) && now() < deadline)
			nap(&us);
	}
}

static bool populated(const msb_cgroup_member_dir *d)
{
	FILE *f = fopen(d->procs, "re");
	if (!f)
		return false;
	long pid;
	bool any = fscanf(f, "%ld", &pid) == 1;
	fclose(f);
	return any;
}

bool msb_cgroup_populated(const msb_cgroup *cg)
{
	for (size_t i = 0; i < cg->len; i++)
		if (populated(&cg->dirs[i]))
			return true;
	return false;
}

/*
 * Pidfds of the first few members of `d`, opened just after the kill — the kernel's teardown
 * of the members is under way meanwhile — while they are still listed (a member is listed
 * until it has exited; a pid read here could be reused only once its process is reaped,
 * and then at worst wakes the wait needlessly). They are only a wake-up source for the wait
 * below, which decides by cgroup.events alone.
 */
enum { WATCH_MAX = 15 };

typedef struct member_watch {
	struct pollfd fds[WATCH_MAX + 1]; /* [0] is cgroup.events; a pidfd that fired is -1 */
	int len;
} member_watch;

static void watch_members(const msb_cgroup_member_dir *d, member_watch *w)
{
	w->len = 1;
	w->fds[0] = (struct pollfd){ .fd = -1, .events = POLLPRI };
	FILE *f = fopen(d->procs, "re");
	if (!f)
		return;
	long pid;
	while (w->len <= WATCH_MAX && fscanf(f, "%ld", &pid) == 1) {
		int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
		if (fd >= 0)
			w->fds[w->len++] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	fclose(f);
}

static void unwatch(member_watch *w)
{
	for (int i = 0; i < w->len; i++)
		if (w->fds[i].fd >= 0)
			close(w->fds[i].fd);
	w->len = 0;
}

/*
 * Wait until v2 directory `d` says "populated 0" in cgroup.events. What wakes the wait: a
 * member's exit (its pidfd), a change of the file (but the kernel notifies at most once per
 * 10 ms per file, and a sandbox that started a moment ago has just been notified of
 * "populated 1"), and a short backoff, as nap() does, for members started after the watch.
 * The last member's exit and the file's "populated 0" come from the same exit, a moment
 * apart: a wake-up by a pidfd restarts the backoff at its finest step. false at the
 * deadline, or when the file cannot be read (the caller's polling then decides).
 */
static bool v2_wait_empty(const msb_cgroup_member_dir *d, member_watch *w, double deadline)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/cgroup.events", d->path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	w->fds[0].fd = fd;
	bool empty = false;
	long us = 50;
	for (;;) {
		char text[256];
		ssize_t n = pread(fd, text, sizeof text - 1, 0);
		if (n <= 0)
			break;
		text[n] = '\0';
		if ((empty = strstr(text, "populated 0") != NULL) || now() >= deadline)
			break;
		struct timespec step = { 0, us * 1000 };
		int woke = ppoll(w->fds, (nfds_t)w->len, &step, NULL);
		if (woke < 0 && errno != EINTR)
			break;
		us = us < 5000 ? us * 2 : us;
		for (int i = 1; woke > 0 && i < w->len; i++)
			if (w->fds[i].fd >= 0 && w->fds[i].revents) {
				close(w->fds[i].fd);
				w->fds[i].fd = -1; /* ppoll skips it from now on */
				us = 50;
			}
	}
	return empty;
}

msb_errc msb_cgroup_destroy(msb_cgroup *cg, double timeout, msb_error *err)
{
	double deadline = now() + timeout;
	ssize_t at = msb_cgroup_v2_index(cg);
	const msb_cgroup_member_dir *v2 = at >= 0 ? &cg->dirs[at] : NULL;
	member_watch watch = { .len = 0 };
	kill_all(cg, deadline);
	if (v2)
		watch_members(v2, &watch);
	/* Exiting takes the kernel a moment; a member killed above may still be listed. A task
	 * leaves every hierarchy at once, so the v2 directory's word covers the v1 ones. */
	bool empty = v2 && v2_wait_empty(v2, &watch, deadline);
	unwatch(&watch);
	for (size_t i = 0; i < cg->len && !empty; i++) {
		long us = 100;
		while (populated(&cg->dirs[i]) && now() < deadline) {
			kill_members(&cg->dirs[i]);
			nap(&us);
		}
	}
	const char *left = NULL;
	int left_errno = 0;
	for (size_t i = 0; i < cg->len; i++) {
		const char *path = cg->dirs[i].path;
		long us = 100;
		while (rmdir(path) != 0 && errno != ENOENT) {
			if (errno != EBUSY || now() >= deadline) {
				left = path;
				left_errno = errno;
				break;
			}
			kill_members(&cg->dirs[i]);
			nap(&us);
		}
	}
	if (left)
		return msb_error_set_errno(err, left_errno == EBUSY ? MSB_E_TIMEOUT : MSB_E_OS, left_errno,
					   "cgroups: %s could not be removed within %.1f s%s", left, timeout,
					   left_errno == EBUSY ? " (a member is still alive)" : "");
	return MSB_OK;
}
