/*
 * loader.c — the set of loaded plugins: dlopen one file, have its descriptor checked
 * (loader_validate.c), keep backend names unique, and dlclose them all at the end. A refused
 * plugin is dlclosed at once and leaves nothing behind.
 *
 * Loads on one loader may run from several threads at once. The loader's mutex is held only
 * for the name check and the append, which must be one step: checked and appended apart, two
 * threads loading one name would both pass the check and both be kept. dlopen and the
 * descriptor checks run unlocked, on a plugin no other thread can see yet; the dynamic
 * linker serialises what it must itself, and a plugin's constructors (run by dlopen) may
 * take as long as they like without holding up a load of an unrelated plugin. A loser of
 * that race dlcloses only its own reference, which leaves the winner's mapping in place.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_internal.h"

msb_errc msb_loader_new(msb_loader **out, msb_error *err)
{
	msb_loader *loader = calloc(1, sizeof *loader);
	if (!loader)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory making a plugin loader");
	int rc = pthread_mutex_init(&loader->lock, NULL);
	if (rc) {
		free(loader);
		return msb_error_set(err, MSB_E_NOMEM, "cannot make a plugin loader's lock: %s",
				     strerror(rc));
	}
	*out = loader;
	return MSB_OK;
}

static void plugin_free(msb_plugin *p)
{
	if (!p)
		return;
	if (p->handle)
		dlclose(p->handle);
	free(p->copy);
	free(p->file);
	free(p);
}

void msb_loader_set_probe(msb_loader *loader, unsigned timeout_ms)
{
	pthread_mutex_lock(&loader->lock);
	loader->probe_ms = timeout_ms;
	pthread_mutex_unlock(&loader->lock);
}

msb_errc msb_plugin_open(msb_plugin *p, msb_error *err)
{
	/* A bare file name would send dlopen searching the library path, not the file examined. */
	char *local = NULL;
	const char *path = p->file;
	if (!strchr(path, '/')) {
		size_t n = strlen(path) + 3;
		if (!(local = malloc(n)))
			return msb_error_set(err, MSB_E_NOMEM, "plugin %s: out of memory", p->file);
		snprintf(local, n, "./%s", path);
		path = local;
	}
	dlerror();
	p->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	free(local);
	if (!p->handle) {
		const char *why = dlerror();
		return msb_error_set(err, MSB_E_IMPORT, "plugin %s: cannot be loaded: %s", p->file,
				     why ? why : "dlopen failed");
	}
	return MSB_OK;
}

void msb_loader_free(msb_loader *loader)
{
	if (!loader)
		return;
	/* Last loaded first: a later plugin may depend on an earlier one's object. */
	for (size_t i = loader->len; i-- > 0;)
		plugin_free(loader->plugins[i]);
	free(loader->plugins);
	pthread_mutex_destroy(&loader->lock);
	free(loader);
}

static const msb_plugin *loader_find(const msb_loader *loader, const char *name)
{
	for (size_t i = 0; i < loader->len; i++)
		if (strcmp(loader->plugins[i]->desc->name, name) == 0)
			return loader->plugins[i];
	return NULL;
}

static msb_errc loader_append(msb_loader *loader, msb_plugin *p, msb_error *err)
{
	if (loader->len == loader->cap) {
		size_t cap = loader->cap ? loader->cap * 2 : 4;
		msb_plugin **grown = realloc(loader->plugins, cap * sizeof *grown);
		if (!grown)
			return msb_error_set(err, MSB_E_NOMEM, "plugin %s: out of memory", p->file);
		loader->plugins = grown;
		loader->cap = cap;
	}
	loader->plugins[loader->len++] = p;
	return MSB_OK;
}

msb_errc msb_loader_load(msb_loader *loader, const char *path, const msb_plugin **out,
			 msb_error *err)
{
	if (!path || !path[0])
		return msb_error_set(err, MSB_E_VALUE, "plugin loader: no plugin file given; a plugin is "
				     "loaded from the path of its shared object");
	msb_plugin *p = calloc(1, sizeof *p);
	if (!p || !(p->file = strdup(path))) {
		free(p);
		return msb_error_set(err, MSB_E_NOMEM, "plugin %s: out of memory", path);
	}
	p->loader = loader;
	pthread_mutex_lock(&loader->lock);
	unsigned probe_ms = loader->probe_ms;
	pthread_mutex_unlock(&loader->lock);
	/* The file first, then (when asked) a child's dlopen, and only then this process's. */
	msb_errc rc = msb_plugin_examine(p, err);
	if (rc == MSB_OK && probe_ms)
		rc = msb_plugin_probe(p, probe_ms, err);
	if (rc == MSB_OK)
		rc = msb_plugin_open(p, err);
	if (rc == MSB_OK)
		rc = msb_plugin_validate(p, err);
	if (rc == MSB_OK) {
		pthread_mutex_lock(&loader->lock);
		const msb_plugin *taken = loader_find(loader, p->desc->name);
		if (taken)
			rc = msb_error_set(err, MSB_E_BACKEND_NOT_PERMITTED,
					   "plugin %s: %s.name '%s' is already the name of plugin "
					   "%s: two backends with one name would make sandbox.yaml "
					   "ambiguous",
					   path, MSB_BACKEND_SYMBOL, p->desc->name, taken->file);
		else
			rc = loader_append(loader, p, err);
		pthread_mutex_unlock(&loader->lock);
	}
	if (rc != MSB_OK) {
		plugin_free(p);
		return rc;
	}
	if (out)
		*out = p;
	return MSB_OK;
}

/* The lock is not part of what a const loader promises to keep unchanged. */
static pthread_mutex_t *loader_lock(const msb_loader *loader)
{
	return &((msb_loader *)loader)->lock;
}

size_t msb_loader_count(const msb_loader *loader)
{
	if (!loader)
		return 0;
	pthread_mutex_lock(loader_lock(loader));
	size_t len = loader->len;
	pthread_mutex_unlock(loader_lock(loader));
	return len;
}

const msb_plugin *msb_loader_at(const msb_loader *loader, size_t i)
{
	if (!loader)
		return NULL;
	/* The array may be reallocated by a load; the plugin it points at never moves. */
	pthread_mutex_lock(loader_lock(loader));
	const msb_plugin *p = i < loader->len ? loader->plugins[i] : NULL;
	pthread_mutex_unlock(loader_lock(loader));
	return p;
}

const char *msb_plugin_name(const msb_plugin *plugin)
{
	return plugin->desc->name;
}

const char *msb_plugin_file(const msb_plugin *plugin)
{
	return plugin->file;
}

msb_isolation msb_plugin_isolation(const msb_plugin *plugin)
{
	return plugin->isolation;
}

const struct msb_backend_v27 *msb_plugin_descriptor(const msb_plugin *plugin)
{
	return plugin->desc;
}

const msb_effective_declarations *msb_plugin_declarations(const msb_plugin *plugin)
{
	return &plugin->decl;
}
