/*
 * stream.c — EXEC_STREAM inside the guest: a command whose output is sent as it is read and
 * whose stdin is fed from the host as it arrives.
 *
 * One loop polls the command's two output pipes, its stdin, its exit (pidfd), the host's
 * connection both ways and the deadline. Why nothing here ever blocks: the host may be
 * writing INPUT while the agent writes OUTPUT, and if both sides blocked on a full socket
 * neither would read again. So output frames go to a pending buffer written without
 * blocking — bounded, because only bytes under the per-stream cap are ever queued (the rest
 * is read and dropped, and flagged, exactly as in a buffered exec) — and the connection is
 * always read, except while the command holds STDIN_HELD_MAX bytes of stdin unread (then
 * the host's writes wait, which is the back-pressure a pipe gives). Once the command's
 * stdin is closed, further input is read and dropped, so a host still writing never wedges
 * the final frames.
 *
 * Under a terminal (ROWS/COLS) the command gets a new pseudo-terminal as its controlling
 * one, stdin, stdout and stderr alike: its output (one stream, as stdout) is read from the
 * master, INPUT is written to it, RESIZE sets its size. posix_openpt needs /dev/ptmx and a
 * devpts in the guest; without them the exec is refused, saying so.
 *
 * A host that hangs up (its connection ends or fails) is a terminal closed under the
 * command: nobody can receive its output, so the tree is killed, as a buffered exec's would
 * be at its deadline. On the deadline the process group is SIGKILLed, what it had already
 * written is sent, and the reply says timed out.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msb/agent.h>

#include "agent_internal.h"

/* Unread stdin the agent holds before it stops reading the host (its pipe's back-pressure). */
#define STDIN_HELD_MAX (1u << 20)
/* After the program exits, how long output still held open by its children is waited for. */
#define DRAIN_GRACE_MS 50
/* How long the host may leave the final frames unread before it counts as gone. */
#define FLUSH_STALL_MS 10000

typedef struct sx {
	int rfd, wfd;
	uint32_t id;
	bool wfd_socket;
	int in_fd;               /* the command's stdin, -1 once closed */
	msb_buf in;              /* stdin received, not yet written */
	size_t in_off;
	bool in_eof;             /* the host said its stdin ended */
	int out_fd[2];           /* stdout, stderr */
	uint64_t sent[2];
	bool truncated[2];
	uint64_t cap;
	msb_buf pend;            /* encoded OUTPUT frames not yet written */
	size_t pend_off;
	msb_buf payload, frame;  /* scratch */
	bool host_gone;
	msb_error bad;           /* a frame that does not belong in this exchange */
	int tty;                 /* the terminal's master (also out_fd[0]), or -1 */
} sx;

static void queue_output(sx *s, int i, const unsigned char *data, size_t n)
{
	size_t keep = n;
	if (s->sent[i] + keep > s->cap) {
		keep = s->cap > s->sent[i] ? (size_t)(s->cap - s->sent[i]) : 0;
		s->truncated[i] = true;
	}
	if (!keep || s->host_gone)
		return;
	s->payload.len = 0;
	unsigned char raw[MSB_AGENT_HEADER_SIZE];
	if (msb_agent_put_u32(&s->payload, MSB_TAG_STREAM, (uint32_t)(i + 1), NULL) != MSB_OK ||
	    msb_agent_put(&s->payload, MSB_TAG_DATA, data, keep, NULL) != MSB_OK) {
		s->truncated[i] = true;
		return;
	}
	msb_agent_header h = { MSB_AGENT_MAGIC, MSB_AGENT_PROTOCOL_VERSION, MSB_AGENT_OUTPUT,
			       s->id, (uint32_t)s->payload.len };
	msb_agent_header_encode(&h, raw);
	if (msb_buf_append(&s->pend, raw, sizeof raw, NULL) != MSB_OK ||
	    msb_buf_append(&s->pend, s->payload.data, s->payload.len, NULL) != MSB_OK) {
		/* Out of memory: a partial frame would break the stream; the host is cut off. */
		s->host_gone = true;
		return;
	}
	s->sent[i] += keep;
}

/*
 * Read one chunk of what a pipe (or the terminal's master) has now; close it at its end (a
 * master reads EIO once no process holds the terminal). True when a chunk was read.
 */
static bool read_pipe(sx *s, int i)
{
	unsigned char chunk[65536];
	for (;;) {
		ssize_t n = read(s->out_fd[i], chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0) {
			queue_output(s, i, chunk, (size_t)n);
			/* One chunk per turn: the other stream and the host get theirs in order. */
			return true;
		}
		if (n == 0 || errno != EAGAIN) {
			close(s->out_fd[i]);
			s->out_fd[i] = -1;
		}
		return false;
	}
}

static void flush_pending(sx *s)
{
	while (s->pend_off < s->pend.len && !s->host_gone) {
		const unsigned char *p = s->pend.data + s->pend_off;
		size_t left = s->pend.len - s->pend_off;
		ssize_t n = s->wfd_socket ? send(s->wfd, p, left, MSG_NOSIGNAL | MSG_DONTWAIT)
					  : write(s->wfd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			s->host_gone = true;
			break;
		}
		s->pend_off += (size_t)n;
	}
	s->pend.len = s->pend_off = 0;
}

static void close_stdin(sx *s)
{
	if (s->in_fd >= 0)
		close(s->in_fd);
	s->in_fd = -1;
	s->in.len = s->in_off = 0;
}

static void feed_stdin(sx *s)
{
	while (s->in_fd >= 0 && s->in_off < s->in.len) {
		ssize_t n = write(s->in_fd, s->in.data + s->in_off, s->in.len - s->in_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			close_stdin(s); /* EPIPE: the program does not read its stdin; fine */
			return;
		}
		s->in_off += (size_t)n;
	}
	s->in.len = s->in_off = 0;
	if (s->in_eof)
		close_stdin(s);
}

static void set_size(int fd, uint32_t rows, uint32_t cols)
{
	struct winsize ws = { .ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols };
	ioctl(fd, TIOCSWINSZ, &ws); /* the kernel signals SIGWINCH to the foreground group */
}

/* A RESIZE of this request: the terminal's new size (ignored without a terminal). */
static void resize(sx *s)
{
	msb_agent_request req;
	msb_error e = MSB_ERROR_INIT;
	if (msb_agent_request_decode(MSB_AGENT_RESIZE, s->frame.data, s->frame.len, &req, &e) != MSB_OK) {
		msb_error_move(&s->bad, &e);
		return;
	}
	if (s->tty >= 0)
		set_size(s->tty, req.rows, req.cols);
	msb_agent_request_free(&req);
}

/* One frame from the host: INPUT or RESIZE of this request, or the end of the exchange. */
static void read_host(sx *s)
{
	msb_agent_header h = { 0 };
	msb_error e = MSB_ERROR_INIT;
	bool eof;
	if (msb_agent_frame_read(s->rfd, msb_agent_now_ms() + FLUSH_STALL_MS, &h, &s->frame, &eof,
				 &e) != MSB_OK) {
		msb_error_clear(&e);
		s->host_gone = true;
		return;
	}
	if (h.version == MSB_AGENT_PROTOCOL_VERSION && h.type == MSB_AGENT_RESIZE && h.id == s->id) {
		resize(s);
		return;
	}
	if (h.version != MSB_AGENT_PROTOCOL_VERSION || h.type != MSB_AGENT_INPUT || h.id != s->id) {
		msb_error_set(&s->bad, MSB_E_PROTOCOL,
			      "agent protocol: exec_stream #%u refused by msb-agent: a %s frame #%u "
			      "(version %u) arrived while it ran, where only input of #%u belongs",
			      s->id, msb_agent_type_name(h.type), h.id, h.version, s->id);
		return;
	}
	msb_agent_request req;
	if (msb_agent_request_decode(MSB_AGENT_INPUT, s->frame.data, s->frame.len, &req, &e) != MSB_OK) {
		msb_error_move(&s->bad, &e);
		return;
	}
	if (s->in_fd >= 0 && !s->in_eof && req.data_len &&
	    msb_buf_append(&s->in, req.data, req.data_len, NULL) != MSB_OK)
		close_stdin(s);
	/*
	 * A terminal's end of input is its EOF character (what ^D types), read by the line
	 * discipline; closing the master would hang the whole session up instead.
	 */
	if (req.eof && s->tty >= 0) {
		if (s->in_fd >= 0 && msb_buf_append(&s->in, "\x04", 1, NULL) != MSB_OK)
			close_stdin(s);
	} else {
		s->in_eof |= req.eof;
	}
	msb_agent_request_free(&req);
	feed_stdin(s);
}

/* The command's group; what left it is found by the tree walk once the command is reaped. */
static void kill_group(pid_t pid, agent_tree *tree)
{
	agent_tree_started(tree, pid); /* while it still exists: its orphans are told by it */
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
}

/* Supervise until the command is over and its output is all sent (or the host is gone). */
static void supervise(sx *s, pid_t pid, uint64_t timeout_ms, int *status, bool *timed_out,
		      agent_tree *tree, int *reach)
{
	int64_t deadline = msb_agent_now_ms() + (int64_t)timeout_ms;
	int64_t drain_until = 0, flush_until = 0;
	bool exited = false, over = false;
	int pidfd = agent_open_pidfd(pid);
	feed_stdin(s);
	for (;;) {
		if (!exited && waitpid(pid, status, WNOHANG) == pid) {
			exited = true;
			drain_until = msb_agent_now_ms() + DRAIN_GRACE_MS;
		}
		int64_t now = msb_agent_now_ms();
		if (!over && (s->host_gone || s->bad.code != MSB_OK || now >= deadline)) {
			*timed_out = !s->host_gone && s->bad.code == MSB_OK;
			kill_group(pid, tree);
			if (!exited)
				while (waitpid(pid, status, 0) < 0 && errno == EINTR)
					;
			exited = true;
			/* Then everything else it started however it detached (setsid, a double fork,
			 * setpgid), as a buffered exec's timeout does: the runner is a subreaper. */
			*reach = agent_tree_kill(tree);
			/* What the killed group had already written (a daemon that left the group may
			 * hold a pipe open: what is there now, not its end). */
			for (int i = 0; i < 2; i++)
				while (s->out_fd[i] >= 0 && read_pipe(s, i))
					;
			over = true;
		}
		if (!over && exited &&
		    ((s->out_fd[0] < 0 && s->out_fd[1] < 0) || now >= drain_until))
			over = true;
		if (over) {
			close_stdin(s);
			if (!flush_until)
				flush_until = now + FLUSH_STALL_MS;
			flush_pending(s);
			if (s->pend.len == 0 || s->host_gone || s->bad.code != MSB_OK)
				break;
			if (now >= flush_until) {
				s->host_gone = true;
				break;
			}
		}
		struct pollfd p[6];
		nfds_t n = 0;
		int oi[2] = { -1, -1 }, ii = -1, hr = -1, hw = -1;
		for (int i = 0; i < 2 && !over; i++)
			if (s->out_fd[i] >= 0)
				p[oi[i] = (int)n++] = (struct pollfd){ .fd = s->out_fd[i], .events = POLLIN };
		if (s->in_fd >= 0 && s->in_off < s->in.len)
			p[ii = (int)n++] = (struct pollfd){ .fd = s->in_fd, .events = POLLOUT };
		/* The host is read unless its stdin is being held back (see the file comment). */
		if (s->in_fd < 0 || s->in.len - s->in_off < STDIN_HELD_MAX)
			p[hr = (int)n++] = (struct pollfd){ .fd = s->rfd, .events = POLLIN };
		if (s->pend.len > s->pend_off)
			p[hw = (int)n++] = (struct pollfd){ .fd = s->wfd, .events = POLLOUT };
		if (pidfd >= 0 && !exited)
			p[n++] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
		int64_t until = over ? flush_until : exited ? drain_until : deadline;
		int64_t wait = until - now;
		int cap = pidfd >= 0 || exited ? 1000 : 1;
		if (poll(p, n, wait > cap ? cap : wait < 0 ? 0 : (int)wait) <= 0)
			continue;
		for (int i = 0; i < 2; i++)
			if (oi[i] >= 0 && p[oi[i]].revents)
				read_pipe(s, i);
		if (hw >= 0 && p[hw].revents)
			flush_pending(s);
		if (ii >= 0 && p[ii].revents)
			feed_stdin(s);
		if (hr >= 0 && p[hr].revents)
			read_host(s);
	}
	if (pidfd >= 0)
		close(pidfd);
}

/*
 * A new terminal of the request's size: *master (non-blocking, close-on-exec) and *slave,
 * which becomes the command's controlling terminal.
 */
static msb_errc open_terminal(const msb_agent_request *req, int *master, int *slave,
			      msb_error *err)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	const char *name = m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0 ? ptsname(m) : NULL;
	int sl = name ? open(name, O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
	if (sl < 0) {
		int e = errno;
		if (m >= 0)
			close(m);
		return msb_error_set_errno(err, MSB_E_OS, e,
					   "exec_stream refused by msb-agent: no terminal could be "
					   "opened (/dev/ptmx and /dev/pts in the guest)");
	}
	set_size(m, req->rows, req->cols);
	fcntl(m, F_SETFL, O_NONBLOCK);
	*master = m;
	*slave = sl;
	return MSB_OK;
}

msb_errc agent_exec_stream(int rfd, int wfd, uint32_t id, const msb_agent_request *req,
			   msb_buf *reply, msb_error *err)
{
	char *cwd = agent_map_path(req->cwd ? req->cwd : agent.work_dir);
	if (!cwd)
		return msb_error_set(err, MSB_E_NOMEM, "exec_stream refused by msb-agent: out of memory");
	uint64_t timeout_ms;
	sx s = { .rfd = rfd, .wfd = wfd, .id = id, .bad = MSB_ERROR_INIT };
	agent_run_bounds(req, &timeout_ms, &s.cap);
	pid_t pid;
	int fds[3], slave = -1;
	s.tty = -1;
	msb_errc rc = req->rows ? open_terminal(req, &s.tty, &slave, err) : MSB_OK;
	/* What is below us already (an earlier command's daemons) is noted before this starts. */
	agent_tree tree;
	agent_tree_begin(&tree);
	if (rc == MSB_OK)
		rc = agent_command_start(req->argv, req->env, cwd, slave, &pid, fds, err);
	free(cwd);
	if (slave >= 0)
		close(slave);
	if (rc != MSB_OK) {
		agent_tree_end(&tree);
		if (s.tty >= 0)
			close(s.tty);
		return rc;
	}
	s.in_fd = fds[0], s.out_fd[0] = fds[1], s.out_fd[1] = fds[2];
	if (s.tty >= 0) {
		/* One terminal: both streams are its output (stdout), its input the master too. */
		s.out_fd[0] = s.tty;
		s.in_fd = fcntl(s.tty, F_DUPFD_CLOEXEC, 3);
	}
	s.in_eof = !req->stdin_open;
	if (req->data_len && msb_buf_append(&s.in, req->data, req->data_len, NULL) != MSB_OK)
		close_stdin(&s);
	/* A socket is written with MSG_DONTWAIT; a pipe or a serial port needs O_NONBLOCK. */
	int socktype, old_flags = -1;
	socklen_t sl = sizeof socktype;
	s.wfd_socket = getsockopt(wfd, SOL_SOCKET, SO_TYPE, &socktype, &sl) == 0;
	if (!s.wfd_socket) {
		old_flags = fcntl(wfd, F_GETFL);
		fcntl(wfd, F_SETFL, old_flags | O_NONBLOCK);
	}
	int status = 0, reach = 0;
	bool timed_out = false;
	supervise(&s, pid, timeout_ms, &status, &timed_out, &tree, &reach);
	agent_tree_end(&tree);
	if (old_flags >= 0)
		fcntl(wfd, F_SETFL, old_flags);
	for (int i = 0; i < 2; i++)
		if (s.out_fd[i] >= 0)
			close(s.out_fd[i]);
	close_stdin(&s);
	if (s.bad.code != MSB_OK) {
		rc = s.bad.code;
		msb_error_move(err, &s.bad);
	} else if (s.host_gone) {
		rc = msb_error_set(err, MSB_E_PROTOCOL,
				   "exec_stream #%u: the host hung up while it ran; its tree was killed", id);
	} else {
		uint32_t flags = (timed_out ? MSB_AGENT_F_TIMED_OUT : 0) |
				 (s.truncated[0] ? MSB_AGENT_F_OUT_TRUNCATED : 0) |
				 (s.truncated[1] ? MSB_AGENT_F_ERR_TRUNCATED : 0);
		rc = agent_put_status(reply, status, flags, err);
		if (rc == MSB_OK && timed_out)
			rc = msb_agent_put_u32(reply, MSB_TAG_KILL_REACH, (uint32_t)reach, err);
	}
	msb_buf_free(&s.in);
	msb_buf_free(&s.pend);
	msb_buf_free(&s.payload);
	msb_buf_free(&s.frame);
	msb_error_clear(&s.bad);
	return rc;
}
