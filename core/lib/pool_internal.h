/*
 * pool_internal.h — what the warm pool's files share inside libmsb (msb/pool.h is the public
 * view): the pool itself, one wanted blueprint, and the hooks the router's acquire calls.
 */
#ifndef MSB_POOL_INTERNAL_H
#define MSB_POOL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <msb/pool.h>

#include "router_internal.h"

#define POOL_HASH_HEX 65   /* SHA-256 in hex, NUL */
#define POOL_ID_HEX 17     /* an entry's random id: 64 bits in hex, NUL */

typedef struct pool_want {
	msb_spec spec;            /* deep copy (router_spec_copy) */
	void *spec_storage;
	unsigned size;
	const msb_backend *backend;
	char hash[POOL_HASH_HEX];
	char kind_tag[POOL_ID_HEX]; /* the first 16 hex of SHA-256(kind): a path-safe kind */
	char *backend_dir;        /* <dir>/<backend> */
	char *dir;                /* <backend_dir>/<kind_tag>-<hash> */
} pool_want;

typedef struct pool_salt {
	char *backend, *text;
} pool_salt;

struct msb_pool {
	msb_router *router;       /* borrowed: the router owns the pool */
	char *dir;
	pool_want *wants;
	size_t n_wants;
	pool_salt *salts;
	size_t n_salts;

	pthread_mutex_t lock;     /* guards the filler's state below */
	pthread_cond_t wake;
	bool started, kicked;
	atomic_bool stopping;
	double interval;
	pthread_t filler;
};

/* The blueprint of `spec` on backend `b`, salted with `salt` (may be NULL), in hex. */
void pool_blueprint_hash(const msb_backend *b, const char *salt, const msb_spec *spec,
			 char out[POOL_HASH_HEX]);
/* The first 16 hex digits of SHA-256(text). */
void pool_tag(const char *text, char out[POOL_ID_HEX]);
/* The salt stated for `backend`, or NULL. */
const char *pool_salt_of(const msb_pool *pool, const char *backend);

/*
 * The router's acquire, before a cold start: adopt a ready entry of `spec`'s blueprint on
 * `b` as `key`'s sandbox. true with *handle set when it did; false (nothing to adopt, or
 * every entry tried refused — each disposed, and said through `warn`) and the caller starts
 * cold. Wakes the filler either way when the spec is wanted.
 */
bool pool_take(msb_pool *pool, const msb_backend *b, const msb_key *key, const msb_spec *spec,
	       msb_sandbox_handle **handle);

#endif
