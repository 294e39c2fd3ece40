/*
 * effective_states.c — one entry per tool, overwritten each call, as JSON text.
 *
 * Each entry is serialised when it is recorded: the state handed to the callback is borrowed
 * (its strings belong to the sandbox handle, which the call releases), and a serialised copy
 * is both the deep copy and the form a host persists. Jansson builds the text, so a backend
 * name or a host tool's name can never break out of its string.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <msb/effective_state.h>
#include <msb/vocab.h>

typedef struct entry {
	char *tool;
	char *json;
} entry;

struct msb_effective_states {
	pthread_mutex_t lock;
	entry *items; /* sorted by tool */
	size_t len, cap;
};

msb_errc msb_effective_states_new(msb_effective_states **out, msb_error *err)
{
	msb_effective_states *r = calloc(1, sizeof *r);
	if (!r)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory for an effective-state record");
	pthread_mutex_init(&r->lock, NULL);
	*out = r;
	return MSB_OK;
}

void msb_effective_states_free(msb_effective_states *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->len; i++) {
		free(r->items[i].tool);
		free(r->items[i].json);
	}
	free(r->items);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static json_t *word_array(msb_axis axis, msb_set set)
{
	json_t *a = json_array();
	for (int v = 0; a && v < 32; v++) {
		const char *w = (set >> v) & 1 ? msb_word_name(axis, v) : NULL;
		if (w && json_array_append_new(a, json_string(w)) != 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *string_array(const char *const *list)
{
	json_t *a = json_array();
	for (size_t i = 0; a && list && list[i]; i++)
		if (json_array_append_new(a, json_string(list[i])) != 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *state_object(const msb_effective_state *st)
{
	const char *iso = msb_word_name(MSB_AXIS_ISOLATION, st->isolation);
	const char *scope = msb_word_name(MSB_AXIS_SCOPE, st->scope);
	const char *egress = msb_word_name(MSB_AXIS_EGRESS, st->egress);
	return json_pack("{s:s?, s:s?, s:s?, s:s?, s:o?, s:o?, s:o?, s:o?, s:s?, s:s?}",
			 "backend", st->backend, "isolation", iso, "scope", scope, "egress", egress,
			 "egress_allow", string_array(st->egress_allow),
			 "capabilities_asked", word_array(MSB_AXIS_CAPABILITY, st->capabilities_asked),
			 "capabilities_declared",
			 word_array(MSB_AXIS_CAPABILITY, st->capabilities_declared),
			 "host_tools", string_array(st->host_tools), "call", st->call,
			 "image_digest", st->image_digest);
}

static msb_errc append_json(json_t *v, msb_buf *out, msb_error *err)
{
	char *text = v ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(v);
	if (!text)
		return msb_error_set(err, MSB_E_NOMEM, "effective state: could not serialise");
	msb_errc rc = msb_buf_append(out, text, strlen(text), err);
	free(text);
	return rc;
}

msb_errc msb_effective_state_json(const msb_effective_state *st, msb_buf *out, msb_error *err)
{
	return append_json(state_object(st), out, err);
}

/* Where `tool` is, or would go, in the sorted list. */
static size_t find(const msb_effective_states *r, const char *tool, bool *found)
{
	size_t lo = 0, hi = r->len;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(r->items[mid].tool, tool);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

void msb_effective_states_record(void *record, const char *tool, const msb_effective_state *st)
{
	msb_effective_states *r = record;
	if (!r || !tool || !st)
		return;
	msb_buf text = { 0 };
	bool ok = msb_effective_state_json(st, &text, NULL) == MSB_OK;
	pthread_mutex_lock(&r->lock);
	bool found;
	size_t i = find(r, tool, &found);
	if (found && ok) {
		free(r->items[i].json);
		r->items[i].json = (char *)text.data; /* the buffer's bytes become the entry */
		text.data = NULL;
	} else if (found) {
		/* never leave the previous call's posture standing for this one */
		free(r->items[i].tool);
		free(r->items[i].json);
		memmove(r->items + i, r->items + i + 1, (r->len - i - 1) * sizeof *r->items);
		r->len--;
	} else if (ok) {
		char *name = strdup(tool);
		if (name && r->len == r->cap) {
			size_t cap = r->cap ? 2 * r->cap : 8;
			entry *grown = realloc(r->items, cap * sizeof *grown);
			if (grown) {
				r->items = grown;
				r->cap = cap;
			}
		}
		if (name && r->len < r->cap) {
			memmove(r->items + i + 1, r->items + i, (r->len - i) * sizeof *r->items);
			r->items[i] = (entry){ name, (char *)text.data };
			text.data = NULL;
			r->len++;
		} else {
			free(name);
		}
	}
	pthread_mutex_unlock(&r->lock);
	msb_buf_free(&text);
}

size_t msb_effective_states_count(const msb_effective_states *r)
{
	pthread_mutex_lock((pthread_mutex_t *)&r->lock);
	size_t n = r->len;
	pthread_mutex_unlock((pthread_mutex_t *)&r->lock);
	return n;
}

msb_errc msb_effective_states_json(const msb_effective_states *r, msb_buf *out, msb_error *err)
{
	json_t *all = json_object();
	pthread_mutex_lock((pthread_mutex_t *)&r->lock);
	for (size_t i = 0; all && i < r->len; i++) {
		json_t *v = json_loads(r->items[i].json, 0, NULL);
		if (!v || json_object_set_new(all, r->items[i].tool, v) != 0) {
			json_decref(all);
			all = NULL;
		}
	}
	pthread_mutex_unlock((pthread_mutex_t *)&r->lock);
	return append_json(all, out, err);
}
