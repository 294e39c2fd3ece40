/*
 * test_egress_mux.c — the egress mux (sdk/agent/egress_mux.c) alone, both ends in this
 * process over a socketpair standing in for a microVM's virtio-serial port: bytes and
 * half-closes cross both ways; a connection whose reader never reads fills its own credit
 * window and stalls no other connection; and the host end, fed hostile frames, drops what
 * names no connection, answers a short OPEN with CLOSE, resets a connection that overruns
 * its window, and ends the stream on a frame longer than any frame. Loopback only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../sdk/agent/egress_mux.h"

static int proxy_side[16]; /* the test's end of each connection the host end opened, by index */

static void nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static int open_cb(void *ctx, const msb_egress_hello *h)
{
	(void)ctx;
	int sv[2];
	if (h->index >= 16 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	nonblock(sv[0]);
	proxy_side[h->index] = sv[1];
	return sv[0];
}

typedef struct ends {
	int sg, sh;        /* the stream's two ends */
	eg_mux *g, *h;
} ends;

static void ends_up(ends *e, bool guest_engine)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	nonblock(sv[0]);
	nonblock(sv[1]);
	e->sg = sv[0];
	e->sh = sv[1];
	e->g = guest_engine ? eg_mux_new(e->sg, NULL, NULL) : NULL;
	e->h = eg_mux_new(e->sh, open_cb, NULL);
	assert_non_null(e->h);
	for (int i = 0; i < 16; i++)
		proxy_side[i] = -1;
}

static void ends_down(ends *e)
{
	eg_mux_free(e->g);
	eg_mux_free(e->h);
	close(e->sg);
	close(e->sh);
	for (int i = 0; i < 16; i++)
		if (proxy_side[i] >= 0)
			close(proxy_side[i]);
}

/* Run both engines for `ms`; false when the host end's stream ended. */
static bool spin(ends *e, int ms)
{
	static struct pollfd fds[2 * EG_MUX_POLLFDS];
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		size_t n = 0;
		if (e->g)
			eg_mux_fill(e->g, fds);
		else
			for (size_t i = 0; i < EG_MUX_POLLFDS; i++)
				fds[i] = (struct pollfd){ -1, 0, 0 };
		n = EG_MUX_POLLFDS;
		eg_mux_fill(e->h, fds + n);
		poll(fds, 2 * EG_MUX_POLLFDS, 5);
		if (e->g)
			assert_true(eg_mux_run(e->g, fds));
		if (!eg_mux_run(e->h, fds + n))
			return false;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= ms)
			return true;
	}
}

/* A connected TCP pair on 127.0.0.1 (a reset shows on TCP alone, as the guest's would). */
static void tcp_pair(int sv[2])
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof sa;
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &len), 0);
	sv[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(sv[1], (struct sockaddr *)&sa, sizeof sa), 0);
	sv[0] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	assert_true(sv[0] >= 0);
	close(l);
}

/* A guest connection for name `index`: the test's client end. */
static int client(ends *e, uint32_t index)
{
	int sv[2];
	tcp_pair(sv);
	nonblock(sv[0]);
	msb_egress_hello h = { MSB_EGRESS_MAGIC, MSB_EGRESS_NAMED, 80, index };
	assert_true(eg_mux_add(e->g, sv[0], &h));
	return sv[1];
}

static ssize_t take(int fd, char *buf, size_t cap)
{
	ssize_t n = recv(fd, buf, cap, MSG_DONTWAIT);
	return n;
}

static void test_bytes_and_half_closes(void **state)
{
	(void)state;
	ends e;
	ends_up(&e, true);
	int c = client(&e, 3);
	assert_int_equal(send(c, "hello", 5, 0), 5);
	shutdown(c, SHUT_WR);
	spin(&e, 100);
	assert_true(proxy_side[3] >= 0);
	char buf[64];
	assert_int_equal(take(proxy_side[3], buf, sizeof buf), 5);
	assert_memory_equal(buf, "hello", 5);
	assert_int_equal(take(proxy_side[3], buf, sizeof buf), 0); /* the guest's SHUT */
	assert_int_equal(send(proxy_side[3], "world", 5, 0), 5);
	close(proxy_side[3]);
	proxy_side[3] = -1;
	spin(&e, 100);
	assert_int_equal(take(c, buf, sizeof buf), 5);
	assert_memory_equal(buf, "world", 5);
	assert_int_equal(take(c, buf, sizeof buf), 0);
	close(c);
	ends_down(&e);
}

/* A host end that closes before its first byte (the proxy's refusal) is a reset. */
static void test_silent_close_is_a_reset(void **state)
{
	(void)state;
	ends e;
	ends_up(&e, true);
	int c = client(&e, 1);
	spin(&e, 50);
	close(proxy_side[1]);
	proxy_side[1] = -1;
	spin(&e, 100);
	char buf[8];
	errno = 0;
	ssize_t n = take(c, buf, sizeof buf);
	assert_true(n < 0 && errno == ECONNRESET);
	close(c);
	ends_down(&e);
}

static void test_slow_reader_stalls_no_one_else(void **state)
{
	(void)state;
	ends e;
	ends_up(&e, true);
	int slow = client(&e, 0), fast = client(&e, 1);
	spin(&e, 50);
	/* The slow connection's upstream pours out; its guest reads nothing. */
	static char chunk[65536];
	size_t poured = 0;
	for (int i = 0; i < 200; i++) {
		ssize_t n = send(proxy_side[0], chunk, sizeof chunk, MSG_DONTWAIT);
		if (n > 0)
			poured += (size_t)n;
		spin(&e, 2);
	}
	printf("the slow connection's upstream got %zu bytes out, then blocked\n", poured);
	/* Bounded by its window and the sockets' own buffers, far short of 200 x 64 KiB. */
	assert_true(poured < 200 * sizeof chunk / 2);
	assert_int_equal(send(fast, "ping", 4, 0), 4);
	spin(&e, 50);
	char buf[8];
	assert_int_equal(take(proxy_side[1], buf, sizeof buf), 4);
	assert_int_equal(send(proxy_side[1], "pong", 4, 0), 4);
	spin(&e, 50);
	assert_int_equal(take(fast, buf, sizeof buf), 4);
	assert_memory_equal(buf, "pong", 4);
	close(slow);
	close(fast);
	ends_down(&e);
}

static void frame(int fd, uint32_t id, uint32_t type, const void *p, uint32_t len)
{
	uint32_t h[3] = { id, type, len };
	assert_int_equal(send(fd, h, sizeof h, 0), (ssize_t)sizeof h);
	if (len)
		assert_int_equal(send(fd, p, len, 0), (ssize_t)len);
}

/* Whether the host end has sent a frame of `type` for `id` (everything sent so far read). */
static bool saw(int fd, uint32_t id, uint32_t type)
{
	static char buf[1 << 20];
	static size_t len;
	ssize_t n;
	while (len < sizeof buf && (n = recv(fd, buf + len, sizeof buf - len, MSG_DONTWAIT)) > 0)
		len += (size_t)n;
	bool hit = false;
	size_t at = 0;
	while (len - at >= 12) {
		uint32_t h[3];
		memcpy(h, buf + at, sizeof h);
		if (len - at < 12 + h[2])
			break;
		hit = hit || (h[0] == id && h[1] == type);
		at += 12 + h[2];
	}
	memmove(buf, buf + at, len - at);
	len -= at;
	return hit;
}

static void test_hostile_frames(void **state)
{
	(void)state;
	ends e;
	ends_up(&e, false);
	/* DATA for no connection: dropped, nothing back. */
	frame(e.sg, 99, 2, "stray", 5);
	assert_true(spin(&e, 50));
	assert_false(saw(e.sg, 99, 4));
	/* A short OPEN: refused with a CLOSE. */
	frame(e.sg, 7, 1, "short", 5);
	assert_true(spin(&e, 50));
	assert_true(saw(e.sg, 7, 4));
	/* A well-formed OPEN, then more DATA than its window while the proxy side reads
	 * nothing: that connection is reset, the stream goes on. */
	msb_egress_hello h = { MSB_EGRESS_MAGIC, MSB_EGRESS_NAMED, 80, 2 };
	frame(e.sg, 8, 1, &h, sizeof h);
	assert_true(spin(&e, 50));
	assert_true(proxy_side[2] >= 0);
	static char big[EG_MUX_CHUNK];
	bool closed = false;
	for (size_t sent = 0; sent <= 4 * EG_MUX_WINDOW && !closed; sent += sizeof big) {
		frame(e.sg, 8, 2, big, sizeof big);
		assert_true(spin(&e, 5));
		closed = saw(e.sg, 8, 4);
	}
	assert_true(closed);
	/* An unknown type for no connection: dropped. */
	frame(e.sg, 0, 77, NULL, 0);
	assert_true(spin(&e, 50));
	/* A frame longer than any frame: the host end ends the stream, nothing more. */
	uint32_t h2[3] = { 1, 2, EG_MUX_CHUNK + 1 };
	assert_int_equal(send(e.sg, h2, sizeof h2, 0), (ssize_t)sizeof h2);
	assert_false(spin(&e, 100));
	ends_down(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes_and_half_closes),
		cmocka_unit_test(test_silent_close_is_a_reset),
		cmocka_unit_test(test_slow_reader_stalls_no_one_else),
		cmocka_unit_test(test_hostile_frames),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
