/*
 * reap.c — the agent's hold on every process a command ever started.
 *
 * The agent is a child subreaper (PR_SET_CHILD_SUBREAPER), so a daemon that double-forks
 * and calls setsid to leave its command's process group is re-parented to the agent rather
 * than to the host's init: it stays a descendant, and disposal can still find it. Killing
 * descendants walks /proc for every process whose parent chain reaches the agent and
 * SIGKILLs it, round after round, because a fork bomb forks while it is being killed; each
 * round's victims re-parent their children to the agent, so the walk converges.
 *
 * The same walk, rooted at the process that runs a command (a subreaper too), is how a
 * timed-out command loses everything it started and nothing an earlier one left: see
 * agent_tree_begin in agent_internal.h. It is one mechanism inside every boundary (process,
 * bwrap, gVisor, the microVM), with no cgroup to make per command: a cgroup's mkdir and rmdir
 * would be on every exec's path, and a workload's agent may have no cgroup tree of its own
 * to make one in (bwrap without delegation, gVisor's emulated one).
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
#include <sys/syscall.h>
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

/* One process as /proc shows it. */
typedef struct proc_entry {
	pid_t pid, ppid;
	char state;
	unsigned long long start; /* clock ticks after boot: with the pid, names one process */
} proc_entry;

/* The parent, state and start time of `pid` from /proc/<pid>/stat; false when it is gone. */
static bool read_stat(pid_t pid, proc_entry *e)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: parse after the last ')'. */
	char *p = strrchr(buf, ')');
	long ppid;
	/* state ppid, then 17 fields to starttime (field 22 of proc(5)). */
	if (!p || sscanf(p + 1, " %c %ld %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
			 "%*s %*s %*s %llu", &e->state, &ppid, &e->start) != 3)
		return false;
	e->pid = pid;
	e->ppid = (pid_t)ppid;
	return true;
}

/* Every process /proc lists (malloc'ed into *out); how many. */
static size_t list_procs(proc_entry **out)
{
	*out = NULL;
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	proc_entry *all = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		proc_entry e;
		if (!read_stat((pid_t)atol(de->d_name), &e))
			continue;
		if (n == cap) {
			proc_entry *grown = realloc(all, (cap = cap ? cap * 2 : 256) * sizeof *all);
			if (!grown)
				break;
			all = grown;
		}
		all[n++] = e;
	}
	closedir(d);
	*out = all;
	return n;
}

/*
 * Mark in mine[] every process below `root` in the listing, not descending through a spared
 * one (an earlier command's daemon and what it starts are not this command's). Repeats
 * until no process joins the set.
 */
static void mark_below(const proc_entry *all, size_t n, pid_t root, bool *mine,
		       const agent_tree *spared)
{
	for (bool grew = true; grew;) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			if (mine[i] || all[i].pid == root || (spared && agent_tree_spares(spared, all[i].pid, all[i].start)))
				continue;
			bool child = all[i].ppid == root;
			for (size_t j = 0; !child && j < n; j++)
				child = mine[j] && all[j].pid == all[i].ppid;
			if (child)
				mine[i] = grew = true;
		}
	}
}

/*
 * SIGKILL a process /proc lists as `pid`. Where /proc is this process's own, that is its
 * pid. Where it is an ancestor namespace's (the process backend runs the agent in a pid
 * namespace of its own under the host's /proc), the number means another process here: the
 * signal goes through a pidfd of the /proc entry itself (pidfd_send_signal takes one), which
 * names the process whatever its number in any namespace, and cannot hit a recycled pid.
 */
static void kill_listed(pid_t pid, bool own_proc)
{
	if (own_proc) {
		kill(pid, SIGKILL);
		return;
	}
#ifdef SYS_pidfd_send_signal
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld", (long)pid);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
		close(fd);
	}
#endif
}

/* Append the children /proc/<pid>/task/<tid>/children names, for every thread of `pid`. */
static bool add_children(pid_t pid, proc_entry **all, size_t *n, size_t *cap)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/task", (long)pid);
	DIR *d = opendir(path);
	if (!d)
		return false;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		char file[320], buf[4096];
		snprintf(file, sizeof file, "/proc/%ld/task/%s/children", (long)pid, de->d_name);
		int fd = open(file, O_RDONLY | O_CLOEXEC);
		ssize_t k = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
		if (fd >= 0)
			close(fd);
		for (char *p = buf, *end; k > 0 && p < buf + k; p = end) {
			buf[k] = '\0';
			long child = strtol(p, &end, 10);
			if (end == p)
				break;
			proc_entry e;
			if (!read_stat((pid_t)child, &e))
				continue;
			if (*n == *cap) {
				proc_entry *grown = realloc(*all, (*cap = *cap ? *cap * 2 : 64) * sizeof **all);
				if (!grown)
					break;
				*all = grown;
			}
			(*all)[(*n)++] = e;
		}
	}
	closedir(d);
	return true;
}

/*
 * Every process below `root`, not descending through spared ones. The kernel's children
 * lists make it a walk of the subtree alone (a few reads for a command that left one
 * daemon, however many processes the host runs); where they are missing (a kernel built
 * without CONFIG_PROC_CHILDREN, gVisor) every process in /proc is read and linked up.
 */
static size_t list_below(pid_t root, const agent_tree *spared, proc_entry **out)
{
	char probe[64];
	snprintf(probe, sizeof probe, "/proc/%ld/task/%ld/children", (long)root, (long)root);
	proc_entry *all = NULL;
	size_t n = 0, cap = 0;
	if (access(probe, R_OK) == 0 && add_children(root, &all, &n, &cap)) {
		for (size_t i = 0; i < n; i++) {
			if (spared && agent_tree_spares(spared, all[i].pid, all[i].start)) {
				all[i--] = all[--n]; /* dropped, and what it started is not looked at */
				continue;
			}
			add_children(all[i].pid, &all, &n, &cap);
		}
		*out = all;
		return n;
	}
	size_t total = list_procs(&all);
	bool *mine = calloc(total ? total : 1, sizeof *mine);
	n = 0;
	if (mine) {
		mark_below(all, total, root, mine, spared);
		for (size_t i = 0; i < total; i++)
			if (mine[i])
				all[n++] = all[i];
	}
	free(mine);
	*out = all;
	return n;
}

/* SIGKILL every live process below `root` (spared ones apart) found in one /proc walk. */
static size_t kill_below(pid_t root, const agent_tree *spared)
{
	bool own_proc = root == getpid();
	proc_entry *below;
	size_t n = list_below(root, spared, &below), found = 0;
	for (size_t i = 0; i < n; i++)
		if (below[i].state != 'Z' && below[i].state != 'X') {
			kill_listed(below[i].pid, own_proc);
			found++;
		}
	free(below);
	return found;
}

/* SIGKILL every descendant of this process found in one /proc walk; how many were found. */
static size_t kill_round(void)
{
	pid_t self = agent_proc_self();
	return kill_below(self > 0 ? self : getpid(), NULL);
}

pid_t agent_proc_self(void)
{
	char link[32];
	ssize_t n = readlink("/proc/self", link, sizeof link - 1);
	if (n <= 0)
		return -1;
	link[n] = '\0';
	return (pid_t)atol(link);
}

bool agent_tree_spares(const agent_tree *t, pid_t pid, unsigned long long start)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->pid[i] == pid && t->start[i] == start)
			return true;
	return false;
}

void agent_tree_begin(agent_tree *t)
{
	memset(t, 0, sizeof *t);
	/* The common case costs one system call: no child at all, so nothing to spare. */
	pid_t r;
	while ((r = waitpid(-1, NULL, WNOHANG)) > 0)
		;
	if (r < 0)
		return;
	pid_t self = agent_proc_self();
	if (self <= 0)
		return;
	proc_entry *below;
	size_t n = list_below(self, NULL, &below);
	t->pid = calloc(n ? n : 1, sizeof *t->pid);
	t->start = calloc(n ? n : 1, sizeof *t->start);
	for (size_t i = 0; t->pid && t->start && i < n; i++) {
		t->pid[t->n] = below[i].pid;
		t->start[t->n++] = below[i].start;
	}
	free(below);
}

void agent_tree_end(agent_tree *t)
{
	free(t->pid);
	free(t->start);
	memset(t, 0, sizeof *t);
}

void agent_tree_started(agent_tree *t, pid_t pid)
{
	/* Only the orphan rule reads it, and only where /proc is this process's own. */
	proc_entry e;
	t->command = pid;
	if (agent_proc_self() == getpid() && read_stat(pid, &e))
		t->command_start = e.start;
}

/*
 * Whether orphans reach this process: a child that forks a grandchild, says its pid and
 * exits, and the grandchild's parent is then looked at. A kernel that ignores
 * PR_SET_CHILD_SUBREAPER (the gVisor here) hands them to its init — the supervisor —
 * instead. Only asked at a timeout.
 */
static bool orphans_come_here(void)
{
	int hold[2], told[2];
	if (pipe2(hold, O_CLOEXEC) != 0)
		return true;
	if (pipe2(told, O_CLOEXEC) != 0) {
		close(hold[0]), close(hold[1]);
		return true;
	}
	pid_t child = fork();
	if (child == 0) {
		pid_t grandchild = fork();
		if (grandchild == 0) {
			char c;
			close(hold[1]);
			ssize_t r = read(hold[0], &c, 1); /* wait for the look, then go */
			(void)r;
			_exit(0);
		}
		ssize_t w = write(told[1], &grandchild, sizeof grandchild);
		(void)w;
		_exit(0);
	}
	close(hold[0]);
	close(told[1]);
	bool here = true;
	pid_t grandchild = 0;
	if (child > 0) {
		while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
			;
		proc_entry e;
		if (read(told[0], &grandchild, sizeof grandchild) == (ssize_t)sizeof grandchild &&
		    grandchild > 0 && read_stat(grandchild, &e))
			here = e.ppid == getpid();
	}
	close(hold[1]); /* the grandchild goes */
	close(told[0]);
	if (here && grandchild > 0)
		while (waitpid(grandchild, NULL, 0) < 0 && errno == EINTR)
			;
	return here;
}

/*
 * Where orphans go to the supervisor instead, this command's are told by their parent (the
 * supervisor) and their start (not before the command's); the agent's own processes (the
 * other connections) are spared by their executable. Their subtrees go with them.
 */
static size_t kill_orphans(const agent_tree *t, pid_t supervisor_view, bool own_proc)
{
	proc_entry *all;
	size_t n = list_procs(&all);
	bool *mine = calloc(n ? n : 1, sizeof *mine);
	size_t found = 0;
	char self_exe[512] = "";
	ssize_t k = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
	self_exe[k > 0 ? k : 0] = '\0';
	for (size_t i = 0; mine && i < n; i++) {
		if (all[i].ppid != supervisor_view || all[i].start < t->command_start ||
		    agent_tree_spares(t, all[i].pid, all[i].start))
			continue;
		char path[64], exe[512] = "";
		snprintf(path, sizeof path, "/proc/%ld/exe", (long)all[i].pid);
		k = readlink(path, exe, sizeof exe - 1);
		exe[k > 0 ? k : 0] = '\0';
		if (k > 0 && strcmp(exe, self_exe) == 0)
			continue;
		mine[i] = true;
	}
	for (size_t i = 0; mine && i < n; i++) /* and what is below them */
		if (mine[i]) {
			bool *below = calloc(n, sizeof *below);
			if (below) {
				mark_below(all, n, all[i].pid, below, t);
				for (size_t j = 0; j < n; j++)
					mine[j] = mine[j] || below[j];
			}
			free(below);
		}
	for (size_t i = 0; mine && i < n; i++)
		if (mine[i] && all[i].state != 'Z' && all[i].state != 'X') {
			kill_listed(all[i].pid, own_proc);
			found++;
		}
	free(mine);
	free(all);
	return found;
}

int agent_tree_kill(const agent_tree *t)
{
	/*
	 * Without a /proc that shows this process, its descendants cannot be told apart: the
	 * process group (killed already by the caller) is all that was reached.
	 */
	pid_t self = agent_proc_self();
	if (self <= 0)
		return MSB_REACH_GROUP;
	/* Bounded in time as well as rounds: the host answers within its grace either way. */
	int64_t until = msb_agent_now_ms() + 3000;
	pid_t supervisor = 0;
	proc_entry me;
	/*
	 * Only asked where /proc is this process's own: a /proc of an ancestor namespace is a
	 * real Linux kernel's, which honours PR_SET_CHILD_SUBREAPER.
	 */
	if (agent.supervisor != getpid() && self == getpid() && t->command_start &&
	    !orphans_come_here() && read_stat(self, &me))
		supervisor = me.ppid;
	for (int round = 0; round < 2000 && msb_agent_now_ms() < until; round++) {
		size_t found = kill_below(self, t);
		if (supervisor > 0)
			found += kill_orphans(t, supervisor, self == getpid());
		/* Reap what died, so the next walk does not see it; spared ones stay. */
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (found == 0)
			return MSB_REACH_TREE;
		struct timespec ts = { 0, 200000L };
		nanosleep(&ts, NULL);
	}
	return MSB_REACH_GROUP;
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
