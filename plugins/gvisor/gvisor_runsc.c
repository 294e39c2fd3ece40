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
 * `runsc run` inside it (msb_cgroup_fork), so the gofer and the sandbox it starts are born
 * inside the limits. runsc's own way costs two migrations (it joins the cgroup, starts its
 * children, moves itself back), each taking the kernel's global threadgroup lock, whose
 * write side waits for an RCU grace period: 25-35 ms of every start here.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
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

/*
 * The reaper's body (a forked child of a possibly multi-threaded host: system calls only).
 * It is a child subreaper, so the sandbox and gofer processes `runsc run --detach` leaves
 * behind become its children. runsc is born inside `cg`; the reaper stays outside (it is
 * msb's, and only reaps). It reports runsc's pid, its status and the errno of a cgroup join
 * that failed (0: none) on `rep`, then reaps until nothing is left — as `reap_with --reap`
 * (msb-agent) when it can exec it: the reaper lives as long as the sandbox, and as a fork of
 * the host it would keep a copy of every page the host writes meanwhile. It holds none of
 * the host's files, its standard ones included (a host's stdout kept open by a sandbox would
 * keep whoever reads it waiting).
 */
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

static void reaper(const char *const *argv, const char *log, const msb_cgroup *cg, int rep,
		   const char *reap_with, char *runsc_stack)
{
	/* A copy of the host, born with every signal blocked: it runs none of the host's
	 * handlers, and runsc must not inherit a blocked mask. */
	msb_spawn_signals_default();
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	int keep = fcntl(rep, F_DUPFD_CLOEXEC, 3);
	close_range(3, (unsigned)keep - 1, 0);
	close_range((unsigned)keep + 1, ~0u, 0);
	int joined[2];
	int report[3] = { -1, 0, 0 };
	if (pipe2(joined, O_CLOEXEC) == 0) {
		runsc_start r = { argv, log, joined[1] };
		pid_t pid = cg ? msb_cgroup_spawn_shared(cg, runsc_child, &r, runsc_stack,
							 MSB_SPAWN_STACK_MIN)
			       : fork();
		if (pid == 0)
			runsc_child(&r, 0);
		if (pid < 0)
			report[2] = errno;
		close(joined[1]);
		report[0] = pid;
		ssize_t w = write(keep, &report[0], sizeof report[0]);
		while (pid > 0 && waitpid(pid, &report[1], 0) < 0 && errno == EINTR)
			;
		if (pid > 0 && read(joined[0], &report[2], sizeof report[2]) != sizeof report[2])
			report[2] = 0;
		w = write(keep, &report[1], sizeof report[1] + sizeof report[2]);
		(void)w;
		close(joined[0]);
	}
	close(keep);
	close_range(3, ~0u, 0);
	if (reap_with) {
		char *const reap_argv[] = { (char *)reap_with, "--reap", NULL };
		char *const no_env[] = { NULL };
		execve(reap_with, reap_argv, no_env);
	}
	while (wait(NULL) > 0 || errno == EINTR)
		;
	_exit(0);
}

typedef struct reaper_args {
	const char *const *argv;
	const char *log;
	const msb_cgroup *cg;
	int rep;
	const char *reap_with;
	char *runsc_stack; /* runsc's stack while it shares the reaper's memory */
} reaper_args;

/*
 * The intermediate: out of the host's session, the reaper forked, gone — so the reaper is
 * nobody's child in the host. It shares the host's memory until it exits (msb_spawn_shared),
 * and runsc shares the reaper's until it execs (msb_cgroup_spawn_shared): only the reaper,
 * which must run while runsc does, is a copy of the host, until it execs msb-agent --reap.
 */
static int intermediate(void *arg)
{
	const reaper_args *a = arg;
	setsid();
	if (fork() == 0)
		reaper(a->argv, a->log, a->cg, a->rep, a->reap_with, a->runsc_stack);
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
	/* Two stacks: the intermediate's, and runsc's (copied into the reaper with the rest). */
	char *stacks = malloc(2 * MSB_SPAWN_STACK_MIN);
	reaper_args ra = { argv, log, cg, rep[1], reap_with,
			   stacks ? stacks + MSB_SPAWN_STACK_MIN : NULL };
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
	int64_t deadline = msb_agent_now_ms() + (int64_t)(timeout * 1000.0);
	int got[3] = { 0, 0, 0 };
	size_t have = 0;
	while (have < sizeof got && msb_agent_now_ms() < deadline) {
		struct pollfd p = { .fd = rep[0], .events = POLLIN };
		if (poll(&p, 1, (int)(deadline - msb_agent_now_ms())) <= 0)
			continue;
		ssize_t r = read(rep[0], (char *)got + have, sizeof got - have);
		if (r <= 0)
			break;
		have += (size_t)r;
	}
	close(rep[0]);
	if (have == sizeof got && got[0] <= 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, got[2], "backend gvisor: cannot start "
					   "runsc %s", args[0]);
	if (have == sizeof got && got[2])
		return msb_error_set_errno(err, MSB_E_BACKEND, got[2], "backend gvisor: runsc %s "
					   "could not be started inside the sandbox's cgroup", args[0]);
	if (have == sizeof got) {
		*status = got[1];
		return MSB_OK;
	}
	if (have >= sizeof got[0] && got[0] > 0)
		kill(got[0], SIGKILL);
	return msb_error_set(err, MSB_E_TIMEOUT, "backend gvisor: runsc %s did not finish within "
			     "%.1f s and was killed", args[0], timeout);
}
