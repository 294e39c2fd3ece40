/*
 * msb/mount_plan.h — a container's root, built and entered in one call (backend SDK,
 * libmsb-sdk): the mount plan every namespace boundary repeats.
 *
 * In a fresh mount namespace (CLONE_NEWNS, msb/launch.h), msb_mount_plan_apply makes every
 * mount private (nothing propagates back to the host), puts a tmpfs at `root`, binds the
 * listed host paths into it — read-only unless marked writable, never setuid, never devices
 * — adds a private /tmp, a minimal /dev (null, zero, full, random, urandom, tty bound from
 * the host's; a devpts instance of its own at /dev/pts, /dev/ptmx linked to it) and a /proc of the caller's pid namespace, remounts the new root read-only,
 * pivots into it and detaches the old one. Then it drops what a guest must not hold: every
 * capability from the bounding and ambient sets, no_new_privs, supplementary groups, and
 * the uid and gid (set after the capabilities, so a uid of 0 keeps none either).
 *
 * Async-signal-safe: system calls only, on the plan's strings (prepared before the spawn);
 * paths are joined in stack buffers of PATH_MAX. Meant to run as a launch's `prepare`.
 */
#ifndef MSB_MOUNT_PLAN_H
#define MSB_MOUNT_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct msb_mount_bind {
	const char *host;   /* an existing host path: a directory or a file */
	const char *guest;  /* absolute, inside the new root; parents are made */
	bool writable;      /* false: read-only (the default a container's image gets) */
} msb_mount_bind;

typedef struct msb_mount_plan {
	uint32_t struct_size;         /* sizeof(msb_mount_plan): fields are only ever appended */
	const char *root;             /* an empty host directory the new root is built on */
	const msb_mount_bind *binds;  /* in order: a bind may land inside an earlier one */
	size_t n_binds;
	bool tmp;                     /* a private tmpfs at /tmp (mode 1777) */
	bool dev;                     /* a minimal /dev */
	bool proc;                    /* /proc of the caller's pid namespace */
	bool drop_caps;               /* bounding and ambient sets emptied, capabilities cleared */
	bool no_new_privs;            /* PR_SET_NO_NEW_PRIVS */
	long uid, gid;                /* -1: keep the caller's */
} msb_mount_plan;

#define MSB_MOUNT_PLAN_INIT                                                               \
	{ (uint32_t)sizeof(msb_mount_plan), NULL, NULL, 0, true, true, true, true, true, -1, -1 }

/*
 * Apply `plan` to the calling process (see above). Returns 0, or an errno with *stage
 * naming the step that failed (a static string). On failure the process is left half
 * way and must _exit. Async-signal-safe.
 */
int msb_mount_plan_apply(const msb_mount_plan *plan, const char **stage);

#ifdef __cplusplus
}
#endif
#endif
