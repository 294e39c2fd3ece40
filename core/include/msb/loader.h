/*
 * msb/loader.h — loading backend plugins and opening backends from them (host API).
 *
 * A *plugin* is a validated shared object: dlopen'ed (RTLD_NOW | RTLD_LOCAL), its
 * msb_backend_v27 descriptor checked field by field before anything of it runs beyond its
 * constructors. A *backend* is a plugin initialised from a sandbox.yaml entry's `config:`,
 * with its effective declarations computed once, each unstated field read by its own silence
 * rule, then narrowed (never widened) by the entry's `declarations:`.
 */
#ifndef MSB_LOADER_H
#define MSB_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#include <msb/backend.h>
#include <msb/error.h>
#include <msb/node.h>
#include <msb/types.h>
#include <msb/vocab.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which declaration fields a plugin left unstated (bits of msb_effective_declarations.unstated). */
enum {
	MSB_DECL_CAPABILITIES = 1u << 0,
	MSB_DECL_LIMITS = 1u << 1,
	MSB_DECL_EGRESS_MODES = 1u << 2,
	MSB_DECL_OS_FAMILIES = 1u << 3,
	MSB_DECL_ISOLATION_SCOPES = 1u << 4,
	MSB_DECL_OBSERVES_EGRESS = 1u << 5,
};

/* Declarations after the silence rules: every field has a value; `unstated` says which were read by default. */
typedef struct msb_effective_declarations {
	msb_set capabilities;
	msb_sandbox_limits limits;
	msb_set egress_modes;
	msb_set os_families;
	msb_set isolation_scopes;
	bool observes_egress;
	unsigned unstated;
} msb_effective_declarations;

/*
 * Validate a declarations object and compute its effective form. `what` names the object
 * in messages ("plugin ./x.so: declarations"). Refuses unknown words and duplicates
 * (MSB_E_VALUE, naming `what`.field and the word; callers recode it as their refusal).
 * A NULL `decl` states nothing. A zero transfer ceiling is accepted: nothing may cross.
 */
msb_errc msb_declarations_resolve(const msb_declarations *decl, const char *what,
				  msb_effective_declarations *out, msb_error *err);
/*
 * Refuse `narrow` when it states anything wider than `base` (a capability, mode, family or
 * scope `base` lacks, a ceiling above base's, observes_egress true over false); otherwise
 * write the narrowed result to `out`. Fields `narrow` leaves unstated keep `base`'s value.
 * Refusals are MSB_E_VALUE naming `what`.field and the widening value; `out` is written only
 * on success (it may be `base` itself). A field `narrow` states is cleared from `unstated`.
 */
msb_errc msb_declarations_narrow(const msb_effective_declarations *base,
				 const msb_declarations *narrow, const char *what,
				 msb_effective_declarations *out, msb_error *err);

typedef struct msb_plugin msb_plugin;
typedef struct msb_loader msb_loader;

msb_errc msb_loader_new(msb_loader **out, msb_error *err);
/*
 * Probe-load every later plugin in a short-lived child first: the child dlopens and
 * validates it and reports back over a pipe; a child that exits or is killed while loading,
 * writes to stdout or stderr, or is not done within `timeout_ms`, is a refusal
 * (MSB_E_IMPORT) naming what happened, and the host never dlopens that plugin. 0 turns it
 * off (the default of the library; the msb command turns it on). It costs one fork per
 * plugin file. Call it before loads start: a child forked while another thread is inside
 * the dynamic linker may deadlock there and is then refused at its time bound.
 */
#define MSB_LOADER_PROBE_TIMEOUT_MS 10000u
void msb_loader_set_probe(msb_loader *loader, unsigned timeout_ms);
/*
 * dlclose every plugin. Every backend opened from them must have been closed first, and no
 * other call on `loader` may be running.
 */
void msb_loader_free(msb_loader *loader);
/*
 * Load and validate one plugin file. Before dlopen the file is read (bounded, never mapped)
 * and must be a regular, complete ELF shared object for this machine and word size: else
 * MSB_E_IMPORT naming what it is (truncated, a FIFO, a directory, built for AArch64, not
 * ELF, an executable…). Its descriptor and the stale bare symbols are looked up in the
 * object's own dynamic symbol table, never in its dependencies; the descriptor must be a
 * data object at least struct_size bytes long, and its name a word of [a-z0-9_-]{1,64}.
 * Other refusals are MSB_E_BACKEND_NOT_PERMITTED naming the file and the field, or
 * MSB_E_IMPORT when dlopen itself fails; a second plugin declaring a backend name already
 * loaded is refused naming both files. The plugin belongs to `loader`.
 *
 * Thread-safe: several threads may load into one loader at once, beside msb_loader_count
 * and msb_loader_at. No lock is held across dlopen, so loads of unrelated plugins overlap;
 * when loads of one backend name race, exactly one is kept and every other is refused as a
 * second load would be. Which file wins a race between two files of one name is whichever
 * finished validating first.
 */
msb_errc msb_loader_load(msb_loader *loader, const char *path, const msb_plugin **out,
			 msb_error *err);
/*
 * Resolve a plugin reference as sandbox.yaml writes it: a path (contains '/') is used as it
 * is; a bare name `x` is looked for as `x.so` in each directory of `search_path`
 * (':'-separated), then $MSB_PLUGIN_PATH, then the installed plugin directory.
 * Writes a malloc'ed path to *resolved.
 */
msb_errc msb_plugin_resolve(const char *ref, const char *search_path, char **resolved,
			    msb_error *err);
size_t msb_loader_count(const msb_loader *loader);
const msb_plugin *msb_loader_at(const msb_loader *loader, size_t i);

const char *msb_plugin_name(const msb_plugin *plugin);
const char *msb_plugin_file(const msb_plugin *plugin);
msb_isolation msb_plugin_isolation(const msb_plugin *plugin);
const struct msb_backend_v27 *msb_plugin_descriptor(const msb_plugin *plugin);
/* The descriptor's declarations with the silence rules applied. */
const msb_effective_declarations *msb_plugin_declarations(const msb_plugin *plugin);

typedef struct msb_backend msb_backend;

/*
 * Initialise a backend from `plugin`. `config` is the entry's `config:` node (may be NULL);
 * `narrow` the entry's `declarations:` (may be NULL); `host` may be NULL (logging goes to
 * stderr then). Applies instance_declarations() when the plugin has it, then `narrow`.
 * Refuses: init's own error, prefixed "backend NAME: "; an instance declaring more than its
 * plugin (MSB_E_BACKEND_NOT_PERMITTED); `narrow` widening anything (MSB_E_CONFIG, naming
 * "backend NAME: declarations.FIELD" and the value). On refusal nothing is left open.
 */
msb_errc msb_backend_open(const msb_plugin *plugin, const msb_node *config,
			  const msb_declarations *narrow, const msb_host *host, msb_backend **out,
			  msb_error *err);
void msb_backend_close(msb_backend *backend);

const char *msb_backend_name(const msb_backend *backend);
msb_isolation msb_backend_isolation(const msb_backend *backend);
const msb_plugin *msb_backend_plugin(const msb_backend *backend);
const msb_effective_declarations *msb_backend_declarations(const msb_backend *backend);
/* The plugin's descriptor and the instance, for the router and the conformance kit. */
const struct msb_backend_v27 *msb_backend_ops(const msb_backend *backend);
msb_backend_instance *msb_backend_instance_of(const msb_backend *backend);

#ifdef __cplusplus
}
#endif
#endif
