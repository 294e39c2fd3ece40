/*
 * test_egress_backend.c — `egress: allowlist` on a real backend (EGRESS_BACKEND: process or
 * bwrap), attacked from inside: the listed peer answers; an unlisted name, an address
 * literal, a listed name resolving to loopback, a DNS query, a UDP datagram and an IPv6
 * connect do not; forged hellos, a connection flood and a second destination smuggled
 * through one allowed connection get nowhere; the host survives; every decision the proxy
 * made arrives as an EgressObserved event with its reason; another sandbox cannot reach
 * this one's proxy socket.
 *
 * The peers are egress_peer.h's: link-local addresses in a namespace this test made. The
 * proxy's resolver is the test map (egress_test_hosts), so no name is ever resolved for
 * real, and egress_allow_ranges reopens exactly that /29 (nothing else link-local).
 * The guest's probes are python3 one-liners (the host's, which both boundaries see).
 */
#include <errno.h>
#include <glob.h>
#include <grp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/config.h>
#include <msb/msb.h>
#include <msb/observer.h>
#include <msb/router.h>
#include <msb/sandbox.h>

#include "egress_peer.h"
#include "msb_test.h"

#ifndef EGRESS_BACKEND
#define EGRESS_BACKEND "process"
#endif
#define AGENT MSB_TOP_BUILDDIR "/sdk/agent/msb-agent"

/* ---- what the observer saw -------------------------------------------------------- */

static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static char seen[65536];
static size_t seen_len;

static int on_egress(void *ctx, const msb_egress_observed *e)
{
	(void)ctx;
	pthread_mutex_lock(&seen_lock);
	int n = snprintf(seen + seen_len, sizeof seen - seen_len, "%s %s key=%s/%s (%s)\n",
			 e->allowed ? "ALLOW" : "DENY", e->destination, e->key->scope,
			 e->key->thread_id, e->reason ? e->reason : "-");
	if (n > 0 && (size_t)n < sizeof seen - seen_len)
		seen_len += (size_t)n;
	pthread_mutex_unlock(&seen_lock);
	return 0;
}

static void seen_reset(void)
{
	pthread_mutex_lock(&seen_lock);
	seen_len = 0;
	seen[0] = '\0';
	pthread_mutex_unlock(&seen_lock);
}

/* Wait (bounded) until the events hold `needle`; true when they do. */
static bool seen_wait(const char *needle)
{
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&seen_lock);
		bool hit = strstr(seen, needle) != NULL;
		pthread_mutex_unlock(&seen_lock);
		if (hit)
			return true;
		struct timespec ts = { 0, 25 * 1000000L };
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "events so far:\n%s(none held \"%s\")\n", seen, needle);
	return false;
}

static unsigned seen_count(const char *needle)
{
	unsigned n = 0;
	pthread_mutex_lock(&seen_lock);
	for (const char *s = seen; (s = strstr(s, needle)); s++)
		n++;
	pthread_mutex_unlock(&seen_lock);
	return n;
}

/* ---- the world -------------------------------------------------------------------- */

typedef struct world {
	egress_peer peer;
	char dir[64];
	msb_observer observer;
	msb_host host;
	msb_config *cfg;
	msb_router *router;
	msb_sandbox *box;
	char socket_path[256];
} world;

static world W;

static const char probe[] =
	"import socket, sys, os, time\n"
	"def rd(s):\n"
	"    out = b''\n"
	"    try:\n"
	"        while True:\n"
	"            d = s.recv(65536)\n"
	"            if not d: break\n"
	"            out += d\n"
	"    except Exception as e: out += b' ERR:' + type(e).__name__.encode()\n"
	"    return out\n"
	"m = sys.argv[1]\n"
	"try:\n"
	"    if m == 'raw':\n"
	"        s = socket.create_connection((sys.argv[2], int(sys.argv[3])), timeout=10)\n"
	"        s.sendall(sys.argv[4].encode().decode('unicode_escape').encode())\n"
	"        print('GOT', rd(s))\n"
	"    elif m == 'udp':\n"
	"        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
	"        s.sendto(b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x04peer\\x04test\\x00\\x00\\x01\\x00\\x01', (sys.argv[2], int(sys.argv[3])))\n"
	"        print('SENT')\n"
	"    elif m == 'v6':\n"
	"        s = socket.create_connection((sys.argv[2], int(sys.argv[3])), timeout=5)\n"
	"        print('CONNECTED')\n"
	"    elif m == 'resolve':\n"
	"        print('RESOLVED', socket.getaddrinfo(sys.argv[2], 80))\n"
	"    elif m == 'hello':\n"
	"        s = socket.socket(socket.AF_UNIX)\n"
	"        s.settimeout(10)\n"
	"        s.connect(sys.argv[2])\n"
	"        s.sendall(bytes.fromhex(sys.argv[3]))\n"
	"        if len(sys.argv) > 4: s.sendall(sys.argv[4].encode().decode('unicode_escape').encode())\n"
	"        print('GOT', rd(s))\n"
	"    elif m == 'flood':\n"
	"        import select\n"
	"        socks, refused, answered = [], 0, 0\n"
	"        for i in range(int(sys.argv[2])):\n"
	"            try: socks.append(socket.create_connection(('127.0.1.1', 80), timeout=5))\n"
	"            except Exception: refused += 1\n"
	"        pending, t0 = set(socks), time.time()\n"
	"        while pending and time.time() - t0 < 15:\n"
	"            for s in select.select(list(pending), [], [], 1)[0]:\n"
	"                try: d = s.recv(1)\n"
	"                except Exception: d = b''\n"
	"                if d: answered += 1\n"
	"                else: refused += 1\n"
	"                pending.discard(s)\n"
	"        print('REFUSED', refused, 'ANSWERED', answered, 'HELD', len(pending))\n"
	"    elif m == 'frames':\n"
	"        import glob, struct, select\n"
	"        dev = [ '/dev/' + p.split('/')[-2] for p in glob.glob('/sys/class/virtio-ports/*/name')\n"
	"                if open(p).read().strip() == sys.argv[2] ][0]\n"
	"        def cmd(p):\n"
	"            try: return open('/proc/%s/cmdline' % p, 'rb').read().split(b'\\0')\n"
	"            except Exception: return []\n"
	"        def ppid(p): return open('/proc/%s/stat' % p).read().rsplit(')', 1)[1].split()[1]\n"
	"        for pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
	"            try:\n"
	"                if b'mux' in cmd(pid) and b'mux' in cmd(ppid(pid)):\n"
	"                    os.kill(int(pid), 9); print('KILLED', pid)\n"
	"            except Exception: pass\n"
	"        time.sleep(0.5)\n"
	"        f = os.open(dev, os.O_RDWR)\n"
	"        fr = lambda i, t, p=b'': struct.pack('=III', i, t, len(p)) + p\n"
	"        hello = lambda kind, port, idx: struct.pack('=IHHI', 0x4542534d, kind, port, idx)\n"
	"        os.write(f, fr(1, 1, hello(1, 80, 7)) + fr(2, 1, hello(1, 22, 0)) + fr(4, 1, b'short'))\n"
	"        os.write(f, fr(3, 1, hello(2, 3128, 0)) + fr(3, 2, b'CONNECT other.test:80 HTTP/1.1\\r\\n\\r\\n'))\n"
	"        os.write(f, fr(5, 2, b'data for no connection') + fr(6, 5, b'x'))\n"
	"        out, t0 = b'', time.time()\n"
	"        while time.time() - t0 < 3:\n"
	"            if select.select([f], [], [], 0.5)[0]: out += os.read(f, 65536)\n"
	"        print('GOT', out)\n"
	"        os.write(f, struct.pack('=III', 9, 2, 1 << 30))\n"
	"        time.sleep(1)\n"
	"        print('DONE')\n"
	"except Exception as e:\n"
	"    print('FAIL', type(e).__name__, e)\n";

/* Run the probe in the sandbox `box`; its stdout (static buffer). */
static const char *guest_in(msb_sandbox *box, const char *mode, const char *a, const char *b,
			    const char *c, const char *d)
{
	static char out[65536];
	const char *argv[] = { "python3", "-c", probe, mode, a, b, c, d, NULL };
	msb_exec_request req = { .argv = argv, .timeout = 60 };
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	if (msb_sandbox_exec(box, &req, &res, &err) != MSB_OK) {
		fprintf(stderr, "exec: %s\n", msb_error_message(&err));
		fail();
	}
	snprintf(out, sizeof out, "%.*s%.*s", (int)res.out.len, (const char *)res.out.data,
		 (int)res.err.len, (const char *)res.err.data);
	msb_exec_result_free(&res);
	if (getenv("EGRESS_DEBUG"))
		fprintf(stderr, "guest %s %s: %s\n", mode, a ? a : "", out);
	return out;
}

/* The probe in the test's sandbox. */
static const char *guest(const char *mode, const char *a, const char *b, const char *c,
			 const char *d)
{
	return guest_in(W.box, mode, a, b, c, d);
}

static int setup(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		printf("SKIP: the test peers need a network namespace of the test's own (root)\n");
		exit(MSB_TEST_SKIP);
	}
	if (system("command -v python3 >/dev/null 2>&1 && command -v ip >/dev/null 2>&1") != 0) {
		printf("SKIP: needs python3 (the guest's probe) and ip (the peers' namespace)\n");
		exit(MSB_TEST_SKIP);
	}
	if (egress_peer_start(&W.peer) != 0) {
		egress_peer_stop(&W.peer);
		printf("SKIP: the link-local test peers could not be made\n");
		exit(MSB_TEST_SKIP);
	}
	snprintf(W.dir, sizeof W.dir, "/tmp/msb-egress-XXXXXX");
	if (!mkdtemp(W.dir))
		return -1;
	chmod(W.dir, 0711);
	char path[128];
	snprintf(path, sizeof path, "%s/sandbox.yaml", W.dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	/* A microVM's guest is busybox: it runs the probe from the python store image, and
	 * needs the in-tree init, relay and guest kernel. */
	char extra[1024] = "", image[64] = "";
#ifdef EGRESS_QEMU
	const char *guest_dir = getenv("MSB_QEMU_GUEST");
	snprintf(extra, sizeof extra,
		 "      init: %s/plugins/qemu/msb-qemu-init\n"
		 "      relay: %s/plugins/qemu/msb-qemu-relay\n"
		 "      guest_dir: %s\n"
		 "      boot_timeout: 120s\n",
		 MSB_TOP_BUILDDIR, MSB_TOP_BUILDDIR,
		 guest_dir && *guest_dir ? guest_dir : MSB_TOP_BUILDDIR "/plugins/qemu/guest");
	snprintf(image, sizeof image, "    image: python\n");
#endif
	fprintf(f,
		"version: 1\n"
		"router:\n"
		"  min_isolation: os_process\n"
		"backends:\n"
		"  - plugin: %s\n"
		"    config:\n"
		"%s"
		"      state_dir: %s/state\n"
		"      agent: %s\n"
		"      egress_ports: [80]\n"
		"      egress_max_connections: 16\n"
		"      egress_idle_timeout: 30s\n"
		"      egress_allow_ranges: [%s]\n"
		"      egress_test_hosts:\n"
		"        peer.test: %s\n"
		"        other.test: %s\n"
		"        loop.test: 127.0.0.1\n"
		"        meta.test: 169.254.169.254\n"
		"specs:\n"
		"  web:\n"
		"%s"
		"    egress: allowlist\n"
		"    egress_allow: [peer.test, loop.test, meta.test]\n",
		MSB_TEST_MODULE("plugins/" EGRESS_BACKEND, EGRESS_BACKEND), extra, W.dir, AGENT,
		W.peer.subnet, W.peer.listed, W.peer.other, image);
	fclose(f);
	W.observer = (msb_observer)MSB_OBSERVER_INIT;
	W.observer.egress_observed = on_egress;
	msb_host_init(&W.host, &W.observer);
	msb_config_options opts = MSB_CONFIG_OPTIONS_INIT;
	opts.host = &W.host;
	opts.observer = &W.observer;
	msb_error err = MSB_ERROR_INIT;
	const msb_spec *spec = NULL;
	msb_key key = { "conv", "t1", "agent", "" };
	if (msb_config_load(path, &opts, &W.cfg, &err) != MSB_OK ||
	    msb_config_router(W.cfg, &W.router, &err) != MSB_OK ||
	    msb_config_spec_find(W.cfg, "web", &spec, &err) != MSB_OK ||
	    msb_router_acquire(W.router, &key, spec, &W.box, &err) != MSB_OK) {
		fprintf(stderr, "setting up %s with egress allowlist: %s\n", EGRESS_BACKEND,
			msb_error_message(&err));
		return -1;
	}
	char pattern[160];
	snprintf(pattern, sizeof pattern, "%s/state/sk-*/egress/px", W.dir);
	glob_t g;
	if (glob(pattern, 0, NULL, &g) != 0 || g.gl_pathc != 1)
		return -1;
	snprintf(W.socket_path, sizeof W.socket_path, "%s", g.gl_pathv[0]);
	globfree(&g);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	msb_sandbox_release(W.box);
	if (W.router) {
		msb_scope_purge purge = { 0 };
		msb_router_dispose_scope(W.router, "conv", "t1", &purge);
		msb_scope_purge_free(&purge);
		/* test_other_sandbox_cannot_connect's, should it have failed half-way. */
		msb_router_dispose_scope(W.router, "conv", "t2", &purge);
		msb_scope_purge_free(&purge);
	}
	msb_router_free(W.router);
	msb_config_free(W.cfg);
	egress_peer_stop(&W.peer);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", W.dir);
	return system(cmd) == 0 ? 0 : -1;
}

static char token_listed[48], token_other[48];

static void tokens(void)
{
	snprintf(token_listed, sizeof token_listed, "token-%s", W.peer.listed);
	snprintf(token_other, sizeof token_other, "token-%s", W.peer.other);
}

/* The listed name's own loopback address: the forwarder, the host proxy, the peer. */
static void test_listed_answers_by_address(void **state)
{
	(void)state;
	tokens();
	seen_reset();
	const char *out = guest("raw", "127.0.1.1", "80", "GET / HTTP/1.0\\r\\n\\r\\n", NULL);
	assert_non_null(strstr(out, token_listed));
	assert_true(seen_wait("ALLOW peer.test:80 key=conv/t1"));
}

static void test_listed_answers_by_proxy(void **state)
{
	(void)state;
	tokens();
	seen_reset();
	const char *out = guest("raw", "127.0.0.1", "3128",
				"GET http://peer.test/x HTTP/1.1\\r\\nHost: peer.test\\r\\n\\r\\n", NULL);
	assert_non_null(strstr(out, token_listed));
	assert_true(seen_wait("ALLOW peer.test:80"));
	/* The request reached the peer in origin form: the proxy rewrote the target. */
	assert_non_null(strstr(egress_peer_log(&W.peer), "GET /x HTTP/1.1"));
}

#ifdef EGRESS_HOSTS_FILE
/* The boundary mounts the hosts file: a tool that honours no proxy reaches the name too, and
 * an unlisted name still resolves to nothing. */
static void test_listed_answers_by_name(void **state)
{
	(void)state;
	tokens();
	seen_reset();
	const char *out = guest("raw", "peer.test", "80", "GET / HTTP/1.0\\r\\n\\r\\n", NULL);
	assert_non_null(strstr(out, token_listed));
	assert_true(seen_wait("ALLOW peer.test:80 key=conv/t1"));
	out = guest("resolve", "other.test", NULL, NULL, NULL);
	assert_null(strstr(out, "RESOLVED"));
}
#endif

static void test_unlisted_name_refused(void **state)
{
	(void)state;
	tokens();
	seen_reset();
	unsigned before = egress_peer_count(&W.peer, "tcp", W.peer.other);
	const char *out = guest("raw", "127.0.0.1", "3128",
				"CONNECT other.test:80 HTTP/1.1\\r\\n\\r\\n", NULL);
	assert_non_null(strstr(out, "403"));
	assert_null(strstr(out, token_other));
	assert_true(seen_wait("DENY other.test:80 key=conv/t1 (the name is not on the spec's egress_allow)"));
	assert_int_equal(egress_peer_count(&W.peer, "tcp", W.peer.other), before);
}

static void test_address_literal_refused(void **state)
{
	(void)state;
	tokens();
	seen_reset();
	unsigned before = egress_peer_count(&W.peer, "tcp", W.peer.listed);
	char req[128];
	snprintf(req, sizeof req, "CONNECT %s:80 HTTP/1.1\\r\\n\\r\\n", W.peer.listed);
	const char *out = guest("raw", "127.0.0.1", "3128", req, NULL);
	assert_non_null(strstr(out, "403"));
	char needle[96];
	snprintf(needle, sizeof needle, "DENY %s:80", W.peer.listed);
	assert_true(seen_wait(needle));
	assert_true(seen_wait("an address literal"));
	/* Dialled directly, the address has no route at all: the namespace is loopback only. */
	out = guest("raw", W.peer.listed, "80", "GET / HTTP/1.0\\r\\n\\r\\n", NULL);
	assert_non_null(strstr(out, "FAIL"));
	assert_int_equal(egress_peer_count(&W.peer, "tcp", W.peer.listed), before);
}

/* Listed names whose answers are the host's loopback and the metadata service. */
static void test_refused_ranges(void **state)
{
	(void)state;
	seen_reset();
	const char *out = guest("raw", "127.0.1.2", "80", "GET / HTTP/1.0\\r\\n\\r\\n", NULL);
	assert_null(strstr(out, "200 OK"));
	/* A refusal is a reset the guest sees at once, not a connection left to time out. */
	/* (the reset may meet the request's send or the read of its answer) */
	assert_true(strstr(out, "ConnectionResetError") || strstr(out, "BrokenPipeError"));
	assert_null(strstr(out, "timeout"));
	assert_true(seen_wait("DENY loop.test:80 key=conv/t1 (it resolves only to refused addresses (loopback 127.0.0.0/8))"));
	out = guest("raw", "127.0.0.1", "3128", "CONNECT meta.test:80 HTTP/1.1\\r\\n\\r\\n", NULL);
	assert_non_null(strstr(out, "403"));
	assert_true(seen_wait("DENY meta.test:80 key=conv/t1 (it resolves only to refused addresses (metadata 169.254.169.254))"));
	/* The host's own loopback by literal, through the proxy. */
	out = guest("raw", "127.0.0.1", "3128", "CONNECT 127.0.0.1:80 HTTP/1.1\\r\\n\\r\\n", NULL);
	assert_non_null(strstr(out, "403"));
	assert_true(seen_wait("DENY 127.0.0.1:80"));
}

/* No DNS path, no UDP, no IPv6: nothing leaves, and the peers see nothing. */
static void test_no_dns_udp_ipv6(void **state)
{
	(void)state;
	unsigned before = egress_peer_count(&W.peer, "udp", W.peer.listed);
	const char *out = guest("udp", W.peer.listed, "53", NULL, NULL);
	assert_null(strstr(out, "SENT"));
	out = guest("udp", W.peer.listed, "9999", NULL, NULL);
	assert_null(strstr(out, "SENT"));
	/* No resolver answers a name off the list (a listed one may be in the hosts file). */
	out = guest("resolve", "other.test", NULL, NULL, NULL);
	assert_null(strstr(out, "RESOLVED"));
	out = guest("v6", "fd00::1", "80", NULL, NULL);
	assert_null(strstr(out, "CONNECTED"));
	out = guest("v6", "::1", "3128", NULL, NULL);
	assert_null(strstr(out, "CONNECTED"));
	assert_int_equal(egress_peer_count(&W.peer, "udp", W.peer.listed), before);
	assert_int_equal(egress_peer_count(&W.peer, "udp", W.peer.other), 0);
}

/* A second CONNECT inside an allowed tunnel is bytes for the same peer, never a new hop. */
static void test_smuggled_connect_stays_put(void **state)
{
	(void)state;
	tokens();
	unsigned other = egress_peer_count(&W.peer, "tcp", W.peer.other);
	const char *out = guest("raw", "127.0.0.1", "3128",
				"CONNECT peer.test:80 HTTP/1.1\\r\\n\\r\\n"
				"CONNECT other.test:80 HTTP/1.1\\r\\n\\r\\n", NULL);
	assert_non_null(strstr(out, "200 Connection established"));
	assert_non_null(strstr(out, token_listed));
	assert_null(strstr(out, token_other));
	char needle[96];
	snprintf(needle, sizeof needle, "tcp %s CONNECT other.test:80", W.peer.listed);
	assert_non_null(strstr(egress_peer_log(&W.peer), needle));
	assert_int_equal(egress_peer_count(&W.peer, "tcp", W.peer.other), other);
}

static void test_host_header_for_another_host_refused(void **state)
{
	(void)state;
	tokens();
	seen_reset();
	unsigned listed = egress_peer_count(&W.peer, "tcp", W.peer.listed);
	unsigned other = egress_peer_count(&W.peer, "tcp", W.peer.other);
	const char *out = guest("raw", "127.0.0.1", "3128",
				"GET http://peer.test/ HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n", NULL);
	assert_non_null(strstr(out, "403"));
	assert_true(seen_wait("(its Host header names another host than its target)"));
	/* Through the named address, a Host header is just bytes for peer.test. */
	out = guest("raw", "127.0.1.1", "80", "GET / HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n", NULL);
	assert_non_null(strstr(out, token_listed));
	assert_int_equal(egress_peer_count(&W.peer, "tcp", W.peer.listed), listed + 1);
	assert_int_equal(egress_peer_count(&W.peer, "tcp", W.peer.other), other);
}

#ifndef EGRESS_QEMU
/* Anyone inside may speak to the proxy's socket: forged hellos are refused, reported. */
static void test_forged_hellos(void **state)
{
	(void)state;
	tokens();
	seen_reset();
	/* magic "MSBE", kind 1 (named), port 80, index 7: no such name. */
	const char *out = guest("hello", W.socket_path, "4d5342450100500007000000", NULL, NULL);
	assert_null(strstr(out, "token-"));
	assert_true(seen_wait("DENY #7:80 key=conv/t1 (no allowed name has that loopback address)"));
	out = guest("hello", W.socket_path, "00000000000000000000000000", NULL, NULL);
	assert_true(seen_wait("(not a forwarder's hello)"));
	/* Index 0, port 22: a listed name on a port that is not allowed. */
	out = guest("hello", W.socket_path, "4d5342450100160000000000", NULL, NULL);
	assert_true(seen_wait("DENY peer.test:22 key=conv/t1 (port 22 is not among the allowed ports (80))"));
	/* With no descriptor the socket itself is the stream: still only peer.test. */
	out = guest("hello", W.socket_path, "4d5342450100500000000000",
		    "GET / HTTP/1.0\\r\\n\\r\\n", NULL);
	assert_non_null(strstr(out, token_listed));
	/* A proxy hello then garbage: refused as a request, not crashed on. */
	out = guest("hello", W.socket_path, "4d5342450200380c00000000", "\\x01\\x02 \\r\\n\\r\\n", NULL);
	assert_non_null(strstr(out, "403"));
}
#endif

/* The uid recorded in the sandbox directory `dir` (process as root), or -1. */
static long sandbox_uid_of(const char *dir)
{
	char path[320];
	snprintf(path, sizeof path, "%s/uid", dir);
	FILE *f = fopen(path, "r");
	long uid = -1;
	if (f && fscanf(f, "%ld", &uid) != 1)
		uid = -1;
	if (f)
		fclose(f);
	return uid;
}

/* 1 when a process of `uid` can connect to `path`, 0 when refused with EACCES, 2 otherwise. */
static int connect_as(long uid, const char *path)
{
	pid_t pid = fork();
	if (pid == 0) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		if (strlen(path) >= sizeof sa.sun_path)
			_exit(2);
		memcpy(sa.sun_path, path, strlen(path) + 1);
		if (setgroups(0, NULL) < 0 || setgid((gid_t)uid) < 0 || setuid((uid_t)uid) < 0)
			_exit(2);
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
			_exit(1);
		_exit(errno == EACCES ? 0 : 2);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

/*
 * Another sandbox cannot reach this one's proxy socket: inside it, the path is not there
 * (its boundary carries its own egress directory alone); and where each sandbox has a uid
 * of its own (process as root), the directory admits this sandbox's uid alone — tried on the
 * host with every directory above it opened, so the directory itself is what refuses.
 */
static void test_other_sandbox_cannot_connect(void **state)
{
	(void)state;
	tokens();
	msb_error err = MSB_ERROR_INIT;
	const msb_spec *spec = NULL;
	msb_key key = { "conv", "t2", "agent", "" };
	msb_sandbox *other = NULL;
	if (msb_config_spec_find(W.cfg, "web", &spec, &err) != MSB_OK ||
	    msb_router_acquire(W.router, &key, spec, &other, &err) != MSB_OK) {
		fprintf(stderr, "a second sandbox: %s\n", msb_error_message(&err));
		fail();
	}
	/* Its own way out works (so what follows is not a dead sandbox's refusal)... */
	const char *out = guest_in(other, "raw", "127.0.1.1", "80", "GET / HTTP/1.0\\r\\n\\r\\n", NULL);
	assert_non_null(strstr(out, token_listed));
	/* ...the first's does not exist for it. */
	out = guest_in(other, "hello", W.socket_path, "4d5342450100500000000000",
		       "GET / HTTP/1.0\\r\\n\\r\\n", NULL);
	printf("the other sandbox at the first's socket: %s", out);
	assert_null(strstr(out, "token-"));
	assert_non_null(strstr(out, "FAIL"));

	char mine[256], state_dir[128], pattern[160];
	snprintf(mine, sizeof mine, "%s", W.socket_path);
	*strrchr(mine, '/') = '\0'; /* <dir>/egress */
	*strrchr(mine, '/') = '\0'; /* <dir> */
	snprintf(state_dir, sizeof state_dir, "%s/state", W.dir);
	snprintf(pattern, sizeof pattern, "%s/sk-*", state_dir);
	long uid = sandbox_uid_of(mine), other_uid = -1;
	glob_t g;
	if (glob(pattern, 0, NULL, &g) == 0)
		for (size_t i = 0; i < g.gl_pathc; i++)
			if (strcmp(g.gl_pathv[i], mine) && sandbox_uid_of(g.gl_pathv[i]) > 0)
				other_uid = sandbox_uid_of(g.gl_pathv[i]); /* not a lock file */
	globfree(&g);
	if (uid > 0 && other_uid > 0) {
		assert_int_not_equal(uid, other_uid);
		assert_int_equal(chmod(state_dir, 0711), 0);
		assert_int_equal(chmod(mine, 0711), 0);
		int theirs = connect_as(other_uid, W.socket_path);
		int own = connect_as(uid, W.socket_path);
		chmod(mine, 0700);
		chmod(state_dir, 0700);
		assert_int_equal(theirs, 0);
		assert_int_equal(own, 1);
	} else {
		printf("(no per-sandbox uids on %s: the host-side check is process's)\n",
		       EGRESS_BACKEND);
	}
	msb_sandbox_release(other);
	msb_scope_purge purge = { 0 };
	msb_router_dispose_scope(W.router, "conv", "t2", &purge);
	msb_scope_purge_free(&purge);
}

/* A flood is bounded by egress_max_connections (16), refused cleanly, and survived. */
static void test_connection_flood(void **state)
{
	(void)state;
	tokens();
	seen_reset();
	const char *out = guest("flood", "200", NULL, NULL, NULL);
	printf("flood: %s", out);
	unsigned refused = 0;
	assert_int_equal(sscanf(strstr(out, "REFUSED") ? strstr(out, "REFUSED") : "", "REFUSED %u",
				&refused), 1);
	/* 200 opened, at most 16 held: the rest were refused (reset), none hung. */
	assert_true(refused >= 200 - 16);
	assert_true(seen_wait("(the sandbox already has 16 connections open (egress_max_connections))"));
	/* Every one the forwarder handed over was decided: refused ones are reported. */
	printf("flood: %u refusals reported\n", seen_count("DENY (any):0"));
	assert_true(seen_count("DENY (any):0") >= 150);
	/* The proxy still serves once the flood's connections are gone. */
	out = guest("raw", "127.0.1.1", "80", "GET / HTTP/1.0\\r\\n\\r\\n", NULL);
	assert_non_null(strstr(out, token_listed));
}

#ifdef EGRESS_QEMU
/*
 * Root inside the VM owns the egress port: it kills the forwarder (agent 0's child, the one
 * holding the port) and speaks the mux itself.
 * Forged hellos are the proxy's to refuse and report, malformed frames are dropped, and a
 * frame longer than any frame ends the host's end of the stream; the host survives, and so
 * does the VM's own channel to its agents. Last: the VM has no way out afterwards.
 */
static void test_forged_frames(void **state)
{
	(void)state;
	seen_reset();
	const char *out = guest("frames", "msb.egress", NULL, NULL, NULL);
	printf("frames: %s", out);
	assert_non_null(strstr(out, "KILLED"));
	assert_non_null(strstr(out, "403 Forbidden"));
	assert_null(strstr(out, "token-"));
	assert_non_null(strstr(out, "DONE"));
	assert_true(seen_wait("DENY #7:80 key=conv/t1 (no allowed name has that loopback address)"));
	assert_true(seen_wait("DENY peer.test:22 key=conv/t1 (port 22 is not among the allowed ports (80))"));
	assert_true(seen_wait("DENY other.test:80 key=conv/t1 (the name is not on the spec's egress_allow)"));
	/* The host's end of the port is gone, the VM's agents still answer. */
	char pattern[160];
	snprintf(pattern, sizeof pattern, "%s/state/sk-*/egress.pid", W.dir);
	glob_t g;
	assert_int_equal(glob(pattern, 0, NULL, &g), 0);
	long pid = 0;
	FILE *f = fopen(g.gl_pathv[0], "r");
	globfree(&g);
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld", &pid), 1);
	fclose(f);
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/%ld/stat", pid);
	bool gone = false;
	for (int i = 0; i < 100 && !gone; i++) {
		gone = access(proc, F_OK) != 0;
		struct timespec ts = { 0, 50 * 1000000L };
		nanosleep(&ts, NULL);
	}
	assert_true(gone);
	out = guest("resolve", "peer.test", NULL, NULL, NULL);
	assert_non_null(strstr(out, "RESOLVED"));
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listed_answers_by_address),
		cmocka_unit_test(test_listed_answers_by_proxy),
#ifdef EGRESS_HOSTS_FILE
		cmocka_unit_test(test_listed_answers_by_name),
#endif
		cmocka_unit_test(test_unlisted_name_refused),
		cmocka_unit_test(test_address_literal_refused),
		cmocka_unit_test(test_refused_ranges),
		cmocka_unit_test(test_no_dns_udp_ipv6),
		cmocka_unit_test(test_smuggled_connect_stays_put),
		cmocka_unit_test(test_host_header_for_another_host_refused),
#ifndef EGRESS_QEMU /* the socket is not in the VM: test_forged_frames is its attack */
		cmocka_unit_test(test_forged_hellos),
#endif
		cmocka_unit_test(test_other_sandbox_cannot_connect),
		cmocka_unit_test(test_connection_flood),
#ifdef EGRESS_QEMU
		cmocka_unit_test(test_forged_frames),
#endif
	};
	return cmocka_run_group_tests_name("egress allowlist on " EGRESS_BACKEND, tests, setup,
					   teardown);
}
