/*
 * run.c — the kit's entry points: choose the suites, decide which apply to what the backend
 * declares, run each case against real sandboxes and collect the verdicts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <msb/conformance.h>
#include <msb/loader.h>

#include "egress_log.h"
#include "kit.h"

static const conf_suite *const suites[] = {
	&conf_suite_exec,  &conf_suite_run_code, &conf_suite_files,
	&conf_suite_egress, &conf_suite_scope,    &conf_suite_disposal, &conf_suite_stream,
	&conf_suite_rung,
};
#define N_SUITES (sizeof(suites) / sizeof(suites[0]))

const char *const *msb_conformance_suite_names(void)
{
	static const char *names[N_SUITES + 1];
	for (size_t i = 0; i < N_SUITES; i++)
		names[i] = suites[i]->name;
	return names;
}

static bool chosen(const msb_conformance_options *opts, const char *name)
{
	if (!opts->suites)
		return true;
	for (size_t i = 0; opts->suites[i]; i++)
		if (strcmp(opts->suites[i], name) == 0)
			return true;
	return false;
}

static msb_errc check_suite_names(const msb_conformance_options *opts, msb_error *err)
{
	for (size_t i = 0; opts->suites && opts->suites[i]; i++) {
		bool known = false;
		for (size_t s = 0; s < N_SUITES; s++)
			known |= strcmp(opts->suites[i], suites[s]->name) == 0;
		if (!known)
			return msb_error_set(err, MSB_E_VALUE,
					     "conformance: unknown suite '%s' (the kit has exec, run_code, "
					     "files, egress, scope, disposal, stream, rung)",
					     opts->suites[i]);
	}
	return MSB_OK;
}

/* The capability a case needs that the backend does not declare, or -1. */
static int missing_capability(const conf_run *run, msb_set needs)
{
	for (int c = 0; c < MSB_CAP__COUNT; c++)
		if ((needs & MSB_BIT(c)) && !conf_has(run, (msb_capability)c))
			return c;
	return -1;
}

static void announce(conf_run *run, const msb_conformance_case *c)
{
	if (run->opts->progress)
		run->opts->progress(run->opts->progress_ctx, c);
}

static msb_errc add_unrun(conf_run *run, const conf_case *k, msb_conformance_outcome outcome,
			  const char *reason)
{
	if (conf_report_add(run->report, run->suite->name, k->name, outcome, reason) != MSB_OK)
		return MSB_E_NOMEM;
	announce(run, &run->report->cases[run->report->len - 1]);
	return MSB_OK;
}

static msb_errc run_case(conf_run *run, const conf_case *k)
{
	int missing = missing_capability(run, k->needs);
	if (missing >= 0) {
		char reason[160];
		snprintf(reason, sizeof(reason), "needs capability %s, which the backend does not declare",
			 msb_word_name(MSB_AXIS_CAPABILITY, missing));
		return add_unrun(run, k, MSB_CONFORMANCE_NOT_APPLICABLE, reason);
	}
	if (conf_report_add(run->report, run->suite->name, k->name, MSB_CONFORMANCE_PASS, NULL) != MSB_OK)
		return MSB_E_NOMEM;
	size_t at = run->report->len - 1;
	if (run->opts->case_started)
		run->opts->case_started(run->opts->progress_ctx, run->suite->name, k->name);
	run->verdict = &run->report->cases[at];
	run->case_name = k->name;
	double t0 = conf_now();
	k->run(run);
	/* The report may not grow while a case runs, so the pointer is still good. */
	run->report->cases[at].seconds = conf_now() - t0;
	run->verdict = NULL;
	announce(run, &run->report->cases[at]);
	return MSB_OK;
}

static msb_errc run_suite(conf_run *run, const conf_suite *suite)
{
	run->suite = suite;
	const char *why = suite->inapplicable ? suite->inapplicable(run) : NULL;
	if (why) {
		for (size_t i = 0; i < suite->n_cases; i++)
			if (add_unrun(run, &suite->cases[i], MSB_CONFORMANCE_NOT_APPLICABLE, why) != MSB_OK)
				return MSB_E_NOMEM;
		return MSB_OK;
	}
	const char *skip = suite->setup ? suite->setup(run) : NULL;
	msb_errc rc = MSB_OK;
	for (size_t i = 0; i < suite->n_cases && rc == MSB_OK; i++) {
		if (skip)
			rc = add_unrun(run, &suite->cases[i], MSB_CONFORMANCE_SKIP, skip);
		else
			rc = run_case(run, &suite->cases[i]);
	}
	if (suite->teardown)
		suite->teardown(run);
	conf_boxes_dispose_all(run);
	run->suite_state = NULL;
	run->suite_data = NULL;
	run->main_box_failed = NULL;
	return rc;
}

/* The mode every sandbox is acquired with: the strictest the backend declares. */
static msb_egress pick_egress(const msb_effective_declarations *decl)
{
	if (decl->egress_modes & MSB_BIT(MSB_EGRESS_CLOSED))
		return MSB_EGRESS_CLOSED;
	if (decl->egress_modes & MSB_BIT(MSB_EGRESS_ALLOWLIST))
		return MSB_EGRESS_ALLOWLIST;
	if (decl->egress_modes & MSB_BIT(MSB_EGRESS_UNRESTRICTED))
		return MSB_EGRESS_UNRESTRICTED;
	return MSB_EGRESS_CLOSED;
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

msb_errc msb_conformance_run(msb_backend *backend, const msb_conformance_options *opts,
			     msb_conformance_report **out, msb_error *err)
{
	static const msb_conformance_options defaults = MSB_CONFORMANCE_OPTIONS_INIT;
	*out = NULL;
	if (!opts)
		opts = &defaults;
	if (opts->struct_size < sizeof(msb_conformance_options))
		return msb_error_set(err, MSB_E_VALUE,
				     "conformance: options struct_size %u is smaller than this kit's %zu",
				     opts->struct_size, sizeof(msb_conformance_options));
	msb_errc rc = check_suite_names(opts, err);
	if (rc != MSB_OK)
		return rc;
	if (opts->work_dir && opts->work_dir[0] != '/')
		return msb_error_set(err, MSB_E_VALUE,
				     "conformance: work_dir '%s' is not absolute (a spec's work_dir is a guest path)",
				     opts->work_dir);
	msb_conformance_report *report = calloc(1, sizeof(*report));
	if (!report)
		return msb_error_set(err, MSB_E_NOMEM, "conformance: out of memory");
	const msb_plugin *plugin = msb_backend_plugin(backend);
	report->plugin = dup_or_empty(plugin ? msb_plugin_file(plugin) : NULL);
	report->backend = dup_or_empty(msb_backend_name(backend));
	report->isolation = dup_or_empty(msb_word_name(MSB_AXIS_ISOLATION, msb_backend_isolation(backend)));

	conf_run run = {
		.backend = backend,
		.ops = msb_backend_ops(backend),
		.self = msb_backend_instance_of(backend),
		.decl = msb_backend_declarations(backend),
		.opts = opts,
		.report = report,
		.work_dir = opts->work_dir ? opts->work_dir : MSB_DEFAULT_WORK_DIR,
	};
	run.egress = pick_egress(run.decl);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(run.run_id, sizeof(run.run_id), "c%ldx%lx", (long)getpid(),
		 (unsigned long)(ts.tv_sec * 1000 + ts.tv_nsec / 1000000) & 0xffffffffUL);

	for (size_t i = 0; i < N_SUITES && rc == MSB_OK; i++)
		if (chosen(opts, suites[i]->name))
			rc = run_suite(&run, suites[i]);
	if (rc != MSB_OK || !report->plugin || !report->backend || !report->isolation) {
		msb_conformance_report_free(report);
		return msb_error_set(err, MSB_E_NOMEM, "conformance: out of memory recording verdicts");
	}
	*out = report;
	return MSB_OK;
}

msb_errc msb_conformance_run_file(const char *plugin_path, const msb_node *config,
				  const msb_conformance_options *opts,
				  msb_conformance_report **out, msb_error *err)
{
	msb_loader *loader = NULL;
	const msb_plugin *plugin = NULL;
	msb_backend *backend = NULL;
	*out = NULL;
	msb_errc rc = msb_loader_new(&loader, err);
	/* Loaded as the msb command loads it: its constructors first in a probe child. */
	if (rc == MSB_OK)
		msb_loader_set_probe(loader, MSB_LOADER_PROBE_TIMEOUT_MS);
	if (rc == MSB_OK)
		rc = msb_loader_load(loader, plugin_path, &plugin, err);
	/* The backend reports its egress decisions to the kit, which checks them (suite_egress.c). */
	if (rc == MSB_OK)
		rc = msb_backend_open(plugin, config, NULL, conf_egress_host(), &backend, err);
	msb_conformance_options with_config = MSB_CONFORMANCE_OPTIONS_INIT;
	if (opts)
		memcpy(&with_config, opts, opts->struct_size < sizeof with_config ? opts->struct_size
									 : sizeof with_config);
	with_config.struct_size = (uint32_t)sizeof with_config;
	with_config.backend_config = config;
	if (rc == MSB_OK)
		rc = msb_conformance_run(backend, &with_config, out, err);
	msb_backend_close(backend);
	msb_loader_free(loader);
	return rc;
}
