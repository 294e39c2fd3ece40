/*
 * loader_validate.c — the checks a plugin's descriptor passes before anything of the plugin
 * runs beyond its constructors. Order matters: magic, ABI version and size come first,
 * because until they hold no other field's offset can be trusted. Every refusal names the
 * plugin file and the field or symbol, says what was found and what was expected
 * (GStreamer and httpd refuse a module this way), and is MSB_E_BACKEND_NOT_PERMITTED.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "plugin_internal.h"

#define NOT_PERMITTED MSB_E_BACKEND_NOT_PERMITTED

/*
 * The pre-v27 SDK's bare declaration symbols, with what each field silently reads as if the
 * bare one is ignored: that is the harm of accepting it.
 */
static const struct stale_symbol {
	const char *symbol;
	const char *field;
	const char *silent_reading;
} stale_symbols[] = {
	{ "msb_backend_capabilities", "capabilities", "{exec, files_in}" },
	{ "msb_backend_limits", "limits",
	  "the default ceilings, widening any ceiling it meant to be narrower" },
	{ "msb_backend_egress_modes", "egress_modes", "{}, refusing every spec" },
	{ "msb_backend_os_families", "os_families", "{}, refusing every spec that asks for one" },
};

static msb_errc check_header(const msb_plugin *p, const struct msb_backend_v27 *d,
			     msb_error *err)
{
	if (d->magic != MSB_BACKEND_MAGIC)
		return msb_error_set(err, NOT_PERMITTED,
				     "plugin %s: %s.magic is 0x%08x, expected 0x%08x: the symbol "
				     "is not an msb backend descriptor",
				     p->file, MSB_BACKEND_SYMBOL, (unsigned)d->magic,
				     (unsigned)MSB_BACKEND_MAGIC);
	if (d->abi_version != MSB_ABI_VERSION)
		return msb_error_set(err, NOT_PERMITTED,
				     "plugin %s: %s.abi_version: built for ABI %u, this host "
				     "speaks %u; rebuild it against this host's SDK",
				     p->file, MSB_BACKEND_SYMBOL, (unsigned)d->abi_version,
				     (unsigned)MSB_ABI_VERSION);
	/*
	 * Smaller than ABI 27's first descriptor: a field every host reads lies past its end.
	 * Between that and this host's size is a plugin built before operations were appended:
	 * it loads, and each appended operation is read only where struct_size covers it.
	 */
	if (d->struct_size < MSB_BACKEND_V27_BASE_SIZE)
		return msb_error_set(err, NOT_PERMITTED,
				     "plugin %s: %s.struct_size is %u bytes, ABI 27's "
				     "descriptor is at least %zu bytes: it was built against another SDK "
				     "and its later fields would be read past its end; rebuild it",
				     p->file, MSB_BACKEND_SYMBOL, (unsigned)d->struct_size,
				     (size_t)MSB_BACKEND_V27_BASE_SIZE);
	return MSB_OK;
}

static msb_errc check_stale(const msb_plugin *p, msb_error *err)
{
	for (size_t i = 0; i < sizeof stale_symbols / sizeof stale_symbols[0]; i++) {
		const struct stale_symbol *s = &stale_symbols[i];
		if (!dlsym(p->handle, s->symbol))
			continue;
		return msb_error_set(err, NOT_PERMITTED,
				     "plugin %s: exports the stale bare symbol '%s' (from the SDK "
				     "before ABI %u): nothing reads a bare declaration, so %s would "
				     "silently read as %s; state it as %s.declarations.%s and "
				     "remove the bare symbol",
				     p->file, s->symbol, (unsigned)MSB_ABI_VERSION, s->field,
				     s->silent_reading, MSB_BACKEND_SYMBOL, s->field);
	}
	return MSB_OK;
}

/* Hand on a vocabulary refusal (its own words kept) as the loader's, prefixed with the file. */
static msb_errc refuse_as_plugin(const msb_plugin *p, msb_error *e, const char *field,
				 msb_error *err)
{
	e->code = NOT_PERMITTED;
	if (field)
		msb_error_prefix(e, "plugin %s: %s.%s: ", p->file, MSB_BACKEND_SYMBOL, field);
	msb_error_move(err, e);
	return NOT_PERMITTED;
}

static msb_errc check_identity(msb_plugin *p, const struct msb_backend_v27 *d, msb_error *err)
{
	if (!d->name || !d->name[0])
		return msb_error_set(err, NOT_PERMITTED,
				     "plugin %s: %s.name is %s: a backend needs the name "
				     "sandbox.yaml refers to it by",
				     p->file, MSB_BACKEND_SYMBOL, d->name ? "empty" : "missing");
	msb_error e = MSB_ERROR_INIT;
	int rung;
	if (msb_word_parse(MSB_AXIS_ISOLATION, d->isolation, &rung, &e) != MSB_OK)
		return refuse_as_plugin(p, &e, "isolation", err);
	p->isolation = (msb_isolation)rung;
	return MSB_OK;
}

static msb_errc check_declarations(msb_plugin *p, const struct msb_backend_v27 *d,
				   msb_error *err)
{
	char what[4096];
	snprintf(what, sizeof what, "plugin %s: %s.declarations", p->file, MSB_BACKEND_SYMBOL);
	msb_error e = MSB_ERROR_INIT;
	if (msb_declarations_resolve(&d->declarations, what, &p->decl, &e) != MSB_OK)
		return refuse_as_plugin(p, &e, NULL, err);
	return MSB_OK;
}

#define OP(field) { #field, offsetof(struct msb_backend_v27, field) }
typedef struct op_field {
	const char *name;
	size_t offset;
} op_field;

static bool op_present(const struct msb_backend_v27 *d, const op_field *op)
{
	void (*fn)(void);
	memcpy(&fn, (const char *)d + op->offset, sizeof fn);
	return fn != NULL;
}

/* The operations the contract cannot do without, and what the host loses without each. */
static const struct mandatory_op {
	op_field op;
	const char *why;
} mandatory_ops[] = {
	{ OP(init), "the host builds every instance through it" },
	{ OP(fini), "the host could never release an instance" },
	{ OP(acquire), "the host could never get a sandbox" },
	{ OP(dispose), "a key's sandboxes could never be deleted" },
	{ OP(dispose_scope), "a conversation's sandboxes could never be purged" },
	{ OP(release), "every sandbox handle would leak" },
	{ OP(reclaim),
	  "the host could never remove the directories it makes inside a sandbox, whatever "
	  "the capabilities" },
};

static msb_errc check_mandatory(const msb_plugin *p, const struct msb_backend_v27 *d,
				msb_error *err)
{
	for (size_t i = 0; i < sizeof mandatory_ops / sizeof mandatory_ops[0]; i++) {
		const struct mandatory_op *m = &mandatory_ops[i];
		if (!op_present(d, &m->op))
			return msb_error_set(err, NOT_PERMITTED,
					     "plugin %s: %s.%s is NULL, but the operation is "
					     "mandatory: without it %s",
					     p->file, MSB_BACKEND_SYMBOL, m->op.name, m->why);
	}
	return MSB_OK;
}

/* Which operations each capability promises. */
static const struct capability_ops {
	msb_capability cap;
	op_field ops[2];
	size_t n;
} capability_ops[] = {
	{ MSB_CAP_EXEC, { OP(exec) }, 1 },
	{ MSB_CAP_RUN_CODE, { OP(run_code) }, 1 },
	{ MSB_CAP_FILES_IN, { OP(write_file) }, 1 },
	{ MSB_CAP_FILES_OUT, { OP(stat_file), OP(read_file) }, 2 },
	{ MSB_CAP_FILES_LIST, { OP(list_dir) }, 1 },
	{ MSB_CAP_FILES_DELETE, { OP(remove) }, 1 },
};

static msb_errc check_capability_ops(const msb_plugin *p, const struct msb_backend_v27 *d,
				     msb_error *err)
{
	for (size_t i = 0; i < sizeof capability_ops / sizeof capability_ops[0]; i++) {
		const struct capability_ops *c = &capability_ops[i];
		if (!(p->decl.capabilities & MSB_BIT(c->cap)))
			continue;
		for (size_t j = 0; j < c->n; j++) {
			if (op_present(d, &c->ops[j]))
				continue;
			const char *cap = msb_word_name(MSB_AXIS_CAPABILITY, (int)c->cap);
			if (p->decl.unstated & MSB_DECL_CAPABILITIES)
				return msb_error_set(
					err, NOT_PERMITTED,
					"plugin %s: %s.%s is NULL, but capabilities is unstated, "
					"which reads as {exec, files_in} and so claims '%s'; "
					"implement %s or state the capabilities it has",
					p->file, MSB_BACKEND_SYMBOL, c->ops[j].name, cap,
					c->ops[j].name);
			return msb_error_set(err, NOT_PERMITTED,
					     "plugin %s: declares capability '%s' but %s.%s is "
					     "NULL: a declared capability must have its operation",
					     p->file, cap, MSB_BACKEND_SYMBOL, c->ops[j].name);
		}
	}
	return MSB_OK;
}

/*
 * No v27 descriptor. A plugin built against another SDK exports its own version's symbol;
 * finding it lets the refusal name both versions, as a mismatched abi_version would.
 */
static msb_errc refuse_missing_descriptor(const msb_plugin *p, msb_error *err)
{
	for (unsigned v = 1; v < 2 * MSB_ABI_VERSION; v++) {
		char other[32];
		snprintf(other, sizeof other, "msb_backend_v%u", v);
		if (v != MSB_ABI_VERSION && dlsym(p->handle, other))
			return msb_error_set(err, NOT_PERMITTED,
					     "plugin %s: no '%s' symbol but '%s': built for ABI "
					     "%u, this host speaks %u; rebuild it against this "
					     "host's SDK",
					     p->file, MSB_BACKEND_SYMBOL, other, v,
					     (unsigned)MSB_ABI_VERSION);
	}
	return msb_error_set(err, NOT_PERMITTED,
			     "plugin %s: no '%s' symbol: not an msb backend (a backend exports "
			     "its descriptor, written with MSB_BACKEND_DEFINE, as %s; this host "
			     "speaks ABI %u)",
			     p->file, MSB_BACKEND_SYMBOL, MSB_BACKEND_SYMBOL,
			     (unsigned)MSB_ABI_VERSION);
}

msb_errc msb_plugin_validate(msb_plugin *p, msb_error *err)
{
	const struct msb_backend_v27 *d = dlsym(p->handle, MSB_BACKEND_SYMBOL);
	if (!d)
		return refuse_missing_descriptor(p, err);
	msb_errc rc = check_header(p, d, err);
	if (rc == MSB_OK)
		rc = check_stale(p, err);
	if (rc == MSB_OK)
		rc = check_identity(p, d, err);
	if (rc == MSB_OK)
		rc = check_declarations(p, d, err);
	if (rc == MSB_OK)
		rc = check_mandatory(p, d, err);
	if (rc == MSB_OK)
		rc = check_capability_ops(p, d, err);
	if (rc == MSB_OK)
		p->desc = d;
	return rc;
}
