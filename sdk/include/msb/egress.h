/*
 * msb/egress.h — the egress enforcer every agent-backed backend shares (backend SDK):
 * `egress: allowlist` made real, with every decision reported.
 *
 * The sandbox keeps no route to anything (its network namespace holds loopback alone). Its
 * only way out is a unix socket the host's proxy listens on, one per sandbox, reached
 * through the file system (no route needed). Inside, the guest agent's forwarder
 * (msb-agent --egress-*) gives each allowed name its own loopback address, 127.0.1.1 for the
 * first, 127.0.1.2 for the next (msb_egress_guest_address), on each allowed port, plus an
 * HTTP proxy on 127.0.0.1:MSB_EGRESS_PROXY_PORT for tools that honour HTTP(S)_PROXY. It
 * passes each accepted connection to the host with "which name, which port" decided by the
 * address that was dialled — never by SNI or a Host header.
 *
 * The host decides, from the spec's egress_allow alone: exact names (no `*.suffix`: the seed
 * speaks only of "the named hosts"), compared without case; the configured ports (443 and
 * 80 by default); the name is resolved on the host (getaddrinfo, or only the test map
 * `egress_test_hosts`, so a test never resolves a real name), off the proxy's loop and for
 * at most `egress_resolve_timeout`, and an address in a private,
 * loopback, link-local, CGNAT, multicast, reserved or metadata range is refused unless the
 * operator's `egress_allow_ranges` lists a range holding it (a metadata address only when a
 * range of exactly that address is listed). Anything else the guest sends on the socket is
 * untrusted bytes: a name index out of range, a port not allowed, a CONNECT to an unlisted
 * name or an address literal, a Host header naming another host are refused, reported, and
 * the guest's connection is reset (a refusal, never a hang).
 *
 * The wire from forwarder to host is one message per connection on a fresh connection to
 * the sandbox's socket: msb_egress_hello, optionally carrying the guest's TCP socket as
 * SCM_RIGHTS (same kernel: process, bwrap). Without a descriptor the unix connection itself
 * is the guest's stream (a boundary whose guest sockets are not host descriptors).
 */
#ifndef MSB_EGRESS_H
#define MSB_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include <msb/error.h>
#include <msb/node.h>
#include <msb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The backend `config:` keys msb_egress_config_read takes. */
#define MSB_EGRESS_CONFIG_KEYS                                                        \
	"egress_ports", "egress_max_connections", "egress_idle_timeout",             \
		"egress_max_bytes", "egress_allow_ranges", "egress_test_hosts",        \
		"egress_resolve_timeout"

/* The in-guest HTTP proxy's port on 127.0.0.1. */
#define MSB_EGRESS_PROXY_PORT 3128
/* At most this many names per spec, and ports per backend. */
#define MSB_EGRESS_MAX_NAMES 250
#define MSB_EGRESS_MAX_PORTS 16
/*
 * Beside the proxy's socket the driver writes a hosts file mapping each allowed name to its
 * loopback address (and localhost), for a boundary that can mount it as the guest's
 * /etc/hosts: then tools that honour no proxy variable reach the names too, and the guest
 * still has no resolver that forwards anything anywhere.
 */
#define MSB_EGRESS_HOSTS_LEAF "hosts"

typedef struct msb_egress_range {
	int family;            /* AF_INET or AF_INET6 */
	uint8_t addr[16];      /* network order */
	unsigned prefix;
} msb_egress_range;

typedef struct msb_egress_test_host {
	char *name;
	struct sockaddr_storage addr; /* port 0 */
	socklen_t len;
	double delay;                 /* seconds the answer takes: a slow DNS server's stand-in */
} msb_egress_test_host;

typedef struct msb_egress_config {
	uint16_t ports[MSB_EGRESS_MAX_PORTS]; /* egress_ports; default 443, 80 */
	size_t n_ports;
	uint64_t max_connections;  /* egress_max_connections: open at once per sandbox; 64 */
	double idle_timeout;       /* egress_idle_timeout: seconds without a byte; 60 */
	uint64_t max_bytes;        /* egress_max_bytes: per connection, both ways; 1 GiB */
	msb_egress_range *allow_ranges; /* egress_allow_ranges: CIDRs refused ranges may use */
	size_t n_allow_ranges;
	msb_egress_test_host *test_hosts; /* egress_test_hosts: name → address; when stated,
					     the only resolver (no DNS at all) */
	size_t n_test_hosts;
	bool has_test_hosts;
	double resolve_timeout;    /* egress_resolve_timeout: seconds a name may take; 5 */
} msb_egress_config;

/* The defaults above, with nothing to free. */
void msb_egress_config_defaults(msb_egress_config *c);
/* Read the egress_* keys of a backend's `config:` node (NULL: defaults), refusing bad ones. */
msb_errc msb_egress_config_read(const msb_node *config, msb_egress_config *c, msb_error *err);
void msb_egress_config_free(msb_egress_config *c);

/*
 * Refuse an egress_allow list the enforcer cannot honour as written: an address literal
 * (names, not addresses), a wildcard, an invalid host name, a duplicate, more than
 * MSB_EGRESS_MAX_NAMES. The message names the entry.
 */
msb_errc msb_egress_allow_check(const char *const *allow, msb_error *err);
/* Whether `name` is in `allow` (exact, case-insensitive); its index in *index. */
bool msb_egress_allow_find(const char *const *allow, const char *name, size_t *index);

/*
 * Whether an address lies in a range refused by default and not re-opened by the config;
 * *why names the range ("loopback 127.0.0.0/8") when refused.
 */
bool msb_egress_address_refused(const msb_egress_config *c, const struct sockaddr *sa,
				const char **why);
/*
 * Resolve `name` on the host (the test map only, when the config has one) and pick the
 * first address not refused, with `port` set. On failure returns false with `why` filled.
 * Blocks as long as the resolver takes (a test map entry's delay too): the proxy calls it
 * from its resolver threads only.
 */
bool msb_egress_resolve(const msb_egress_config *c, const char *name, unsigned port,
			struct sockaddr_storage *out, socklen_t *len, char *why, size_t why_cap);

/* The loopback address the guest dials for allowed name number `index`: "127.0.1.1" …
 * (inline: the static agent links none of libmsb-sdk's resolver code). */
static inline void msb_egress_guest_address(size_t index, char out[16])
{
	snprintf(out, 16, "127.0.%u.%u", (unsigned)(1 + index / 250), (unsigned)(1 + index % 250));
}

/*
 * Let an unprivileged forwarder bind the allowed ports (80, 443 are below 1024) inside the
 * network namespace `netns_fd` (ip_unprivileged_port_start = 0 there, per namespace). For a
 * boundary that drops every capability; the namespace must hold loopback alone.
 */
msb_errc msb_egress_netns_low_ports(int netns_fd, msb_error *err);

/* One message from forwarder to host, the first bytes on a connection to the socket. */
#define MSB_EGRESS_MAGIC 0x4542534du /* "MSBE" */
enum { MSB_EGRESS_NAMED = 1, MSB_EGRESS_PROXY = 2 };
typedef struct msb_egress_hello {
	uint32_t magic;
	uint16_t kind;   /* MSB_EGRESS_NAMED: name `index`, `port`; MSB_EGRESS_PROXY: HTTP proxy */
	uint16_t port;
	uint32_t index;
} msb_egress_hello;

/*
 * Where decisions go: `destination` is "name:port" (a guest-chosen name for proxy requests:
 * untrusted text, made printable and bounded), `reason` NULL when allowed. Called from the
 * proxy's thread.
 */
typedef void (*msb_egress_report)(void *ctx, const msb_key *key, const char *destination,
				  bool allowed, const char *reason);

typedef struct msb_egress_proxy msb_egress_proxy;

/* Start the proxy's thread (one per backend instance, serving every sandbox it is given). */
msb_errc msb_egress_proxy_new(const msb_egress_config *c, msb_egress_report report, void *ctx,
			      msb_egress_proxy **out, msb_error *err);
/*
 * Listen for sandbox `key` on `socket_path` (replacing a stale socket there, and any earlier
 * registration of that path): connections on it are decided against `allow` (copied).
 */
msb_errc msb_egress_proxy_serve(msb_egress_proxy *p, const msb_key *key,
				const char *const *allow, const char *socket_path, msb_error *err);
/* Stop serving `socket_path` (its open connections are closed) and unlink it. */
void msb_egress_proxy_forget(msb_egress_proxy *p, const char *socket_path);
/* Stop the thread, close everything, unlink every socket. NULL is fine. */
void msb_egress_proxy_free(msb_egress_proxy *p);

#ifdef __cplusplus
}
#endif
#endif
