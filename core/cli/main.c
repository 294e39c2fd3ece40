/*
 * main.c — the msb command's dispatcher: global options, then one subcommand from the
 * table in commands.h. Each subcommand is its own file, thin over libmsb.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

msb_cli_globals msb_cli;

typedef struct command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
} command;

#define MSB_CLI_ENTRY(id, name, summary) { name, summary, msb_cmd_##id },
static const command commands[] = { MSB_CLI_COMMANDS(MSB_CLI_ENTRY) };
#undef MSB_CLI_ENTRY

static void usage(FILE *out)
{
	fprintf(out,
		"usage: msb [-c FILE] [--json] COMMAND [ARGS…]\n"
		"       msb COMMAND --help\n\n"
		"  -c, --config FILE  sandbox.yaml to read (default ./sandbox.yaml, then %s/msb/sandbox.yaml)\n"
		"      --json         machine-readable output; errors as {\"error\": NAME, \"message\": …}\n"
		"      --version      print the version and the plugin ABI\n\n"
		"commands:\n",
		MSB_SYSCONFDIR);
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nexit status: 0 ok, 1 refused or failed, 2 usage; exec and run-code exit with\n"
		     "the guest's status (124 timed out, 125 msb failed before it). See msb(1).\n");
}

int main(int argc, char **argv)
{
	int i = 1;
	/* Global options stop at the first word that is not one: that is the subcommand. */
	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		if ((strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0) && i + 1 < argc)
			msb_cli.config = argv[++i];
		else if (strncmp(a, "--config=", 9) == 0)
			msb_cli.config = a + 9;
		else if (strcmp(a, "--json") == 0)
			msb_cli.json = true;
		else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return MSB_EXIT_OK;
		} else if (strcmp(a, "--version") == 0) {
			printf("msb %s (plugin ABI %u)\n", msb_version(), msb_abi_version());
			return MSB_EXIT_OK;
		} else {
			fprintf(stderr, "msb: unknown option '%s'\n", a);
			usage(stderr);
			return MSB_EXIT_USAGE;
		}
	}
	if (i == argc) {
		usage(stderr);
		return MSB_EXIT_USAGE;
	}
	for (size_t c = 0; c < sizeof commands / sizeof *commands; c++) {
		if (strcmp(commands[c].name, argv[i]) == 0) {
			msb_cli.command = commands[c].name;
			return commands[c].run(argc - i, argv + i);
		}
	}
	fprintf(stderr, "msb: unknown command '%s' (try 'msb --help')\n", argv[i]);
	return MSB_EXIT_USAGE;
}
