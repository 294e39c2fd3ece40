/*
 * peer.c — a test peer for the egress suite: a tiny HTTP responder on a loopback address
 * the kit chooses, in the host's network namespace, counting who connected. It answers
 * every request with a body carrying its token, so a guest that reached it can prove so,
 * and its count proves it even when the guest's tool lies about failing. It listens only
 * on 127.0.0.0/8: the kit never causes a packet to go anywhere else.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peer.h"

static void *serve(void *arg)
{
	conf_peer *p = arg;
	for (;;) {
		struct pollfd fds[2] = { { p->fd, POLLIN, 0 }, { p->stop[0], POLLIN, 0 } };
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (fds[1].revents)
			break;
		int c = accept4(p->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		__atomic_add_fetch(&p->connections, 1, __ATOMIC_SEQ_CST);
		char req[1024];
		struct pollfd rp = { c, POLLIN, 0 };
		if (poll(&rp, 1, 2000) > 0)
			(void)!recv(c, req, sizeof(req), 0);
		char reply[256];
		int n = snprintf(reply, sizeof(reply),
				 "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n%s\n",
				 p->token);
		(void)!send(c, reply, (size_t)n, MSG_NOSIGNAL);
		close(c);
	}
	return NULL;
}

msb_errc conf_peer_start_fd(conf_peer *p, int fd, const char *address, const char *token,
			    msb_error *err)
{
	memset(p, 0, sizeof(*p));
	p->fd = fd;
	p->stop[0] = p->stop[1] = -1;
	snprintf(p->address, sizeof(p->address), "%s", address);
	snprintf(p->token, sizeof(p->token), "%s", token);
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0 || pipe2(p->stop, O_CLOEXEC) != 0) {
		int e = errno;
		conf_peer_stop(p);
		return msb_error_set_errno(err, MSB_E_OS, e, "conformance peer: on %s", address);
	}
	p->port = ntohs(sa.sin_port);
	if (pthread_create(&p->thread, NULL, serve, p) != 0) {
		conf_peer_stop(p);
		return msb_error_set(err, MSB_E_OS, "conformance peer: could not start its thread");
	}
	p->running = true;
	return MSB_OK;
}

int conf_peer_listen(const char *address, unsigned port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, address, &sa.sin_addr) != 1)
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 16) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

msb_errc conf_peer_start(conf_peer *p, const char *address, const char *token, msb_error *err)
{
	struct in_addr a;
	memset(p, 0, sizeof(*p));
	p->fd = p->stop[0] = p->stop[1] = -1;
	if (inet_pton(AF_INET, address, &a) != 1 || (ntohl(a.s_addr) >> 24) != 127)
		return msb_error_set(err, MSB_E_VALUE, "conformance peer: %s is not a loopback address", address);
	int fd = conf_peer_listen(address, 0);
	if (fd < 0)
		return msb_error_set_errno(err, MSB_E_OS, errno, "conformance peer: listening on %s", address);
	return conf_peer_start_fd(p, fd, address, token, err);
}

unsigned conf_peer_connections(conf_peer *p)
{
	return __atomic_load_n(&p->connections, __ATOMIC_SEQ_CST);
}

void conf_peer_stop(conf_peer *p)
{
	if (p->running) {
		(void)!write(p->stop[1], "x", 1);
		pthread_join(p->thread, NULL);
		p->running = false;
	}
	if (p->fd >= 0)
		close(p->fd);
	if (p->stop[0] >= 0)
		close(p->stop[0]);
	if (p->stop[1] >= 0)
		close(p->stop[1]);
	p->fd = p->stop[0] = p->stop[1] = -1;
}
