/*
 * msb/pool.h — warm pools: sandboxes started ahead for a spec's blueprint, adopted by an
 * acquire instead of started cold (host API; issue 22).
 *
 * A pool belongs to one router (msb_router_set_pool) and holds, per spec it was told to
 * keep warm (msb_pool_want), up to `size` running sandboxes of that spec's *blueprint*: the
 * backend it routes to, that backend's configuration, and every field of the spec a backend
 * sees (kind, image, work_dir, egress, limits, labels, ...) and msb's version, hashed with
 * SHA-256. An entry
 * is a real sandbox started under a pool key — scope MSB_POOL_SCOPE, thread_id the
 * blueprint's hash, call_id the entry's own random id — and listed in a registry directory
 * shared by every process using the same `dir`:
 *
 *   <dir>/<backend>/<kind-hash>-<blueprint-hash>/e-<entry id>   one ready entry
 *   <dir>/<backend>/<kind-hash>-<blueprint-hash>/.fill          flock'ed by whoever fills
 *
 * An acquire whose spec has a pool claims an entry by unlinking its registry file (exactly
 * one process can: two racing acquires never claim the same entry) and asks the backend to
 * adopt it (msb_backend_v27.adopt): the entry becomes the key's sandbox. A pool never takes
 * a sandbox back — there is no "return": a disposed sandbox is gone, so `call` scope keeps
 * its guarantee. An entry the backend refuses to adopt (dead, stale, claimed) is disposed
 * and the acquire starts cold, as it would without a pool. Entries of a blueprint that no
 * longer is the spec's (the spec or the backend's config changed) are stale: fill and
 * acquire dispose them and never hand them out.
 *
 * A pool is refilled by msb_pool_fill (`msb pool fill`) and, in a long-lived host, by a
 * filler thread (msb_pool_start) woken by every adoption. Entries outlive the process, like
 * every sandbox: msb_pool_drain (`msb pool drain`) disposes them.
 */
#ifndef MSB_POOL_H
#define MSB_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/error.h>
#include <msb/router.h>
#include <msb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The scope of every pool entry's key; refused in a caller's key. */
#define MSB_POOL_SCOPE "msb-pool"
/* The most entries one spec may keep warm. */
#define MSB_POOL_MAX 64u

typedef struct msb_pool msb_pool;

/*
 * A pool over `router`'s backends, its registry under `dir` (NULL: /run/msb/pool as root,
 * else $XDG_RUNTIME_DIR/msb/pool, else /tmp/msb-<uid>/pool), created 0700 by the first fill.
 */
msb_errc msb_pool_new(msb_router *router, const char *dir, msb_pool **out, msb_error *err);
/* Stop the filler (if started) and free the pool. Entries stay: see msb_pool_drain. */
void msb_pool_free(msb_pool *pool);

/*
 * What else decides what a sandbox of backend `backend` is, beyond the spec: its
 * configuration, as text (sandbox.yaml's `config:` entry, serialized). Folded into the
 * blueprint of every spec routed to it, so a changed config makes its entries stale.
 * Call before msb_pool_want.
 */
msb_errc msb_pool_set_backend_blueprint(msb_pool *pool, const char *backend, const char *text,
					msb_error *err);

/*
 * Keep `size` (1..MSB_POOL_MAX) sandboxes of `spec` (copied) warm. Refused (MSB_E_NOT_IMPLEMENTED)
 * when the backend it routes to has no adopt operation (a plugin built before issue 22, or
 * one whose sandboxes cannot change identity); (MSB_E_VALUE) a size out of range, a kind
 * already wanted, `egress: allowlist` (its proxy is bound by the host that starts the
 * sandbox, for the key it starts it under) or a filler already started; the router's own
 * refusal when it would not route the spec at all.
 */
msb_errc msb_pool_want(msb_pool *pool, const msb_spec *spec, unsigned size, msb_error *err);

/* What one blueprint holds (msb_pool_status). */
typedef struct msb_pool_status {
	const char *kind;
	const char *backend;
	char blueprint[17];      /* the first 16 hex digits of its SHA-256 */
	unsigned size;           /* wanted */
	unsigned ready;          /* entries in the registry now */
} msb_pool_status;

/* What a fill or a drain did. */
typedef struct msb_pool_report {
	uint64_t started;        /* entries started and listed */
	uint64_t stale;          /* entries of a changed blueprint disposed */
	uint64_t disposed;       /* entries disposed by a drain */
	uint64_t failed;         /* starts that failed (the first's message in err) */
} msb_pool_report;

size_t msb_pool_count(const msb_pool *pool);
/* The i-th wanted spec's state, read from the registry now. */
msb_errc msb_pool_status_at(msb_pool *pool, size_t i, msb_pool_status *out, msb_error *err);

/*
 * Bring every wanted blueprint to its size, disposing stale entries first. One filler per
 * blueprint at a time across processes (the .fill lock). Returns the first start failure
 * (the rest counted in report->failed).
 */
msb_errc msb_pool_fill(msb_pool *pool, msb_pool_report *report, msb_error *err);
/* Dispose every entry of every wanted kind on its backend, current or stale. */
msb_errc msb_pool_drain(msb_pool *pool, msb_pool_report *report, msb_error *err);

/*
 * Start the background filler: a thread that fills at once, then again after each adoption
 * (and every `interval` seconds, > 0, to retry what failed). A long-lived host (the MCP
 * server) starts it; msb_pool_stop or msb_pool_free ends it, waiting for a start under way.
 */
msb_errc msb_pool_start(msb_pool *pool, double interval, msb_error *err);
void msb_pool_stop(msb_pool *pool);

/*
 * Attach `pool` to `router`, which takes ownership (msb_router_free frees it): every acquire
 * of a wanted spec adopts an entry when one is ready. NULL detaches (and frees the old one).
 */
void msb_router_set_pool(msb_router *router, msb_pool *pool);
/* The router's pool, or NULL. */
msb_pool *msb_router_pool(const msb_router *router);

#ifdef __cplusplus
}
#endif
#endif
