/*
 * test_egress_resolver.c — the proxy resolves names off its event loop: while one name's
 * answer is slow (a test map entry with a delay stands in for a DNS server that does not
 * answer; no name is resolved for real), another sandbox connection's allowed name is
 * decided, connected and answered at once; the slow one is refused once
 * egress_resolve_timeout passes, and that refusal is reported with its reason.
 *
 * The proxy alone (no backend): the test speaks the forwarder's hello on the proxy's unix
 * socket, without a descriptor (the connection is the guest's stream), and the upstream is
 * a server of the test's on 127.0.0.1, reopened by egress_allow_ranges for exactly that
 * address. Loopback only, no root needed.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/config.h>
#include <msb/egress.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char seen[8192];

static void on_report(void *ctx, const msb_key *key, const char *destination, bool allowed,
		      const char *reason)
{
	(void)ctx;
	(void)key;
	pthread_mutex_lock(&lock);
	size_t n = strlen(seen);
	snprintf(seen + n, sizeof seen - n, "%s %s (%s)\n", allowed ? "ALLOW" : "DENY",
		 destination, reason ? reason : "-");
	pthread_mutex_unlock(&lock);
}

static bool seen_has(const char *needle)
{
	pthread_mutex_lock(&lock);
	bool hit = strstr(seen, needle) != NULL;
	pthread_mutex_unlock(&lock);
	return hit;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The upstream: every connection is answered "up" and closed. */
static int upstream;
static void *serve(void *arg)
{
	(void)arg;
	for (;;) {
		int c = accept(upstream, NULL, NULL);
		if (c < 0)
			return NULL;
		(void)!send(c, "up", 2, MSG_NOSIGNAL);
		close(c);
	}
}

/* A forwarder's connection for allowed name `index` on `port`: its hello, no descriptor. */
static int hello(const char *path, uint32_t index, uint16_t port)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	msb_egress_hello h = { MSB_EGRESS_MAGIC, MSB_EGRESS_NAMED, port, index };
	assert_int_equal(send(fd, &h, sizeof h, MSG_NOSIGNAL), (ssize_t)sizeof h);
	return fd;
}

/* What arrives on `fd` within `timeout` s ("" at end of stream, "-" when nothing came). */
static const char *answer(int fd, double timeout, char *buf, size_t cap)
{
	struct pollfd p = { fd, POLLIN, 0 };
	if (poll(&p, 1, (int)(timeout * 1000)) != 1)
		return "-";
	ssize_t n = recv(fd, buf, cap - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void test_slow_name_stalls_no_one_else(void **state)
{
	(void)state;
	upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof sin;
	assert_int_equal(bind(upstream, (struct sockaddr *)&sin, sizeof sin), 0);
	assert_int_equal(listen(upstream, 16), 0);
	assert_int_equal(getsockname(upstream, (struct sockaddr *)&sin, &sl), 0);
	unsigned port = ntohs(sin.sin_port);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, serve, NULL), 0);

	char text[1024];
	snprintf(text, sizeof text,
		 "version: 1\nbackends:\n  - plugin: x.so\n    config:\n"
		 "      egress_ports: [%u]\n"
		 "      egress_allow_ranges: [127.0.0.1/32]\n"
		 "      egress_resolve_timeout: 1s\n"
		 "      egress_test_hosts:\n"
		 "        fast.test: 127.0.0.1\n"
		 "        slow.test: {address: 127.0.0.1, delay: 3s}\n", port);
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_config_parse(text, strlen(text), "<test>", NULL, &cfg, &err), MSB_OK);
	const msb_node *config =
		msb_node_get(msb_node_get(msb_config_root(cfg), "backends")->items[0], "config");
	msb_egress_config ec;
	assert_int_equal(msb_egress_config_read(config, &ec, &err), MSB_OK);
	msb_config_free(cfg);
	assert_true(ec.resolve_timeout == 1.0);
	assert_true(ec.test_hosts[1].delay == 3.0);

	char dir[] = "/tmp/msb-egress-resolver-XXXXXX", path[128];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/px", dir);
	msb_egress_proxy *p = NULL;
	assert_int_equal(msb_egress_proxy_new(&ec, on_report, NULL, &p, &err), MSB_OK);
	msb_key key = { "conv", "t1", "agent", "" };
	const char *allow[] = { "slow.test", "fast.test", NULL };
	assert_int_equal(msb_egress_proxy_serve(p, &key, allow, path, &err), MSB_OK);

	/* Two slow names take two of the resolver's threads; the fast one is not behind them. */
	int slow = hello(path, 0, (uint16_t)port);
	int slow2 = hello(path, 0, (uint16_t)port);
	struct timespec settle = { 0, 100 * 1000000L };
	nanosleep(&settle, NULL);
	double t0 = now_s();
	int fast = hello(path, 1, (uint16_t)port);
	char buf[64];
	const char *got = answer(fast, 2.0, buf, sizeof buf);
	double took = now_s() - t0;
	printf("fast name answered in %.1f ms while the slow one resolves\n", took * 1000);
	assert_string_equal(got, "up");
	assert_true(took < 0.5);
	assert_true(seen_has("ALLOW fast.test:"));
	assert_false(seen_has("slow.test"));

	/* The slow one: refused once egress_resolve_timeout (1 s) passes, not after its 3 s. */
	got = answer(slow, 2.5, buf, sizeof buf);
	double slow_took = now_s() - t0;
	printf("slow name refused after %.1f s\n", slow_took);
	assert_string_equal(got, "");
	assert_true(slow_took < 2.0);
	char needle[160];
	snprintf(needle, sizeof needle, "DENY slow.test:%u (its resolution took over 1s "
		 "(egress_resolve_timeout))", port);
	assert_true(seen_has(needle));
	got = answer(slow2, 2.0, buf, sizeof buf);
	assert_string_equal(got, "");
	close(slow);
	close(slow2);
	close(fast);

	/* Freeing the proxy does not wait for the threads still inside their 3 s answers. */
	double f0 = now_s();
	msb_egress_proxy_free(p);
	assert_true(now_s() - f0 < 1.0);
	msb_egress_config_free(&ec);
	shutdown(upstream, SHUT_RDWR);
	close(upstream);
	pthread_join(t, NULL);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slow_name_stalls_no_one_else),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
