/*
 * kit.h — what the conformance suites share inside libmsb-conformance: the run (the backend
 * under test, the report being written, the case being decided), the sandboxes a suite
 * acquires, and the way a case records its verdict. Private to core/conformance.
 */
#ifndef MSB_CONFORMANCE_KIT_H
#define MSB_CONFORMANCE_KIT_H

#include <stdbool.h>
#include <stddef.h>

#include <msb/backend.h>
#include <msb/conformance.h>
#include <msb/loader.h>
#include <msb/types.h>

typedef struct conf_run conf_run;

/* One sandbox a suite acquired. Every key ever acquired is disposed when the suite ends. */
typedef struct conf_box {
	msb_key key;
	msb_spec spec;
	msb_sandbox_handle *handle;
	char thread[96];
	char call[48];
	char agent[32];
	bool probed;                   /* msb-probe is in its work dir (probe.c) */
} conf_box;

/* A case: its name, what it needs declared (capability bits), and the code that decides it. */
typedef struct conf_case {
	const char *name;
	msb_set needs;                 /* capabilities; any missing: NOT APPLICABLE */
	void (*run)(conf_run *run);
} conf_case;

typedef struct conf_suite {
	const char *name;
	/* NULL when the suite applies; otherwise the reason it does not (static or run-owned). */
	const char *(*inapplicable)(conf_run *run);
	/* Called once before the cases (may be NULL); a non-NULL return skips every case with it. */
	const char *(*setup)(conf_run *run);
	void (*teardown)(conf_run *run);
	const conf_case *cases;
	size_t n_cases;
} conf_suite;

struct conf_run {
	msb_backend *backend;
	const struct msb_backend_v27 *ops;
	msb_backend_instance *self;
	const msb_effective_declarations *decl;
	const msb_conformance_options *opts;
	msb_conformance_report *report;
	const conf_suite *suite;
	const char *case_name;
	msb_conformance_case *verdict;  /* the current case's, while it runs */
	char run_id[48];
	unsigned seq;
	msb_egress egress;              /* the mode every sandbox is acquired with */
	int exec_probe;                 /* conf_exec_usable: 0 not yet asked, 1 real, -1 not */
	const char *work_dir;
	/* Keys acquired by the current suite, to dispose at its end. */
	conf_box **boxes;
	size_t n_boxes, cap_boxes;
	void *suite_state;              /* the suite's shared box (conf_main_box) */
	void *suite_data;               /* a suite's own, between setup and teardown */
	const char *main_box_failed;    /* the case whose acquire of the shared box failed */
};

/* ---- verdicts (verdict.c) ---------------------------------------------------------- */
/* Record a failure of the current case: what was expected, what was seen. First one wins. */
void conf_fail(conf_run *run, const char *expected, const char *seen_fmt, ...) MSB_PRINTF(3, 4);
/* The case could not be decided here; reason says why. */
void conf_skip(conf_run *run, const char *reason_fmt, ...) MSB_PRINTF(2, 3);
/* A failed kit step (acquire, a plant) turned into a failure naming the call and its error. */
void conf_fail_call(conf_run *run, const char *what, const msb_error *err);
bool conf_decided(const conf_run *run);
msb_errc conf_report_add(msb_conformance_report *report, const char *suite, const char *name,
			 msb_conformance_outcome outcome, const char *reason);

/* ---- sandboxes (box.c) --------------------------------------------------------------- */
bool conf_has(const conf_run *run, msb_capability cap);
/*
 * Whether exec is declared and really runs programs (so the kit may plant and look with it),
 * probed once per run in `box`; false while undecided and no sandbox is given.
 */
bool conf_exec_usable(conf_run *run, conf_box *box);
/*
 * Acquire a sandbox for a fresh conversation named `tag` (and call `call`, NULL for none,
 * at `scope`). On failure the case is failed naming the acquire and NULL is returned.
 */
conf_box *conf_box_acquire(conf_run *run, const char *tag, const char *call, msb_scope scope);
/* The suite's shared sandbox, acquired on first use (NULL after failing the case). */
conf_box *conf_main_box(conf_run *run);
/* A box record with its key and spec filled, not yet acquired (tweak, then conf_box_reacquire). */
conf_box *conf_box_new(conf_run *run, const char *tag, const char *call, msb_scope scope);
/*
 * Whether `rel` (relative to the work dir) exists, asked through exec when declared, else
 * stat_file: 1, 0, or -1 when nothing declared can tell.
 */
int conf_exists(conf_run *run, conf_box *box, const char *rel);
/*
 * How many entries the work dir holds (list_dir when declared, else exec `ls -A`), the first
 * one named in `first`; -1 when nothing declared can tell.
 */
long conf_work_dir_entries(conf_run *run, conf_box *box, char *first, size_t size);
/* Write `text` to `rel` under the work dir (write_file, else exec); false after deciding the case. */
bool conf_plant(conf_run *run, conf_box *box, const char *rel, const char *text);
/* The case does not apply to what the backend declares. */
void conf_not_applicable(conf_run *run, const char *reason);
/* Acquire the same key again (a fresh handle); false after failing the case. */
bool conf_box_reacquire(conf_run *run, conf_box *box);
/* Drop the handle (not the sandbox). */
void conf_box_release(conf_run *run, conf_box *box);
/* Dispose the box's key; true and `failure` filled when the backend reported one. */
bool conf_box_dispose(conf_run *run, conf_box *box, msb_disposal_failure *failure);
/* Dispose every key the suite acquired and forget them. */
void conf_boxes_dispose_all(conf_run *run);
/* A new nonce-bearing name, unique within the run: "<prefix>-<run id>-<n>". */
void conf_unique(conf_run *run, const char *prefix, char *buf, size_t size);

/* ---- exec helpers (box.c) -------------------------------------------------------------- */
/*
 * Run `sh -c script sh args…` in the box with `wd` (NULL: the work dir). Returns the call's
 * code; res is filled either way (free it). args is NULL-terminated or NULL.
 */
msb_errc conf_sh(conf_run *run, conf_box *box, const char *wd, const char *script,
		 const char *const *args, double timeout, msb_exec_result *res, msb_error *err);
/*
 * Run a setup script that must succeed: on any failure the case is failed naming `what`,
 * the exit status and stderr, and false returned.
 */
bool conf_sh_ok(conf_run *run, conf_box *box, const char *wd, const char *what,
		const char *script, const char *const *args);
/* A printable rendering of bytes for a message ("\x80" escapes), into a static-free buffer. */
void conf_quote(const void *data, size_t len, char *buf, size_t size);
/* Join the work dir and a relative name into buf. */
void conf_path(const conf_run *run, const char *rel, char *buf, size_t size);

/* ---- the suites -------------------------------------------------------------------- */
extern const conf_suite conf_suite_exec;
extern const conf_suite conf_suite_stream;
extern const conf_suite conf_suite_run_code;
extern const conf_suite conf_suite_files;
extern const conf_suite conf_suite_egress;
extern const conf_suite conf_suite_scope;
extern const conf_suite conf_suite_disposal;
extern const conf_suite conf_suite_rung;

/* The streaming suite's background cases (suite_stream_bg.c). */
void conf_case_bg_outlives_its_starter(conf_run *run);
void conf_case_bg_listed(conf_run *run);
void conf_case_bg_signal(conf_run *run);
void conf_case_bg_ring(conf_run *run);
void conf_case_bg_reaped_at_dispose(conf_run *run);

/* Wall-clock now, in seconds (CLOCK_MONOTONIC). */
double conf_now(void);

#endif
