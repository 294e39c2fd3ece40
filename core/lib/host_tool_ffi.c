/*
 * host_tool_ffi.c — calling a host tool as the ordinary C function it is, by the signature
 * it declared, through libffi.
 *
 * The alternative — every tool written against one (argc, argv) shape — would put argument
 * unpacking in every host's every tool, which is where a type confusion is easiest to write.
 * Here the door has already matched each argument to its declared type, and libffi lays them
 * out as the platform's calling convention wants them, so a tool reads `int64_t qty` and
 * nothing else.
 */
#include <stdint.h>

#include "host_tool_internal.h"

static ffi_type *ffi_type_of(msb_arg_type type)
{
	switch (type) {
	case MSB_ARG_STRING:
		return &ffi_type_pointer;
	case MSB_ARG_INT64:
		return &ffi_type_sint64;
	case MSB_ARG_DOUBLE:
		return &ffi_type_double;
	case MSB_ARG_BOOL:
		return &ffi_type_uint8; /* _Bool: one byte, zero-extended by the caller */
	}
	return NULL;
}

msb_errc host_tool_ffi_prepare(host_tool *t, msb_error *err)
{
	unsigned n = 0;
	for (size_t i = 0; i < t->n_params; i++)
		t->atypes[n++] = ffi_type_of(t->params[i].type);
	if (host_tool_identity(t) == MSB_IDENTITY_USER)
		t->atypes[n++] = &ffi_type_pointer; /* const char *user_identity */
	t->atypes[n++] = &ffi_type_pointer;         /* msb_buf *out */
	t->atypes[n++] = &ffi_type_pointer;         /* msb_error *err */
	ffi_status st = ffi_prep_cif(&t->cif, FFI_DEFAULT_ABI, n, &ffi_type_sint, t->atypes);
	if (st != FFI_OK)
		return msb_error_set(err, MSB_E_VALUE,
				     "host tool '%s': libffi could not prepare a call of its declared "
				     "signature (status %d)",
				     t->name, (int)st);
	return MSB_OK;
}

/* One argument's storage, in the width its declared type is passed at. */
typedef union slot {
	const char *s;
	int64_t i;
	double d;
	uint8_t b;
	void *p;
} slot;

int host_tool_ffi_call(const host_tool *t, const msb_host_tool_arg *const *ordered,
		       const char *user_identity, msb_buf *out, msb_error *err)
{
	slot slots[MSB_HOST_TOOL_MAX_PARAMS + 3];
	void *values[MSB_HOST_TOOL_MAX_PARAMS + 3];
	unsigned n = 0;
	for (size_t i = 0; i < t->n_params; i++, n++) {
		const msb_host_tool_arg *a = ordered[i];
		switch (t->params[i].type) {
		case MSB_ARG_STRING:
			slots[n].s = a->v.s;
			break;
		case MSB_ARG_INT64:
			slots[n].i = a->v.i;
			break;
		case MSB_ARG_DOUBLE:
			/* The door accepts an integer for a double, as JSON does not tell 1 from 1.0. */
			slots[n].d = a->type == MSB_ARG_INT64 ? (double)a->v.i : a->v.d;
			break;
		case MSB_ARG_BOOL:
			slots[n].b = a->v.b ? 1 : 0;
			break;
		}
		values[n] = &slots[n];
	}
	if (host_tool_identity(t) == MSB_IDENTITY_USER) {
		slots[n].s = user_identity;
		values[n] = &slots[n];
		n++;
	}
	slots[n].p = out;
	values[n] = &slots[n];
	n++;
	slots[n].p = err;
	values[n] = &slots[n];
	ffi_arg rc = 0;
	/* The cif was prepared from these very params, so the shapes agree by construction. */
	ffi_call((ffi_cif *)&t->cif, FFI_FN(t->fn), &rc, values);
	return (int)(ffi_sarg)rc;
}
