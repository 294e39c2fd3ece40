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

#include "loader_elf.h"

/* What the plugin file's own .dynsym says, read before dlopen (loader_validate.c). */
typedef struct msb_plugin_symbols {
	bool has_descriptor;
	msb_elf_symbol descriptor;           /* its name is not kept (it pointed into the file) */
	unsigned other_abi;                  /* N of an msb_backend_vN (N != 27) it defines, or 0 */
} msb_plugin_symbols;

/* One validated shared object. Owned by its loader; lives until msb_loader_free. */
struct msb_plugin {
	msb_loader *loader;
	void *handle;                        /* dlopen handle; dlclosed by msb_loader_free */
	char *file;                          /* the path it was loaded from, as given */
	const struct msb_backend_v27 *desc;  /* the checked descriptor, inside the object */
	msb_isolation isolation;             /* desc->isolation, parsed */
	msb_effective_declarations decl;     /* desc->declarations, silence rules applied */
	msb_plugin_symbols syms;             /* the file's own symbols (msb_plugin_examine) */
	struct msb_backend_v27 *copy;        /* desc: the descriptor copied out, owned */
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
	unsigned probe_ms;                   /* 0: no probe child (msb_loader_set_probe) */
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
 * Read the plugin file (loader_elf.c) before anything dlopens it: refuses (MSB_E_IMPORT) a
 * file that is not a complete shared object for this machine, and (NOT_PERMITTED) one whose
 * own symbols export a stale bare declaration or no usable descriptor. Fills plugin->syms.
 */
msb_errc msb_plugin_examine(msb_plugin *plugin, msb_error *err);
/*
 * Check an open shared object's descriptor, field by field (loader_validate.c). Fills the
 * plugin's desc, isolation and decl; refuses with MSB_E_BACKEND_NOT_PERMITTED naming `file`
 * and the field or symbol. Does not check name uniqueness: that is the loader's. The
 * descriptor is found at the address the file's own symbol gives (never through dlsym's
 * dependency chain) and copied out as bytes before any field of it is read.
 */
msb_errc msb_plugin_validate(msb_plugin *plugin, msb_error *err);
/*
 * dlopen `plugin->file` and validate it in a short-lived child first (loader_probe.c), so
 * that a constructor that exits, crashes, writes to stdout/stderr or hangs costs a refusal
 * (MSB_E_IMPORT naming what happened), never the host. Gives the child `timeout_ms`.
 */
msb_errc msb_plugin_probe(msb_plugin *plugin, unsigned timeout_ms, msb_error *err);
/*
 * Write `n` untrusted bytes into `out` (NUL-terminated, at most `size`) with anything but
 * printable ASCII, '\\' and '\'' as \xNN: a name or output quoted in a refusal can forge no
 * line and hide no byte.
 */
void msb_plugin_escape(const char *bytes, size_t n, char *out, size_t size);
/*
 * What a backend operation `op` answered, made sane for the host: a success's leftover
 * message dropped (never leaked); a failure with no code in `err` given rc; a code no SDK
 * defines (in rc or err) turned into MSB_E_BACKEND naming the number. Returns the code.
 */
msb_errc msb_backend_result(const char *op, msb_errc rc, msb_error *err);
/* dlopen the examined file in this process (loader.c); MSB_E_IMPORT with dlerror's words. */
msb_errc msb_plugin_open(msb_plugin *plugin, msb_error *err);

#endif
