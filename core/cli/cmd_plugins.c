/*
 * cmd_plugins.c — `msb plugins [PATH…]`: what a plugin is once the loader has validated it:
 * name, rung, file, and its effective declarations with each unstated field marked (its
 * value then comes from that field's silence rule, which is what a plugin author most
 * often gets wrong). With paths: those files, each loaded on its own terms; without: the
 * plugins sandbox.yaml names. Exit 0 only when every plugin loaded.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
	"usage: msb plugins [--json] [PATH…]\n\n"
	"With PATHs, load each plugin file and print its name, rung, file and effective\n"
	"declarations (fields the plugin left unstated are marked: they read by their silence\n"
	"rule), or the loader's refusal. Without PATHs, the plugins sandbox.yaml names (loaded,\n"
	"not initialised). Exit 0 only when every plugin loaded, 1 otherwise.\n";

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

static void print_text(const msb_plugin *p)
{
	const msb_effective_declarations *d = msb_plugin_declarations(p);
	printf("%s\n  rung              %s\n  file              %s\n", msb_plugin_name(p),
	       msb_word_name(MSB_AXIS_ISOLATION, (int)msb_plugin_isolation(p)), msb_plugin_file(p));
	for (size_t i = 0; i < sizeof set_fields / sizeof *set_fields; i++) {
		char words[256];
		msb_set_format(set_fields[i].axis, set_of(d, i), words, sizeof words);
		printf("  %-17s {%s}%s\n", set_fields[i].name, words,
		       d->unstated & set_fields[i].bit ? "  (unstated: silence rule)" : "");
	}
	printf("  limits            ");
	text_limits("in:", &d->limits.files_in);
	printf("; ");
	text_limits("out:", &d->limits.files_out);
	printf("%s\n", d->unstated & MSB_DECL_LIMITS ? "  (unstated: default ceilings)" : "");
	printf("  observes_egress   %s%s\n", d->observes_egress ? "true" : "false",
	       d->unstated & MSB_DECL_OBSERVES_EGRESS ? "  (unstated: silence rule)" : "");
}

static void json_limits(const msb_transfer_limits *l)
{
	printf("{\"max_bytes_per_file\": %" PRIu64 ", \"max_total_bytes\": %" PRIu64 ", \"max_files\": %" PRIu64 "}",
	       l->max_bytes_per_file, l->max_total_bytes, l->max_files);
}

static void print_json(const msb_plugin *p)
{
	const msb_effective_declarations *d = msb_plugin_declarations(p);
	printf("{\"name\": ");
	msb_json_string(stdout, msb_plugin_name(p));
	printf(", \"isolation\": ");
	msb_json_string(stdout, msb_word_name(MSB_AXIS_ISOLATION, (int)msb_plugin_isolation(p)));
	printf(", \"file\": ");
	msb_json_string(stdout, msb_plugin_file(p));
	printf(", \"declarations\": {");
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
	printf("]}");
}

static void print_refusal_json(const char *file, const msb_error *err)
{
	printf("{\"file\": ");
	msb_json_string(stdout, file);
	printf(", \"error\": ");
	msb_json_string(stdout, msb_errc_name(err->code));
	printf(", \"message\": ");
	msb_json_string(stdout, msb_error_message(err));
	printf("}");
}

/* Each path on its own terms: one refused file does not hide what the others are. */
static int from_paths(int n, char **paths)
{
	msb_error err = MSB_ERROR_INIT;
	msb_loader *loader = NULL;
	if (msb_loader_new(&loader, &err) != MSB_OK)
		return msb_cli_fail(&err);
	msb_loader_set_probe(loader, MSB_LOADER_PROBE_TIMEOUT_MS);
	int refused = 0;
	if (msb_cli.json)
		printf("{\"plugins\": [");
	for (int i = 0; i < n; i++) {
		const msb_plugin *p = NULL;
		/*
		 * A PATH is a file: "x.so" means ./x.so, never whatever dlopen's library search
		 * would find under that name.
		 */
		char *file = NULL;
		msb_errc rc = asprintf(&file, "%s%s", strchr(paths[i], '/') ? "" : "./", paths[i]) < 0
				      ? msb_error_set(&err, MSB_E_NOMEM, "out of memory")
				      : msb_loader_load(loader, file, &p, &err);
		free(file);
		if (msb_cli.json) {
			printf("%s", i ? ", " : "");
			if (rc == MSB_OK)
				print_json(p);
			else
				print_refusal_json(paths[i], &err);
		} else if (rc == MSB_OK) {
			print_text(p);
		} else {
			fflush(stdout);
			msb_cli_fail(&err);
		}
		refused += rc != MSB_OK;
		msb_error_clear(&err);
	}
	if (msb_cli.json)
		printf("], \"ok\": %s}\n", refused ? "false" : "true");
	msb_loader_free(loader);
	return refused ? MSB_EXIT_FAILED : MSB_EXIT_OK;
}

static int from_config(void)
{
	msb_error err = MSB_ERROR_INIT;
	msb_config *cfg = NULL;
	if (msb_cli_load(false, NULL, &cfg, &err) != MSB_OK) {
		int status = msb_cli_fail(&err);
		msb_error_clear(&err);
		return status;
	}
	if (msb_cli.json)
	{
		printf("{\"file\": ");
		msb_json_string(stdout, msb_config_file(cfg));
		printf(", \"plugins\": [");
	}
	for (size_t i = 0; i < msb_config_plugin_count(cfg); i++) {
		if (msb_cli.json) {
			printf("%s", i ? ", " : "");
			print_json(msb_config_plugin_at(cfg, i));
		} else {
			print_text(msb_config_plugin_at(cfg, i));
		}
	}
	if (msb_cli.json)
		printf("], \"ok\": true}\n");
	msb_config_free(cfg);
	return MSB_EXIT_OK;
}

int msb_cmd_plugins(int argc, char **argv)
{
	static const struct option longopts[] = { MSB_CLI_COMMON_LONGOPTS, { 0 } };
	for (int c; (c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1;)
		if (msb_cli_common_option(c, usage) != 1)
			return msb_cli_usage_error("unknown option");
	if (optind < argc)
		return from_paths(argc - optind, argv + optind);
	return from_config();
}
