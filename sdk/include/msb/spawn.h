/*
 * msb/spawn.h — starting a child that execs (or exits) at once without copying the host.
 *
 * A plugin runs inside the host, and the host may be large: a fork copies its page tables
 * (on this machine a fork, exit and wait of a host with 1 GiB touched took 40 ms, against
 * 0.2 ms for a child sharing its memory). A child whose only job is to place some files
 * and exec, or to start another process and exit, needs none of that copy: it can share the
 * host's memory, the host suspended until it execs or exits, as posix_spawn does. What it
 * must not do while sharing: return from `fn`, touch the host's data other than to read
 * it, call anything but async-signal-safe functions, or stay alive — a process that lives
 * on (a keeper, a reaper, a relay) must exec a program of its own.
 */
#ifndef MSB_SPAWN_H
#define MSB_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The smallest stack msb_spawn_shared accepts; each nested shared child needs its own. */
#define MSB_SPAWN_STACK_MIN (64 * 1024)

/*
 * Run fn(arg) in a child sharing the caller's memory (CLONE_VM | CLONE_VFORK), on `stack`
 * (`size` bytes, at least MSB_SPAWN_STACK_MIN), the caller suspended until the child execs
 * or exits. Every signal is blocked in the caller around the clone, so no handler of the
 * host's runs on the borrowed stack; the child starts with them all blocked and unblocks
 * what its program needs (exec keeps the mask). Under ThreadSanitizer or AddressSanitizer,
 * which take such a child's stack for a stray one, and when `stack` is NULL or too small,
 * the child is an ordinary fork instead. `fn` must end in exec or _exit; if it returns,
 * the child exits with its value. Returns like fork in the caller: the child's pid, or -1
 * with errno set. Async-signal-safe, so a child may call it again for a grandchild.
 */
pid_t msb_spawn_shared(int (*fn)(void *), void *arg, void *stack, size_t size);

/*
 * Every signal's disposition back to the default and the mask emptied, in that order: what
 * a process started from the host (a copy of it, or one that shared its memory) does before
 * it runs anything of its own or starts an engine, which must not inherit the host's ignored
 * or blocked signals, and in which no handler of the host's may run. Async-signal-safe.
 */
void msb_spawn_signals_default(void);

/*
 * Keep a chain of shared children on the caller's CPU until they exec. A child that
 * suspends its parent could run on the parent's CPU for free, but the kernel places a new
 * task on the idlest CPU, and on a virtual machine whose idle vCPUs halt, waking one costs
 * a trip through the hypervisor: 39-69 us here against 6-13 us on the same vCPU
 * (tests/bench/bench_wake). msb_spawn_pin_here narrows the calling thread's CPU mask
 * to the CPU it runs on; children spawned meanwhile inherit it, and each restores the
 * saved mask (msb_spawn_pin_undo) before it execs, so nothing the sandbox runs stays
 * pinned; the caller restores its own once the spawn returns. A no-op (pinned false) where
 * the CPU or the mask cannot be read, or the mask allows one CPU anyway. Undo restores the
 * saved mask, or, when that no longer fits (the cpuset changed meanwhile), every CPU the
 * kernel allows; it returns 0, or -1 with errno when neither could be set.
 * Async-signal-safe.
 */
typedef struct msb_spawn_pin {
	/* The mask to restore: a cpu_set_t, which only _GNU_SOURCE declares (musl's sched.h). */
	unsigned long was[128 / sizeof(unsigned long)];
	bool pinned;
} msb_spawn_pin;
void msb_spawn_pin_here(msb_spawn_pin *pin);
int msb_spawn_pin_undo(const msb_spawn_pin *pin);

#ifdef __cplusplus
}
#endif
#endif
