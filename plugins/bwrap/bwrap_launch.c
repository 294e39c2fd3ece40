/*
 * bwrap_launch.c — the process tree of one sandbox:
 *
 *   msb (short-lived) ─vfork─ A ─socket, network namespace made ahead (if any), setsid,
 *       vfork into the cgroup─ keeper ─vfork, drop ids, exec─ bwrap ─ init ─ agent
 *
 * None of them copies the host: A, the keeper and bwrap's parent share msb's memory until
 * they exit or exec (msb_spawn_shared, msb/spawn.h; msb_cgroup_spawn_shared for the keeper,
 * which must be born in the cgroup), each suspending its parent until then, so msb resumes
 * once bwrap is executing and the keeper has become `msb-agent --reap`. A fork copies the
 * host's page tables (40 ms for a host with 1 GiB written, here): with three forks acquire
 * took 80.8 ms on such a host, now the same as on a small one (tests/bench/bench_bwrap with
 * MSB_BENCH_HOST_MIB). Every spawn blocks the signals, so no handler of the host's runs on
 * a borrowed stack; the keeper restores the defaults (its handler table is its own). The
 * three also run on msb's CPU until they exec (msb_spawn_pin_here, msb/spawn.h): each
 * suspends its parent, and a halted vCPU woken for it cost a hypervisor round trip per hop
 * (acquire -0.26 to -0.29 ms); each restores msb's CPU mask before its exec, or fails.
 *
 * A exits at once, so the keeper is nobody's child in msb's session: msb can exit (or be
 * killed) and the sandbox stays, addressable through the state directory. The keeper does
 * nothing afterwards but reap bwrap and what bwrap leaves (so the pid the driver recorded
 * never lingers as a zombie), and it does that as `msb-agent --reap`, which it execs once
 * bwrap is started: a process of the host's that stayed would hold msb suspended (while it
 * shares memory) or pin a copy of every page the host writes (as a fork; tested:
 * keeper_does_not_pin_host_memory). An exec that fails fails the start.
 *
 * The cgroup. The keeper is born inside the sandbox's cgroup (clone3 into the v2
 * directory, a self-join of the v1 ones), so bwrap and everything it starts are
 * inside from their first instruction (the limits follow while bwrap builds the sandbox,
 * see bwrap.c's launch_limited), and nothing is ever moved: moving another process takes
 * the kernel's global threadgroup lock, whose write side waits for an RCU grace period
 * (13 ms against 0.7-0.9 ms born inside: tests/bench/bench_cgroup). The keeper is part of
 * the sandbox — it lives exactly as long — so the one kill by cgroup ends it with the rest,
 * and an empty cgroup means no process of the sandbox is left. It costs one task of the
 * pids limit.
 *
 * How --die-with-parent is applied: bwrap sets PR_SET_PDEATHSIG on itself and on the
 * sandbox's init, so its "parent" is the keeper, not msb. Killing the keeper (or the keeper
 * dying for any reason) takes bwrap down, bwrap's death takes the sandbox's init down, and
 * the kernel then kills every process of the sandbox's pid namespace. Disposal does not
 * rely on that chain alone: it kills by cgroup (msb/cgroup.h) and checks it is empty.
 *
 * Everything between fork and exec is async-signal-safe (the host may be multithreaded):
 * the argv, the fds and the cgroup paths are all prepared before the first fork.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msb/spawn.h>
#include <msb/unix_socket.h>

#include "bwrap_launch.h"

enum { REPORT_FD = MSB_BWRAP_FD_LISTEN + 1 };

/* What the keeper and bwrap's child report through the close-on-exec pipe. */
enum {
	STEP_PID = 0, STEP_LISTEN, STEP_CGROUP, STEP_FDS, STEP_FORK, STEP_IDS, STEP_EXEC, STEP_REAPER,
	STEP_NETNS
};

static const char *step_name(int32_t step)
{
	switch (step) {
	case STEP_LISTEN: return "making the agent's socket";
	case STEP_CGROUP: return "starting bwrap inside the sandbox's cgroup";
	case STEP_FDS: return "placing the sandbox's files on their fds";
	case STEP_FORK: return "forking bwrap";
	case STEP_IDS: return "dropping to the sandbox's user and group";
	case STEP_EXEC: return "executing bwrap";
	case STEP_REAPER: return "executing the keeper's reaper (the agent binary, as msb-agent --reap)";
	case STEP_NETNS: return "joining the network namespace made ahead";
	default: return "starting";
	}
}

static void report(int fd, int32_t step, int32_t value)
{
	int32_t msg[2] = { step, value };
	ssize_t n;
	do
		n = write(fd, msg, sizeof msg);
	while (n < 0 && errno == EINTR);
}

/*
 * Put the files on 0..2 and on the numbers bwrap was told (the listening socket on
 * MSB_BWRAP_FD_LISTEN), the report pipe on REPORT_FD, and close everything else.
 */
static int place_fds(const msb_bwrap_launch *l, int listen_fd, int report_fd)
{
	enum { LOG = MSB_BWRAP_FD_COUNT, REPORT, LISTEN, ALL };
	int src[ALL], high[ALL];
	for (int i = 0; i < MSB_BWRAP_FD_COUNT; i++)
		src[i] = l->fds[i];
	src[LOG] = l->log_fd;
	src[REPORT] = report_fd;
	src[LISTEN] = listen_fd;
	/* Move everything out of the way first: a source may already sit on a target number. */
	for (int i = 0; i < ALL; i++)
		if ((high[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 64)) < 0)
			return -1;
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(high[LOG], 1) < 0 || dup2(high[LOG], 2) < 0)
		return -1;
	for (int i = 0; i < MSB_BWRAP_FD_COUNT; i++)
		if (dup2(high[i], MSB_BWRAP_FD_SECCOMP + i) < 0) /* dup2 clears close-on-exec */
			return -1;
	if (dup2(high[LISTEN], MSB_BWRAP_FD_LISTEN) < 0 || dup3(high[REPORT], REPORT_FD, O_CLOEXEC) < 0)
		return -1;
	return close_range(REPORT_FD + 1, ~0u, 0);
}

static int drop_ids(const msb_bwrap_launch *l)
{
	if (l->uid < 0)
		return 0;
	if (setgroups(0, NULL) != 0 || setresgid((gid_t)l->gid, (gid_t)l->gid, (gid_t)l->gid) != 0 ||
	    setresuid((uid_t)l->uid, (uid_t)l->uid, (uid_t)l->uid) != 0)
		return -1;
	return 0;
}

/*
 * Replace the keeper by `msb-agent --reap`, holding no file of the sandbox's (so the end of
 * file of bwrap's stderr, and the reset of a connection queued on the agent's socket, depend
 * on the sandbox alone) but the report pipe, which the exec closes. The keeper may share
 * the host's memory until then, so it can never stay as it is: an exec that fails is
 * reported, and the keeper exits (taking bwrap with it).
 */
static _Noreturn void become_reaper(const msb_bwrap_launch *l, const msb_spawn_pin *pin)
{
	close_range(3, REPORT_FD - 1, 0);
	close_range(REPORT_FD + 1, ~0u, 0);
	char *const argv[] = { (char *)l->reaper, "--reap", NULL };
	char *const envp[] = { NULL };
	errno = ENOENT;
	if (l->reaper && msb_spawn_pin_undo(pin) == 0)
		execve(l->reaper, argv, envp);
	report(REPORT_FD, STEP_REAPER, errno);
	_exit(1);
}

/* What the launch's processes need, prepared before the first one is made. */
typedef struct launch_args {
	const msb_bwrap_launch *l;
	int report_fd;     /* the write end of the report pipe (A's number) */
	int listen_fd;     /* the agent's socket, which A makes (A's number) */
	char *keeper_stack; /* the keeper's stack while it shares msb's memory, until its exec */
	char *bwrap_stack;  /* bwrap's parent's stack, the same way */
	msb_spawn_pin pin;  /* msb's CPU mask: all three run on msb's CPU until they exec */
} launch_args;

/* bwrap's parent: the sandbox's ids, then bwrap. Never returns. */

static int bwrap_child(void *arg)
{
	const launch_args *a = arg;
	const msb_bwrap_launch *l = a->l;
	if (drop_ids(l) != 0) {
		report(REPORT_FD, STEP_IDS, errno);
		_exit(127);
	}
	/* Until bwrap's own --die-with-parent takes over (set after a credential change,
	 * which clears it). */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(127);
	/* Spawned with every signal blocked; the keeper left no handler to run here. */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	char *const envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
	if (msb_spawn_pin_undo(&a->pin) == 0)
		execve(l->argv[0], l->argv, envp);
	report(REPORT_FD, STEP_EXEC, errno);
	_exit(127);
}

static int keeper(void *arg, int join_error)
{
	const launch_args *a = arg;
	const msb_bwrap_launch *l = a->l;
	if (join_error) {
		report(a->report_fd, STEP_CGROUP, join_error);
		_exit(1);
	}
	/* Signal state a host may have changed (ASan, an ignored SIGCHLD or SIGPIPE) is reset:
	 * the keeper must be able to wait, and bwrap must start from the defaults. */
	msb_spawn_signals_default();
	if (place_fds(l, a->listen_fd, a->report_fd) != 0) {
		report(a->report_fd, STEP_FDS, errno);
		_exit(1);
	}
	/*
	 * bwrap exits as soon as the sandbox's init reports the command's status, without
	 * waiting to reap that init; as a subreaper the keeper inherits and reaps it, instead of
	 * pid 1 (which, on some machines, never reaps).
	 */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	pid_t child = msb_spawn_shared(bwrap_child, (void *)a, a->bwrap_stack, MSB_SPAWN_STACK_MIN);
	if (child < 0) {
		report(REPORT_FD, STEP_FORK, errno);
		_exit(1);
	}
	report(REPORT_FD, STEP_PID, (int32_t)child);
	become_reaper(l, &a->pin);
}

static int keeper_outside(void *arg)
{
	return keeper(arg, 0);
}

/* Read the keeper's reports until every writer has closed (bwrap's exec closes its copy). */
static msb_errc read_reports(int fd, pid_t *pid, msb_error *err)
{
	*pid = 0;
	int32_t msg[2];
	size_t got = 0;
	for (;;) {
		ssize_t n = read(fd, (char *)msg + got, sizeof msg - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got < sizeof msg)
			continue;
		got = 0;
		if (msg[0] == STEP_PID) {
			*pid = (pid_t)msg[1];
			continue;
		}
		return msb_error_set_errno(err, MSB_E_BACKEND, msg[1],
					   "bwrap: the sandbox could not start: %s failed", step_name(msg[0]));
	}
	if (*pid <= 0)
		return msb_error_set(err, MSB_E_BACKEND,
				     "bwrap: the sandbox's keeper exited without starting bwrap");
	return MSB_OK;
}

/* A: the agent's socket, out of msb's session and network namespace (when one was made
 * ahead), and the keeper forked into the cgroup. */
static int middle_child(void *arg)
{
	launch_args *a = arg;
	const msb_bwrap_launch *l = a->l;
	/* Owner-only, and listening, so a host's connection waits in its queue until the agent
	 * accepts it. A's umask is its own: it shares msb's memory, not its file-system context. */
	if ((a->listen_fd = msb_unix_listen_owner_only(l->listen_path)) < 0) {
		report(a->report_fd, STEP_LISTEN, errno);
		_exit(1);
	}
	if (l->netns_fd >= 0 && setns(l->netns_fd, CLONE_NEWNET) != 0) {
		report(a->report_fd, STEP_NETNS, errno);
		_exit(1);
	}
	pid_t k = setsid() < 0		? -1
		  : l->cgroup ? msb_cgroup_spawn_shared(l->cgroup, keeper, (void *)a, a->keeper_stack,
							  MSB_SPAWN_STACK_MIN)
				: msb_spawn_shared(keeper_outside, (void *)a, a->keeper_stack,
						   MSB_SPAWN_STACK_MIN);
	if (k < 0)
		report(a->report_fd, STEP_FORK, errno);
	_exit(0);
}

msb_errc msb_bwrap_launch_start(const msb_bwrap_launch *l, msb_bwrap_launching *out, msb_error *err)
{
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return msb_error_set_errno(err, MSB_E_OS, errno, "bwrap: cannot create a pipe");
	/* Three stacks: A's, the keeper's and bwrap's parent's. */
	char *stacks = malloc(3 * MSB_SPAWN_STACK_MIN);
	launch_args a = { .l = l, .report_fd = pipefd[1], .listen_fd = -1,
			  .keeper_stack = stacks ? stacks + MSB_SPAWN_STACK_MIN : NULL,
			  .bwrap_stack = stacks ? stacks + 2 * MSB_SPAWN_STACK_MIN : NULL };
	msb_spawn_pin_here(&a.pin);
	pid_t mid = msb_spawn_shared(middle_child, &a, stacks, stacks ? MSB_SPAWN_STACK_MIN : 0);
	int saved = errno;
	msb_spawn_pin_undo(&a.pin);
	free(stacks);
	close(pipefd[1]);
	if (mid < 0) {
		close(pipefd[0]);
		return msb_error_set_errno(err, MSB_E_OS, saved, "bwrap: cannot fork");
	}
	out->middle = mid;
	out->reports = pipefd[0];
	return MSB_OK;
}

msb_errc msb_bwrap_launch_finish(msb_bwrap_launching *l, pid_t *pid, msb_error *err)
{
	int status;
	while (waitpid(l->middle, &status, 0) < 0 && errno == EINTR)
		;
	msb_errc rc = read_reports(l->reports, pid, err);
	close(l->reports);
	l->reports = -1;
	return rc;
}
