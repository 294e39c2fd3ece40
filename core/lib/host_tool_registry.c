/*
 * host_tool_registry.c — the registry: empty until a host registers a tool, and the only
 * place a declaration is ever read. Registration is the host's own configuration site, so
 * every refusal here names the tool and the fix, before any sandbox exists.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_tool_internal.h"

static const char *const arg_type_names[] = {
	[MSB_ARG_STRING] = "string", [MSB_ARG_INT64] = "int64", [MSB_ARG_DOUBLE] = "double",
	[MSB_ARG_BOOL] = "bool",
};

const char *msb_arg_type_name(msb_arg_type type)
{
	return type >= MSB_ARG_STRING && type <= MSB_ARG_BOOL ? arg_type_names[type] : NULL;
}

void host_tools_log(const msb_host_tools *reg, const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (reg->opt.log)
		reg->opt.log(reg->opt.log_ctx, line);
	else
		fprintf(stderr, "msb: %s\n", line);
}

/* Every leg a bound, refused at construction: a zero is a registry that can serve nothing. */
static msb_errc check_options(const msb_host_tools_options *o, msb_error *err)
{
	if (!o || o->struct_size < offsetof(msb_host_tools_options, log_ctx) + sizeof o->log_ctx)
		return msb_error_set(err, MSB_E_VALUE,
				     "host-tool registry: options missing, or their struct_size predates "
				     "msb_host_tools_options; start from MSB_HOST_TOOLS_OPTIONS_INIT");
	if (o->max_calls_per_run < 1)
		return msb_error_set(err, MSB_E_VALUE,
				     "host-tool registry: max_calls_per_run must be at least 1, not 0; a "
				     "host that wants nothing called wants an empty registry");
	const struct {
		const char *leg;
		uint64_t v;
	} legs[] = {
		{ "max_bytes_per_file", o->response_limits.max_bytes_per_file },
		{ "max_total_bytes", o->response_limits.max_total_bytes },
		{ "max_files", o->response_limits.max_files },
	};
	for (size_t i = 0; i < sizeof legs / sizeof legs[0]; i++)
		if (legs[i].v < 1)
			return msb_error_set(err, MSB_E_VALUE,
					     "host-tool registry: response_limits.%s is 0, so no response "
					     "could ever be delivered; a host that wants none wants an "
					     "empty registry",
					     legs[i].leg);
	if (o->allowed_identities & ~(MSB_BIT(MSB_IDENTITY_APP) | MSB_BIT(MSB_IDENTITY_USER)))
		return msb_error_set(err, MSB_E_VALUE,
				     "host-tool registry: allowed_identities holds a bit outside the "
				     "identity axis (app, user)");
	return MSB_OK;
}

msb_errc msb_host_tools_new(const msb_host_tools_options *options, msb_host_tools **out,
			    msb_error *err)
{
	*out = NULL;
	msb_errc rc = check_options(options, err);
	if (rc)
		return rc;
	msb_host_tools *reg = calloc(1, sizeof *reg);
	if (!reg)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	reg->opt = *options;
	pthread_mutex_init(&reg->lock, NULL);
	*out = reg;
	return MSB_OK;
}

static void tool_free(host_tool *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_params; i++)
		free((char *)t->params[i].name);
	free((char *)t->decl.sink_cap);
	free(t->name);
	free(t);
}

void msb_host_tools_free(msb_host_tools *reg)
{
	if (!reg)
		return;
	for (size_t i = 0; i < reg->n_tools; i++)
		tool_free(reg->tools[i]);
	free(reg->tools);
	free(reg->caps);
	pthread_mutex_destroy(&reg->lock);
	free(reg);
}

static bool name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > MSB_HOST_TOOL_MAX_NAME)
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '_' || *p == '.' || *p == '-'))
			return false;
	return true;
}

/*
 * A whole answer, or none. A partial declaration reads as unstamped, exactly as the seed
 * reads a stamp that is not a whole declaration: it is not a weaker claim but no claim.
 */
static bool declaration_whole(const msb_host_tool_declaration *d)
{
	if (!d)
		return false;
	bool source = d->source >= MSB_FLOW_SOURCE_NONE && d->source <= MSB_FLOW_SOURCE_TRUSTED;
	bool identity = d->identity >= MSB_FLOW_IDENTITY_NONE && d->identity <= MSB_FLOW_IDENTITY_USER;
	bool sink = (d->sink == MSB_FLOW_SINK_NONE && !d->sink_cap) ||
		    (d->sink == MSB_FLOW_SINK_CAPPED && d->sink_cap && *d->sink_cap);
	return source && identity && sink;
}

/* The authority a declaration claims; an undeclared tool (NULL) reads as app. */
static int identity_of(const msb_host_tool_declaration *d)
{
	if (!d)
		return MSB_IDENTITY_APP; /* nobody answered, and its body runs with the app's authority */
	switch (d->identity) {
	case MSB_FLOW_IDENTITY_APP:
		return MSB_IDENTITY_APP;
	case MSB_FLOW_IDENTITY_USER:
		return MSB_IDENTITY_USER;
	default:
		return MSB_UNSET;
	}
}

int host_tool_identity(const host_tool *t)
{
	return identity_of(t->declared ? &t->decl : NULL);
}

/* The lock guards reads too; const here is the API's promise not to change the registry. */
static pthread_mutex_t *lock_of(const msb_host_tools *reg)
{
	return (pthread_mutex_t *)&reg->lock;
}

static msb_errc check_params(const msb_host_tool *tool, msb_error *err)
{
	if (tool->n_params > MSB_HOST_TOOL_MAX_PARAMS)
		return msb_error_set(err, MSB_E_VALUE,
				     "host tool '%s' declares %zu parameters; at most %d are supported",
				     tool->name, tool->n_params, MSB_HOST_TOOL_MAX_PARAMS);
	if (tool->n_params && !tool->params)
		return msb_error_set(err, MSB_E_VALUE,
				     "host tool '%s' declares %zu parameters and gives no list of them",
				     tool->name, tool->n_params);
	for (size_t i = 0; i < tool->n_params; i++) {
		const msb_host_tool_param *p = &tool->params[i];
		if (!p->name || !name_ok(p->name))
			return msb_error_set(err, MSB_E_VALUE,
					     "host tool '%s': parameter %zu has no usable name (1-%d "
					     "characters of [A-Za-z0-9_.-]); it is the key a guest sends",
					     tool->name, i + 1, MSB_HOST_TOOL_MAX_NAME);
		if (!msb_arg_type_name(p->type))
			return msb_error_set(err, MSB_E_VALUE,
					     "host tool '%s': parameter '%s' has no type (string, int64, "
					     "double or bool); an untyped argument cannot be validated "
					     "at the door",
					     tool->name, p->name);
		for (size_t j = 0; j < i; j++)
			if (strcmp(tool->params[j].name, p->name) == 0)
				return msb_error_set(err, MSB_E_VALUE,
						     "host tool '%s': parameter '%s' is declared twice",
						     tool->name, p->name);
	}
	return MSB_OK;
}

/* The refusals that need no lock: everything about the tool itself. */
static msb_errc check_tool(const msb_host_tools *reg, const msb_host_tool *tool, bool declared,
			   msb_error *err)
{
	if (!tool || tool->struct_size < offsetof(msb_host_tool, declaration) + sizeof tool->declaration)
		return msb_error_set(err, MSB_E_VALUE,
				     "host tool: descriptor missing, or its struct_size predates "
				     "msb_host_tool; start from MSB_HOST_TOOL_INIT");
	if (!tool->name || !name_ok(tool->name))
		return msb_error_set(err, MSB_E_VALUE,
				     "host tool: a name of 1-%d characters of [A-Za-z0-9_.-] is required "
				     "(given '%.80s'); it is the key a guest sends to reach the tool",
				     MSB_HOST_TOOL_MAX_NAME, tool->name ? tool->name : "");
	if (!tool->fn)
		return msb_error_set(err, MSB_E_VALUE, "host tool '%s': no function to call", tool->name);
	msb_errc rc = check_params(tool, err);
	if (rc)
		return rc;
	if (reg->opt.require_declared && !declared)
		return msb_error_set(err, MSB_E_HOST_TOOL_NOT_DECLARED,
				     "host tool '%s' has no complete information-flow declaration and "
				     "this registry requires one (require_declared). Answer every leg — "
				     "source, sink, identity; none is an answer, an omission is not",
				     tool->name);
	int identity = identity_of(declared ? tool->declaration : NULL);
	if (identity != MSB_UNSET && !(reg->opt.allowed_identities & MSB_BIT(identity))) {
		char allowed[64];
		msb_set_format(MSB_AXIS_IDENTITY, reg->opt.allowed_identities, allowed, sizeof allowed);
		return msb_error_set(err, MSB_E_HOST_TOOL_IDENTITY_NOT_ALLOWED,
				     "host tool '%s' exercises '%s' authority%s, which this registry "
				     "does not allow (allowed_identities: {%s}). A host that means to "
				     "run tools under it opts in with allowed_identities; a tool "
				     "declaring identity none exercises no authority and is always "
				     "allowed",
				     tool->name, msb_word_name(MSB_AXIS_IDENTITY, identity),
				     declared ? "" : " (undeclared, read as 'app')", allowed);
	}
	return MSB_OK;
}

static msb_errc tool_copy(const msb_host_tool *tool, bool declared, host_tool **out, msb_error *err)
{
	host_tool *t = calloc(1, sizeof *t);
	if (!t || !(t->name = strdup(tool->name)))
		goto nomem;
	t->fn = tool->fn;
	for (size_t i = 0; i < tool->n_params; i++) {
		t->params[i].type = tool->params[i].type;
		if (!(t->params[i].name = strdup(tool->params[i].name)))
			goto nomem;
		t->n_params++;
	}
	t->declared = declared;
	if (declared) {
		t->decl = *tool->declaration;
		if (t->decl.sink_cap && !(t->decl.sink_cap = strdup(t->decl.sink_cap)))
			goto nomem;
	}
	msb_errc rc = host_tool_ffi_prepare(t, err);
	if (rc) {
		tool_free(t);
		return rc;
	}
	*out = t;
	return MSB_OK;
nomem:
	tool_free(t);
	return msb_error_set(err, MSB_E_NOMEM, "out of memory");
}

const host_tool *host_tools_find(msb_host_tools *reg, const char *name)
{
	const host_tool *found = NULL;
	pthread_mutex_lock(&reg->lock);
	for (size_t i = 0; i < reg->n_tools && !found; i++)
		if (strcmp(reg->tools[i]->name, name) == 0)
			found = reg->tools[i];
	pthread_mutex_unlock(&reg->lock);
	return found;
}

msb_errc msb_host_tools_register(msb_host_tools *reg, const msb_host_tool *tool, msb_error *err)
{
	/* One read of the declaration, used by the gate and the copy alike. */
	bool declared = tool && tool->struct_size >= sizeof *tool && declaration_whole(tool->declaration);
	msb_errc rc = check_tool(reg, tool, declared, err);
	if (rc)
		return rc;
	host_tool *t = NULL;
	if ((rc = tool_copy(tool, declared, &t, err)))
		return rc;
	pthread_mutex_lock(&reg->lock);
	if (reg->sealed)
		rc = msb_error_set(err, MSB_E_VALUE,
				   "host tool '%s' cannot be registered: this registry was sealed when "
				   "its aggregate was taken, and a host has already derived policy from "
				   "the surface as it stood; widening it now would serve what nothing "
				   "classified",
				   t->name);
	for (size_t i = 0; !rc && i < reg->n_tools; i++)
		if (strcmp(reg->tools[i]->name, t->name) == 0)
			rc = msb_error_set(err, MSB_E_VALUE,
					   "host tool '%s' is already registered; refused rather than "
					   "replaced, because rebinding a name silently would change the "
					   "surface under whatever was derived from it",
					   t->name);
	if (!rc && reg->n_tools == reg->cap_tools) {
		size_t cap = reg->cap_tools ? 2 * reg->cap_tools : 8;
		host_tool **grown = realloc(reg->tools, cap * sizeof *grown);
		if (!grown)
			rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
		else {
			reg->tools = grown;
			reg->cap_tools = cap;
		}
	}
	bool notice = false;
	if (!rc) {
		reg->tools[reg->n_tools++] = t;
		notice = !reg->warned;
		reg->warned = true;
	}
	pthread_mutex_unlock(&reg->lock);
	if (rc) {
		tool_free(t);
		return rc;
	}
	if (notice)
		host_tools_log(reg,
			       "host tools: '%s' was registered for calls from inside a sandbox; such a "
			       "call runs in the host process with the host's authority and bypasses "
			       "the host's middleware (this notice is given once per registry)",
			       t->name);
	return MSB_OK;
}

size_t msb_host_tools_count(const msb_host_tools *reg)
{
	pthread_mutex_lock(lock_of(reg));
	size_t n = reg->n_tools;
	pthread_mutex_unlock(lock_of(reg));
	return n;
}

const char *msb_host_tools_name_at(const msb_host_tools *reg, size_t i)
{
	pthread_mutex_lock(lock_of(reg));
	const char *name = i < reg->n_tools ? reg->tools[i]->name : NULL;
	pthread_mutex_unlock(lock_of(reg));
	return name;
}

const msb_host_tool_declaration *msb_host_tools_declaration(const msb_host_tools *reg,
							    const char *name)
{
	const host_tool *t = host_tools_find((msb_host_tools *)reg, name);
	return t && t->declared ? &t->decl : NULL;
}

bool msb_host_tools_sealed(const msb_host_tools *reg)
{
	pthread_mutex_lock(lock_of(reg));
	bool sealed = reg->sealed;
	pthread_mutex_unlock(lock_of(reg));
	return sealed;
}
