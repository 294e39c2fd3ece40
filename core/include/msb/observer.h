/*
 * msb/observer.h — the seed's eight events, delivered to a host's callbacks (host API).
 *
 * A log line is neither structured nor keyed; a deployment asked which conversation reached
 * which host, or what crossed the boundary, answers from records. These are those records,
 * in msb's own vocabulary, joined by the msb_key that addresses a sandbox and by `call`, the
 * id of the tool call an event came from (NULL for what happened outside a call).
 *
 * Three rules a recorder can rely on:
 *   - A refused or failed operation is recorded with the error's NAME ("SandboxUnclean"),
 *     never its message, which can carry a backend's endpoint.
 *   - An observer cannot fail a call: a non-zero return is noted (a warning) and ignored.
 *   - Callbacks arrive from whichever thread served the call, several at once; hand each
 *     event to a thread-safe queue and do no I/O in the callback. Every pointer in an event
 *     is borrowed for the duration of the callback only.
 * A host that registers no observer (NULL) builds no event at all.
 */
#ifndef MSB_OBSERVER_H
#define MSB_OBSERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/backend.h>
#include <msb/types.h>
#include <msb/vocab.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An acquire, served or refused. Always carries a key. */
typedef struct msb_sandbox_acquired {
	const msb_key *key;
	const msb_spec *spec;
	const char *call;        /* NULL outside a call */
	const char *backend;     /* the backend that served, or was routed to; NULL when none was */
	msb_isolation isolation; /* that backend's rung (meaningless when backend is NULL) */
	msb_scope scope;         /* the effective isolation scope */
	const char *refusal;     /* NULL when served; else the error's name, never its message */
	/*
	 * Appended (issue 22): served by adopting a warm-pool entry (msb/pool.h), not a cold
	 * start; false for a refusal and for a sandbox the key already had.
	 */
	bool pooled;
	/*
	 * Appended (issue 21): the content address of the image the sandbox was acquired from
	 * ("sha256:<hex>"), as the backend resolved it just before its acquire; NULL when the
	 * image has none (the host's, qemu's busybox, a configured directory), when the backend
	 * cannot say (its plugin predates the image_digest operation), or when refused before.
	 */
	const char *image_digest;
} msb_sandbox_acquired;

/* A dispose(key) across every registered backend. */
typedef struct msb_sandbox_disposed {
	const msb_key *key;
	const char *call;
	bool failed;               /* some backend reported the delete did not land */
	msb_disposal_code code;    /* the folded, most actionable code when failed */
} msb_sandbox_disposed;

/* A dispose_scope: answered with a count, so it names the conversation, not sandboxes. */
typedef struct msb_scope_disposed {
	const char *scope;
	const char *thread_id;
	const char *call;
	uint64_t disposed;
	bool failed;
	msb_disposal_code code;
} msb_scope_disposed;

/* A backend's own egress decision. Its window spans calls, so `call` is always NULL. */
typedef struct msb_egress_observed {
	const msb_key *key;
	const char *destination; /* guest-chosen: treat as untrusted text */
	bool allowed;
	const char *reason;      /* why a denial was denied; NULL when allowed or not said */
} msb_egress_observed;

/* A host tool called from inside a sandbox (emitted by the host-tool registry). */
typedef struct msb_host_tool_called {
	const msb_key *key;      /* may be NULL */
	const char *call;
	const char *tool;
	const char *sink;        /* may be NULL */
	int identity;            /* an msb_identity, or MSB_UNSET */
	const char *outcome;     /* "served", "refused", "failed", "capped" */
	uint64_t response_bytes;
	const char *refusal;     /* the sanitized sentence the guest was answered with: guest-influenced */
} msb_host_tool_called;

/* A file read from the host-side store on a sandbox's behalf. */
typedef struct msb_store_file_read {
	const msb_key *key;      /* may be NULL */
	const char *call;
	const char *name;
	uint64_t bytes;
	bool found;
} msb_store_file_read;

/* A collect_outputs run, landed or refused part-way. */
typedef struct msb_outputs_collected {
	const msb_key *key;      /* may be NULL */
	const char *call;
	const char *kind;
	size_t files;
	uint64_t bytes;
	const char *refusal;     /* NULL, or the error's name */
} msb_outputs_collected;

/* The end of a tool call: where every call-scoped event joins. `call` is never NULL. */
typedef struct msb_tool_call_ended {
	const char *call;
	const char *tool;
	const msb_key *const *keys; /* every key the call touched: acquired, refused, or read under */
	size_t n_keys;
	const char *error;          /* NULL when it returned; else the error's name */
} msb_tool_call_ended;

/*
 * The callbacks table. Callers allocate it, so it carries its size: start from
 * MSB_OBSERVER_INIT and set what you want; a NULL callback is an event not wanted.
 * A non-zero return is a failure of the observer, logged and never propagated.
 */
typedef struct msb_observer {
	uint32_t struct_size;
	void *ctx;
	int (*sandbox_acquired)(void *ctx, const msb_sandbox_acquired *event);
	int (*sandbox_disposed)(void *ctx, const msb_sandbox_disposed *event);
	int (*scope_disposed)(void *ctx, const msb_scope_disposed *event);
	int (*egress_observed)(void *ctx, const msb_egress_observed *event);
	int (*host_tool_called)(void *ctx, const msb_host_tool_called *event);
	int (*store_file_read)(void *ctx, const msb_store_file_read *event);
	int (*outputs_collected)(void *ctx, const msb_outputs_collected *event);
	int (*tool_call_ended)(void *ctx, const msb_tool_call_ended *event);
} msb_observer;

#define MSB_OBSERVER_INIT { (uint32_t)sizeof(msb_observer), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL }

/*
 * Deliver one event. Each returns what the callback returned (0 when there is none, or the
 * observer is NULL, or its struct_size predates the field) and never fails anything: a
 * non-zero answer is reported on stderr with the event's name and otherwise ignored.
 */
int msb_observer_sandbox_acquired(const msb_observer *o, const msb_sandbox_acquired *event);
int msb_observer_sandbox_disposed(const msb_observer *o, const msb_sandbox_disposed *event);
int msb_observer_scope_disposed(const msb_observer *o, const msb_scope_disposed *event);
int msb_observer_egress_observed(const msb_observer *o, const msb_egress_observed *event);
int msb_observer_host_tool_called(const msb_observer *o, const msb_host_tool_called *event);
int msb_observer_store_file_read(const msb_observer *o, const msb_store_file_read *event);
int msb_observer_outputs_collected(const msb_observer *o, const msb_outputs_collected *event);
int msb_observer_tool_call_ended(const msb_observer *o, const msb_tool_call_ended *event);

/*
 * The msb_host to open backends with, so that a backend reading its own egress enforcement
 * reports through `observer` (EgressObserved). Fills struct_size, ctx (= observer), log
 * (stderr) and egress_observed. `observer` may be NULL (nothing is reported) and must
 * outlive every backend opened with the host. The config layer builds one of these before
 * it opens backends and hands the same observer to the router.
 */
void msb_host_init(msb_host *host, const msb_observer *observer);

/*
 * One served acquire as a value rather than an event: the posture that held, never the
 * payload (no labels, no key). Retrieved with msb_sandbox_effective_state(); strings are
 * owned by the sandbox handle.
 */
typedef struct msb_effective_state {
	const char *backend;
	msb_isolation isolation;
	msb_scope scope;
	msb_egress egress;
	const char *const *egress_allow; /* NULL-terminated; never NULL (may be empty) */
	msb_set capabilities_asked;      /* the spec's requires */
	msb_set capabilities_declared;   /* the backend's */
	const char *call;                /* the call the acquire was made under; NULL outside one */
	/* Every tool the sealed host-tool registry was carrying (NULL-terminated; never NULL).
	 * The router knows no registry and leaves it empty; a tool session fills it. */
	const char *const *host_tools;
	/* Appended (issue 21): the image's content address, exactly as SandboxAcquired's. */
	const char *image_digest;
} msb_effective_state;

#ifdef __cplusplus
}
#endif
#endif
