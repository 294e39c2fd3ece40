/*
 * egress_forward.c — the guest half of `egress: allowlist` (msb/egress.h): msb-agent's
 * forwarder, inside the sandbox's loopback-only network.
 *
 * It listens on one loopback address per allowed name (127.0.1.1 for the first, …) on each
 * allowed port, and on 127.0.0.1:MSB_EGRESS_PROXY_PORT for proxy-aware tools, and hands
 * every accepted connection to the host's proxy over the unix socket --egress-socket with a
 * hello naming which listener took it — the name is chosen by the address that was dialled,
 * never read from the guest's bytes. It decides nothing: anything inside can speak to the
 * socket directly, so the host treats every hello as untrusted. Its listeners are bound
 * before the agent drops privileges (ports 80 and 443 are below 1024); the loop itself runs
 * in a child with the agent's uid, dying with the agent.
 *
 * Three transports to the host: the guest's TCP socket itself, passed as SCM_RIGHTS (same
 * kernel: process, bwrap); with --egress-transport relay, a unix connection per guest
 * connection that the forwarder copies bytes over (gVisor, egress_relay.c); with mux, every
 * connection over one virtio-serial port whose name --egress-socket gives (a microVM,
 * egress_mux.h; the host's end opens the proxy connections).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <msb/egress.h>

#include "agent_internal.h"

static int listen_tcp(const char *address, unsigned port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, address, &sa.sin_addr) != 1)
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 128) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* A connection to the host proxy's socket; -1 when there is none. */
static int host_connect(const char *socket_path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", socket_path);
	int u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (u >= 0 && connect(u, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(u);
		return -1;
	}
	return u;
}

void fwd_refuse(int guest)
{
	struct linger lg = { 1, 0 };
	setsockopt(guest, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	close(guest);
}

/* Hand `guest` to the host with its hello; the guest's socket is reset when that fails. */
static void hand_over(const char *socket_path, const fwd_listener *l, int guest)
{
	int u = host_connect(socket_path);
	msb_egress_hello h = { MSB_EGRESS_MAGIC, l->kind, l->port, l->index };
	char cbuf[CMSG_SPACE(sizeof(int))];
	memset(cbuf, 0, sizeof cbuf);
	struct iovec iov = { &h, sizeof h };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof cbuf };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &guest, sizeof guest);
	bool sent = u >= 0 && sendmsg(u, &m, MSG_NOSIGNAL) == (ssize_t)sizeof h;
	if (u >= 0)
		close(u);
	if (!sent)
		fwd_refuse(guest);
	else
		close(guest);
}

/* Relay transport: the hello alone, then the unix connection is the guest's stream. */
static void relay_over(const char *socket_path, const fwd_listener *l, int guest)
{
	int u = host_connect(socket_path);
	msb_egress_hello h = { MSB_EGRESS_MAGIC, l->kind, l->port, l->index };
	if (u < 0 || send(u, &h, sizeof h, MSG_NOSIGNAL) != (ssize_t)sizeof h ||
	    !fwd_relay_add(guest, u)) {
		if (u >= 0)
			close(u);
		fwd_refuse(guest);
	}
}

static void forward_loop(const char *socket_path, bool relay, fwd_listener *ls, size_t n)
{
	size_t total = n + (relay ? 2 * FWD_RELAY_MAX : 0);
	struct pollfd *fds = calloc(total, sizeof *fds);
	if (!fds)
		_exit(1);
	if (relay)
		fwd_relay_init();
	for (size_t i = 0; i < n; i++)
		fds[i] = (struct pollfd){ ls[i].fd, POLLIN, 0 };
	for (;;) {
		if (relay)
			fwd_relay_fill(fds + n);
		if (poll(fds, total, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if (relay)
			fwd_relay_run(fds + n);
		for (size_t i = 0; i < n; i++) {
			if (!fds[i].revents)
				continue;
			int c = accept4(ls[i].fd, NULL, NULL, SOCK_CLOEXEC | (relay ? SOCK_NONBLOCK : 0));
			if (c >= 0 && relay)
				relay_over(socket_path, &ls[i], c);
			else if (c >= 0)
				hand_over(socket_path, &ls[i], c);
		}
	}
}

int agent_egress_start(const char *socket_path, agent_egress_transport transport, char **names,
		       size_t n_names, const unsigned *ports, size_t n_ports,
		       void (*drop)(const void *), const void *drop_arg)
{
	if (transport == AGENT_EGRESS_MUX)
		fwd_vm_prepare(names, n_names);
	size_t n = n_names * n_ports + 1, k = 0;
	fwd_listener *ls = calloc(n, sizeof *ls);
	if (!ls)
		return -1;
	ls[k].fd = listen_tcp("127.0.0.1", MSB_EGRESS_PROXY_PORT);
	ls[k].kind = MSB_EGRESS_PROXY;
	ls[k].port = MSB_EGRESS_PROXY_PORT;
	if (ls[k].fd < 0) {
		fprintf(stderr, "msb-agent: egress: cannot listen on 127.0.0.1:%d: %s\n",
			MSB_EGRESS_PROXY_PORT, strerror(errno));
		free(ls);
		return -1;
	}
	k++;
	for (size_t i = 0; i < n_names; i++)
		for (size_t j = 0; j < n_ports; j++, k++) {
			char addr[16];
			msb_egress_guest_address(i, addr);
			ls[k] = (fwd_listener){ listen_tcp(addr, ports[j]), MSB_EGRESS_NAMED,
						(uint16_t)ports[j], (uint32_t)i };
			if (ls[k].fd < 0) {
				fprintf(stderr, "msb-agent: egress: cannot listen on %s:%u for %s: %s\n",
					addr, ports[j], names[i], strerror(errno));
				for (size_t c = 0; c < k; c++)
					close(ls[c].fd);
				free(ls);
				return -1;
			}
		}
	pid_t pid = fork();
	if (pid < 0) {
		for (size_t c = 0; c < k; c++)
			close(ls[c].fd);
		free(ls);
		return -1;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != agent.supervisor)
			_exit(0);
		signal(SIGTERM, SIG_DFL);
		drop(drop_arg);
		if (transport == AGENT_EGRESS_MUX)
			fwd_mux_loop(socket_path, ls, k);
		else
			forward_loop(socket_path, transport == AGENT_EGRESS_RELAY, ls, k);
		_exit(0);
	}
	for (size_t c = 0; c < k; c++)
		close(ls[c].fd);
	free(ls);
	return 0;
}
