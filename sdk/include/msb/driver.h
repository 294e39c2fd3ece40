/*
 * msb/driver.h — everything an agent-backed backend shares, so that a plugin is a small
 * *boundary driver* (backend SDK).
 *
 * The driver implements the backend contract's operations (msb/backend.h) once: the state
 * directory, a sandbox's name derived from its key, the per-sandbox directory (agent socket,
 * pid file, work directory, metadata), the file lock that makes acquire one-per-key across
 * processes, reuse of a live agent, truthful disposal, and forwarding every sandbox operation
 * to the guest agent (msb/agent.h). What a plugin supplies is an msb_boundary: how to start
 * the agent inside its boundary and how to tear the boundary down.
 *
 * A plugin using the driver lets the driver own `struct msb_backend_instance` and
 * `struct msb_sandbox_handle`, and writes:
 *
 *     static msb_errc mine_init(const msb_node *config, const msb_host *host,
 *                               msb_backend_instance **self, msb_error *err)
 *     {
 *         msb_boundary b = MSB_BOUNDARY_INIT;
 *         b.name = "mine"; b.start = mine_start; b.stop = mine_stop;
 *         b.ctx = ctx; b.ctx_free = free;  (a ctx holding the plugin's defaults)
 *         b.configure = mine_configure;    (reads the plugin's own keys into ctx)
 *         return msb_driver_init(&b, config, host, MINE_KEYS, self, err);
 *     }
 *     MSB_BACKEND_DEFINE(.name = "mine", .isolation = "container",
 *                        .declarations = MSB_DRIVER_DECLARATIONS,
 *                        .init = mine_init, MSB_DRIVER_OPERATIONS);
 *
 * Layout of the state directory (never built from key strings: they are untrusted):
 *
 *   <state_dir>/<name>.lock     flock'ed around acquire and dispose of <name>
 *   <state_dir>/<name>/meta     scope, thread, agent_dir, call_id, kind (hex-encoded)
 *   <state_dir>/<name>/agent.sock, agent.pid ("pid starttime"), work/
 *
 * <name> is "sk-" + 32 hex digits of SHA-256, each part over the state directory and the
 * length-prefixed key fields: 8 over the scope and thread, 8 over the whole key, 16 over the
 * key and kind. Two keys differing anywhere — including by a separator inside a field —
 * never collide in practice and never produce a path component the key's author chose; the
 * leading parts let dispose and dispose_scope skip every name that cannot match without
 * reading its metadata; and because the state directory is folded in, the name is unique
 * on the host, fit to name the sandbox in an engine's global namespace (a runsc container
 * id) where two configurations with different state directories may use the same keys.
 * (Names of earlier versions, "sb-" + one hash, are still found by dispose.)
 */
#ifndef MSB_DRIVER_H
#define MSB_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <msb/agent.h>
#include <msb/backend.h>
#include <msb/egress.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The common `config:` keys every driver-based backend reads (plugins add their own). */
#define MSB_DRIVER_CONFIG_KEYS                                                         \
	"state_dir", "agent", "run_code", "timeout", "max_output", "rlimit_cpu",      \
		"rlimit_as", "rlimit_nofile", "rlimit_nproc", "rlimit_fsize", "path", \
		"start_timeout", MSB_EGRESS_CONFIG_KEYS

/* What the driver read from `config:`. */
typedef struct msb_driver_config {
	char *state_dir;          /* state_dir, else /run/msb/<backend> as root, else
				     $XDG_RUNTIME_DIR/msb/<backend> (or /tmp/msb-<uid>/<backend>) */
	char *agent_path;         /* agent, else msb_agent_binary() */
	double start_timeout;     /* seconds to wait for a started agent to answer; default 10 */
	msb_agent_config agent;   /* timeout, max_output, run_code, rlimit_*, path; work_dir
				     and work_alias are per sandbox (see msb_driver_agent_argv) */
	msb_egress_config egress; /* egress_*: the allowlist proxy's ports and limits */
} msb_driver_config;

/* One sandbox, as the driver hands it to the boundary callbacks. All paths absolute, host side. */
typedef struct msb_driver_box {
	const char *name;         /* "sk-…" */
	const char *dir;          /* <state_dir>/<name> */
	const char *socket_path;  /* <dir>/agent.sock: where the agent must listen (host view) */
	const char *pid_path;     /* <dir>/agent.pid: the boundary's start writes it (see below) */
	const char *work_dir;     /* <dir>/work: created by the driver */
	const msb_spec *spec;     /* NULL in stop (disposal knows no spec) */
	const msb_driver_config *config;
	/*
	 * In start only: where a start that has already had its agent's HELLO answered (it
	 * made the listening socket itself, see msb_agent_client_greet_start) leaves that
	 * client. The driver then uses it instead of connecting and waiting. NULL elsewhere.
	 */
	msb_agent_client **greeted;
	/*
	 * In start only, under `egress: allowlist` on a boundary with .egress: the host proxy's
	 * socket, <dir>/egress/px. The boundary makes the directory <dir>/egress reachable at
	 * the same path inside (a bind of that directory, from its own mounts: bwrap, process), and
	 * msb_driver_agent_argv starts the agent's forwarder on it. NULL otherwise.
	 */
	const char *egress_socket;
	/*
	 * Appended (issue 22). In start only, for snapshot_start: the snapshot's directory
	 * (<state_dir>/snapshots/<name>, what the boundary's snapshot_save wrote) the sandbox
	 * must be started as a fork of, instead of fresh. NULL otherwise.
	 */
	const char *from_snapshot;
	/*
	 * Appended (issue 21). In start only: the image config's Env for box->spec (from the
	 * boundary's image_config; NULL: none). msb_driver_agent_argv hands it to the agent.
	 */
	const char *const *image_env;
	/*
	 * Appended (issue 21). In start only: the image config's User for box->spec, from the
	 * boundary's image_user, when has_image_user. msb_driver_agent_argv then hands it to the
	 * agent (--uid/--gid: the agent makes its socket, hands the work directory to that uid
	 * and drops to it before it serves); a boundary that sets the ids itself (bwrap's user
	 * namespace) clears has_image_user in its copy first.
	 */
	bool has_image_user;
	long image_uid, image_gid;
} msb_driver_box;

typedef struct msb_boundary {
	uint32_t struct_size;     /* sizeof(msb_boundary): fields are only ever appended */
	const char *name;         /* the backend's name: default state dir and messages */
	void *ctx;                /* the plugin's own, handed to every callback */
	void (*ctx_free)(void *ctx); /* may be NULL */
	/*
	 * Start the agent inside the boundary, listening on box->socket_path, its work dir
	 * box->work_dir (or the spec's work_dir inside the boundary). Write the pid whose death
	 * means "the boundary is gone" with msb_driver_write_pid before returning. The driver
	 * then waits until the agent answers (config->start_timeout). Failure: stop is called.
	 */
	msb_errc (*start)(void *ctx, const msb_driver_box *box, msb_error *err);
	/*
	 * Tear everything down: the agent, every process it started, mounts, cgroups. The
	 * driver has already asked the agent to SHUTDOWN (when it answered, and unless
	 * pid_ends_all) and afterwards SIGKILLs the recorded pid, waits for it to be gone and
	 * removes the directory; stop is for what only the boundary knows about.
	 * Returns true when it FAILED — the polarity of the backend's dispose (msb/backend.h)
	 * and of every disposal step in the SDK: true, with `failure` saying what was left
	 * behind and why; false when nothing was left that it knows of. A `failure` filled is a
	 * failure whatever the return (so a stop written to the other polarity still reports
	 * what it filled), and the driver then keeps the sandbox's directory for a retry.
	 */
	bool (*stop)(void *ctx, const msb_driver_box *box, msb_disposal_failure *failure);
	/* Optional: whether the boundary is alive beyond its pid (NULL: the pid alone). */
	bool (*alive)(void *ctx, const msb_driver_box *box);
	/*
	 * true when disposal can end everything the sandbox runs without the agent's help: the
	 * recorded pid is the init of a pid namespace that holds it all (the kernel kills the
	 * namespace when it dies), or stop kills it all (by cgroup) and otherwise the recorded
	 * pid's death takes that init with it. Disposal then skips the SHUTDOWN request (a
	 * connection, a HELLO and a kill walk saved): stop, then SIGKILL of the recorded pid.
	 * Leave false when anything could outlive both.
	 */
	bool pid_ends_all;
	/*
	 * Optional: read the plugin's own `config:` keys into ctx, once the driver has checked
	 * every key's name and read the common ones (`driver`). A failure fails the init, and
	 * ctx is freed with the instance.
	 */
	msb_errc (*configure)(void *ctx, const msb_node *config, const msb_driver_config *driver,
			      msb_error *err);
	/*
	 * Appended. Optional: what the sandbox of `spec` is started from, as a string (a store
	 * image's digest, an image root; "" for a built-in image), written beside the sandbox at
	 * its start. A live sandbox of the same key whose recorded identity differs from what
	 * the spec resolves to now (an image re-imported under its name) is not served: it is
	 * torn down and started afresh. A failure fails the acquire.
	 */
	msb_errc (*identity)(void *ctx, const msb_spec *spec, char *out, size_t size,
			     msb_error *err);
	/*
	 * Appended. true when the boundary carries box->egress_socket's directory inside at the same
	 * path and keeps the guest's network to loopback alone: the driver then enforces
	 * `egress: allowlist` through the SDK's proxy (msb/egress.h), reporting every decision,
	 * and the plugin declares MSB_DRIVER_EGRESS_DECLARATIONS.
	 */
	bool egress;
	/*
	 * Appended (issue 22): warm pools. true when a running sandbox survives its directory
	 * being renamed to another key's name — the agent listens on a socket whose inode moves
	 * with the directory, the work dir reached the sandbox by a bind made at start (a bind
	 * follows the directory, not its path) and nothing the boundary keeps outside <dir>
	 * names the old path — so msb_driver_adopt can hand a pool entry to a key. A boundary
	 * that leaves it false serves no pool.
	 */
	bool adoptable;
	/*
	 * Optional, with adoptable: fix up what the boundary keeps outside <dir> that names the
	 * sandbox's old directory `old_dir` (a uid record) after the rename to box->dir. A
	 * failure fails the adoption (the entry is then disposed under its new key).
	 */
	msb_errc (*adopted)(void *ctx, const char *old_dir, const msb_driver_box *box,
			    msb_error *err);
	/*
	 * Appended (issue 22). Optional: save the running sandbox `box`'s whole state into the
	 * directory `snap_dir` (made, empty) so that a start with box->from_snapshot == that
	 * directory forks it; the sandbox runs on. NULL: the driver's snapshot operations
	 * refuse, and the plugin must not declare `snapshot`.
	 */
	msb_errc (*snapshot_save)(void *ctx, const msb_driver_box *box, const char *snap_dir,
				  msb_error *err);
	/*
	 * Appended (issue 21). Optional: the content address of the image a sandbox of `spec`
	 * starts from ("sha256:<hex>"; "" when it has none), for the backend's image_digest
	 * operation (msb/backend.h). NULL: the driver reports none.
	 */
	msb_errc (*image_digest)(void *ctx, const msb_spec *spec, char *out, size_t size,
				 msb_error *err);
	/*
	 * Appended (issue 21). Optional: the image's own Env for a sandbox of `spec` ("K=V"
	 * each, NULL-terminated; NULL: none), set as box->image_env for start, which
	 * msb_driver_agent_argv hands to the agent. The strings live as long as the instance.
	 * A failure (a User the image cannot resolve, say) fails the start.
	 */
	msb_errc (*image_config)(void *ctx, const msb_spec *spec, const char *const **env,
				 msb_error *err);
	/*
	 * Appended (issue 21). Optional: the uid and gid the image's config User names for a
	 * sandbox of `spec` (msb_images_user; both -1: the boundary's default user), set as
	 * box->image_uid/image_gid for start. A failure (a user the image does not define)
	 * fails the start, before anything is started.
	 */
	msb_errc (*image_user)(void *ctx, const msb_spec *spec, long *uid, long *gid,
			       msb_error *err);
} msb_boundary;

#define MSB_BOUNDARY_INIT                                                                  \
	{ (uint32_t)sizeof(msb_boundary), NULL, NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, \
	  false, false, NULL, NULL, NULL, NULL, NULL }

/*
 * Build the instance: check `config`'s keys against MSB_DRIVER_CONFIG_KEYS plus `extra_keys`
 * (the plugin's own, NULL-terminated, may be NULL), read the common ones, create the state
 * directory (0700). Takes ownership of boundary->ctx (freed by ctx_free at fini, and on
 * failure here).
 */
msb_errc msb_driver_init(const msb_boundary *boundary, const msb_node *config,
			 const msb_host *host, const char *const *extra_keys,
			 msb_backend_instance **self, msb_error *err);
/* The parsed config of an instance (for a plugin that needs it outside its callbacks). */
const msb_driver_config *msb_driver_instance_config(const msb_backend_instance *self);
/* The boundary's ctx of an instance (for a plugin wrapping a driver operation). */
void *msb_driver_instance_ctx(const msb_backend_instance *self);

/*
 * The agent's argv for `box`: `mode` "--listen" with the host-view socket (or the guest-view
 * path a boundary maps it to; or "--listen-fd" with the number of a listening socket the
 * boundary made and hands over), the agent config, work dir `work_dir` (guest view; NULL means
 * box->work_dir) and, when `work_alias` is non-NULL, that alias (for a boundary sharing the
 * host filesystem: the process backend passes spec->work_dir). free() the result.
 */
msb_errc msb_driver_agent_argv(const msb_driver_box *box, const char *mode, const char *mode_arg,
			       const char *work_dir, const char *work_alias, int ready_fd,
			       char ***argv, msb_error *err);
/*
 * For a boundary that builds its agent config itself (msb_agent_config_argv): fill the
 * egress fields from box->egress_socket, the spec's names and the configured ports (nothing
 * when box->egress_socket is NULL). msb_driver_agent_argv does this already.
 */
void msb_driver_egress_agent_config(const msb_driver_box *box, msb_agent_config *c);
/* Record `pid` (with its start time, so a recycled pid is never killed) in box->pid_path. */
msb_errc msb_driver_write_pid(const msb_driver_box *box, pid_t pid, msb_error *err);
/* The pid recorded for `box` when that process still exists (0 when none is). */
pid_t msb_driver_read_live_pid(const msb_driver_box *box);
/* Whether process `pid` exists and is not a zombie (a daemon's reaper may be slow to reap it). */
bool msb_driver_pid_running(pid_t pid);
/*
 * A sandbox's name for (key, kind) in `state_dir`, written into name[36] ("sk-" + 32 hex +
 * NUL): what box->name holds.
 */
void msb_driver_sandbox_name(const char *state_dir, const msb_key *key, const char *kind,
			     char name[36]);

/*
 * The backend operations, with the contract's signatures. acquire of a key whose sandbox is
 * there but dead replaces it when its work dir is empty, and refuses the key with
 * MSB_E_UNCLEAN (SandboxUnclean) while the work dir still holds what it left: only a
 * dispose clears that, so a dispose that did not land stays visible.
 */
void msb_driver_fini(msb_backend_instance *self);
msb_errc msb_driver_acquire(msb_backend_instance *self, const msb_key *key, const msb_spec *spec,
			    msb_sandbox_handle **sandbox, msb_error *err);
bool msb_driver_dispose(msb_backend_instance *self, const msb_key *key,
			msb_disposal_failure *failure);
void msb_driver_dispose_scope(msb_backend_instance *self, const char *scope,
			      const char *thread_id, msb_scope_purge *purge);
void msb_driver_release(msb_sandbox_handle *sandbox);
msb_errc msb_driver_exec(msb_sandbox_handle *sandbox, const msb_exec_request *req,
			 msb_exec_result *res, msb_error *err);
msb_errc msb_driver_run_code(msb_sandbox_handle *sandbox, const char *code, double timeout,
			     msb_exec_result *res, msb_error *err);
msb_errc msb_driver_write_file(msb_sandbox_handle *sandbox, const char *path, const void *data,
			       size_t len, const char *working_directory, msb_error *err);
msb_errc msb_driver_stat_file(msb_sandbox_handle *sandbox, const char *path,
			      const char *working_directory, msb_entry *entry, bool *found,
			      msb_error *err);
msb_errc msb_driver_read_file(msb_sandbox_handle *sandbox, const char *path,
			      const char *working_directory, uint64_t max_bytes, msb_buf *out,
			      msb_error *err);
msb_errc msb_driver_list_dir(msb_sandbox_handle *sandbox, const char *path,
			     const char *working_directory, msb_entry_list *out, msb_error *err);
msb_errc msb_driver_remove(msb_sandbox_handle *sandbox, const char *path,
			   const char *working_directory, bool recursive, msb_error *err);
msb_errc msb_driver_reclaim(msb_sandbox_handle *sandbox, const char *directory,
			    const char *working_directory, double timeout, msb_error *err);
/* Appended operations (msb/backend.h): the streamed exec, one exchange with the agent. */
/* The snapshot operations (issue 22), over the boundary's snapshot_save (driver_snapshot.c). */
msb_errc msb_driver_snapshot_save(msb_sandbox_handle *sandbox, const char *name, msb_error *err);
msb_errc msb_driver_snapshot_start(msb_backend_instance *inst, const msb_key *key,
				   const msb_spec *spec, const char *name, msb_sandbox_handle **out,
				   msb_error *err);
msb_errc msb_driver_snapshot_list(msb_backend_instance *inst, msb_buf *out, msb_error *err);
msb_errc msb_driver_snapshot_remove(msb_backend_instance *inst, const char *name, msb_error *err);
/* The acquire behind both: a fork of `from_dir` when it is not NULL (never a get). */
msb_errc msb_driver_acquire_from(msb_backend_instance *inst, const msb_key *key,
				 const msb_spec *spec, const char *from_dir,
				 msb_sandbox_handle **out, msb_error *err);
msb_errc msb_driver_exec_stream(msb_sandbox_handle *sandbox, const msb_exec_request *req,
				const msb_exec_stream *stream, msb_exec_result *res,
				msb_error *err);
/* The background operations (msb/background.h), through the agent. */
msb_errc msb_driver_bg_start(msb_sandbox_handle *sandbox, const msb_exec_request *req,
			     const char *const *env, msb_bg_status *started, msb_error *err);
msb_errc msb_driver_bg_read(msb_sandbox_handle *sandbox, const char *id, const msb_bg_read *rq,
			    msb_bg_output *out, msb_error *err);
msb_errc msb_driver_bg_signal(msb_sandbox_handle *sandbox, const char *id, int signal,
			      msb_error *err);
msb_errc msb_driver_bg_list(msb_sandbox_handle *sandbox, msb_bg_list *out, msb_error *err);
/*
 * Appended (issue 22): the adopt operation, for a boundary with .adoptable (add
 * `.adopt = msb_driver_adopt` to MSB_BACKEND_DEFINE). Under both sandboxes' locks it checks
 * the entry is live, of this key's kind and of the image identity the spec resolves to now,
 * renames <state_dir>/<entry's name> to <state_dir>/<key's name> (one rename(2): a racing
 * adopt of the same entry finds nothing), rewrites its metadata to the key, and then serves
 * it as acquire does.
 */
msb_errc msb_driver_adopt(msb_backend_instance *self, const msb_key *entry, const msb_key *key,
			  const msb_spec *spec, msb_sandbox_handle **sandbox, msb_error *err);
/* The image's digest, as the boundary's image_digest says ("" without one). */
msb_errc msb_driver_image_digest(msb_backend_instance *self, const msb_spec *spec, char *out,
				 size_t size, msb_error *err);

/* The sandbox's box (paths, name) behind a handle, e.g. for a test or a plugin's own op. */
const msb_driver_box *msb_driver_sandbox_box(const msb_sandbox_handle *sandbox);

/* For a boundary's start and stop around an engine (sdk/agent/driver_boundary.c). */
/* "<dir>/<leaf>", malloc'ed (NULL when out of memory). */
char *msb_driver_path(const char *dir, const char *leaf);
/* The pid an engine wrote to its own pid file (runsc --pid-file, QEMU -pidfile); 0 when none. */
pid_t msb_driver_read_pid_file(const char *path);
/* The last cap-1 bytes of a file (an engine's log or stderr) on one line, for an error message;
 * "" when `path` is NULL or unreadable. */
void msb_driver_file_tail(const char *path, char *out, size_t cap);
/*
 * Wait (config->start_timeout) for the agent's socket in `chan`, a channel directory the
 * sandbox can write, then hard-link it to box->socket_path and check it is a socket of this
 * user's: the host never connects through a directory the guest controls. `backend` names
 * the backend in messages.
 */
msb_errc msb_driver_link_socket(const msb_driver_box *box, const char *backend, const char *chan,
				msb_error *err);

/*
 * Exactly what the driver implements. The guest agent is a POSIX program, so every guest a
 * driver-based backend hands out speaks POSIX paths and argv quoting: os_families is {posix}.
 */
#define MSB_DRIVER_DECLARATIONS                                                          \
	{                                                                                \
		.capabilities = MSB_WORDS("exec", "run_code", "files_in", "files_out",  \
					  "files_list", "files_delete"),                \
		.egress_modes = MSB_WORDS("closed"),                                     \
		.os_families = MSB_WORDS("posix"),                                       \
		.isolation_scopes = MSB_WORDS("conversation", "call"),                   \
	}

/* The same, for a boundary with .egress: allowlist enforced by the SDK's proxy, observed. */
#define MSB_DRIVER_EGRESS_DECLARATIONS                                                   \
	{                                                                                \
		.capabilities = MSB_WORDS("exec", "run_code", "files_in", "files_out",  \
					  "files_list", "files_delete"),                \
		.egress_modes = MSB_WORDS("closed", "allowlist"),                        \
		.os_families = MSB_WORDS("posix"),                                       \
		.isolation_scopes = MSB_WORDS("conversation", "call"),                   \
		.observes_egress = &msb_driver_observes_egress,                          \
	}
extern const bool msb_driver_observes_egress; /* true */

/* Every operation but init, as designated initialisers for MSB_BACKEND_DEFINE. */
#define MSB_DRIVER_OPERATIONS                                                           \
	.fini = msb_driver_fini, .acquire = msb_driver_acquire,                         \
	.dispose = msb_driver_dispose, .dispose_scope = msb_driver_dispose_scope,       \
	.release = msb_driver_release, .exec = msb_driver_exec,                         \
	.run_code = msb_driver_run_code, .write_file = msb_driver_write_file,           \
	.stat_file = msb_driver_stat_file, .read_file = msb_driver_read_file,           \
	.list_dir = msb_driver_list_dir, .remove = msb_driver_remove,                   \
	.reclaim = msb_driver_reclaim, .exec_stream = msb_driver_exec_stream,           \
	.bg_start = msb_driver_bg_start, .bg_read = msb_driver_bg_read,                 \
	.bg_signal = msb_driver_bg_signal, .bg_list = msb_driver_bg_list,               \
	.snapshot_save = msb_driver_snapshot_save,                                      \
	.snapshot_start = msb_driver_snapshot_start,                                    \
	.snapshot_list = msb_driver_snapshot_list,                                      \
	.snapshot_remove = msb_driver_snapshot_remove,                                  \
	.image_digest = msb_driver_image_digest

#ifdef __cplusplus
}
#endif
#endif
