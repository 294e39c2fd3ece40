/*
 * bench_conformance.c — how long the conformance kit takes per suite on each local backend,
 * as a ratio against the kit's own fixture (a fork/exec over a temp dir: what the kit costs
 * when the backend costs nearly nothing) measured in the same run. Most of a suite's time
 * is deliberate waiting — timeouts that must fire, a grandchild given its chance to write,
 * a leftover process given its — so the ratios say what a backend adds on top of that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msb/config.h>
#include <msb/conformance.h>

#include "msb_test.h"

#define N_SUITES 6

typedef struct timing {
	const char *name;
	double suite[N_SUITES];
	double total;
	size_t failed;
	bool ran;
} timing;

static void measure(timing *t, const char *plugin, const char *yaml)
{
	msb_config_doc *doc = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (yaml && msb_config_doc_parse(yaml, strlen(yaml), "<bench>", &doc, &err) != MSB_OK) {
		fprintf(stderr, "%s: %s\n", t->name, msb_error_message(&err));
		msb_error_clear(&err);
		return;
	}
	msb_conformance_options opts = MSB_CONFORMANCE_OPTIONS_INIT;
	opts.run_code_language = "sh";
	msb_conformance_report *r = NULL;
	if (msb_conformance_run_file(plugin, doc ? msb_config_doc_root(doc) : NULL, &opts, &r, &err) != MSB_OK) {
		fprintf(stderr, "%s: skipped: %s\n", t->name, msb_error_message(&err));
		msb_error_clear(&err);
		msb_config_doc_free(doc);
		return;
	}
	const char *const *names = msb_conformance_suite_names();
	for (size_t i = 0; i < r->len; i++)
		for (int s = 0; s < N_SUITES; s++)
			if (strcmp(r->cases[i].suite, names[s]) == 0)
				t->suite[s] += r->cases[i].seconds;
	for (int s = 0; s < N_SUITES; s++)
		t->total += t->suite[s];
	t->failed = msb_conformance_report_count(r, MSB_CONFORMANCE_FAIL);
	t->ran = true;
	msb_conformance_report_free(r);
	msb_config_doc_free(doc);
}

int main(void)
{
	char state[] = "/tmp/msb-bench-conf-XXXXXX";
	if (!mkdtemp(state))
		return 1;
	char yaml[512];
	timing t[3] = { { .name = "fixture" }, { .name = "process" }, { .name = "bwrap" } };
	measure(&t[0], MSB_TEST_MODULE("tests/conformance", "conf_good"), NULL);
	snprintf(yaml, sizeof(yaml), "state_dir: %s/process\nagent: %s/sdk/agent/msb-agent\nrun_code: sh\n",
		 state, MSB_TOP_BUILDDIR);
	measure(&t[1], MSB_TEST_MODULE("plugins/process", "process"), yaml);
	if (access("/usr/bin/bwrap", X_OK) == 0) {
		snprintf(yaml, sizeof(yaml), "state_dir: %s/bwrap\nagent: %s/sdk/agent/msb-agent\n", state,
			 MSB_TOP_BUILDDIR);
		measure(&t[2], MSB_TEST_MODULE("plugins/bwrap", "bwrap"), yaml);
	}
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", state);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", state);

	const char *const *names = msb_conformance_suite_names();
	printf("%-10s", "suite");
	for (int p = 0; p < 3; p++)
		if (t[p].ran)
			printf(" %18s", t[p].name);
	printf("\n");
	for (int s = 0; s <= N_SUITES; s++) {
		printf("%-10s", s < N_SUITES ? names[s] : "total");
		for (int p = 0; p < 3; p++) {
			if (!t[p].ran)
				continue;
			double v = s < N_SUITES ? t[p].suite[s] : t[p].total;
			double base = s < N_SUITES ? t[0].suite[s] : t[0].total;
			printf(" %8.2fs (x%5.2f)", v, base > 0 ? v / base : 0.0);
		}
		printf("\n");
	}
	for (int p = 0; p < 3; p++)
		if (t[p].ran && t[p].failed)
			printf("%s: %zu case(s) failed\n", t[p].name, t[p].failed);
	return 0;
}
