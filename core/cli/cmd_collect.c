/*
 * cmd_collect.c — `msb collect KIND --scope S --thread T --out DIR`: a kind's declared
 * outputs, pulled in the seed's phase order (msb_collect_outputs) and landed by the
 * file-system sink under DIR, which confines every destination with kernel primitives. An
 * existing destination is refused unless --replace.
 */
#include <msb/outputs.h>

#include "cli.h"

static const char usage[] =
	"usage: msb collect KIND --scope S --thread T [--agent A] [--call C] --out DIR\n"
	"                   [--replace] [--json]\n\n"
	"Collect the declared outputs of KIND's spec from its sandbox and land them under DIR\n"
	"(an existing directory). Every cap of the spec's files_out is enforced; a destination\n"
	"that exists is refused (SandboxLandingExists) unless --replace. Prints each landed\n"
	"artifact. Exit 0 when everything required landed, 1 otherwise.\n";

static void print_landed(const msb_landed_artifacts *landed)
{
	if (msb_cli.json)
		printf("{\"landed\": [");
	for (size_t i = 0; i < landed->len; i++) {
		const msb_landed_artifact *a = &landed->items[i];
		if (msb_cli.json) {
			printf("%s{\"name\": ", i ? ", " : "");
			msb_json_string(stdout, a->name);
			printf(", \"media_type\": ");
			msb_json_string(stdout, a->media_type);
			printf(", \"display\": ");
			msb_json_string(stdout, a->display);
			printf(", \"handle\": ");
			msb_json_string(stdout, a->handle);
			printf("}");
		} else {
			printf("%s\t%s\n", a->display ? a->display : a->name, a->handle ? a->handle : "");
		}
	}
	if (msb_cli.json)
		printf("]}\n");
}

int msb_cmd_collect(int argc, char **argv)
{
	enum { OPT_OUT = 0x2000, OPT_REPLACE };
	static const struct option longopts[] = { MSB_CLI_COMMON_LONGOPTS, MSB_CLI_KEY_LONGOPTS,
						  { "out", required_argument, NULL, OPT_OUT },
						  { "replace", no_argument, NULL, OPT_REPLACE }, { 0 } };
	msb_cli_key key = { 0 };
	const char *out = NULL;
	msb_file_system_sink_options sink_opts = MSB_FILE_SYSTEM_SINK_OPTIONS_INIT;
	for (int c; (c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1;) {
		if (msb_cli_key_option(&key, c, optarg))
			continue;
		if (c == OPT_OUT)
			out = optarg;
		else if (c == OPT_REPLACE)
			sink_opts.existing = MSB_LANDING_REPLACE;
		else if (msb_cli_common_option(c, usage) != 1)
			return msb_cli_usage_error("unknown option");
	}
	if (argc - optind != 1)
		return msb_cli_usage_error("takes one KIND");
	if (!out)
		return msb_cli_usage_error("--out DIR is required: where the artifacts land");
	int status = msb_cli_key_check(&key);
	if (status)
		return status;
	msb_error err = MSB_ERROR_INIT;
	msb_output_sink *sink = NULL;
	msb_landed_artifacts landed = { 0 };
	msb_cli_session s;
	if (msb_file_system_sink_new(out, &sink_opts, &sink, &err) != MSB_OK)
		return msb_cli_fail(&err);
	if (msb_cli_session_open(&s, argv[optind], &key, &err) != MSB_OK) {
		msb_output_sink_free(sink);
		return msb_cli_fail(&err);
	}
	msb_collect_options opts = MSB_COLLECT_OPTIONS_INIT;
	opts.call_id = key.call;
	opts.key = &s.key;
	msb_errc rc = msb_collect_outputs(s.sandbox, s.spec, sink, &opts, &landed, &err);
	/* What landed before a refusal is shown too: delivery cannot be taken back. */
	if (!msb_cli.json || rc == MSB_OK)
		print_landed(&landed);
	if (rc != MSB_OK)
		status = msb_cli_fail(&err);
	msb_landed_artifacts_free(&landed);
	msb_cli_session_close(&s);
	msb_output_sink_free(sink);
	msb_error_clear(&err);
	return status;
}
