/*
 * loader_validate.c — the checks a plugin's descriptor passes before anything of the plugin
 * runs beyond its constructors. Order matters: magic, ABI version and size come first,
 * because until they hold no other field's offset can be trusted. Every refusal names the
 * plugin file and the field or symbol, says what was found and what was expected
 * (GStreamer and httpd refuse a module this way), and is MSB_E_BACKEND_NOT_PERMITTED.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
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
			     uint64_t object_size, msb_error *err)
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
	if (d->struct_size > object_size)
		return msb_error_set(err, NOT_PERMITTED,
				     "plugin %s: %s.struct_size says %u bytes, but the object is "
				     "%llu bytes (its ELF symbol size): the host would read past "
				     "its end",
				     p->file, MSB_BACKEND_SYMBOL, (unsigned)d->struct_size,
				     (unsigned long long)object_size);
	return MSB_OK;
}

static msb_errc refuse_stale(const msb_plugin *p, const struct stale_symbol *s,
			     msb_error *err)
{
	return msb_error_set(err, NOT_PERMITTED,
			     "plugin %s: exports the stale bare symbol '%s' (from the SDK "
			     "before ABI %u; any version of it): nothing reads a bare "
			     "declaration, so %s would silently read as %s; state it as "
			     "%s.declarations.%s and remove the bare symbol",
			     p->file, s->symbol, (unsigned)MSB_ABI_VERSION, s->field,
			     s->silent_reading, MSB_BACKEND_SYMBOL, s->field);
}

/* One symbol of the file's own .dynsym: the descriptor, an older ABI's, or a stale one. */
static msb_errc note_symbol(void *ctx, const msb_elf_symbol *sym, msb_error *err)
{
	msb_plugin *p = ctx;
	for (size_t i = 0; i < sizeof stale_symbols / sizeof stale_symbols[0]; i++)
		if (strcmp(sym->name, stale_symbols[i].symbol) == 0)
			return refuse_stale(p, &stale_symbols[i], err);
	if (strcmp(sym->name, MSB_BACKEND_SYMBOL) == 0) {
		if (p->syms.has_descriptor)
			return msb_error_set(err, NOT_PERMITTED,
					     "plugin %s: defines '%s' twice (under two symbol "
					     "versions): which one is the descriptor is ambiguous",
					     p->file, MSB_BACKEND_SYMBOL);
		p->syms.has_descriptor = true;
		p->syms.descriptor = *sym;
		p->syms.descriptor.name = NULL;
		return MSB_OK;
	}
	unsigned v = 0;
	int end = 0;
	if (!p->syms.other_abi && sscanf(sym->name, "msb_backend_v%u%n", &v, &end) == 1 &&
	    sym->name[end] == '\0' && v != MSB_ABI_VERSION)
		p->syms.other_abi = v;
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
	/* Not a fixed buffer: a long path must not cut the field off the message. */
	size_t n = strlen(p->file) + sizeof MSB_BACKEND_SYMBOL + 32;
	char *what = malloc(n);
	if (!what)
		return msb_error_set(err, MSB_E_NOMEM, "plugin %s: out of memory", p->file);
	snprintf(what, n, "plugin %s: %s.declarations", p->file, MSB_BACKEND_SYMBOL);
	msb_error e = MSB_ERROR_INIT;
	msb_errc rc = msb_declarations_resolve(&d->declarations, what, &p->decl, &e);
	free(what);
	if (rc != MSB_OK)
		return refuse_as_plugin(p, &e, NULL, err);
	return MSB_OK;
}

/*
 * The appended `images` declaration (issue 21): NULL, or at most 64 image names, each 1 to
 * 128 of [A-Za-z0-9._:-]. The router compares a spec's image against them on every route,
 * so a list that is not what it says is refused here, once, naming the entry.
 */
#define MAX_DECLARED_IMAGES 64
static msb_errc check_images(msb_plugin *p, const struct msb_backend_v27 *d, msb_error *err)
{
	if (!MSB_BACKEND_HAS(d, images) || !d->images)
		return MSB_OK;
	if ((uintptr_t)d->images % _Alignof(const char *) != 0)
		return msb_error_set(err, NOT_PERMITTED, "plugin %s: %s.images is at a misaligned "
				     "address: it is not a NULL-terminated array of image names",
				     p->file, MSB_BACKEND_SYMBOL);
	size_t i = 0;
	for (; d->images[i]; i++) {
		const char *name = d->images[i];
		size_t len = strnlen(name, 129);
		bool ok = len >= 1 && len <= 128;
		for (size_t j = 0; ok && j < len; j++)
			ok = (name[j] >= 'a' && name[j] <= 'z') || (name[j] >= 'A' && name[j] <= 'Z') ||
			     (name[j] >= '0' && name[j] <= '9') || strchr("._:-", name[j]);
		if (!ok) {
			char shown[64];
			msb_plugin_escape(name, len < 48 ? len : 48, shown, sizeof shown);
			return msb_error_set(err, NOT_PERMITTED, "plugin %s: %s.images[%zu] '%s' is not "
					     "an image name (1 to 128 of A-Z, a-z, 0-9, '.', '_', ':', '-')",
					     p->file, MSB_BACKEND_SYMBOL, i, shown);
		}
		if (i + 1 >= MAX_DECLARED_IMAGES)
			return msb_error_set(err, NOT_PERMITTED, "plugin %s: %s.images names more than "
					     "%d images, or is not NULL-terminated", p->file,
					     MSB_BACKEND_SYMBOL, MAX_DECLARED_IMAGES - 1);
	}
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
	/* An appended operation beyond a smaller descriptor is absent, never read. */
	if (d->struct_size < op->offset + sizeof fn)
		return false;
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
	op_field ops[4];
	size_t n;
} capability_ops[] = {
	/* Appended operations (issue 22): a plugin built before them cannot declare it. */
	{ MSB_CAP_SNAPSHOT,
	  { OP(snapshot_save), OP(snapshot_start), OP(snapshot_list), OP(snapshot_remove) }, 4 },
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
	unsigned v = p->syms.other_abi;
	if (v)
		return msb_error_set(err, NOT_PERMITTED,
				     "plugin %s: no '%s' symbol but 'msb_backend_v%u': built for "
				     "ABI %u, this host speaks %u; rebuild it against this host's "
				     "SDK",
				     p->file, MSB_BACKEND_SYMBOL, v, v, (unsigned)MSB_ABI_VERSION);
	return msb_error_set(err, NOT_PERMITTED,
			     "plugin %s: no '%s' symbol: not an msb backend (a backend exports "
			     "its descriptor, written with MSB_BACKEND_DEFINE, as %s; this host "
			     "speaks ABI %u)",
			     p->file, MSB_BACKEND_SYMBOL, MSB_BACKEND_SYMBOL,
			     (unsigned)MSB_ABI_VERSION);
}

static const char *symbol_type_name(unsigned type)
{
	switch (type) {
	case STT_NOTYPE: return "a symbol of no type";
	case STT_FUNC: return "a function";
	case STT_SECTION: return "a section";
	case STT_FILE: return "a file name";
	case STT_COMMON: return "a common block";
	case STT_TLS: return "a thread-local variable";
	case STT_GNU_IFUNC: return "an indirect function";
	default: return "a symbol of an unknown type";
	}
}

/* The descriptor, as the file's own symbol table defines it: a data object, big enough. */
static msb_errc check_descriptor_symbol(const msb_plugin *p, msb_error *err)
{
	const msb_elf_symbol *s = &p->syms.descriptor;
	if (s->type != STT_OBJECT)
		return msb_error_set(err, NOT_PERMITTED,
				     "plugin %s: %s is %s, not a data object: the descriptor is "
				     "a constant struct written with MSB_BACKEND_DEFINE",
				     p->file, MSB_BACKEND_SYMBOL, symbol_type_name(s->type));
	if (s->absolute || !s->loaded)
		return msb_error_set(err, NOT_PERMITTED,
				     "plugin %s: %s lies outside the object's loaded segments: "
				     "reading it would read memory that is not the plugin's",
				     p->file, MSB_BACKEND_SYMBOL);
	if (s->size < offsetof(struct msb_backend_v27, struct_size) + sizeof(uint32_t))
		return msb_error_set(err, NOT_PERMITTED,
				     "plugin %s: %s is a %llu-byte object, too small to hold even "
				     "its magic, ABI version and size",
				     p->file, MSB_BACKEND_SYMBOL, (unsigned long long)s->size);
	return MSB_OK;
}

static msb_errc examine_bytes(msb_plugin *p, const unsigned char *bytes, size_t len,
			      msb_error *err)
{
	memset(&p->syms, 0, sizeof p->syms);
	msb_errc rc = msb_elf_inspect(bytes, len, p->file, note_symbol, p, err);
	if (rc != MSB_OK)
		return rc;
	if (!p->syms.has_descriptor)
		return refuse_missing_descriptor(p, err);
	return check_descriptor_symbol(p, err);
}

msb_errc msb_plugin_examine(msb_plugin *p, msb_error *err)
{
	unsigned char *bytes = NULL;
	size_t len = 0;
	msb_errc rc = msb_elf_read(p->file, &bytes, &len, err);
	if (rc == MSB_OK)
		rc = examine_bytes(p, bytes, len, err);
	free(bytes);
	return rc;
}

/*
 * Where the descriptor is in memory: what dlsym finds, which must lie in the plugin's own
 * object (dladdr1's link map is the handle's), never in a dependency. The link maps are
 * compared as pointers and never read here: the dynamic linker writes them under its own
 * lock, which a concurrent load elsewhere would race.
 */
static msb_errc locate_descriptor(const msb_plugin *p, const unsigned char **at, msb_error *err)
{
	struct link_map *own = NULL, *where = NULL;
	Dl_info info;
	dlerror();
	void *sym = dlsym(p->handle, MSB_BACKEND_SYMBOL);
	if (!sym || dlinfo(p->handle, RTLD_DI_LINKMAP, &own) != 0 || !own ||
	    !dladdr1(sym, &info, (void **)&where, RTLD_DL_LINKMAP) || where != own)
		return msb_error_set(err, NOT_PERMITTED,
				     "plugin %s: the %s its dynamic linker found is not the one "
				     "its own file defines (the file changed while it was loaded?)",
				     p->file, MSB_BACKEND_SYMBOL);
	*at = sym;
	return MSB_OK;
}

/* A backend name is a short word: one sandbox.yaml can match and a terminal cannot be fooled by. */
static bool name_char_ok(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

void msb_plugin_escape(const char *bytes, size_t n, char *out, size_t size)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 5 <= size; i++) {
		unsigned char c = (unsigned char)bytes[i];
		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
	}
	out[o < size ? o : size - 1] = '\0';
}

static msb_errc check_name(const msb_plugin *p, const char *name, msb_error *err)
{
	if (!name || !name[0])
		return msb_error_set(err, NOT_PERMITTED,
				     "plugin %s: %s.name is %s: a backend needs the name "
				     "sandbox.yaml refers to it by",
				     p->file, MSB_BACKEND_SYMBOL, name ? "empty" : "missing");
	size_t len = strnlen(name, MSB_BACKEND_NAME_MAX + 1);
	bool ok = len <= MSB_BACKEND_NAME_MAX;
	for (size_t i = 0; ok && i < len; i++)
		ok = name_char_ok((unsigned char)name[i]);
	if (ok)
		return MSB_OK;
	/* Shown escaped and cut short, so the message keeps the file and the field. */
	char shown[4 * 48 + 1];
	msb_plugin_escape(name, len < 48 ? len : 48, shown, sizeof shown);
	return msb_error_set(err, NOT_PERMITTED,
			     "plugin %s: %s.name '%s'%s is not a backend name: a name is 1 to %d "
			     "of a-z, 0-9, '_' and '-'",
			     p->file, MSB_BACKEND_SYMBOL, shown,
			     len > 48 ? (len > MSB_BACKEND_NAME_MAX ? "… (too long)" : "…") : "",
			     MSB_BACKEND_NAME_MAX);
}

msb_errc msb_plugin_validate(msb_plugin *p, msb_error *err)
{
	if (!p->syms.has_descriptor)
		return refuse_missing_descriptor(p, err);
	const unsigned char *at = NULL;
	msb_errc rc = locate_descriptor(p, &at, err);
	if (rc != MSB_OK)
		return rc;
	/*
	 * Read as bytes into the host's own, aligned copy: the object may be misaligned or
	 * shorter than this host's struct, and fields past its struct_size read as zero.
	 */
	struct msb_backend_v27 head = { 0 };
	memcpy(&head, at, offsetof(struct msb_backend_v27, struct_size) + sizeof(uint32_t));
	rc = check_header(p, &head, p->syms.descriptor.size, err);
	if (rc != MSB_OK)
		return rc;
	struct msb_backend_v27 *d = calloc(1, sizeof *d);
	if (!d)
		return msb_error_set(err, MSB_E_NOMEM, "plugin %s: out of memory", p->file);
	/* Only what the plugin's struct_size covers (checked above to lie inside its object):
	 * an operation appended after the plugin was built reads as absent. */
	memcpy(d, at, head.struct_size < sizeof *d ? head.struct_size : sizeof *d);
	rc = check_name(p, d->name, err);
	if (rc == MSB_OK)
		rc = check_identity(p, d, err);
	if (rc == MSB_OK)
		rc = check_declarations(p, d, err);
	if (rc == MSB_OK)
		rc = check_images(p, d, err);
	if (rc == MSB_OK)
		rc = check_mandatory(p, d, err);
	if (rc == MSB_OK)
		rc = check_capability_ops(p, d, err);
	if (rc != MSB_OK) {
		free(d);
		return rc;
	}
	free(p->copy);
	p->copy = d;
	p->desc = d;
	return MSB_OK;
}
