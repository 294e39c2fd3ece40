/*
 * loader_probe.c — load a plugin in a short-lived child before the host does.
 *
 * dlopen runs a plugin's constructors in the calling process, before any descriptor check
 * can refuse it: a constructor calling exit(0) ends the host with success (so `msb plugins
 * --json` leaves truncated JSON that CI reads as a pass), abort or a segfault kills it, a
 * printf corrupts its --json output, a sleep hangs it. So the child dlopens the plugin and
 * validates it exactly as the host would (and dlcloses it, running its destructors, as the
 * host will at msb_loader_free), with its stdout and stderr on a pipe, and sends
 * the verdict back over another. Anything but a complete verdict, no output and a clean
 * exit within the time bound is a refusal naming what happened; only a plugin whose child
 * passed is dlopened by the host. The host's own check of the file (loader_elf.c) has run
 * before: the child is never asked to map a file that would SIGBUS.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plugin_internal.h"

/* A verdict's message is one sentence; more than this is not a verdict. */
#define PROBE_MESSAGE_MAX (64u << 10)
/* How much of what a plugin wrote is quoted in its refusal. */
#define PROBE_QUOTE 48

static void write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

/* A constructor's exit() ends here, before the host's atexit handlers (or LSan's) run. */
#define PROBE_EXITED 125

static void probe_exited(void)
{
	fflush(stdout);
	fflush(stderr);
	_exit(PROBE_EXITED);
}

/* The child: dlopen and validate, then the verdict (code, length, message) and _exit. */
static void probe_child(msb_plugin *p, int report, int output)
{
	/* A fault dies of its signal, whatever handler the host (or a sanitizer) installed. */
	static const int faults[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS };
	for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
		signal(faults[i], SIG_DFL);
	atexit(probe_exited);
	/* Whatever the host had buffered is not the plugin's output. */
	__fpurge(stdout);
	__fpurge(stderr);
	if (dup2(output, STDOUT_FILENO) < 0 || dup2(output, STDERR_FILENO) < 0)
		_exit(127);
	close(output);
	msb_error e = MSB_ERROR_INIT;
	msb_errc rc = msb_plugin_open(p, &e);
	if (rc == MSB_OK)
		rc = msb_plugin_validate(p, &e);
	/* Its destructors too: the host runs them at msb_loader_free. */
	if (p->handle)
		dlclose(p->handle);
	p->handle = NULL;
	/* A constructor's printf still sitting in stdio's buffer is output all the same. */
	fflush(stdout);
	fflush(stderr);
	const char *msg = rc == MSB_OK ? "" : msb_error_message(&e);
	uint32_t head[2] = { (uint32_t)rc, (uint32_t)strlen(msg) };
	if (head[1] > PROBE_MESSAGE_MAX)
		head[1] = PROBE_MESSAGE_MAX;
	write_all(report, head, sizeof head);
	write_all(report, msg, head[1]);
	_exit(0);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct probe_state {
	char *report;       /* the verdict bytes read so far */
	size_t report_len;
	bool report_eof;
	bool report_overflow;
	char quote[PROBE_QUOTE];
	size_t output_len;  /* how many bytes the plugin wrote */
	bool timed_out;
	int status;         /* waitpid's */
} probe_state;

static void read_report(probe_state *s, int fd)
{
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof buf);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		s->report_eof = true;
		return;
	}
	if (s->report_len + (size_t)n > PROBE_MESSAGE_MAX + 8) {
		s->report_overflow = true;
		s->report_eof = true;
		return;
	}
	char *grown = realloc(s->report, s->report_len + (size_t)n);
	if (!grown) {
		s->report_overflow = true;
		s->report_eof = true;
		return;
	}
	memcpy(grown + s->report_len, buf, (size_t)n);
	s->report = grown;
	s->report_len += (size_t)n;
}

/* Returns false at EOF (or an error): nothing more will come. */
static bool read_output(probe_state *s, int fd)
{
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof buf);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	for (ssize_t i = 0; i < n && s->output_len + (size_t)i < PROBE_QUOTE; i++)
		s->quote[s->output_len + (size_t)i] = buf[i];
	s->output_len += (size_t)n;
	return true;
}

/* Wait for the child's verdict and exit, reading its output, until `timeout_ms`. */
static void probe_watch(probe_state *s, pid_t pid, int report, int output, unsigned timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	bool reaped = false, output_open = true;
	while (!reaped) {
		if (s->report_eof) {
			pid_t w = waitpid(pid, &s->status, WNOHANG);
			/* A host ignoring SIGCHLD has its children reaped for it: judge by the verdict. */
			if (w < 0 && errno == ECHILD)
				s->status = 0;
			if (w == pid || (w < 0 && errno == ECHILD)) {
				reaped = true;
				break;
			}
		}
		int64_t left = deadline - now_ms();
		if (left <= 0) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &s->status, 0) < 0 && errno == EINTR)
				;
			s->timed_out = true;
			return;
		}
		struct pollfd fds[2];
		nfds_t n = 0;
		if (!s->report_eof)
			fds[n++] = (struct pollfd){ .fd = report, .events = POLLIN };
		if (output_open)
			fds[n++] = (struct pollfd){ .fd = output, .events = POLLIN };
		/* Once the verdict is in (or its pipe closed), poll briefly to notice the exit. */
		int wait = s->report_eof ? 1 : (int)left;
		if (n == 0) {
			/* Every pipe closed: the child is exiting; a short nap until it is reaped. */
			struct timespec ts = { 0, 100000L };
			nanosleep(&ts, NULL);
			continue;
		}
		if (poll(fds, n, wait) < 0 && errno != EINTR)
			break;
		for (nfds_t i = 0; i < n; i++) {
			if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (fds[i].fd == report)
				read_report(s, report);
			else if (!read_output(s, output))
				output_open = false;
		}
	}
	/* What the plugin wrote just before it exited; a grandchild holding the pipe is not waited for. */
	while (output_open && read_output(s, output)) {
		struct pollfd pf = { .fd = output, .events = POLLIN };
		if (poll(&pf, 1, 0) <= 0)
			break;
	}
}

static const char *signal_name(int sig)
{
	switch (sig) {
	case SIGSEGV: return "SIGSEGV";
	case SIGABRT: return "SIGABRT";
	case SIGBUS: return "SIGBUS";
	case SIGILL: return "SIGILL";
	case SIGFPE: return "SIGFPE";
	case SIGKILL: return "SIGKILL";
	case SIGTERM: return "SIGTERM";
	case SIGTRAP: return "SIGTRAP";
	case SIGSYS: return "SIGSYS";
	case SIGPIPE: return "SIGPIPE";
	default: return "a signal";
	}
}

static msb_errc probe_verdict(const msb_plugin *p, const probe_state *s, unsigned timeout_ms,
			      msb_error *err)
{
	if (s->timed_out)
		return msb_error_set(err, MSB_E_IMPORT,
				     "plugin %s: refused: loading it did not finish within %u ms "
				     "(a constructor that hangs?); the probe child was killed",
				     p->file, timeout_ms);
	if (s->output_len) {
		char quoted[PROBE_QUOTE * 4 + 1];
		msb_plugin_escape(s->quote, s->output_len < PROBE_QUOTE ? s->output_len : PROBE_QUOTE,
				  quoted, sizeof quoted);
		return msb_error_set(err, MSB_E_IMPORT,
				     "plugin %s: refused: it wrote %zu bytes to stdout or stderr "
				     "while being loaded ('%s'%s): a plugin must not write to the "
				     "host's output",
				     p->file, s->output_len, quoted,
				     s->output_len > PROBE_QUOTE ? "…" : "");
	}
	if (WIFSIGNALED(s->status)) {
		int sig = WTERMSIG(s->status);
		return msb_error_set(err, MSB_E_IMPORT,
				     "plugin %s: refused: loading it killed the probe process with "
				     "signal %d (%s: %s), in a constructor or the descriptor",
				     p->file, sig, signal_name(sig), strsignal(sig));
	}
	uint32_t head[2];
	bool complete = !s->report_overflow && s->report_len >= sizeof head;
	if (complete) {
		memcpy(head, s->report, sizeof head);
		complete = head[1] <= PROBE_MESSAGE_MAX && s->report_len == sizeof head + head[1];
	}
	if (!complete && WIFEXITED(s->status) && WEXITSTATUS(s->status) == PROBE_EXITED)
		return msb_error_set(err, MSB_E_IMPORT,
				     "plugin %s: refused: loading it called exit() in the probe "
				     "process before it could be checked: a constructor that exits "
				     "would end the host",
				     p->file);
	if (!complete || !WIFEXITED(s->status) || WEXITSTATUS(s->status) != 0)
		return msb_error_set(err, MSB_E_IMPORT,
				     "plugin %s: refused: loading it ended the probe process (exit "
				     "status %d) before it could be checked: a constructor that "
				     "calls exit or closes the host's file descriptors",
				     p->file,
				     WIFEXITED(s->status) ? WEXITSTATUS(s->status) : -1);
	if (head[0] == MSB_OK)
		return MSB_OK;
	msb_errc code = head[0] < MSB_E__COUNT ? (msb_errc)head[0] : MSB_E_IMPORT;
	return msb_error_set(err, code, "%.*s", (int)head[1], s->report + sizeof head);
}

msb_errc msb_plugin_probe(msb_plugin *p, unsigned timeout_ms, msb_error *err)
{
	int report[2], output[2];
	if (pipe2(report, O_CLOEXEC) != 0)
		return msb_error_set_errno(err, MSB_E_OS, errno, "plugin %s: cannot make a pipe "
					   "to probe it", p->file);
	if (pipe2(output, O_CLOEXEC) != 0) {
		int e = errno;
		close(report[0]), close(report[1]);
		return msb_error_set_errno(err, MSB_E_OS, e, "plugin %s: cannot make a pipe to "
					   "probe it", p->file);
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(report[0]), close(report[1]), close(output[0]), close(output[1]);
		return msb_error_set_errno(err, MSB_E_OS, e, "plugin %s: cannot fork to probe it",
					   p->file);
	}
	if (pid == 0) {
		close(report[0]);
		close(output[0]);
		probe_child(p, report[1], output[1]);
	}
	close(report[1]);
	close(output[1]);
	fcntl(output[0], F_SETFL, O_NONBLOCK);
	fcntl(report[0], F_SETFL, O_NONBLOCK);
	probe_state s = { 0 };
	probe_watch(&s, pid, report[0], output[0], timeout_ms);
	close(report[0]);
	close(output[0]);
	msb_errc rc = probe_verdict(p, &s, timeout_ms, err);
	free(s.report);
	return rc;
}
