/*
 * reap.c — the agent's hold on every process a command ever started.
 *
 * The agent is a child subreaper (PR_SET_CHILD_SUBREAPER), so a daemon that double-forks
 * and calls setsid to leave its command's process group is re-parented to the agent rather
 * than to the host's init: it stays a descendant, and disposal can still find it. Killing
 * descendants walks /proc for every process whose parent chain reaches the agent and
 * SIGKILLs it, round after round, because a fork bomb forks while it is being killed; each
 * round's victims re-parent their children to the agent, so the walk converges.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_internal.h"

bool agent_reap_saw(pid_t watched)
{
	bool saw = false;
	pid_t pid;
	while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
		saw = saw || (watched > 0 && pid == watched);
	return saw;
}

void agent_reap(void)
{
	agent_reap_saw(0);
}

/* The parent of `pid` from /proc/<pid>/stat, or -1. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: parse after the last ')'. */
	char *p = strrchr(buf, ')');
	long ppid;
	if (!p || sscanf(p + 1, " %*c %ld", &ppid) != 1)
		return -1;
	return (pid_t)ppid;
}

typedef struct proc_pair {
	pid_t pid, ppid;
} proc_pair;

/* SIGKILL every descendant of this process found in one /proc walk; how many were found. */
static size_t kill_round(void)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	proc_pair *all = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid_t pid = (pid_t)atol(de->d_name);
		pid_t ppid = parent_of(pid);
		if (ppid < 0)
			continue;
		if (n == cap) {
			proc_pair *grown = realloc(all, (cap = cap ? cap * 2 : 256) * sizeof *all);
			if (!grown)
				break;
			all = grown;
		}
		all[n++] = (proc_pair){ pid, ppid };
	}
	closedir(d);
	/* Mark descendants: repeat until no new process joins the set. */
	pid_t self = getpid();
	bool *mine = calloc(n ? n : 1, sizeof *mine);
	size_t found = 0;
	for (bool grew = mine != NULL; grew;) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			if (mine[i] || all[i].pid == self)
				continue;
			bool child = all[i].ppid == self;
			for (size_t j = 0; !child && j < n; j++)
				child = mine[j] && all[j].pid == all[i].ppid;
			if (child) {
				mine[i] = grew = true;
				found++;
				kill(all[i].pid, SIGKILL);
			}
		}
	}
	free(mine);
	free(all);
	return found;
}

void agent_kill_descendants(void)
{
	/*
	 * As a pid namespace's init, kill(-1) reaches every process in the namespace — and
	 * /proc may be the host's, whose pids mean nothing here, so it is not walked.
	 */
	bool init = getpid() == 1;
	for (int round = 0; round < 500; round++) {
		size_t found = init ? (size_t)(kill(-1, SIGKILL) == 0) : kill_round();
		/* SIGKILLed children die promptly: wait for them rather than sleep and look. */
		while (found && waitpid(-1, NULL, 0) > 0)
			;
		agent_reap();
		if (found == 0 && waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
			return;
		if (!found) {
			struct timespec ts = { 0, 1000000L };
			nanosleep(&ts, NULL);
		}
	}
}
