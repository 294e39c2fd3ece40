/*
 * msb/router.h — routing a workload spec to a backend that passes all six checks, or
 * refusing loudly (host API).
 *
 * The checks, in order: denials (capabilities and identities the host forbids), the
 * minimum-isolation floor (the stricter of host and spec), the capability match, the OS
 * family, the transfer ceilings (each direction, all three fields, refused never clamped),
 * the egress mode (exact: refused in both directions) and the isolation scope (the stricter
 * of host and spec). Under `fixed` selection one backend is resolved at construction and
 * every spec is checked against it; under `per_spec` the first registered backend that
 * passes every check serves, and a refusal quotes every backend's own. The route is a pure
 * function of the spec and the declarations, so one spec always reaches the same backend.
 */
#ifndef MSB_ROUTER_H
#define MSB_ROUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/error.h>
#include <msb/loader.h>
#include <msb/observer.h>
#include <msb/sandbox.h>
#include <msb/types.h>
#include <msb/vocab.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum msb_selection { MSB_SELECTION_FIXED = 0, MSB_SELECTION_PER_SPEC } msb_selection;

/* What happens to a sandbox whose cleanup failed: disposed (default), or kept warm. */
typedef enum msb_reclaim_policy { MSB_RECLAIM_DISPOSE = 0, MSB_RECLAIM_KEEP } msb_reclaim_policy;

/*
 * Construction options. Callers allocate this, so it carries its size: initialise with
 * MSB_ROUTER_OPTIONS_INIT and set what you mean; configuring nothing is the production posture.
 */
typedef struct msb_router_options {
	uint32_t struct_size;
	msb_isolation min_isolation;     /* default microvm */
	msb_scope min_isolation_scope;   /* default conversation */
	msb_selection selection;         /* default fixed */
	const char *selected;            /* fixed only: pin a backend by name; NULL: the first */
	msb_set denied_capabilities;
	msb_set denied_identities;
	msb_reclaim_policy reclaim;
	const msb_observer *observer;    /* may be NULL: a host that registers none pays nothing */
	/* Where warnings go (one line each); NULL: stderr. */
	void (*warn)(void *ctx, const char *message);
	void *warn_ctx;
} msb_router_options;

#define MSB_ROUTER_OPTIONS_INIT                                                        \
	{ (uint32_t)sizeof(msb_router_options), MSB_ISO_MICROVM, MSB_SCOPE_CONVERSATION,   \
	  MSB_SELECTION_FIXED, NULL, 0, 0, MSB_RECLAIM_DISPOSE, NULL, NULL, NULL }

typedef struct msb_router msb_router;

/*
 * Build a router over `backends` in registration order (borrowed: they must outlive it).
 * Refuses: `selected` with per_spec; a `selected` name not registered (NoSandboxBackend,
 * listing what is); under fixed, the resolved backend below the floor
 * (SandboxBackendNotPermitted, naming the ladder); under per_spec, nothing clearing the
 * floor. Under per_spec, warns once per registered backend below the floor.
 */
msb_errc msb_router_new(msb_backend *const *backends, size_t n_backends,
			const msb_router_options *options, msb_router **out, msb_error *err);
void msb_router_free(msb_router *router);

/*
 * The whole of a wiring test: run every check against the backend that would serve `spec`
 * and name it in *chosen (NULL, with MSB_OK, when a fixed router has nothing registered:
 * nothing runs). The seed's closed-egress-vs-allowlist-spec warning belongs to the rule
 * 0.19 replaced with a refusal, so neither this nor acquire warns: see router_checks.c.
 */
msb_errc msb_router_ensure_can_serve(msb_router *router, const msb_spec *spec,
				     const msb_backend **chosen, msb_error *err);
/*
 * The refusal class under per_spec (issue 18). When no registered backend serves a spec,
 * the refusal's message quotes every backend's own refusal in registration order, and its
 * code is:
 *   - the code they share, when every backend refused for the same reason (a caller that
 *     branches on SandboxEgressNotEnforced branches the same under fixed and per_spec);
 *   - otherwise the code of the first registered backend that clears the spec's
 *     effective floor — the backend routing prefers, as fixed selection with no pin
 *     resolves to the first registered — because a below-floor backend is never a
 *     candidate and its floor refusal says nothing about why the spec went unserved;
 *   - SandboxBackendNotPermitted when no backend clears that floor.
 * NoSandboxBackend keeps its one meaning: nothing is configured to route to.
 * Each backend's own refusal (its error name) is what msb_router_check_backend gives.
 */
/*
 * Why backend `i` (registration order) would or would not serve `spec` under this router's
 * policy: the denials, then the six checks against that one backend, worded as per_spec
 * words them (a below-floor backend is passed over, never "fallen back" from). MSB_OK when
 * it would serve; MSB_E_VALUE when `i` is out of range.
 */
msb_errc msb_router_check_backend(const msb_router *router, size_t i, const msb_spec *spec,
				  msb_error *err);

/*
 * Get-or-create the sandbox for (key, spec->kind), after the same checks. At `call` scope
 * the key's call_id is part of the sandbox's name (and must be non-empty). A key whose
 * disposal did not land is refused with SandboxUnclean until one does.
 */
msb_errc msb_router_acquire(msb_router *router, const msb_key *key, const msb_spec *spec,
			    msb_sandbox **out, msb_error *err);

/*
 * Ask every registered backend to delete `key`'s sandboxes. Returns true when every
 * backend reported nothing; false with `failure` holding the fold of what was reported.
 */
bool msb_router_dispose(msb_router *router, const msb_key *key, msb_disposal_failure *failure);
/*
 * Purge a conversation across every registered backend. A purge that lands whole reopens
 * every key of the conversation. A backend's purge answers for the conversation, not per
 * key, so when one does not land the router holds closed with SandboxUnclean each key of
 * the conversation it routed to that backend (quoting what it reported), until a disposal
 * of the key lands; a key it routed only to backends whose purge landed stays open.
 */
void msb_router_dispose_scope(msb_router *router, const char *scope, const char *thread_id,
			      msb_scope_purge *purge);
/*
 * The scope guard: run `body(ctx)`, then dispose (scope, thread_id) however body returned,
 * reporting the counts in *purge. Returns body's own return value; the disposal can never
 * mask it.
 */
int msb_router_scope(msb_router *router, const char *scope, const char *thread_id,
		     int (*body)(void *ctx), void *ctx, msb_scope_purge *purge);

/* What became of a sandbox whose cleanup failed (the seed's ReclaimFailure.disposal). */
typedef enum msb_reclaim_outcome {
	MSB_RECLAIM_OUTCOME_DISPOSED = 0, /* disposed, and the disposal landed */
	MSB_RECLAIM_OUTCOME_FAILED,       /* disposal attempted and did not land: the key is unclean */
	MSB_RECLAIM_OUTCOME_KEPT,         /* the host opted down (MSB_RECLAIM_KEEP): left warm */
} msb_reclaim_outcome;

/* "disposed", "failed", "kept". */
const char *msb_reclaim_outcome_name(msb_reclaim_outcome outcome);

/*
 * A call's cleanup did not happen (its guest path was not removed, or a stopped program may
 * have left something running): apply the router's reclaim policy to `key` before the host
 * is told. Under MSB_RECLAIM_DISPOSE (the default) the sandbox is disposed, because acquire
 * is get-or-create and a sandbox left warm hands the next call whatever this one could not
 * take back; a disposal that does not land fills `failure` (may be NULL) and holds the key
 * closed with SandboxUnclean. Under MSB_RECLAIM_KEEP nothing is done. A kind cannot lower it.
 */
msb_reclaim_outcome msb_router_reclaim_failed(msb_router *router, const msb_key *key,
					      msb_disposal_failure *failure);

size_t msb_router_backend_count(const msb_router *router);
const msb_backend *msb_router_backend_at(const msb_router *router, size_t i);
const msb_router_options *msb_router_get_options(const msb_router *router);

/*
 * Key parts read at call time from the host's request context, never taken from input a
 * model can shape. Each callback returns a string that stays valid until the next call.
 */
typedef struct msb_caller_context {
	uint32_t struct_size;
	void *ctx;
	const char *(*scope)(void *ctx);
	const char *(*thread_id)(void *ctx);
	const char *(*agent_dir)(void *ctx);
} msb_caller_context;

/* Read the caller's key now. call_id may be NULL (""). */
msb_errc msb_caller_key(const msb_caller_context *caller, const char *call_id, msb_key *key,
			msb_error *err);

#ifdef __cplusplus
}
#endif
/*
 * Snapshots (issue 22) of every registered backend that declares `snapshot`: list appends
 * "<backend>\t<name>\n" for each to `out`; remove deletes `name` from the backend that has
 * it (MSB_E_VALUE when none has).
 */
msb_errc msb_router_snapshot_list(msb_router *router, msb_buf *out, msb_error *err);
msb_errc msb_router_snapshot_remove(msb_router *router, const char *name, msb_error *err);

#endif
