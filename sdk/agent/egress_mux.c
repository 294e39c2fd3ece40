/*
 * egress_mux.c — the engine of egress_mux.h: many connections over one stream, both ends.
 *
 * One pass of the loop: read the stream and act on every whole frame; queue what each
 * connection owes its peer (OPEN, ACK, SHUT, CLOSE) as far as the stream's buffer has
 * room; read each connection's socket into DATA frames while its credit and the buffer
 * allow; write buffered bytes out to the sockets and the stream. Nothing blocks: a stream
 * the peer does not read fills its buffer and the sockets are simply not read meanwhile.
 */
#include "egress_mux.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { MUX_OPEN = 1, MUX_DATA, MUX_SHUT, MUX_CLOSE, MUX_ACK };

typedef struct mux_hdr {
	uint32_t id, type, len;
} mux_hdr;

#define HDR ((size_t)sizeof(mux_hdr))
/* DATA is produced only below this much queued; control frames use the rest. */
#define OUT_DATA_LIMIT (256 * 1024)
#define OUT_CAP (OUT_DATA_LIMIT + HDR + EG_MUX_CHUNK + EG_MUX_MAX * 4 * (HDR + 16))

typedef struct mux_conn {
	bool used;
	uint32_t id;
	int fd;
	msb_egress_hello hello;
	bool need_open;   /* guest: OPEN not queued yet */
	char *in;         /* from the peer, for fd (EG_MUX_WINDOW) */
	size_t in_len, in_off;
	size_t unacked;   /* DATA sent the peer has not acknowledged */
	size_t to_ack;    /* bytes written to fd not yet acknowledged */
	bool rd_eof;      /* fd said end of stream */
	bool shut_sent;
	bool peer_shut;
	bool wr_shut;     /* fd shut for writing */
	bool need_close;  /* a reset to queue, then the slot goes */
	bool spoke;       /* a byte came from fd */
} mux_conn;

struct eg_mux {
	int stream;
	eg_mux_open_fn open;
	void *ctx;
	uint32_t next_id;
	mux_conn c[EG_MUX_MAX];
	char *out;
	size_t out_len;
	char ibuf[HDR + EG_MUX_CHUNK];
	size_t ilen;
};

static void reset_fd(int fd)
{
	struct linger lg = { 1, 0 };
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	close(fd);
}

static void conn_free(mux_conn *c, bool reset)
{
	if (c->fd >= 0) {
		if (reset)
			reset_fd(c->fd);
		else
			close(c->fd);
	}
	free(c->in);
	memset(c, 0, sizeof *c);
	c->fd = -1;
}

static mux_conn *find(eg_mux *m, uint32_t id)
{
	for (size_t i = 0; i < EG_MUX_MAX; i++)
		if (m->c[i].used && m->c[i].id == id)
			return &m->c[i];
	return NULL;
}

static mux_conn *slot(eg_mux *m, int fd, uint32_t id)
{
	for (size_t i = 0; i < EG_MUX_MAX; i++) {
		mux_conn *c = &m->c[i];
		if (c->used)
			continue;
		if (!(c->in = malloc(EG_MUX_WINDOW)))
			return NULL;
		c->used = true;
		c->fd = fd;
		c->id = id;
		return c;
	}
	return NULL;
}

static bool room(const eg_mux *m, size_t payload)
{
	return m->out_len + HDR + payload <= OUT_CAP;
}

static void queue(eg_mux *m, uint32_t id, uint32_t type, const void *data, size_t len)
{
	mux_hdr h = { id, type, (uint32_t)len };
	memcpy(m->out + m->out_len, &h, HDR);
	if (len)
		memcpy(m->out + m->out_len + HDR, data, len);
	m->out_len += HDR + len;
}

static void owe(eg_mux *m, mux_conn *c);

eg_mux *eg_mux_new(int stream, eg_mux_open_fn open, void *ctx)
{
	eg_mux *m = calloc(1, sizeof *m);
	if (m && !(m->out = malloc(OUT_CAP))) {
		free(m);
		m = NULL;
	}
	if (!m)
		return NULL;
	m->stream = stream;
	m->open = open;
	m->ctx = ctx;
	m->next_id = 1;
	for (size_t i = 0; i < EG_MUX_MAX; i++)
		m->c[i].fd = -1;
	return m;
}

void eg_mux_free(eg_mux *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < EG_MUX_MAX; i++)
		if (m->c[i].used)
			conn_free(&m->c[i], true);
	free(m->out);
	free(m);
}

bool eg_mux_add(eg_mux *m, int fd, const msb_egress_hello *hello)
{
	mux_conn *c = slot(m, fd, m->next_id);
	if (!c)
		return false;
	m->next_id = m->next_id + 1 ? m->next_id + 1 : 1;
	c->hello = *hello;
	c->need_open = true;
	/* Queued now: nothing on the socket wakes the loop before its OPEN has gone out. */
	owe(m, c);
	return true;
}

/* The host's side of an OPEN: its own connection to the proxy, or a CLOSE back. */
static void on_open(eg_mux *m, uint32_t id, const char *payload, size_t len)
{
	msb_egress_hello h;
	int fd = -1;
	if (m->open && len == sizeof h && !find(m, id)) {
		memcpy(&h, payload, sizeof h);
		fd = m->open(m->ctx, &h);
	}
	mux_conn *c = fd >= 0 ? slot(m, fd, id) : NULL;
	if (!c) {
		if (fd >= 0)
			reset_fd(fd);
		if (room(m, 0))
			queue(m, id, MUX_CLOSE, NULL, 0);
	}
}

/* One whole frame from the peer; false when it cannot be from a well-behaved peer. */
static bool on_frame(eg_mux *m, const mux_hdr *h, const char *payload)
{
	if (h->type == MUX_OPEN) {
		on_open(m, h->id, payload, h->len);
		return true;
	}
	mux_conn *c = find(m, h->id);
	if (!c || c->need_close)
		return true; /* gone here already; the peer hears (or heard) our CLOSE */
	switch (h->type) {
	case MUX_DATA:
		if (c->peer_shut || c->in_len + h->len > EG_MUX_WINDOW) {
			c->need_close = true; /* over its credit: reset, the stream goes on */
			return true;
		}
		memcpy(c->in + c->in_len, payload, h->len);
		c->in_len += h->len;
		return true;
	case MUX_SHUT:
		c->peer_shut = true;
		return true;
	case MUX_CLOSE:
		conn_free(c, true);
		return true;
	case MUX_ACK: {
		uint32_t n = 0;
		if (h->len != sizeof n)
			return false;
		memcpy(&n, payload, sizeof n);
		c->unacked -= n < c->unacked ? n : c->unacked;
		return true;
	}
	}
	return false;
}

/* Read the stream and act on every whole frame; false when it ended or went wrong. */
static bool read_stream(eg_mux *m)
{
	ssize_t n = read(m->stream, m->ibuf + m->ilen, sizeof m->ibuf - m->ilen);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return false;
	if (n > 0)
		m->ilen += (size_t)n;
	size_t at = 0;
	while (m->ilen - at >= HDR) {
		mux_hdr h;
		memcpy(&h, m->ibuf + at, HDR);
		if (h.len > EG_MUX_CHUNK)
			return false;
		if (m->ilen - at < HDR + h.len)
			break;
		if (!on_frame(m, &h, m->ibuf + at + HDR))
			return false;
		at += HDR + h.len;
	}
	memmove(m->ibuf, m->ibuf + at, m->ilen - at);
	m->ilen -= at;
	return true;
}

/* What connection `c` owes its peer besides data, as far as there is room. */
static void owe(eg_mux *m, mux_conn *c)
{
	if (c->need_close) {
		if (room(m, 0)) {
			queue(m, c->id, MUX_CLOSE, NULL, 0);
			conn_free(c, true);
		}
		return;
	}
	if (c->need_open && room(m, sizeof c->hello)) {
		queue(m, c->id, MUX_OPEN, &c->hello, sizeof c->hello);
		c->need_open = false;
	}
	bool drained = c->in_off == c->in_len;
	if (c->to_ack && (c->to_ack >= EG_MUX_WINDOW / 4 || drained) && room(m, sizeof(uint32_t))) {
		uint32_t n = (uint32_t)c->to_ack;
		queue(m, c->id, MUX_ACK, &n, sizeof n);
		c->to_ack = 0;
	}
	if (c->rd_eof && !c->shut_sent && room(m, 0)) {
		queue(m, c->id, MUX_SHUT, NULL, 0);
		c->shut_sent = true;
	}
	if (c->peer_shut && drained && !c->wr_shut) {
		shutdown(c->fd, SHUT_WR);
		c->wr_shut = true;
	}
	if (c->shut_sent && c->wr_shut && !c->to_ack)
		conn_free(c, false);
}

/* Socket `c` to DATA frames, and the peer's bytes on to the socket. */
static void pump(eg_mux *m, mux_conn *c, short rev)
{
	if ((rev & (POLLIN | POLLHUP | POLLERR)) && !c->rd_eof && !c->need_open &&
	    c->unacked < EG_MUX_WINDOW && m->out_len + HDR + EG_MUX_CHUNK <= OUT_DATA_LIMIT) {
		size_t want = EG_MUX_WINDOW - c->unacked;
		want = want < EG_MUX_CHUNK ? want : EG_MUX_CHUNK;
		ssize_t n = recv(c->fd, m->out + m->out_len + HDR, want, MSG_DONTWAIT);
		if (n > 0) {
			mux_hdr h = { c->id, MUX_DATA, (uint32_t)n };
			memcpy(m->out + m->out_len, &h, HDR);
			m->out_len += HDR + (size_t)n;
			c->unacked += (size_t)n;
			c->spoke = true;
		} else if (n == 0) {
			c->rd_eof = true;
			/* The host's proxy ended without a word: its refusal (a unix socket
			 * carries no reset), which the guest must see as one. */
			if (m->open && !c->spoke)
				c->need_close = true;
		} else if (errno != EAGAIN && errno != EINTR) {
			c->need_close = true;
		}
	}
	if (c->in_off < c->in_len && !c->need_close) {
		ssize_t n = send(c->fd, c->in + c->in_off, c->in_len - c->in_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0) {
			c->in_off += (size_t)n;
			c->to_ack += (size_t)n;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			c->need_close = true;
		}
		if (c->in_off == c->in_len)
			c->in_off = c->in_len = 0;
	}
}

void eg_mux_fill(eg_mux *m, struct pollfd *fds)
{
	fds[0] = (struct pollfd){ m->stream, (short)(POLLIN | (m->out_len ? POLLOUT : 0)), 0 };
	for (size_t i = 0; i < EG_MUX_MAX; i++) {
		const mux_conn *c = &m->c[i];
		short ev = 0;
		/* One waiting to send its CLOSE waits for the stream, never for its socket. */
		bool live = c->used && !c->need_close;
		if (live && !c->rd_eof && !c->need_open && c->unacked < EG_MUX_WINDOW)
			ev |= POLLIN;
		if (live && c->in_off < c->in_len)
			ev |= POLLOUT;
		/* A connection waiting on nothing of its socket's must not wake the loop on
		 * its POLLHUP over and over. */
		fds[1 + i] = (struct pollfd){ ev ? c->fd : -1, ev, 0 };
	}
}

bool eg_mux_run(eg_mux *m, const struct pollfd *fds)
{
	if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) && !read_stream(m))
		return false;
	for (size_t i = 0; i < EG_MUX_MAX; i++)
		if (m->c[i].used && !m->c[i].need_close)
			pump(m, &m->c[i], fds[1 + i].revents);
	for (size_t i = 0; i < EG_MUX_MAX; i++)
		if (m->c[i].used)
			owe(m, &m->c[i]);
	if (m->out_len) {
		ssize_t n = write(m->stream, m->out, m->out_len);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return false;
		if (n > 0) {
			memmove(m->out, m->out + n, m->out_len - (size_t)n);
			m->out_len -= (size_t)n;
		}
	}
	return true;
}
