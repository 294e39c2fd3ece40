/*
 * loader_resolve.c — turn a plugin reference, as sandbox.yaml writes it, into a file: a path
 * is used as written; a bare name is looked for as NAME.so along the caller's search path,
 * then $MSB_PLUGIN_PATH, then the installed plugin directory. First match wins, so a
 * directory earlier on the path can stand in for an installed plugin.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <msb/loader.h>

#ifndef MSB_PLUGINDIR
#error "MSB_PLUGINDIR must be defined by the build"
#endif

/* Look for `file` in each ':'-separated directory of `dirs`; empty entries are skipped. */
static msb_errc search_dirs(const char *dirs, const char *file, char **found, msb_error *err)
{
	for (const char *at = dirs; at && *at;) {
		const char *end = strchr(at, ':');
		size_t len = end ? (size_t)(end - at) : strlen(at);
		if (len) {
			char *candidate;
			if (asprintf(&candidate, "%.*s/%s", (int)len, at, file) < 0)
				return msb_error_set(err, MSB_E_NOMEM, "out of memory resolving %s",
						     file);
			struct stat st;
			if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode)) {
				*found = candidate;
				return MSB_OK;
			}
			free(candidate);
		}
		at = end ? end + 1 : at + len;
	}
	return MSB_E_NOT_FOUND;
}

msb_errc msb_plugin_resolve(const char *ref, const char *search_path, char **resolved,
			    msb_error *err)
{
	if (!ref || !ref[0])
		return msb_error_set(err, MSB_E_VALUE, "plugin lookup: no plugin named; a backend entry's "
				     "plugin is a file path or a bare name looked up on the plugin path");
	if (strchr(ref, '/')) {
		if (!(*resolved = strdup(ref)))
			return msb_error_set(err, MSB_E_NOMEM, "out of memory resolving %s", ref);
		return MSB_OK;
	}
	size_t n = strlen(ref);
	char *file;
	int w = n > 3 && strcmp(ref + n - 3, ".so") == 0 ? asprintf(&file, "%s", ref)
							  : asprintf(&file, "%s.so", ref);
	if (w < 0)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory resolving %s", ref);

	const char *env = getenv("MSB_PLUGIN_PATH");
	const char *const places[] = { search_path, env, MSB_PLUGINDIR };
	msb_errc rc = MSB_E_NOT_FOUND;
	for (size_t i = 0; i < 3 && rc == MSB_E_NOT_FOUND; i++)
		rc = search_dirs(places[i], file, resolved, err);
	if (rc == MSB_E_NOT_FOUND)
		rc = msb_error_set(err, MSB_E_IMPORT,
				   "plugin '%s': no %s in the search path (%s), $MSB_PLUGIN_PATH "
				   "(%s) or the plugin directory (%s)",
				   ref, file, search_path && *search_path ? search_path : "none",
				   env && *env ? env : "unset", MSB_PLUGINDIR);
	free(file);
	return rc;
}
