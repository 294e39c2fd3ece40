/*
 * verdict.c — how a case records what it found. The first failure a case records is the
 * one reported: later ones are usually consequences of it, and a reader wants the cause.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kit.h"

double conf_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

bool conf_decided(const conf_run *run)
{
	return run->verdict && run->verdict->outcome != MSB_CONFORMANCE_PASS;
}

static char *vformat(const char *fmt, va_list ap)
{
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		return NULL;
	return s;
}

void conf_fail(conf_run *run, const char *expected, const char *seen_fmt, ...)
{
	if (conf_decided(run))
		return;
	msb_conformance_case *c = run->verdict;
	va_list ap;
	va_start(ap, seen_fmt);
	c->seen = vformat(seen_fmt, ap);
	va_end(ap);
	c->expected = strdup(expected);
	c->outcome = MSB_CONFORMANCE_FAIL;
	free(c->reason); /* a note of what held so far says nothing once the case failed */
	c->reason = NULL;
}

void conf_skip(conf_run *run, const char *reason_fmt, ...)
{
	if (conf_decided(run))
		return;
	msb_conformance_case *c = run->verdict;
	va_list ap;
	va_start(ap, reason_fmt);
	c->reason = vformat(reason_fmt, ap);
	va_end(ap);
	c->outcome = MSB_CONFORMANCE_SKIP;
}

void conf_fail_call(conf_run *run, const char *what, const msb_error *err)
{
	conf_fail(run, what, "%s: %s", msb_errc_name(err->code), msb_error_message(err));
}

void conf_quote(const void *data, size_t len, char *buf, size_t size)
{
	const unsigned char *p = data;
	size_t o = 0, i = 0;
	if (size < 8)
		return;
	/* Leave room for the widest escape and for "..." when the text does not fit. */
	for (; i < len && o + 8 < size; i++) {
		unsigned char ch = p[i];
		if (ch == '\n')
			o += (size_t)snprintf(buf + o, size - o, "\\n");
		else if (ch == '"' || ch == '\\')
			o += (size_t)snprintf(buf + o, size - o, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", ch);
		else
			buf[o++] = (char)ch;
	}
	if (i < len)
		o += (size_t)snprintf(buf + o, size - o, "...");
	buf[o] = '\0';
}
