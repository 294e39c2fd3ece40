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
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msb/agent.h>

#include "gvisor_internal.h"

extern char **environ;

#define MAX_ARGS 32

msb_errc gvisor_runsc(const gvisor_ctx *ctx, const char *state_dir, const char *const *args,
		      const char *log, double timeout, int *status, msb_error *err)
{
	char root[4200], platform[64];
	snprintf(root, sizeof root, "--root=%s/runsc", state_dir);
	snprintf(platform, sizeof platform, "--platform=%s", ctx->platform);
	const char *argv[MAX_ARGS];
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

	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	/* A pipe-less regular file: runsc rewrites it from offset 0, so it is a log only. */
	posix_spawn_file_actions_addopen(&fa, 1, log ? log : "/dev/null",
					 O_WRONLY | O_CREAT | O_APPEND, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	pid_t pid;
	int e = posix_spawn(&pid, ctx->runsc, &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e != 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, e, "backend gvisor: cannot run %s",
					   ctx->runsc);
	int64_t deadline = msb_agent_now_ms() + (int64_t)(timeout * 1000.0);
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
					     "within %.1f s and was killed", args[0], timeout);
		}
		nanosleep(&(struct timespec){ 0, delay * 1000000L }, NULL);
	}
}
