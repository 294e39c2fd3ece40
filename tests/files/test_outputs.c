/*
 * test_outputs.c — artifact names and msb_collect_outputs, through the real loader, router
 * and sandbox wrappers, against the fixture_files backend (one temporary directory, every
 * call recorded). The phase order is asserted from the recorded calls: what the declaration
 * alone decides is refused before any stat, every output is stat-ed before any read, and a
 * refusal in stat or read means nothing reached the sink.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/confine.h>
#include <msb/msb.h>
#include <msb/outputs.h>

#include "files_test.h"
#include "msb_test.h"

/* ---- names ------------------------------------------------------------------------- */

static void names_refused_by_rule(void **state)
{
	static const struct {
		const char *name, *words;
	} bad[] = {
		{ "", "non-empty" },
		{ "/etc/passwd", "absolute" },
		{ "..", "'..'" },
		{ "../x", "'..'" },
		{ "a/../b", "'..'" },
		{ "a/..", "'..'" },
		{ "a\\b", "backslash" },
		{ "a//b", "empty or '.'" },
		{ "a/", "empty or '.'" },
		{ "./a", "empty or '.'" },
		{ "a/./b", "empty or '.'" },
		{ "a\tb", "control character" },
		{ "a\x7f\x01", "control character" },
		{ "bad\xff.png", "not valid UTF-8" },
		{ "over\xc3", "not valid UTF-8" },
	};
	msb_error err = MSB_ERROR_INIT;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(msb_validate_artifact_name(bad[i].name, &err), MSB_E_ARTIFACT_NAME_INVALID);
		if (!strstr(msb_error_message(&err), bad[i].words))
			print_error("'%s': '%s'\n", bad[i].name, msb_error_message(&err));
		assert_non_null(strstr(msb_error_message(&err), bad[i].words));
	}
	char longest[MSB_MAX_ARTIFACT_NAME_BYTES + 2];
	memset(longest, 'a', sizeof longest - 1);
	longest[sizeof longest - 1] = '\0';
	assert_int_equal(msb_validate_artifact_name(longest, &err), MSB_E_ARTIFACT_NAME_INVALID);
	assert_non_null(strstr(msb_error_message(&err), "256 bytes"));
	longest[MSB_MAX_ARTIFACT_NAME_BYTES] = '\0';
	assert_int_equal(msb_validate_artifact_name(longest, &err), MSB_OK);
	assert_int_equal(msb_validate_artifact_name("out/diagram.png", &err), MSB_OK);
	assert_int_equal(msb_validate_artifact_name("r\xc3\xa9sum\xc3\xa9/\xe5\x9b\xbe.png", &err), MSB_OK);
	msb_error_clear(&err);
}

static void same_key(const char *a, const char *b, bool want)
{
	char *ka = NULL, *kb = NULL;
	assert_int_equal(msb_artifact_collision_key(a, &ka, NULL), MSB_OK);
	assert_int_equal(msb_artifact_collision_key(b, &kb, NULL), MSB_OK);
	if ((strcmp(ka, kb) == 0) != want)
		print_error("'%s' vs '%s': keys '%s' '%s'\n", a, b, ka, kb);
	assert_true((strcmp(ka, kb) == 0) == want);
	free(ka);
	free(kb);
}

static void collision_keys(void **state)
{
	same_key("Report.PNG", "report.png", true);
	same_key("caf\xc3\xa9.txt", "cafe\xcc\x81.txt", true);       /* NFC vs NFD */
	same_key("CAF\xc3\x89.txt", "cafe\xcc\x81.txt", true);       /* case and form at once */
	same_key("\xc3\x85ngstr\xc3\xb6m", "A\xcc\x8a" "ngstro\xcc\x88m", true);
	same_key("stra\xc3\x9f" "e", "strasse", false);              /* ß is not ss: lower, not fold */
	same_key("a/b.txt", "a/c.txt", false);
	same_key("dir/File", "DIR/file", true);
}

static void spec_lands_artifacts(void **state)
{
	msb_spec spec;
	msb_spec_init(&spec, "k");
	assert_false(msb_spec_lands_artifacts(&spec));
	msb_declared_output consume = { .path = "a.json", .disposition = MSB_DISPOSITION_CONSUME };
	spec.declared_outputs = &consume;
	spec.n_declared_outputs = 1;
	assert_false(msb_spec_lands_artifacts(&spec));
	spec.outputs_named_at_call_time = true; /* lands something it cannot yet name */
	assert_true(msb_spec_lands_artifacts(&spec));
	msb_declared_output land = { .path = "a.png", .disposition = MSB_DISPOSITION_LAND };
	spec.outputs_named_at_call_time = false;
	spec.declared_outputs = &land;
	assert_true(msb_spec_lands_artifacts(&spec));
}

/* ---- collect_outputs through a real sandbox ------------------------------------------ */

typedef struct world {
	files_scene s;
	char log[PATH_MAX];
	char landing[PATH_MAX];
	msb_loader *loader;
	msb_backend *backend;
	msb_router *router;
	msb_sandbox *sandbox;
	msb_spec spec;
	msb_output_sink *sink;
	msb_declared_output outs[8];
} world;

static int world_up(void **state)
{
	world *w = calloc(1, sizeof *w);
	assert_non_null(w);
	files_scene_make(&w->s);
	PATHF(w->log, sizeof w->log, "%s/calls.log", w->s.base);
	PATHF(w->landing, sizeof w->landing, "%s/landing", w->s.base);
	assert_int_equal(mkdir(w->landing, 0700), 0);
	setenv("FIXTURE_FILES_DIR", w->s.root, 1);
	setenv("FIXTURE_FILES_LOG", w->log, 1);
	msb_error err = MSB_ERROR_INIT;
	const msb_plugin *plugin;
	assert_int_equal(msb_loader_new(&w->loader, &err), MSB_OK);
	if (msb_loader_load(w->loader, MSB_TEST_MODULE("tests/files", "fixture_files"), &plugin, &err) != MSB_OK)
		print_error("%s\n", msb_error_message(&err));
	assert_int_equal(msb_backend_open(plugin, NULL, NULL, NULL, &w->backend, &err), MSB_OK);
	msb_router_options o = MSB_ROUTER_OPTIONS_INIT;
	o.min_isolation = MSB_ISO_NONE;
	assert_int_equal(msb_router_new(&w->backend, 1, &o, &w->router, &err), MSB_OK);
	msb_spec_init(&w->spec, "diagram");
	w->spec.requires = MSB_BIT(MSB_CAP_FILES_OUT);
	msb_key key = { "scope", "thread", "agent", "" };
	if (msb_router_acquire(w->router, &key, &w->spec, &w->sandbox, &err) != MSB_OK)
		print_error("%s\n", msb_error_message(&err));
	assert_non_null(w->sandbox);
	assert_int_equal(msb_file_system_sink_new(w->landing, NULL, &w->sink, &err), MSB_OK);
	unlink(w->log); /* the acquire is not part of what a test asserts about */
	*state = w;
	return 0;
}

static int world_down(void **state)
{
	world *w = *state;
	msb_output_sink_free(w->sink);
	msb_sandbox_release(w->sandbox);
	msb_router_free(w->router);
	msb_backend_close(w->backend);
	msb_loader_free(w->loader);
	files_scene_remove(&w->s);
	free(w);
	return files_scene_teardown(state);
}

/* Declare outputs on the world's spec: "path" LAND required; "?path" optional; "=path" CONSUME. */
static void declare(world *w, size_t n, const char *const *paths)
{
	for (size_t i = 0; i < n; i++) {
		const char *p = paths[i];
		msb_declared_output d = { .disposition = MSB_DISPOSITION_LAND, .required = true };
		if (*p == '?') {
			d.required = false;
			p++;
		} else if (*p == '=') {
			d.disposition = MSB_DISPOSITION_CONSUME;
			p++;
		}
		d.path = p;
		w->outs[i] = d;
	}
	w->spec.declared_outputs = w->outs;
	w->spec.n_declared_outputs = n;
}

static char *read_log(world *w)
{
	static char buf[8192];
	buf[0] = '\0';
	FILE *f = fopen(w->log, "r");
	if (f) {
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		buf[n] = '\0';
		fclose(f);
	}
	return buf;
}

/* How many recorded calls start with `verb`. */
static int calls(world *w, const char *verb)
{
	int n = 0;
	size_t len = strlen(verb);
	for (const char *line = read_log(w); *line;) {
		if (strncmp(line, verb, len) == 0)
			n++;
		const char *nl = strchr(line, '\n');
		if (!nl)
			break;
		line = nl + 1;
	}
	return n;
}

static int landed_count(world *w)
{
	int fd;
	msb_entry_list l = { 0 };
	assert_int_equal(msb_confine_open_root(w->landing, &fd, NULL), MSB_OK);
	assert_int_equal(msb_confine_list_dir(fd, "", &l, NULL), MSB_OK);
	close(fd);
	int n = (int)l.len;
	msb_entry_list_free(&l);
	return n;
}

static msb_errc collect(world *w, msb_landed_artifacts *out, msb_error *err)
{
	return msb_collect_outputs(w->sandbox, &w->spec, w->sink, NULL, out, err);
}

static void assert_refused(msb_errc rc, msb_errc want, const msb_error *err, const char *w1,
			   const char *w2)
{
	if (rc != want || !strstr(msb_error_message(err), w1) || (w2 && !strstr(msb_error_message(err), w2)))
		print_error("got %s: %s\n", msb_errc_name(rc), msb_error_message(err));
	assert_int_equal(rc, want);
	assert_non_null(strstr(msb_error_message(err), w1));
	if (w2)
		assert_non_null(strstr(msb_error_message(err), w2));
}

static void lands_in_declaration_order_after_all_stats(void **state)
{
	world *w = *state;
	files_put(&w->s, "b.png", "bbbb");
	files_mkdir(&w->s, "out");
	files_put(&w->s, "out/a.svg", "aa");
	files_put(&w->s, "data.json", "{}");
	declare(w, 4, (const char *const[]){ "b.png", "out/a.svg", "=data.json", "?absent.txt" });
	w->outs[0].media_type = "image/png";
	msb_landed_artifacts out;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(collect(w, &out, &err), MSB_OK);
	assert_int_equal(out.len, 2);
	assert_string_equal(out.items[0].name, "b.png");
	assert_string_equal(out.items[0].media_type, "image/png");
	assert_string_equal(out.items[0].display, "b.png (4 bytes)");
	assert_string_equal(out.items[1].name, "out/a.svg");
	char got[16];
	PATHF(got, sizeof got, "%s", "");
	FILE *f = fopen(out.items[1].handle, "r");
	assert_non_null(f);
	assert_non_null(fgets(got, sizeof got, f));
	fclose(f);
	assert_string_equal(got, "aa");
	/* the recorded order: four stats, then two reads (the CONSUME output is never read) */
	assert_string_equal(read_log(w), "stat b.png\nstat out/a.svg\nstat data.json\nstat absent.txt\n"
					 "read b.png 8388608\nread out/a.svg 8388608\n");
	msb_landed_artifacts_free(&out);
}

static void declaration_refusals_reach_no_backend(void **state)
{
	world *w = *state;
	files_put(&w->s, "Report.png", "x");
	files_put(&w->s, "report.PNG", "y");
	msb_landed_artifacts out;
	msb_error err = MSB_ERROR_INIT;

	declare(w, 2, (const char *const[]){ "Report.png", "report.PNG" });
	assert_refused(collect(w, &out, &err), MSB_E_ARTIFACT_NAME_COLLISION, &err, "'Report.png' and 'report.PNG'", "by case");

	declare(w, 2, (const char *const[]){ "caf\xc3\xa9.txt", "cafe\xcc\x81.txt" });
	/* the sink composes names to NFC, so both are delivered as one spelling */
	assert_refused(collect(w, &out, &err), MSB_E_ARTIFACT_NAME_COLLISION, &err, "both land as 'caf\xc3\xa9.txt'", NULL);
	/* a byte-exact sink still has them collide: the key compares normalised forms */
	w->sink->normalization = MSB_NAME_NONE;
	assert_refused(collect(w, &out, &err), MSB_E_ARTIFACT_NAME_COLLISION, &err, "Unicode", NULL);
	w->sink->normalization = MSB_NAME_NFC;

	declare(w, 2, (const char *const[]){ "run1/x.png", "run2/x.png" });
	w->outs[0].name = "x.png";
	w->outs[1].name = "x.png";
	assert_refused(collect(w, &out, &err), MSB_E_ARTIFACT_NAME_COLLISION, &err, "both land as 'x.png'", NULL);

	/* CONSUME names never land, so they cannot collide */
	declare(w, 2, (const char *const[]){ "=Report.png", "report.PNG" });
	assert_int_equal(msb_collect_outputs(w->sandbox, &w->spec, w->sink, NULL, &out, &err), MSB_OK);
	msb_landed_artifacts_free(&out);
	unlink(w->log);

	declare(w, 2, (const char *const[]){ "ok.png", "../escape.png" });
	assert_refused(collect(w, &out, &err), MSB_E_ARTIFACT_NAME_INVALID, &err, "'../escape.png'", "'..'");

	declare(w, 1, (const char *const[]){ "ok.png" });
	w->outs[0].name = "/abs.png";
	assert_refused(collect(w, &out, &err), MSB_E_ARTIFACT_NAME_INVALID, &err, "'/abs.png'", "absolute");

	declare(w, 1, (const char *const[]){ "Report.png" });
	assert_refused(msb_collect_outputs(w->sandbox, &w->spec, NULL, NULL, &out, &err), MSB_E_OUTPUT_SINK_REQUIRED, &err,
		       "no output sink", "diagram");

	msb_collect_options o = MSB_COLLECT_OPTIONS_INIT;
	msb_declared_output late = { .path = "late.png", .required = true };
	o.outputs = &late;
	o.n_outputs = 1;
	assert_refused(msb_collect_outputs(w->sandbox, &w->spec, w->sink, &o, &out, &err), MSB_E_VALUE, &err,
		       "outputs_named_at_call_time", "1 call-time");

	o = (msb_collect_options){ .struct_size = 4 };
	assert_refused(msb_collect_outputs(w->sandbox, &w->spec, w->sink, &o, &out, &err), MSB_E_VALUE, &err,
		       "collect_outputs: its options are 4 bytes", "MSB_COLLECT_OPTIONS_INIT");
	msb_output_sink deaf = MSB_OUTPUT_SINK_INIT;
	assert_refused(msb_collect_outputs(w->sandbox, &w->spec, &deaf, NULL, &out, &err), MSB_E_VALUE, &err,
		       "refused the output sink given for the 'diagram' workload", "no deliver");

	/* none of the refusals reached the backend; only the CONSUME case's one file landed */
	assert_string_equal(read_log(w), "");
	assert_int_equal(landed_count(w), 1);
	msb_error_clear(&err);
}

static void call_time_outputs_when_the_spec_admits_them(void **state)
{
	world *w = *state;
	files_put(&w->s, "early.png", "e");
	files_put(&w->s, "late.png", "l");
	declare(w, 1, (const char *const[]){ "early.png" });
	w->spec.outputs_named_at_call_time = true;
	w->spec.files_out.max_files = 1;
	msb_declared_output late = { .path = "late.png", .required = true };
	msb_collect_options o = MSB_COLLECT_OPTIONS_INIT;
	o.outputs = &late;
	o.n_outputs = 1;
	msb_landed_artifacts out;
	msb_error err = MSB_ERROR_INIT;
	/* counted against the same caps: two files over max_files=1 */
	assert_refused(msb_collect_outputs(w->sandbox, &w->spec, w->sink, &o, &out, &err),
		       MSB_E_TRANSFER_CAP_EXCEEDED, &err, "'late.png'", "max_files of 1");
	w->spec.files_out.max_files = 2;
	assert_int_equal(msb_collect_outputs(w->sandbox, &w->spec, w->sink, &o, &out, &err), MSB_OK);
	assert_int_equal(out.len, 2);
	assert_string_equal(out.items[1].name, "late.png");
	msb_landed_artifacts_free(&out);
	msb_error_clear(&err);
}

static void stat_refusals_read_and_deliver_nothing(void **state)
{
	world *w = *state;
	files_put(&w->s, "one.txt", "1");
	files_put(&w->s, "unknown-size.bin", "??");
	files_link(&w->s, "link.txt", "@OUT/secret");
	files_mkdir(&w->s, "adir");
	msb_landed_artifacts out;
	msb_error err = MSB_ERROR_INIT;

	declare(w, 2, (const char *const[]){ "one.txt", "missing.txt" });
	assert_refused(collect(w, &out, &err), MSB_E_OUTPUT_MISSING, &err, "'missing.txt'", "required");
	declare(w, 2, (const char *const[]){ "one.txt", "unknown-size.bin" });
	assert_refused(collect(w, &out, &err), MSB_E_OUTPUT_SIZE_UNKNOWN, &err, "'unknown-size.bin'", "size");
	declare(w, 2, (const char *const[]){ "one.txt", "link.txt" });
	assert_refused(collect(w, &out, &err), MSB_E_OUTPUT_NOT_REGULAR, &err, "'link.txt'", "symlink");
	declare(w, 2, (const char *const[]){ "one.txt", "adir" });
	assert_refused(collect(w, &out, &err), MSB_E_OUTPUT_NOT_REGULAR, &err, "'adir'", "directory");
	assert_int_equal(calls(w, "stat"), 8);
	assert_int_equal(calls(w, "read"), 0);
	assert_int_equal(landed_count(w), 0);
	assert_true(files_outside_untouched(&w->s));
	msb_error_clear(&err);
}

static void caps_name_the_cap_and_the_file(void **state)
{
	world *w = *state;
	files_put(&w->s, "a", "12345");
	files_put(&w->s, "b", "12345");
	files_put(&w->s, "c", "1234567890");
	msb_landed_artifacts out;
	msb_error err = MSB_ERROR_INIT;
	declare(w, 3, (const char *const[]){ "a", "b", "c" });

	w->spec.files_out = (msb_transfer_limits){ 8, 100, 10 };
	assert_refused(collect(w, &out, &err), MSB_E_TRANSFER_CAP_EXCEEDED, &err, "'c'", "max_bytes_per_file of 8");
	w->spec.files_out = (msb_transfer_limits){ 100, 100, 2 };
	assert_refused(collect(w, &out, &err), MSB_E_TRANSFER_CAP_EXCEEDED, &err, "'c'", "max_files of 2");
	w->spec.files_out = (msb_transfer_limits){ 100, 12, 10 };
	assert_refused(collect(w, &out, &err), MSB_E_TRANSFER_CAP_EXCEEDED, &err, "'c'", "max_total_bytes of 12");
	/* a CONSUME output counts against every cap too */
	declare(w, 3, (const char *const[]){ "a", "b", "=c" });
	assert_refused(collect(w, &out, &err), MSB_E_TRANSFER_CAP_EXCEEDED, &err, "'c'", "max_total_bytes");
	assert_int_equal(calls(w, "read"), 0); /* every breach came before any read */
	assert_int_equal(landed_count(w), 0);

	/* the read is handed the smaller of the per-file cap and what the total has left */
	unlink(w->log);
	w->spec.files_out = (msb_transfer_limits){ 8, 12, 10 };
	declare(w, 2, (const char *const[]){ "a", "b" });
	assert_int_equal(collect(w, &out, &err), MSB_OK);
	assert_string_equal(read_log(w), "stat a\nstat b\nread a 8\nread b 7\n");
	msb_landed_artifacts_free(&out);
	msb_error_clear(&err);
}

static void landing_refusal_is_per_artifact(void **state)
{
	world *w = *state;
	files_put(&w->s, "a", "1");
	files_put(&w->s, "b", "2");
	files_put(&w->s, "c", "3");
	char taken[PATH_MAX];
	PATHF(taken, sizeof taken, "%s/c", w->landing);
	FILE *f = fopen(taken, "w");
	assert_non_null(f);
	fclose(f);
	declare(w, 3, (const char *const[]){ "a", "b", "c" });
	msb_landed_artifacts out;
	msb_error err = MSB_ERROR_INIT;
	assert_refused(collect(w, &out, &err), MSB_E_LANDING_EXISTS, &err, "'c'", "already there");
	/* the first two landed, and the caller is told so */
	assert_int_equal(out.len, 2);
	assert_string_equal(out.items[0].name, "a");
	assert_string_equal(out.items[1].name, "b");
	assert_int_equal(landed_count(w), 3);
	msb_landed_artifacts_free(&out);
	msb_error_clear(&err);
}

typedef struct recorded {
	int delivered;
	char call_id[32];
	char name[64];
} recorded;

static msb_errc record_deliver(void *ctx, const msb_artifact *a, msb_landed_artifact *landed,
			       msb_error *err)
{
	recorded *r = ctx;
	r->delivered++;
	snprintf(r->call_id, sizeof r->call_id, "%s", a->call_id ? a->call_id : "");
	snprintf(r->name, sizeof r->name, "%s", a->name);
	landed->name = strdup(a->name);
	landed->display = strdup("ok");
	return MSB_OK;
}

static void per_call_sink_needs_a_call_id_and_names_are_nfc(void **state)
{
	world *w = *state;
	files_put(&w->s, "cafe\xcc\x81.txt", "x"); /* NFD on disk */
	declare(w, 1, (const char *const[]){ "cafe\xcc\x81.txt" });
	recorded r = { 0 };
	msb_output_sink sink = MSB_OUTPUT_SINK_INIT;
	sink.ctx = &r;
	sink.per_call = true;
	sink.deliver = record_deliver;
	msb_landed_artifacts out;
	msb_error err = MSB_ERROR_INIT;
	assert_refused(msb_collect_outputs(w->sandbox, &w->spec, &sink, NULL, &out, &err), MSB_E_VALUE, &err,
		       "no call_id", "diagram");
	assert_int_equal(calls(w, "stat"), 0);
	msb_collect_options o = MSB_COLLECT_OPTIONS_INIT;
	o.call_id = "call-7";
	assert_int_equal(msb_collect_outputs(w->sandbox, &w->spec, &sink, &o, &out, &err), MSB_OK);
	assert_int_equal(r.delivered, 1);
	assert_string_equal(r.call_id, "call-7");
	assert_string_equal(r.name, "caf\xc3\xa9.txt"); /* delivered in NFC; read by its own path */
	msb_landed_artifacts_free(&out);
	sink.normalization = MSB_NAME_NONE;
	assert_int_equal(msb_collect_outputs(w->sandbox, &w->spec, &sink, &o, &out, &err), MSB_OK);
	assert_string_equal(r.name, "cafe\xcc\x81.txt");
	msb_landed_artifacts_free(&out);
	msb_error_clear(&err);
}

typedef struct seen {
	int events;
	size_t files;
	char refusal[64];
	char call[32];
} seen;

static int on_collected(void *ctx, const msb_outputs_collected *ev)
{
	seen *s = ctx;
	s->events++;
	s->files = ev->files;
	snprintf(s->refusal, sizeof s->refusal, "%s", ev->refusal ? ev->refusal : "");
	snprintf(s->call, sizeof s->call, "%s", ev->call ? ev->call : "");
	return 0;
}

static void observer_hears_landed_and_refused(void **state)
{
	world *w = *state;
	files_put(&w->s, "a", "1");
	seen s = { 0 };
	msb_observer obs = MSB_OBSERVER_INIT;
	obs.ctx = &s;
	obs.outputs_collected = on_collected;
	msb_collect_options o = MSB_COLLECT_OPTIONS_INIT;
	o.observer = &obs;
	o.call_id = "c1";
	msb_landed_artifacts out;
	msb_error err = MSB_ERROR_INIT;
	declare(w, 1, (const char *const[]){ "a" });
	assert_int_equal(msb_collect_outputs(w->sandbox, &w->spec, w->sink, &o, &out, &err), MSB_OK);
	assert_int_equal(s.events, 1);
	assert_int_equal(s.files, 1);
	assert_string_equal(s.refusal, "");
	assert_string_equal(s.call, "c1");
	msb_landed_artifacts_free(&out);
	declare(w, 1, (const char *const[]){ "gone" });
	assert_int_equal(msb_collect_outputs(w->sandbox, &w->spec, w->sink, &o, &out, &err), MSB_E_OUTPUT_MISSING);
	assert_int_equal(s.events, 2);
	assert_string_equal(s.refusal, "SandboxOutputMissing");
	msb_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest names[] = {
		cmocka_unit_test(names_refused_by_rule),
		cmocka_unit_test(collision_keys),
		cmocka_unit_test(spec_lands_artifacts),
	};
	const struct CMUnitTest collect[] = {
		cmocka_unit_test_setup_teardown(lands_in_declaration_order_after_all_stats, world_up, world_down),
		cmocka_unit_test_setup_teardown(declaration_refusals_reach_no_backend, world_up, world_down),
		cmocka_unit_test_setup_teardown(call_time_outputs_when_the_spec_admits_them, world_up, world_down),
		cmocka_unit_test_setup_teardown(stat_refusals_read_and_deliver_nothing, world_up, world_down),
		cmocka_unit_test_setup_teardown(caps_name_the_cap_and_the_file, world_up, world_down),
		cmocka_unit_test_setup_teardown(landing_refusal_is_per_artifact, world_up, world_down),
		cmocka_unit_test_setup_teardown(per_call_sink_needs_a_call_id_and_names_are_nfc, world_up, world_down),
		cmocka_unit_test_setup_teardown(observer_hears_landed_and_refused, world_up, world_down),
	};
	int failed = cmocka_run_group_tests_name("artifact names", names, NULL, NULL);
	failed += cmocka_run_group_tests_name("collect_outputs", collect, NULL, NULL);
	return failed ? 1 : 0;
}
