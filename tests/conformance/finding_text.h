/*
 * finding_text.h — a conformance finding's text with what differs from run to run taken
 * out, so a test can pin the exact words an author reads (test_conformance.c).
 *
 * Replaced, in this order at each position: this build tree's path ("<build>"); a sandbox
 * name, "sk-" and 32 hex digits ("sk-<name>"); the kit's unique token, 'c', the pid, 'x' and
 * hex digits ("<id>"); a mkdtemp directory under /tmp or /var/tmp (its six random
 * characters "XXXXXX"); and, only when `numbers` is set (a finding that carries pids,
 * ports, addresses, counts, durations or capability masks), every run of digits and dots,
 * and every 16-digit hex mask ("N"). Everything
 * else is kept byte for byte.
 */
#ifndef MSB_FINDING_TEXT_H
#define MSB_FINDING_TEXT_H

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool finding_alnum(char c)
{
	return isalnum((unsigned char)c) != 0;
}

/* The length of a hex run at s. */
static size_t finding_hex(const char *s)
{
	size_t n = 0;
	while (isxdigit((unsigned char)s[n]) && !isupper((unsigned char)s[n]))
		n++;
	return n;
}

/* malloc'ed; NULL stays NULL. */
static char *finding_text(const char *s, const char *build, bool numbers)
{
	if (!s)
		return NULL;
	size_t cap = strlen(s) * 2 + 64, o = 0, bl = build ? strlen(build) : 0;
	char *out = malloc(cap);
	if (!out)
		return NULL;
#define PUT(str) (memcpy(out + o, (str), strlen(str)), o += strlen(str))
	for (size_t i = 0; s[i];) {
		bool edge = i == 0 || !finding_alnum(s[i - 1]);
		size_t h, d;
		if (bl && !strncmp(s + i, build, bl)) {
			PUT("<build>");
			i += bl;
		} else if (edge && !strncmp(s + i, "sk-", 3) && finding_hex(s + i + 3) == 32) {
			PUT("sk-<name>");
			i += 35;
		} else if (edge && s[i] == 'c' && (d = strspn(s + i + 1, "0123456789")) > 0 &&
			   s[i + 1 + d] == 'x' && (h = finding_hex(s + i + 2 + d)) > 0) {
			PUT("<id>");
			i += 2 + d + h;
		} else if ((!strncmp(s + i, "/tmp/", 5) || !strncmp(s + i, "/var/tmp/", 9)) && edge) {
			size_t head = s[i + 1] == 't' ? 5 : 9, comp = strcspn(s + i + head, "/ :;,)'\"\n");
			memcpy(out + o, s + i, head + comp);
			if (comp >= 7 && strchr("-.", s[i + head + comp - 7]))
				memcpy(out + o + head + comp - 6, "XXXXXX", 6);
			o += head + comp;
			i += head + comp;
		} else if (numbers && edge && finding_hex(s + i) == 16) {
			PUT("N"); /* a capability mask: which bits a kernel has differs */
			i += 16;
		} else if (numbers && isdigit((unsigned char)s[i]) && edge) {
			while (isdigit((unsigned char)s[i]) ||
			       (s[i] == '.' && isdigit((unsigned char)s[i + 1])))
				i++;
			PUT("N");
		} else {
			out[o++] = s[i++];
		}
	}
#undef PUT
	out[o] = '\0';
	return out;
}

/* `s` as a C string literal (for a test to print what it would pin), into stderr. */
static void finding_print_literal(const char *s)
{
	fputc('"', stderr);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(stderr, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", stderr);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(stderr, "\\x%02x\" \"", c);
		else
			fputc(c, stderr);
	}
	fputc('"', stderr);
}

#endif
