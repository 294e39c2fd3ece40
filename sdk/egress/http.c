/*
 * http.c — reading the one request head a proxy-aware tool sends the in-guest HTTP proxy:
 * `CONNECT host:port` or an absolute-form `GET http://host[:port]/path`.
 *
 * The destination is the request's target alone; a Host header is only compared with it
 * (and the request refused when they differ), never used to choose. After the head the
 * connection is a pipe to that one destination: a second CONNECT or request inside it is
 * bytes for the same host, never a new destination.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "egress_internal.h"

void eg_printable(const char *in, char *out, size_t cap)
{
	size_t n = 0;
	for (; in && *in && n + 1 < cap; in++)
		out[n++] = (*in >= 0x21 && *in < 0x7f) ? *in : '?';
	out[n] = '\0';
}

bool eg_is_address(const char *name)
{
	char bare[64];
	unsigned char buf[16];
	size_t len = strlen(name);
	if (len >= sizeof bare)
		return false;
	if (name[0] == '[' && len > 2 && name[len - 1] == ']') {
		memcpy(bare, name + 1, len - 2);
		bare[len - 2] = '\0';
	} else {
		memcpy(bare, name, len + 1);
	}
	struct in_addr legacy; /* inet_aton's forms too: 0x7f.1, 2130706433, 0177.0.0.1 */
	return inet_pton(AF_INET, bare, buf) == 1 || inet_pton(AF_INET6, bare, buf) == 1 ||
	       inet_aton(bare, &legacy) != 0;
}

/* "host[:port]" or "[v6]:port" into host/port; false when malformed. */
static bool split_authority(const char *a, size_t len, bool port_required, char *host,
			    size_t host_cap, unsigned *port)
{
	const char *colon = NULL;
	size_t hlen = len;
	if (len && a[0] == '[') {
		const char *close = memchr(a, ']', len);
		if (!close)
			return false;
		hlen = (size_t)(close - a) + 1;
		if (hlen < len) {
			if (a[hlen] != ':')
				return false;
			colon = a + hlen;
		}
	} else {
		colon = memchr(a, ':', len);
		if (colon)
			hlen = (size_t)(colon - a);
	}
	if (hlen == 0 || hlen >= host_cap)
		return false;
	memcpy(host, a, hlen);
	host[hlen] = '\0';
	/* userinfo@host: refused, so no parser downstream reads another host out of it. */
	if (strchr(host, '@'))
		return false;
	if (!colon) {
		*port = 80;
		return !port_required;
	}
	size_t plen = len - (size_t)(colon + 1 - a);
	if (plen == 0 || plen > 5)
		return false;
	unsigned p = 0;
	for (size_t i = 0; i < plen; i++) {
		if (!isdigit((unsigned char)colon[1 + i]))
			return false;
		p = p * 10 + (unsigned)(colon[1 + i] - '0');
	}
	if (p == 0 || p > 65535)
		return false;
	*port = p;
	return true;
}

static int refuse(char *why, size_t cap, const char *text)
{
	snprintf(why, cap, "%s", text);
	return -1;
}

/* The value of the one Host header in headers [from, to); 0 none, 1 found, -1 several. */
static int host_header(const char *from, const char *to, const char **value, size_t *vlen)
{
	int found = 0;
	for (const char *line = from; line < to;) {
		const char *end = strstr(line, "\r\n");
		if (!end || end > to)
			end = to;
		if ((size_t)(end - line) >= 5 && !strncasecmp(line, "host:", 5)) {
			if (found)
				return -1;
			const char *v = line + 5;
			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			const char *e = end;
			while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
				e--;
			*value = v;
			*vlen = (size_t)(e - v);
			found = 1;
		}
		line = end + 2;
	}
	return found;
}

int eg_http_parse(eg_http_head *h, char *why, size_t cap)
{
	h->host[0] = '\0';
	h->port = 0;
	char *blank = NULL;
	for (size_t i = 0; i + 3 < h->len; i++)
		if (!memcmp(h->raw + i, "\r\n\r\n", 4)) {
			blank = h->raw + i;
			break;
		}
	if (!blank)
		return 0;
	h->head_len = (size_t)(blank - h->raw) + 4;
	for (size_t i = 0; i < h->head_len; i++)
		if (h->raw[i] == '\0' || ((unsigned char)h->raw[i] < 0x20 && h->raw[i] != '\r' &&
					  h->raw[i] != '\n' && h->raw[i] != '\t'))
			return refuse(why, cap, "the request head holds control bytes");
	char *eol = memmem(h->raw, h->head_len, "\r\n", 2); /* at or before the blank line */
	*blank = '\0'; /* restored below: the header walk stops here */
	char *sp1 = memchr(h->raw, ' ', (size_t)(eol - h->raw));
	char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	int rc = 1;
	if (!sp1 || !sp2 || strncmp(sp2 + 1, "HTTP/1.", 7)) {
		rc = refuse(why, cap, "not an HTTP/1 request line");
		goto out;
	}
	const char *target = sp1 + 1;
	size_t tlen = (size_t)(sp2 - target);
	if ((size_t)(sp1 - h->raw) == 7 && !strncmp(h->raw, "CONNECT", 7)) {
		h->connect = true;
		if (!split_authority(target, tlen, true, h->host, sizeof h->host, &h->port))
			rc = refuse(why, cap, "CONNECT needs host:port");
		goto out;
	}
	h->connect = false;
	if (tlen < 7 || strncasecmp(target, "http://", 7)) {
		rc = refuse(why, cap, tlen >= 8 && !strncasecmp(target, "https://", 8)
				      ? "an https:// request must use CONNECT"
				      : "the proxy takes CONNECT or an absolute http:// request");
		goto out;
	}
	const char *auth = target + 7;
	const char *path = memchr(auth, '/', tlen - 7);
	size_t alen = path ? (size_t)(path - auth) : tlen - 7;
	if (!split_authority(auth, alen, false, h->host, sizeof h->host, &h->port)) {
		rc = refuse(why, cap, "the request's target has no usable host[:port]");
		goto out;
	}
	const char *hv;
	size_t hvlen;
	int hh = host_header(eol + 2, blank, &hv, &hvlen);
	if (hh < 0) {
		rc = refuse(why, cap, "the request has more than one Host header");
		goto out;
	}
	if (hh > 0) {
		char hhost[256];
		unsigned hport;
		if (!split_authority(hv, hvlen, false, hhost, sizeof hhost, &hport) ||
		    strcasecmp(hhost, h->host) || hport != h->port) {
			rc = refuse(why, cap, "its Host header names another host than its target");
			goto out;
		}
	}
	/* Origin form: METHOD /path HTTP/1.x, then the headers as sent. */
	const char *p = path ? path : "/";
	size_t plen = path ? tlen - 7 - alen : 1;
	int n = snprintf(h->rewritten, sizeof h->rewritten, "%.*s %.*s %.*s\r\n%s\r\n\r\n",
			 (int)(sp1 - h->raw), h->raw, (int)plen, p, (int)(eol - sp2 - 1), sp2 + 1,
			 eol + 2 < blank ? eol + 2 : "");
	if (n < 0 || (size_t)n >= sizeof h->rewritten) {
		rc = refuse(why, cap, "the rewritten request head is too long");
		goto out;
	}
	/* A request with no header lines leaves one CRLF too many: trim to one blank line. */
	if (eol + 2 >= blank) {
		n -= 2;
		h->rewritten[n] = '\0';
	}
	h->rewritten_len = (size_t)n;
out:
	*blank = '\r';
	return rc;
}
