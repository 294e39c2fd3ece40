/*
 * proxy.c — the host side of the egress enforcer: one thread per backend instance, one
 * listening unix socket per sandbox, every connection decided, reported, then relayed
 * (msb/egress.h).
 *
 * One poll loop and no thread per connection, so a guest that floods the socket costs the
 * host a bounded table (egress_max_connections per sandbox, every state with a deadline)
 * rather than threads. The loop owns every connection; the mutex guards only the sandbox
 * list that serve/forget change from other threads, and is never held across poll().
 * Name resolution is off the loop (resolver.c: a bounded pool of threads), each waited for
 * at most egress_resolve_timeout, so one slow name stalls only its own connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <msb/egress.h>
#include <msb/unix_socket.h>

#include "egress_internal.h"

#define HELLO_MS 5000
#define CONNECT_MS 10000
#define PIPE_CAP (1024 * 1024) /* asked of each direction's pipe; the kernel may give less */

typedef struct eg_sandbox {
	char *path;
	int lfd;
	char *key_fields[4];
	msb_key key;
	char **allow;
	size_t open;
	bool gone;
	struct eg_sandbox *next;
} eg_sandbox;

typedef enum eg_state { ST_HELLO, ST_HEAD, ST_RESOLVING, ST_CONNECTING, ST_RELAY } eg_state;

/*
 * One direction of a relay: a pipe the bytes are spliced through, socket to pipe to socket,
 * never copied into this process (what keeps a bulk transfer near a direct copy).
 */
typedef struct eg_pipe {
	int r, w;
	size_t pending; /* in the pipe, not yet sent on */
	size_t cap;
} eg_pipe;

typedef struct eg_conn {
	eg_sandbox *sb;
	int ctl, guest, up;
	eg_state st;
	bool proxied, tunnel, guest_eof, up_eof, dead;
	int64_t deadline;
	uint64_t bytes;
	eg_http_head head;
	eg_pipe to_up, to_guest;
	uint64_t rid;          /* ST_RESOLVING: the resolver's request */
	char name[256];        /* ST_RESOLVING: what is being resolved, for its decision */
	unsigned port;
	struct eg_conn *next;
} eg_conn;

struct msb_egress_proxy {
	msb_egress_config cfg;
	msb_egress_report report;
	void *ctx;
	pthread_mutex_t lock;
	pthread_t thread;
	int wake[2];
	bool stop;
	eg_sandbox *sandboxes;
	eg_conn *conns;        /* the loop's alone */
	eg_resolver *resolver;
	uint64_t next_rid;
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Close with a reset, so the guest's connect or read fails at once rather than hanging. */
static void close_reset(int fd)
{
	if (fd < 0)
		return;
	struct linger lg = { 1, 0 };
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	close(fd);
}

static void sandbox_free(eg_sandbox *s)
{
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->path)
		unlink(s->path);
	free(s->path);
	for (int i = 0; i < 4; i++)
		free(s->key_fields[i]);
	for (size_t i = 0; s->allow && s->allow[i]; i++)
		free(s->allow[i]);
	free(s->allow);
	free(s);
}

static void conn_close(eg_conn *c, bool reset)
{
	if (c->guest >= 0 && c->guest != c->ctl) {
		if (reset)
			close_reset(c->guest);
		else
			close(c->guest);
	}
	if (c->ctl >= 0) {
		if (reset)
			close_reset(c->ctl);
		else
			close(c->ctl);
	}
	if (c->up >= 0)
		close(c->up);
	c->guest = c->ctl = c->up = -1;
	eg_pipe *ps[2] = { &c->to_up, &c->to_guest };
	for (int i = 0; i < 2; i++) {
		if (ps[i]->r >= 0)
			close(ps[i]->r);
		if (ps[i]->w >= 0)
			close(ps[i]->w);
		ps[i]->r = ps[i]->w = -1;
		ps[i]->pending = 0;
	}
	if (!c->dead && c->sb->open)
		c->sb->open--;
	c->dead = true;
}

static void report(msb_egress_proxy *p, eg_conn *c, const char *name, unsigned port,
		   bool allowed, const char *why)
{
	char dest[300];
	eg_printable(name, dest, sizeof dest - 8);
	size_t n = strlen(dest);
	snprintf(dest + n, sizeof dest - n, ":%u", port);
	if (p->report)
		p->report(p->ctx, &c->sb->key, dest, allowed, allowed ? NULL : why);
}

/* Refuse: report, answer a proxy request with a status line, reset a named connection. */
static void deny(msb_egress_proxy *p, eg_conn *c, const char *name, unsigned port,
		 const char *why)
{
	report(p, c, name, port, false, why);
	if (c->proxied && c->guest >= 0) {
		char msg[768], shown[260];
		eg_printable(name, shown, sizeof shown);
		int n = snprintf(msg, sizeof msg, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
				 "Connection: close\r\n\r\nmsb egress: %s:%u refused: %s\n",
				 shown, port, why);
		if (n > 0)
			(void)!send(c->guest, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1,
				    MSG_NOSIGNAL | MSG_DONTWAIT);
		conn_close(c, false);
		return;
	}
	conn_close(c, true);
}

static bool port_allowed(const msb_egress_config *cfg, unsigned port)
{
	for (size_t i = 0; i < cfg->n_ports; i++)
		if (cfg->ports[i] == port)
			return true;
	return false;
}

static void ports_text(const msb_egress_config *cfg, char *out, size_t cap)
{
	size_t n = 0;
	out[0] = '\0';
	for (size_t i = 0; i < cfg->n_ports && n < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, "%s%u", i ? ", " : "", cfg->ports[i]);
}

/* Decide (name, port) and, when allowed, start connecting upstream. */
static void decide(msb_egress_proxy *p, eg_conn *c, const char *name, unsigned port)
{
	char why[256];
	if (!msb_egress_allow_find((const char *const *)c->sb->allow, name, NULL)) {
		deny(p, c, name, port, eg_is_address(name)
			     ? "an address literal, and only names on the spec's egress_allow are allowed"
			     : "the name is not on the spec's egress_allow");
		return;
	}
	if (!port_allowed(&p->cfg, port)) {
		char ports[128];
		ports_text(&p->cfg, ports, sizeof ports);
		snprintf(why, sizeof why, "port %u is not among the allowed ports (%s)", port, ports);
		deny(p, c, name, port, why);
		return;
	}
	snprintf(c->name, sizeof c->name, "%s", name);
	c->port = port;
	c->rid = ++p->next_rid;
	if (!eg_resolver_submit(p->resolver, c->rid, name, port)) {
		deny(p, c, name, port, "the host's resolver already has every slot busy");
		return;
	}
	c->st = ST_RESOLVING;
	c->deadline = now_ms() + (int64_t)(p->cfg.resolve_timeout * 1000);
}

/* The resolver's answer for `c`: connect upstream, or refuse with its reason. */
static void resolved(msb_egress_proxy *p, eg_conn *c, const eg_resolved *a)
{
	char why[300];
	if (!a->ok) {
		deny(p, c, c->name, c->port, a->why);
		return;
	}
	c->up = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->up < 0 ||
	    (connect(c->up, (const struct sockaddr *)&a->sa, a->len) < 0 && errno != EINPROGRESS)) {
		snprintf(why, sizeof why, "the host could not connect: %s", strerror(errno));
		deny(p, c, c->name, c->port, why);
		return;
	}
	report(p, c, c->name, c->port, true, NULL);
	c->st = ST_CONNECTING;
	c->deadline = now_ms() + CONNECT_MS;
}

/* Every answer the resolver has: to its connection, when that still waits for it. */
static void take_resolved(msb_egress_proxy *p)
{
	eg_resolved a;
	while (eg_resolver_take(p->resolver, &a))
		for (eg_conn *c = p->conns; c; c = c->next)
			if (!c->dead && c->st == ST_RESOLVING && c->rid == a.id) {
				resolved(p, c, &a);
				break;
			}
}

static void on_hello(msb_egress_proxy *p, eg_conn *c)
{
	msb_egress_hello h;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &h, sizeof h };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof cbuf };
	ssize_t n = recvmsg(c->ctl, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	int fd = -1;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(int))) {
			size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			int *fds = (int *)CMSG_DATA(cm);
			for (size_t i = 0; i < k; i++) {
				if (fd < 0)
					fd = fds[i];
				else
					close(fds[i]);
			}
		}
	if (n == 0) {
		if (fd >= 0)
			close(fd);
		conn_close(c, false);
		return;
	}
	int type = 0;
	socklen_t tl = sizeof type;
	if (fd >= 0 && (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM)) {
		close(fd);
		deny(p, c, "(hello)", 0, "the descriptor passed is not a stream socket");
		return;
	}
	if (n != (ssize_t)sizeof h || (m.msg_flags & MSG_CTRUNC) || h.magic != MSB_EGRESS_MAGIC ||
	    (h.kind != MSB_EGRESS_NAMED && h.kind != MSB_EGRESS_PROXY)) {
		if (fd >= 0)
			close(fd);
		deny(p, c, "(hello)", 0, "not a forwarder's hello");
		return;
	}
	if (fd >= 0) {
		/* The guest's own socket: the unix connection has done its job. */
		close(c->ctl);
		c->ctl = -1;
		c->guest = fd;
	} else {
		c->guest = c->ctl;
	}
	set_nonblock(c->guest);
	if (h.kind == MSB_EGRESS_PROXY) {
		c->proxied = true;
		c->st = ST_HEAD;
		c->deadline = now_ms() + (int64_t)(p->cfg.idle_timeout * 1000);
		return;
	}
	size_t n_allow = 0;
	while (c->sb->allow[n_allow])
		n_allow++;
	if (h.index >= n_allow) {
		char name[32];
		snprintf(name, sizeof name, "#%u", (unsigned)h.index);
		deny(p, c, name, h.port, "no allowed name has that loopback address");
		return;
	}
	decide(p, c, c->sb->allow[h.index], h.port);
}

static void on_head(msb_egress_proxy *p, eg_conn *c)
{
	eg_http_head *hd = &c->head;
	ssize_t n = recv(c->guest, hd->raw + hd->len, sizeof hd->raw - hd->len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c, false);
		return;
	}
	hd->len += (size_t)n;
	char why[256] = "";
	int r = eg_http_parse(hd, why, sizeof why);
	if (r == 0 && hd->len < sizeof hd->raw)
		return;
	if (r <= 0) {
		deny(p, c, hd->host[0] ? hd->host : "(request)", hd->port,
		     r == 0 ? "the request head is over 8 KiB" : why);
		return;
	}
	c->tunnel = hd->connect;
	decide(p, c, hd->host, hd->port);
}

static bool pipe_open(eg_pipe *p)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
		return false;
	p->r = fds[0];
	p->w = fds[1];
	p->pending = 0;
	int got = fcntl(p->w, F_SETPIPE_SZ, PIPE_CAP);
	if (got <= 0)
		got = fcntl(p->w, F_GETPIPE_SZ);
	p->cap = got > 0 ? (size_t)got : 65536;
	return true;
}

/* Bytes the proxy itself says first (a status line, a rewritten head): into the empty pipe. */
static void pipe_put(eg_pipe *p, const void *data, size_t len)
{
	while (len) {
		ssize_t n = write(p->w, data, len);
		if (n <= 0)
			return;
		p->pending += (size_t)n;
		data = (const char *)data + n;
		len -= (size_t)n;
	}
}

static void on_connected(msb_egress_proxy *p, eg_conn *c)
{
	int e = 0;
	socklen_t el = sizeof e;
	if (getsockopt(c->up, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e) {
		if (c->proxied) {
			static const char bad[] = "HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n";
			(void)!send(c->guest, bad, sizeof bad - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		}
		conn_close(c, !c->proxied);
		return;
	}
	if (!pipe_open(&c->to_up) || !pipe_open(&c->to_guest)) {
		conn_close(c, true);
		return;
	}
	if (c->proxied && c->tunnel) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		pipe_put(&c->to_guest, ok, sizeof ok - 1);
		pipe_put(&c->to_up, c->head.raw + c->head.head_len, c->head.len - c->head.head_len);
	} else if (c->proxied) {
		/* The request in origin form, then whatever followed its head. */
		pipe_put(&c->to_up, c->head.rewritten, c->head.rewritten_len);
		pipe_put(&c->to_up, c->head.raw + c->head.head_len, c->head.len - c->head.head_len);
	}
	c->st = ST_RELAY;
	c->deadline = now_ms() + (int64_t)(p->cfg.idle_timeout * 1000);
}

/* Splice from `from` into the pipe, then from the pipe to `to`; false when it ends badly. */
static bool pump(msb_egress_proxy *p, eg_conn *c, int from, int to, eg_pipe *b, bool *eof,
		 short rev_from)
{
	if ((rev_from & (POLLIN | POLLHUP | POLLERR)) && !*eof && b->pending < b->cap) {
		ssize_t n = splice(from, NULL, b->w, NULL, b->cap - b->pending,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			b->pending += (size_t)n;
			c->bytes += (uint64_t)n;
			c->deadline = now_ms() + (int64_t)(p->cfg.idle_timeout * 1000);
		} else if (n == 0) {
			*eof = true;
		} else if (errno != EAGAIN && errno != EINTR) {
			return false;
		}
	}
	/* A send that cannot proceed says EAGAIN: cheaper than waiting for POLLOUT first. */
	if (b->pending) {
		ssize_t n = splice(b->r, NULL, to, NULL, b->pending, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0)
			b->pending -= (size_t)n;
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			return false;
	}
	if (*eof && b->pending == 0)
		shutdown(to, SHUT_WR);
	return true;
}

static void on_relay(msb_egress_proxy *p, eg_conn *c, short rg, short ru)
{
	bool ok = pump(p, c, c->guest, c->up, &c->to_up, &c->guest_eof, rg) &&
		  pump(p, c, c->up, c->guest, &c->to_guest, &c->up_eof, ru);
	if (!ok || c->bytes > p->cfg.max_bytes) {
		conn_close(c, true);
		return;
	}
	if (c->guest_eof && c->up_eof && !c->to_up.pending && !c->to_guest.pending)
		conn_close(c, false);
}

static void on_accept(msb_egress_proxy *p, eg_sandbox *s)
{
	for (int i = 0; i < 256; i++) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		eg_conn *c = calloc(1, sizeof *c);
		if (!c) {
			close_reset(fd);
			continue;
		}
		c->sb = s;
		c->ctl = fd;
		c->guest = c->up = -1;
		c->to_up.r = c->to_up.w = c->to_guest.r = c->to_guest.w = -1;
		c->st = ST_HELLO;
		c->deadline = now_ms() + HELLO_MS;
		c->next = p->conns;
		p->conns = c;
		if (s->open >= p->cfg.max_connections) {
			c->dead = true; /* never counted */
			char why[96];
			snprintf(why, sizeof why, "the sandbox already has %zu connections open "
				 "(egress_max_connections)", s->open);
			report(p, c, "(any)", 0, false, why);
			conn_close(c, true);
			continue;
		}
		s->open++;
	}
}

static short want_guest(const eg_conn *c)
{
	switch (c->st) {
	case ST_HELLO:
		return 0;
	case ST_HEAD:
		return POLLIN;
	case ST_RESOLVING:
	case ST_CONNECTING:
		return 0;
	case ST_RELAY:
		return (short)((!c->guest_eof && c->to_up.pending < c->to_up.cap ? POLLIN : 0) |
			       (c->to_guest.pending ? POLLOUT : 0));
	}
	return 0;
}

static short want_up(const eg_conn *c)
{
	if (c->st == ST_CONNECTING)
		return POLLOUT;
	if (c->st != ST_RELAY)
		return 0;
	return (short)((!c->up_eof && c->to_guest.pending < c->to_guest.cap ? POLLIN : 0) |
		       (c->to_up.pending ? POLLOUT : 0));
}

/* Drop closed connections and forgotten sandboxes (the loop's own, under the lock). */
static void sweep(msb_egress_proxy *p)
{
	for (eg_conn **cp = &p->conns; *cp;) {
		eg_conn *c = *cp;
		if (!c->dead && c->sb->gone)
			conn_close(c, true);
		if (c->dead) {
			*cp = c->next;
			free(c);
		} else {
			cp = &c->next;
		}
	}
	for (eg_sandbox **sp = &p->sandboxes; *sp;) {
		eg_sandbox *s = *sp;
		if (s->gone) {
			*sp = s->next;
			sandbox_free(s);
		} else {
			sp = &s->next;
		}
	}
}

static void *loop(void *arg)
{
	msb_egress_proxy *p = arg;
	struct pollfd *fds = NULL;
	size_t cap = 0;
	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		sweep(p);
		size_t need = 1, built_sb = 0;
		for (eg_sandbox *s = p->sandboxes; s; s = s->next, built_sb++)
			need++;
		for (eg_conn *c = p->conns; c; c = c->next)
			need += 2;
		if (need > cap) {
			struct pollfd *n = realloc(fds, need * sizeof *fds);
			if (!n)
				break;
			fds = n;
			cap = need;
		}
		size_t k = 0;
		fds[k++] = (struct pollfd){ p->wake[0], POLLIN, 0 };
		for (eg_sandbox *s = p->sandboxes; s; s = s->next)
			fds[k++] = (struct pollfd){ s->lfd, POLLIN, 0 };
		int64_t now = now_ms(), next = now + 60000;
		for (eg_conn *c = p->conns; c; c = c->next) {
			int g = c->st == ST_HELLO ? c->ctl : c->guest;
			fds[k++] = (struct pollfd){ g, c->st == ST_HELLO ? POLLIN : want_guest(c), 0 };
			fds[k++] = (struct pollfd){ c->up, want_up(c), 0 };
			if (c->deadline < next)
				next = c->deadline;
		}
		pthread_mutex_unlock(&p->lock);
		int timeout = next > now ? (int)(next - now) : 0;
		int r = poll(fds, k, timeout);
		pthread_mutex_lock(&p->lock);
		if (r < 0 && errno != EINTR)
			break;
		if (fds[0].revents) {
			char drain[64];
			while (read(p->wake[0], drain, sizeof drain) > 0)
				;
		}
		take_resolved(p);
		/* serve() may have put sandboxes at the head meanwhile: they have no slot. */
		size_t n_sb = 0;
		for (eg_sandbox *s = p->sandboxes; s; s = s->next)
			n_sb++;
		eg_sandbox *first = p->sandboxes;
		for (size_t i = built_sb; i < n_sb && first; i++)
			first = first->next;
		k = 1 + built_sb;
		now = now_ms();
		for (eg_conn *c = p->conns; c; c = c->next, k += 2) {
			if (c->dead)
				continue;
			short rg = fds[k].revents, ru = fds[k + 1].revents;
			if (c->st == ST_HELLO && rg)
				on_hello(p, c);
			else if (c->st == ST_HEAD && rg)
				on_head(p, c);
			else if (c->st == ST_CONNECTING && ru)
				on_connected(p, c);
			else if (c->st == ST_RELAY && (rg || ru))
				on_relay(p, c, rg, ru);
			if (!c->dead && now_ms() >= c->deadline && c->st == ST_RESOLVING) {
				char why[96];
				snprintf(why, sizeof why, "its resolution took over %gs (egress_resolve_timeout)",
					 p->cfg.resolve_timeout);
				deny(p, c, c->name, c->port, why);
			} else if (!c->dead && now_ms() >= c->deadline) {
				conn_close(c, true);
			}
		}
		k = 1;
		for (eg_sandbox *s = first; s; s = s->next, k++)
			if (fds[k].revents && !s->gone)
				on_accept(p, s);
	}
	for (eg_conn *c = p->conns; c; c = c->next)
		if (!c->dead)
			conn_close(c, true);
	pthread_mutex_unlock(&p->lock);
	free(fds);
	return NULL;
}

static void wake(msb_egress_proxy *p)
{
	(void)!write(p->wake[1], "w", 1);
}

msb_errc eg_config_copy(msb_egress_config *dst, const msb_egress_config *src)
{
	*dst = *src;
	dst->allow_ranges = NULL;
	dst->test_hosts = NULL;
	if (src->n_allow_ranges) {
		dst->allow_ranges = malloc(src->n_allow_ranges * sizeof *src->allow_ranges);
		if (!dst->allow_ranges)
			goto nomem;
		memcpy(dst->allow_ranges, src->allow_ranges,
		       src->n_allow_ranges * sizeof *src->allow_ranges);
	}
	if (src->n_test_hosts) {
		dst->test_hosts = calloc(src->n_test_hosts, sizeof *src->test_hosts);
		if (!dst->test_hosts)
			goto nomem;
		for (size_t i = 0; i < src->n_test_hosts; i++) {
			dst->test_hosts[i] = src->test_hosts[i];
			if (!(dst->test_hosts[i].name = strdup(src->test_hosts[i].name))) {
				dst->n_test_hosts = i;
				goto nomem;
			}
		}
	}
	return MSB_OK;
nomem:
	msb_egress_config_free(dst);
	return MSB_E_NOMEM;
}

msb_errc msb_egress_proxy_new(const msb_egress_config *c, msb_egress_report report_fn, void *ctx,
			      msb_egress_proxy **out, msb_error *err)
{
	msb_egress_proxy *p = calloc(1, sizeof *p);
	if (!p)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	p->wake[0] = p->wake[1] = -1;
	if (eg_config_copy(&p->cfg, c) != MSB_OK) {
		free(p);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	p->report = report_fn;
	p->ctx = ctx;
	pthread_mutex_init(&p->lock, NULL);
	if (pipe2(p->wake, O_CLOEXEC | O_NONBLOCK) < 0 ||
	    !(p->resolver = eg_resolver_new(&p->cfg, p->wake[1])) ||
	    pthread_create(&p->thread, NULL, loop, p) != 0) {
		int e = errno;
		eg_resolver_free(p->resolver);
		if (p->wake[0] >= 0) {
			close(p->wake[0]);
			close(p->wake[1]);
		}
		pthread_mutex_destroy(&p->lock);
		msb_egress_config_free(&p->cfg);
		free(p);
		return msb_error_set_errno(err, MSB_E_OS, e, "egress proxy: could not start its thread");
	}
	*out = p;
	return MSB_OK;
}

static void mark_gone(msb_egress_proxy *p, const char *path)
{
	for (eg_sandbox *s = p->sandboxes; s; s = s->next)
		if (!s->gone && !strcmp(s->path, path)) {
			s->gone = true;
			/* Its successor binds the same path: this one must not unlink it later. */
			free(s->path);
			s->path = NULL;
			close(s->lfd);
			s->lfd = -1;
		}
}

msb_errc msb_egress_proxy_serve(msb_egress_proxy *p, const msb_key *key,
				const char *const *allow, const char *socket_path, msb_error *err)
{
	msb_errc rc = msb_egress_allow_check(allow, err);
	if (rc != MSB_OK)
		return rc;
	eg_sandbox *s = calloc(1, sizeof *s);
	size_t n = 0;
	while (allow && allow[n])
		n++;
	if (!s || !(s->allow = calloc(n + 1, sizeof *s->allow)) || !(s->path = strdup(socket_path))) {
		if (s)
			free(s->allow);
		free(s);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	s->lfd = -1;
	const char *fields[4] = { key->scope, key->thread_id, key->agent_dir, key->call_id };
	bool nomem = false;
	for (int i = 0; i < 4; i++)
		nomem |= !(s->key_fields[i] = strdup(fields[i] ? fields[i] : ""));
	for (size_t i = 0; i < n; i++)
		nomem |= !(s->allow[i] = strdup(allow[i]));
	if (nomem) {
		sandbox_free(s);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	s->key = (msb_key){ s->key_fields[0], s->key_fields[1], s->key_fields[2], s->key_fields[3] };
	pthread_mutex_lock(&p->lock);
	mark_gone(p, socket_path);
	unlink(socket_path);
	/* Anyone inside may connect: the guest's uid is the boundary's to choose. */
	s->lfd = msb_unix_listen(socket_path);
	if (s->lfd < 0) {
		int e = errno;
		pthread_mutex_unlock(&p->lock);
		free(s->path);
		s->path = NULL;
		sandbox_free(s);
		return msb_error_set_errno(err, MSB_E_BACKEND, e, "egress proxy: cannot listen on %s",
					   socket_path);
	}
	chmod(socket_path, 0666);
	/* A deep queue, so a burst is refused by the proxy (and reported), not by the kernel. */
	listen(s->lfd, 4096);
	set_nonblock(s->lfd);
	s->next = p->sandboxes;
	p->sandboxes = s;
	pthread_mutex_unlock(&p->lock);
	wake(p);
	return MSB_OK;
}

void msb_egress_proxy_forget(msb_egress_proxy *p, const char *socket_path)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	mark_gone(p, socket_path);
	unlink(socket_path);
	pthread_mutex_unlock(&p->lock);
	wake(p);
}

void msb_egress_proxy_free(msb_egress_proxy *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_mutex_unlock(&p->lock);
	wake(p);
	pthread_join(p->thread, NULL);
	eg_resolver_free(p->resolver);
	for (eg_conn *c = p->conns, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	for (eg_sandbox *s = p->sandboxes, *next; s; s = next) {
		next = s->next;
		sandbox_free(s);
	}
	close(p->wake[0]);
	close(p->wake[1]);
	pthread_mutex_destroy(&p->lock);
	msb_egress_config_free(&p->cfg);
	free(p);
}
