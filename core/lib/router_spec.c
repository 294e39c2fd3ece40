/*
 * router_spec.c — a deep copy of a spec, so that an acquired sandbox can answer
 * msb_sandbox_spec() after the caller's own spec (borrowed strings and all) is gone.
 * Everything the copy points at lives in one allocation, freed with one free().
 */
#include <stdlib.h>
#include <string.h>

#include "router_internal.h"

/* Two passes over one walker: the first measures, the second copies. */
typedef struct arena {
	char *base;
	size_t used;
} arena;

static void *arena_take(arena *a, size_t n, size_t align)
{
	a->used = (a->used + align - 1) & ~(align - 1);
	void *p = a->base ? a->base + a->used : NULL;
	a->used += n;
	return p;
}

static const char *arena_str(arena *a, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *p = arena_take(a, n, 1);
	if (p)
		memcpy(p, s, n);
	return p;
}

static const char *const *arena_strv(arena *a, const char *const *v)
{
	if (!v)
		return NULL;
	size_t n = 0;
	while (v[n])
		n++;
	const char **out = arena_take(a, (n + 1) * sizeof *out, _Alignof(const char *));
	for (size_t i = 0; i < n; i++) {
		const char *s = arena_str(a, v[i]);
		if (out)
			out[i] = s;
	}
	if (out)
		out[n] = NULL;
	return out;
}

static void copy_into(arena *a, const msb_spec *src, msb_spec *dst)
{
	*dst = *src;
	dst->kind = arena_str(a, src->kind);
	dst->image = arena_str(a, src->image);
	dst->from_snapshot = src->from_snapshot ? arena_str(a, src->from_snapshot) : NULL;
	dst->work_dir = arena_str(a, src->work_dir);
	dst->egress_allow = arena_strv(a, src->egress_allow);
	dst->labels = arena_strv(a, src->labels);
	msb_declared_output *outs = NULL;
	if (src->n_declared_outputs)
		outs = arena_take(a, src->n_declared_outputs * sizeof *outs, _Alignof(msb_declared_output));
	for (size_t i = 0; i < src->n_declared_outputs; i++) {
		msb_declared_output o = src->declared_outputs[i];
		o.path = arena_str(a, o.path);
		o.media_type = arena_str(a, o.media_type);
		o.name = arena_str(a, o.name);
		if (outs)
			outs[i] = o;
	}
	dst->declared_outputs = outs;
}

msb_errc router_spec_copy(const msb_spec *src, msb_spec *dst, void **storage, msb_error *err)
{
	arena measure = { NULL, 0 };
	msb_spec scratch;
	copy_into(&measure, src, &scratch);
	arena real = { malloc(measure.used ? measure.used : 1), 0 };
	if (!real.base)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory copying the '%s' spec", src->kind);
	copy_into(&real, src, dst);
	*storage = real.base;
	return MSB_OK;
}
