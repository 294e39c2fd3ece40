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
