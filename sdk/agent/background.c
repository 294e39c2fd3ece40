/*
 * background.c — BG_START inside the guest: a command left running after its request is
 * answered, minded by a process of its own.
 *
 * The connection that starts it forks a minder, which starts the command (its own session,
 * exactly as an exec's) and stays its parent: it keeps the newest `ring` bytes of each
 * stream in the command's directory (agent_internal.h has the layout), and once the command
 * ends (seen without reaping it, so its pid cannot be reused while the state still says it
 * runs) records how, reaps it and exits. The minder outlives the connection: as a process
 * below the supervisor it is re-parented there, so the command lives as long as the sandbox,
 * and the supervisor's end (SHUTDOWN, disposal) kills it with everything else it owns. No
 * other process holds anything of it: any later connection, from any host process, reads
 * the directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_internal.h"

/* How long output still held open by the command's children is read after it ends. */
#define BG_DRAIN_GRACE_MS 50
/* The most one read takes from a pipe, so a write to the ring is bounded too. */
#define BG_CHUNK 65536

const char *agent_bg_dir(bool make, msb_error *err)
{
	static char dir[64];
	if (!dir[0]) {
		/* FNV-1a of the work directory: one name for every agent of one sandbox. */
		uint64_t h = 0xcbf29ce484222325ull;
		for (const char *p = agent.work_dir; *p; p++)
			h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
		snprintf(dir, sizeof dir, "/tmp/.msb-bg-%016llx", (unsigned long long)h);
	}
	if (!make)
		return dir;
	struct stat sb;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		msb_error_set_errno(err, MSB_E_OS, errno,
				    "bg_start refused by msb-agent: cannot make %s for background "
				    "commands (the sandbox's /tmp)", dir);
		return NULL;
	}
	if (lstat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid()) {
		msb_error_set(err, MSB_E_OS,
			      "bg_start refused by msb-agent: %s is not a directory of the agent's own",
			      dir);
		return NULL;
	}
	return dir;
}

bool agent_bg_path(char *path, size_t cap, const char *id, const char *file)
{
	int n = snprintf(path, cap, "%s/%s%s%s", agent_bg_dir(false, NULL), id, file ? "/" : "",
			 file ? file : "");
	return n > 0 && (size_t)n < cap;
}

int agent_bg_open(const char *id, const char *file, int flags)
{
	char path[128];
	if (!agent_bg_path(path, sizeof path, id, file))
		return -1;
	return open(path, flags | O_CLOEXEC | O_NOFOLLOW, 0600);
}

/* Replace <id>'s state whole: written beside it, renamed over it. */
static void bg_commit(const char *id, const agent_bg_state *st)
{
	char tmp[128], path[128];
	if (!agent_bg_path(tmp, sizeof tmp, id, "state.new") ||
	    !agent_bg_path(path, sizeof path, id, "state"))
		return;
	int fd = agent_bg_open(id, "state.new", O_WRONLY | O_CREAT | O_TRUNC);
	if (fd < 0)
		return;
	ssize_t n = write(fd, st, sizeof *st);
	close(fd);
	if (n == (ssize_t)sizeof *st)
		rename(tmp, path);
}

static uint64_t realtime_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The minder's hold on one command. */
typedef struct minder {
	const char *id;
	agent_bg_state st;
	int ring_fd[2];
	int out_fd[2];
	int in_fd;
	const unsigned char *in;
	size_t in_len, in_off;
} minder;

/* Keep `n` bytes of stream `i`: the newest `ring` of them, at their offsets modulo ring. */
static void ring_put(minder *m, int i, const unsigned char *p, size_t n)
{
	uint64_t ring = m->st.ring;
	if (n > ring) {
		m->st.written[i] += n - ring; /* overwritten before they were ever held */
		p += n - ring;
		n = (size_t)ring;
	}
	m->st.reserved[i] = m->st.written[i] + n;
	bg_commit(m->id, &m->st);
	uint64_t pos = m->st.written[i] % ring;
	size_t first = (size_t)(ring - pos) < n ? (size_t)(ring - pos) : n;
	/* On a full /tmp the bytes are counted all the same; their place keeps what it held. */
	if (pwrite(m->ring_fd[i], p, first, (off_t)pos) >= 0 && n > first) {
		ssize_t w = pwrite(m->ring_fd[i], p + first, n - first, 0);
		(void)w;
	}
	m->st.written[i] += n;
	bg_commit(m->id, &m->st);
}

/* Read stream `i` once; false at its end. */
static bool pipe_read(minder *m, int i)
{
	unsigned char buf[BG_CHUNK];
	ssize_t n = read(m->out_fd[i], buf, sizeof buf);
	if (n > 0) {
		ring_put(m, i, buf, (size_t)n);
		return true;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	close(m->out_fd[i]);
	m->out_fd[i] = -1;
	return false;
}

static void feed(minder *m)
{
	while (m->in_fd >= 0 && m->in_off < m->in_len) {
		ssize_t n = write(m->in_fd, m->in + m->in_off, m->in_len - m->in_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0)
			break;
		m->in_off += (size_t)n;
	}
	if (m->in_fd >= 0) {
		close(m->in_fd);
		m->in_fd = -1;
	}
}

/* Whether the command has ended, seen without reaping it. */
static bool ended(pid_t pid)
{
	siginfo_t si = { 0 };
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

static _Noreturn void mind(minder *m, uint64_t timeout_ms)
{
	pid_t pid = (pid_t)m->st.pid;
	int pidfd = agent_open_pidfd(pid);
	int64_t deadline = timeout_ms ? msb_agent_now_ms() + (int64_t)timeout_ms : 0;
	feed(m);
	while (!ended(pid)) {
		struct pollfd p[4];
		int np = 0;
		for (int i = 0; i < 2; i++)
			if (m->out_fd[i] >= 0)
				p[np++] = (struct pollfd){ .fd = m->out_fd[i], .events = POLLIN };
		if (m->in_fd >= 0)
			p[np++] = (struct pollfd){ .fd = m->in_fd, .events = POLLOUT };
		if (pidfd >= 0)
			p[np++] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
		int wait = pidfd >= 0 ? -1 : 10;
		if (deadline) {
			int64_t left = deadline - msb_agent_now_ms();
			if (left <= 0) {
				m->st.timed_out = 1;
				kill(-pid, SIGKILL);
				kill(pid, SIGKILL);
				deadline = 0;
				continue;
			}
			wait = wait < 0 || left < wait ? (int)(left < 1000000 ? left : 1000000) : wait;
		}
		if (poll(p, (nfds_t)np, wait) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2; i++)
			if (m->out_fd[i] >= 0)
				pipe_read(m, i);
		if (m->in_fd >= 0)
			feed(m);
	}
	/* What it wrote before it ended, and what its children write for a moment more. */
	int64_t until = msb_agent_now_ms() + BG_DRAIN_GRACE_MS;
	while ((m->out_fd[0] >= 0 || m->out_fd[1] >= 0) && msb_agent_now_ms() < until) {
		struct pollfd p[2];
		int np = 0;
		for (int i = 0; i < 2; i++)
			if (m->out_fd[i] >= 0)
				p[np++] = (struct pollfd){ .fd = m->out_fd[i], .events = POLLIN };
		if (poll(p, (nfds_t)np, 10) <= 0)
			continue;
		for (int i = 0; i < 2; i++)
			if (m->out_fd[i] >= 0)
				pipe_read(m, i);
	}
	int status = 0;
	siginfo_t si = { 0 };
	waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT);
	if (si.si_code == CLD_EXITED)
		status = (si.si_status & 0xff) << 8;
	else
		status = si.si_status & 0x7f;
	m->st.status = status;
	m->st.running = 0;
	bg_commit(m->id, &m->st);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	_exit(0);
}

/* A fresh handle: 16 of [0-9a-f]. */
static void new_id(char id[17])
{
	unsigned char r[8];
	if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
		uint64_t t = realtime_ms() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)msb_agent_now_ms();
		memcpy(r, &t, sizeof r);
	}
	for (int i = 0; i < 8; i++)
		snprintf(id + 2 * i, 3, "%02x", r[i]);
}

/*
 * Room for one more: at MSB_AGENT_BG_MAX the oldest that has ended is forgotten; when all
 * of them still run, the start is refused.
 */
static msb_errc make_room(const char *dir, msb_error *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return msb_error_set_errno(err, MSB_E_OS, errno, "bg_start refused by msb-agent: %s", dir);
	size_t n = 0;
	char oldest[MSB_BG_ID_MAX + 1] = "";
	uint64_t oldest_ms = UINT64_MAX;
	struct dirent *de;
	while ((de = readdir(d))) {
		agent_bg_state st;
		if (!msb_bg_id_valid(de->d_name) || agent_bg_load(de->d_name, &st, NULL) != MSB_OK)
			continue;
		n++;
		if (!st.running && st.started_ms < oldest_ms) {
			oldest_ms = st.started_ms;
			memcpy(oldest, de->d_name, strlen(de->d_name) + 1); /* a valid id fits */
		}
	}
	closedir(d);
	if (n < MSB_AGENT_BG_MAX)
		return MSB_OK;
	if (!oldest[0])
		return msb_error_set(err, MSB_E_BACKEND,
				     "bg_start refused by msb-agent: %u background commands are "
				     "running in this sandbox, its most; signal one first",
				     MSB_AGENT_BG_MAX);
	agent_bg_forget(oldest);
	return MSB_OK;
}

/* argv joined by spaces, cut at MSB_BG_COMMAND_MAX, into <id>/command. */
static bool write_command(const char *id, char *const *argv)
{
	char line[MSB_BG_COMMAND_MAX + 1] = "";
	size_t len = 0;
	for (size_t i = 0; argv[i] && len < MSB_BG_COMMAND_MAX; i++) {
		int k = snprintf(line + len, sizeof line - len, "%s%s", i ? " " : "", argv[i]);
		len += k > 0 ? (size_t)k : 0;
	}
	len = len < MSB_BG_COMMAND_MAX ? len : MSB_BG_COMMAND_MAX;
	int fd = agent_bg_open(id, "command", O_WRONLY | O_CREAT | O_EXCL);
	if (fd < 0)
		return false;
	bool ok = write(fd, line, len) == (ssize_t)len;
	close(fd);
	return ok;
}

/* What the minder tells the connection: the command's pid, or why it did not start. */
typedef struct bg_report {
	int64_t pid;
	int32_t code;
	char message[512];
} bg_report;

/* In the minder: start the command, say how that went, then mind it. */
static _Noreturn void minder_main(minder *m, const msb_agent_request *req, const char *cwd,
				  uint64_t timeout_ms, int report)
{
	prctl(PR_SET_NAME, "msb-bg", 0, 0, 0);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	msb_error e = MSB_ERROR_INIT;
	pid_t pid;
	int fds[3];
	bg_report r = { 0 };
	if (agent_command_start(req->argv, req->env, cwd, -1, &pid, fds, &e) != MSB_OK) {
		r.code = (int32_t)e.code;
		snprintf(r.message, sizeof r.message, "%s", msb_error_message(&e));
		agent_bg_forget(m->id); /* gone before the refusal is told */
		ssize_t w = write(report, &r, sizeof r);
		(void)w;
		_exit(1);
	}
	m->st.pid = pid;
	bg_commit(m->id, &m->st);
	r.pid = pid;
	ssize_t w = write(report, &r, sizeof r);
	(void)w;
	close(report);
	m->in_fd = fds[0], m->out_fd[0] = fds[1], m->out_fd[1] = fds[2];
	mind(m, timeout_ms);
}

/* The connection's side once the minder is forked: what it reported. */
static msb_errc await_report(pid_t minder_pid, int report, const char *id, agent_bg_state *st,
			     msb_buf *reply, msb_error *err)
{
	bg_report r = { 0 };
	ssize_t n;
	while ((n = read(report, &r, sizeof r)) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof r) {
		/* Killed before it said: nothing of it is left to mind. */
		waitpid(minder_pid, NULL, WNOHANG);
		agent_bg_forget(id);
		return msb_error_set(err, MSB_E_BACKEND,
				     "bg_start refused by msb-agent: the command's minder ended before "
				     "it said whether the command started");
	}
	if (r.code != MSB_OK) {
		r.message[sizeof r.message - 1] = '\0';
		return msb_error_set(err, (msb_errc)r.code, "%s", r.message);
	}
	st->pid = r.pid;
	return agent_bg_put_status(reply, id, st, err);
}

msb_errc agent_bg_start(int rfd, int wfd, const msb_agent_request *req, msb_buf *reply,
			msb_error *err)
{
	const char *dir = agent_bg_dir(true, err);
	if (!dir)
		return MSB_E_OS;
	msb_errc rc = make_room(dir, err);
	if (rc != MSB_OK)
		return rc;
	char id[17], path[128];
	new_id(id);
	if (!agent_bg_path(path, sizeof path, id, NULL) || mkdir(path, 0700) < 0)
		return msb_error_set_errno(err, MSB_E_OS, errno,
					   "bg_start refused by msb-agent: cannot make %s", path);
	minder m = { .id = id, .in_fd = -1, .ring_fd = { -1, -1 }, .out_fd = { -1, -1 } };
	uint64_t ring = req->max_output ? req->max_output : agent.default_max_output;
	m.st = (agent_bg_state){ .magic = AGENT_BG_MAGIC, .running = 1,
				 .ring = ring < MSB_AGENT_MAX_OUTPUT ? ring : MSB_AGENT_MAX_OUTPUT,
				 .started_ms = realtime_ms() };
	m.in = req->data, m.in_len = req->data_len;
	char *cwd = agent_map_path(req->cwd ? req->cwd : agent.work_dir);
	int report[2] = { -1, -1 };
	pid_t minder_pid = -1;
	if (!cwd || !write_command(id, req->argv) ||
	    (m.ring_fd[0] = agent_bg_open(id, "out", O_RDWR | O_CREAT | O_EXCL)) < 0 ||
	    (m.ring_fd[1] = agent_bg_open(id, "err", O_RDWR | O_CREAT | O_EXCL)) < 0 ||
	    pipe2(report, O_CLOEXEC) < 0) {
		rc = msb_error_set_errno(err, MSB_E_OS, errno,
					 "bg_start refused by msb-agent: cannot prepare %s", path);
	} else {
		/* No state until the minder knows the pid: until then nothing lists or reads it. */
		minder_pid = fork();
		if (minder_pid == 0) {
			close(report[0]);
			/* The host's connection is the connection process's alone. */
			if (rfd >= 0)
				close(rfd);
			if (wfd >= 0 && wfd != rfd)
				close(wfd);
			minder_main(&m, req, cwd, req->timeout_ms, report[1]);
		}
		close(report[1]);
		if (minder_pid < 0)
			rc = msb_error_set_errno(err, MSB_E_OS, errno,
						 "bg_start refused by msb-agent: fork");
		else
			rc = await_report(minder_pid, report[0], id, &m.st, reply, err);
		close(report[0]);
	}
	for (int i = 0; i < 2; i++)
		if (m.ring_fd[i] >= 0)
			close(m.ring_fd[i]);
	if (rc != MSB_OK && minder_pid < 0)
		agent_bg_forget(id);
	free(cwd);
	return rc;
}
