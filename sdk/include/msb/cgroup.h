/*
 * msb/cgroup.h — per-sandbox resource limits through cgroups, v1 and v2 alike, for backends
 * whose sandbox is a tree of host processes (bwrap, process, a gVisor sandbox's host side).
 *
 * A machine may mount any mix: all-v1, pure v2, or hybrid (v1 controllers plus a v2 mount
 * that holds none of them). Nothing here assumes which: each controller a limit needs is
 * found by reading /proc/self/mountinfo, preferring a v1 hierarchy that carries it, else the
 * v2 mount when its cgroup.controllers lists it. A limit that no mounted controller can
 * enforce is refused, never dropped: a sandbox that asked for 256 MiB and silently got the
 * whole machine is exactly the quiet downgrade msb exists to prevent.
 *
 * A sandbox's cgroup is one directory per hierarchy used, all named `<parent>/<name>` (or,
 * when it was made ahead, `<parent>/spare-…`: see below). Its directory list is saved to a
 * file so that another process (a later `msb dispose`) can destroy it: the creator's own
 * cgroup is not a stable place to derive paths from, since two invocations of msb may sit
 * in different cgroups.
 */
#ifndef MSB_CGROUP_H
#define MSB_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <msb/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Zero in a field means "no limit of that kind" (and no controller is needed for it). */
typedef struct msb_cgroup_limits {
	uint64_t memory_bytes; /* RAM; swap is held to the same ceiling where the kernel can */
	uint64_t pids;         /* tasks, threads included: what stops a fork bomb */
	double cpus;           /* CPU bandwidth in CPUs: 0.5 is half of one, 2 is two */
} msb_cgroup_limits;

typedef struct msb_cgroup msb_cgroup;

/*
 * Create `<parent>/<name>` (parent relative to each hierarchy's root, e.g. "msb/bwrap") in
 * every hierarchy `limits` needs, plus a kill handle (a v2 directory, whose cgroup.kill ends
 * every member at once, or else the v1 freezer), and write the limits. `name` is one path
 * component. An existing directory of that name is reused (a half-finished earlier create).
 */
msb_errc msb_cgroup_create(const char *parent, const char *name, const msb_cgroup_limits *limits,
			   msb_cgroup **out, msb_error *err);
/*
 * msb_cgroup_create in two halves, for a caller that starts its processes between them:
 * prepare makes the directories (refusing, as create does, a limit nothing mounted can
 * enforce) and writes no limit; apply writes the limits prepare recorded. Members run
 * unlimited until apply, so a caller starts only its own code in between and applies
 * before anything else can run. What it buys: writing the limits (a third of a sandbox's
 * cgroup set-up) overlaps with the engine's start instead of preceding it.
 */
msb_errc msb_cgroup_prepare(const char *parent, const char *name, const msb_cgroup_limits *limits,
			    msb_cgroup **out, msb_error *err);
msb_errc msb_cgroup_apply(const msb_cgroup *cg, msb_error *err);

/* Save the directory list to `file` (atomically), and read one back. */
msb_errc msb_cgroup_save(const msb_cgroup *cg, const char *file, msb_error *err);
msb_errc msb_cgroup_load(const char *file, msb_cgroup **out, msb_error *err);

/*
 * Move the calling process into every directory of `cg`. The caller must be single-threaded
 * (a child just forked from the host is): a v1 hierarchy is joined through its `tasks` file,
 * which moves the calling thread alone, and that is what lets the kernel (6.0 on) skip its
 * global threadgroup lock, whose write side waits for an RCU grace period (tests/bench/
 * bench_cgroup: a child moved by pid 13 ms, one born inside with msb_cgroup_fork 0.7-0.9 ms,
 * fork and handshake included). A v2 directory is joined through
 * cgroup.procs, which always takes that lock: msb_cgroup_fork avoids it. Async-signal-safe
 * (open, write, close only), so it may run between fork and exec. Returns 0, or the errno
 * of the first write that failed.
 */
int msb_cgroup_join_self(const msb_cgroup *cg);

/*
 * fork(), with the child born inside `cg`: into the v2 directory (if any) by clone3's
 * CLONE_INTO_CGROUP, then into the v1 ones by msb_cgroup_join_self, so no migration takes
 * the kernel's global lock (see above). A kernel or seccomp policy without clone3 gets a
 * plain fork and the v2 join by cgroup.procs: slower, never less confined. Call only from a
 * single-threaded process; async-signal-safe. Returns like fork: the child's pid in the
 * parent (-1 with errno set when no child was made), 0 in the child — where `*join_error`
 * is 0, or the errno of a join that failed, and the child must then report it and _exit
 * without running anything.
 */
pid_t msb_cgroup_fork(const msb_cgroup *cg, int *join_error);

/*
 * msb_cgroup_fork and msb_spawn_shared (msb/spawn.h) in one: fn(arg, join_error) runs in a
 * child born inside `cg` that shares the caller's memory until it execs or exits, on
 * `stack` (`size` bytes, at least MSB_SPAWN_STACK_MIN, 16-byte aligned), the caller
 * suspended until then and every signal blocked around the clone. join_error is 0, or the
 * errno of a v1 join that failed, and fn must then report it and exit without running
 * anything. On a large host this saves the one copy of its memory msb_cgroup_fork makes
 * (on this machine 40 ms for 1 GiB written). Where the C library has no such clone3 (only
 * x86_64 is written here), under the sanitizers, or where clone3 is refused, the child is
 * msb_cgroup_fork's (a copy of the caller's memory), and the caller still waits until it
 * execs, exits or closes every file it has. fn must end in exec or _exit; if it
 * returns, the child exits with its value. Returns like fork in the caller.
 */
pid_t msb_cgroup_spawn_shared(const msb_cgroup *cg, int (*fn)(void *arg, int join_error),
			      void *arg, void *stack, size_t size);

/* Whether any process is still a member (read from the first directory's cgroup.procs). */
bool msb_cgroup_populated(const msb_cgroup *cg);

/*
 * Kill every member and remove every directory, waiting up to `timeout` seconds for the
 * kernel to let go. A member cannot escape the kill by forking or leaving its process group:
 * the kill is by cgroup, not by pid tree. Directories already gone are success. Fails
 * (MSB_E_TIMEOUT, or MSB_E_OS) naming what is left when anything is.
 */
msb_errc msb_cgroup_destroy(msb_cgroup *cg, double timeout, msb_error *err);

/* The directories, for messages and tests. */
size_t msb_cgroup_count(const msb_cgroup *cg);
const char *msb_cgroup_dir(const msb_cgroup *cg, size_t i);

void msb_cgroup_free(msb_cgroup *cg);

/*
 * Made ahead. A backend instance that starts sandboxes one after another can have each
 * start make the next one's cgroup while it waits for its engine, when a CPU is idle anyway,
 * and the next start take it ready, limits written (tests/bench/bench_bwrap: 0.2 ms of every
 * start). One is kept per holder at a time, and only once the instance has started two
 * sandboxes, so a one-shot `msb exec` never makes one it will not use. Its directories are
 * named `spare-<pid>-<start time>-<n>` under `parent` and stay so named when taken: the
 * saved directory list is what disposal follows. Thread-safe.
 *
 *   new      a holder for cgroups with these limits under `parent`; makes nothing yet
 *   take     the spare, now the caller's (destroy or free it as any), or NULL when there is
 *            none, or when its directories are no longer all there (an empty cgroup is
 *            what cleanup tools remove; what is left is removed): the caller then prepares
 *            its own. Counts a start either way
 *   refill   make the next spare if there is none and the instance has started two
 *            sandboxes; a failure is left for the next start to meet in line, and report
 *   free     remove the spare not taken, and free the holder (a forked child's copy
 *            leaves its parent's spare alone)
 *
 * A host that dies holding a spare leaves its empty directories behind: sweep removes, in
 * every hierarchy under `parent`, each spare whose process no longer runs (its pid gone or
 * reused, told apart by start time), and never one in use, which its sandbox's processes
 * populate (rmdir refuses). Returns how many directories it removed. Run it at a backend
 * instance's start.
 */
typedef struct msb_cgroup_spare msb_cgroup_spare;
msb_errc msb_cgroup_spare_new(const char *parent, const msb_cgroup_limits *limits,
			      msb_cgroup_spare **out, msb_error *err);
msb_cgroup *msb_cgroup_spare_take(msb_cgroup_spare *s);
void msb_cgroup_spare_refill(msb_cgroup_spare *s);
void msb_cgroup_spare_free(msb_cgroup_spare *s);
size_t msb_cgroup_spares_sweep(const char *parent);

#ifdef __cplusplus
}
#endif
#endif
