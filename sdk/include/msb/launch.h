/*
 * msb/launch.h — starting the guest agent inside a namespace boundary, the part every
 * boundary driver repeats (backend SDK, libmsb-sdk).
 *
 * msb_launch_agent does, for a driver's `start` (msb/driver.h), what the process and bwrap
 * backends each wrote by hand: the agent's listening socket made by the host side, owner
 * only, before the agent runs (so the greeting waits in its queue); a death pipe only the
 * agent's processes hold; an intermediate child that leaves the host's session, enters
 * the namespaces asked for and starts the agent — pid 1 of a new pid namespace when asked —
 * and exits, so the agent is nobody's child in the host; a report of where a start failed
 * (stage and errno) carried back from children that share the host's memory; the pid file;
 * and the greeting (msb_agent_client_greet), its client left in *box->greeted.
 *
 * The children share the host's memory until they exec (msb/spawn.h) when msb runs as root,
 * and are plain forks otherwise. Everything that runs in them — the `prepare` callback
 * included — must be async-signal-safe: system calls on data prepared before the call, no
 * malloc, no stdio, no locks, never returning into the host's code.
 */
#ifndef MSB_LAUNCH_H
#define MSB_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/driver.h>
#include <msb/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The fds the agent starts with, besides 0 (/dev/null) and 1, 2 (its log). */
#define MSB_LAUNCH_WATCH_FD 3  /* held open by the agent's processes alone */
#define MSB_LAUNCH_LISTEN_FD 4 /* the listening socket: pass "--listen-fd", "4" to the agent */
#define MSB_LAUNCH_KEEP_MAX 64

typedef struct msb_launch {
	uint32_t struct_size;   /* sizeof(msb_launch): fields are only ever appended */
	char **argv;            /* the agent's argv, argv[0] a path valid after `prepare` */
	/*
	 * Namespaces the intermediate unshares (CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET,
	 * CLONE_NEWIPC, CLONE_NEWUTS…). With CLONE_NEWPID the agent is its namespace's init,
	 * and the kernel kills everything in it when the agent dies (the boundary's
	 * pid_ends_all). A new network namespace gets its loopback up.
	 */
	int unshare_flags;
	int netns_fd;           /* an empty network namespace to enter instead (msb/netns.h), or -1 */
	/*
	 * Run in the agent's own process just before it execs (in the new pid namespace):
	 * build and enter its root (msb_mount_plan_apply, msb/mount_plan.h), drop privileges.
	 * Returns 0, or an errno with *stage naming the step (a static string). May be NULL.
	 * Async-signal-safe only.
	 */
	int (*prepare)(void *arg, const char **stage);
	void *prepare_arg;
	const char *log_path;   /* the agent's stdout and stderr; NULL: <box dir>/agent.log */
	/*
	 * fds of the host's the agent is meant to hold, as 5, 6, … in this order (every other
	 * fd is closed before the exec: whatever the host had open stays outside). Each one
	 * handed in is the host's, inside the boundary: hand only what the agent needs. At
	 * most MSB_LAUNCH_KEEP_MAX.
	 */
	const int *keep_fds;
	size_t n_keep_fds;
	/*
	 * Appended (issue 19, the process backend on this launch); read only when struct_size
	 * covers them.
	 *
	 * exec_path: what is exec'd, argv[0] staying the agent's name (NULL: argv[0]). For an
	 * agent whose path `prepare` hides (a program under /tmp or the state directory): open
	 * it O_PATH before the call, hand it as keep_fds[0] (it becomes fd 5) and exec
	 * "/proc/self/fd/5" — a /proc of the agent's own, mounted by `prepare`, resolves it,
	 * and the fd stays open across the exec, so an interpreter reads a script by that path.
	 *
	 * uid_map, gid_map: non-NULL for msb running unprivileged: the intermediate first
	 * unshares a user namespace and writes them ("0 <uid> 1\n"; "deny" to setgroups), so
	 * that it may own the namespaces it makes next. Both children are then plain forks
	 * (a task sharing memory cannot unshare a user namespace).
	 */
	const char *exec_path;
	const char *uid_map, *gid_map;
} msb_launch;

#define MSB_LAUNCH_INIT                                                                   \
	{ (uint32_t)sizeof(msb_launch), NULL, 0, -1, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL }

/*
 * Start the agent for `box` as `launch` says, record its pid (msb_driver_write_pid) and
 * greet it (box->config->start_timeout), leaving the client in *box->greeted. A failure
 * names the stage that failed and its errno, or the agent's last words from its log; the
 * driver then stops the boundary. Call it from a start callback only (not async-signal-safe
 * itself: it allocates).
 */
msb_errc msb_launch_agent(const msb_driver_box *box, const msb_launch *launch, msb_error *err);

#ifdef __cplusplus
}
#endif
#endif
