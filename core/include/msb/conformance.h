/*
 * msb/conformance.h — the conformance kit: what holds a backend to what it declares.
 *
 * A backend's declarations are claims. The kit opens the backend through the normal loader,
 * acquires real sandboxes from it, and runs suites of cases against them — exec, run_code,
 * files, egress, scope, disposal — each suite chosen by what the backend declares. A suite
 * (or a case) for a capability, egress mode or scope the backend does not declare is
 * reported NOT APPLICABLE: never passed, because a pass would read as a claim checked.
 *
 * Every failure names its suite and case, what was expected and what was seen. A case that
 * could not be decided on this guest (no shell, no network tool, nothing to obstruct a
 * delete with) is a SKIP with its reason, never a pass.
 *
 * The kit talks to the backend directly through its descriptor operations, not through a
 * router: it tests the plugin, and a router's checks would turn a broken claim into a
 * refusal before the plugin was ever reached.
 *
 * Link libmsb-conformance (pkg-config msb-conformance); `msb conformance` is a thin command
 * over msb_conformance_run_file().
 */
#ifndef MSB_CONFORMANCE_H
#define MSB_CONFORMANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <msb/error.h>
#include <msb/loader.h>
#include <msb/node.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum msb_conformance_outcome {
	MSB_CONFORMANCE_PASS = 0,
	MSB_CONFORMANCE_FAIL,
	/* Applicable, but this guest could not decide it (the reason says why). */
	MSB_CONFORMANCE_SKIP,
	/* The backend does not declare what the case checks. */
	MSB_CONFORMANCE_NOT_APPLICABLE,
	MSB_CONFORMANCE__COUNT
} msb_conformance_outcome;

/* "pass", "FAIL", "skip", "not applicable". */
const char *msb_conformance_outcome_name(msb_conformance_outcome outcome);

/* One case's verdict. `expected` and `seen` are set on FAIL; `reason` on SKIP and NOT APPLICABLE. */
typedef struct msb_conformance_case {
	const char *suite;   /* static: "exec", "files", … */
	const char *name;    /* static: "argv-verbatim", … */
	msb_conformance_outcome outcome;
	char *expected;
	char *seen;
	char *reason;
	double seconds;      /* wall-clock the case took */
} msb_conformance_case;

typedef struct msb_conformance_report {
	char *plugin;        /* the file the backend came from */
	char *backend;       /* its name */
	char *isolation;     /* its rung */
	msb_conformance_case *cases;
	size_t len;
	size_t cap;
} msb_conformance_report;

typedef struct msb_conformance_options {
	uint32_t struct_size;
	/* Suite names to run (NULL-terminated); NULL runs every suite. */
	const char *const *suites;
	/* The spec's image and work_dir for every sandbox the kit acquires (NULL: the defaults). */
	const char *image;
	const char *work_dir;
	/*
	 * The language run_code speaks: "python" (default) or "sh". The kit needs to know it to
	 * write a program whose answer it can predict.
	 */
	const char *run_code_language;
	/* Called after each case is decided (e.g. to print progress); may be NULL. */
	void (*progress)(void *ctx, const msb_conformance_case *c);
	void *progress_ctx;
	/*
	 * Called as each case starts, before the backend is reached (may be NULL): what a
	 * supervisor needs to name the case a backend crashed or hung in. Shares progress_ctx.
	 */
	void (*case_started)(void *ctx, const char *suite, const char *name);
	/*
	 * Appended. The backend's `config:` node (msb_conformance_run_file fills it): the egress
	 * suite's allowlist half reads the test map egress_test_hosts from it and stands its
	 * link-local peers up at the addresses the map gives the kit's names (see
	 * MSB_CONFORMANCE_LISTED_HOST). NULL: those cases are skipped, saying so.
	 */
	const msb_node *backend_config;
} msb_conformance_options;

#define MSB_CONFORMANCE_OPTIONS_INIT \
	{ (uint32_t)sizeof(msb_conformance_options), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL }

/*
 * The names the allowlist half asks for. The backend's egress_test_hosts maps the first two
 * to two addresses of one 169.254.x.y/29 (the kit makes a network namespace holding them and
 * gives the host side the /29's first address; egress_allow_ranges must reopen that /29),
 * and the third to a 127.0.0.0/8 address the kit listens on port 80 of, which must stay
 * unreachable (a listed name resolving to the host's loopback). Ports: egress_ports must
 * hold 80.
 */
#define MSB_CONFORMANCE_LISTED_HOST "listed.conformance.msb.test"
#define MSB_CONFORMANCE_OTHER_HOST "other.conformance.msb.test"
#define MSB_CONFORMANCE_LOOPBACK_HOST "loopback.conformance.msb.test"

/* The suites the kit knows, NULL-terminated, in the order they run. */
const char *const *msb_conformance_suite_names(void);

/*
 * Run the chosen suites against an opened backend. Returns MSB_OK when the kit ran (whatever
 * the verdicts); refuses (MSB_E_VALUE) an unknown suite name before anything is acquired.
 * Every sandbox the kit acquires is disposed before this returns.
 */
msb_errc msb_conformance_run(msb_backend *backend, const msb_conformance_options *opts,
			     msb_conformance_report **out, msb_error *err);

/*
 * Load `plugin_path` through the loader, open it with `config` (its `config:` node; may be
 * NULL), run msb_conformance_run() and close everything again. A plugin the loader refuses
 * is an error here (MSB_E_BACKEND_NOT_PERMITTED / MSB_E_IMPORT), not a report.
 */
msb_errc msb_conformance_run_file(const char *plugin_path, const msb_node *config,
				  const msb_conformance_options *opts,
				  msb_conformance_report **out, msb_error *err);

/* How many cases ended with `outcome`. */
size_t msb_conformance_report_count(const msb_conformance_report *report,
				    msb_conformance_outcome outcome);
/* The case `suite`/`name`, or NULL. */
const msb_conformance_case *msb_conformance_report_find(const msb_conformance_report *report,
							  const char *suite, const char *name);
void msb_conformance_report_free(msb_conformance_report *report);

/* Render a report: for a person, as one JSON object, or as TAP version 13 (one test per case). */
int msb_conformance_report_write_text(const msb_conformance_report *report, FILE *out);
int msb_conformance_report_write_json(const msb_conformance_report *report, FILE *out);
int msb_conformance_report_write_tap(const msb_conformance_report *report, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
