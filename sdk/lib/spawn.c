/*
 * spawn.c — msb_spawn_shared (msb/spawn.h): clone(CLONE_VM | CLONE_VFORK) with the host's
 * signals held off the borrowed stack, or a fork where that cannot be used.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include <msb/spawn.h>

pid_t msb_spawn_shared(int (*fn)(void *), void *arg, void *stack, size_t size)
{
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid_t pid;
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
	(void)stack;
	(void)size;
	bool share = false;
#else
	bool share = stack && size >= MSB_SPAWN_STACK_MIN;
#endif
	if (share) {
		/* The stack grows down on every architecture Linux runs msb on. */
		pid = clone(fn, (char *)stack + size, CLONE_VM | CLONE_VFORK | SIGCHLD, arg);
	} else {
		pid = fork();
		if (pid == 0)
			_exit(fn(arg));
	}
	int e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return pid;
}

void msb_spawn_signals_default(void)
{
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

_Static_assert(sizeof(cpu_set_t) == sizeof ((msb_spawn_pin *)0)->was,
	       "msb_spawn_pin.was holds a cpu_set_t");

void msb_spawn_pin_here(msb_spawn_pin *pin)
{
	pin->pinned = false;
	cpu_set_t was, one;
	int cpu = sched_getcpu();
	if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof was, &was) != 0 ||
	    CPU_COUNT(&was) < 2 || !CPU_ISSET(cpu, &was))
		return;
	memcpy(pin->was, &was, sizeof was);
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	pin->pinned = sched_setaffinity(0, sizeof one, &one) == 0;
}

int msb_spawn_pin_undo(const msb_spawn_pin *pin)
{
	if (!pin->pinned)
		return 0;
	cpu_set_t was;
	memcpy(&was, pin->was, sizeof was);
	if (sched_setaffinity(0, sizeof was, &was) == 0)
		return 0;
	/* The saved mask no longer fits (the cpuset changed meanwhile): every CPU the kernel
	 * still allows, rather than stay on one. */
	memset(&was, 0xff, sizeof was);
	return sched_setaffinity(0, sizeof was, &was);
}
