/*
 * cli_json.c — JSON string literals for --json output. Guest output is bytes, not text, so
 * a byte that is not part of valid UTF-8 is written as \u00XX rather than passed through:
 * the document stays valid JSON whatever the guest printed.
 */
#include <stdint.h>
#include <string.h>

#include <unistr.h>

#include "cli.h"

void msb_json_bytes(FILE *out, const void *data, size_t len)
{
	const uint8_t *s = data, *end = s + len;
	fputc('"', out);
	while (s < end) {
		ucs4_t uc;
		int n = u8_mbtoucr(&uc, s, (size_t)(end - s));
		if (n < 0) {
			fprintf(out, "\\u%04x", *s);
			s++;
			continue;
		}
		switch (uc) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\n': fputs("\\n", out); break;
		case '\r': fputs("\\r", out); break;
		case '\t': fputs("\\t", out); break;
		default:
			if (uc < 0x20 || uc == 0x7f)
				fprintf(out, "\\u%04x", (unsigned)uc);
			else
				fwrite(s, 1, (size_t)n, out);
		}
		s += n;
	}
	fputc('"', out);
}

void msb_json_string(FILE *out, const char *s)
{
	if (!s)
		fputs("null", out);
	else
		msb_json_bytes(out, s, strlen(s));
}
