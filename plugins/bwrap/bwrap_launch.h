/*
 * bwrap_launch.h — starting bwrap detached from the msb process that asks for it, so the
 * sandbox lives on like a named container (see bwrap_launch.c for the process tree).
 */
#ifndef MSB_BWRAP_LAUNCH_H
#define MSB_BWRAP_LAUNCH_H

#include <sys/types.h>

#include <msb/cgroup.h>
#include <msb/error.h>

/* The fd numbers bwrap is told about (bwrap_argv.c); the launcher puts the files there. */
enum {
	MSB_BWRAP_FD_SECCOMP = 3,
	MSB_BWRAP_FD_WORK = 4,
	MSB_BWRAP_FD_AGENT = 5,
	MSB_BWRAP_FD_COUNT = 3,  /* how many the caller opens, from MSB_BWRAP_FD_SECCOMP on */
	MSB_BWRAP_FD_LISTEN = 6, /* the agent's socket, which the launch makes (--listen-fd) */
};

typedef struct msb_bwrap_launch {
	char *const *argv;                /* bwrap's, referring to the fds above by number */
	int fds[MSB_BWRAP_FD_COUNT];      /* seccomp, work, agent: placed at 3 … 5 */
	/*
	 * Where the launch makes the agent's listening socket, owner-only, before bwrap runs;
	 * it is handed through bwrap to the agent on MSB_BWRAP_FD_LISTEN. It is listening when
	 * msb_bwrap_launch_start returns, so a host can connect (and be queued) at once.
	 */
	const char *listen_path;
	int log_fd;                       /* bwrap's stdout and stderr */
	const msb_cgroup *cgroup;         /* bwrap is born inside it; may be NULL */
	int netns_fd;                     /* a network namespace made ahead, joined before the
					   * keeper is born (so bwrap's argv says --share-net);
					   * -1: bwrap makes its own */
	long uid, gid;                    /* dropped to before bwrap execs; -1: keep */
	const char *reaper;               /* msb-agent, which the keeper execs as `--reap`; may be NULL */
} msb_bwrap_launch;

/* A launch under way: the intermediate process to reap and the keeper's report pipe. */
typedef struct msb_bwrap_launching {
	pid_t middle;
	int reports;
} msb_bwrap_launching;

/*
 * Start bwrap under a detached keeper, returning once bwrap is executing (the processes in
 * between share msb's memory and hold it until then) but before bwrap has built anything:
 * the caller can do its own work (the cgroup's limits) meanwhile.
 * msb_bwrap_launch_finish must follow a start that succeeded.
 */
msb_errc msb_bwrap_launch_start(const msb_bwrap_launch *launch, msb_bwrap_launching *out,
				msb_error *err);

/*
 * Wait until bwrap has been executed and return its pid (the process whose death means the
 * sandbox is gone). Refuses, naming the step, when the keeper could not start bwrap inside
 * the cgroup, drop its ids or exec bwrap.
 */
msb_errc msb_bwrap_launch_finish(msb_bwrap_launching *launching, pid_t *pid, msb_error *err);

#endif
