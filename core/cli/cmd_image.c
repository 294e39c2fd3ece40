/*
 * cmd_image.c — `msb image import|ls|inspect|rm|gc`: the image store (msb/image_store.h),
 * thin over the SDK. The store is --images-dir DIR, else $MSB_IMAGES_DIR, else the default
 * under the state directory — the same rule the backends apply to their `images_dir:`.
 */
#include <inttypes.h>
#include <string.h>

#include <msb/image_store.h>

#include "cli.h"

static const char usage[] =
	"usage: msb image import NAME SOURCE [--images-dir DIR] [--json]\n"
	"       msb image ls|gc [--images-dir DIR] [--json]\n"
	"       msb image inspect|rm NAME [--images-dir DIR] [--json]\n\n"
	"The image store. SOURCE is an OCI image layout directory, an OCI archive, a docker save\n"
	"archive, a root filesystem tarball or a directory; every blob is verified by its sha256\n"
	"and every layer unpacked confined beneath the image's root. rm removes the name; gc\n"
	"removes what no name uses. Exit 0 on success, 1 when refused or failed.\n";

enum { OPT_IMAGES_DIR = 0x2000 };

static void print_record(const msb_image_record *r)
{
	if (!msb_cli.json) {
		printf("%-20s %s %-14s %12" PRIu64 "  %s\n", r->name, r->digest,
		       r->format ? r->format : "-", r->size_bytes, r->source ? r->source : "-");
		return;
	}
	printf("{\"name\": ");
	msb_json_string(stdout, r->name);
	printf(", \"digest\": \"%s\", \"format\": ", r->digest);
	msb_json_string(stdout, r->format ? r->format : "");
	printf(", \"source\": ");
	msb_json_string(stdout, r->source ? r->source : "");
	printf(", \"root\": ");
	msb_json_string(stdout, r->root);
	printf(", \"size\": %" PRIu64 ", \"created\": %" PRId64 ", \"layers\": [", r->size_bytes,
	       r->created);
	for (size_t i = 0; i < r->n_layers; i++)
		printf("%s\"%s\"", i ? ", " : "", r->layers[i]);
	printf("], \"env\": [");
	for (size_t i = 0; i < r->n_env; i++) {
		printf("%s", i ? ", " : "");
		msb_json_string(stdout, r->env[i]);
	}
	printf("], \"working_dir\": ");
	if (r->working_dir)
		msb_json_string(stdout, r->working_dir);
	else
		printf("null");
	printf(", \"user\": ");
	if (r->user)
		msb_json_string(stdout, r->user);
	else
		printf("null");
	printf("}");
}

static int run(const char *store, const char *verb, int nargs, char **args)
{
	msb_error err = MSB_ERROR_INIT;
	msb_image_record rec = { 0 };
	msb_errc rc;
	if (!strcmp(verb, "import") && nargs == 2) {
		rc = msb_image_import(store, args[0], args[1], NULL, &rec, &err);
	} else if (!strcmp(verb, "inspect") && nargs == 1) {
		rc = msb_image_inspect(store, args[0], &rec, &err);
	} else if (!strcmp(verb, "rm") && nargs == 1) {
		rc = msb_image_remove(store, args[0], &err);
		if (!rc)
			printf(msb_cli.json ? "{\"removed\": \"%s\"}\n" : "removed %s\n", args[0]);
		return rc ? msb_cli_fail(&err) : MSB_EXIT_OK;
	} else if (!strcmp(verb, "gc") && nargs == 0) {
		size_t removed = 0;
		rc = msb_image_gc(store, &removed, &err);
		if (!rc)
			printf(msb_cli.json ? "{\"removed\": %zu}\n" : "removed %zu\n", removed);
		return rc ? msb_cli_fail(&err) : MSB_EXIT_OK;
	} else if (!strcmp(verb, "ls") && nargs == 0) {
		msb_image_record *list = NULL;
		size_t n = 0;
		if (msb_image_list(store, &list, &n, &err) != MSB_OK)
			return msb_cli_fail(&err);
		printf(msb_cli.json ? "{\"images\": [" : "");
		for (size_t i = 0; i < n; i++) {
			printf("%s", msb_cli.json && i ? ", " : "");
			print_record(&list[i]);
		}
		printf(msb_cli.json ? "]}\n" : "");
		msb_image_records_free(list, n);
		return MSB_EXIT_OK;
	} else {
		return msb_cli_usage_error("image %s: wrong verb or number of arguments", verb);
	}
	if (rc)
		return msb_cli_fail(&err);
	print_record(&rec);
	if (msb_cli.json)
		putchar('\n');
	msb_image_record_free(&rec);
	return MSB_EXIT_OK;
}

int msb_cmd_image(int argc, char **argv)
{
	static const struct option longopts[] = {
		MSB_CLI_COMMON_LONGOPTS,
		{ "images-dir", required_argument, NULL, OPT_IMAGES_DIR },
		{ 0 },
	};
	const char *store = msb_image_store_default_dir();
	for (int c; (c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1;) {
		if (c == OPT_IMAGES_DIR)
			store = optarg;
		else if (msb_cli_common_option(c, usage) != 1)
			return msb_cli_usage_error("unknown option");
	}
	if (optind >= argc)
		return msb_cli_usage_error("needs a verb: import, ls, inspect, rm or gc");
	return run(store, argv[optind], argc - optind - 1, argv + optind + 1);
}
