/*
 * cli_declarations.c — a backend's effective declarations as `msb plugins` and `msb check`
 * print them: each field, unstated ones marked (they read by their silence rule), sizes as
 * sandbox.yaml writes them so a reader can copy one into a narrowing.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>

#include "cli.h"

static const struct { const char *name; unsigned bit; msb_axis axis; size_t offset; } set_fields[] = {
	{ "capabilities", MSB_DECL_CAPABILITIES, MSB_AXIS_CAPABILITY, offsetof(msb_effective_declarations, capabilities) },
	{ "egress_modes", MSB_DECL_EGRESS_MODES, MSB_AXIS_EGRESS, offsetof(msb_effective_declarations, egress_modes) },
	{ "os_families", MSB_DECL_OS_FAMILIES, MSB_AXIS_OS_FAMILY, offsetof(msb_effective_declarations, os_families) },
	{ "isolation_scopes", MSB_DECL_ISOLATION_SCOPES, MSB_AXIS_SCOPE, offsetof(msb_effective_declarations, isolation_scopes) },
};

static msb_set set_of(const msb_effective_declarations *d, size_t i)
{
	return *(const msb_set *)((const char *)d + set_fields[i].offset);
}

/* Sizes as sandbox.yaml writes them, so a reader can copy one into a narrowing. */
static void print_size(uint64_t bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	size_t u = 0;
	while (u + 1 < sizeof units / sizeof *units && bytes && bytes % 1024 == 0) {
		bytes /= 1024;
		u++;
	}
	printf("%" PRIu64 "%s", bytes, units[u]);
}

static void text_limits(const char *dir, const msb_transfer_limits *l)
{
	printf("%s ", dir);
	print_size(l->max_bytes_per_file);
	printf("/file, ");
	print_size(l->max_total_bytes);
	printf(" total, %" PRIu64 " files", l->max_files);
}

void msb_cli_declarations_text(const msb_effective_declarations *d, const char *indent)
{
	for (size_t i = 0; i < sizeof set_fields / sizeof *set_fields; i++) {
		char words[256];
		msb_set_format(set_fields[i].axis, set_of(d, i), words, sizeof words);
		printf("%s%-17s {%s}%s\n", indent, set_fields[i].name, words,
		       d->unstated & set_fields[i].bit ? "  (unstated: silence rule)" : "");
	}
	printf("%slimits            ", indent);
	text_limits("in:", &d->limits.files_in);
	printf("; ");
	text_limits("out:", &d->limits.files_out);
	printf("%s\n", d->unstated & MSB_DECL_LIMITS ? "  (unstated: default ceilings)" : "");
	printf("%sobserves_egress   %s%s\n", indent, d->observes_egress ? "true" : "false",
	       d->unstated & MSB_DECL_OBSERVES_EGRESS ? "  (unstated: silence rule)" : "");
}

static void json_limits(const msb_transfer_limits *l)
{
	printf("{\"max_bytes_per_file\": %" PRIu64 ", \"max_total_bytes\": %" PRIu64 ", \"max_files\": %" PRIu64 "}",
	       l->max_bytes_per_file, l->max_total_bytes, l->max_files);
}

void msb_cli_declarations_json(const msb_effective_declarations *d)
{
	printf("\"declarations\": {");
	for (size_t i = 0; i < sizeof set_fields / sizeof *set_fields; i++) {
		printf("\"%s\": [", set_fields[i].name);
		for (int w = 0, first = 1; w < msb_axis_count(set_fields[i].axis); w++) {
			if (!(set_of(d, i) & MSB_BIT(w)))
				continue;
			printf("%s", first ? "" : ", ");
			msb_json_string(stdout, msb_word_name(set_fields[i].axis, w));
			first = 0;
		}
		printf("], ");
	}
	printf("\"limits\": {\"files_in\": ");
	json_limits(&d->limits.files_in);
	printf(", \"files_out\": ");
	json_limits(&d->limits.files_out);
	printf("}, \"observes_egress\": %s}, \"unstated\": [", d->observes_egress ? "true" : "false");
	static const struct { unsigned bit; const char *name; } all[] = {
		{ MSB_DECL_CAPABILITIES, "capabilities" }, { MSB_DECL_LIMITS, "limits" },
		{ MSB_DECL_EGRESS_MODES, "egress_modes" }, { MSB_DECL_OS_FAMILIES, "os_families" },
		{ MSB_DECL_ISOLATION_SCOPES, "isolation_scopes" }, { MSB_DECL_OBSERVES_EGRESS, "observes_egress" },
	};
	for (size_t i = 0, first = 1; i < sizeof all / sizeof *all; i++) {
		if (!(d->unstated & all[i].bit))
			continue;
		printf("%s\"%s\"", first ? "" : ", ", all[i].name);
		first = 0;
	}
	printf("]");
}


/*
 * Under per_spec, each registered backend's own refusal of `spec` with its own error name,
 * as a JSON array, up to (not including) `stop` (NULL: all of them). A caller branching on
 * one backend's class reads it here rather than parsing the combined message.
 */
void msb_cli_refusals_json(const msb_router *router, const msb_spec *spec, const msb_backend *stop)
{
	printf("[");
	for (size_t i = 0; i < msb_router_backend_count(router); i++) {
		const msb_backend *b = msb_router_backend_at(router, i);
		if (b == stop)
			break;
		msb_error err = MSB_ERROR_INIT;
		msb_errc rc = msb_router_check_backend(router, i, spec, &err);
		printf("%s{\"backend\": ", i ? ", " : "");
		msb_json_string(stdout, msb_backend_name(b));
		printf(", \"error\": ");
		msb_json_string(stdout, rc == MSB_OK ? NULL : msb_errc_name(err.code));
		printf(", \"message\": ");
		msb_json_string(stdout, rc == MSB_OK ? NULL : msb_error_message(&err));
		printf("}");
		msb_error_clear(&err);
	}
	printf("]");
}
