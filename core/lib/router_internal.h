/*
 * router_internal.h — what a router and an acquired sandbox are, inside libmsb. Shared by
 * router.c (construction), router_checks.c (the six checks), router_acquire.c (the
 * get-or-create table and disposal) and sandbox.c (the host-facing wrappers). Private to
 * core/lib.
 */
#ifndef MSB_ROUTER_INTERNAL_H
#define MSB_ROUTER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <msb/router.h>

#include "plugin_internal.h"

/* Buckets of the get-or-create table: conversations in flight, hashed by key and kind. */
#define ROUTER_BUCKETS 1024u

struct router_entry;
struct router_unclean;

struct msb_router {
	msb_backend **backends;       /* registration order; borrowed backends, owned array */
	size_t n_backends;
	msb_router_options opt;       /* copied; opt.selected points at `selected` */
	char *selected;
	const msb_backend *fixed;     /* FIXED: the resolved backend (NULL when none registered) */

	/* Guards the table and the unclean list; never held across a backend call. */
	pthread_mutex_t lock;
	pthread_cond_t settled;       /* broadcast whenever an in-flight acquire settles */
	struct router_entry *buckets[ROUTER_BUCKETS];
	struct router_unclean *unclean;
	struct msb_pool *pool;        /* owned; NULL: no warm pool (issue 22) */
};

/* One backend sandbox handle, shared by every msb_sandbox that reached it. */
struct router_slot {
	atomic_uint refs;
	const msb_backend *backend;
	msb_sandbox_handle *handle;
	bool pooled;                  /* adopted from a warm pool rather than started cold */
};

/* What the host holds: its own copy of the key, the spec and the served posture. */
struct msb_sandbox {
	struct router_slot *slot;
	msb_key key;                  /* the effective key (call_id folded in at call scope) */
	msb_spec spec;                /* deep copy */
	msb_effective_state state;
	char *strings;                /* one allocation behind key and state's strings */
	void *spec_storage;           /* behind spec's copied pointers */
};

void router_slot_unref(struct router_slot *slot);
/* One warning line through the router's warn callback (else stderr). */
void router_warn(const msb_router *r, const char *fmt, ...) MSB_PRINTF(2, 3);

/* The checks (router_checks.c). err may be NULL: then nothing is formatted or allocated. */
msb_errc router_check_denials(const msb_router *r, const msb_spec *spec, msb_error *err);
msb_errc router_check_backend(const msb_router *r, const msb_backend *b, const msb_spec *spec,
			      msb_error *err);
/* Denials, then the backend the spec routes to; *chosen is NULL only with nothing registered. */
msb_errc router_route(const msb_router *r, const msb_spec *spec, const msb_backend **chosen,
		      msb_error *err);
msb_scope router_effective_scope(const msb_router *r, const msb_spec *spec);
msb_isolation router_effective_floor(const msb_router *r, const msb_spec *spec);
/* "none, runtime, os_process, …": the ladder, weakest first, for messages. */
const char *router_ladder(void);
/* Refuse `op` on a sandbox whose backend does not declare `cap` (sandbox.c). */
msb_errc router_sandbox_gate(const msb_sandbox *s, msb_capability cap, const char *op,
			     msb_error *err);

/* A deep copy of a spec whose every pointer lives in *storage (free() it). */
msb_errc router_spec_copy(const msb_spec *src, msb_spec *dst, void **storage, msb_error *err);

#endif
