/*
 * router_acquire.c — get-or-create per (key, kind), disposal, and the keys held closed
 * because their disposal did not land.
 *
 * The table is guarded by one mutex that is never held across a backend call: a backend's
 * acquire can take seconds (a VM boots), and holding a global lock through it would
 * serialise every conversation behind the slowest. Instead the first caller for a
 * (key, kind, backend) inserts an in-flight entry and calls the backend unlocked; every
 * other caller racing it waits on the `settled` condition for that entry and shares its
 * answer. So one backend acquire per key, however many threads race.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool_internal.h"
#include "router_internal.h"

enum entry_state { ENTRY_PENDING, ENTRY_READY, ENTRY_FAILED };

struct router_entry {
	struct router_entry *next;
	uint64_t hash;
	const msb_backend *backend;
	const char *scope, *thread_id, *agent_dir, *call_id, *kind; /* in `strings` */
	const char *digest;     /* the image digest the slot was acquired at ("": none); in `strings` */
	char *strings;
	enum entry_state state;
	bool linked;            /* reachable from the table */
	unsigned waiters;       /* threads holding a pointer while it settles */
	struct router_slot *slot;  /* READY: one reference owned by the entry */
	msb_errc failure;          /* FAILED: shared with the waiters */
	char *failure_message;
};

/* A key whose disposal did not land, and what the backend said. */
struct router_unclean {
	struct router_unclean *next;
	char *scope, *thread_id, *agent_dir, *call_id;
	msb_disposal_code code;
	char *detail;
};

static const char *nz(const char *s)
{
	return s ? s : "";
}

static uint64_t fnv(uint64_t h, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)nz(s); *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return (h ^ 0xffu) * 1099511628211ull; /* a separator, so ("ab","c") != ("a","bc") */
}

static uint64_t entry_hash(const msb_key *key, const char *kind, const msb_backend *b)
{
	uint64_t h = 14695981039346656037ull;
	h = fnv(h, key->scope);
	h = fnv(h, key->thread_id);
	h = fnv(h, key->agent_dir);
	h = fnv(h, key->call_id);
	h = fnv(h, kind);
	return h ^ (uint64_t)(uintptr_t)b;
}

static bool key_is(const msb_key *key, const char *scope, const char *thread_id,
		   const char *agent_dir, const char *call_id)
{
	return strcmp(nz(key->scope), scope) == 0 && strcmp(nz(key->thread_id), thread_id) == 0 &&
	       strcmp(nz(key->agent_dir), agent_dir) == 0 && strcmp(nz(key->call_id), call_id) == 0;
}

/* Concatenate NUL-separated copies of `n` strings into one allocation. */
static char *strings_join(const char *const *in, const char **out, size_t n)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += strlen(nz(in[i])) + 1;
	char *buf = malloc(total ? total : 1), *p = buf;
	if (!buf)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(nz(in[i])) + 1;
		memcpy(p, nz(in[i]), len);
		out[i] = p;
		p += len;
	}
	return buf;
}

void router_slot_unref(struct router_slot *slot)
{
	if (!slot || atomic_fetch_sub(&slot->refs, 1) != 1)
		return;
	if (slot->handle)
		slot->backend->ops->release(slot->handle);
	free(slot);
}

static void entry_free(struct router_entry *e)
{
	router_slot_unref(e->slot);
	free(e->failure_message);
	free(e->strings);
	free(e);
}

/* Under the lock: whether nothing references `e` any more. The caller frees it unlocked. */
static bool entry_unreferenced(const struct router_entry *e)
{
	return !e->linked && e->state != ENTRY_PENDING && e->waiters == 0;
}

static void entry_unlink(msb_router *r, struct router_entry *e)
{
	struct router_entry **pp = &r->buckets[e->hash % ROUTER_BUCKETS];
	while (*pp && *pp != e)
		pp = &(*pp)->next;
	if (*pp)
		*pp = e->next;
	e->next = NULL;
	e->linked = false;
}

static bool entry_is(const struct router_entry *e, uint64_t hash, const msb_key *key,
		     const char *kind, const msb_backend *b)
{
	return e->hash == hash && e->backend == b && strcmp(e->kind, kind) == 0 &&
	       key_is(key, e->scope, e->thread_id, e->agent_dir, e->call_id);
}

static struct router_entry *entry_find(msb_router *r, uint64_t hash, const msb_key *key,
				       const char *kind, const msb_backend *b, const char *digest)
{
	for (struct router_entry *e = r->buckets[hash % ROUTER_BUCKETS]; e; e = e->next)
		if (entry_is(e, hash, key, kind, b) && strcmp(e->digest, digest) == 0)
			return e;
	return NULL;
}

/*
 * Under the lock: unlink every entry of one bucket chain that `match` accepts, chaining onto
 * *doomed those nothing references, for freeing unlocked.
 */
static void unlink_in_chain(struct router_entry **pp,
			    bool (*match)(const struct router_entry *, const void *), const void *arg,
			    struct router_entry **doomed)
{
	while (*pp) {
		struct router_entry *e = *pp;
		if (!match(e, arg)) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		e->next = NULL;
		e->linked = false;
		if (entry_unreferenced(e)) {
			e->next = *doomed;
			*doomed = e;
		}
	}
}

struct stale_match {
	uint64_t hash;
	const msb_key *key;
	const char *kind, *digest;
	const msb_backend *b;
};

static bool match_stale(const struct router_entry *e, const void *arg)
{
	const struct stale_match *m = arg;
	return entry_is(e, m->hash, m->key, m->kind, m->b) && strcmp(e->digest, m->digest) != 0 &&
	       e->state != ENTRY_PENDING;
}

/*
 * Under the lock: unlink every settled entry of (key, kind, b) acquired at another image
 * digest — the image was re-imported under its name, and a sandbox started from the old one
 * must not be served again. Holders of its slot keep it until they release it. Returns the
 * chain of those nothing references, for freeing unlocked.
 */
static struct router_entry *entry_unlink_stale(msb_router *r, uint64_t hash, const msb_key *key,
					       const char *kind, const msb_backend *b,
					       const char *digest)
{
	const struct stale_match m = { hash, key, kind, digest, b };
	struct router_entry *doomed = NULL;
	unlink_in_chain(&r->buckets[hash % ROUTER_BUCKETS], match_stale, &m, &doomed);
	return doomed;
}

static struct router_unclean *unclean_find(msb_router *r, const msb_key *key)
{
	for (struct router_unclean *u = r->unclean; u; u = u->next)
		if (key_is(key, u->scope, u->thread_id, u->agent_dir, u->call_id))
			return u;
	return NULL;
}

static void unclean_free(struct router_unclean *u)
{
	free(u->scope);
	free(u->detail);
	free(u);
}

/* Under the lock. Record (or, with failure NULL, clear) the key's unclean state. */
static void unclean_set(msb_router *r, const msb_key *key, const msb_disposal_failure *failure)
{
	struct router_unclean **pp = &r->unclean;
	while (*pp && !key_is(key, (*pp)->scope, (*pp)->thread_id, (*pp)->agent_dir, (*pp)->call_id))
		pp = &(*pp)->next;
	if (!failure) {
		if (*pp) {
			struct router_unclean *gone = *pp;
			*pp = gone->next;
			unclean_free(gone);
		}
		return;
	}
	struct router_unclean *u = *pp;
	char *detail = strdup(nz(failure->detail));
	if (!u) {
		u = calloc(1, sizeof *u);
		const char *parts[4] = { key->scope, key->thread_id, key->agent_dir, key->call_id };
		const char *out[4];
		char *joined = u ? strings_join(parts, out, 4) : NULL;
		if (!joined || !detail) {
			/* Out of memory: better to fail open here than to crash the dispose path. */
			free(u);
			free(joined);
			free(detail);
			return;
		}
		u->scope = joined;
		u->thread_id = (char *)out[1];
		u->agent_dir = (char *)out[2];
		u->call_id = (char *)out[3];
		u->next = r->unclean;
		r->unclean = u;
	}
	free(u->detail);
	u->detail = detail;
	u->code = failure->code;
}

/* Under the lock, so a disposal failing concurrently cannot slip a warm sandbox past it. */
static msb_errc refuse_unclean(msb_router *r, const msb_key *key, msb_error *err)
{
	struct router_unclean *u = r->unclean ? unclean_find(r, key) : NULL;
	msb_errc rc = MSB_OK;
	if (u)
		rc = msb_error_set(err, MSB_E_UNCLEAN,
				   "sandbox key (scope '%s', thread '%s', agent_dir '%s'%s%s%s) is held "
				   "closed: its last disposal did not land (%s: %s). Refused until a "
				   "disposal lands, because acquire is get-or-create and a sandbox left "
				   "warm would hand the next call whatever the last one could not take "
				   "back; dispose the key again",
				   u->scope, u->thread_id, u->agent_dir, *u->call_id ? ", call '" : "",
				   u->call_id, *u->call_id ? "'" : "",
				   msb_word_name(MSB_AXIS_DISPOSAL_CODE, (int)u->code), nz(u->detail));
	return rc;
}

/* The backend call, made with no lock held. */
static msb_errc create_slot(msb_router *r, const msb_backend *b, const msb_key *key,
			    const msb_spec *spec, struct router_slot **out, msb_error *err)
{
	struct router_slot *slot = calloc(1, sizeof *slot);
	if (!slot)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	msb_errc rc;
	/* A fork of a snapshot (issue 22): routing made sure the backend declares `snapshot`. */
	if (spec->from_snapshot && MSB_BACKEND_OP(b->ops, snapshot_start))
		rc = b->ops->snapshot_start(b->self, key, spec, spec->from_snapshot, &slot->handle,
					    err);
	else if (spec->from_snapshot)
		rc = msb_error_set(err, MSB_E_CAPABILITY_NOT_SUPPORTED, "sandbox backend '%s' has "
				   "no snapshot_start operation: cannot start from snapshot '%s'",
				   b->name, spec->from_snapshot);
	/* A warm entry of this blueprint, adopted, else a cold start as ever (issue 22). */
	else if ((slot->pooled = r->pool && pool_take(r->pool, b, key, spec, &slot->handle)))
		rc = MSB_OK;
	else
		rc = b->ops->acquire(b->self, key, spec, &slot->handle, err);
	if (rc != MSB_OK)
		rc = msb_backend_result(spec->from_snapshot ? "snapshot_start" : "acquire", rc, err);
	if (rc == MSB_OK && !slot->handle)
		rc = msb_error_set(err, MSB_E_BACKEND,
				   "sandbox backend '%s' reported success from acquire and returned no sandbox",
				   b->name);
	if (rc) {
		if (err && err->code == MSB_OK)
			err->code = rc;
		free(slot);
		return rc;
	}
	atomic_init(&slot->refs, 1);
	slot->backend = b;
	*out = slot;
	return MSB_OK;
}

static void free_chain(struct router_entry *e);

/*
 * Get-or-create the slot for (key, kind, b) at image `digest`: one backend acquire however
 * many race, and a fresh one when the image's digest moved since the cached slot's.
 */
static msb_errc slot_get(msb_router *r, const msb_backend *b, const msb_key *key,
			 const msb_spec *spec, const char *digest, struct router_slot **out,
			 bool *pooled, msb_error *err)
{
	uint64_t hash = entry_hash(key, spec->kind, b);
	pthread_mutex_lock(&r->lock);
	msb_errc unclean = refuse_unclean(r, key, err);
	if (unclean) {
		pthread_mutex_unlock(&r->lock);
		return unclean;
	}
	struct router_entry *e = entry_find(r, hash, key, spec->kind, b, digest);
	if (e) {
		e->waiters++;
		while (e->state == ENTRY_PENDING)
			pthread_cond_wait(&r->settled, &r->lock);
		e->waiters--;
		msb_errc rc = MSB_OK;
		if (e->state == ENTRY_READY) {
			atomic_fetch_add(&e->slot->refs, 1);
			*out = e->slot;
		} else {
			rc = msb_error_set(err, e->failure, "%s", nz(e->failure_message));
		}
		bool drop = entry_unreferenced(e);
		pthread_mutex_unlock(&r->lock);
		if (drop)
			entry_free(e);
		return rc;
	}
	struct router_entry *stale = entry_unlink_stale(r, hash, key, spec->kind, b, digest);
	e = calloc(1, sizeof *e);
	const char *parts[6] = { key->scope, key->thread_id, key->agent_dir, key->call_id, spec->kind,
				 digest };
	const char *copies[6];
	char *strings = e ? strings_join(parts, copies, 6) : NULL;
	if (!strings) {
		pthread_mutex_unlock(&r->lock);
		free(e);
		free_chain(stale);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	e->strings = strings;
	e->scope = copies[0];
	e->thread_id = copies[1];
	e->agent_dir = copies[2];
	e->call_id = copies[3];
	e->kind = copies[4];
	e->digest = copies[5];
	e->hash = hash;
	e->backend = b;
	e->state = ENTRY_PENDING;
	e->linked = true;
	e->next = r->buckets[hash % ROUTER_BUCKETS];
	r->buckets[hash % ROUTER_BUCKETS] = e;
	pthread_mutex_unlock(&r->lock);
	free_chain(stale);

	struct router_slot *slot = NULL;
	msb_error local = MSB_ERROR_INIT;
	msb_errc rc = create_slot(r, b, key, spec, &slot, &local);
	*pooled = rc == MSB_OK && slot->pooled; /* this caller's acquire adopted it; racers share it */

	pthread_mutex_lock(&r->lock);
	if (rc == MSB_OK) {
		e->state = ENTRY_READY;
		e->slot = slot;
		atomic_fetch_add(&slot->refs, 1); /* one for the entry, one for this caller */
		*out = slot;
	} else {
		/* Racers share this answer; the next caller after them tries afresh. */
		e->state = ENTRY_FAILED;
		e->failure = rc;
		e->failure_message = local.message ? strdup(local.message) : NULL;
		if (e->linked)
			entry_unlink(r, e);
	}
	pthread_cond_broadcast(&r->settled);
	bool drop = entry_unreferenced(e);
	pthread_mutex_unlock(&r->lock);
	if (drop)
		entry_free(e);
	if (rc) {
		if (err)
			msb_error_move(err, &local);
		msb_error_clear(&local);
	}
	return rc;
}

static msb_errc sandbox_wrap(struct router_slot *slot, const msb_key *key, const msb_spec *spec,
			     msb_scope scope, const char *call, const char *digest, msb_sandbox **out,
			     msb_error *err)
{
	msb_sandbox *s = calloc(1, sizeof *s);
	if (!s)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	const char *parts[6] = { key->scope, key->thread_id, key->agent_dir, key->call_id, call,
				 digest };
	const char *copies[6];
	s->strings = strings_join(parts, copies, 6);
	if (!s->strings || router_spec_copy(spec, &s->spec, &s->spec_storage, err) != MSB_OK) {
		free(s->strings);
		free(s);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	s->key = (msb_key){ copies[0], copies[1], copies[2], copies[3] };
	static const char *const no_hosts[] = { NULL };
	const msb_backend *b = slot->backend;
	s->state = (msb_effective_state){
		.backend = b->name,
		.isolation = b->isolation,
		.scope = scope,
		.egress = spec->egress,
		.egress_allow = s->spec.egress_allow ? s->spec.egress_allow : no_hosts,
		.capabilities_asked = spec->requires,
		.capabilities_declared = b->decl.capabilities,
		.call = call ? copies[4] : NULL,
		.host_tools = no_hosts,
		.image_digest = *digest ? copies[5] : NULL,
	};
	s->slot = slot;
	*out = s;
	return MSB_OK;
}

static void observe_acquired(const msb_router *r, const msb_key *key, const msb_spec *spec,
			     const msb_backend *b, const char *call, const char *digest, bool pooled,
			     msb_errc rc)
{
	const msb_observer *o = r->opt.observer;
	if (!o || !o->sandbox_acquired)
		return; /* a host that registers none builds no event */
	const msb_sandbox_acquired event = {
		.key = key,
		.spec = spec,
		.call = call,
		.backend = b ? b->name : NULL,
		.isolation = b ? b->isolation : MSB_ISO_NONE,
		.scope = router_effective_scope(r, spec),
		.refusal = rc ? msb_errc_name(rc) : NULL,
		.pooled = pooled,
		.image_digest = digest && *digest ? digest : NULL,
	};
	msb_observer_sandbox_acquired(o, &event);
}

/*
 * What the backend says the spec's image resolves to now (msb/backend.h, image_digest):
 * "" when its plugin predates the operation or the image has no content address. Anything
 * but "" or a digest's shape is the backend's error, not something to key a table by.
 */
static msb_errc image_digest(const msb_backend *b, const msb_spec *spec, char *out,
			     msb_error *err)
{
	out[0] = '\0';
	msb_errc (*op)(msb_backend_instance *, const msb_spec *, char *, size_t, msb_error *) =
		MSB_BACKEND_OP(b->ops, image_digest);
	if (!op)
		return MSB_OK;
	msb_errc rc = op(b->self, spec, out, MSB_IMAGE_DIGEST_SIZE, err);
	if (rc != MSB_OK) {
		out[0] = '\0';
		rc = msb_backend_result("image_digest", rc, err);
		return rc ? rc : MSB_E_BACKEND;
	}
	out[MSB_IMAGE_DIGEST_SIZE - 1] = '\0';
	size_t len = strlen(out);
	bool ok = len == 0 || (len == MSB_IMAGE_DIGEST_SIZE - 1 && strncmp(out, "sha256:", 7) == 0 &&
			       strspn(out + 7, "0123456789abcdef") == 64);
	if (ok)
		return MSB_OK;
	char shown[96];
	msb_plugin_escape(out, len < 80 ? len : 80, shown, sizeof shown);
	out[0] = '\0';
	return msb_error_set(err, MSB_E_BACKEND, "sandbox backend '%s' answered image_digest with "
			     "'%s', which is neither empty nor \"sha256:\" and 64 lowercase hex digits",
			     b->name, shown);
}

msb_errc msb_router_acquire(msb_router *router, const msb_key *key, const msb_spec *spec,
			    msb_sandbox **out, msb_error *err)
{
	*out = NULL;
	const char *call = key && key->call_id && *key->call_id ? key->call_id : NULL;
	const msb_backend *b = NULL;
	bool pooled = false;
	char digest[MSB_IMAGE_DIGEST_SIZE] = "";
	msb_errc rc;
	if (!spec) {
		rc = msb_error_set(err, MSB_E_VALUE, "acquire: no spec given; the spec is the workload "
				   "the sandbox is acquired for");
		return rc; /* nothing to describe an event with */
	}
	if (!key || !key->scope || !*key->scope || !key->thread_id || !*key->thread_id) {
		rc = msb_error_set(err, MSB_E_VALUE,
				   "acquire: the key needs a scope and a thread_id, both from the host's "
				   "request context; a key without them would let conversations share a sandbox");
		goto done;
	}
	if (strcmp(key->scope, MSB_POOL_SCOPE) == 0) {
		rc = msb_error_set(err, MSB_E_VALUE,
				   "acquire: refused the key's scope '%s': it is reserved for warm-pool "
				   "entries, and a caller using it could reach one before it is adopted",
				   MSB_POOL_SCOPE);
		goto done;
	}
	if ((rc = msb_spec_validate(spec, err)) || (rc = router_route(router, spec, &b, err)))
		goto done;
	if (!b) {
		rc = msb_error_set(err, MSB_E_NO_BACKEND, "no sandbox backend is configured, so the router "
				   "has nothing to serve the '%s' workload on", spec->kind);
		goto done;
	}
	msb_scope scope = router_effective_scope(router, spec);
	/* At call scope the call is part of the sandbox's name; otherwise calls share one. */
	msb_key effective = { key->scope, key->thread_id, nz(key->agent_dir), "" };
	if (scope == MSB_SCOPE_CALL) {
		if (!call) {
			rc = msb_error_set(err, MSB_E_VALUE,
					   "the '%s' workload runs one sandbox per call ('call' isolation "
					   "scope) and the key carries no call_id to name it by; acquire it "
					   "from inside a tool call",
					   spec->kind);
			goto done;
		}
		effective.call_id = call;
	}
	if ((rc = image_digest(b, spec, digest, err)))
		goto done;
	struct router_slot *slot = NULL;
	if ((rc = slot_get(router, b, &effective, spec, digest, &slot, &pooled, err)))
		goto done;
	rc = sandbox_wrap(slot, &effective, spec, scope, call, digest, out, err);
	if (rc)
		router_slot_unref(slot);
done:
	observe_acquired(router, key ? key : &(msb_key){ 0 }, spec, b, call, rc ? NULL : digest,
			 pooled && rc == MSB_OK, rc);
	return rc;
}

/* Unlink every cached entry `match` accepts; return them (chained) for freeing unlocked. */
static struct router_entry *unlink_matching(msb_router *r,
					    bool (*match)(const struct router_entry *, const void *),
					    const void *arg)
{
	struct router_entry *doomed = NULL;
	for (size_t i = 0; i < ROUTER_BUCKETS; i++)
		unlink_in_chain(&r->buckets[i], match, arg, &doomed);
	return doomed;
}

static void free_chain(struct router_entry *e)
{
	while (e) {
		struct router_entry *next = e->next;
		entry_free(e);
		e = next;
	}
}

static bool match_key(const struct router_entry *e, const void *arg)
{
	return key_is(arg, e->scope, e->thread_id, e->agent_dir, e->call_id);
}

/* One line for the host's log, beside the observer's structured record. */
void router_warn(const msb_router *r, const char *fmt, ...)
{
	char *line = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (r->opt.warn)
		r->opt.warn(r->opt.warn_ctx, line);
	else
		fprintf(stderr, "msb: warning: %s\n", line);
	free(line);
}

bool msb_router_dispose(msb_router *router, const msb_key *given, msb_disposal_failure *failure)
{
	msb_disposal_failure folded = { MSB_DISPOSAL_UNKNOWN, NULL };
	/* Backends are handed no NULL part: an absent part is the empty one. */
	const msb_key k = { nz(given ? given->scope : NULL), nz(given ? given->thread_id : NULL),
			    nz(given ? given->agent_dir : NULL), nz(given ? given->call_id : NULL) };
	const msb_key *key = &k;
	pthread_mutex_lock(&router->lock);
	struct router_entry *doomed = unlink_matching(router, match_key, key);
	pthread_mutex_unlock(&router->lock);
	free_chain(doomed);

	/* Two kinds under one key may have routed to different backends: ask every one. */
	for (size_t i = 0; i < router->n_backends; i++) {
		const msb_backend *b = router->backends[i];
		msb_disposal_failure one = { MSB_DISPOSAL_UNKNOWN, NULL };
		if (b->ops->dispose(b->self, key, &one)) {
			if (!one.detail)
				msb_disposal_failure_set(&one, one.code, "sandbox backend '%s' reported a "
							 "failed delete and said nothing more", b->name);
			msb_disposal_failure_fold(&folded, &one);
		} else {
			msb_disposal_failure_free(&one);
		}
	}
	bool clean = folded.detail == NULL;
	if (!clean)
		router_warn(router,
			    "sandbox router: the disposal of (scope '%s', thread '%s', agent_dir '%s', "
			    "call '%s') did not land (%s): %s; the key is refused with SandboxUnclean "
			    "until a disposal lands",
			    key->scope, key->thread_id, key->agent_dir, key->call_id,
			    msb_word_name(MSB_AXIS_DISPOSAL_CODE, (int)folded.code), folded.detail);
	pthread_mutex_lock(&router->lock);
	unclean_set(router, key, clean ? NULL : &folded);
	pthread_mutex_unlock(&router->lock);

	const msb_observer *o = router->opt.observer;
	if (o && o->sandbox_disposed) {
		const msb_sandbox_disposed event = {
			.key = key,
			.call = key->call_id && *key->call_id ? key->call_id : NULL,
			.failed = !clean,
			.code = folded.code,
		};
		msb_observer_sandbox_disposed(o, &event);
	}
	if (failure)
		*failure = folded;
	else
		msb_disposal_failure_free(&folded);
	return clean;
}

struct scope_match {
	const char *scope, *thread_id;
};

static bool match_scope(const struct router_entry *e, const void *arg)
{
	const struct scope_match *m = arg;
	return strcmp(e->scope, m->scope) == 0 && strcmp(e->thread_id, m->thread_id) == 0;
}

/*
 * A key of the conversation being purged, which backends this router routed it to, and the
 * fold of what the failing ones among them reported. A backend's purge answers for the
 * whole conversation, never per key, so the finest truthful attribution is the backend: a
 * key is held closed when a backend that served it failed its purge, and a key served only
 * by backends whose purge landed was disposed cleanly and stays open.
 */
struct served_key {
	struct served_key *next;
	msb_key key;                  /* strings in `strings` */
	char *strings;
	bool blamed;                  /* a backend that served it failed its purge */
	msb_disposal_failure failure; /* the fold of what those backends reported */
	bool by[];                    /* by[i]: router->backends[i] served one of its kinds */
};

static void served_free(struct served_key *s)
{
	while (s) {
		struct served_key *next = s->next;
		msb_disposal_failure_free(&s->failure);
		free(s->strings);
		free(s);
		s = next;
	}
}

static size_t backend_index(const msb_router *r, const msb_backend *b)
{
	size_t i = 0;
	while (i < r->n_backends && r->backends[i] != b)
		i++;
	return i;
}

/*
 * Under the lock, before the conversation's entries are unlinked: every key the table holds
 * for it. Out of memory, a key goes unrecorded and so is never held closed by this purge —
 * the same fail-open unclean_set makes, rather than crashing the delete path.
 */
static struct served_key *served_collect(const msb_router *r, const struct scope_match *m)
{
	struct served_key *list = NULL;
	for (size_t i = 0; i < ROUTER_BUCKETS; i++) {
		for (const struct router_entry *e = r->buckets[i]; e; e = e->next) {
			if (!match_scope(e, m))
				continue;
			struct served_key *s = list;
			while (s && !key_is(&s->key, e->scope, e->thread_id, e->agent_dir, e->call_id))
				s = s->next;
			if (!s) {
				s = calloc(1, sizeof *s + r->n_backends * sizeof s->by[0]);
				const char *parts[4] = { e->scope, e->thread_id, e->agent_dir, e->call_id };
				const char *out[4];
				char *joined = s ? strings_join(parts, out, 4) : NULL;
				if (!joined) {
					free(s);
					continue;
				}
				s->strings = joined;
				s->key = (msb_key){ out[0], out[1], out[2], out[3] };
				s->failure = (msb_disposal_failure){ MSB_DISPOSAL_UNKNOWN, NULL };
				s->next = list;
				list = s;
			}
			size_t b = backend_index(r, e->backend);
			if (b < r->n_backends)
				s->by[b] = true;
		}
	}
	return list;
}

/* Backend `b` failed its purge with `failure`: every key it served carries a copy. */
static void served_blame(struct served_key *list, size_t b, const msb_disposal_failure *failure)
{
	for (struct served_key *s = list; s; s = s->next) {
		if (!s->by[b])
			continue;
		msb_disposal_failure copy = { MSB_DISPOSAL_UNKNOWN, NULL };
		/* Out of memory the detail is lost, never the blame: the key is still held. */
		if (msb_disposal_failure_set(&copy, failure->code, "%s", nz(failure->detail)) == MSB_OK)
			msb_disposal_failure_fold(&s->failure, &copy);
		else if (!s->blamed)
			s->failure.code = failure->code;
		msb_disposal_failure_free(&copy);
		s->blamed = true;
	}
}

/* Under the lock: hold closed every blamed key; return how many. */
static size_t served_hold(msb_router *r, const struct served_key *list)
{
	size_t held = 0;
	for (const struct served_key *s = list; s; s = s->next) {
		if (!s->blamed)
			continue;
		unclean_set(r, &s->key, &s->failure);
		held++;
	}
	return held;
}

/* Under the lock: a purge that landed whole cleans every key of the conversation. */
static void unclean_clear_scope(msb_router *r, const struct scope_match *m)
{
	for (struct router_unclean **pp = &r->unclean; *pp;) {
		struct router_unclean *u = *pp;
		if (strcmp(u->scope, m->scope) == 0 && strcmp(u->thread_id, m->thread_id) == 0) {
			*pp = u->next;
			unclean_free(u);
		} else {
			pp = &u->next;
		}
	}
}

void msb_router_dispose_scope(msb_router *router, const char *scope, const char *thread_id,
			      msb_scope_purge *purge)
{
	msb_scope_purge total = { 0, false, { MSB_DISPOSAL_UNKNOWN, NULL } };
	const struct scope_match m = { nz(scope), nz(thread_id) };
	pthread_mutex_lock(&router->lock);
	struct served_key *served = served_collect(router, &m);
	struct router_entry *doomed = unlink_matching(router, match_scope, &m);
	pthread_mutex_unlock(&router->lock);
	free_chain(doomed);

	/* Every registered backend: a conversation may have been served by any of them. */
	for (size_t i = 0; i < router->n_backends; i++) {
		const msb_backend *b = router->backends[i];
		msb_scope_purge one = { 0, false, { MSB_DISPOSAL_UNKNOWN, NULL } };
		b->ops->dispose_scope(b->self, m.scope, m.thread_id, &one);
		total.disposed += one.disposed;
		if (one.has_undisposed) {
			if (!one.undisposed.detail)
				msb_disposal_failure_set(&one.undisposed, one.undisposed.code,
							 "sandbox backend '%s' left sandboxes of the "
							 "conversation and said nothing more", b->name);
			served_blame(served, i, &one.undisposed);
			msb_disposal_failure_fold(&total.undisposed, &one.undisposed);
			total.has_undisposed = true;
		}
		msb_scope_purge_free(&one);
	}
	size_t held = 0;
	pthread_mutex_lock(&router->lock);
	if (total.has_undisposed)
		held = served_hold(router, served);
	else
		unclean_clear_scope(router, &m);
	pthread_mutex_unlock(&router->lock);
	served_free(served);
	if (total.has_undisposed)
		router_warn(router,
			    "sandbox router: the purge of (scope '%s', thread '%s') left sandboxes "
			    "behind (%s): %s; %zu key(s) of it this router routed to a backend whose "
			    "purge failed are refused with SandboxUnclean until a disposal lands",
			    m.scope, m.thread_id,
			    msb_word_name(MSB_AXIS_DISPOSAL_CODE, (int)total.undisposed.code),
			    nz(total.undisposed.detail), held);
	const msb_observer *o = router->opt.observer;
	if (o && o->scope_disposed) {
		const msb_scope_disposed event = {
			.scope = m.scope,
			.thread_id = m.thread_id,
			.call = NULL,
			.disposed = total.disposed,
			.failed = total.has_undisposed,
			.code = total.undisposed.code,
		};
		msb_observer_scope_disposed(o, &event);
	}
	if (purge)
		*purge = total;
	else
		msb_scope_purge_free(&total);
}

const char *msb_reclaim_outcome_name(msb_reclaim_outcome outcome)
{
	static const char *const names[] = { "disposed", "failed", "kept" };
	return (unsigned)outcome < 3 ? names[outcome] : "unknown";
}

msb_reclaim_outcome msb_router_reclaim_failed(msb_router *router, const msb_key *key,
					      msb_disposal_failure *failure)
{
	if (router->opt.reclaim == MSB_RECLAIM_KEEP)
		return MSB_RECLAIM_OUTCOME_KEPT;
	return msb_router_dispose(router, key, failure) ? MSB_RECLAIM_OUTCOME_DISPOSED
							: MSB_RECLAIM_OUTCOME_FAILED;
}

int msb_router_scope(msb_router *router, const char *scope, const char *thread_id,
		     int (*body)(void *ctx), void *ctx, msb_scope_purge *purge)
{
	int rc = body ? body(ctx) : 0;
	/* dispose_scope reports rather than fails, so it cannot mask body's answer. */
	msb_router_dispose_scope(router, scope, thread_id, purge);
	return rc;
}

void msb_router_free(msb_router *router)
{
	if (!router)
		return;
	msb_pool_free(router->pool); /* its filler first: it calls the backends */
	for (size_t i = 0; i < ROUTER_BUCKETS; i++) {
		struct router_entry *e = router->buckets[i];
		while (e) {
			struct router_entry *next = e->next;
			entry_free(e);
			e = next;
		}
	}
	while (router->unclean) {
		struct router_unclean *u = router->unclean;
		router->unclean = u->next;
		unclean_free(u);
	}
	pthread_mutex_destroy(&router->lock);
	pthread_cond_destroy(&router->settled);
	free(router->backends);
	free(router->selected);
	free(router);
}
