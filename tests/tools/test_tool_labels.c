/*
 * test_tool_labels.c — an itemised tool answer and its labels, and the effective-state
 * record, against the inprocess fake: a labelled item may not be untrusted; a result whose
 * every item is labelled (or that has none) is refused after the cleanup; an unlabelled item
 * takes the call's label; the combined label is the most restrictive, in the host's own order
 * of its confidentiality words; and each served call records its posture, one entry per
 * tool, while a refused one records nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include <msb/effective_state.h>
#include <msb/tool.h>

#include "router_fixture.h"

typedef struct world {
	fx f;
	msb_backend *b;
	msb_router *router;
	const char *thread;
	msb_caller_context caller;
	msb_spec spec;
	msb_effective_states *record;
	msb_host_tools *registry;
} world;

static const char *cb_scope(void *ctx)
{
	(void)ctx;
	return "tenant-secret-scope";
}

static const char *cb_thread(void *ctx)
{
	return ((world *)ctx)->thread;
}

static void quiet(void *ctx, const char *line)
{
	(void)ctx, (void)line;
}

/* The host's confidentiality vocabulary, in its own order. */
static int rank(void *ctx, const char *word)
{
	(void)ctx;
	static const char *const order[] = { "public", "internal", "secret" };
	for (int i = 0; i < 3; i++)
		if (strcmp(word, order[i]) == 0)
			return i;
	return -1;
}

static void world_start(world *w)
{
	memset(w, 0, sizeof *w);
	fx_init(&w->f, NULL);
	w->b = fx_open(&w->f, "inprocess", "capabilities: [exec, files_in, files_out]\n");
	msb_router_options o = fx_options(&w->f);
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_router_new(&w->b, 1, &o, &w->router, &err), MSB_OK);
	w->thread = "thread-secret-7";
	w->caller = (msb_caller_context){ sizeof(msb_caller_context), w, cb_scope, cb_thread, NULL };
	msb_spec_init(&w->spec, "bicep");
	w->spec.work_dir = "/msb/work";
	w->spec.requires |= MSB_BIT(MSB_CAP_FILES_OUT);
	assert_int_equal(msb_effective_states_new(&w->record, &err), MSB_OK);
}

static void world_stop(world *w)
{
	msb_effective_states_free(w->record);
	msb_host_tools_free(w->registry);
	msb_router_free(w->router);
	fx_free(&w->f);
}

static msb_tool_options options(world *w, const char *name)
{
	msb_tool_options to = MSB_TOOL_OPTIONS_INIT;
	to.name = name;
	to.log = quiet;
	to.on_effective_state = msb_effective_states_record;
	to.on_effective_state_ctx = w->record;
	return to;
}

static msb_tool_session *session(world *w, const msb_tool_options *to)
{
	msb_tool_session *s = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (msb_tool_session_new(w->router, &w->caller, &w->spec, to, &s, &err) != MSB_OK)
		fail_msg("session: %s", msb_error_message(&err));
	return s;
}

/* A body answering with the items it is told to. */
typedef struct item_spec {
	const char *text;
	msb_integrity integrity; /* UNSET: unlabelled */
	const char *confidentiality;
} item_spec;

typedef struct body_ctx {
	const item_spec *items;
	size_t n;
	int runs;
} body_ctx;

static msb_errc items_body(void *ctx, msb_sandbox *sb, const char *call_path, const char *call_id,
			   msb_tool_items *items, msb_error *err)
{
	body_ctx *c = ctx;
	c->runs++;
	msb_errc rc = msb_sandbox_write_file(sb, "main.bicep", "x", 1, call_path, err);
	for (size_t i = 0; !rc && i < c->n; i++) {
		const item_spec *it = &c->items[i];
		if (it->integrity == MSB_INTEGRITY_UNSET) {
			rc = msb_tool_items_add(items, it->text, strlen(it->text), err);
		} else {
			const msb_label l = { it->integrity, it->confidentiality };
			rc = msb_tool_items_add_labelled(items, it->text, strlen(it->text), &l, err);
		}
	}
	(void)call_id;
	return rc;
}

static msb_errc run(msb_tool_session *s, const item_spec *items, size_t n, msb_tool_result *r,
		    msb_error *err, body_ctx *c)
{
	*c = (body_ctx){ items, n, 0 };
	return msb_tool_session_call_items(s, items_body, c, r, err);
}

/* ---- labelled items ----------------------------------------------------------------- */

static void a_labelled_item_may_not_be_untrusted_or_unlabelled(void **state)
{
	(void)state;
	world w;
	world_start(&w);
	msb_tool_options to = options(&w, "build");
	msb_tool_session *s = session(&w, &to);
	const item_spec untrusted[] = { { "guidance", MSB_INTEGRITY_UNTRUSTED, NULL },
					{ "diagnostics", MSB_INTEGRITY_UNSET, NULL } };
	msb_tool_result r;
	msb_error err = MSB_ERROR_INIT;
	body_ctx c;
	fx_assert_refused(&err, run(s, untrusted, 2, &r, &err, &c), MSB_E_VALUE, "untrusted",
			  "left unlabelled");
	assert_int_equal(r.n_items, 0);
	/* a stated label with no integrity is no label */
	const msb_label none = { MSB_INTEGRITY_UNSET, "secret" };
	msb_tool_items *items = NULL; /* the adders refuse a missing list too */
	fx_assert_refused(&err, msb_tool_items_add_labelled(items, "x", 1, &none, &err), MSB_E_VALUE,
			  "integrity");
	fx_assert_refused(&err, msb_tool_items_add(NULL, "x", 1, &err), MSB_E_VALUE, "no item list");
	msb_tool_session_free(s);
	world_stop(&w);
}

static void a_result_labelled_throughout_is_refused_after_the_cleanup(void **state)
{
	(void)state;
	world w;
	world_start(&w);
	msb_tool_options to = options(&w, "build");
	msb_tool_session *s = session(&w, &to);
	const item_spec all[] = { { "guidance", MSB_INTEGRITY_TRUSTED, NULL },
				  { "more guidance", MSB_INTEGRITY_TRUSTED, NULL } };
	msb_tool_result r;
	msb_error err = MSB_ERROR_INIT;
	body_ctx c;
	size_t reclaims = fx_count(w.b, "reclaim");
	fx_assert_refused(&err, run(s, all, 2, &r, &err, &c), MSB_E_VALUE, "'build'",
			  "every item", "carries its own label");
	assert_int_equal(c.runs, 1);
	assert_int_equal(r.n_items, 0);
	assert_int_equal(strlen(r.call), MSB_TOOL_CALL_ID_LEN);
	assert_int_equal(fx_count(w.b, "reclaim"), reclaims + 1); /* the cleanup still ran */
	fx_assert_refused(&err, run(s, NULL, 0, &r, &err, &c), MSB_E_VALUE, "no item");
	assert_int_equal(fx_count(w.b, "reclaim"), reclaims + 2);
	msb_tool_session_free(s);
	world_stop(&w);
}

static void unlabelled_items_take_the_calls_label_and_the_result_its_strictest(void **state)
{
	(void)state;
	world w;
	world_start(&w);
	msb_tool_options to = options(&w, "build");
	to.call_label = (msb_label){ MSB_INTEGRITY_UNSET, "internal" }; /* unset reads untrusted */
	to.confidentiality_rank = rank;
	msb_tool_session *s = session(&w, &to);
	const item_spec items[] = { { "Fix the template, then call build again.", MSB_INTEGRITY_TRUSTED, "public" },
				    { "error BCP033 at main.bicep:3", MSB_INTEGRITY_UNSET, NULL } };
	msb_tool_result r;
	msb_error err = MSB_ERROR_INIT;
	body_ctx c;
	assert_int_equal(run(s, items, 2, &r, &err, &c), MSB_OK);
	assert_int_equal(r.refusal, MSB_OK);
	assert_int_equal(r.n_items, 2);
	assert_true(r.items[0].labelled);
	assert_int_equal(r.items[0].label.integrity, MSB_INTEGRITY_TRUSTED);
	assert_string_equal(r.items[0].label.confidentiality, "public");
	assert_string_equal((char *)r.items[0].text.data, "Fix the template, then call build again.");
	assert_false(r.items[1].labelled);
	assert_int_equal(r.items[1].label.integrity, MSB_INTEGRITY_UNTRUSTED);
	assert_string_equal(r.items[1].label.confidentiality, "internal");
	/* the most restrictive across items: untrusted, and the higher-ranked word */
	assert_int_equal(r.label.integrity, MSB_INTEGRITY_UNTRUSTED);
	assert_string_equal(r.label.confidentiality, "internal");
	msb_tool_result_free(&r);

	/* a trusted item labelled stricter than the call raises the whole result */
	const item_spec stricter[] = { { "standing note", MSB_INTEGRITY_TRUSTED, "secret" },
				       { "output", MSB_INTEGRITY_UNSET, NULL } };
	assert_int_equal(run(s, stricter, 2, &r, &err, &c), MSB_OK);
	assert_string_equal(r.label.confidentiality, "secret");
	assert_int_equal(r.label.integrity, MSB_INTEGRITY_UNTRUSTED);
	msb_tool_result_free(&r);

	/* a word the host does not rank refuses the result, naming it */
	const item_spec unknown[] = { { "note", MSB_INTEGRITY_TRUSTED, "top-secret" },
				      { "output", MSB_INTEGRITY_UNSET, NULL } };
	fx_assert_refused(&err, run(s, unknown, 2, &r, &err, &c), MSB_E_VALUE, "'top-secret'",
			  "confidentiality_rank does not know");
	msb_tool_session_free(s);

	/* a trusted call label with only trusted parts stays trusted */
	to.call_label = (msb_label){ MSB_INTEGRITY_TRUSTED, "public" };
	s = session(&w, &to);
	const item_spec fine[] = { { "a", MSB_INTEGRITY_UNSET, NULL }, { "b", MSB_INTEGRITY_TRUSTED, "public" } };
	assert_int_equal(run(s, fine, 2, &r, &err, &c), MSB_OK);
	assert_int_equal(r.label.integrity, MSB_INTEGRITY_TRUSTED);
	msb_tool_result_free(&r);
	msb_tool_session_free(s);

	/* the call's own word must be one the host ranks */
	to.call_label = (msb_label){ MSB_INTEGRITY_UNSET, "classified" };
	msb_tool_session *bad = NULL;
	fx_assert_refused(&err, msb_tool_session_new(w.router, &w.caller, &w.spec, &to, &bad, &err),
			  MSB_E_VALUE, "'classified'");
	assert_null(bad);
	world_stop(&w);
}

static void without_the_hosts_order_only_the_calls_own_word_combines(void **state)
{
	(void)state;
	world w;
	world_start(&w);
	msb_tool_options to = options(&w, "build");
	to.call_label = (msb_label){ MSB_INTEGRITY_UNSET, "internal" };
	msb_tool_session *s = session(&w, &to);
	msb_tool_result r;
	msb_error err = MSB_ERROR_INIT;
	body_ctx c;
	const item_spec same[] = { { "note", MSB_INTEGRITY_TRUSTED, "internal" }, { "out", MSB_INTEGRITY_UNSET, NULL } };
	assert_int_equal(run(s, same, 2, &r, &err, &c), MSB_OK);
	assert_string_equal(r.label.confidentiality, "internal");
	msb_tool_result_free(&r);
	const item_spec other[] = { { "note", MSB_INTEGRITY_TRUSTED, "public" }, { "out", MSB_INTEGRITY_UNSET, NULL } };
	fx_assert_refused(&err, run(s, other, 2, &r, &err, &c), MSB_E_VALUE, "'public'",
			  "no confidentiality_rank", "never guesses");
	msb_tool_session_free(s);
	world_stop(&w);
}

static void a_refused_call_answers_one_item_with_the_calls_label(void **state)
{
	(void)state;
	world w;
	world_start(&w);
	msb_tool_options to = options(&w, "build");
	to.call_label = (msb_label){ MSB_INTEGRITY_UNTRUSTED, "internal" };
	msb_tool_session *s = session(&w, &to);
	w.thread = NULL; /* no thread bound: the key cannot be read */
	msb_tool_result r;
	msb_error err = MSB_ERROR_INIT;
	body_ctx c;
	const item_spec one[] = { { "out", MSB_INTEGRITY_UNSET, NULL } };
	assert_int_equal(run(s, one, 1, &r, &err, &c), MSB_OK);
	assert_int_equal(c.runs, 0);
	assert_int_not_equal(r.refusal, MSB_OK);
	assert_int_equal(r.n_items, 1);
	assert_false(r.items[0].labelled);
	assert_non_null(strstr((char *)r.items[0].text.data, "no active thread context"));
	assert_int_equal(r.label.integrity, MSB_INTEGRITY_UNTRUSTED);
	assert_string_equal(r.label.confidentiality, "internal");
	msb_tool_result_free(&r);
	assert_int_equal(msb_effective_states_count(w.record), 0); /* a refusal records nothing */
	msb_tool_session_free(s);
	world_stop(&w);
}

/* ---- the effective-state record ------------------------------------------------------ */

static msb_errc plain_body(void *ctx, msb_sandbox *sb, const char *call_path, const char *call_id,
			   msb_buf *answer, msb_error *err)
{
	(void)ctx, (void)sb, (void)call_path, (void)call_id;
	return msb_buf_append(answer, "built", 5, err);
}

static json_t *record_json(world *w)
{
	msb_buf text = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_effective_states_json(w->record, &text, &err), MSB_OK);
	json_t *v = json_loads((char *)text.data, 0, NULL);
	assert_non_null(v);
	/* posture, never payload: neither the key's parts nor any label text */
	assert_null(strstr((char *)text.data, "tenant-secret-scope"));
	assert_null(strstr((char *)text.data, "thread-secret-7"));
	msb_buf_free(&text);
	return v;
}

static bool has_word(json_t *array, const char *word)
{
	size_t i;
	json_t *v;
	json_array_foreach(array, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), word) == 0)
			return true;
	return false;
}

static void each_served_call_records_its_posture_one_entry_per_tool(void **state)
{
	(void)state;
	world w;
	world_start(&w);
	msb_host_tools_options ho = MSB_HOST_TOOLS_OPTIONS_INIT;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_host_tools_new(&ho, &w.registry, &err), MSB_OK);
	static const msb_host_tool_declaration decl = { MSB_FLOW_SOURCE_TRUSTED, MSB_FLOW_SINK_NONE,
							NULL, MSB_FLOW_IDENTITY_APP };
	msb_host_tool t = MSB_HOST_TOOL_INIT;
	t.name = "lookup_sku";
	t.fn = MSB_HOST_TOOL_FN(plain_body);
	t.declaration = &decl;
	assert_int_equal(msb_host_tools_register(w.registry, &t, &err), MSB_OK);

	msb_tool_options to = options(&w, "build");
	to.host_tools = w.registry;
	msb_tool_session *refused = NULL;
	fx_assert_refused(&err, msb_tool_session_new(w.router, &w.caller, &w.spec, &to, &refused, &err),
			  MSB_E_VALUE, "'build'", "not sealed");
	msb_host_tools_aggregate agg;
	assert_int_equal(msb_host_tools_aggregate_seal(w.registry, &agg, &err), MSB_OK);
	msb_tool_session *s = session(&w, &to);
	msb_tool_options lo = options(&w, "lint");
	msb_tool_session *lint = session(&w, &lo);

	msb_tool_answer a = { 0 };
	assert_int_equal(msb_tool_session_call(s, plain_body, NULL, &a, &err), MSB_OK);
	char first[MSB_TOOL_CALL_ID_LEN + 1];
	memcpy(first, a.call, sizeof first);
	msb_tool_answer_free(&a);
	assert_int_equal(msb_effective_states_count(w.record), 1);
	json_t *v = record_json(&w);
	json_t *e = json_object_get(v, "build");
	assert_non_null(e);
	assert_string_equal(json_string_value(json_object_get(e, "backend")), "inprocess");
	assert_string_equal(json_string_value(json_object_get(e, "isolation")), "none");
	assert_string_equal(json_string_value(json_object_get(e, "scope")), "conversation");
	assert_string_equal(json_string_value(json_object_get(e, "egress")), "closed");
	assert_int_equal(json_array_size(json_object_get(e, "egress_allow")), 0);
	assert_true(has_word(json_object_get(e, "capabilities_asked"), "files_out"));
	assert_true(has_word(json_object_get(e, "capabilities_declared"), "exec"));
	assert_true(has_word(json_object_get(e, "host_tools"), "lookup_sku"));
	assert_string_equal(json_string_value(json_object_get(e, "call")), first);
	json_decref(v);

	/* overwritten by the next call of the same tool; another tool has its own entry */
	memset(&a, 0, sizeof a);
	assert_int_equal(msb_tool_session_call(s, plain_body, NULL, &a, &err), MSB_OK);
	assert_string_not_equal(a.call, first);
	char second[MSB_TOOL_CALL_ID_LEN + 1];
	memcpy(second, a.call, sizeof second);
	msb_tool_answer_free(&a);
	memset(&a, 0, sizeof a);
	assert_int_equal(msb_tool_session_call(lint, plain_body, NULL, &a, &err), MSB_OK);
	msb_tool_answer_free(&a);
	assert_int_equal(msb_effective_states_count(w.record), 2);
	v = record_json(&w);
	assert_string_equal(json_string_value(json_object_get(json_object_get(v, "build"), "call")),
			    second);
	assert_int_equal(json_array_size(json_object_get(json_object_get(v, "lint"), "host_tools")), 0);
	json_decref(v);

	/* a refused call writes nothing: the last served call's entry stands */
	w.thread = NULL;
	memset(&a, 0, sizeof a);
	assert_int_equal(msb_tool_session_call(s, plain_body, NULL, &a, &err), MSB_OK);
	assert_int_not_equal(a.refusal, MSB_OK);
	msb_tool_answer_free(&a);
	v = record_json(&w);
	assert_string_equal(json_string_value(json_object_get(json_object_get(v, "build"), "call")),
			    second);
	json_decref(v);
	msb_tool_session_free(lint);
	msb_tool_session_free(s);
	world_stop(&w);
}

static void an_older_hosts_options_keep_their_behaviour(void **state)
{
	(void)state;
	world w;
	world_start(&w);
	/* a host built before call_label existed: its struct ends at output_sink */
	msb_tool_options to = options(&w, "build");
	to.struct_size = (uint32_t)(offsetof(msb_tool_options, output_sink) + sizeof to.output_sink);
	to.call_label = (msb_label){ 99, "garbage past the host's struct" };
	msb_tool_session *s = session(&w, &to);
	msb_tool_answer a = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_tool_session_call(s, plain_body, NULL, &a, &err), MSB_OK);
	msb_tool_answer_free(&a);
	assert_int_equal(msb_effective_states_count(w.record), 0); /* on_effective_state unread */
	msb_tool_result r;
	body_ctx c;
	const item_spec one[] = { { "out", MSB_INTEGRITY_UNSET, NULL } };
	assert_int_equal(run(s, one, 1, &r, &err, &c), MSB_OK);
	assert_int_equal(r.label.integrity, MSB_INTEGRITY_UNTRUSTED);
	assert_null(r.label.confidentiality);
	msb_tool_result_free(&r);
	msb_tool_session_free(s);
	world_stop(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_labelled_item_may_not_be_untrusted_or_unlabelled),
		cmocka_unit_test(a_result_labelled_throughout_is_refused_after_the_cleanup),
		cmocka_unit_test(unlabelled_items_take_the_calls_label_and_the_result_its_strictest),
		cmocka_unit_test(without_the_hosts_order_only_the_calls_own_word_combines),
		cmocka_unit_test(a_refused_call_answers_one_item_with_the_calls_label),
		cmocka_unit_test(each_served_call_records_its_posture_one_entry_per_tool),
		cmocka_unit_test(an_older_hosts_options_keep_their_behaviour),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
