/*
 * plugins/gvisor/gvisor_runsc.c — running the runsc command, always with the same global
 * flags and always with a bound.
 *
 * Every invocation repeats the global flags: runsc does not remember them between
 * `create` and `start`, and a `start` without --network=none tries to configure networking
 * from the host's namespace. A runsc that hangs must not hang acquire or dispose, so each
 * call is killed after its timeout and reported as such.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msb/agent.h>

#include "gvisor_internal.h"

extern char **environ;

#define MAX_ARGS 32

/* runsc's argv: the engine, the global flags, then `args`. Returns the count. */
static size_t build_argv(const gvisor_ctx *ctx, const char *const *args, char *root, size_t rlen,
			 char *platform, size_t plen, const char **argv, const char *state_dir)
{
	snprintf(root, rlen, "--root=%s/runsc", state_dir);
	snprintf(platform, plen, "--platform=%s", ctx->platform);
	size_t n = 0;
	argv[n++] = ctx->runsc;
	argv[n++] = root;
	argv[n++] = platform;
	argv[n++] = "--network=none";
	/* The agent binds its socket on the channel mount; the sandbox may not connect out. */
	argv[n++] = "--host-uds=create";
	for (const char *const *a = args; *a && n + 1 < MAX_ARGS; a++)
		argv[n++] = *a;
	argv[n] = NULL;
	return n;
}

static void spawn_actions(posix_spawn_file_actions_t *fa, const char *log)
{
	posix_spawn_file_actions_init(fa);
	posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0);
	/* A pipe-less regular file: runsc rewrites it from offset 0, so it is a log only. */
	posix_spawn_file_actions_addopen(fa, 1, log ? log : "/dev/null",
					 O_WRONLY | O_CREAT | O_APPEND, 0600);
	posix_spawn_file_actions_adddup2(fa, 1, 2);
}

/* Wait for `pid` (our child) until the deadline; kill it past it. */
static msb_errc wait_bounded(pid_t pid, int64_t deadline, const char *what, double timeout,
			     int *status, msb_error *err)
{
	for (int delay = 1;; delay = delay < 20 ? delay * 2 : 20) {
		pid_t w = waitpid(pid, status, WNOHANG);
		if (w == pid)
			return MSB_OK;
		if (w < 0 && errno != EINTR)
			return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend gvisor: waiting for runsc");
		if (msb_agent_now_ms() >= deadline) {
			kill(pid, SIGKILL);
			while (waitpid(pid, status, 0) < 0 && errno == EINTR)
				;
			return msb_error_set(err, MSB_E_TIMEOUT, "backend gvisor: runsc %s did not finish "
					     "within %.1f s and was killed", what, timeout);
		}
		nanosleep(&(struct timespec){ 0, delay * 1000000L }, NULL);
	}
}

/*
 * The reaper's body (a forked child of a possibly multi-threaded host: system calls only).
 * It is a child subreaper, so the sandbox process `runsc create` leaves behind becomes its
 * child; it reports runsc's pid and status on `rep`, then reaps until nothing is left.
 */
static void reaper(const char *const *argv, const char *log, int rep)
{
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	int keep = fcntl(rep, F_DUPFD_CLOEXEC, 3);
	close_range(3, (unsigned)keep - 1, 0);
	close_range((unsigned)keep + 1, ~0u, 0);
	posix_spawn_file_actions_t fa;
	spawn_actions(&fa, log);
	pid_t pid;
	int report[2] = { -1, 0 };
	if (posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ) == 0) {
		report[0] = pid;
		ssize_t w = write(keep, &report[0], sizeof report[0]);
		while (waitpid(pid, &report[1], 0) < 0 && errno == EINTR)
			;
		w = write(keep, &report[1], sizeof report[1]);
		(void)w;
	}
	close(keep);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	_exit(0);
}

msb_errc gvisor_runsc_reaped(const gvisor_ctx *ctx, const char *state_dir,
			     const char *const *args, const char *log, double timeout, int *status,
			     msb_error *err)
{
	char root[4200], platform[64];
	const char *argv[MAX_ARGS];
	build_argv(ctx, args, root, sizeof root, platform, sizeof platform, argv, state_dir);
	int rep[2];
	if (pipe2(rep, O_CLOEXEC) < 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend gvisor: pipe");
	pid_t mid = fork();
	if (mid == 0) {
		close(rep[0]);
		setsid();
		if (fork() == 0)
			reaper(argv, log, rep[1]);
		_exit(0);
	}
	close(rep[1]);
	if (mid < 0) {
		close(rep[0]);
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend gvisor: fork");
	}
	while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
		;
	int64_t deadline = msb_agent_now_ms() + (int64_t)(timeout * 1000.0);
	int got[2] = { 0, 0 };
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
	if (have == sizeof got) {
		*status = got[1];
		return MSB_OK;
	}
	if (have >= sizeof got[0] && got[0] > 0)
		kill(got[0], SIGKILL);
	return msb_error_set(err, MSB_E_TIMEOUT, "backend gvisor: runsc %s did not finish within "
			     "%.1f s and was killed", args[0], timeout);
}

msb_errc gvisor_runsc(const gvisor_ctx *ctx, const char *state_dir, const char *const *args,
		      const char *log, double timeout, int *status, msb_error *err)
{
	char root[4200], platform[64];
	const char *argv[MAX_ARGS];
	build_argv(ctx, args, root, sizeof root, platform, sizeof platform, argv, state_dir);
	posix_spawn_file_actions_t fa;
	spawn_actions(&fa, log);
	pid_t pid;
	int e = posix_spawn(&pid, ctx->runsc, &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e != 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, e, "backend gvisor: cannot run %s",
					   ctx->runsc);
	return wait_bounded(pid, msb_agent_now_ms() + (int64_t)(timeout * 1000.0), args[0], timeout,
			    status, err);
}
