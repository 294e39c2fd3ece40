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

static void print_text(const msb_plugin *p)
{
	printf("%s\n  rung              %s\n  file              %s\n", msb_plugin_name(p),
	       msb_word_name(MSB_AXIS_ISOLATION, (int)msb_plugin_isolation(p)), msb_plugin_file(p));
	msb_cli_declarations_text(msb_plugin_declarations(p), "  ");
}

static void print_json(const msb_plugin *p)
{
	printf("{\"name\": ");
	msb_json_string(stdout, msb_plugin_name(p));
	printf(", \"isolation\": ");
	msb_json_string(stdout, msb_word_name(MSB_AXIS_ISOLATION, (int)msb_plugin_isolation(p)));
	printf(", \"file\": ");
	msb_json_string(stdout, msb_plugin_file(p));
	printf(", ");
	msb_cli_declarations_json(msb_plugin_declarations(p));
	printf("}");
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
