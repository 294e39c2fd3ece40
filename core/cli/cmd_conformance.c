/*
 * cmd_conformance.c — `msb conformance PLUGIN`: run the conformance kit against one plugin
 * and print the verdicts (text, --json, or --tap for a CI system). Thin over
 * libmsb-conformance. Exit 0 when no case failed, 1 when one did or the plugin could not be
 * opened (or crashed, or hung), 2 for a wrong command line.
 *
 * The kit runs in a child process: the plugin under test is third-party code loaded into the
 * kit's address space, and one that crashes or hangs must end in a verdict naming the case it
 * crashed or hung in, not in a dead or stuck command.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msb/conformance.h>

#include "cli.h"

static const char usage[] =
	"usage: msb conformance PLUGIN [--config NODE.yaml] [--suite NAME…] [--json | --tap]\n"
	"                       [--image IMAGE] [--work-dir DIR] [--run-code-language python|sh]\n"
	"                       [--case-timeout DURATION] [-v]\n\n"
	"Load PLUGIN (a path, or a name looked up like sandbox.yaml's `plugin:`) through the\n"
	"loader, open it with the YAML file NODE.yaml as its `config:` node, acquire real sandboxes\n"
	"from it and run the conformance suites: exec, run_code, files, egress, scope, disposal,\n"
	"stream, rung.\n"
	"A suite or case for something the plugin does not declare is reported not applicable,\n"
	"never passed. --suite (repeatable, or comma-separated) runs only the suites named.\n"
	"-v prints each verdict on stderr as it is decided. The kit runs in a child process: a\n"
	"plugin that crashes, or does nothing for --case-timeout (default 10m), is reported\n"
	"naming the case it was in. Exit 0 when no case failed, 1 otherwise.\n";

enum { OPT_TAP = 0x2000, OPT_SUITE, OPT_IMAGE, OPT_WORK_DIR, OPT_LANG, OPT_CASE_TIMEOUT };

/* The child's side of the supervision pipe: "S suite/name" as a case starts, "D" as it ends. */
typedef struct child_link {
	int fd;
	bool verbose;
} child_link;

static void tell(const child_link *link, const char *line)
{
	size_t len = strlen(line);
	while (len) {
		ssize_t n = write(link->fd, line, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		line += n;
		len -= (size_t)n;
	}
}

static void case_started(void *ctx, const char *suite, const char *name)
{
	char line[256];
	snprintf(line, sizeof(line), "S %s/%s\n", suite, name);
	tell(ctx, line);
}

static void case_done(void *ctx, const msb_conformance_case *c)
{
	const child_link *link = ctx;
	tell(link, "D\n");
	if (link->verbose)
		fprintf(stderr, "  %-14s %s/%s\n", msb_conformance_outcome_name(c->outcome), c->suite,
			c->name);
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

/*
 * Read the child's events until it ends. `current` is the case it was in; *ended says it
 * reached its own end ("E") rather than dying on the way. Returns true when it went
 * `timeout` seconds without an event (it is killed then).
 */
static bool watch(int fd, pid_t pid, double timeout, char *current, size_t size, bool *ended)
{
	char buf[512];
	size_t have = 0;
	int ms = timeout * 1000 < INT_MAX ? (int)(timeout * 1000) : INT_MAX;
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		int r = poll(&p, 1, ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			kill(pid, SIGKILL);
			return true;
		}
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		have += (size_t)n;
		buf[have] = '\0';
		char *nl;
		while ((nl = strchr(buf, '\n'))) {
			*nl = '\0';
			if (buf[0] == 'S')
				snprintf(current, size, "%s", buf + 2);
			else if (buf[0] == 'E')
				*ended = true;
			else
				snprintf(current, size, "between cases (acquire, dispose)");
			have -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, have + 1);
		}
		if (have == sizeof(buf) - 1)
			have = 0; /* a line this long is not ours */
	}
}

static int supervise(const char *plugin, const msb_node *config, msb_conformance_options *opts,
		     bool tap, double case_timeout)
{
	int fds[2];
	msb_error err = MSB_ERROR_INIT;
	if (pipe2(fds, O_CLOEXEC) != 0) {
		msb_error_set_errno(&err, MSB_E_OS, errno, "conformance: cannot make the pipe the "
				    "kit reports its progress on");
		int status = msb_cli_fail(&err);
		msb_error_clear(&err);
		return status;
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		child_link link = { fds[1], opts->progress != NULL };
		opts->progress = case_done;
		opts->case_started = case_started;
		opts->progress_ctx = &link;
		int status = run(plugin, config, opts, tap);
		fflush(stdout);
		fflush(stderr);
		tell(&link, "E\n");
		_exit(status);
	}
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		msb_error_set_errno(&err, MSB_E_OS, errno, "conformance: cannot fork the process "
				    "the kit runs in");
		int status = msb_cli_fail(&err);
		msb_error_clear(&err);
		return status;
	}
	char current[512] = "loading the plugin";
	bool ended = false;
	bool hung = watch(fds[0], pid, case_timeout, current, sizeof(current), &ended);
	close(fds[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (hung)
		msb_error_set(&err, MSB_E_TIMEOUT,
			      "conformance: %s hung in %s: nothing happened for %g s, so the kit was "
			      "stopped (its sandboxes were not disposed)",
			      plugin, current, case_timeout);
	else if (WIFSIGNALED(status))
		msb_error_set(&err, MSB_E_BACKEND,
			      "conformance: %s crashed in %s (signal %d, %s); the kit was stopped "
			      "there (its sandboxes were not disposed)",
			      plugin, current, WTERMSIG(status), strsignal(WTERMSIG(status)));
	else if (!ended) /* exited on the way: a sanitizer's report, or the plugin's exit() */
		msb_error_set(&err, MSB_E_BACKEND,
			      "conformance: %s ended the process in %s (exit status %d); the kit was "
			      "stopped there (its sandboxes were not disposed)",
			      plugin, current, WEXITSTATUS(status));
	else
		return WEXITSTATUS(status);
	int rc = msb_cli_fail(&err);
	msb_error_clear(&err);
	return rc;
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
		{ "case-timeout", required_argument, NULL, OPT_CASE_TIMEOUT },
		{ 0 },
	};
	msb_conformance_options opts = MSB_CONFORMANCE_OPTIONS_INIT;
	const char *node_file = NULL;
	char **suites = NULL;
	size_t n_suites = 0;
	bool tap = false;
	double case_timeout = 600;
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
			opts.progress = case_done; /* marks "verbose": the child wires it up */
			break;
		case OPT_CASE_TIMEOUT: {
			msb_error e = MSB_ERROR_INIT;
			if (msb_parse_seconds(optarg, &case_timeout, &e) != MSB_OK || case_timeout <= 0)
				status = msb_cli_usage_error("--case-timeout takes a duration (\"90\", \"5m\"), not '%s'",
							     optarg);
			msb_error_clear(&e);
			break;
		}
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
		status = supervise(argv[optind], config, &opts, tap, case_timeout);
	msb_config_doc_free(doc);
	free(suites);
	return status;
}
