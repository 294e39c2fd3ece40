/*
 * inprocess.c — the `inprocess` backend: a scripted fake at rung `none`.
 *
 * Nothing is isolated and nothing runs: a sandbox is a file tree in this process's memory,
 * a command returns the scripted output whose `match` it contains, and every call is
 * recorded so a test can assert what was asked. It exists for the router's tests, the
 * conformance kit and the examples; it declares `none` so that no host can route a real
 * workload to it without lowering its floor to the bottom of the ladder on purpose.
 *
 * The descriptor states the widest declarations the fake can be configured to hold; the
 * instance's `config:` narrows them (instance_declarations), never widens.
 *
 * INPROCESS_NAME and INPROCESS_ISOLATION let the test suite build the same source as
 * several plugins (a plugin's name is unique among loaded plugins, and its rung is fixed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "inprocess.h"
#include "msb_inprocess.h"

#ifndef INPROCESS_NAME
#define INPROCESS_NAME "inprocess"
#endif
#ifndef INPROCESS_ISOLATION
#define INPROCESS_ISOLATION "none"
#endif

#ifndef INPROCESS_SILENT
static const msb_sandbox_limits widest_limits = {
	{ UINT64_MAX, UINT64_MAX, UINT64_MAX },
	{ UINT64_MAX, UINT64_MAX, UINT64_MAX },
};
static const bool can_observe_egress = true;
#endif

static const char *nz(const char *s)
{
	return s ? s : "";
}

void inproc_record_add(struct msb_backend_instance *self, const char *what, const char *text)
{
	if (self->n_record == self->cap_record) {
		size_t cap = self->cap_record ? self->cap_record * 2 : 16;
		inproc_record *r = realloc(self->record, cap * sizeof *r);
		if (!r)
			return; /* a lost record fails the test that reads it, never the call */
		self->record = r;
		self->cap_record = cap;
	}
	inproc_record *r = &self->record[self->n_record];
	r->what = strdup(what);
	r->text = strdup(nz(text));
	if (r->what && r->text)
		self->n_record++;
	else {
		free(r->what);
		free(r->text);
	}
}

static void sandbox_free(inproc_sandbox *sb)
{
	for (size_t i = 0; i < sb->n_files; i++) {
		free(sb->files[i].path);
		free(sb->files[i].data);
	}
	free(sb->files);
	inproc_bg_free(sb);
	free(sb->scope);
	free(sb);
}

void inproc_sandbox_unref(inproc_sandbox *sb)
{
	if (--sb->refs == 0)
		sandbox_free(sb);
}

static msb_errc inproc_init(const msb_node *config, const msb_host *host, msb_backend_instance **out,
			    msb_error *err)
{
	struct msb_backend_instance *self = calloc(1, sizeof *self);
	if (!self)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	pthread_mutex_init(&self->lock, NULL);
	pthread_cond_init(&self->entered, NULL);
	if (host)
		self->host = *host;
	msb_errc rc = inproc_config(self, config, err);
	if (rc) {
		inproc_config_free(self);
		pthread_cond_destroy(&self->entered);
		pthread_mutex_destroy(&self->lock);
		free(self);
		return rc;
	}
	*out = self;
	return MSB_OK;
}

static void inproc_fini(msb_backend_instance *self)
{
	while (self->sandboxes) {
		inproc_sandbox *sb = self->sandboxes;
		self->sandboxes = sb->next;
		sb->disposed = true;
		inproc_sandbox_unref(sb);
	}
	for (size_t i = 0; i < self->n_record; i++) {
		free(self->record[i].what);
		free(self->record[i].text);
	}
	free(self->record);
	inproc_config_free(self);
	pthread_cond_destroy(&self->entered);
	pthread_mutex_destroy(&self->lock);
	free(self);
}

#ifndef INPROCESS_SILENT
static const msb_declarations *inproc_declarations(msb_backend_instance *self)
{
	return &self->decl;
}
#endif

static bool same_key(const inproc_sandbox *sb, const msb_key *key)
{
	return strcmp(sb->scope, nz(key->scope)) == 0 && strcmp(sb->thread_id, nz(key->thread_id)) == 0 &&
	       strcmp(sb->agent_dir, nz(key->agent_dir)) == 0 && strcmp(sb->call_id, nz(key->call_id)) == 0;
}

/* Give `sb` the identity (key, kind): one allocation at sb->scope. false when out of memory. */
static bool sandbox_name(inproc_sandbox *sb, const msb_key *key, const char *kind)
{
	const char *parts[5] = { nz(key->scope), nz(key->thread_id), nz(key->agent_dir), nz(key->call_id), kind };
	size_t total = 0;
	for (int i = 0; i < 5; i++)
		total += strlen(parts[i]) + 1;
	char *buf = malloc(total);
	if (!buf)
		return false;
	free(sb->scope);
	char **fields[5] = { &sb->scope, &sb->thread_id, &sb->agent_dir, &sb->call_id, &sb->kind };
	for (int i = 0; i < 5; i++) {
		size_t n = strlen(parts[i]) + 1;
		memcpy(buf, parts[i], n);
		*fields[i] = buf;
		buf += n;
	}
	return true;
}

static inproc_sandbox *sandbox_new(const msb_key *key, const char *kind)
{
	inproc_sandbox *sb = calloc(1, sizeof *sb);
	if (!sb || !sandbox_name(sb, key, kind)) {
		free(sb);
		return NULL;
	}
	sb->refs = 1; /* the instance's list */
	return sb;
}

/*
 * Proof without a clock that a caller does not serialise acquires: each waits until
 * `acquire_barrier` of them are inside acquire at once, and fails if that never happens.
 */
static msb_errc meet_barrier(struct msb_backend_instance *self, msb_error *err)
{
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	double whole = (double)(long)self->acquire_barrier_timeout;
	deadline.tv_sec += (time_t)whole;
	deadline.tv_nsec += (long)((self->acquire_barrier_timeout - whole) * 1e9);
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&self->lock);
	self->acquires_entered++;
	pthread_cond_broadcast(&self->entered);
	int rc = 0;
	/* The first `acquire_barrier` acquires meet; any after them pass straight through. */
	while (self->acquires_entered < self->acquire_barrier && rc == 0)
		rc = pthread_cond_timedwait(&self->entered, &self->lock, &deadline);
	unsigned seen = self->acquires_entered;
	pthread_mutex_unlock(&self->lock);
	if (rc)
		return msb_error_set(err, MSB_E_TIMEOUT,
				     "inprocess backend '%s': only %u of %u acquires were ever in flight at "
				     "once (acquire_barrier): the caller serialised them",
				     INPROCESS_NAME, seen, self->acquire_barrier);
	return MSB_OK;
}

static msb_errc inproc_acquire(msb_backend_instance *self, const msb_key *key, const msb_spec *spec,
			       msb_sandbox_handle **out, msb_error *err)
{
	if (self->acquire_barrier) {
		msb_errc rc = meet_barrier(self, err);
		if (rc)
			return rc;
	}
	if (self->acquire_delay_us)
		usleep(self->acquire_delay_us); /* outside the lock: a slow engine, as racers see it */
	msb_sandbox_handle *h = calloc(1, sizeof *h);
	if (!h)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	pthread_mutex_lock(&self->lock);
	char text[1024];
	snprintf(text, sizeof text, "scope=%s thread=%s agent_dir=%s call_id=%s kind=%s", nz(key->scope),
		 nz(key->thread_id), nz(key->agent_dir), nz(key->call_id), spec->kind);
	inproc_record_add(self, "acquire", text);
	if (self->fail_acquire) {
		msb_errc code = (msb_errc)self->fail_acquire;
		pthread_mutex_unlock(&self->lock);
		free(h);
		return msb_error_set(err, code, "inprocess backend '%s': acquire failed as injected (%s)",
				     INPROCESS_NAME, text);
	}
	inproc_sandbox *sb = self->sandboxes;
	while (sb && !(same_key(sb, key) && strcmp(sb->kind, spec->kind) == 0))
		sb = sb->next;
	if (!sb) {
		sb = sandbox_new(key, spec->kind);
		if (!sb) {
			pthread_mutex_unlock(&self->lock);
			free(h);
			return msb_error_set(err, MSB_E_NOMEM, "out of memory");
		}
		sb->next = self->sandboxes;
		self->sandboxes = sb;
	}
	sb->refs++;
	pthread_mutex_unlock(&self->lock);
	h->self = self;
	h->sb = sb;
	*out = h;
	return MSB_OK;
}

static inproc_sandbox *find(struct msb_backend_instance *self, const msb_key *key, const char *kind)
{
	inproc_sandbox *sb = self->sandboxes;
	while (sb && !(same_key(sb, key) && strcmp(sb->kind, kind) == 0))
		sb = sb->next;
	return sb;
}

/*
 * Adoption (issue 22): the entry's sandbox, files and all, renamed to the key under the
 * instance's lock, so of two racing adopts of one entry the second finds it gone.
 */
static msb_errc inproc_adopt(msb_backend_instance *self, const msb_key *entry, const msb_key *key,
			     const msb_spec *spec, msb_sandbox_handle **out, msb_error *err)
{
	msb_sandbox_handle *h = calloc(1, sizeof *h);
	if (!h)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	pthread_mutex_lock(&self->lock);
	char text[1024];
	snprintf(text, sizeof text, "entry=%s scope=%s thread=%s agent_dir=%s call_id=%s kind=%s",
		 nz(entry->call_id), nz(key->scope), nz(key->thread_id), nz(key->agent_dir),
		 nz(key->call_id), spec->kind);
	inproc_record_add(self, "adopt", text);
	inproc_sandbox *sb = find(self, entry, spec->kind);
	msb_errc rc = MSB_OK;
	if (!sb)
		rc = msb_error_set(err, MSB_E_NOT_FOUND, "inprocess backend '%s': no sandbox of pool "
				   "entry '%s' (kind '%s') to adopt", INPROCESS_NAME, nz(entry->call_id),
				   spec->kind);
	else if (find(self, key, spec->kind)) {
		/* The key's own is there: the entry stays an entry (the contract's OK, no handle). */
		pthread_mutex_unlock(&self->lock);
		free(h);
		*out = NULL;
		return MSB_OK;
	} else if (!sandbox_name(sb, key, spec->kind))
		rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
	if (rc == MSB_OK)
		sb->refs++;
	pthread_mutex_unlock(&self->lock);
	if (rc != MSB_OK) {
		free(h);
		return rc;
	}
	h->self = self;
	h->sb = sb;
	*out = h;
	return MSB_OK;
}

static void inproc_release(msb_sandbox_handle *h)
{
	struct msb_backend_instance *self = h->self;
	pthread_mutex_lock(&self->lock);
	inproc_record_add(self, "release", h->sb->kind);
	inproc_sandbox_unref(h->sb);
	pthread_mutex_unlock(&self->lock);
	free(h);
}

/* Under the lock: unlink and drop every sandbox `pick` accepts; count them. */
static uint64_t remove_where(struct msb_backend_instance *self,
			     bool (*pick)(const inproc_sandbox *, const void *), const void *arg)
{
	uint64_t n = 0;
	for (inproc_sandbox **pp = &self->sandboxes; *pp;) {
		inproc_sandbox *sb = *pp;
		if (!pick(sb, arg)) {
			pp = &sb->next;
			continue;
		}
		*pp = sb->next;
		sb->disposed = true;
		inproc_sandbox_unref(sb);
		n++;
	}
	return n;
}

static bool pick_key(const inproc_sandbox *sb, const void *key)
{
	return same_key(sb, key);
}

static bool inproc_dispose(msb_backend_instance *self, const msb_key *key, msb_disposal_failure *failure)
{
	pthread_mutex_lock(&self->lock);
	char text[1024];
	snprintf(text, sizeof text, "scope=%s thread=%s agent_dir=%s call_id=%s", nz(key->scope),
		 nz(key->thread_id), nz(key->agent_dir), nz(key->call_id));
	inproc_record_add(self, "dispose", text);
	bool failed = self->fail_dispose >= 0;
	if (failed)
		/* The delete did not land, so the sandboxes stay: that is what the code says. */
		msb_disposal_failure_set(failure, (msb_disposal_code)self->fail_dispose,
					 "inprocess backend '%s': the delete of %s did not land (%s, injected)",
					 INPROCESS_NAME, text,
					 msb_word_name(MSB_AXIS_DISPOSAL_CODE, self->fail_dispose));
	else
		remove_where(self, pick_key, key);
	pthread_mutex_unlock(&self->lock);
	return failed;
}

struct conversation {
	const char *scope, *thread_id;
};

static bool pick_conversation(const inproc_sandbox *sb, const void *arg)
{
	const struct conversation *c = arg;
	return strcmp(sb->scope, c->scope) == 0 && strcmp(sb->thread_id, c->thread_id) == 0;
}

static void inproc_dispose_scope(msb_backend_instance *self, const char *scope, const char *thread_id,
				 msb_scope_purge *purge)
{
	const struct conversation c = { nz(scope), nz(thread_id) };
	pthread_mutex_lock(&self->lock);
	char text[512];
	snprintf(text, sizeof text, "scope=%s thread=%s", c.scope, c.thread_id);
	inproc_record_add(self, "dispose_scope", text);
	if (self->fail_dispose_scope >= 0) {
		purge->has_undisposed = true;
		msb_disposal_failure_set(&purge->undisposed, (msb_disposal_code)self->fail_dispose_scope,
					 "inprocess backend '%s': the purge of %s did not land (%s, injected)",
					 INPROCESS_NAME, text,
					 msb_word_name(MSB_AXIS_DISPOSAL_CODE, self->fail_dispose_scope));
	} else {
		purge->disposed += remove_where(self, pick_conversation, &c);
	}
	pthread_mutex_unlock(&self->lock);
}

/*
 * INPROCESS_SILENT builds a plugin that states no declaration at all, so a test can watch
 * every field's silence rule reach the router: {exec, files_in}, the default ceilings, no
 * egress mode (every spec refused), no OS family, {conversation}, no egress observation.
 */
#ifdef INPROCESS_SILENT
#define INPROCESS_DECLARATIONS .declarations = { 0 }, .instance_declarations = NULL
#else
#define INPROCESS_DECLARATIONS                                                                     \
	.declarations = {                                                                          \
		/* Not `snapshot`: it has operations now (issue 22), which this fake lacks. */ \
		.capabilities = MSB_WORDS("exec", "run_code", "host_tools", "files_in", "files_out", \
					  "files_list", "files_delete", "attached_identity"),        \
		.limits = &widest_limits,                                                          \
		.egress_modes = MSB_WORDS("unrestricted", "allowlist", "closed"),                  \
		.os_families = MSB_WORDS("posix", "windows"),                                      \
		.isolation_scopes = MSB_WORDS("conversation", "call"),                             \
		.observes_egress = &can_observe_egress,                                            \
	},                                                                                         \
	.instance_declarations = inproc_declarations
#endif

MSB_BACKEND_DEFINE(
	.name = INPROCESS_NAME,
	.isolation = INPROCESS_ISOLATION,
	INPROCESS_DECLARATIONS,
	.init = inproc_init,
	.fini = inproc_fini,
	.acquire = inproc_acquire,
	.dispose = inproc_dispose,
	.dispose_scope = inproc_dispose_scope,
	.release = inproc_release,
	.exec = inproc_exec,
	.run_code = inproc_run_code,
	.write_file = inproc_write_file,
	.stat_file = inproc_stat_file,
	.read_file = inproc_read_file,
	.list_dir = inproc_list_dir,
	.remove = inproc_remove,
	.reclaim = inproc_reclaim,
	.exec_stream = inproc_exec_stream,
	.bg_start = inproc_bg_start,
	.bg_read = inproc_bg_read,
	.bg_signal = inproc_bg_signal,
	.bg_list = inproc_bg_list,
	.adopt = inproc_adopt,
);

/* ---- test hooks (msb_inprocess.h) ------------------------------------------------ */

MSB_EXPORT size_t msb_inprocess_count(msb_backend_instance *self, const char *what);
MSB_EXPORT bool msb_inprocess_recorded(msb_backend_instance *self, const char *what, size_t i,
				       char *buf, size_t size);
MSB_EXPORT int msb_inprocess_inject(msb_backend_instance *self, const char *what, const char *value);
MSB_EXPORT size_t msb_inprocess_live(msb_backend_instance *self);
MSB_EXPORT void msb_inprocess_egress(msb_backend_instance *self, const msb_key *key,
				     const char *destination, bool allowed);

size_t msb_inprocess_count(msb_backend_instance *self, const char *what)
{
	size_t n = 0;
	pthread_mutex_lock(&self->lock);
	for (size_t i = 0; i < self->n_record; i++)
		n += strcmp(self->record[i].what, what) == 0;
	pthread_mutex_unlock(&self->lock);
	return n;
}

bool msb_inprocess_recorded(msb_backend_instance *self, const char *what, size_t i, char *buf, size_t size)
{
	bool found = false;
	pthread_mutex_lock(&self->lock);
	for (size_t j = 0; j < self->n_record && !found; j++)
		if (strcmp(self->record[j].what, what) == 0 && i-- == 0) {
			snprintf(buf, size, "%s", self->record[j].text);
			found = true;
		}
	pthread_mutex_unlock(&self->lock);
	return found;
}

int msb_inprocess_inject(msb_backend_instance *self, const char *what, const char *value)
{
	int v = -1;
	int rc = 0;
	pthread_mutex_lock(&self->lock);
	if (strcmp(what, "acquire") == 0) {
		msb_errc code = value ? msb_errc_from_name(value) : MSB_OK;
		if (code == MSB_E__COUNT)
			rc = -1;
		else
			self->fail_acquire = (int)code;
	} else if (strcmp(what, "dispose") == 0 || strcmp(what, "dispose_scope") == 0) {
		if (value && msb_word_parse(MSB_AXIS_DISPOSAL_CODE, value, &v, NULL) != MSB_OK)
			rc = -1;
		else if (what[7] == '\0')
			self->fail_dispose = value ? v : -1;
		else
			self->fail_dispose_scope = value ? v : -1;
	} else {
		rc = -1;
	}
	pthread_mutex_unlock(&self->lock);
	return rc;
}

size_t msb_inprocess_live(msb_backend_instance *self)
{
	size_t n = 0;
	pthread_mutex_lock(&self->lock);
	for (const inproc_sandbox *sb = self->sandboxes; sb; sb = sb->next)
		n++;
	pthread_mutex_unlock(&self->lock);
	return n;
}

void msb_inprocess_egress(msb_backend_instance *self, const msb_key *key, const char *destination,
			  bool allowed)
{
	if (self->host.egress_observed)
		self->host.egress_observed(self->host.ctx, key, destination, allowed);
}
