/*
 * tool_items.c — an answer of several items, each labelled or carrying the call's label, and
 * the label of the whole: the C form of the seed's labelled_result_item and the list result
 * sandboxed_tool accepts.
 *
 * Two refusals keep the call's own label in every result. An item may not be labelled
 * untrusted: the untrusted item is the one holding what the call produced, and it gets the
 * call's label by being left unlabelled. And a result whose every item is labelled is
 * refused: nothing in it would carry the call's label, so the host's classification of the
 * call — confidentiality included, which msb does not own — would be replaced wholesale.
 * The combined label is the most restrictive across items, because a host that hides or
 * shows the result as a whole must treat it as its most sensitive part.
 */
#include <stdlib.h>
#include <string.h>

#include "tool_internal.h"

struct msb_tool_items {
	msb_tool_item *items;
	size_t len, cap;
};

const char *msb_integrity_name(msb_integrity integrity)
{
	switch (integrity) {
	case MSB_INTEGRITY_TRUSTED:
		return "trusted";
	case MSB_INTEGRITY_UNTRUSTED:
		return "untrusted";
	default:
		return NULL;
	}
}

msb_tool_items *tool_items_new(void)
{
	return calloc(1, sizeof(msb_tool_items));
}

static void item_free(msb_tool_item *item)
{
	msb_buf_free(&item->text);
	free((char *)item->label.confidentiality); /* every label string here is our own copy */
}

void tool_items_free(msb_tool_items *items)
{
	if (!items)
		return;
	for (size_t i = 0; i < items->len; i++)
		item_free(&items->items[i]);
	free(items->items);
	free(items);
}

static msb_errc items_push(msb_tool_items *items, const void *text, size_t len, bool labelled,
			   const msb_label *label, msb_error *err)
{
	if (!items)
		return msb_error_set(err, MSB_E_VALUE, "tool result: no item list to add to");
	if (!text && len)
		return msb_error_set(err, MSB_E_VALUE, "tool result: an item with %zu bytes and no text",
				     len);
	if (items->len == items->cap) {
		size_t cap = items->cap ? 2 * items->cap : 4;
		msb_tool_item *grown = realloc(items->items, cap * sizeof *grown);
		if (!grown)
			return msb_error_set(err, MSB_E_NOMEM, "out of memory for a result item");
		items->items = grown;
		items->cap = cap;
	}
	msb_tool_item item = { .labelled = labelled };
	if (labelled) {
		item.label.integrity = label->integrity;
		if (label->confidentiality && !(item.label.confidentiality = strdup(label->confidentiality)))
			return msb_error_set(err, MSB_E_NOMEM, "out of memory for a result item");
	}
	/* an empty item still gets its terminating NUL, so text.data is never NULL */
	msb_errc rc = msb_buf_append(&item.text, text ? text : "", len, err);
	if (rc != MSB_OK) {
		item_free(&item);
		return rc;
	}
	items->items[items->len++] = item;
	return MSB_OK;
}

msb_errc msb_tool_items_add(msb_tool_items *items, const void *text, size_t len, msb_error *err)
{
	return items_push(items, text, len, false, NULL, err);
}

msb_errc msb_tool_items_add_labelled(msb_tool_items *items, const void *text, size_t len,
				     const msb_label *label, msb_error *err)
{
	if (!label || !msb_integrity_name(label->integrity))
		return msb_error_set(err, MSB_E_VALUE,
				     "tool result: a labelled item needs an integrity (trusted); "
				     "an item meant to carry the call's label is added unlabelled");
	if (label->integrity == MSB_INTEGRITY_UNTRUSTED)
		return msb_error_set(err, MSB_E_VALUE,
				     "tool result: an item may not be labelled untrusted — the "
				     "untrusted item is the one holding what the call produced, and it "
				     "carries the call's own label by being left unlabelled");
	return items_push(items, text, len, true, label, err);
}

/* Rank of one item's confidentiality, or a refusal naming the word. NULL ranks lowest. */
static msb_errc rank_of(const msb_tool_session *s, const char *word, int *rank, msb_error *err)
{
	if (!word) {
		*rank = -1;
		return MSB_OK;
	}
	if (s->confidentiality_rank) {
		*rank = s->confidentiality_rank(s->confidentiality_ctx, word);
		if (*rank >= 0)
			return MSB_OK;
		return msb_error_set(err, MSB_E_VALUE,
				     "tool '%s': a result item is labelled with confidentiality "
				     "'%.64s', which the host's confidentiality_rank does not know, so "
				     "the result's label could not be combined",
				     s->name, word);
	}
	/* msb owns no confidentiality vocabulary: without the host's order, only the call's own
	 * word can be combined with itself. */
	if (s->call_confidentiality && strcmp(word, s->call_confidentiality) == 0) {
		*rank = 0;
		return MSB_OK;
	}
	return msb_error_set(err, MSB_E_VALUE,
			     "tool '%s': a result item is labelled with confidentiality '%.64s', "
			     "and the session was given no confidentiality_rank to order it against "
			     "the call's '%s'; msb never guesses which of two host words is stricter",
			     s->name, word, s->call_confidentiality ? s->call_confidentiality : "(none)");
}

msb_errc tool_items_finish(const msb_tool_session *s, msb_tool_items *items,
			   msb_tool_result *result, msb_error *err)
{
	size_t labelled = 0;
	for (size_t i = 0; i < items->len; i++)
		labelled += items->items[i].labelled;
	if (items->len == 0)
		return msb_error_set(err, MSB_E_VALUE,
				     "tool '%s': the body answered with no item; an itemised answer "
				     "needs at least one unlabelled item to carry the call's label",
				     s->name);
	if (labelled == items->len)
		return msb_error_set(err, MSB_E_VALUE,
				     "tool '%s': every item of the result carries its own label, so "
				     "nothing in it carries the call's; leave what the call produced "
				     "unlabelled",
				     s->name);
	msb_label combined = { MSB_INTEGRITY_TRUSTED, NULL };
	int best = -2;
	for (size_t i = 0; i < items->len; i++) {
		msb_tool_item *it = &items->items[i];
		if (!it->labelled) {
			it->label.integrity = s->call_label.integrity;
			if (s->call_confidentiality &&
			    !(it->label.confidentiality = strdup(s->call_confidentiality)))
				return msb_error_set(err, MSB_E_NOMEM, "out of memory for a result label");
		}
		if (it->label.integrity == MSB_INTEGRITY_UNTRUSTED)
			combined.integrity = MSB_INTEGRITY_UNTRUSTED;
		int rank = -1;
		msb_errc rc = rank_of(s, it->label.confidentiality, &rank, err);
		if (rc != MSB_OK)
			return rc;
		if (rank > best) {
			best = rank;
			combined.confidentiality = it->label.confidentiality;
		}
	}
	char *conf = combined.confidentiality ? strdup(combined.confidentiality) : NULL;
	if (combined.confidentiality && !conf)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory for a result label");
	combined.confidentiality = conf;
	result->items = items->items;
	result->n_items = items->len;
	result->label = combined;
	result->storage_ = conf;
	items->items = NULL;
	items->len = items->cap = 0;
	return MSB_OK;
}

void msb_tool_result_free(msb_tool_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_items; i++)
		item_free(&r->items[i]);
	free(r->items);
	free(r->storage_);
	r->items = NULL;
	r->n_items = 0;
	r->storage_ = NULL;
	r->label = (msb_label){ 0 };
}

/* ---- the call ------------------------------------------------------------------------ */

typedef struct items_call {
	const msb_tool_session *s;
	msb_tool_items_body body;
	void *ctx;
	msb_tool_items *items;
	msb_tool_result *result;
} items_call;

static msb_errc items_run(void *ctx, msb_sandbox *sandbox, const char *call_path,
			  const char *call_id, msb_error *err)
{
	items_call *c = ctx;
	msb_errc rc = c->body(c->ctx, sandbox, call_path, call_id, c->items, err);
	/* checked before the cleanup runs, so a refused result is a failure like the body's own */
	return rc ? rc : tool_items_finish(c->s, c->items, c->result, err);
}

msb_errc msb_tool_session_call_items(msb_tool_session *s, msb_tool_items_body body, void *ctx,
				     msb_tool_result *result, msb_error *err)
{
	*result = (msb_tool_result){ 0 };
	if (!body)
		return msb_error_set(err, MSB_E_VALUE, "tool '%s': no body to run", s->name);
	msb_tool_items *items = tool_items_new();
	if (!items)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	msb_buf refusal = { 0 };
	items_call c = { s, body, ctx, items, result };
	const tool_invoke inv = { items_run, &c, &refusal };
	msb_errc rc = tool_run(s, &inv, result->call, &result->refusal, err);
	if (rc == MSB_OK && result->refusal != MSB_OK) {
		/* no body ran: the refusal sentence is the answer, carrying the call's label */
		msb_tool_items *one = tool_items_new();
		if (!one)
			rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
		else if ((rc = msb_tool_items_add(one, refusal.data, refusal.len, err)) == MSB_OK)
			rc = tool_items_finish(s, one, result, err);
		tool_items_free(one);
	}
	if (rc != MSB_OK) {
		char call[sizeof result->call];
		memcpy(call, result->call, sizeof call);
		msb_errc refused = result->refusal;
		msb_tool_result_free(result);
		memcpy(result->call, call, sizeof call);
		result->refusal = refused;
	}
	msb_buf_free(&refusal);
	tool_items_free(items);
	return rc;
}
