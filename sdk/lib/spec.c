/*
 * spec.c — the seed's defaults for a workload spec, and the refusals a spec meets when it
 * is built, before any router sees it.
 */
#include <string.h>

#include <msb/types.h>

void msb_spec_init(msb_spec *spec, const char *kind)
{
	static const msb_transfer_limits defaults = MSB_DEFAULT_TRANSFER_LIMITS;
	memset(spec, 0, sizeof *spec);
	spec->kind = kind;
	spec->work_dir = MSB_DEFAULT_WORK_DIR;
	/* Stated positively, so a spec that forgets egress gets the closed posture. */
	spec->egress = MSB_EGRESS_CLOSED;
	spec->requires = MSB_DEFAULT_CAPABILITIES;
	spec->min_isolation = MSB_UNSET;
	spec->isolation_scope = MSB_SCOPE_CONVERSATION;
	spec->requires_os_family = MSB_UNSET;
	spec->files_in = defaults;
	spec->files_out = defaults;
}

static bool relative_literal(const char *p)
{
	if (!p || !*p || p[0] == '/' || strchr(p, '\\'))
		return false;
	for (const char *seg = p; seg; ) {
		const char *slash = strchr(seg, '/');
		size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
		if (n == 0 || (n == 2 && seg[0] == '.' && seg[1] == '.') || (n == 1 && seg[0] == '.'))
			return false;
		seg = slash ? slash + 1 : NULL;
	}
	return true;
}

msb_errc msb_spec_validate(const msb_spec *spec, msb_error *err)
{
	if (!spec->kind || !*spec->kind)
		return msb_error_set(err, MSB_E_VALUE, "a spec needs a kind: it is part of the sandbox's identity");
	const char *kind = spec->kind;
	if (!spec->work_dir || spec->work_dir[0] != '/')
		return msb_error_set(err, MSB_E_VALUE, "spec '%s': work_dir '%s' is not an absolute guest path",
				     kind, spec->work_dir ? spec->work_dir : "");
	/* A '.' or '..' segment reaches a plugin unchanged and names a directory other than the
	 * one spelled ("/msb/../../../root" is /root): one spelling per directory. */
	for (const char *p = spec->work_dir; *p;) {
		const char *seg = p + (*p == '/');
		size_t len = strcspn(seg, "/");
		if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
			return msb_error_set(err, MSB_E_VALUE,
					     "spec '%s': work_dir '%s' has a '%.*s' segment; a work_dir is "
					     "spelled without '.' or '..'", kind, spec->work_dir, (int)len, seg);
		p = seg + len;
	}
	if ((int)spec->egress < 0 || spec->egress >= MSB_EGRESS__COUNT)
		return msb_error_set(err, MSB_E_VALUE, "spec '%s': egress %d is not an egress mode", kind, (int)spec->egress);
	if (spec->egress_allow && spec->egress_allow[0] && spec->egress != MSB_EGRESS_ALLOWLIST)
		return msb_error_set(err, MSB_E_VALUE,
				     "spec '%s': egress_allow names hosts ('%s'…) but egress is '%s': a host "
				     "list is the payload of an 'allowlist' run and has no meaning without "
				     "it; set egress: allowlist, or drop the hosts",
				     kind, spec->egress_allow[0], msb_word_name(MSB_AXIS_EGRESS, (int)spec->egress));
	if (spec->requires & ~(MSB_BIT(MSB_CAP__COUNT) - 1))
		return msb_error_set(err, MSB_E_VALUE, "spec '%s': requires holds a value that is not a capability", kind);
	if (spec->identities & ~(MSB_BIT(MSB_IDENTITY__COUNT) - 1))
		return msb_error_set(err, MSB_E_VALUE, "spec '%s': identities holds a value that is not an identity", kind);
	if (spec->min_isolation != MSB_UNSET && (spec->min_isolation < 0 || spec->min_isolation >= MSB_ISO__COUNT))
		return msb_error_set(err, MSB_E_VALUE, "spec '%s': min_isolation %d is not a rung", kind, spec->min_isolation);
	if ((int)spec->isolation_scope < 0 || spec->isolation_scope >= MSB_SCOPE__COUNT)
		return msb_error_set(err, MSB_E_VALUE, "spec '%s': isolation_scope %d is not a scope", kind, (int)spec->isolation_scope);
	if (spec->requires_os_family != MSB_UNSET &&
	    (spec->requires_os_family < 0 || spec->requires_os_family >= MSB_OS__COUNT))
		return msb_error_set(err, MSB_E_VALUE, "spec '%s': requires_os_family %d is not an OS family", kind, spec->requires_os_family);
	for (size_t i = 0; i < spec->n_declared_outputs; i++) {
		const msb_declared_output *o = &spec->declared_outputs[i];
		/* Literal, never a glob: resolving a pattern means listing, which files_list gates. */
		if (!relative_literal(o->path))
			return msb_error_set(err, MSB_E_VALUE,
					     "spec '%s': declared output '%s' is not a literal path relative to work_dir",
					     kind, o->path ? o->path : "");
	}
	return MSB_OK;
}
