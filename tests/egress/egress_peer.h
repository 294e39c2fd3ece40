/*
 * egress_peer.h — test peers for the egress allowlist: a network namespace this test makes
 * (unique name), a veth pair into it, and a server in it on two link-local addresses
 * (169.254.A.2 and .3, port 80 over TCP; ports 53 and 9999 over UDP) that records every
 * connection and datagram it gets. Nothing here sends a packet anywhere but into that
 * namespace; the host side of the veth holds 169.254.A.1/29.
 */
#ifndef MSB_TEST_EGRESS_PEER_H
#define MSB_TEST_EGRESS_PEER_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct egress_peer {
	char ns[32], host_if[24], ns_if[24];
	char host_addr[40], listed[40], other[40], subnet[48];
	pid_t server;
	int records;          /* the server writes one line per connection/datagram */
	char log[65536];
	size_t log_len;
	bool made;
} egress_peer;

static inline int egress_peer_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int egress_peer_sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return system(cmd);
}

static inline int peer_listen(int type, const char *addr, unsigned port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	inet_pton(AF_INET, addr, &sa.sin_addr);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 64) < 0))
		return -1;
	return fd;
}

/* The server, in the namespace: answers each TCP request with "token-<its address>". */
static inline void peer_serve(egress_peer *p, int out)
{
	const char *addrs[2] = { p->listed, p->other };
	struct pollfd fds[6];
	const char *what[6];
	int n = 0;
	for (int i = 0; i < 2; i++) {
		fds[n] = (struct pollfd){ peer_listen(SOCK_STREAM, addrs[i], 80), POLLIN, 0 };
		what[n++] = addrs[i];
		fds[n] = (struct pollfd){ peer_listen(SOCK_DGRAM, addrs[i], 53), POLLIN, 0 };
		what[n++] = addrs[i];
		fds[n] = (struct pollfd){ peer_listen(SOCK_DGRAM, addrs[i], 9999), POLLIN, 0 };
		what[n++] = addrs[i];
	}
	for (int i = 0; i < n; i++)
		if (fds[i].fd < 0)
			_exit(3);
	(void)!write(out, "ready\n", 6);
	for (;;) {
		if (poll(fds, (nfds_t)n, -1) < 0)
			continue;
		for (int i = 0; i < n; i++) {
			if (!fds[i].revents)
				continue;
			char line[400], req[300];
			if (i % 3) {
				ssize_t k = recv(fds[i].fd, req, sizeof req - 1, MSG_DONTWAIT);
				snprintf(line, sizeof line, "udp %s %zd\n", what[i], k);
				(void)!write(out, line, strlen(line));
				continue;
			}
			int c = accept4(fds[i].fd, NULL, NULL, SOCK_CLOEXEC);
			if (c < 0)
				continue;
			struct pollfd rp = { c, POLLIN, 0 };
			ssize_t k = poll(&rp, 1, 3000) > 0 ? recv(c, req, sizeof req - 1, 0) : 0;
			req[k > 0 ? k : 0] = '\0';
			for (char *q = req; *q; q++)
				if (*q == '\r' || *q == '\n')
					*q = ' ';
			snprintf(line, sizeof line, "tcp %s %s\n", what[i], req);
			(void)!write(out, line, strlen(line));
			char reply[128];
			int m = snprintf(reply, sizeof reply, "HTTP/1.0 200 OK\r\nConnection: close\r\n\r\n"
					 "token-%s\n", what[i]);
			(void)!send(c, reply, (size_t)m, MSG_NOSIGNAL);
			close(c);
		}
	}
}

/* Make the namespace, the veth and the server; -1 with a reason printed when it cannot. */
static inline int egress_peer_start(egress_peer *p)
{
	memset(p, 0, sizeof *p);
	p->records = -1;
	long pid = (long)getpid();
	unsigned a = 1 + (unsigned)(pid % 200), b = 8 * (unsigned)((pid / 200) % 30);
	if (a == 169)
		a = 170;
	snprintf(p->ns, sizeof p->ns, "msbeg%ld", pid);
	snprintf(p->host_if, sizeof p->host_if, "mseh%ld", pid % 10000000);
	snprintf(p->ns_if, sizeof p->ns_if, "msen%ld", pid % 10000000);
	snprintf(p->host_addr, sizeof p->host_addr, "169.254.%u.%u", a, b + 1);
	snprintf(p->listed, sizeof p->listed, "169.254.%u.%u", a, b + 2);
	snprintf(p->other, sizeof p->other, "169.254.%u.%u", a, b + 3);
	snprintf(p->subnet, sizeof p->subnet, "169.254.%u.%u/29", a, b);
	if (egress_peer_sh("ip netns add %s 2>/dev/null", p->ns) != 0) {
		printf("cannot make a network namespace (ip netns add): not root, or no iproute2\n");
		return -1;
	}
	p->made = true;
	if (egress_peer_sh("ip link add %s type veth peer name %s && ip link set %s netns %s && "
			   "ip addr add %s/29 dev %s && ip link set %s up && "
			   "ip -n %s addr add %s/29 dev %s && ip -n %s addr add %s/29 dev %s && "
			   "ip -n %s link set %s up && ip -n %s link set lo up",
			   p->host_if, p->ns_if, p->ns_if, p->ns, p->host_addr, p->host_if, p->host_if,
			   p->ns, p->listed, p->ns_if, p->ns, p->other, p->ns_if, p->ns, p->ns_if,
			   p->ns) != 0) {
		printf("cannot wire a veth pair into %s\n", p->ns);
		return -1;
	}
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -1;
	char path[64];
	snprintf(path, sizeof path, "/run/netns/%s", p->ns);
	p->server = fork();
	if (p->server == 0) {
		int nsfd = open(path, O_RDONLY | O_CLOEXEC);
		if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) < 0)
			_exit(2);
		close(pipefd[0]);
		peer_serve(p, pipefd[1]);
		_exit(0);
	}
	close(pipefd[1]);
	p->records = pipefd[0];
	char ready[8] = { 0 };
	struct pollfd rp = { p->records, POLLIN, 0 };
	if (poll(&rp, 1, 10000) <= 0 || read(p->records, ready, 6) != 6 || strncmp(ready, "ready", 5)) {
		printf("the peer server in %s did not start\n", p->ns);
		return -1;
	}
	fcntl(p->records, F_SETFL, O_NONBLOCK);
	return 0;
}

/* Everything the server recorded so far (NUL-terminated). */
static inline const char *egress_peer_log(egress_peer *p)
{
	for (ssize_t n; p->log_len + 1 < sizeof p->log &&
			(n = read(p->records, p->log + p->log_len, sizeof p->log - 1 - p->log_len)) > 0;)
		p->log_len += (size_t)n;
	p->log[p->log_len] = '\0';
	return p->log;
}

/* How many records of `kind` ("tcp"/"udp") the server made for `addr`. */
static inline unsigned egress_peer_count(egress_peer *p, const char *kind, const char *addr)
{
	char needle[64];
	snprintf(needle, sizeof needle, "%s %s ", kind, addr);
	unsigned n = 0;
	for (const char *s = egress_peer_log(p); (s = strstr(s, needle)); s++)
		n++;
	return n;
}

static inline void egress_peer_stop(egress_peer *p)
{
	if (p->server > 0) {
		kill(p->server, SIGKILL);
		waitpid(p->server, NULL, 0);
	}
	if (p->records >= 0)
		close(p->records);
	if (p->made)
		egress_peer_sh("ip netns del %s 2>/dev/null; ip link del %s 2>/dev/null", p->ns,
			       p->host_if);
	p->made = false;
	p->server = 0;
	p->records = -1;
}

#endif
