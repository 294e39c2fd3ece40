/*
 * egress_internal.h — what the egress enforcer's files share (not installed): the parse of
 * an HTTP proxy request's head, and the small text helpers its reports use.
 */
#ifndef MSB_EGRESS_INTERNAL_H
#define MSB_EGRESS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/egress.h>

#define EG_HEAD_MAX 8192

typedef struct eg_http_head {
	char raw[EG_HEAD_MAX];
	size_t len;         /* bytes read so far */
	size_t head_len;    /* through the blank line, once parsed */
	bool connect;       /* CONNECT host:port (else an absolute-form http:// request) */
	char host[256];
	unsigned port;
	char rewritten[EG_HEAD_MAX]; /* a plain request's head in origin form */
	size_t rewritten_len;
} eg_http_head;

/*
 * Parse what has arrived: 0 while the head is incomplete, 1 when it names a destination
 * (host, port, and for a plain request the rewritten head), -1 when it is refused (`why`).
 * A plain request whose Host header names another host than its target is refused: one
 * connection never has two destinations.
 */
int eg_http_parse(eg_http_head *h, char *why, size_t why_cap);

/* Copy guest-chosen text for a report: printable ASCII only, bounded. */
void eg_printable(const char *in, char *out, size_t cap);
/* Whether `name` is an IPv4 or IPv6 address literal (brackets allowed). */
bool eg_is_address(const char *name);

/* A deep copy of `src` (its ranges and test map), for a holder that outlives the original. */
msb_errc eg_config_copy(msb_egress_config *dst, const msb_egress_config *src);

/*
 * The proxy's resolver (resolver.c): msb_egress_resolve on a pool of threads, so a slow
 * name never stalls the loop. submit is false when EG_RESOLVER_QUEUE requests are already
 * open (the loop refuses that connection); each answer is queued for take, and a byte
 * written to `wake_fd` says so. free does not wait for a thread inside getaddrinfo.
 */
#define EG_RESOLVER_THREADS 4
#define EG_RESOLVER_QUEUE 64
typedef struct eg_resolver eg_resolver;
typedef struct eg_resolved {
	uint64_t id;
	bool ok;
	struct sockaddr_storage sa;
	socklen_t len;
	char why[256];
} eg_resolved;
eg_resolver *eg_resolver_new(const msb_egress_config *cfg, int wake_fd);
bool eg_resolver_submit(eg_resolver *r, uint64_t id, const char *name, unsigned port);
bool eg_resolver_take(eg_resolver *r, eg_resolved *out);
void eg_resolver_free(eg_resolver *r);

#endif
