/*
 * msb/backend.h — the plugin contract, ABI 27.
 *
 * A backend is a shared object exporting one constant data symbol, `msb_backend_v27`, of
 * type `struct msb_backend_v27`. Write it with MSB_BACKEND_DEFINE(), which fills the magic,
 * the ABI version and the struct's size so they cannot be forgotten:
 *
 *     MSB_BACKEND_DEFINE(
 *         .name = "mine",
 *         .isolation = "container",
 *         .declarations = {
 *             .capabilities = MSB_WORDS("exec", "files_in", "files_out"),
 *             .egress_modes = MSB_WORDS("closed"),
 *         },
 *         .init = mine_init, .fini = mine_fini,
 *         .acquire = mine_acquire, .dispose = mine_dispose, .dispose_scope = mine_dispose_scope,
 *         .release = mine_release, .exec = mine_exec, .write_file = mine_write_file,
 *         .reclaim = mine_reclaim,
 *     );
 *
 * The host checks magic, abi_version and struct_size before it reads any other field, and
 * refuses a plugin built against another SDK naming both versions. Fields are only ever
 * appended (SQLite's iVersion rule): struct_size tells a newer host which ones exist.
 *
 * What the loader refuses at dlopen time, naming the file and the field (doc/writing-a-backend.md
 * has the full list and the reasons): a missing descriptor; wrong magic/version/size; any of
 * the pre-v27 bare declaration symbols (msb_backend_capabilities, msb_backend_limits,
 * msb_backend_egress_modes, msb_backend_os_families) even beside a valid descriptor, because a
 * stray bare declaration is read by nothing and silently replaced by that field's default; an
 * unknown rung (the retired "process" included), egress mode, capability, OS family or scope;
 * a set with a duplicate; a missing mandatory operation; a declared capability whose
 * operation is absent.
 */
#ifndef MSB_BACKEND_H
#define MSB_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/background.h>
#include <msb/error.h>
#include <msb/node.h>
#include <msb/stream.h>
#include <msb/types.h>
#include <msb/vocab.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MSB_BACKEND_MAGIC 0x21627367u /* "msb!" read as little-endian bytes, plus a salt */
#define MSB_ABI_VERSION 27u
#define MSB_BACKEND_SYMBOL "msb_backend_v27"
/*
 * A backend name is 1 to MSB_BACKEND_NAME_MAX bytes of [a-z0-9_-]: a word sandbox.yaml can
 * match and no terminal or log line can be fooled by. Anything else is refused at load.
 */
#define MSB_BACKEND_NAME_MAX 64

/* A NULL-terminated word list, for a declaration field. */
#define MSB_WORDS(...) ((const char *const[]){ __VA_ARGS__, NULL })
/* An empty set, stated: distinct from leaving the field NULL (unstated). */
#define MSB_WORDS_NONE ((const char *const[]){ NULL })

/*
 * The six optional declarations. Every field is a pointer so that "not stated" (NULL) is
 * distinct from "stated empty" (MSB_WORDS_NONE), because each field's silence rule differs:
 *
 *   capabilities      unstated reads as {exec, files_in}: what the protocol already obliges
 *   limits            unstated reads as the default ceilings: a bigger ask is refused
 *   egress_modes      unstated reads as {}: a backend that states nothing enforces nothing,
 *                     and every spec is refused
 *   os_families       unstated reads as {}: no answer, refusing only a spec that asks
 *   isolation_scopes  unstated reads as {conversation}: the get-or-create every backend does
 *   observes_egress   unstated reads as false
 *
 * Words are strings (not enum values) so that a word this host does not know is refused at
 * load by name, rather than read as whatever integer it happened to be.
 */
typedef struct msb_declarations {
	const char *const *capabilities;
	const msb_sandbox_limits *limits;
	const char *const *egress_modes;
	const char *const *os_families;
	const char *const *isolation_scopes;
	const bool *observes_egress;
} msb_declarations;

/*
 * What the host hands a backend at init: a way to log, and a way to report what its egress
 * enforcement decided (EgressObserved), for backends that can read their own enforcement.
 * Both may be called from any thread. struct_size is checked like the descriptor's.
 */
typedef enum msb_log_level { MSB_LOG_DEBUG = 0, MSB_LOG_INFO, MSB_LOG_WARNING, MSB_LOG_ERROR } msb_log_level;

typedef struct msb_host {
	uint32_t struct_size;
	void *ctx;
	void (*log)(void *ctx, msb_log_level level, const char *message);
	void (*egress_observed)(void *ctx, const msb_key *key, const char *destination, bool allowed);
	/*
	 * Appended: the same report with why a denial was denied (`reason` NULL when allowed).
	 * A backend calls it when struct_size covers it, else egress_observed.
	 */
	void (*egress_decided)(void *ctx, const msb_key *key, const char *destination, bool allowed,
			       const char *reason);
} msb_host;

/* Opaque handles: each plugin defines what they point at. */
typedef struct msb_backend_instance msb_backend_instance;
typedef struct msb_sandbox_handle msb_sandbox_handle;

struct msb_backend_v27 {
	/* Checked first, before any other field is read. */
	uint32_t magic;
	uint32_t abi_version;
	uint32_t struct_size;

	/* The backend's name as sandbox.yaml refers to it; unique among loaded plugins. */
	const char *name;
	/* Its rung on the isolation ladder, as a word: "none" … "vm". */
	const char *isolation;
	/* What it claims; see the silence rules above. */
	msb_declarations declarations;

	/* ---- backend operations ------------------------------------------------------- */

	/*
	 * Mandatory. Build an instance from the backend entry's `config:` node (NULL when the
	 * entry has none). Refuse unknown keys (msb_node_check_keys) — a typo must not read as
	 * "not stated".
	 */
	msb_errc (*init)(const msb_node *config, const msb_host *host, msb_backend_instance **self,
			 msb_error *err);
	/* Mandatory. Release the instance (not its sandboxes: those outlive the process). */
	void (*fini)(msb_backend_instance *self);
	/*
	 * Optional. The declarations this instance holds, when its config narrows what the
	 * descriptor states (a backend with no egress proxy configured declares {closed}
	 * alone). Validated exactly as the descriptor's are. NULL: the descriptor's.
	 */
	const msb_declarations *(*instance_declarations)(msb_backend_instance *self);
	/*
	 * Mandatory. Return a running sandbox for (key, spec->kind), creating it if needed. Safe
	 * under concurrent callers: one sandbox per (key, kind) however many race, across
	 * processes where the engine outlives the caller.
	 */
	msb_errc (*acquire)(msb_backend_instance *self, const msb_key *key, const msb_spec *spec,
			    msb_sandbox_handle **sandbox, msb_error *err);
	/*
	 * Mandatory. Delete every kind's sandbox for `key`. Best-effort and never fails the
	 * caller, but truthful: return true and fill `failure` when the delete is known not to
	 * have landed; false means nothing was reported (not that it provably happened).
	 */
	bool (*dispose)(msb_backend_instance *self, const msb_key *key, msb_disposal_failure *failure);
	/* Mandatory. Delete every sandbox of (scope, thread_id); count what went, say what did not. */
	void (*dispose_scope)(msb_backend_instance *self, const char *scope, const char *thread_id,
			      msb_scope_purge *purge);

	/* ---- sandbox operations ------------------------------------------------------- */
	/*
	 * Paths are POSIX-shaped and relative to `working_directory` (a guest path). Each file
	 * operation confines the path to it: refusing escape, a symlinked parent, landing on a
	 * symlink and the working directory itself (sdk/include/msb/confine.h does this for a
	 * backend whose files are reachable from the host).
	 */

	/* Mandatory. Drop the host's handle; the sandbox itself lives on until disposed. */
	void (*release)(msb_sandbox_handle *sandbox);
	/* exec capability. */
	msb_errc (*exec)(msb_sandbox_handle *sandbox, const msb_exec_request *req,
			 msb_exec_result *res, msb_error *err);
	/*
	 * run_code capability. The timeout is wall-clock from this call: a deadline that expires
	 * before the program starts is MSB_E_QUEUED_TIMEOUT, not a plain timeout.
	 */
	msb_errc (*run_code)(msb_sandbox_handle *sandbox, const char *code, double timeout,
			     msb_exec_result *res, msb_error *err);
	/* files_in capability. Atomic: a reader sees the old file or the new, never half. */
	msb_errc (*write_file)(msb_sandbox_handle *sandbox, const char *path, const void *data,
			       size_t len, const char *working_directory, msb_error *err);
	/*
	 * files_out capability. lstat-like: a symlink is described as one, never followed.
	 * *found is false when nothing is there (not an error).
	 */
	msb_errc (*stat_file)(msb_sandbox_handle *sandbox, const char *path,
			      const char *working_directory, msb_entry *entry, bool *found,
			      msb_error *err);
	/* files_out capability. Refuses (never truncates) a file over max_bytes. */
	msb_errc (*read_file)(msb_sandbox_handle *sandbox, const char *path,
			      const char *working_directory, uint64_t max_bytes, msb_buf *out,
			      msb_error *err);
	/* files_list capability. Symlinks listed as symlinks. */
	msb_errc (*list_dir)(msb_sandbox_handle *sandbox, const char *path,
			     const char *working_directory, msb_entry_list *out, msb_error *err);
	/* files_delete capability. */
	msb_errc (*remove)(msb_sandbox_handle *sandbox, const char *path,
			   const char *working_directory, bool recursive, msb_error *err);
	/*
	 * Mandatory, gated by nothing. Remove `directory` (absolute, created by the caller under
	 * `working_directory` with an unguessable name) and everything under it. A directory
	 * that is not there is success; anything else is an error the caller escalates.
	 * `working_directory` says where it sits; it is not a place to run the removal from.
	 */
	msb_errc (*reclaim)(msb_sandbox_handle *sandbox, const char *directory,
			    const char *working_directory, double timeout, msb_error *err);

	/* ---- appended operations (issue 23): commands that talk while they run --------- */
	/*
	 * Everything above is the descriptor as ABI 27 first shipped it
	 * (MSB_BACKEND_V27_BASE_SIZE bytes); a plugin built against that header has a smaller
	 * struct_size and keeps loading. The host reads a field below only when the plugin's
	 * struct_size covers it (MSB_BACKEND_HAS) and it is non-NULL; otherwise a call that
	 * needs it is refused naming the operation and the plugin. Keep appended operations
	 * together, in this order.
	 */

	/*
	 * Optional (exec capability). exec, with stdout and stderr delivered to
	 * stream->on_output as produced, stdin read from stream->stdin_fd as the command runs
	 * and stream->env added (msb/stream.h says what stays exactly as exec's).
	 */
	msb_errc (*exec_stream)(msb_sandbox_handle *sandbox, const msb_exec_request *req,
				const msb_exec_stream *stream, msb_exec_result *res, msb_error *err);

	/* ---- appended operations (issue 23, background commands) ---------------------- */
	/*
	 * Optional (exec capability), all four or none (msb/background.h says what they
	 * mean). A plugin built before these were appended (struct_size ending at
	 * exec_stream) keeps loading; a background call to it is refused naming the
	 * operation and the plugin.
	 *
	 * bg_start: start req->argv (req->max_output the ring per stream, req->timeout its
	 * lifetime, 0: none) with `env` added, and fill *started, its id above all.
	 */
	msb_errc (*bg_start)(msb_sandbox_handle *sandbox, const msb_exec_request *req,
			     const char *const *env, msb_bg_status *started, msb_error *err);
	/* The output held from the offsets asked, waiting as rq says; an unknown id is
	 * MSB_E_NOT_FOUND. */
	msb_errc (*bg_read)(msb_sandbox_handle *sandbox, const char *id, const msb_bg_read *rq,
			    msb_bg_output *out, msb_error *err);
	/* Send `signal` to the command's process group; one that ended is MSB_E_VALUE. */
	msb_errc (*bg_signal)(msb_sandbox_handle *sandbox, const char *id, int signal,
			      msb_error *err);
	/* Every background command the sandbox knows, running or ended, oldest first. */
	msb_errc (*bg_list)(msb_sandbox_handle *sandbox, msb_bg_list *out, msb_error *err);
	/* ---- appended operations (issue 22): warm pools ------------------------------- */
	/*
	 * Optional. Make the running sandbox of (`entry`, spec->kind) — one a pool started
	 * ahead under a pool key — the sandbox of (`key`, spec->kind), atomically, and hand it
	 * out as acquire would: it takes the key's identity wherever the backend keeps one
	 * (state-dir name, metadata, labels), so dispose(key) reaches it and nothing addresses
	 * it under `entry` again. Safe under concurrent callers across processes: two adopts of
	 * one entry never both succeed. Refused, leaving nothing of `key` behind, when `entry`
	 * has no live sandbox (MSB_E_NOT_FOUND: gone, claimed, or dead), when it no longer is
	 * what `spec` would start (MSB_E_VALUE: stale — an image re-imported under its name).
	 * A refused entry is disposed by the host. When `key` already has a sandbox (started by
	 * another process, say) it returns MSB_OK with *sandbox NULL and leaves the entry
	 * untouched: the host lists it again and acquires the key's own.
	 * A backend without it serves no pool: a config asking for one is refused at load.
	 */
	msb_errc (*adopt)(msb_backend_instance *self, const msb_key *entry, const msb_key *key,
			  const msb_spec *spec, msb_sandbox_handle **sandbox, msb_error *err);
	/* ---- appended operations (issue 22): snapshots, the `snapshot` capability ------ */
	/*
	 * A backend that declares `snapshot` has all four (the loader refuses it otherwise);
	 * one that cannot snapshot declares nothing and a spec requiring it is refused at route
	 * time. `name` is [A-Za-z0-9._-]{1,64}, not starting with '.'; the backend refuses
	 * anything else (MSB_E_VALUE).
	 *
	 * snapshot_save: save the running sandbox's whole state (memory, files, running
	 * processes) under `name` (MSB_E_VALUE if taken); the sandbox runs on.
	 * snapshot_start: acquire for `key` a NEW sandbox that is a fork of snapshot `name`:
	 * its files and processes those of the source at save time, its identity its own (a
	 * key whose sandbox is live is refused: a fork is never a get). MSB_E_VALUE: no such
	 * snapshot.
	 * snapshot_list: the names, each followed by '\n', appended to `out`.
	 * snapshot_remove: delete snapshot `name` (MSB_E_VALUE: none such).
	 */
	msb_errc (*snapshot_save)(msb_sandbox_handle *sandbox, const char *name, msb_error *err);
	msb_errc (*snapshot_start)(msb_backend_instance *self, const msb_key *key,
				   const msb_spec *spec, const char *name, msb_sandbox_handle **out,
				   msb_error *err);
	msb_errc (*snapshot_list)(msb_backend_instance *self, msb_buf *out, msb_error *err);
	msb_errc (*snapshot_remove)(msb_backend_instance *self, const char *name, msb_error *err);
	/* ---- appended (issue 21): the image a sandbox runs ------------------------------ */
	/*
	 * Optional declaration. The only images this backend can run, when it can run only
	 * some (NULL-terminated names; "host" is the host's own filesystem): a spec naming any
	 * other is refused at route time with SandboxCapabilityNotSupported, before a backend
	 * is asked to start it, and under per_spec the next backend is tried. A spec naming no
	 * image passes (it asks for the backend's default). NULL: unstated — any image, which
	 * the backend resolves (and may refuse) at acquire. The process backend states {host}.
	 */
	const char *const *images;
	/*
	 * Optional. The content address a sandbox of `spec` starts from if acquired now:
	 * "sha256:<64 hex>" for a store image, "" for an image with none (a built-in one, a
	 * configured directory, or one the backend cannot resolve — acquire refuses that).
	 * The router asks before every acquire: a cached sandbox of another digest is not
	 * served (the backend's acquire is called again and replaces it), and the digest is
	 * what EffectiveState and SandboxAcquired report. `size` is at least
	 * MSB_IMAGE_DIGEST_SIZE. A failure fails the acquire. NULL: no digest is reported.
	 */
	msb_errc (*image_digest)(msb_backend_instance *self, const msb_spec *spec, char *out,
				 size_t size, msb_error *err);
};

/* Room for "sha256:" + 64 hex digits and the NUL: what image_digest is handed. */
#define MSB_IMAGE_DIGEST_SIZE 72

/* The size of the descriptor as ABI 27 first shipped it: what the loader requires at least. */
#define MSB_BACKEND_V27_BASE_SIZE \
	(offsetof(struct msb_backend_v27, reclaim) + sizeof(((struct msb_backend_v27 *)0)->reclaim))
/* Whether descriptor `d` (a pointer) is large enough to hold `field`, appended later. */
#define MSB_BACKEND_HAS(d, field) \
	((d)->struct_size >= offsetof(struct msb_backend_v27, field) + sizeof((d)->field))
/* An appended operation of descriptor `d`: the function, or NULL when absent or unset. */
#define MSB_BACKEND_OP(d, field) (MSB_BACKEND_HAS(d, field) ? (d)->field : NULL)

#if defined(__GNUC__)
#define MSB_EXPORT __attribute__((visibility("default")))
#else
#define MSB_EXPORT
#endif

/* Define this plugin's descriptor. The arguments are designated initialisers. */
#define MSB_BACKEND_DEFINE(...)                                                    \
	MSB_EXPORT extern const struct msb_backend_v27 msb_backend_v27;            \
	const struct msb_backend_v27 msb_backend_v27 = {                           \
		.magic = MSB_BACKEND_MAGIC,                                        \
		.abi_version = MSB_ABI_VERSION,                                    \
		.struct_size = (uint32_t)sizeof(struct msb_backend_v27),           \
		__VA_ARGS__                                                        \
	}

#ifdef __cplusplus
}
#endif
#endif
