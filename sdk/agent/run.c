/*
 * run.c — running one command for EXEC and RUN_CODE inside the guest.
 *
 * Each command gets its own session and process group (so one kill reaches every process
 * it did not deliberately detach), the agent's rlimits, a scrubbed environment (nothing of
 * the agent's own is inherited: a host variable must never leak secrets into the guest),
 * and stdout and stderr on separate pipes that are always drained — past the output cap the
 * bytes are read and dropped, never left to block the writer — so a chatty program cannot
 * stall itself into a false timeout. The deadline is wall clock; when it passes the whole
 * process group is SIGKILLed, and then everything else the command started, however it
 * detached (agent_tree_kill: the runner is a subreaper, so nothing it started can leave its
 * subtree). A daemon that a command which did NOT time out leaves behind survives it by
 * design (a container's behaviour) and is killed at SHUTDOWN instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msb/agent.h>

#include "../lib/libc_compat.h"
#include "agent_internal.h"

extern char **environ;

/* After the program exits, how long output still held open by its children is waited for. */
#define DRAIN_GRACE_MS 50

typedef struct run_spec {
	char *const *argv;
	char *const *env;
	const char *cwd;
	const unsigned char *stdin_data;
	size_t stdin_len;
	uint64_t timeout_ms;
	uint64_t max_output;
	bool tty;             /* stdin, stdout and stderr are one terminal: make it controlling */
} run_spec;

/* Where a child failed before exec, told to the parent through a CLOEXEC pipe. */
enum { STAGE_CHDIR = 1, STAGE_RLIMIT, STAGE_EXEC };
struct child_failure {
	int stage;
	int errnum;
};

typedef struct stream {
	int fd;
	msb_buf buf;
	bool truncated;
} stream;

/* Whether `list` (n entries) sets the variable `entry` ("NAME=…") names. */
static bool env_sets(char *const *list, size_t n, const char *entry)
{
	size_t len = strcspn(entry, "=");
	for (size_t i = 0; i < n; i++)
		if (strncmp(list[i], entry, len) == 0 && list[i][len] == '=')
			return true;
	return false;
}

/*
 * The command's environment: the request's own variables; then the image config's Env
 * (--env) for every name the request does not set — except HOME, which is the spec's
 * work_dir as it always was (the spec wins over the image); then the agent's defaults
 * (PATH, HOME, LANG) for what neither set, and the egress proxy variables.
 */
static char **build_env(char *const *extra, const char *home)
{
	size_t n = 0;
	while (extra && extra[n])
		n++;
	char **env = calloc(n + agent.n_image_env + 5 + 6, sizeof *env);
	if (!env)
		return NULL;
	size_t k = 0;
	bool has_path = false, has_home = false, has_preload = false;
	for (size_t i = 0; i < n; i++)
		env[k++] = extra[i];
	for (size_t i = 0; i < agent.n_image_env; i++)
		if (strncmp(agent.image_env[i], "HOME=", 5) != 0 &&
		    !env_sets(env, k, agent.image_env[i]))
			env[k++] = agent.image_env[i];
	for (size_t i = 0; i < k; i++) {
		has_path |= strncmp(env[i], "PATH=", 5) == 0;
		has_home |= strncmp(env[i], "HOME=", 5) == 0;
		has_preload |= strncmp(env[i], "LD_PRELOAD=", 11) == 0;
	}
	/* A kernel whose statx refuses AT_NO_AUTOMOUNT: see statx_fix.c. A caller's own
	 * LD_PRELOAD is theirs to keep. */
	if (agent.statx_fix && !has_preload)
		env[k++] = (char *)"LD_PRELOAD=" MSB_AGENT_STATX_SHIM;
	static char path_var[PATH_MAX + 8], home_var[PATH_MAX + 8];
	snprintf(path_var, sizeof path_var, "PATH=%s", agent.path_env);
	snprintf(home_var, sizeof home_var, "HOME=%s", home);
	if (!has_path)
		env[k++] = path_var;
	if (!has_home)
		env[k++] = home_var;
	env[k++] = (char *)"LANG=C.UTF-8";
	if (agent.egress_proxy) {
		/* The forwarder's proxy, for tools that honour it (msb/egress.h). */
		static char *const proxy[] = {
			"http_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128",
			"HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128",
			"no_proxy=localhost,127.0.0.1,::1", "NO_PROXY=localhost,127.0.0.1,::1",
		};
		for (size_t i = 0; i < sizeof proxy / sizeof proxy[0]; i++)
			env[k++] = proxy[i];
	}
	env[k] = NULL;
	return env;
}

static int set_limit(int resource, uint64_t value)
{
	if (value == 0)
		return 0;
	struct rlimit rl = { (rlim_t)value, (rlim_t)value };
	return setrlimit(resource, &rl);
}

static int apply_rlimits(void)
{
	const msb_agent_rlimits *r = &agent.rlimits;
	if (set_limit(RLIMIT_CPU, r->cpu_seconds) || set_limit(RLIMIT_AS, r->as_bytes) ||
	    set_limit(RLIMIT_NOFILE, r->nofile) || set_limit(RLIMIT_NPROC, r->nproc) ||
	    set_limit(RLIMIT_FSIZE, r->fsize_bytes))
		return -1;
	return 0;
}

static _Noreturn void child_fail(int fd, int stage)
{
	struct child_failure f = { stage, errno };
	ssize_t n = write(fd, &f, sizeof f);
	(void)n;
	_exit(127);
}

/*
 * In the vfork'd child (see spawn_command): become the command; never returns. It borrows
 * the agent's memory until it execs, so it only makes system calls, and writes nothing of
 * the parent's but errno.
 */
static _Noreturn void child_exec(const run_spec *rs, int in, int out, int errfd, int status)
{
	setsid();
	/*
	 * Dispositions first, then the mask the parent blocked everything with: the agent
	 * ignores SIGPIPE (an ignored disposition would survive exec) and handles SIGTERM (its
	 * handler must never run here, on the parent's memory).
	 */
	signal(SIGPIPE, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/*
	 * Lift the three pipe ends above 2 first: one of them may itself be 0, 1 or 2 (when the
	 * agent was started with a standard fd closed), and dup2 onto itself would neither
	 * clear its close-on-exec flag nor survive another end being moved onto it.
	 */
	int high[3] = { fcntl(in, F_DUPFD, 3), fcntl(out, F_DUPFD, 3), fcntl(errfd, F_DUPFD, 3) };
	for (int fd = 0; fd < 3; fd++)
		if (high[fd] < 0 || dup2(high[fd], fd) < 0)
			child_fail(status, STAGE_EXEC);
	/* A new session's first terminal becomes its controlling one: ^C, job control. */
	if (rs->tty && ioctl(0, TIOCSCTTY, 0) < 0)
		child_fail(status, STAGE_EXEC);
	if (chdir(rs->cwd) < 0)
		child_fail(status, STAGE_CHDIR);
	if (apply_rlimits() < 0)
		child_fail(status, STAGE_RLIMIT);
	/* Nothing of the agent's (its socket, other connections) may reach the command. */
	if (status > 3)
		close_range(3, (unsigned)status - 1, 0);
	close_range((unsigned)status + 1, ~0u, 0);
	execvp(rs->argv[0], rs->argv); /* searches the PATH of `environ`: the command's */
	child_fail(status, STAGE_EXEC);
}

/*
 * Start the command with vfork: no page table is copied for a child that execs at once
 * (warm exec measured 15% faster than with fork). The agent is single-threaded per
 * connection, so pointing `environ` at the command's environment for the child's execvp
 * is safe; all signals stay blocked until the child has reset its dispositions.
 */
static pid_t __attribute__((noinline))
spawn_command(const run_spec *rs, char **env, int in, int out, int errfd, int status)
{
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	char **saved = environ;
	environ = env;
	pid_t pid = vfork();
	if (pid == 0)
		child_exec(rs, in, out, errfd, status);
	int e = errno;
	environ = saved;
	sigprocmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return pid;
}

static msb_errc report_child_failure(const run_spec *rs, const struct child_failure *f,
				     msb_error *err)
{
	msb_errc code = f->errnum == ENOENT ? MSB_E_NOT_FOUND
		      : f->errnum == ENOTDIR ? MSB_E_NOT_DIR
		      : (f->errnum == EACCES || f->errnum == EPERM) ? MSB_E_PERMISSION
		      : MSB_E_OS;
	switch (f->stage) {
	case STAGE_CHDIR:
		return msb_error_set_errno(err, code, f->errnum,
					   "exec refused by msb-agent: working directory '%s'", rs->cwd);
	case STAGE_RLIMIT:
		return msb_error_set_errno(err, MSB_E_OS, f->errnum,
					   "exec refused by msb-agent: setting the rlimits failed");
	default:
		return msb_error_set_errno(err, code, f->errnum,
					   "exec refused by msb-agent: program '%s' could not be started",
					   rs->argv[0]);
	}
}

static void drain(stream *s, uint64_t cap)
{
	unsigned char chunk[65536];
	for (;;) {
		ssize_t n = read(s->fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN) {
				close(s->fd);
				s->fd = -1;
			}
			return;
		}
		size_t keep = (size_t)n;
		if (s->buf.len + keep > cap) {
			keep = cap > s->buf.len ? (size_t)(cap - s->buf.len) : 0;
			s->truncated = true;
		}
		if (keep && msb_buf_append(&s->buf, chunk, keep, NULL) != MSB_OK)
			s->truncated = true;
	}
}

static void feed(int *fd, const unsigned char *data, size_t len, size_t *off)
{
	while (*off < len) {
		ssize_t n = write(*fd, data + *off, len - *off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			if (errno == EAGAIN)
				return;
			break; /* EPIPE: the program does not read its stdin; fine */
		}
		*off += (size_t)n;
	}
	close(*fd);
	*fd = -1;
}

/*
 * A pidfd becomes readable when the process exits, so one poll() waits for output, stdin
 * room, the exit and the deadline together. Where the kernel has no pidfd_open (older
 * kernels, some sandboxing kernels) the loop falls back to polling the exit every ms.
 */
int agent_open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	return -1;
#endif
}

/* The supervising loop: feed stdin, drain both streams, watch the deadline and the child. */
static void supervise(const run_spec *rs, pid_t pid, int in_fd, stream *out, stream *errs,
		      int *status, bool *timed_out, agent_tree *tree)
{
	int64_t deadline = msb_agent_now_ms() + (int64_t)rs->timeout_ms;
	int64_t drain_until = 0;
	size_t in_off = 0;
	bool exited = false;
	int pidfd = agent_open_pidfd(pid);
	if (in_fd >= 0 && rs->stdin_len == 0) {
		close(in_fd);
		in_fd = -1;
	}
	while (!*timed_out) {
		if (!exited && waitpid(pid, status, WNOHANG) == pid) {
			exited = true;
			drain_until = msb_agent_now_ms() + DRAIN_GRACE_MS;
		}
		if (out->fd < 0 && errs->fd < 0 && exited)
			break;
		int64_t now = msb_agent_now_ms();
		if (exited && now >= drain_until)
			break;
		if (now >= deadline) {
			*timed_out = true;
			break;
		}
		struct pollfd p[4];
		nfds_t n = 0;
		int oi = -1, ei = -1, ii = -1;
		if (out->fd >= 0)
			p[oi = (int)n++] = (struct pollfd){ .fd = out->fd, .events = POLLIN };
		if (errs->fd >= 0)
			p[ei = (int)n++] = (struct pollfd){ .fd = errs->fd, .events = POLLIN };
		if (in_fd >= 0)
			p[ii = (int)n++] = (struct pollfd){ .fd = in_fd, .events = POLLOUT };
		if (pidfd >= 0 && !exited)
			p[n++] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
		int64_t wait = (exited ? drain_until : deadline) - now;
		/* Without a pidfd the exit is only seen by asking: ask every ms. */
		int cap = pidfd >= 0 || exited ? 1000 : 1;
		if (poll(p, n, wait > cap ? cap : (int)wait) <= 0)
			continue;
		if (oi >= 0 && p[oi].revents)
			drain(out, rs->max_output);
		if (ei >= 0 && p[ei].revents)
			drain(errs, rs->max_output);
		if (ii >= 0 && p[ii].revents)
			feed(&in_fd, rs->stdin_data, rs->stdin_len, &in_off);
	}
	if (pidfd >= 0)
		close(pidfd);
	if (in_fd >= 0)
		close(in_fd);
	if (*timed_out) {
		/* While it still exists: when it started is what its orphans are told by. */
		agent_tree_started(tree, pid);
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
	}
	if (!exited)
		while (waitpid(pid, status, 0) < 0 && errno == EINTR)
			;
	if (*timed_out) {
		/* Collect what the killed group had already written. */
		if (out->fd >= 0)
			drain(out, rs->max_output);
		if (errs->fd >= 0)
			drain(errs, rs->max_output);
	}
}

msb_errc agent_put_status(msb_buf *reply, int status, uint32_t flags, msb_error *err)
{
	int code = 0, sig = 0;
	if (WIFEXITED(status)) {
		code = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		sig = WTERMSIG(status);
		code = 128 + sig;
	}
	msb_errc rc = msb_agent_put_u32(reply, MSB_TAG_EXIT_CODE, (uint32_t)code, err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u32(reply, MSB_TAG_SIGNAL, (uint32_t)sig, err);
	return rc == MSB_OK ? msb_agent_put_u32(reply, MSB_TAG_FLAGS, flags, err) : rc;
}

static msb_errc put_result(msb_buf *reply, int status, bool timed_out, int reach, stream *out,
			   stream *errs, msb_error *err)
{
	uint32_t flags = (timed_out ? MSB_AGENT_F_TIMED_OUT : 0) |
			 (out->truncated ? MSB_AGENT_F_OUT_TRUNCATED : 0) |
			 (errs->truncated ? MSB_AGENT_F_ERR_TRUNCATED : 0);
	msb_errc rc = agent_put_status(reply, status, flags, err);
	if (rc == MSB_OK)
		rc = msb_agent_put(reply, MSB_TAG_STDOUT, out->buf.data, out->buf.len, err);
	if (rc == MSB_OK)
		rc = msb_agent_put(reply, MSB_TAG_STDERR, errs->buf.data, errs->buf.len, err);
	if (rc == MSB_OK && timed_out)
		rc = msb_agent_put_u32(reply, MSB_TAG_KILL_REACH, (uint32_t)reach, err);
	return rc;
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
}

/*
 * Start `rs`'s command with its three pipes; on success *pid and the parent's ends (stdin's
 * write end, stdout's and stderr's read ends, all non-blocking) in fds[0..2]. Shared by the
 * buffered run below and the streamed one (stream.c).
 */
static msb_errc start_command(const run_spec *rs, int tty, pid_t *pid_out, int fds[3],
			      msb_error *err)
{
	char **env = build_env(rs->env, agent.work_dir);
	if (!env)
		return msb_error_set(err, MSB_E_NOMEM, "exec refused by msb-agent: out of memory");
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, er[2] = { -1, -1 }, st[2] = { -1, -1 };
	/* Under a terminal (`tty` its slave end) the three standard fds are that terminal. */
	if ((tty < 0 && (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(er, O_CLOEXEC))) ||
	    pipe2(st, O_CLOEXEC)) {
		int e = errno;
		close_pair(in), close_pair(out), close_pair(er), close_pair(st);
		free(env);
		return msb_error_set_errno(err, MSB_E_OS, e, "exec refused by msb-agent: pipe");
	}
	if (tty >= 0)
		in[0] = out[1] = er[1] = tty;
	pid_t pid = spawn_command(rs, env, in[0], out[1], er[1], st[1]);
	int fork_errno = errno;
	free(env);
	if (tty < 0)
		close(in[0]), close(out[1]), close(er[1]);
	/* The child's ends are its own now (or the caller's terminal): only ours are left. */
	in[0] = out[1] = er[1] = -1;
	close(st[1]);
	if (pid < 0) {
		close_pair(in), close_pair(out), close_pair(er);
		close(st[0]);
		return msb_error_set_errno(err, MSB_E_OS, fork_errno, "exec refused by msb-agent: vfork");
	}
	struct child_failure f;
	ssize_t n;
	while ((n = read(st[0], &f, sizeof f)) < 0 && errno == EINTR)
		;
	close(st[0]);
	if (n == (ssize_t)sizeof f) {
		close_pair(in), close_pair(out), close_pair(er);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return report_child_failure(rs, &f, err);
	}
	*pid_out = pid;
	fds[0] = in[1], fds[1] = out[0], fds[2] = er[0];
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			fcntl(fds[i], F_SETFL, O_NONBLOCK);
	return MSB_OK;
}

msb_errc agent_command_start(char *const *argv, char *const *env, const char *cwd, int tty,
			     pid_t *pid, int fds[3], msb_error *err)
{
	run_spec rs = { .argv = argv, .env = env, .cwd = cwd, .tty = tty >= 0 };
	return start_command(&rs, tty, pid, fds, err);
}

static msb_errc run_command(const run_spec *rs, msb_buf *reply, msb_error *err)
{
	pid_t pid;
	int fds[3];
	/* What is below us already (an earlier command's daemons) is noted before this starts. */
	agent_tree tree;
	agent_tree_begin(&tree);
	msb_errc started = start_command(rs, -1, &pid, fds, err);
	if (started != MSB_OK) {
		agent_tree_end(&tree);
		return started;
	}
	stream so = { .fd = fds[1] }, se = { .fd = fds[2] };
	int status = 0;
	bool timed_out = false;
	supervise(rs, pid, fds[0], &so, &se, &status, &timed_out, &tree);
	/* The group is dead; what left it (setsid, a double fork, setpgid) is found below us. */
	int reach = timed_out ? agent_tree_kill(&tree) : 0;
	agent_tree_end(&tree);
	if (so.fd >= 0)
		close(so.fd);
	if (se.fd >= 0)
		close(se.fd);
	msb_errc rc = put_result(reply, status, timed_out, reach, &so, &se, err);
	msb_buf_free(&so.buf);
	msb_buf_free(&se.buf);
	return rc;
}

void agent_run_bounds(const msb_agent_request *req, uint64_t *timeout_ms, uint64_t *max_output)
{
	*timeout_ms = req->timeout_ms ? req->timeout_ms : agent.default_timeout_ms;
	uint64_t cap = req->max_output ? req->max_output : agent.default_max_output;
	*max_output = cap > MSB_AGENT_MAX_OUTPUT ? MSB_AGENT_MAX_OUTPUT : cap;
}

static void fill_bounds(run_spec *rs, const msb_agent_request *req)
{
	agent_run_bounds(req, &rs->timeout_ms, &rs->max_output);
}

msb_errc agent_exec(const msb_agent_request *req, msb_buf *reply, msb_error *err)
{
	char *cwd = agent_map_path(req->cwd ? req->cwd : agent.work_dir);
	if (!cwd)
		return msb_error_set(err, MSB_E_NOMEM, "exec refused by msb-agent: out of memory");
	run_spec rs = { .argv = req->argv, .env = req->env, .cwd = cwd,
			.stdin_data = req->data, .stdin_len = req->data_len };
	fill_bounds(&rs, req);
	msb_errc rc = run_command(&rs, reply, err);
	free(cwd);
	return rc;
}

msb_errc agent_run_code(const msb_agent_request *req, msb_buf *reply, msb_error *err)
{
	run_spec rs = { .argv = agent.run_code, .cwd = agent.work_dir,
			.stdin_data = req->data, .stdin_len = req->data_len };
	fill_bounds(&rs, req);
	return run_command(&rs, reply, err);
}
