/*
 * plugins/gvisor/gvisor_runsc.c — running the runsc command, always with the same global
 * flags and always with a bound.
 *
 * Every invocation repeats the global flags: runsc does not remember them between
 * `create` and `start`, and a `start` without --network=none tries to configure networking
 * from the host's namespace. A runsc that hangs must not hang acquire or dispose, so each
 * call is killed after its timeout and reported as such.
 *
 * runsc never touches cgroups (--ignore-cgroups): msb makes the sandbox's cgroup and starts
 * `runsc run` inside it (msb_cgroup_spawn_shared), so the gofer and the sandbox it starts
 * are born inside the limits. runsc's own way costs two migrations (it joins the cgroup,
 * starts its children, moves itself back), each taking the kernel's global threadgroup
 * lock, whose write side waits for an RCU grace period: 25-35 ms of every start here.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msb/agent.h>
#include <msb/cgroup.h>
#include <msb/spawn.h>

#include "gvisor_internal.h"

extern char **environ;

#define MAX_ARGS 32

/* runsc's argv: the engine, the global flags, then `args`. Returns the count. */
static size_t build_argv(const gvisor_ctx *ctx, const char *const *args, char *root, size_t rlen,
			 char *platform, size_t plen, const char **argv, const char *runsc_root)
{
	snprintf(root, rlen, "--root=%s", runsc_root);
	snprintf(platform, plen, "--platform=%s", ctx->platform);
	size_t n = 0;
	argv[n++] = ctx->runsc;
	argv[n++] = root;
	argv[n++] = platform;
	argv[n++] = "--network=none";
	/* The agent binds its socket on the channel mount; the sandbox may not connect out. */
	argv[n++] = "--host-uds=create";
	argv[n++] = "--ignore-cgroups";
	for (const char *const *a = args; *a && n + 1 < MAX_ARGS; a++)
		argv[n++] = *a;
	argv[n] = NULL;
	return n;
}

/* runsc's stdin from /dev/null, stdout and stderr into `log`, nothing else open. */
static void place_fds(const char *log)
{
	int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	/* A pipe-less regular file: runsc rewrites it from offset 0, so it is a log only. */
	int out = open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (in >= 0)
		dup2(in, 0);
	if (out >= 0) {
		dup2(out, 1);
		dup2(out, 2);
	}
	close_range(3, ~0u, 0);
}

/* runsc's process: what it needs, prepared before the first process of the launch. */
typedef struct runsc_start {
	const char *const *argv;
	const char *log;
	int joined; /* hears the errno of a cgroup join that failed */
} runsc_start;

/* runsc, born in the cgroup, sharing the reaper's memory until it execs. Never returns. */
static int runsc_child(void *arg, int join_error)
{
	const runsc_start *r = arg;
	if (join_error) {
		ssize_t w = write(r->joined, &join_error, sizeof join_error);
		(void)w;
		_exit(125);
	}
	place_fds(r->log);
	/* Spawned with every signal blocked; the reaper left no handler to run here. */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(r->argv[0], (char *const *)r->argv, environ);
	_exit(127);
}

static int runsc_outside(void *arg)
{
	return runsc_child(arg, 0);
}

/* What the launch's processes need, prepared before the first one is made. */
typedef struct reaper_args {
	const char *const *argv;
	const char *log;
	const msb_cgroup *cg;
	int rep;             /* the report pipe's write end */
	const char *reap_with;
	char *reaper_stack;  /* the reaper's stack while it shares the host's memory */
	char *runsc_stack;   /* runsc's, the same way */
} reaper_args;

/* The fd the reaper hands its agent for runsc's status. */
enum { STATUS_FD = 3 };

/* `v` in decimal into buf (at least 12 bytes): snprintf is not async-signal-safe. */
static char *decimal(char *buf, size_t size, long v)
{
	char *p = buf + size;
	*--p = '\0';
	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10) > 0 && p > buf);
	return p;
}

/*
 * The reaper: a child subreaper outside the cgroup (it is msb's, and only reaps), so the
 * sandbox and gofer processes `runsc run --detach` leaves behind become its children. It
 * shares the host's memory (system calls only: the host may be multithreaded) until it
 * execs `reap_with --reap --status-fd 3 --status-of <runsc>`, which reaps until nothing is
 * left and writes runsc's wait status on the report pipe. Before that it starts runsc
 * (born in the cgroup, sharing its memory until runsc execs) and reports runsc's pid and
 * the errno of a cgroup join that failed (0: none). It never stays a process of the host's:
 * a copy would cost a copy of the host's page tables (40 ms for a host with 1 GiB written)
 * and pin every page the host writes while runsc runs. It holds none of the host's files,
 * its standard ones included (a host's stdout kept open by a sandbox would keep whoever
 * reads it waiting). An exec that fails is reported by the report pipe's end after the pid.
 */
static int reaper(void *arg)
{
	const reaper_args *a = arg;
	msb_spawn_signals_default();
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	int keep = fcntl(a->rep, F_DUPFD_CLOEXEC, STATUS_FD + 1);
	if (keep < 0)
		_exit(1); /* the host reads the end of the pipe: nothing was started */
	close_range(STATUS_FD, (unsigned)keep - 1, 0);
	close_range((unsigned)keep + 1, ~0u, 0);
	int report[2] = { -1, 0 };
	int joined[2];
	if (pipe2(joined, O_CLOEXEC) != 0) {
		report[1] = errno;
		ssize_t w = write(keep, report, sizeof report);
		(void)w;
		_exit(1);
	}
	runsc_start r = { a->argv, a->log, joined[1] };
	pid_t pid = a->cg ? msb_cgroup_spawn_shared(a->cg, runsc_child, &r, a->runsc_stack,
						   MSB_SPAWN_STACK_MIN)
			  : msb_spawn_shared(runsc_outside, &r, a->runsc_stack, MSB_SPAWN_STACK_MIN);
	report[0] = pid;
	report[1] = pid < 0 ? errno : 0;
	/* runsc has exec'd or exited by now: what it said of its join is in the pipe. */
	close(joined[1]);
	if (pid > 0 && read(joined[0], &report[1], sizeof report[1]) != sizeof report[1])
		report[1] = 0;
	close(joined[0]);
	ssize_t w = write(keep, report, sizeof report);
	(void)w;
	if (pid < 0 || dup2(keep, STATUS_FD) < 0) /* dup2 clears close-on-exec */
		_exit(1);
	close(keep);
	char digits[16];
	char *const reap_argv[] = { (char *)a->reap_with, "--reap", "--status-fd", "3", "--status-of",
				    decimal(digits, sizeof digits, pid), NULL };
	char *const no_env[] = { NULL };
	execve(a->reap_with, reap_argv, no_env);
	_exit(1);
}

/*
 * The intermediate: out of the host's session, the reaper started, gone — so the reaper is
 * nobody's child in the host. It shares the host's memory until it exits, and the reaper
 * shares it until it execs (msb_spawn_shared): nothing of the launch copies the host.
 */
static int intermediate(void *arg)
{
	const reaper_args *a = arg;
	setsid();
	if (msb_spawn_shared(reaper, (void *)a, a->reaper_stack, MSB_SPAWN_STACK_MIN) < 0) {
		int report[2] = { -1, errno };
		ssize_t w = write(a->rep, report, sizeof report);
		(void)w;
	}
	_exit(0);
}

msb_errc gvisor_runsc_reaped(const gvisor_ctx *ctx, const char *runsc_root, const msb_cgroup *cg,
			     const char *const *args, const char *log, const char *reap_with,
			     double timeout, int *status, msb_error *err)
{
	char root[4200], platform[64];
	const char *argv[MAX_ARGS];
	build_argv(ctx, args, root, sizeof root, platform, sizeof platform, argv, runsc_root);
	int rep[2];
	if (pipe2(rep, O_CLOEXEC) < 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend gvisor: pipe");
	/* Three stacks: the intermediate's, the reaper's and runsc's. */
	char *stacks = malloc(3 * MSB_SPAWN_STACK_MIN);
	reaper_args ra = { argv, log, cg, rep[1], reap_with,
			   stacks ? stacks + MSB_SPAWN_STACK_MIN : NULL,
			   stacks ? stacks + 2 * MSB_SPAWN_STACK_MIN : NULL };
	pid_t mid = msb_spawn_shared(intermediate, &ra, stacks, stacks ? MSB_SPAWN_STACK_MIN : 0);
	int e = errno;
	free(stacks);
	errno = e;
	close(rep[1]);
	if (mid < 0) {
		close(rep[0]);
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend gvisor: fork");
	}
	while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
		;
	/* The report: runsc's pid and the errno of its cgroup join (0: joined), from the reaper;
	 * then runsc's wait status, from the agent the reaper became. */
	int64_t deadline = msb_agent_now_ms() + (int64_t)(timeout * 1000.0);
	int got[3] = { 0, 0, 0 };
	size_t have = 0;
	bool ended = false;
	while (have < sizeof got && !ended && msb_agent_now_ms() < deadline) {
		struct pollfd p = { .fd = rep[0], .events = POLLIN };
		if (poll(&p, 1, (int)(deadline - msb_agent_now_ms())) <= 0)
			continue;
		ssize_t r = read(rep[0], (char *)got + have, sizeof got - have);
		if (r < 0 && errno == EINTR)
			continue;
		ended = r <= 0;
		have += r > 0 ? (size_t)r : 0;
	}
	close(rep[0]);
	bool started = have >= 2 * sizeof got[0];
	if (started && got[0] <= 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, got[1], "backend gvisor: cannot start "
					   "runsc %s", args[0]);
	if (started && got[1])
		return msb_error_set_errno(err, MSB_E_BACKEND, got[1], "backend gvisor: runsc %s "
					   "could not be started inside the sandbox's cgroup", args[0]);
	if (have == sizeof got) {
		*status = got[2];
		return MSB_OK;
	}
	if (have >= sizeof got[0] && got[0] > 0)
		kill(got[0], SIGKILL);
	if (ended && !started)
		return msb_error_set(err, MSB_E_BACKEND, "backend gvisor: runsc %s was not started: the "
				     "process that launches it ended first", args[0]);
	if (ended)
		return msb_error_set(err, MSB_E_BACKEND, "backend gvisor: runsc %s was started, but its "
				     "reaper could not become %s --reap; runsc was killed", args[0],
				     reap_with);
	return msb_error_set(err, MSB_E_TIMEOUT, "backend gvisor: runsc %s did not finish within "
			     "%.1f s and was killed", args[0], timeout);
}
