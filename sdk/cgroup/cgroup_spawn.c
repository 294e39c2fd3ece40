/*
 * cgroup_spawn.c — msb_cgroup_spawn_shared: a child born inside a cgroup that shares its
 * parent's memory until it execs or exits.
 *
 * clone3 is the only call that places a new task in a cgroup at birth (CLONE_INTO_CGROUP),
 * and the C library has no wrapper for it that runs a function on a new stack, as clone()
 * does for CLONE_VM. On x86_64 the few instructions that make such a child are here: the
 * child starts on its own stack inside the system call, joins the v1 hierarchies, calls
 * fn(arg, join_error) and exits with its value. Elsewhere, under the sanitizers, or where clone3 is refused, the child is
 * msb_cgroup_fork's (a copy of the caller's memory): slower on a large host, never less
 * confined.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h> /* struct clone_args, CLONE_INTO_CGROUP */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <msb/spawn.h>

#include "cgroup_internal.h"

#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define MSB_CGROUP_SHARED_CLONE3 1

/*
 * clone3(args), the child running fn(arg) on args->stack and exiting with its value. fn and
 * arg ride in r12 and r13, which the system call preserves; the child's stack is the one
 * the kernel switched to, 16-byte aligned, so the call leaves fn the alignment the ABI
 * promises. Returns in the parent only: the child's pid, or -errno.
 */
static long clone3_run(struct clone_args *args, int (*fn)(void *), void *arg)
{
	long ret;
	register void *r12 __asm__("r12") = (void *)fn;
	register void *r13 __asm__("r13") = arg;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "xor %%ebp, %%ebp\n\t"
			 "mov %%r13, %%rdi\n\t"
			 "call *%%r12\n\t"
			 "mov %%eax, %%edi\n\t"
			 "mov %[exit], %%eax\n\t"
			 "syscall\n\t"
			 "hlt\n"
			 "1:"
			 : "=a"(ret)
			 : "0"((long)SYS_clone3), "D"(args), "S"(sizeof *args), "r"(r12), "r"(r13),
			   [exit] "i"(SYS_exit)
			 : "rcx", "r11", "memory");
	return ret;
}

/* What the child needs before fn: the v1 hierarchies to join (the v2 one is done). */
typedef struct born_inside {
	const msb_cgroup *cg;
	ssize_t v2;
	int (*fn)(void *, int);
	void *arg;
} born_inside;

static int born_child(void *p)
{
	const born_inside *b = p;
	return b->fn(b->arg, msb_cgroup_join_all_but(b->cg, b->v2));
}
#endif

pid_t msb_cgroup_spawn_shared(const msb_cgroup *cg, int (*fn)(void *, int), void *arg,
			      void *stack, size_t size)
{
#ifdef MSB_CGROUP_SHARED_CLONE3
	ssize_t v2 = msb_cgroup_v2_index(cg);
	if (v2 >= 0 && stack && size >= MSB_SPAWN_STACK_MIN) {
		int dir = open(cg->dirs[v2].path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dir < 0)
			return -1;
		born_inside b = { cg, v2, fn, arg };
		struct clone_args args;
		memset(&args, 0, sizeof args);
		args.flags = CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP;
		args.exit_signal = SIGCHLD;
		args.stack = (uint64_t)(uintptr_t)stack;
		args.stack_size = size & ~(size_t)15;
		args.cgroup = (uint64_t)dir;
		sigset_t all, old;
		sigfillset(&all);
		sigprocmask(SIG_SETMASK, &all, &old);
		long pid = clone3_run(&args, born_child, &b);
		sigprocmask(SIG_SETMASK, &old, NULL);
		close(dir);
		if (pid > 0)
			return (pid_t)pid;
		/* Out of memory or processes is the answer; anything else is clone3 missing or
		 * refused: the fork below. */
		if (pid == -EAGAIN || pid == -ENOMEM) {
			errno = (int)-pid;
			return -1;
		}
	}
#else
	(void)stack;
	(void)size;
#endif
	/* The caller still resumes only once the child has exec'd or exited (or closed every
	 * file, which a child about to exec may do): then the pipe's last writer is gone. */
	int gate[2];
	if (pipe2(gate, O_CLOEXEC) < 0)
		return -1;
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	int join = 0;
	pid_t pid = msb_cgroup_fork(cg, &join);
	if (pid == 0) {
		close(gate[0]);
		_exit(fn(arg, join));
	}
	int saved = errno;
	close(gate[1]);
	char byte;
	while (pid > 0 && read(gate[0], &byte, 1) < 0 && errno == EINTR)
		;
	close(gate[0]);
	sigprocmask(SIG_SETMASK, &old, NULL);
	errno = saved;
	return pid;
}
