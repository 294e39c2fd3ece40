/*
 * test_store.c — the file store, the file-store sink and the read-only store tools, without a
 * sandbox: a directory store confined like the file-system sink; every rule of a landing
 * (the call id's folder, text only, never replaced, provenance before the bytes); and the
 * two tools that read a store and can never write it.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/store.h>

#include "msb_test.h"

/* ---- a temporary root --------------------------------------------------------------- */

typedef struct world {
	char root[64];
	char outside[64];
	msb_file_store *store;
} world;

static int setup(void **state)
{
	world *w = calloc(1, sizeof *w);
	snprintf(w->root, sizeof w->root, "/tmp/msb-store-test-XXXXXX");
	snprintf(w->outside, sizeof w->outside, "/tmp/msb-store-outside-XXXXXX");
	if (!mkdtemp(w->root) || !mkdtemp(w->outside))
		return -1;
	msb_error err = MSB_ERROR_INIT;
	if (msb_directory_store_new(w->root, &w->store, &err) != MSB_OK)
		return -1;
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	world *w = *state;
	msb_file_store_free(w->store);
	char cmd[192];
	snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", w->root, w->outside);
	int rc = system(cmd);
	free(w);
	return rc == 0 ? 0 : -1;
}

static char *slurp(const char *dir, const char *name)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	static char buf[4096];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static void spit(const char *dir, const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* ---- the directory store ----------------------------------------------------------- */

static void a_directory_store_refuses_a_relative_or_missing_root(void **state)
{
	(void)state;
	msb_file_store *s = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_directory_store_new("relative/dir", &s, &err), MSB_E_VALUE);
	assert_null(s);
	assert_non_null(strstr(msb_error_message(&err), "absolute"));
	assert_int_not_equal(msb_directory_store_new("/nonexistent/msb-store", &s, &err), MSB_OK);
	assert_null(s);
	assert_non_null(strstr(msb_error_message(&err), "directory store"));
	msb_error_clear(&err);
}

static void the_directory_store_is_exclusive_and_confined(void **state)
{
	world *w = *state;
	msb_file_store *s = w->store;
	msb_error err = MSB_ERROR_INIT;
	const unsigned char a[] = "first", b[] = "second";
	assert_int_equal(s->put(s->ctx, "c1/out.txt", a, 5, &err), MSB_OK);
	assert_string_equal(slurp(w->root, "c1/out.txt"), "first");
	/* exclusive: never replaced */
	assert_int_equal(s->put(s->ctx, "c1/out.txt", b, 6, &err), MSB_E_LANDING_EXISTS);
	assert_string_equal(slurp(w->root, "c1/out.txt"), "first");
	bool there = false;
	assert_int_equal(s->exists(s->ctx, "c1/out.txt", &there, &err), MSB_OK);
	assert_true(there);
	assert_int_equal(s->exists(s->ctx, "c1/none", &there, &err), MSB_OK);
	assert_false(there);
	/* a link planted in the root is never written or read through */
	char link[128];
	snprintf(link, sizeof link, "%s/esc", w->root);
	assert_int_equal(symlink(w->outside, link), 0);
	assert_int_not_equal(s->put(s->ctx, "esc/planted", a, 5, &err), MSB_OK);
	assert_null(slurp(w->outside, "planted"));
	spit(w->outside, "secret", "outside");
	msb_buf out = { 0 };
	assert_int_not_equal(s->read(s->ctx, "esc/secret", 100, &out, &err), MSB_OK);
	assert_int_equal(out.len, 0);
	/* a read is bounded: refused over the cap, never truncated */
	assert_int_equal(s->read(s->ctx, "c1/out.txt", 3, &out, &err), MSB_E_TRANSFER_CAP_EXCEEDED);
	assert_int_equal(out.len, 0);
	assert_int_equal(s->read(s->ctx, "c1/out.txt", 5, &out, &err), MSB_OK);
	assert_int_equal(out.len, 5);
	msb_buf_free(&out);
	msb_entry_list list = { 0 };
	assert_int_equal(s->list(s->ctx, "", &list, &err), MSB_OK);
	assert_int_equal(list.len, 2); /* c1/ and the link, listed as a link */
	msb_entry_list_free(&list);
	msb_error_clear(&err);
}

/* ---- the file-store sink ----------------------------------------------------------- */

typedef struct prov {
	int calls;
	char path[128], sha[65], kind[32];
	bool existed_at_record; /* whether the bytes were already in the store when recorded */
	msb_errc refuse;        /* non-zero: the record fails */
	const msb_file_store *store;
} prov;

static msb_errc record(void *ctx, const msb_landing_record *r, msb_error *err)
{
	prov *p = ctx;
	p->calls++;
	snprintf(p->path, sizeof p->path, "%s", r->path);
	snprintf(p->sha, sizeof p->sha, "%s", r->sha256);
	snprintf(p->kind, sizeof p->kind, "%s", r->kind ? r->kind : "");
	p->store->exists(p->store->ctx, r->path, &p->existed_at_record, NULL);
	if (p->refuse)
		return msb_error_set(err, p->refuse, "the provenance log is full");
	return MSB_OK;
}

static msb_output_sink *sink_new(world *w, prov *p)
{
	msb_file_store_sink_options o = MSB_FILE_STORE_SINK_OPTIONS_INIT;
	o.provenance = p ? record : NULL;
	o.provenance_ctx = p;
	if (p)
		p->store = w->store;
	msb_output_sink *sink = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_file_store_sink_new(w->store, &o, &sink, &err), MSB_OK);
	return sink;
}

static msb_errc deliver(msb_output_sink *sink, const char *name, const char *call_id,
			const void *bytes, size_t len, msb_landed_artifact *l, msb_error *err)
{
	const msb_artifact a = { name, bytes, len, "diagram", "text/plain", call_id };
	memset(l, 0, sizeof *l);
	return sink->deliver(sink->ctx, &a, l, err);
}

static void the_sink_lands_under_the_call_id_and_records_first(void **state)
{
	world *w = *state;
	prov p = { 0 };
	msb_output_sink *sink = sink_new(w, &p);
	assert_true(sink->per_call);
	msb_landed_artifact l;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(deliver(sink, "out/report.txt", "c0ffee", "hello\n", 6, &l, &err), MSB_OK);
	assert_string_equal(slurp(w->root, "c0ffee/out/report.txt"), "hello\n");
	assert_string_equal(l.handle, "c0ffee/out/report.txt");
	assert_string_equal(l.name, "out/report.txt");
	assert_string_equal(l.display, "c0ffee/out/report.txt (6 bytes)");
	/* provenance: once, before the bytes existed, with the digest of what landed */
	assert_int_equal(p.calls, 1);
	assert_false(p.existed_at_record);
	assert_string_equal(p.path, "c0ffee/out/report.txt");
	assert_string_equal(p.kind, "diagram");
	assert_string_equal(p.sha, "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
	msb_landed_artifact_free(&l);
	msb_output_sink_free(sink);
}

static void the_sink_refuses_what_is_not_text_and_records_nothing(void **state)
{
	world *w = *state;
	prov p = { 0 };
	msb_output_sink *sink = sink_new(w, &p);
	msb_landed_artifact l;
	msb_error err = MSB_ERROR_INIT;
	const char *bad[] = { "\xff\xfe", "ok then \xc3", "\xed\xa0\x80 surrogate", "\xc0\xaf" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		assert_int_equal(deliver(sink, "img.png", "c1", bad[i], strlen(bad[i]), &l, &err),
				 MSB_E_LANDING_NOT_TEXT);
		assert_non_null(strstr(msb_error_message(&err), "img.png"));
		assert_string_equal(msb_errc_name(err.code), "SandboxLandingNotText");
	}
	assert_int_equal(p.calls, 0);
	assert_null(slurp(w->root, "c1/img.png"));
	/* NUL and multi-byte text are text */
	assert_int_equal(deliver(sink, "nul.txt", "c1", "a\0b\xc3\xa9", 5, &l, &err), MSB_OK);
	msb_landed_artifact_free(&l);
	msb_output_sink_free(sink);
	msb_error_clear(&err);
}

static void the_sink_never_replaces_and_says_so(void **state)
{
	world *w = *state;
	prov p = { 0 };
	msb_output_sink *sink = sink_new(w, &p);
	msb_landed_artifact l;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(deliver(sink, "a.txt", "c2", "one", 3, &l, &err), MSB_OK);
	msb_landed_artifact_free(&l);
	assert_int_equal(deliver(sink, "a.txt", "c2", "two", 3, &l, &err), MSB_E_LANDING_EXISTS);
	assert_string_equal(msb_errc_name(err.code), "SandboxLandingExists");
	assert_string_equal(slurp(w->root, "c2/a.txt"), "one");
	assert_int_equal(p.calls, 1); /* the refused one was never recorded */
	/* the same name under another call is another file */
	assert_int_equal(deliver(sink, "a.txt", "c3", "two", 3, &l, &err), MSB_OK);
	msb_landed_artifact_free(&l);
	msb_output_sink_free(sink);
	msb_error_clear(&err);
}

static void a_failed_record_writes_nothing(void **state)
{
	world *w = *state;
	prov p = { .refuse = MSB_E_OS };
	msb_output_sink *sink = sink_new(w, &p);
	msb_landed_artifact l;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(deliver(sink, "a.txt", "c4", "one", 3, &l, &err), MSB_E_OS);
	assert_non_null(strstr(msb_error_message(&err), "provenance"));
	assert_non_null(strstr(msb_error_message(&err), "the provenance log is full"));
	assert_null(slurp(w->root, "c4/a.txt"));
	msb_output_sink_free(sink);
	msb_error_clear(&err);
}

static void the_sink_refuses_names_and_call_ids_that_climb(void **state)
{
	world *w = *state;
	msb_output_sink *sink = sink_new(w, NULL);
	msb_landed_artifact l;
	msb_error err = MSB_ERROR_INIT;
	const char *names[] = { "../x", "/etc/x", "a/../../x", "a//b", "a\\b", "", "./a" };
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		assert_int_not_equal(deliver(sink, names[i], "c5", "x", 1, &l, &err), MSB_OK);
	const char *ids[] = { NULL, "", "..", "a/b", "../c", "." };
	for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
		assert_int_equal(deliver(sink, "x.txt", ids[i], "x", 1, &l, &err), MSB_E_VALUE);
		assert_non_null(strstr(msb_error_message(&err), "call id"));
	}
	/* nothing landed anywhere */
	msb_entry_list list = { 0 };
	assert_int_equal(w->store->list(w->store->ctx, "", &list, &err), MSB_OK);
	assert_int_equal(list.len, 0);
	msb_entry_list_free(&list);
	msb_output_sink_free(sink);
	msb_error_clear(&err);
}

/* A store whose destination is taken between the sink's look and its write. */
static msb_errc racing_exists(void *ctx, const char *path, bool *exists, msb_error *err)
{
	(void)ctx, (void)path, (void)err;
	*exists = false;
	return MSB_OK;
}

static msb_errc racing_put(void *ctx, const char *path, const unsigned char *c, size_t len,
			   msb_error *err)
{
	(void)ctx, (void)c, (void)len;
	return msb_error_set(err, MSB_E_LANDING_EXISTS, "'%s' was taken", path);
}

static void a_destination_taken_in_between_is_still_refused(void **state)
{
	(void)state;
	msb_file_store racing = MSB_FILE_STORE_INIT;
	racing.put = racing_put;
	racing.exists = racing_exists;
	msb_output_sink *sink = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_file_store_sink_new(&racing, NULL, &sink, &err), MSB_OK);
	msb_landed_artifact l;
	assert_int_equal(deliver(sink, "a.txt", "c6", "x", 1, &l, &err), MSB_E_LANDING_EXISTS);
	msb_output_sink_free(sink);
	/* a store with no put or exists, or an old struct, is refused at construction */
	msb_file_store bad = MSB_FILE_STORE_INIT;
	assert_int_equal(msb_file_store_sink_new(&bad, NULL, &sink, &err), MSB_E_VALUE);
	racing.struct_size = 8;
	assert_int_equal(msb_file_store_sink_new(&racing, NULL, &sink, &err), MSB_E_VALUE);
	msb_error_clear(&err);
}

/* ---- the read-only tools ---------------------------------------------------------- */

typedef struct reads {
	int n;
	char name[128], thread[32];
	uint64_t bytes;
	bool found, keyed;
} reads;

static int on_read(void *ctx, const msb_store_file_read *e)
{
	reads *r = ctx;
	r->n++;
	snprintf(r->name, sizeof r->name, "%s", e->name);
	r->bytes = e->bytes;
	r->found = e->found;
	r->keyed = e->key != NULL;
	snprintf(r->thread, sizeof r->thread, "%s", e->key ? e->key->thread_id : "");
	return 0;
}

static const char *scope_cb(void *ctx)
{
	(void)ctx;
	return "tenant";
}

static const char *thread_cb(void *ctx)
{
	return ctx;
}

static void store_tools_are_named_by_the_hosts_prefix(void **state)
{
	world *w = *state;
	msb_store_tools *t = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_store_tools_new(w->store, "outputs", NULL, &t, &err), MSB_OK);
	assert_string_equal(msb_store_tools_ls_name(t), "outputs_ls");
	assert_string_equal(msb_store_tools_read_name(t), "outputs_read");
	msb_store_tools_free(t);
	const char *bad[] = { NULL, "", "Outputs", "1st", "out-puts", "out puts", "out/x", "_x",
			      "a123456789012345678901234567890123456789012345678" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		assert_int_equal(msb_store_tools_new(w->store, bad[i], NULL, &t, &err), MSB_E_VALUE);
		assert_null(t);
		assert_non_null(strstr(msb_error_message(&err), "prefix"));
	}
	/* the schemas are exact: one "path" string, nothing else accepted */
	assert_non_null(strstr(msb_store_tools_read_schema(), "\"additionalProperties\":false"));
	assert_non_null(strstr(msb_store_tools_read_schema(), "\"required\":[\"path\"]"));
	assert_non_null(strstr(msb_store_tools_ls_schema(), "\"additionalProperties\":false"));
	msb_error_clear(&err);
}

static void the_tools_read_and_list_what_landed(void **state)
{
	world *w = *state;
	msb_output_sink *sink = sink_new(w, NULL);
	msb_landed_artifact l;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(deliver(sink, "report.txt", "c7", "the answer\n", 11, &l, &err), MSB_OK);
	msb_landed_artifact_free(&l);
	msb_output_sink_free(sink);
	reads r = { 0 };
	msb_observer o = MSB_OBSERVER_INIT;
	o.ctx = &r;
	o.store_file_read = on_read;
	msb_caller_context caller = { sizeof caller, "t9", scope_cb, thread_cb, NULL };
	msb_store_tools_options opts = MSB_STORE_TOOLS_OPTIONS_INIT;
	opts.observer = &o;
	opts.caller = &caller;
	msb_store_tools *t = NULL;
	assert_int_equal(msb_store_tools_new(w->store, "outputs", &opts, &t, &err), MSB_OK);
	msb_buf a = { 0 };
	assert_int_equal(msb_store_tools_ls(t, "call-1", "", &a, &err), MSB_OK);
	assert_string_equal((char *)a.data, "c7/\n");
	assert_int_equal(msb_store_tools_ls(t, "call-1", "c7", &a, &err), MSB_OK);
	assert_string_equal((char *)a.data, "report.txt (11 bytes)\n");
	assert_int_equal(r.n, 0); /* listing is not a read */
	assert_int_equal(msb_store_tools_read(t, "call-1", "c7/report.txt", &a, &err), MSB_OK);
	assert_string_equal((char *)a.data, "the answer\n");
	assert_int_equal(r.n, 1);
	assert_string_equal(r.name, "c7/report.txt");
	assert_int_equal(r.bytes, 11);
	assert_true(r.found);
	assert_true(r.keyed);
	assert_string_equal(r.thread, "t9");
	/* a miss is an event too, and an answer, never a failure */
	assert_int_equal(msb_store_tools_read(t, "call-1", "c7/none.txt", &a, &err), MSB_OK);
	assert_non_null(strstr((char *)a.data, "no file"));
	assert_int_equal(r.n, 2);
	assert_false(r.found);
	assert_int_equal(msb_store_tools_read(t, NULL, "c7", &a, &err), MSB_OK);
	assert_non_null(strstr((char *)a.data, "directory"));
	assert_int_equal(msb_store_tools_ls(t, NULL, "c7/report.txt", &a, &err), MSB_OK);
	assert_non_null(strstr((char *)a.data, "not a directory"));
	msb_buf_free(&a);
	msb_store_tools_free(t);
	msb_error_clear(&err);
}

static void the_tools_bound_what_they_answer(void **state)
{
	world *w = *state;
	char dir[128];
	snprintf(dir, sizeof dir, "%s/c8", w->root);
	assert_int_equal(mkdir(dir, 0700), 0);
	for (int i = 0; i < 5; i++) {
		char name[16];
		snprintf(name, sizeof name, "c8/f%d", i);
		spit(w->root, name, "0123456789");
	}
	spit(w->root, "c8/bin", "\x80\x81");
	msb_store_tools_options opts = MSB_STORE_TOOLS_OPTIONS_INIT;
	opts.max_read_bytes = 9;
	opts.max_entries = 3;
	msb_store_tools *t = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_store_tools_new(w->store, "s", &opts, &t, &err), MSB_OK);
	msb_buf a = { 0 };
	assert_int_equal(msb_store_tools_read(t, NULL, "c8/f0", &a, &err), MSB_OK);
	assert_non_null(strstr((char *)a.data, "larger than the 9 bytes"));
	assert_null(strstr((char *)a.data, "012345678"));
	assert_int_equal(msb_store_tools_read(t, NULL, "c8/bin", &a, &err), MSB_OK);
	assert_non_null(strstr((char *)a.data, "not text"));
	assert_null(strchr((char *)a.data, '\x80'));
	assert_int_equal(msb_store_tools_ls(t, NULL, "c8", &a, &err), MSB_OK);
	assert_non_null(strstr((char *)a.data, "and 3 more entries not listed"));
	msb_buf_free(&a);
	msb_store_tools_free(t);
	msb_error_clear(&err);
}

/* A store whose put fails the test if anything ever calls it. */
static msb_errc forbidden_put(void *ctx, const char *path, const unsigned char *c, size_t len,
			      msb_error *err)
{
	(void)ctx, (void)c, (void)len, (void)err;
	fail_msg("the read-only tools reached the store's put for '%s'", path);
	return MSB_E_OS;
}

static void no_argument_reaches_a_write_or_leaves_the_store(void **state)
{
	world *w = *state;
	spit(w->outside, "secret", "outside");
	char link[128];
	snprintf(link, sizeof link, "%s/esc", w->root);
	assert_int_equal(symlink(w->outside, link), 0);
	snprintf(link, sizeof link, "%s/passwd", w->root);
	assert_int_equal(symlink("/etc/passwd", link), 0);
	msb_file_store guarded = *w->store;
	guarded.put = forbidden_put;
	guarded.destroy = NULL;
	msb_store_tools *t = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_store_tools_new(&guarded, "outputs", NULL, &t, &err), MSB_OK);
	const char *paths[] = { "../secret", "/etc/passwd", "esc/secret", "passwd", "esc",
				"a/../../secret", "..", ".", "//etc/passwd", "esc/../esc/secret",
				"\x01\x02", "c/\xff" };
	msb_buf a = { 0 };
	for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
		assert_int_equal(msb_store_tools_read(t, NULL, paths[i], &a, &err), MSB_OK);
		assert_true(strncmp((char *)a.data, "Error:", 6) == 0);
		assert_null(strstr((char *)a.data, "outside"));
		assert_null(strstr((char *)a.data, "root:"));
		assert_null(strchr((char *)a.data, '\x01'));
		/* listing through the link would show the outside file and its size */
		assert_int_equal(msb_store_tools_ls(t, NULL, paths[i], &a, &err), MSB_OK);
		assert_null(strstr((char *)a.data, "(7 bytes)"));
	}
	msb_buf_free(&a);
	msb_store_tools_free(t);
	msb_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_directory_store_refuses_a_relative_or_missing_root),
		cmocka_unit_test_setup_teardown(the_directory_store_is_exclusive_and_confined, setup, teardown),
		cmocka_unit_test_setup_teardown(the_sink_lands_under_the_call_id_and_records_first, setup, teardown),
		cmocka_unit_test_setup_teardown(the_sink_refuses_what_is_not_text_and_records_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(the_sink_never_replaces_and_says_so, setup, teardown),
		cmocka_unit_test_setup_teardown(a_failed_record_writes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(the_sink_refuses_names_and_call_ids_that_climb, setup, teardown),
		cmocka_unit_test(a_destination_taken_in_between_is_still_refused),
		cmocka_unit_test_setup_teardown(store_tools_are_named_by_the_hosts_prefix, setup, teardown),
		cmocka_unit_test_setup_teardown(the_tools_read_and_list_what_landed, setup, teardown),
		cmocka_unit_test_setup_teardown(the_tools_bound_what_they_answer, setup, teardown),
		cmocka_unit_test_setup_teardown(no_argument_reaches_a_write_or_leaves_the_store, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
