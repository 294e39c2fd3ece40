/*
 * cmd_conformance.c — `msb conformance PLUGIN`: run the conformance kit against one plugin
 * and print the verdicts (text, --json, or --tap for a CI system). Thin over
 * libmsb-conformance. Exit 0 when no case failed, 1 when one did or the plugin could not be
 * opened, 2 for a wrong command line.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msb/conformance.h>

#include "cli.h"

static const char usage[] =
	"usage: msb conformance PLUGIN [--config NODE.yaml] [--suite NAME…] [--json | --tap]\n"
	"                       [--image IMAGE] [--work-dir DIR] [--run-code-language python|sh]\n\n"
	"Load PLUGIN (a path, or a name looked up like sandbox.yaml's `plugin:`) through the\n"
	"loader, open it with the YAML file NODE.yaml as its `config:` node, acquire real sandboxes\n"
	"from it and run the conformance suites: exec, run_code, files, egress, scope, disposal.\n"
	"A suite or case for something the plugin does not declare is reported not applicable,\n"
	"never passed. --suite (repeatable, or comma-separated) runs only the suites named.\n"
	"Exit 0 when no case failed, 1 otherwise.\n";

enum { OPT_TAP = 0x2000, OPT_SUITE, OPT_IMAGE, OPT_WORK_DIR, OPT_LANG };

static void progress(void *ctx, const msb_conformance_case *c)
{
	(void)ctx;
	fprintf(stderr, "  %-14s %s/%s\n", msb_conformance_outcome_name(c->outcome), c->suite, c->name);
}

/* Split each --suite argument at commas into one NULL-terminated list. */
static int add_suites(char ***list, size_t *n, char *arg)
{
	for (char *save = NULL, *w = strtok_r(arg, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		char **p = realloc(*list, (*n + 2) * sizeof(*p));
		if (!p)
			return -1;
		*list = p;
		p[(*n)++] = w;
		p[*n] = NULL;
	}
	return 0;
}

static int load_node(const char *file, msb_config_doc **doc, const msb_node **node)
{
	msb_error err = MSB_ERROR_INIT;
	if (msb_config_doc_load(file, doc, &err) != MSB_OK) {
		int status = msb_cli_fail(&err);
		msb_error_clear(&err);
		return status;
	}
	*node = msb_config_doc_root(*doc);
	return 0;
}

static int run(const char *plugin, const msb_node *config, const msb_conformance_options *opts, bool tap)
{
	msb_error err = MSB_ERROR_INIT;
	char *path = NULL;
	msb_conformance_report *report = NULL;
	msb_errc rc = msb_plugin_resolve(plugin, NULL, &path, &err);
	if (rc == MSB_OK)
		rc = msb_conformance_run_file(path, config, opts, &report, &err);
	free(path);
	if (rc != MSB_OK) {
		int status = msb_cli_fail(&err);
		msb_error_clear(&err);
		return status;
	}
	if (msb_cli.json)
		msb_conformance_report_write_json(report, stdout);
	else if (tap)
		msb_conformance_report_write_tap(report, stdout);
	else
		msb_conformance_report_write_text(report, stdout);
	int status = msb_conformance_report_count(report, MSB_CONFORMANCE_FAIL) ? MSB_EXIT_FAILED : MSB_EXIT_OK;
	msb_conformance_report_free(report);
	return status;
}

int msb_cmd_conformance(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, MSB_CLI_OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ "tap", no_argument, NULL, OPT_TAP },
		{ "suite", required_argument, NULL, OPT_SUITE },
		{ "image", required_argument, NULL, OPT_IMAGE },
		{ "work-dir", required_argument, NULL, OPT_WORK_DIR },
		{ "run-code-language", required_argument, NULL, OPT_LANG },
		{ "verbose", no_argument, NULL, 'v' },
		{ 0 },
	};
	msb_conformance_options opts = MSB_CONFORMANCE_OPTIONS_INIT;
	const char *node_file = NULL;
	char **suites = NULL;
	size_t n_suites = 0;
	bool tap = false;
	int status = -1;
	for (int c; status < 0 && (c = getopt_long(argc, argv, "c:hv", longopts, NULL)) != -1;) {
		switch (c) {
		case 'c': /* here the plugin's config node, not sandbox.yaml */
			node_file = optarg;
			break;
		case OPT_TAP:
			tap = true;
			break;
		case OPT_SUITE:
			if (add_suites(&suites, &n_suites, optarg) != 0)
				status = msb_cli_usage_error("out of memory");
			break;
		case OPT_IMAGE:
			opts.image = optarg;
			break;
		case OPT_WORK_DIR:
			opts.work_dir = optarg;
			break;
		case OPT_LANG:
			if (strcmp(optarg, "python") != 0 && strcmp(optarg, "sh") != 0)
				status = msb_cli_usage_error("--run-code-language takes python or sh, not '%s'", optarg);
			opts.run_code_language = optarg;
			break;
		case 'v':
			opts.progress = progress;
			break;
		default:
			if (msb_cli_common_option(c, usage) != 1)
				status = msb_cli_usage_error("unknown option");
		}
	}
	if (status < 0 && optind != argc - 1)
		status = msb_cli_usage_error("name exactly one PLUGIN");
	if (status < 0 && tap && msb_cli.json)
		status = msb_cli_usage_error("--json and --tap are two formats: choose one");
	msb_config_doc *doc = NULL;
	const msb_node *config = NULL;
	if (status < 0 && node_file)
		status = load_node(node_file, &doc, &config) ? MSB_EXIT_FAILED : -1;
	opts.suites = (const char *const *)suites;
	if (status < 0)
		status = run(argv[optind], config, &opts, tap);
	msb_config_doc_free(doc);
	free(suites);
	return status;
}
