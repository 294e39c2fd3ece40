/*
 * write.c — rendering a conformance report: text for a person, JSON for a program (one
 * object; outcomes as "pass", "fail", "skip", "not_applicable"), TAP 13 for a CI system
 * (a case not applicable is `ok … # SKIP not applicable: why`, so no CI reads it as a pass
 * of something checked, and no CI fails on it either).
 */
#include <stdio.h>
#include <string.h>

#include <msb/conformance.h>

static const char *json_outcome(msb_conformance_outcome o)
{
	switch (o) {
	case MSB_CONFORMANCE_PASS: return "pass";
	case MSB_CONFORMANCE_FAIL: return "fail";
	case MSB_CONFORMANCE_SKIP: return "skip";
	case MSB_CONFORMANCE_NOT_APPLICABLE: return "not_applicable";
	default: return "unknown";
	}
}

static void summary(const msb_conformance_report *r, FILE *out, const char *sep)
{
	fprintf(out, "%zu passed%s%zu failed%s%zu skipped%s%zu not applicable",
		msb_conformance_report_count(r, MSB_CONFORMANCE_PASS), sep,
		msb_conformance_report_count(r, MSB_CONFORMANCE_FAIL), sep,
		msb_conformance_report_count(r, MSB_CONFORMANCE_SKIP), sep,
		msb_conformance_report_count(r, MSB_CONFORMANCE_NOT_APPLICABLE));
}

/* Whether every case of the suite starting at i is not applicable for one reason; *end past it. */
static bool suite_wholly_na(const msb_conformance_report *r, size_t i, size_t *end)
{
	bool same = true;
	size_t j = i;
	for (; j < r->len && strcmp(r->cases[j].suite, r->cases[i].suite) == 0; j++)
		same &= r->cases[j].outcome == MSB_CONFORMANCE_NOT_APPLICABLE && r->cases[j].reason &&
			r->cases[i].reason && strcmp(r->cases[j].reason, r->cases[i].reason) == 0;
	*end = j;
	return same;
}

int msb_conformance_report_write_text(const msb_conformance_report *r, FILE *out)
{
	fprintf(out, "conformance of backend '%s' (%s) from %s\n", r->backend, r->isolation, r->plugin);
	for (size_t i = 0; i < r->len;) {
		size_t end;
		if (suite_wholly_na(r, i, &end)) {
			fprintf(out, "%s: not applicable — %s\n", r->cases[i].suite, r->cases[i].reason);
			i = end;
			continue;
		}
		fprintf(out, "%s\n", r->cases[i].suite);
		for (; i < end; i++) {
			const msb_conformance_case *c = &r->cases[i];
			fprintf(out, "  %-14s %s", msb_conformance_outcome_name(c->outcome), c->name);
			if (c->outcome == MSB_CONFORMANCE_PASS || c->outcome == MSB_CONFORMANCE_FAIL)
				fprintf(out, " (%.2fs)", c->seconds);
			if (c->reason)
				fprintf(out, " — %s", c->reason);
			fputc('\n', out);
			if (c->outcome == MSB_CONFORMANCE_FAIL)
				fprintf(out, "      expected: %s\n      seen:     %s\n",
					c->expected ? c->expected : "", c->seen ? c->seen : "");
		}
	}
	summary(r, out, ", ");
	fputc('\n', out);
	return ferror(out) ? -1 : 0;
}

/* Length of the well-formed UTF-8 sequence at p (1-4), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *p)
{
	if (p[0] < 0x80)
		return 1;
	size_t n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 && p[0] < 0xe0 ? 2 : 0;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/*
 * A JSON string. The kit's own text is UTF-8 and guest bytes reach it escaped (conf_quote),
 * but a backend's error message may carry anything: a byte that is not well-formed UTF-8 is
 * written as \u00XX so the document stays valid JSON.
 */
static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
		size_t n = utf8_len(p);
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", out);
		else if (*p < 0x20 || *p == 0x7f || n == 0)
			fprintf(out, "\\u%04x", *p);
		else
			fwrite(p, 1, n, out);
		p += n ? n : 1;
	}
	fputc('"', out);
}

int msb_conformance_report_write_json(const msb_conformance_report *r, FILE *out)
{
	fputs("{\"plugin\":", out);
	json_string(out, r->plugin);
	fputs(",\"backend\":", out);
	json_string(out, r->backend);
	fputs(",\"isolation\":", out);
	json_string(out, r->isolation);
	fprintf(out, ",\"summary\":{\"pass\":%zu,\"fail\":%zu,\"skip\":%zu,\"not_applicable\":%zu}",
		msb_conformance_report_count(r, MSB_CONFORMANCE_PASS),
		msb_conformance_report_count(r, MSB_CONFORMANCE_FAIL),
		msb_conformance_report_count(r, MSB_CONFORMANCE_SKIP),
		msb_conformance_report_count(r, MSB_CONFORMANCE_NOT_APPLICABLE));
	fputs(",\"cases\":[", out);
	for (size_t i = 0; i < r->len; i++) {
		const msb_conformance_case *c = &r->cases[i];
		fputs(i ? ",{\"suite\":" : "{\"suite\":", out);
		json_string(out, c->suite);
		fputs(",\"case\":", out);
		json_string(out, c->name);
		fprintf(out, ",\"outcome\":\"%s\",\"seconds\":%.3f", json_outcome(c->outcome), c->seconds);
		if (c->expected) {
			fputs(",\"expected\":", out);
			json_string(out, c->expected);
		}
		if (c->seen) {
			fputs(",\"seen\":", out);
			json_string(out, c->seen);
		}
		if (c->reason) {
			fputs(",\"reason\":", out);
			json_string(out, c->reason);
		}
		fputc('}', out);
	}
	fputs("]}\n", out);
	return ferror(out) ? -1 : 0;
}

/* A YAML double-quoted scalar for the TAP diagnostic block. */
static void yaml_string(FILE *out, const char *s)
{
	json_string(out, s);
}

/* TAP descriptions and directives end at '#' and at a newline: keep them out. */
static void tap_text(FILE *out, const char *s)
{
	for (const char *p = s ? s : ""; *p; p++)
		fputc(*p == '#' || *p == '\n' ? ' ' : *p, out);
}

int msb_conformance_report_write_tap(const msb_conformance_report *r, FILE *out)
{
	fprintf(out, "TAP version 13\n1..%zu\n", r->len);
	fprintf(out, "# conformance of backend '%s' (%s) from %s\n", r->backend, r->isolation, r->plugin);
	for (size_t i = 0; i < r->len; i++) {
		const msb_conformance_case *c = &r->cases[i];
		bool failed = c->outcome == MSB_CONFORMANCE_FAIL;
		fprintf(out, "%s %zu - %s/%s", failed ? "not ok" : "ok", i + 1, c->suite, c->name);
		if (c->outcome == MSB_CONFORMANCE_SKIP) {
			fputs(" # SKIP ", out);
			tap_text(out, c->reason);
		} else if (c->outcome == MSB_CONFORMANCE_NOT_APPLICABLE) {
			fputs(" # SKIP not applicable: ", out);
			tap_text(out, c->reason);
		}
		fputc('\n', out);
		if (c->outcome == MSB_CONFORMANCE_PASS && c->reason) {
			fputs("# ", out);
			tap_text(out, c->reason);
			fputc('\n', out);
		}
		if (failed) {
			fputs("  ---\n  expected: ", out);
			yaml_string(out, c->expected);
			fputs("\n  seen: ", out);
			yaml_string(out, c->seen);
			fputs("\n  ...\n", out);
		}
	}
	fputs("# ", out);
	summary(r, out, ", ");
	fputc('\n', out);
	return ferror(out) ? -1 : 0;
}
