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

/* Standard base64 (RFC 4648, padded): the lossless form of bytes JSON text cannot carry. */
static void base64(FILE *out, const unsigned char *s, size_t len)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	fputc('"', out);
	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned)s[i] << 16 | (i + 1 < len ? (unsigned)s[i + 1] << 8 : 0) |
			     (i + 2 < len ? s[i + 2] : 0);
		fputc(a[v >> 18 & 63], out);
		fputc(a[v >> 12 & 63], out);
		fputc(i + 1 < len ? a[v >> 6 & 63] : '=', out);
		fputc(i + 2 < len ? a[v & 63] : '=', out);
	}
	fputc('"', out);
}

void msb_json_bytes_field(FILE *out, const char *name, const void *data, size_t len)
{
	const unsigned char *s = data ? data : (const unsigned char *)"";
	fputc('"', out);
	fputs(name, out);
	fputs("\": ", out);
	msb_json_bytes(out, s, len);
	/* Text that is not UTF-8 lost its bytes to \u00XX escapes: the exact ones ride beside. */
	if (u8_check(s, len)) {
		fprintf(out, ", \"%s_base64\": ", name);
		base64(out, s, len);
	}
}
