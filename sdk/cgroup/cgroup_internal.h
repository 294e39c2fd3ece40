/*
 * cgroup_internal.h — what the cgroup helpers share between their files: the mounted
 * hierarchies as /proc/self/mountinfo shows them, and the handle's layout.
 */
#ifndef MSB_CGROUP_INTERNAL_H
#define MSB_CGROUP_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include <msb/cgroup.h>

#define MSB_CGROUP_MAX_MOUNTS 24
#define MSB_CGROUP_MAX_DIRS 8
/*
 * The longest cgroup directory path msb handles. Real ones are /sys/fs/cgroup/<hierarchy>/
 * <parent>/<name>, far shorter; a longer one is refused by name. Not PATH_MAX: a handle and
 * a mount table are allocated, zeroed and freed at every start and every disposal, and at
 * PATH_MAX they were 100 KB each, which the allocator handed back to the kernel in between,
 * so every sandbox start took ~50 page faults (0.05-0.1 ms) just to zero them again.
 */
#define MSB_CGROUP_PATH_MAX 1024

/* One mounted hierarchy: a v1 one names its controllers in its super options. */
typedef struct msb_cgroup_mount {
	char path[MSB_CGROUP_PATH_MAX];
	bool v2;
	char controllers[256]; /* v1: ",cpu,cpuacct,"; v2: ",memory,pids," from cgroup.controllers */
} msb_cgroup_mount;

typedef struct msb_cgroup_mounts {
	msb_cgroup_mount items[MSB_CGROUP_MAX_MOUNTS];
	size_t len;
} msb_cgroup_mounts;

/* Read /proc/self/mountinfo (and each v2 mount's cgroup.controllers), or a copy kept from
 * an earlier read while the mount table has not changed since. Thread-safe. */
msb_errc msb_cgroup_mounts_read(msb_cgroup_mounts *out, msb_error *err);
/* Drop the kept copy: the next read parses mountinfo again. What a caller does before it
 * refuses for want of a hierarchy, in case what changed was not a mount (a controller that
 * a v1 hierarchy held moves to v2 only once that hierarchy is gone, which can be later). */
void msb_cgroup_mounts_forget(void);
/* The same from another mountinfo file: how the detection is tested on layouts this
 * machine does not have (pure v2, all v1). */
msb_errc msb_cgroup_mounts_parse(const char *mountinfo, msb_cgroup_mounts *out, msb_error *err);
/*
 * The mount carrying `controller`: a v1 hierarchy first (on a hybrid machine the controller
 * can only be there, because a controller bound to v1 is absent from v2), else v2. NULL
 * when none does.
 */
const msb_cgroup_mount *msb_cgroup_mounts_find(const msb_cgroup_mounts *m, const char *controller);
/* The v2 mount, or NULL. */
const msb_cgroup_mount *msb_cgroup_mounts_v2(const msb_cgroup_mounts *m);

/* One directory of a sandbox's cgroup, with what it is used for. */
typedef struct msb_cgroup_member_dir {
	char path[MSB_CGROUP_PATH_MAX];
	char procs[MSB_CGROUP_PATH_MAX + 16]; /* path + "/cgroup.procs", built before any fork */
	char join[MSB_CGROUP_PATH_MAX + 16];  /* what a self-join writes "0" to: v1 "tasks", v2 "cgroup.procs" */
	bool v2;
	bool freezer; /* a v1 freezer directory: what stops a fork race during the kill */
	unsigned limits; /* which limits msb_cgroup_apply writes here: MSB_CGROUP_LIMIT_* */
} msb_cgroup_member_dir;

enum { MSB_CGROUP_LIMIT_MEMORY = 1, MSB_CGROUP_LIMIT_PIDS = 2, MSB_CGROUP_LIMIT_CPU = 4 };

struct msb_cgroup {
	msb_cgroup_member_dir dirs[MSB_CGROUP_MAX_DIRS];
	size_t len;
	msb_cgroup_limits limits; /* as prepared; a loaded handle has none */
};

/* Fill in `d`'s file paths from d->path and d->v2. */
void msb_cgroup_dir_paths(msb_cgroup_member_dir *d);

/* The index of `cg`'s v2 directory, or -1 when it has none. */
ssize_t msb_cgroup_v2_index(const msb_cgroup *cg);

/* Join every directory of `cg` but `skip` (one already joined; -1 for none) by writing "0"
 * to its join file: open, write and close only. 0, or the errno of the first that failed. */
int msb_cgroup_join_all_but(const msb_cgroup *cg, ssize_t skip);

/* Write `text` to `dir`/`file`; refuses naming the file. */
msb_errc msb_cgroup_write(const char *dir, const char *file, const char *text, msb_error *err);

#endif
