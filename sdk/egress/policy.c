/*
 * policy.c — what the egress enforcer allows: the names a spec lists, the ports the backend
 * allows, and the addresses a name may resolve to (msb/egress.h).
 *
 * Everything here is a pure decision over host-held data, so the proxy (proxy.c) and the
 * tests share one answer. The default-refused ranges are the ones a guest could use to
 * reach the host itself, its neighbours or a cloud's metadata service through a name that
 * happens (or was made) to resolve there — DNS rebinding is the classic way in.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <msb/egress.h>

#include "egress_internal.h"

void msb_egress_config_defaults(msb_egress_config *c)
{
	memset(c, 0, sizeof *c);
	c->ports[0] = 443;
	c->ports[1] = 80;
	c->n_ports = 2;
	c->max_connections = 64;
	c->idle_timeout = 60;
	c->max_bytes = 1ull << 30;
	c->resolve_timeout = 5;
}

void msb_egress_config_free(msb_egress_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_test_hosts; i++)
		free(c->test_hosts[i].name);
	free(c->test_hosts);
	free(c->allow_ranges);
	c->test_hosts = NULL;
	c->allow_ranges = NULL;
	c->n_test_hosts = c->n_allow_ranges = 0;
}

/* An address literal, IPv4 or IPv6, into `sa` with port 0. */
static bool parse_address(const char *text, struct sockaddr_storage *sa, socklen_t *len)
{
	memset(sa, 0, sizeof *sa);
	struct sockaddr_in *v4 = (struct sockaddr_in *)sa;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)sa;
	if (inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		*len = sizeof *v4;
		return true;
	}
	if (inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		*len = sizeof *v6;
		return true;
	}
	return false;
}

static bool parse_range(const char *text, msb_egress_range *r)
{
	char buf[64];
	const char *slash = strchr(text, '/');
	size_t n = slash ? (size_t)(slash - text) : strlen(text);
	if (n == 0 || n >= sizeof buf)
		return false;
	memcpy(buf, text, n);
	buf[n] = '\0';
	memset(r, 0, sizeof *r);
	unsigned max;
	if (inet_pton(AF_INET, buf, r->addr) == 1) {
		r->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, r->addr) == 1) {
		r->family = AF_INET6;
		max = 128;
	} else {
		return false;
	}
	r->prefix = max;
	if (slash) {
		char *end;
		unsigned long p = strtoul(slash + 1, &end, 10);
		if (!slash[1] || *end || p > max)
			return false;
		r->prefix = (unsigned)p;
	}
	return true;
}

static msb_errc read_ports(const msb_node *config, msb_egress_config *c, msb_error *err)
{
	const msb_node *n = msb_node_get(config, "egress_ports");
	if (!n)
		return MSB_OK;
	if (n->kind != MSB_NODE_SEQ || n->len == 0 || n->len > MSB_EGRESS_MAX_PORTS)
		return msb_node_error(err, n, MSB_E_CONFIG, "egress_ports takes a list of 1 to %d "
				      "port numbers", MSB_EGRESS_MAX_PORTS);
	c->n_ports = 0;
	for (size_t i = 0; i < n->len; i++) {
		const msb_node *it = n->items[i];
		char *end = NULL;
		unsigned long p = it->kind == MSB_NODE_SCALAR ? strtoul(it->scalar, &end, 10) : 0;
		if (!end || *end || p == 0 || p > 65535 || p == MSB_EGRESS_PROXY_PORT)
			return msb_node_error(err, it, MSB_E_CONFIG, "egress_ports: a port is a whole "
					      "number from 1 to 65535 other than %d (the in-guest "
					      "proxy's)", MSB_EGRESS_PROXY_PORT);
		for (size_t j = 0; j < c->n_ports; j++)
			if (c->ports[j] == p)
				return msb_node_error(err, it, MSB_E_CONFIG, "egress_ports: %lu is "
						      "listed twice", p);
		c->ports[c->n_ports++] = (uint16_t)p;
	}
	return MSB_OK;
}

static msb_errc read_ranges(const msb_node *config, msb_egress_config *c, msb_error *err)
{
	const msb_node *n = msb_node_get(config, "egress_allow_ranges");
	if (!n)
		return MSB_OK;
	if (n->kind != MSB_NODE_SEQ || n->len > 256)
		return msb_node_error(err, n, MSB_E_CONFIG, "egress_allow_ranges takes a list of at "
				      "most 256 CIDR ranges (\"169.254.0.0/16\")");
	c->allow_ranges = calloc(n->len ? n->len : 1, sizeof *c->allow_ranges);
	if (!c->allow_ranges)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	for (size_t i = 0; i < n->len; i++) {
		const msb_node *it = n->items[i];
		if (it->kind != MSB_NODE_SCALAR || !parse_range(it->scalar, &c->allow_ranges[i]))
			return msb_node_error(err, it, MSB_E_CONFIG, "egress_allow_ranges: not a CIDR "
					      "range (an address, optionally /prefix)");
		c->n_allow_ranges++;
	}
	return MSB_OK;
}

static bool host_name_valid(const char *name);

static msb_errc read_test_hosts(const msb_node *config, msb_egress_config *c, msb_error *err)
{
	const msb_node *n = msb_node_get(config, "egress_test_hosts");
	if (!n)
		return MSB_OK;
	if (n->kind != MSB_NODE_MAP || n->len > 1024)
		return msb_node_error(err, n, MSB_E_CONFIG, "egress_test_hosts takes a map of at most "
				      "1024 host names to address literals");
	c->has_test_hosts = true;
	c->test_hosts = calloc(n->len ? n->len : 1, sizeof *c->test_hosts);
	if (!c->test_hosts)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	for (size_t i = 0; i < n->len; i++) {
		const msb_node_pair *pr = &n->pairs[i];
		msb_egress_test_host *h = &c->test_hosts[c->n_test_hosts];
		if (!host_name_valid(pr->key))
			return msb_node_error(err, n, MSB_E_CONFIG, "egress_test_hosts: %.255s is not "
					      "a host name", pr->key);
		/* An address literal, or {address: literal, delay: seconds} for a slow answer. */
		const msb_node *v = pr->value, *a = v->kind == MSB_NODE_MAP ? msb_node_get(v, "address") : v;
		if (v->kind == MSB_NODE_MAP) {
			for (size_t k = 0; k < v->len; k++)
				if (strcmp(v->pairs[k].key, "address") && strcmp(v->pairs[k].key, "delay"))
					return msb_node_error(err, v, MSB_E_CONFIG, "egress_test_hosts: "
							      "%.255s: unknown key %.64s (address, delay)",
							      pr->key, v->pairs[k].key);
			msb_errc rc = msb_node_seconds(v, "delay", &h->delay, err);
			if (rc != MSB_OK)
				return rc;
			if (!(h->delay >= 0 && h->delay <= 60))
				return msb_node_error(err, v, MSB_E_CONFIG, "egress_test_hosts: %.255s: "
						      "delay is from 0 to 60s", pr->key);
		}
		if (!a || a->kind != MSB_NODE_SCALAR || !parse_address(a->scalar, &h->addr, &h->len))
			return msb_node_error(err, v, MSB_E_CONFIG, "egress_test_hosts: the "
					      "value is an address literal (or {address, delay})");
		if (!(h->name = strdup(pr->key)))
			return msb_error_set(err, MSB_E_NOMEM, "out of memory");
		c->n_test_hosts++;
	}
	return MSB_OK;
}

msb_errc msb_egress_config_read(const msb_node *config, msb_egress_config *c, msb_error *err)
{
	msb_egress_config_defaults(c);
	if (!config)
		return MSB_OK;
	msb_errc rc = read_ports(config, c, err);
	if (rc == MSB_OK)
		rc = msb_node_uint(config, "egress_max_connections", &c->max_connections, err);
	if (rc == MSB_OK && (c->max_connections == 0 || c->max_connections > 4096))
		rc = msb_node_error(err, msb_node_get(config, "egress_max_connections"), MSB_E_CONFIG,
				    "egress_max_connections is from 1 to 4096");
	if (rc == MSB_OK)
		rc = msb_node_seconds(config, "egress_idle_timeout", &c->idle_timeout, err);
	if (rc == MSB_OK && !(c->idle_timeout > 0 && c->idle_timeout <= 86400))
		rc = msb_node_error(err, msb_node_get(config, "egress_idle_timeout"), MSB_E_CONFIG,
				    "egress_idle_timeout is more than 0 and at most a day");
	if (rc == MSB_OK)
		rc = msb_node_size(config, "egress_max_bytes", &c->max_bytes, err);
	if (rc == MSB_OK && c->max_bytes == 0)
		rc = msb_node_error(err, msb_node_get(config, "egress_max_bytes"), MSB_E_CONFIG,
				    "egress_max_bytes must be more than 0");
	if (rc == MSB_OK)
		rc = read_ranges(config, c, err);
	if (rc == MSB_OK)
		rc = read_test_hosts(config, c, err);
	if (rc == MSB_OK)
		rc = msb_node_seconds(config, "egress_resolve_timeout", &c->resolve_timeout, err);
	if (rc == MSB_OK && !(c->resolve_timeout > 0 && c->resolve_timeout <= 300))
		rc = msb_node_error(err, msb_node_get(config, "egress_resolve_timeout"), MSB_E_CONFIG,
				    "egress_resolve_timeout is more than 0 and at most 300s");
	if (rc != MSB_OK)
		msb_egress_config_free(c);
	return rc;
}

/* RFC 1123 host name: dot-separated labels of letters, digits and inner hyphens. */
static bool host_name_valid(const char *name)
{
	size_t len = strlen(name), label = 0;
	if (len == 0 || len > 253)
		return false;
	for (size_t i = 0; i <= len; i++) {
		char ch = name[i];
		if (ch == '.' || ch == '\0') {
			if (label == 0 || label > 63 || name[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!(isalnum((unsigned char)ch) || (ch == '-' && label > 0)))
			return false;
		label++;
	}
	return true;
}

bool msb_egress_allow_find(const char *const *allow, const char *name, size_t *index)
{
	for (size_t i = 0; allow && allow[i]; i++)
		if (!strcasecmp(allow[i], name)) {
			if (index)
				*index = i;
			return true;
		}
	return false;
}

msb_errc msb_egress_allow_check(const char *const *allow, msb_error *err)
{
	size_t n = 0;
	for (; allow && allow[n]; n++) {
		const char *h = allow[n];
		if (eg_is_address(h))
			return msb_error_set(err, MSB_E_VALUE, "egress_allow refused by the egress "
					     "enforcer: '%.255s' is an address, and it allows names "
					     "only (the host resolves them and refuses private ranges)", h);
		if (strchr(h, '*'))
			return msb_error_set(err, MSB_E_VALUE, "egress_allow refused by the egress "
					     "enforcer: '%.255s' is a wildcard, and it allows exact "
					     "names only", h);
		if (!host_name_valid(h))
			return msb_error_set(err, MSB_E_VALUE, "egress_allow refused by the egress "
					     "enforcer: '%.255s' is not a host name", h);
		size_t first;
		if (msb_egress_allow_find(allow, h, &first) && first != n)
			return msb_error_set(err, MSB_E_VALUE, "egress_allow refused by the egress "
					     "enforcer: '%.255s' is listed twice", h);
	}
	if (n > MSB_EGRESS_MAX_NAMES)
		return msb_error_set(err, MSB_E_VALUE, "egress_allow refused by the egress enforcer: "
				     "%zu names, at most %d", n, MSB_EGRESS_MAX_NAMES);
	return MSB_OK;
}

typedef struct refused_range {
	const char *text;
	const char *why;
} refused_range;

/* Refused unless re-opened by egress_allow_ranges. */
static const refused_range refused[] = {
	{ "0.0.0.0/8", "\"this network\" 0.0.0.0/8" },
	{ "10.0.0.0/8", "private 10.0.0.0/8" },
	{ "100.64.0.0/10", "shared address space 100.64.0.0/10" },
	{ "127.0.0.0/8", "loopback 127.0.0.0/8" },
	{ "169.254.0.0/16", "link-local 169.254.0.0/16" },
	{ "172.16.0.0/12", "private 172.16.0.0/12" },
	{ "192.0.0.0/24", "IETF protocol assignments 192.0.0.0/24" },
	{ "192.168.0.0/16", "private 192.168.0.0/16" },
	{ "198.18.0.0/15", "benchmarking 198.18.0.0/15" },
	{ "224.0.0.0/4", "multicast 224.0.0.0/4" },
	{ "240.0.0.0/4", "reserved 240.0.0.0/4" },
	{ "::/128", "unspecified ::" },
	{ "::1/128", "loopback ::1" },
	{ "fc00::/7", "unique local fc00::/7" },
	{ "fe80::/10", "link-local fe80::/10" },
	{ "ff00::/8", "multicast ff00::/8" },
	{ "64:ff9b::/96", "NAT64 64:ff9b::/96" },
	{ "2001:db8::/32", "documentation 2001:db8::/32" },
};

/* Cloud metadata services: refused unless a range of exactly that address is allowed. */
static const refused_range metadata[] = {
	{ "169.254.169.254/32", "metadata 169.254.169.254" },
	{ "fd00:ec2::254/128", "metadata fd00:ec2::254" },
};

static bool in_range(const msb_egress_range *r, int family, const uint8_t *addr)
{
	if (r->family != family)
		return false;
	unsigned full = r->prefix / 8, rest = r->prefix % 8;
	if (memcmp(r->addr, addr, full) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (r->addr[full] & mask) == (addr[full] & mask);
}

static bool listed_range(const refused_range *table, size_t n, int family, const uint8_t *addr,
			 const char **why)
{
	for (size_t i = 0; i < n; i++) {
		msb_egress_range r;
		if (parse_range(table[i].text, &r) && in_range(&r, family, addr)) {
			*why = table[i].why;
			return true;
		}
	}
	return false;
}

bool msb_egress_address_refused(const msb_egress_config *c, const struct sockaddr *sa,
				const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	int family = sa->sa_family;
	uint8_t addr[16] = { 0 };
	if (family == AF_INET) {
		memcpy(addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (family == AF_INET6) {
		memcpy(addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		/* An IPv4-mapped address is judged as the IPv4 address it carries. */
		static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		if (!memcmp(addr, mapped, 12)) {
			memmove(addr, addr + 12, 4);
			memset(addr + 4, 0, 12);
			family = AF_INET;
		}
	} else {
		*why = "not an IP address";
		return true;
	}
	if (listed_range(metadata, sizeof metadata / sizeof metadata[0], family, addr, why)) {
		unsigned exact = family == AF_INET ? 32 : 128;
		for (size_t i = 0; i < c->n_allow_ranges; i++)
			if (c->allow_ranges[i].prefix == exact && in_range(&c->allow_ranges[i], family, addr))
				return false;
		return true;
	}
	if (!listed_range(refused, sizeof refused / sizeof refused[0], family, addr, why))
		return false;
	for (size_t i = 0; i < c->n_allow_ranges; i++)
		if (in_range(&c->allow_ranges[i], family, addr))
			return false;
	return true;
}

static void set_port(struct sockaddr_storage *sa, unsigned port)
{
	if (sa->ss_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)port);
}

bool msb_egress_resolve(const msb_egress_config *c, const char *name, unsigned port,
			struct sockaddr_storage *out, socklen_t *len, char *why, size_t why_cap)
{
	const char *range = NULL;
	if (c->has_test_hosts) {
		for (size_t i = 0; i < c->n_test_hosts; i++) {
			const msb_egress_test_host *h = &c->test_hosts[i];
			if (strcasecmp(h->name, name))
				continue;
			if (h->delay > 0) {
				struct timespec ts = { (time_t)h->delay,
						       (long)((h->delay - (double)(time_t)h->delay) * 1e9) };
				nanosleep(&ts, NULL);
			}
			if (msb_egress_address_refused(c, (const struct sockaddr *)&h->addr, &range)) {
				snprintf(why, why_cap, "it resolves only to refused addresses (%s)", range);
				return false;
			}
			*out = h->addr;
			*len = h->len;
			set_port(out, port);
			return true;
		}
		snprintf(why, why_cap, "it does not resolve (the test map egress_test_hosts is the "
			 "only resolver)");
		return false;
	}
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	int e = getaddrinfo(name, NULL, &hints, &res);
	if (e != 0) {
		snprintf(why, why_cap, "it does not resolve on the host (%s)", gai_strerror(e));
		return false;
	}
	bool found = false;
	for (struct addrinfo *a = res; a && !found; a = a->ai_next) {
		if (a->ai_addrlen > sizeof *out ||
		    msb_egress_address_refused(c, a->ai_addr, &range))
			continue;
		memset(out, 0, sizeof *out);
		memcpy(out, a->ai_addr, a->ai_addrlen);
		*len = (socklen_t)a->ai_addrlen;
		set_port(out, port);
		found = true;
	}
	freeaddrinfo(res);
	if (!found)
		snprintf(why, why_cap, "it resolves only to refused addresses (%s)",
			 range ? range : "none usable");
	return found;
}
