/*
 * cli_output.c — how the msb command speaks when something goes wrong: one line,
 * "msb: <SeedErrorName>: <sentence>", so a script can split it and a person can read it; the
 * same as {"error": …, "message": …} under --json. The name is the seed's (the one every log
 * line and every host migrating from the Python package matches on). A sentence may quote
 * what a guest chose (a file name), so it goes out through msb_cli_put_text.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void msb_cli_put_text(FILE *out, const char *s, bool name)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (!name && (*p == '\n' || *p == '\r' || *p == '\t'))
			fputc(' ', out);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\x%02x", *p);
		else if (name && *p == '\\')
			fputs("\\\\", out);
		else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) /* a C1 control in UTF-8 */
			fprintf(out, "\\xc2\\x%02x", *++p);
		else
			fputc(*p, out);
	}
}

int msb_cli_fail_with(msb_error *err, int status)
{
	const char *name = msb_errc_name(err->code);
	const char *message = msb_error_message(err);
	if (msb_cli.json) {
		fputs("{\"error\": ", stdout);
		msb_json_string(stdout, name);
		fputs(", \"message\": ", stdout);
		msb_json_string(stdout, message);
		if (msb_cli.stage) {
			fputs(", \"stage\": ", stdout);
			msb_json_string(stdout, msb_cli.stage);
		}
		fputs("}\n", stdout);
		fflush(stdout);
	} else {
		fprintf(stderr, "msb: %s: ", name);
		msb_cli_put_text(stderr, message, false); /* one line, even quoting several backends */
		fputc('\n', stderr);
	}
	/* Reported is done with: clearing here lets every early `return msb_cli_fail(&err)` stay one line. */
	msb_error_clear(err);
	return status;
}

int msb_cli_fail(msb_error *err)
{
	return msb_cli_fail_with(err, MSB_EXIT_FAILED);
}

int msb_cli_usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "msb %s: ", msb_cli.command ? msb_cli.command : "");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try 'msb %s --help')\n", msb_cli.command ? msb_cli.command : "");
	return MSB_EXIT_USAGE;
}

void msb_cli_warn(void *ctx, const char *message)
{
	msb_cli_warnings *w = ctx;
	if (w) {
		char **items = realloc(w->items, (w->len + 1) * sizeof *items);
		char *copy = strdup(message);
		if (items && copy) {
			w->items = items;
			w->items[w->len++] = copy;
			return;
		}
		if (items)
			w->items = items;
		free(copy);
	}
	fputs("msb: warning: ", stderr);
	msb_cli_put_text(stderr, message, false); /* one line, even quoting several backends */
	fputc('\n', stderr);
}

void msb_cli_warnings_free(msb_cli_warnings *w)
{
	for (size_t i = 0; w && i < w->len; i++)
		free(w->items[i]);
	if (w) {
		free(w->items);
		w->items = NULL;
		w->len = 0;
	}
}

int msb_cli_common_option(int c, const char *usage)
{
	switch (c) {
	case 'c':
		msb_cli.config = optarg;
		return 1;
	case MSB_CLI_OPT_JSON:
		msb_cli.json = true;
		return 1;
	case 'h':
		fputs(usage, stdout);
		exit(MSB_EXIT_OK);
	case '?':
		return -1;
	default:
		return 0;
	}
}
