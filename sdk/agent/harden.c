/*
 * harden.c — what makes the agent unreachable from the commands it runs, on every boundary.
 *
 * The agent holds what a workload must never have: the host's connection (its listening
 * socket and each accepted one), the request it is serving, and on some boundaries a uid
 * or capabilities the commands lack. A command of the same uid could otherwise read or
 * write the agent's memory (/proc/<agent>/mem, process_vm_readv/writev, ptrace), take its
 * fds (/proc/<agent>/fd/N, pidfd_getfd), read its environ and its cwd/root links.
 *
 * Two locks, either of which suffices against one of those paths and both of which are
 * needed against all of them:
 *  - the agent is not dumpable (PR_SET_DUMPABLE 0), so the kernel's ptrace access check
 *    (which guards every path above) refuses any process lacking CAP_SYS_PTRACE over the
 *    agent's user namespace, whatever its uid. Acceptor and connection processes are forks
 *    and inherit it; a command's execve resets it (to dumpable), which is what a command
 *    wants for itself and gives it nothing of the agent;
 *  - no command can hold CAP_SYS_PTRACE (or any other capability): the agent empties the
 *    bounding, inheritable and ambient sets before it serves, so an execve — even by uid 0,
 *    even of a file with capabilities — grants none, and sets no_new_privs, so a setuid
 *    binary runs with the caller's ids. The agent's own permitted set is kept: the agent
 *    alone (never a command) may need it, e.g. as a container's root writing a file.
 *
 * The agent's own use of /proc/self is unaffected: the kernel lets a task reach its own
 * entries whatever its dumpable flag.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent_internal.h"

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

/* Empty the inheritable set, keeping effective and permitted as they are. */
static int clear_inheritable(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	if (syscall(SYS_capget, &h, d) < 0)
		return -1;
	d[0].inheritable = d[1].inheritable = 0;
	return (int)syscall(SYS_capset, &h, d);
}

/* Before the id change: dropping from the bounding set needs CAP_SETPCAP, which setuid
 * to a non-root uid takes away. */
int agent_harden_caps(char *why, size_t cap)
{
	const char *step = NULL;
	/* Every capability the kernel knows, until it answers EINVAL (past its last one). EPERM
	 * means no CAP_SETPCAP (checked before the number), which leaves the set as it is: then
	 * each must be out of it already, and PR_CAPBSET_READ finds the end. */
	for (int c = 0; !step && c < 64; c++) {
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) == 0)
			continue;
		if (errno == EINVAL)
			break;
		int held = errno == EPERM ? prctl(PR_CAPBSET_READ, c, 0, 0, 0) : 1;
		if (held < 0 && errno == EINVAL)
			break;
		if (held != 0) {
			step = "dropping the bounding set";
			if (held > 0)
				errno = EPERM;
		}
	}
	if (!step && prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		step = "clearing the ambient set";
	if (!step && clear_inheritable() < 0)
		step = "clearing the inheritable set";
	if (!step)
		return 0;
	snprintf(why, cap, "%s: %s", step, strerror(errno));
	return -1;
}

/* After the id change, which resets the dumpable flag. */
int agent_harden_finish(char *why, size_t cap)
{
	const char *step = NULL;
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		step = "PR_SET_DUMPABLE 0";
	else if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		step = "PR_SET_NO_NEW_PRIVS";
	if (!step)
		return 0;
	snprintf(why, cap, "%s: %s", step, strerror(errno));
	return -1;
}
