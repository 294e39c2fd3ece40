/*
 * plugin_internal.h — what a loaded plugin, the loader and an opened backend are, inside
 * libmsb. Private to core/lib: the loader fills these, the router reads msb_backend directly
 * (it calls the ops on the hot path, where an accessor per field would be noise). Nothing
 * outside core/lib may include this file; the public view is msb/loader.h.
 *
 * Stable: fields are only ever appended.
 */
#ifndef MSB_PLUGIN_INTERNAL_H
#define MSB_PLUGIN_INTERNAL_H

#include <pthread.h>
#include <stddef.h>

#include <msb/backend.h>
#include <msb/loader.h>

/* One validated shared object. Owned by its loader; lives until msb_loader_free. */
struct msb_plugin {
	msb_loader *loader;
	void *handle;                        /* dlopen handle; dlclosed by msb_loader_free */
	char *file;                          /* the path it was loaded from, as given */
	const struct msb_backend_v27 *desc;  /* the checked descriptor, inside the object */
	msb_isolation isolation;             /* desc->isolation, parsed */
	msb_effective_declarations decl;     /* desc->declarations, silence rules applied */
};

/*
 * The set of loaded plugins, in load order; backend names are unique within it. `lock`
 * guards plugins/len/cap: msb_loader_load takes it only to check the name and append,
 * never across dlopen or validation, so one slow plugin's constructors stall no other load.
 */
struct msb_loader {
	msb_plugin **plugins;
	size_t len;
	size_t cap;
	pthread_mutex_t lock;
};

/*
 * One initialised backend. `ops` and `self` are what the router calls: ops->acquire(self, …).
 * `decl` is final: the plugin's effective declarations, narrowed by the instance's own
 * instance_declarations() and then by the sandbox.yaml entry's `declarations:`.
 */
struct msb_backend {
	const msb_plugin *plugin;
	const struct msb_backend_v27 *ops;   /* == plugin->desc */
	msb_backend_instance *self;          /* what ops->init returned; ops->fini releases it */
	msb_effective_declarations decl;
	const char *name;                    /* == ops->name; valid while the plugin is loaded */
	msb_isolation isolation;             /* == plugin->isolation */
	msb_host host;                       /* the host the backend was given (copied) */
};

/*
 * Check an open shared object's descriptor, field by field (loader_validate.c). Fills the
 * plugin's desc, isolation and decl; refuses with MSB_E_BACKEND_NOT_PERMITTED naming `file`
 * and the field or symbol. Does not check name uniqueness: that is the loader's.
 */
msb_errc msb_plugin_validate(msb_plugin *plugin, msb_error *err);

#endif
