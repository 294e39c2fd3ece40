/*
 * plugins/qemu/relay_spawn.c — the host's side of the relay (see relay.h): its listening
 * socket, starting the msb-qemu-relay program as a daemon of its own, and waiting for its
 * word on the agent's HELLO.
 *
 * Why a program and not a fork that runs the relay in place: the relay lives as long as its
 * VM, and a fork that stays alive keeps a copy of every page the host writes afterwards
 * (copy on write). A host that rewrites 64 MiB of its heap would leave each VM's relay
 * holding 64 MiB (tested: relay_does_not_pin_host_memory). The fork only places the fds,
 * then execs. There is no in-process fallback: a relay that cannot be executed is a start
 * error naming the program, since running it in the fork would bring the pinning back
 * without anyone noticing.
 */
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msb/agent.h>
#include <msb/spawn.h>

/* What the intermediate process reports: the relay's pid, or the errno that stopped it. */
typedef struct spawn_report {
	pid_t pid;
	int error;
} spawn_report;

/* Move `fd` to `to` in a child about to close everything else. */
static void place_fd(int fd, int to)
{
	if (fd != to)
		dup2(fd, to);
}

static void report_errno(int fd, int e)
{
	ssize_t w = write(fd, &e, sizeof e);
	(void)w;
}

/* What the spawned processes need, prepared before the first one is made. */
typedef struct relay_args {
	const char *program;
	int listen_fd, ready, rep;
	const int *port_fds;
	size_t n_ports;
	int exec_fd;       /* the relay's: hears the exec's errno (close-on-exec) */
	const char *egress; /* the egress mode's proxy socket (listen_fd is then its stream) */
	char *relay_stack; /* the relay's stack while it shares memory, until it execs */
} relay_args;

/*
 * The relay's process: place the fds where msb-qemu-relay expects them (relay.h), then exec
 * it, every signal still blocked as msb_spawn_shared left them (the program unblocks its
 * own), so no handler of the host's runs on memory it shares. `exec_fd` hears the errno when
 * the exec fails. System calls only. Never returns.
 */
static _Noreturn void exec_relay(const char *program, int listen_fd, const int *port_fds,
				 size_t n_ports, int ready, int exec_fd, const char *egress)
{
	/* Everything moves above the slots it lands in, then into 3, 4, 5…. */
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	int l = fcntl(listen_fd, F_DUPFD_CLOEXEC, 64), r = fcntl(ready, F_DUPFD_CLOEXEC, 64);
	int x = fcntl(exec_fd, F_DUPFD_CLOEXEC, 64);
	int moved[MSB_QEMU_RELAY_MAX_PORTS];
	bool ok = devnull >= 0 && l >= 0 && r >= 0 && x >= 0;
	for (size_t i = 0; ok && i < n_ports; i++)
		ok = (moved[i] = fcntl(port_fds[i], F_DUPFD_CLOEXEC, 64)) >= 0;
	if (!ok) {
		report_errno(exec_fd, errno);
		_exit(127);
	}
	place_fd(devnull, 0);
	place_fd(devnull, 1);
	place_fd(devnull, 2);
	place_fd(l, MSB_QEMU_RELAY_LISTEN_FD);
	place_fd(r, MSB_QEMU_RELAY_READY_FD);
	for (size_t i = 0; i < n_ports; i++)
		place_fd(moved[i], MSB_QEMU_RELAY_PORT_FD + (int)i);
	/* The exec's report channel goes right after the ports, and with the exec. */
	int report = MSB_QEMU_RELAY_PORT_FD + (int)n_ports;
	place_fd(x, report);
	fcntl(report, F_SETFD, FD_CLOEXEC);
	close_range((unsigned)report + 1, ~0u, 0);
	char count[2] = { (char)('0' + n_ports), '\0' };
	char *const frames[] = { (char *)program, count, NULL };
	char *const egress_mode[] = { (char *)program, "egress", (char *)egress, NULL };
	char *const *argv = egress ? egress_mode : frames;
	char *const envp[] = { NULL };
	execve(program, argv, envp);
	report_errno(report, errno);
	_exit(127);
}

static int relay_child(void *arg)
{
	const relay_args *a = arg;
	exec_relay(a->program, a->listen_fd, a->port_fds, a->n_ports, a->ready, a->exec_fd,
		   a->egress);
}

/*
 * The intermediate: out of the host's session, the relay started, its pid or the errno that
 * stopped it reported on `rep`, then gone, so the relay is nobody's child in the host. It
 * and the relay share the host's memory until the relay execs (msb_spawn_shared): neither
 * copies a possibly large host.
 */
static int intermediate(void *arg)
{
	relay_args *a = arg;
	setsid();
	spawn_report out = { .pid = -1 };
	int ex[2];
	if (pipe2(ex, O_CLOEXEC) < 0) {
		out.error = errno;
	} else {
		a->exec_fd = ex[1];
		out.pid = msb_spawn_shared(relay_child, a, a->relay_stack, MSB_SPAWN_STACK_MIN);
		if (out.pid < 0)
			out.error = errno;
		close(ex[1]);
	}
	if (out.pid > 0) {
		/* End of file: the exec went through. */
		ssize_t got;
		while ((got = read(ex[0], &out.error, sizeof out.error)) < 0 && errno == EINTR)
			;
		if (got != (ssize_t)sizeof out.error)
			out.error = 0;
		if (out.error) {
			waitpid(out.pid, NULL, 0);
			out.pid = -1;
		}
	}
	ssize_t w = write(a->rep, &out, sizeof out);
	(void)w;
	_exit(0);
}

static pid_t spawn(relay_args *a);

pid_t msb_qemu_relay_spawn(const char *program, int listen_fd, const int *port_fds,
			   size_t n_ports, int ready)
{
	if (!program || n_ports == 0 || n_ports > MSB_QEMU_RELAY_MAX_PORTS) {
		errno = EINVAL;
		return -1;
	}
	relay_args a = { .program = program, .listen_fd = listen_fd, .ready = ready,
			 .port_fds = port_fds, .n_ports = n_ports };
	return spawn(&a);
}

pid_t msb_qemu_egress_spawn(const char *program, int stream, const char *proxy_socket)
{
	if (!program || !proxy_socket) {
		errno = EINVAL;
		return -1;
	}
	/* No ready word: the stream doubles as fd 4, which the egress mode closes. */
	relay_args a = { .program = program, .listen_fd = stream, .ready = stream,
			 .egress = proxy_socket };
	return spawn(&a);
}

static pid_t spawn(relay_args *a)
{
	int rep[2];
	if (pipe2(rep, O_CLOEXEC) < 0)
		return -1;
	char *stacks = malloc(2 * MSB_SPAWN_STACK_MIN);
	a->rep = rep[1];
	a->relay_stack = stacks ? stacks + MSB_SPAWN_STACK_MIN : NULL;
	pid_t mid = msb_spawn_shared(intermediate, a, stacks, stacks ? MSB_SPAWN_STACK_MIN : 0);
	int e = errno;
	free(stacks);
	close(rep[1]);
	if (mid < 0) {
		close(rep[0]);
		errno = e;
		return -1;
	}
	spawn_report in = { .pid = -1, .error = ECHILD };
	ssize_t n;
	while ((n = read(rep[0], &in, sizeof in)) < 0 && errno == EINTR)
		;
	close(rep[0]);
	while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof in || in.pid <= 0) {
		errno = n == (ssize_t)sizeof in && in.error ? in.error : ECHILD;
		return -1;
	}
	return in.pid;
}

/* Wait up to `timeout` s for one word of the relay's: 1 when it is `want`, 0 another or the
 * stream closed, -1 timed out. */
static int await_word(int ready, double timeout, char want)
{
	int64_t deadline = msb_agent_now_ms() + (int64_t)(timeout * 1000.0);
	for (;;) {
		int64_t left = deadline - msb_agent_now_ms();
		if (left <= 0)
			return -1;
		struct pollfd p = { .fd = ready, .events = POLLIN };
		int n = poll(&p, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return -1;
		char c = 0;
		return n > 0 && read(ready, &c, 1) == 1 && c == want ? 1 : 0;
	}
}

int msb_qemu_relay_await(int ready, double timeout)
{
	return await_word(ready, timeout, 'R');
}

int msb_qemu_relay_await_all(int ready, double timeout)
{
	return await_word(ready, timeout, 'A');
}
