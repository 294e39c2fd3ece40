/*
 * egress_relay.c — the forwarder's byte relay (--egress-transport relay), for a boundary
 * whose guest sockets are not host descriptors: gVisor's netstack lives in the Sentry, so
 * a guest TCP socket cannot be handed to the host's proxy as SCM_RIGHTS. Each accepted
 * connection gets a unix connection of its own to the proxy's socket, its hello first
 * without a descriptor (the proxy then treats that connection as the guest's stream,
 * msb/egress.h), and the forwarder copies bytes both ways.
 *
 * Bounded: at most FWD_RELAY_MAX connections at once (one more is reset at once, the
 * proxy's own egress_max_connections is lower by default), a fixed buffer per direction,
 * no reading from a side whose buffer is full. A unix connection that ends before the
 * host sent one byte is the proxy's refusal (a unix socket carries no reset): the guest
 * then gets a reset, as it would with its socket handed over.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_internal.h"

/* Each copy through gVisor's Sentry costs a trip of its own: 128 KiB buffers relayed 107 MB/s
 * here, 512 KiB ones more (doc/performance.md). Allocated per connection as it opens. */
#define FWD_BUF (512 * 1024)

typedef struct fwd_pair {
	int fd[2];          /* 0 the guest's TCP connection, 1 the unix one to the host */
	char *buf[2];       /* buf[i]: read from fd[i], to be written to fd[1 - i] */
	size_t len[2], off[2];
	bool eof[2];        /* fd[i] said end of stream */
	bool host_spoke;    /* a byte came from the host */
} fwd_pair;

static fwd_pair pairs[FWD_RELAY_MAX];

static void reset_close(int fd)
{
	struct linger lg = { 1, 0 };
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	close(fd);
}

static void pair_end(fwd_pair *p, bool reset)
{
	if (reset)
		reset_close(p->fd[0]);
	else
		close(p->fd[0]);
	close(p->fd[1]);
	free(p->buf[0]);
	free(p->buf[1]);
	memset(p, 0, sizeof *p);
	p->fd[0] = p->fd[1] = -1;
}

void fwd_relay_init(void)
{
	for (size_t i = 0; i < FWD_RELAY_MAX; i++)
		pairs[i].fd[0] = pairs[i].fd[1] = -1;
}

bool fwd_relay_add(int guest, int host)
{
	for (size_t i = 0; i < FWD_RELAY_MAX; i++) {
		fwd_pair *p = &pairs[i];
		if (p->fd[0] >= 0)
			continue;
		p->buf[0] = malloc(FWD_BUF);
		p->buf[1] = malloc(FWD_BUF);
		if (!p->buf[0] || !p->buf[1]) {
			free(p->buf[0]);
			free(p->buf[1]);
			p->buf[0] = p->buf[1] = NULL;
			return false;
		}
		p->fd[0] = guest;
		p->fd[1] = host;
		return true;
	}
	return false;
}

void fwd_relay_fill(struct pollfd *fds)
{
	for (size_t i = 0; i < FWD_RELAY_MAX; i++) {
		const fwd_pair *p = &pairs[i];
		for (int s = 0; s < 2; s++) {
			short ev = 0;
			if (p->fd[s] >= 0 && !p->eof[s] && p->len[s] < FWD_BUF)
				ev |= POLLIN;
			if (p->fd[s] >= 0 && p->len[1 - s] > p->off[1 - s])
				ev |= POLLOUT;
			/* A side that ended with nothing left to send it waits no more: its
			 * POLLHUP alone would wake the loop over and over. */
			int fd = ev || !p->eof[s] ? p->fd[s] : -1;
			fds[2 * i + (size_t)s] = (struct pollfd){ fd, ev, 0 };
		}
	}
}

/* Move what is readable on side `s` into its buffer and on towards the other side. */
static bool pump(fwd_pair *p, int s, short rev)
{
	if ((rev & (POLLIN | POLLHUP | POLLERR)) && !p->eof[s] && p->len[s] < FWD_BUF) {
		ssize_t n = recv(p->fd[s], p->buf[s] + p->len[s], FWD_BUF - p->len[s], MSG_DONTWAIT);
		if (n > 0) {
			p->len[s] += (size_t)n;
			if (s == 1)
				p->host_spoke = true;
		} else if (n == 0) {
			p->eof[s] = true;
		} else if (errno != EAGAIN && errno != EINTR) {
			return false;
		}
	}
	int to = p->fd[1 - s];
	if (p->len[s] > p->off[s]) {
		ssize_t n = send(to, p->buf[s] + p->off[s], p->len[s] - p->off[s],
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0)
			p->off[s] += (size_t)n;
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			return false;
		if (p->off[s] == p->len[s])
			p->off[s] = p->len[s] = 0;
	}
	/* Not for a host that ended without a word: that is a refusal, the guest gets a
	 * reset (fwd_relay_run), never a FIN that might reach it first. */
	if (p->eof[s] && p->len[s] == 0 && (s == 0 || p->host_spoke))
		shutdown(to, SHUT_WR);
	return true;
}

void fwd_relay_run(const struct pollfd *fds)
{
	for (size_t i = 0; i < FWD_RELAY_MAX; i++) {
		fwd_pair *p = &pairs[i];
		short rg = fds[2 * i].revents, rh = fds[2 * i + 1].revents;
		if (p->fd[0] < 0 || !(rg | rh))
			continue;
		bool ok = pump(p, 0, rg) && pump(p, 1, rh);
		/* The host ended without a word: its refusal, which the guest sees as a reset. */
		if (ok && p->eof[1] && !p->host_spoke) {
			pair_end(p, true);
			continue;
		}
		if (!ok)
			pair_end(p, true);
		else if (p->eof[0] && p->eof[1] && !p->len[0] && !p->len[1])
			pair_end(p, false);
	}
}
