/*
 * pool.c — the warm pool's registry (msb/pool.h): which blueprints are wanted, the entries
 * ready for each as files in a directory every process shares, and the claim that hands one
 * entry to exactly one acquire.
 *
 * Why a registry of files rather than asking the backend: the backends keep their sandboxes
 * by key and have no way to list them, and a claim must be atomic across processes for any
 * backend. unlink(2) of an entry's file succeeds for exactly one caller, so whoever unlinks
 * it owns the entry; the backend's adopt then renames the sandbox to its new key under the
 * backend's own locks. A process that dies between the two leaves an entry no file names:
 * the next drain (a dispose_scope of the blueprint) still reaches it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pool_internal.h"

static char *join(const char *a, const char *b)
{
	char *s = NULL;
	return asprintf(&s, "%s/%s", a, b) < 0 ? NULL : s;
}

static int mkdir_one(const char *path)
{
	return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* mkdir -p, 0700 for what it makes. */
static int mkdir_all(const char *path)
{
	char *copy = strdup(path);
	if (!copy)
		return -1;
	int rc = 0;
	for (char *p = copy + 1; rc == 0 && *p; p++)
		if (*p == '/') {
			*p = '\0';
			rc = mkdir_one(copy);
			*p = '/';
		}
	if (rc == 0)
		rc = mkdir_one(copy);
	free(copy);
	return rc;
}

static char *default_dir(void)
{
	char *s = NULL;
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	if (geteuid() == 0)
		return strdup("/run/msb/pool");
	if (xdg && xdg[0] == '/')
		return asprintf(&s, "%s/msb/pool", xdg) < 0 ? NULL : s;
	return asprintf(&s, "/tmp/msb-%ld/pool", (long)geteuid()) < 0 ? NULL : s;
}

msb_errc msb_pool_new(msb_router *router, const char *dir, msb_pool **out, msb_error *err)
{
	if (!router)
		return msb_error_set(err, MSB_E_VALUE, "pool: no router given");
	msb_pool *p = calloc(1, sizeof *p);
	if (!p)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	p->router = router;
	p->dir = dir ? strdup(dir) : default_dir();
	if (!p->dir) {
		free(p);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	/* Made by the first fill, 0700: building a pool (msb check) touches no file. */
	if (p->dir[0] != '/') {
		msb_errc rc = msb_error_set(err, MSB_E_VALUE, "pool: refused pool directory '%s': not "
					    "an absolute path", p->dir);
		free(p->dir);
		free(p);
		return rc;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	atomic_init(&p->stopping, false);
	*out = p;
	return MSB_OK;
}

void msb_pool_free(msb_pool *p)
{
	if (!p)
		return;
	msb_pool_stop(p);
	for (size_t i = 0; i < p->n_wants; i++) {
		free(p->wants[i].spec_storage);
		free(p->wants[i].backend_dir);
		free(p->wants[i].dir);
	}
	free(p->wants);
	for (size_t i = 0; i < p->n_salts; i++) {
		free(p->salts[i].backend);
		free(p->salts[i].text);
	}
	free(p->salts);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p->dir);
	free(p);
}

msb_errc msb_pool_set_backend_blueprint(msb_pool *p, const char *backend, const char *text,
					msb_error *err)
{
	pool_salt *grown = realloc(p->salts, (p->n_salts + 1) * sizeof *grown);
	if (!grown)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	p->salts = grown;
	pool_salt *s = &p->salts[p->n_salts];
	s->backend = strdup(backend ? backend : "");
	s->text = strdup(text ? text : "");
	if (!s->backend || !s->text) {
		free(s->backend);
		free(s->text);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	p->n_salts++;
	return MSB_OK;
}

const char *pool_salt_of(const msb_pool *p, const char *backend)
{
	for (size_t i = p->n_salts; i-- > 0;)
		if (strcmp(p->salts[i].backend, backend) == 0)
			return p->salts[i].text;
	return NULL;
}

msb_errc msb_pool_want(msb_pool *p, const msb_spec *spec, unsigned size, msb_error *err)
{
	if (!spec || !spec->kind)
		return msb_error_set(err, MSB_E_VALUE, "pool: no spec given");
	if (size < 1 || size > MSB_POOL_MAX)
		return msb_error_set(err, MSB_E_VALUE, "pool: refused pool %u for the '%s' workload: a "
				     "pool holds 1 to %u sandboxes", size, spec->kind, MSB_POOL_MAX);
	pthread_mutex_lock(&p->lock);
	bool started = p->started;
	pthread_mutex_unlock(&p->lock);
	if (started)
		return msb_error_set(err, MSB_E_VALUE, "pool: refused a pool for the '%s' workload: the "
				     "filler is running, and what it fills is fixed when it starts",
				     spec->kind);
	for (size_t i = 0; i < p->n_wants; i++)
		if (strcmp(p->wants[i].spec.kind, spec->kind) == 0)
			return msb_error_set(err, MSB_E_VALUE, "pool: the '%s' workload already has a pool",
					     spec->kind);
	const msb_backend *b = NULL;
	msb_errc rc = msb_spec_validate(spec, err);
	if (rc == MSB_OK)
		rc = router_route(p->router, spec, &b, err);
	if (rc != MSB_OK)
		return msb_error_prefix(err, "pool: the '%s' workload cannot be pooled: ", spec->kind);
	if (!b)
		return msb_error_set(err, MSB_E_NO_BACKEND, "pool: no sandbox backend is configured to "
				     "pool the '%s' workload on", spec->kind);
	if (!MSB_BACKEND_OP(b->ops, adopt))
		return msb_error_set(err, MSB_E_NOT_IMPLEMENTED,
				     "pool: refused a pool for the '%s' workload: sandbox backend '%s' "
				     "(plugin %s) has no adopt operation, so a sandbox it started ahead "
				     "could never become a caller's — %s",
				     spec->kind, b->name, msb_plugin_file(b->plugin),
				     MSB_BACKEND_HAS(b->ops, adopt)
					     ? "the plugin does not implement it"
					     : "the plugin was built before the operation was appended");
	if (spec->egress == MSB_EGRESS_ALLOWLIST)
		return msb_error_set(err, MSB_E_VALUE,
				     "pool: refused a pool for the '%s' workload: under egress: allowlist "
				     "the egress proxy is bound by the host that starts a sandbox, for the "
				     "key it starts it under, so an entry started ahead would enforce "
				     "nothing for the key that adopts it", spec->kind);
	pool_want *grown = realloc(p->wants, (p->n_wants + 1) * sizeof *grown);
	if (!grown)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	p->wants = grown;
	pool_want *w = &p->wants[p->n_wants];
	memset(w, 0, sizeof *w);
	if ((rc = router_spec_copy(spec, &w->spec, &w->spec_storage, err)) != MSB_OK)
		return rc;
	w->size = size;
	w->backend = b;
	pool_blueprint_hash(b, pool_salt_of(p, b->name), spec, w->hash);
	pool_tag(spec->kind, w->kind_tag);
	char leaf[POOL_ID_HEX + POOL_HASH_HEX + 1];
	snprintf(leaf, sizeof leaf, "%s-%s", w->kind_tag, w->hash);
	w->backend_dir = join(p->dir, b->name);
	w->dir = w->backend_dir ? join(w->backend_dir, leaf) : NULL;
	if (!w->dir) {
		free(w->backend_dir);
		free(w->spec_storage);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	p->n_wants++;
	return MSB_OK;
}

size_t msb_pool_count(const msb_pool *p)
{
	return p ? p->n_wants : 0;
}

/* Ready entries ("e-<id>") of a blueprint directory; 0 when it is not there. */
static unsigned count_ready(const char *dir)
{
	DIR *d = opendir(dir);
	unsigned n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		if (strncmp(e->d_name, "e-", 2) == 0)
			n++;
	if (d)
		closedir(d);
	return n;
}

msb_errc msb_pool_status_at(msb_pool *p, size_t i, msb_pool_status *out, msb_error *err)
{
	if (i >= p->n_wants)
		return msb_error_set(err, MSB_E_VALUE, "pool: no wanted spec %zu (%zu wanted)", i,
				     p->n_wants);
	const pool_want *w = &p->wants[i];
	memset(out, 0, sizeof *out);
	out->kind = w->spec.kind;
	out->backend = w->backend->name;
	memcpy(out->blueprint, w->hash, 16);
	out->blueprint[16] = '\0';
	out->size = w->size;
	out->ready = count_ready(w->dir);
	return MSB_OK;
}

/* Claim one ready entry of `dir`: its id in `id`, true when this caller now owns it. */
static bool claim(const char *dir, char id[POOL_ID_HEX])
{
	DIR *d = opendir(dir);
	bool got = false;
	for (struct dirent *e; d && !got && (e = readdir(d));) {
		if (strncmp(e->d_name, "e-", 2) != 0 || strlen(e->d_name) != 2 + POOL_ID_HEX - 1)
			continue;
		/* Exactly one unlinkat of a name succeeds, in whichever process asks first. */
		if (unlinkat(dirfd(d), e->d_name, 0) == 0) {
			memcpy(id, e->d_name + 2, POOL_ID_HEX);
			got = true;
		}
	}
	if (d)
		closedir(d);
	return got;
}

static msb_key entry_key(const char *hash, const char *id)
{
	return (msb_key){ MSB_POOL_SCOPE, hash, "", id };
}

static void dispose_entry(const msb_pool *p, const msb_backend *b, const msb_key *ek)
{
	msb_disposal_failure f = { MSB_DISPOSAL_UNKNOWN, NULL };
	if (b->ops->dispose(b->self, ek, &f))
		router_warn(p->router, "pool: the disposal of entry %s of sandbox backend '%s' did not land: %s",
			  ek->call_id, b->name, f.detail ? f.detail : "(nothing said)");
	msb_disposal_failure_free(&f);
}

static void relist(const char *dir, const char *id)
{
	char leaf[2 + POOL_ID_HEX];
	snprintf(leaf, sizeof leaf, "e-%s", id);
	char *path = join(dir, leaf);
	int fd = path ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
	if (fd >= 0)
		close(fd);
	free(path);
}

static void kick(msb_pool *p)
{
	pthread_mutex_lock(&p->lock);
	p->kicked = true;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

bool pool_take(msb_pool *p, const msb_backend *b, const msb_key *key, const msb_spec *spec,
	       msb_sandbox_handle **handle)
{
	msb_errc (*adopt)(msb_backend_instance *, const msb_key *, const msb_key *, const msb_spec *,
			  msb_sandbox_handle **, msb_error *) = MSB_BACKEND_OP(b->ops, adopt);
	const pool_want *w = NULL;
	for (size_t i = 0; adopt && i < p->n_wants && !w; i++)
		if (p->wants[i].backend == b && strcmp(p->wants[i].spec.kind, spec->kind) == 0)
			w = &p->wants[i];
	if (!w)
		return false;
	/* Only the blueprint's own entries: a spec that changed since the want finds none. */
	char hash[POOL_HASH_HEX];
	pool_blueprint_hash(b, pool_salt_of(p, b->name), spec, hash);
	bool adopted = false;
	char id[POOL_ID_HEX];
	/* Two tries: an entry that died is replaced by the next, not by a cold start at once. */
	for (int tries = 0; strcmp(hash, w->hash) == 0 && !adopted && tries < 2 && claim(w->dir, id);
	     tries++) {
		msb_key ek = entry_key(w->hash, id);
		msb_error why = MSB_ERROR_INIT;
		*handle = NULL;
		msb_errc rc = adopt(b->self, &ek, key, spec, handle, &why);
		if (rc == MSB_OK && *handle) {
			adopted = true;
		} else if (rc == MSB_OK) {
			/* The key has its own sandbox already: the untouched entry is listed again. */
			relist(w->dir, id);
			msb_error_clear(&why);
			break;
		} else {
			router_warn(p->router, "pool: sandbox backend '%s' refused to adopt entry %s for the '%s' "
				  "workload (%s: %s); it is disposed", b->name, id, spec->kind,
				  msb_errc_name(rc), msb_error_message(&why));
			dispose_entry(p, b, &ek);
		}
		msb_error_clear(&why);
	}
	kick(p);
	return adopted;
}

/* flock <dir>/.fill: one filler of a blueprint at a time, across processes. -1 on failure. */
static int lock_fill(const char *dir)
{
	char *path = join(dir, ".fill");
	int fd = path ? open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
	free(path);
	while (fd >= 0 && flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

/*
 * Dispose every blueprint of `w`'s kind on its backend that `keep` (may be NULL) is not:
 * claim each listed entry, then dispose_scope the whole blueprint (reaching entries a
 * crashed claimer left unlisted) and remove its directory. Counts what went in *n.
 */
static void sweep(const msb_pool *p, const pool_want *w, const char *keep, uint64_t *n)
{
	DIR *d = opendir(w->backend_dir);
	size_t tag = strlen(w->kind_tag);
	for (struct dirent *e; d && (e = readdir(d));) {
		const char *name = e->d_name;
		if (strncmp(name, w->kind_tag, tag) != 0 || name[tag] != '-' ||
		    strlen(name + tag + 1) != POOL_HASH_HEX - 1)
			continue;
		const char *hash = name + tag + 1;
		if (keep && strcmp(hash, keep) == 0)
			continue;
		char *dir = join(w->backend_dir, name);
		if (!dir)
			continue;
		char id[POOL_ID_HEX];
		while (claim(dir, id))
			;
		msb_scope_purge purge = { 0 };
		w->backend->ops->dispose_scope(w->backend->self, MSB_POOL_SCOPE, hash, &purge);
		*n += purge.disposed;
		if (purge.has_undisposed)
			router_warn(p->router, "pool: entries of blueprint %.16s of the '%s' workload on sandbox "
				  "backend '%s' were not all disposed: %s", hash, w->spec.kind,
				  w->backend->name,
				  purge.undisposed.detail ? purge.undisposed.detail : "(nothing said)");
		msb_scope_purge_free(&purge);
		char *lock = join(dir, ".fill");
		if (lock)
			unlink(lock);
		free(lock);
		rmdir(dir);
		free(dir);
	}
	if (d)
		closedir(d);
}

static void random_id(char id[POOL_ID_HEX])
{
	unsigned char raw[8] = { 0 };
	size_t got = 0;
	while (got < sizeof raw) {
		ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
		if (n < 0 && errno != EINTR)
			break;
		got += n > 0 ? (size_t)n : 0;
	}
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < sizeof raw; i++) {
		id[2 * i] = digits[raw[i] >> 4];
		id[2 * i + 1] = digits[raw[i] & 15];
	}
	id[16] = '\0';
}

/* Start one entry of `w` and list it. */
static msb_errc start_entry(const pool_want *w, msb_error *err)
{
	char id[POOL_ID_HEX];
	random_id(id);
	msb_key ek = entry_key(w->hash, id);
	const msb_backend *b = w->backend;
	msb_sandbox_handle *h = NULL;
	msb_errc rc = b->ops->acquire(b->self, &ek, &w->spec, &h, err);
	if (rc != MSB_OK)
		return msb_error_prefix(err, "pool: starting an entry of the '%s' workload on sandbox "
					"backend '%s': ", w->spec.kind, b->name);
	if (h)
		b->ops->release(h);
	char leaf[2 + POOL_ID_HEX];
	snprintf(leaf, sizeof leaf, "e-%s", id);
	char *path = join(w->dir, leaf);
	int fd = path ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
	if (fd < 0) {
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "pool: listing entry %s", path ? path : id);
		msb_disposal_failure f = { MSB_DISPOSAL_UNKNOWN, NULL };
		b->ops->dispose(b->self, &ek, &f);
		msb_disposal_failure_free(&f);
	} else {
		close(fd);
	}
	free(path);
	return rc;
}

msb_errc msb_pool_fill(msb_pool *p, msb_pool_report *report, msb_error *err)
{
	msb_pool_report r = { 0 };
	msb_errc first = MSB_OK;
	for (size_t i = 0; i < p->n_wants && !atomic_load(&p->stopping); i++) {
		const pool_want *w = &p->wants[i];
		if (mkdir_all(w->dir) < 0) {
			if (first == MSB_OK)
				first = msb_error_set_errno(err, MSB_E_OS, errno, "pool: cannot make %s", w->dir);
			r.failed++;
			continue;
		}
		int fd = lock_fill(w->dir);
		if (fd < 0) {
			if (first == MSB_OK)
				first = msb_error_set_errno(err, MSB_E_OS, errno, "pool: cannot lock %s/.fill",
							    w->dir);
			r.failed++;
			continue;
		}
		sweep(p, w, w->hash, &r.stale);
		while (count_ready(w->dir) < w->size && !atomic_load(&p->stopping)) {
			msb_error why = MSB_ERROR_INIT;
			msb_errc rc = start_entry(w, &why);
			if (rc == MSB_OK) {
				r.started++;
			} else {
				r.failed++;
				if (first == MSB_OK) {
					first = rc;
					if (err)
						msb_error_move(err, &why);
				}
				msb_error_clear(&why);
				break; /* a backend failing now fails the next start too: retry later */
			}
		}
		close(fd);
	}
	if (report)
		*report = r;
	return first;
}

msb_errc msb_pool_drain(msb_pool *p, msb_pool_report *report, msb_error *err)
{
	(void)err;
	msb_pool_report r = { 0 };
	for (size_t i = 0; i < p->n_wants; i++) {
		const pool_want *w = &p->wants[i];
		int fd = access(w->dir, F_OK) == 0 ? lock_fill(w->dir) : -1;
		sweep(p, w, NULL, &r.disposed);
		if (fd >= 0)
			close(fd);
	}
	if (report)
		*report = r;
	return MSB_OK;
}

void msb_router_set_pool(msb_router *router, msb_pool *pool)
{
	msb_pool *old = router->pool;
	router->pool = pool;
	if (old != pool)
		msb_pool_free(old);
}

msb_pool *msb_router_pool(const msb_router *router)
{
	return router ? router->pool : NULL;
}
