/*
 * process_mounts.h — the `process` sandbox's own view of the host's filesystem (process_mounts.c).
 */
#ifndef MSB_PROCESS_MOUNTS_H
#define MSB_PROCESS_MOUNTS_H

#include <stdint.h>
#include <sys/types.h>

/* What the agent's process needs to build the view; prepared by the parent. */
typedef struct process_view {
	const char *state_dir;   /* covered by the sandbox's own disk (no sandbox sees another's) */
	const char *work_dir;    /* the spec's work_dir, where the sandbox's work directory appears */
	const char *egress_dir;  /* `egress: allowlist`: <dir>/egress, kept visible at its own
				  * path (read-only) through the disk; NULL otherwise */
	char disk_opts[96];      /* the tmpfs options of the sandbox's disk: size=… */
	uid_t uid;               /* the owner of the work directory inside */
	gid_t gid;
} process_view;

/*
 * In the agent's process before its exec (the launch's `prepare`, msb/launch.h), inside the
 * mount namespace the launch unshared: the host's tree made
 * read-only and nosuid, a size-limited tmpfs (the sandbox's disk) over the state directory
 * with the work directory, /tmp and /dev/shm bound from it, and the sandbox's own egress
 * directory (alone of the state directory) bound back read-only at its path.
 * Async-signal-safe (it runs on borrowed memory). 0, or -1 with errno set and *stage naming
 * the step.
 */
int process_view_build(const process_view *v, const char **stage);

/* In the agent's child, once it is the new pid namespace's first process: /proc of its own. */
int process_view_proc(void);

#endif
