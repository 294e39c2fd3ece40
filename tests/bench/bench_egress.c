/*
 * bench_egress.c — what `egress: allowlist` costs a connection, on a real backend (argv[1]:
 * process, the default, bwrap, gvisor or qemu — qemu's guest tool from the python store
 * image, its bulk read 32 MiB), in one run:
 *
 *   direct   inside the sandbox, connect to a server on the sandbox's own loopback, send a
 *            byte, read a byte (the baseline: the same guest tool, no proxy)
 *   proxied  the same to the allowed name's loopback address: the agent's forwarder, the
 *            host proxy's decision (test map, no DNS), its upstream connect to the host's
 *            server, the relay
 *   bulk     256 MiB read over one connection, direct and proxied
 *
 * Both sides are measured by one python3 process in the guest, samples interleaved, so the
 * tool's own cost cancels out; the direct server is a separate guest process. Targets
 * (issue 20): under 0.5 ms added per connection; bulk at least half of direct.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <msb/config.h>
#include <msb/msb.h>
#include <msb/router.h>
#include <msb/sandbox.h>

#include "msb_test.h"

#define AGENT MSB_TOP_BUILDDIR "/sdk/agent/msb-agent"
#define BULK (256u << 20)

static int server_fd;
static unsigned bulk_bytes = BULK;

/* The host's upstream: 'p' is answered with one byte, 'b' with bulk_bytes. */
static void *serve_one(void *arg)
{
	int c = (int)(intptr_t)arg;
	char op = 0;
	if (recv(c, &op, 1, 0) == 1) {
		if (op == 'b') {
			static char chunk[1 << 20];
			for (size_t sent = 0; sent < bulk_bytes;) {
				ssize_t n = send(c, chunk, sizeof chunk, MSG_NOSIGNAL);
				if (n <= 0)
					break;
				sent += (size_t)n;
			}
		} else {
			(void)!send(c, "p", 1, MSG_NOSIGNAL);
		}
	}
	close(c);
	return NULL;
}

static void *serve(void *arg)
{
	(void)arg;
	for (;;) {
		int c = accept4(server_fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			return NULL;
		pthread_t t;
		if (pthread_create(&t, NULL, serve_one, (void *)(intptr_t)c) == 0)
			pthread_detach(t);
		else
			close(c);
	}
}

static const char guest[] =
	"import os, socket, sys, time\n"
	"port = int(sys.argv[1]); bulk = int(sys.argv[2]); n = int(sys.argv[3])\n"
	"ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
	"ls.bind(('127.0.0.1', port + 1)); ls.listen(128)\n"
	"if os.fork() == 0:\n"
	"    chunk = bytes(1 << 20)\n"
	"    while True:\n"
	"        c, _ = ls.accept(); op = c.recv(1)\n"
	"        if op == b'b':\n"
	"            sent = 0\n"
	"            while sent < bulk: sent += c.send(chunk)\n"
	"        else: c.send(b'p')\n"
	"        c.close()\n"
	"ls.close()\n"
	"def ping(addr):\n"
	"    t = time.perf_counter(); s = socket.create_connection(addr); s.sendall(b'p'); s.recv(1)\n"
	"    d = time.perf_counter() - t; s.close(); return d\n"
	"def pull(addr):\n"
	"    buf = bytearray(1 << 20); got = 0; s = socket.create_connection(addr); s.sendall(b'b')\n"
	"    t = time.perf_counter()\n"
	"    while got < bulk:\n"
	"        k = s.recv_into(buf)\n"
	"        if not k: break\n"
	"        got += k\n"
	"    d = time.perf_counter() - t; s.close(); return got / d / 1e6\n"
	"direct, prox = ('127.0.0.1', port + 1), ('127.0.1.1', port)\n"
	"ping(direct); ping(prox)\n"
	"a, b = [], []\n"
	"for i in range(n): a.append(ping(direct)); b.append(ping(prox))\n"
	"a.sort(); b.sort()\n"
	"print('direct_us %.1f proxied_us %.1f' % (a[n // 2] * 1e6, b[n // 2] * 1e6))\n"
	"bd, bp = [], []\n"
	"for i in range(3): bd.append(pull(direct)); bp.append(pull(prox))\n"
	"bd.sort(); bp.sort()\n"
	"print('direct_mbs %.0f proxied_mbs %.0f' % (bd[1], bp[1]))\n";

int main(int argc, char **argv)
{
	const char *backend = argc > 1 ? argv[1] : "process";
	if (geteuid() != 0 || system("command -v python3 >/dev/null") != 0) {
		printf("skip: needs root (the backends' namespaces) and python3 (the guest's tool)\n");
		return 0;
	}
	server_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof sa;
	/* An even port below 60000 whose successor the guest's own server takes. */
	for (unsigned port = 20000 + (unsigned)(getpid() % 10000) * 2; port < 60000; port += 2) {
		sa.sin_port = htons((uint16_t)port);
		if (bind(server_fd, (struct sockaddr *)&sa, sizeof sa) == 0)
			break;
	}
	if (listen(server_fd, 128) != 0 || getsockname(server_fd, (struct sockaddr *)&sa, &len) != 0)
		return 1;
	unsigned port = ntohs(sa.sin_port);
	pthread_t t;
	pthread_create(&t, NULL, serve, NULL);

	char dir[] = "/tmp/msb-bench-egress-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	chmod(dir, 0711);
	char path[128];
	snprintf(path, sizeof path, "%s/sandbox.yaml", dir);
	FILE *f = fopen(path, "w");
	/* A microVM: the in-tree init, relay and guest, the python store image for the tool,
	 * and a smaller bulk read (a virtio-serial port, not a socket pair, carries it). */
	char extra[1024] = "", image[64] = "";
	if (!strcmp(backend, "qemu")) {
		const char *g = getenv("MSB_QEMU_GUEST");
		snprintf(extra, sizeof extra,
			 "      init: " MSB_TOP_BUILDDIR "/plugins/qemu/msb-qemu-init\n"
			 "      relay: " MSB_TOP_BUILDDIR "/plugins/qemu/msb-qemu-relay\n"
			 "      guest_dir: %s\n      boot_timeout: 120s\n",
			 g && *g ? g : MSB_TOP_BUILDDIR "/plugins/qemu/guest");
		snprintf(image, sizeof image, "    image: python\n");
		bulk_bytes = BULK / 8;
	}
	fprintf(f,
		"version: 1\nrouter:\n  min_isolation: os_process\nbackends:\n"
		"  - plugin: " MSB_TOP_BUILDDIR "/plugins/%s/.libs/%s.so\n"
		"    config:\n%s      state_dir: %s/state\n      agent: %s\n"
		"      egress_ports: [%u]\n      egress_allow_ranges: [127.0.0.1/32]\n"
		"      egress_test_hosts: {peer.test: 127.0.0.1}\n"
		"specs:\n  web:\n%s    egress: allowlist\n    egress_allow: [peer.test]\n",
		backend, backend, extra, dir, AGENT, port, image);
	fclose(f);
	msb_config *cfg = NULL;
	msb_router *router = NULL;
	const msb_spec *spec = NULL;
	msb_sandbox *box = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_key key = { "bench", "egress", "", "" };
	int status = 1;
	if (msb_config_load(path, NULL, &cfg, &err) != MSB_OK ||
	    msb_config_router(cfg, &router, &err) != MSB_OK ||
	    msb_config_spec_find(cfg, "web", &spec, &err) != MSB_OK ||
	    msb_router_acquire(router, &key, spec, &box, &err) != MSB_OK) {
		fprintf(stderr, "bench_egress: %s\n", msb_error_message(&err));
		goto out;
	}
	char p[16], bulk[16];
	snprintf(p, sizeof p, "%u", port);
	snprintf(bulk, sizeof bulk, "%u", bulk_bytes);
	const char *args[] = { "python3", "-c", guest, p, bulk, "400", NULL };
	msb_exec_request req = { .argv = args, .timeout = 300 };
	msb_exec_result res = { 0 };
	if (msb_sandbox_exec(box, &req, &res, &err) != MSB_OK) {
		fprintf(stderr, "bench_egress: %s\n", msb_error_message(&err));
		goto out;
	}
	double d_us = 0, p_us = 0, d_mbs = 0, p_mbs = 0;
	const char *o = (const char *)res.out.data;
	if (!o || sscanf(o, "direct_us %lf proxied_us %lf direct_mbs %lf proxied_mbs %lf", &d_us,
			 &p_us, &d_mbs, &p_mbs) != 4) {
		fprintf(stderr, "bench_egress: the guest said: %.*s%.*s\n", (int)res.out.len, o,
			(int)res.err.len, (const char *)res.err.data);
		msb_exec_result_free(&res);
		goto out;
	}
	msb_exec_result_free(&res);
	printf("egress allowlist on %s (median of 400 connects, 3 bulk reads of %u MiB)\n", backend,
	       bulk_bytes >> 20);
	printf("  connect + first byte: direct %.1f us, proxied %.1f us, added %.1f us (target < 500)\n",
	       d_us, p_us, p_us - d_us);
	printf("  bulk, one connection: direct %.0f MB/s, proxied %.0f MB/s, ratio %.2f (target >= 0.50)\n",
	       d_mbs, p_mbs, p_mbs / d_mbs);
	status = 0;
out:
	msb_sandbox_release(box);
	if (router) {
		msb_disposal_failure failure = { 0 };
		msb_router_dispose(router, &key, &failure);
		msb_disposal_failure_free(&failure);
	}
	msb_router_free(router);
	msb_config_free(cfg);
	msb_error_clear(&err);
	char cmd[96];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		status = 1;
	return status;
}
