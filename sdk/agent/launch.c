/*
 * launch.c — msb_launch_agent (msb/launch.h): the guest agent started inside namespaces,
 * reported back, recorded and greeted, once for every namespace boundary.
 *
 * Two children, as in the process backend: an intermediate that leaves the host's session,
 * makes the agent's socket, enters the namespaces and starts the agent, then exits (so the
 * agent is nobody's child in the host and outlives it); and the agent itself, which runs
 * the boundary's `prepare` and execs. Both write failures to one close-on-exec pipe as
 * fixed-size records (atomic, below PIPE_BUF); the host reads records until end of file,
 * which comes when the intermediate has exited and the agent has exec'd or died.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msb/launch.h>
#include <msb/netns.h>
#include <msb/spawn.h>
#include <msb/unix_socket.h>

typedef struct launch_report {
	int errnum;
	char stage[48];
	pid_t agent;
} launch_report;

typedef struct launch_args {
	const msb_launch *l;
	const char *socket_path;
	const char *exec_path, *uid_map, *gid_map; /* the appended fields, NULL when not covered */
	int watch, rep, log, listen_fd;
	char *agent_stack;
} launch_args;

/* Async-signal-safe: `text` written whole to `path` (a /proc/self map). */
static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = strlen(text);
	ssize_t w = write(fd, text, n);
	close(fd);
	return w == (ssize_t)n ? 0 : -1;
}

/* Unprivileged: a user namespace that maps msb's uid to root, so it may own the rest. */
static int enter_user_namespace(const char *uid_map, const char *gid_map)
{
	if (unshare(CLONE_NEWUSER) < 0 || write_file("/proc/self/uid_map", uid_map) < 0)
		return -1;
	write_file("/proc/self/setgroups", "deny\n"); /* absent on old kernels */
	return write_file("/proc/self/gid_map", gid_map ? gid_map : uid_map);
}

/* Async-signal-safe: one record on the report pipe. */
static void report(int fd, const char *stage, int errnum, pid_t agent)
{
	launch_report r = { .errnum = errnum, .agent = agent };
	for (size_t i = 0; stage[i] && i + 1 < sizeof r.stage; i++)
		r.stage[i] = stage[i];
	ssize_t n = write(fd, &r, sizeof r);
	(void)n;
}

/* The agent: prepare, its fds in place, exec. Never returns. */
static int agent_child(void *arg)
{
	const launch_args *a = arg;
	/* Opened before prepare: the new root need not hold the host's /dev/null. */
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0) {
		report(a->rep, "/dev/null", errno, 0);
		_exit(126);
	}
	const char *stage = "prepare";
	int e = a->l->prepare ? a->l->prepare(a->l->prepare_arg, &stage) : 0;
	if (e) {
		report(a->rep, stage, e, 0);
		_exit(126);
	}
	/* Everything that must survive is first moved above the numbers it is placed at. */
	int rep = fcntl(a->rep, F_DUPFD_CLOEXEC, 512);
	int listen_fd = fcntl(a->listen_fd, F_DUPFD_CLOEXEC, 10);
	int keep[MSB_LAUNCH_KEEP_MAX];
	size_t n_keep = a->l->n_keep_fds < MSB_LAUNCH_KEEP_MAX ? a->l->n_keep_fds : MSB_LAUNCH_KEEP_MAX;
	for (size_t i = 0; i < n_keep; i++)
		if ((keep[i] = fcntl(a->l->keep_fds[i], F_DUPFD_CLOEXEC, 10)) < 0) {
			report(a->rep, "an fd handed to the agent", errno, 0);
			_exit(126);
		}
	if (rep < 0 || listen_fd < 0 || dup2(a->watch, MSB_LAUNCH_WATCH_FD) < 0 ||
	    dup2(listen_fd, MSB_LAUNCH_LISTEN_FD) < 0 || dup2(devnull, 0) < 0 ||
	    dup2(a->log, 1) < 0 || dup2(a->log, 2) < 0) {
		report(a->rep, "the agent's fds", errno, 0);
		_exit(126);
	}
	unsigned first = MSB_LAUNCH_LISTEN_FD + 1;
	for (size_t i = 0; i < n_keep; i++)
		if (dup2(keep[i], (int)first++) < 0) {
			report(rep, "an fd handed to the agent", errno, 0);
			_exit(126);
		}
	/* Nothing of the host's beyond these: an fd left open is the host's, inside. The
	 * report pipe is close-on-exec, so it stays until the exec and no longer. */
	if ((unsigned)rep > first)
		close_range(first, (unsigned)rep - 1, 0);
	close_range((unsigned)rep + 1, ~0u, 0);
	execv(a->exec_path ? a->exec_path : a->l->argv[0], a->l->argv);
	report(rep, "exec of the agent", errno, 0);
	_exit(127);
}

/*
 * The intermediate: a session and namespaces of its own, the agent started, then gone.
 * What the agent's child reads is copied onto this child's own stack: a child that borrows
 * the host's memory only reads the host's data (msb/spawn.h).
 */
static int launch_child(void *arg)
{
	launch_args own = *(const launch_args *)arg, *a = &own;
	const msb_launch *l = a->l;
	if (setsid() < 0) {
		report(a->rep, "setsid", errno, 0);
		_exit(1);
	}
	/* This child's umask is its own: it shares no file-system context with the host. */
	a->listen_fd = msb_unix_listen_owner_only(a->socket_path);
	if (a->listen_fd < 0) {
		report(a->rep, "the agent's socket", errno, 0);
		_exit(1);
	}
	if (a->uid_map && enter_user_namespace(a->uid_map, a->gid_map) < 0) {
		report(a->rep, "the user namespace", errno, 0);
		_exit(1);
	}
	if (l->netns_fd >= 0 && setns(l->netns_fd, CLONE_NEWNET) < 0) {
		report(a->rep, "the network namespace made ahead", errno, 0);
		_exit(1);
	}
	int flags = l->unshare_flags & ~(l->netns_fd >= 0 ? CLONE_NEWNET : 0);
	if (flags && unshare(flags) < 0) {
		report(a->rep, "unshare of the namespaces", errno, 0);
		_exit(1);
	}
	if ((flags & CLONE_NEWNET) && msb_netns_loopback_up() < 0) {
		report(a->rep, "loopback", errno, 0);
		_exit(1);
	}
	pid_t agent = msb_spawn_shared(agent_child, a, a->agent_stack,
				       a->agent_stack ? MSB_SPAWN_STACK_MIN : 0);
	report(a->rep, agent < 0 ? "fork of the agent" : "", agent < 0 ? errno : 0, agent);
	_exit(0);
}

static msb_errc greet(const msb_driver_box *box, int watch, const char *log_path, msb_error *err)
{
	msb_agent_client *client = NULL;
	bool died = false;
	msb_error why = MSB_ERROR_INIT;
	msb_errc rc = msb_agent_client_greet(box->socket_path, watch, box->config->start_timeout,
					     NULL, 0, &died, &client, &why);
	if (rc == MSB_OK) {
		if (box->greeted)
			*box->greeted = client;
		else
			msb_agent_client_close(client);
		return MSB_OK;
	}
	if (!died && rc != MSB_E_TIMEOUT) {
		msb_error_move(err, &why);
		return msb_error_prefix(err, "sandbox %s: ", box->name);
	}
	msb_error_clear(&why);
	char tail[512];
	msb_driver_file_tail(log_path, tail, sizeof tail);
	return msb_error_set(err, MSB_E_BACKEND, "sandbox %s: the agent %s%s%s", box->name,
			     died ? "exited at start" : "did not become ready in time",
			     tail[0] ? ": " : "", tail);
}

msb_errc msb_launch_agent(const msb_driver_box *box, const msb_launch *l, msb_error *err)
{
	if (!l || l->struct_size < offsetof(msb_launch, exec_path) || !l->argv || !l->argv[0])
		return msb_error_set(err, MSB_E_VALUE, "msb_launch_agent: no launch, or no argv");
	/* Appended fields, read only where the caller's struct_size covers them. */
	bool appended = l->struct_size >= offsetof(msb_launch, gid_map) + sizeof l->gid_map;
	const char *uid_map = appended ? l->uid_map : NULL;
	char *log_path = l->log_path ? strdup(l->log_path) : msb_driver_path(box->dir, "agent.log");
	if (!log_path)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	int watch[2] = { -1, -1 }, rep[2] = { -1, -1 };
	int log = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (log < 0 || pipe2(watch, O_CLOEXEC) < 0 || pipe2(rep, O_CLOEXEC) < 0) {
		msb_errc rc = msb_error_set_errno(err, MSB_E_OS, errno, "sandbox %s: %s", box->name,
						  log < 0 ? log_path : "pipe");
		if (log >= 0)
			close(log);
		if (watch[0] >= 0)
			close(watch[0]), close(watch[1]);
		free(log_path);
		return rc;
	}
	/* As root both children share the host's memory until they exec (msb/spawn.h); not
	 * where they unshare a user namespace, which a task sharing memory may not. */
	char *stacks = geteuid() == 0 && !uid_map ? malloc(2 * MSB_SPAWN_STACK_MIN) : NULL;
	launch_args a = { .l = l, .socket_path = box->socket_path, .watch = watch[1], .rep = rep[1],
			  .log = log, .listen_fd = -1,
			  .exec_path = appended ? l->exec_path : NULL, .uid_map = uid_map,
			  .gid_map = appended ? l->gid_map : NULL,
			  .agent_stack = stacks ? stacks + MSB_SPAWN_STACK_MIN : NULL };
	pid_t mid = msb_spawn_shared(launch_child, &a, stacks, stacks ? MSB_SPAWN_STACK_MIN : 0);
	int spawn_errno = errno;
	close(watch[1]);
	close(rep[1]);
	close(log);
	launch_report failed = { .errnum = mid < 0 ? spawn_errno : 0 };
	pid_t agent = 0;
	if (mid < 0)
		snprintf(failed.stage, sizeof failed.stage, "fork");
	for (launch_report r; mid > 0;) {
		ssize_t n = read(rep[0], &r, sizeof r);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof r)
			break;
		if (r.errnum && !failed.errnum)
			failed = r;
		else if (r.agent > 0)
			agent = r.agent;
	}
	if (mid > 0)
		while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
			;
	free(stacks);
	close(rep[0]);
	msb_errc rc = MSB_OK;
	if (failed.errnum || agent <= 0)
		rc = msb_error_set_errno(err, MSB_E_BACKEND, failed.errnum ? failed.errnum : EIO,
					 "sandbox %s: starting the agent: %s failed", box->name,
					 failed.stage[0] ? failed.stage : "the start");
	if (rc == MSB_OK)
		rc = msb_driver_write_pid(box, agent, err);
	if (rc == MSB_OK)
		rc = greet(box, watch[0], log_path, err);
	close(watch[0]);
	free(log_path);
	return rc;
}
