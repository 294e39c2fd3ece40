/*
 * netpeer.c — link-local test peers in a network namespace of the kit's own (netpeer.h).
 *
 * The namespace is named with the kit's pid and a counter, so concurrent runs never meet,
 * and made with iproute2 (`ip netns add`, a veth pair), which needs root: without it the
 * allowlist cases are skipped, saying so. The peers' sockets are made on a short-lived
 * thread that entered the namespace (a socket stays in the namespace it was made in), and
 * served from the kit's own threads (peer.c). Nothing is sent anywhere but into it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "netpeer.h"

static int sh(const char *fmt, ...) MSB_PRINTF(1, 2);
static int sh(const char *fmt, ...)
{
	char cmd[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	int st = system(cmd);
	return st == 0 ? 0 : -1;
}

typedef struct maker {
	const char *ns;
	const char *listed, *other;
	int fds[3];
	int error;
} maker;

static void *make_sockets(void *arg)
{
	maker *m = arg;
	char path[80];
	snprintf(path, sizeof path, "/run/netns/%s", m->ns);
	int nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) != 0) {
		m->error = errno;
		if (nsfd >= 0)
			close(nsfd);
		return NULL;
	}
	close(nsfd);
	m->fds[0] = conf_peer_listen(m->listed, 80);
	m->fds[1] = conf_peer_listen(m->other, 80);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(53) };
	inet_pton(AF_INET, m->listed, &sa.sin_addr);
	m->fds[2] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (m->fds[2] >= 0 && bind(m->fds[2], (struct sockaddr *)&sa, sizeof sa) != 0) {
		close(m->fds[2]);
		m->fds[2] = -1;
	}
	if (m->fds[0] < 0 || m->fds[1] < 0 || m->fds[2] < 0)
		m->error = errno ? errno : EIO;
	return NULL;
}

static bool same_link_local_29(const char *a, const char *b, char *host, size_t cap)
{
	struct in_addr x, y;
	if (inet_pton(AF_INET, a, &x) != 1 || inet_pton(AF_INET, b, &y) != 1)
		return false;
	uint32_t hx = ntohl(x.s_addr), hy = ntohl(y.s_addr);
	if ((hx >> 16) != 0xa9fe || (hx & ~7u) != (hy & ~7u) || hx == hy || (hx & 7u) == 1 ||
	    (hy & 7u) == 1 || (hx & 7u) == 0 || (hy & 7u) == 0 || (hx & 7u) == 7 || (hy & 7u) == 7)
		return false;
	struct in_addr h = { htonl((hx & ~7u) | 1u) };
	inet_ntop(AF_INET, &h, host, (socklen_t)cap);
	return true;
}

msb_errc conf_netpeer_start(conf_netpeer *np, const char *listed, const char *other,
			    const char *listed_token, const char *other_token, msb_error *err)
{
	static unsigned counter;
	memset(np, 0, sizeof *np);
	np->udp = -1;
	char host[INET_ADDRSTRLEN];
	if (!same_link_local_29(listed, other, host, sizeof host))
		return msb_error_set(err, MSB_E_VALUE, "the test map's %s and %s must be two host "
				     "addresses of one 169.254.0.0/16 /29 other than its first "
				     "(the host side's)", listed, other);
	unsigned n = __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST);
	long pid = (long)getpid();
	snprintf(np->ns, sizeof np->ns, "msbconf%ld-%u", pid, n);
	snprintf(np->host_if, sizeof np->host_if, "mscH%ld%u", pid % 100000, n % 100);
	snprintf(np->ns_if, sizeof np->ns_if, "mscN%ld%u", pid % 100000, n % 100);
	if (geteuid() != 0 || sh("ip netns add %s 2>/dev/null", np->ns) != 0)
		return msb_error_set(err, MSB_E_PERMISSION, "the kit could not make a network "
				     "namespace for its link-local peers (ip netns add needs root "
				     "and iproute2)");
	np->made = true;
	if (sh("ip link add %s type veth peer name %s && ip link set %s netns %s && "
	       "ip addr add %s/29 dev %s && ip link set %s up && ip -n %s addr add %s/29 dev %s && "
	       "ip -n %s addr add %s/29 dev %s && ip -n %s link set %s up && ip -n %s link set lo up",
	       np->host_if, np->ns_if, np->ns_if, np->ns, host, np->host_if, np->host_if, np->ns,
	       listed, np->ns_if, np->ns, other, np->ns_if, np->ns, np->ns_if, np->ns) != 0) {
		conf_netpeer_stop(np);
		return msb_error_set(err, MSB_E_OS, "the kit could not wire a veth pair into %s",
				     np->ns);
	}
	maker m = { np->ns, listed, other, { -1, -1, -1 }, 0 };
	pthread_t t;
	if (pthread_create(&t, NULL, make_sockets, &m) != 0)
		m.error = EAGAIN;
	else
		pthread_join(t, NULL);
	msb_errc rc = MSB_OK;
	if (m.error)
		rc = msb_error_set_errno(err, MSB_E_OS, m.error, "the kit's peers in %s", np->ns);
	if (rc == MSB_OK) {
		rc = conf_peer_start_fd(&np->listed, m.fds[0], listed, listed_token, err);
		m.fds[0] = -1;
		np->listed_up = rc == MSB_OK;
	}
	if (rc == MSB_OK) {
		rc = conf_peer_start_fd(&np->other, m.fds[1], other, other_token, err);
		m.fds[1] = -1;
		np->other_up = rc == MSB_OK;
	}
	np->udp = m.fds[2];
	m.fds[2] = -1;
	for (int i = 0; i < 3; i++)
		if (m.fds[i] >= 0)
			close(m.fds[i]);
	if (rc != MSB_OK)
		conf_netpeer_stop(np);
	return rc;
}

unsigned conf_netpeer_datagrams(conf_netpeer *np)
{
	unsigned n = 0;
	char buf[512];
	while (np->udp >= 0 && recv(np->udp, buf, sizeof buf, MSG_DONTWAIT) >= 0)
		n++;
	return n;
}

void conf_netpeer_stop(conf_netpeer *np)
{
	if (np->listed_up)
		conf_peer_stop(&np->listed);
	if (np->other_up)
		conf_peer_stop(&np->other);
	np->listed_up = np->other_up = false;
	if (np->udp >= 0)
		close(np->udp);
	np->udp = -1;
	if (np->made)
		sh("ip netns del %s 2>/dev/null; ip link del %s 2>/dev/null; true", np->ns, np->host_if);
	np->made = false;
}
