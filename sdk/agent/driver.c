/*
 * driver.c — the backend operations every agent-backed backend shares: init, acquire (one
 * sandbox per key and kind, across processes), dispose and dispose_scope (truthful).
 *
 * acquire holds the sandbox's file lock from "is there a live agent?" to "the new one
 * answers", so two processes racing on one key meet one sandbox; it never holds any lock
 * but that sandbox's, so slow starts of different sandboxes do not serialise. Disposal
 * verifies rather than assumes: the recorded process must be gone and the directory must
 * be gone, or the failure is reported with the code that says what to do about it.
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <msb/confine.h>

#include "driver_internal.h"

/* How long a killed boundary process gets to disappear before disposal says "timeout". */
#define KILL_WAIT_MS 5000
/* How long an agent asked to shut down gets before it is SIGKILLed. */
#define SHUTDOWN_WAIT_MS 2000

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

msb_errc msb_driver_init(const msb_boundary *boundary, const msb_node *config,
			 const msb_host *host, const char *const *extra_keys,
			 msb_backend_instance **self, msb_error *err)
{
	msb_backend_instance *inst = calloc(1, sizeof *inst);
	if (!inst) {
		if (boundary->ctx_free)
			boundary->ctx_free(boundary->ctx);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	size_t n = boundary->struct_size < sizeof inst->boundary ? boundary->struct_size
								   : sizeof inst->boundary;
	memcpy(&inst->boundary, boundary, n);
	pthread_mutex_init(&inst->egress_lock, NULL);
	/* A host built before a field was appended hands a shorter struct: copy what it has. */
	if (host && host->struct_size >= offsetof(msb_host, egress_observed) + sizeof host->egress_observed) {
		memcpy(&inst->host, host, host->struct_size < sizeof *host ? host->struct_size : sizeof *host);
		inst->has_host = true;
	}
	msb_errc rc = MSB_OK;
	if (!inst->boundary.name || !inst->boundary.start || !inst->boundary.stop)
		rc = msb_error_set(err, MSB_E_VALUE,
				   "driver refused a boundary without a name, start or stop");
	if (rc == MSB_OK)
		rc = driver_config_parse(inst, config, extra_keys, err);
	if (rc == MSB_OK && inst->boundary.configure)
		rc = inst->boundary.configure(inst->boundary.ctx, config, &inst->config, err);
	if (rc != MSB_OK) {
		msb_driver_fini(inst);
		return rc;
	}
	*self = inst;
	return MSB_OK;
}

void msb_driver_fini(msb_backend_instance *inst)
{
	if (!inst)
		return;
	driver_egress_fini(inst);
	if (inst->boundary.ctx_free)
		inst->boundary.ctx_free(inst->boundary.ctx);
	driver_config_free(inst);
	free(inst);
}

const msb_driver_config *msb_driver_instance_config(const msb_backend_instance *self)
{
	return &self->config;
}

void *msb_driver_instance_ctx(const msb_backend_instance *self)
{
	return self->boundary.ctx;
}

msb_errc msb_driver_agent_argv(const msb_driver_box *box, const char *mode, const char *mode_arg,
			       const char *work_dir, const char *work_alias, int ready_fd,
			       char ***argv, msb_error *err)
{
	msb_agent_config c = box->config->agent;
	c.work_dir = work_dir ? work_dir : box->work_dir;
	c.work_alias = work_alias;
	msb_driver_egress_agent_config(box, &c);
	c.image_env = box->image_env;
	if (box->has_image_user) {
		c.uid = box->image_uid;
		c.gid = box->image_gid;
	}
	return msb_agent_config_argv(box->config->agent_path, mode, mode_arg, &c, ready_fd, argv,
				     err);
}

static void log_msg(msb_backend_instance *inst, msb_log_level level, const char *msg)
{
	if (inst->has_host && inst->host.log)
		inst->host.log(inst->host.ctx, level, msg);
}

/* Connect to a live agent of this sandbox, or fail quietly. */
static msb_agent_client *connect_live(msb_backend_instance *inst, driver_paths *p, double timeout)
{
	if (!msb_driver_read_live_pid(&p->box))
		return NULL;
	if (inst->boundary.alive && !inst->boundary.alive(inst->boundary.ctx, &p->box))
		return NULL;
	msb_agent_client *client = NULL;
	if (msb_agent_client_open_unix(p->sock, timeout, &client, NULL) != MSB_OK)
		return NULL;
	return client;
}

/* Wait for a just-started agent to answer HELLO. */
static msb_errc await_agent(msb_backend_instance *inst, driver_paths *p, msb_agent_client **out,
			    msb_error *err)
{
	int64_t deadline = msb_agent_now_ms() + (int64_t)(inst->config.start_timeout * 1000.0);
	msb_error last = MSB_ERROR_INIT;
	for (int delay = 1;; delay = delay < 50 ? delay * 2 : 50) {
		msb_error_clear(&last);
		double left = (double)(deadline - msb_agent_now_ms()) / 1000.0;
		if (msb_agent_client_open_unix(p->sock, left > 0.05 ? left : 0.05, out, &last) == MSB_OK)
			return MSB_OK;
		if (last.code == MSB_E_PROTOCOL || msb_agent_now_ms() >= deadline)
			break;
		sleep_ms(delay);
	}
	msb_error_move(err, &last);
	return msb_error_prefix(err, "backend %s: sandbox %s: the agent did not answer within "
				"%.1f s: ", inst->boundary.name, p->name, inst->config.start_timeout);
}

/* The image's User into the box, when the boundary reads one (inst->boundary is zero past
 * the plugin's struct_size, so an older boundary has none). */
static msb_errc driver_image_user(msb_backend_instance *inst, driver_paths *p,
				  const msb_spec *spec, msb_error *err)
{
	const msb_boundary *b = &inst->boundary;
	if (!b->image_user)
		return MSB_OK;
	long uid = -1, gid = -1;
	msb_errc rc = b->image_user(b->ctx, spec, &uid, &gid, err);
	if (rc != MSB_OK)
		return msb_error_prefix(err, "backend %s: sandbox %s: ", b->name, p->name);
	if (uid >= 0) {
		p->box.has_image_user = true;
		p->box.image_uid = uid;
		p->box.image_gid = gid >= 0 ? gid : 0;
	}
	return rc;
}

static msb_errc start_fresh(msb_backend_instance *inst, driver_paths *p, const driver_key *k,
			    const msb_spec *spec, msb_agent_client **client, msb_error *err)
{
	if (mkdir(p->dir, 0700) < 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend %s: sandbox %s: mkdir %s",
					   inst->boundary.name, p->name, p->dir);
	msb_errc rc = MSB_OK;
	if (mkdir(p->work, 0700) < 0)
		rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend %s: mkdir %s",
					 inst->boundary.name, p->work);
	if (rc == MSB_OK)
		rc = driver_meta_write(p, k, spec->kind, err);
	msb_agent_client *greeted = NULL;
	p->box.spec = spec;
	p->box.greeted = &greeted;
	if (rc == MSB_OK)
		rc = driver_egress_prepare(inst, p, spec, err);
	if (rc == MSB_OK && inst->boundary.image_config)
		rc = inst->boundary.image_config(inst->boundary.ctx, spec, &p->box.image_env, err);
	if (rc == MSB_OK)
		rc = driver_image_user(inst, p, spec, err);
	if (rc == MSB_OK)
		rc = inst->boundary.start(inst->boundary.ctx, &p->box, err);
	p->box.image_env = NULL;
	p->box.has_image_user = false;
	p->box.spec = NULL;
	p->box.greeted = NULL;
	p->box.egress_socket = NULL;
	if (rc == MSB_OK && greeted)
		*client = greeted;
	else if (rc == MSB_OK)
		rc = await_agent(inst, p, client, err);
	else
		msb_agent_client_close(greeted);
	if (rc != MSB_OK) {
		msb_disposal_failure f = { 0 };
		if (driver_teardown(inst, p, &f)) {
			char msg[512];
			snprintf(msg, sizeof msg, "backend %s: sandbox %s: cleanup after a failed start "
				 "left something behind: %s", inst->boundary.name, p->name, f.detail);
			log_msg(inst, MSB_LOG_WARNING, msg);
		}
		msb_disposal_failure_free(&f);
	}
	return rc;
}

/* <dir>/identity holds exactly `identity` ("" and no file are the same: nothing recorded). */
bool driver_identity_matches(const driver_paths *p, const char *identity)
{
	char *path = msb_driver_path(p->dir, "identity");
	FILE *f = path ? fopen(path, "re") : NULL;
	free(path);
	char got[DRIVER_IDENTITY_MAX] = "";
	size_t n = f ? fread(got, 1, sizeof got - 1, f) : 0;
	got[n] = '\0';
	if (f)
		fclose(f);
	return !strcmp(got, identity);
}

static msb_errc driver_identity_write(const driver_paths *p, const char *identity,
				      msb_error *err)
{
	if (!identity[0])
		return MSB_OK;
	char *path = msb_driver_path(p->dir, "identity");
	FILE *f = path ? fopen(path, "we") : NULL;
	bool ok = f && fputs(identity, f) >= 0;
	if (f && fclose(f) != 0)
		ok = false;
	msb_errc rc = ok ? MSB_OK : msb_error_set_errno(err, MSB_E_BACKEND, errno, "sandbox %s: "
							 "writing its identity", p->name);
	free(path);
	return rc;
}

/*
 * A dead sandbox of the key with entries left in its work dir: SandboxUnclean, naming how
 * many and the first in name order (the same whatever order the directory lists). An empty one is replaced (an agent that died with nothing to hide),
 * and the host's log hears of it.
 */
static msb_errc driver_refuse_unclean(msb_backend_instance *inst, driver_paths *p, msb_error *err)
{
	DIR *d = opendir(p->work);
	size_t n = 0;
	char first[256] = "";
	for (struct dirent *e; d && (e = readdir(d));) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (!n++ || strcmp(e->d_name, first) < 0)
			snprintf(first, sizeof first, "%s", e->d_name);
	}
	if (d)
		closedir(d);
	if (n == 0) {
		char msg[256];
		snprintf(msg, sizeof msg, "backend %s: sandbox %s: its agent was dead, with nothing left "
			 "in its work dir: replaced", inst->boundary.name, p->name);
		log_msg(inst, MSB_LOG_WARNING, msg);
		return MSB_OK;
	}
	return msb_error_set(err, MSB_E_UNCLEAN,
			     "backend %s: sandbox %s of this key is not live and was never disposed: its "
			     "work dir %s still holds %zu entr%s (first: %s); the last dispose did not land "
			     "or its boundary died — dispose the key to clear it", inst->boundary.name,
			     p->name, p->work, n, n == 1 ? "y" : "ies", first);
}

msb_errc msb_driver_acquire(msb_backend_instance *inst, const msb_key *key, const msb_spec *spec,
			    msb_sandbox_handle **out, msb_error *err)
{
	return msb_driver_acquire_from(inst, key, spec, NULL, out, err);
}

msb_errc msb_driver_acquire_from(msb_backend_instance *inst, const msb_key *key,
				 const msb_spec *spec, const char *from_dir,
				 msb_sandbox_handle **out, msb_error *err)
{
	msb_sandbox_handle *h = calloc(1, sizeof *h);
	if (!h)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	h->inst = inst;
	msb_errc rc = driver_egress_check(inst, spec, err);
	if (rc != MSB_OK) {
		free(h);
		return rc;
	}
	driver_key k;
	driver_key_from(key, &k);
	char name[36];
	msb_driver_sandbox_name(inst->config.state_dir, key, spec->kind, name);
	rc = driver_paths_make(inst, name, &h->paths, err);
	if (rc != MSB_OK) {
		free(h);
		return rc;
	}
	int lock = driver_lock(&h->paths, err);
	if (lock < 0) {
		driver_paths_free(&h->paths);
		free(h);
		return MSB_E_BACKEND;
	}
	struct stat st;
	bool exists = lstat(h->paths.dir, &st) == 0;
	char identity[DRIVER_IDENTITY_MAX] = "";
	if (inst->boundary.identity)
		rc = inst->boundary.identity(inst->boundary.ctx, spec, identity, sizeof identity, err);
	/* The same sandbox: this key's, of the image identity the boundary names today. */
	bool same = rc == MSB_OK && exists && driver_meta_matches(&h->paths, &k, false) &&
		    driver_identity_matches(&h->paths, identity);
	if (same)
		h->client = connect_live(inst, &h->paths, 2.0);
	/* A fork is a new sandbox: a live one of the key is not replaced behind its users. */
	if (from_dir && h->client) {
		msb_agent_client_close(h->client);
		h->client = NULL;
		rc = msb_error_set(err, MSB_E_VALUE, "backend %s: sandbox %s: refused to start it "
				   "from a snapshot: this key's sandbox is live (dispose it first, or "
				   "use another key)", inst->boundary.name, name);
	}
	/*
	 * This key's sandbox is there but dead, and its work dir still holds what it left: a
	 * dispose that did not land (or a boundary that died). Wiping it now would hide that
	 * from whoever checks by acquiring again, so the key is refused until it is disposed.
	 * One of another image identity is replaced as before (the image changed under it).
	 */
	if (rc == MSB_OK && !h->client && same)
		rc = driver_refuse_unclean(inst, &h->paths, err);
	if (rc == MSB_OK && !h->client) {
		/* Whatever is there is not a live sandbox of this key: clear it, start afresh. */
		msb_disposal_failure f = { 0 };
		bool left = exists && driver_teardown(inst, &h->paths, &f);
		if (left)
			rc = msb_error_set(err, MSB_E_BACKEND,
					   "backend %s: sandbox %s: a stale sandbox could not be "
					   "cleared before a fresh start: %s", inst->boundary.name,
					   name, f.detail ? f.detail : "");
		msb_disposal_failure_free(&f);
		h->paths.box.from_snapshot = from_dir;
		if (rc == MSB_OK)
			rc = start_fresh(inst, &h->paths, &k, spec, &h->client, err);
		h->paths.box.from_snapshot = NULL;
		if (rc == MSB_OK)
			rc = driver_identity_write(&h->paths, identity, err);
	}
	if (rc == MSB_OK) {
		rc = driver_egress_serve(inst, &h->paths, key, spec, err);
		if (rc != MSB_OK) {
			msb_agent_client_close(h->client);
			h->client = NULL;
		}
	}
	/* A start that failed and was cleaned up leaves no sandbox: its lock file goes too. */
	struct stat left;
	if (rc != MSB_OK && lstat(h->paths.dir, &left) < 0 && errno == ENOENT)
		driver_unlock_remove(&h->paths, lock);
	else
		close(lock);
	if (rc != MSB_OK) {
		driver_paths_free(&h->paths);
		free(h);
		return rc;
	}
	*out = h;
	return MSB_OK;
}

/* Wait up to `ms` for the recorded process to be gone; true when it is. */
static bool wait_gone(driver_paths *p, int ms)
{
	int64_t deadline = msb_agent_now_ms() + ms;
	pid_t pid = msb_driver_read_live_pid(&p->box);
	if (!pid)
		return true;
	/*
	 * A pidfd (opened after the start time was checked, so it is this process and not a
	 * recycled pid) becomes readable the moment the process exits, even for a process
	 * that is not our child; without one, poll the pid file's process with a backoff.
	 */
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	for (long us = 50;; us = us < 5000 ? us * 2 : 5000) {
		if (!msb_driver_read_live_pid(&p->box))
			break;
		int64_t left = deadline - msb_agent_now_ms();
		if (left <= 0)
			break;
		if (pidfd >= 0) {
			struct pollfd pf = { .fd = pidfd, .events = POLLIN };
			poll(&pf, 1, (int)left);
		} else {
			struct timespec ts = { 0, us * 1000L };
			nanosleep(&ts, NULL);
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	return !msb_driver_read_live_pid(&p->box);
}

/* SIGKILL the recorded process and wait for it to be gone. */
static bool kill_recorded(msb_backend_instance *inst, driver_paths *p, msb_disposal_failure *f)
{
	pid_t pid = msb_driver_read_live_pid(&p->box);
	if (!pid)
		return false;
	if (kill(pid, SIGKILL) < 0 && errno == EPERM) {
		msb_disposal_failure_set(f, MSB_DISPOSAL_REFUSED,
					 "backend %s: sandbox %s: not permitted to kill its process %ld",
					 inst->boundary.name, p->name, (long)pid);
		return true;
	}
	if (wait_gone(p, KILL_WAIT_MS))
		return false;
	msb_disposal_failure_set(f, MSB_DISPOSAL_TIMEOUT,
				 "backend %s: sandbox %s: its process %ld survived SIGKILL for %d ms",
				 inst->boundary.name, p->name, (long)pid, KILL_WAIT_MS);
	return true;
}

static bool remove_dir(msb_backend_instance *inst, driver_paths *p, msb_disposal_failure *f)
{
	msb_error e = MSB_ERROR_INIT;
	/*
	 * The work directory first: it is what a guest can make hard to remove, and while it
	 * fails the metadata stays, so a later dispose or dispose_scope still finds the sandbox.
	 */
	msb_errc rc = msb_confine_reclaim(p->work, p->dir, &e);
	if (rc == MSB_OK)
		rc = msb_confine_reclaim(p->dir, inst->config.state_dir, &e);
	struct stat st;
	if (rc == MSB_OK && lstat(p->dir, &st) < 0 && errno == ENOENT) {
		msb_error_clear(&e);
		return false;
	}
	msb_disposal_code code = rc == MSB_E_PERMISSION ? MSB_DISPOSAL_REFUSED : MSB_DISPOSAL_UNKNOWN;
	msb_disposal_failure_set(f, code, "backend %s: sandbox %s: its directory %s could not be "
				 "removed: %s", inst->boundary.name, p->name, p->dir,
				 rc == MSB_OK ? "it is still there" : msb_error_message(&e));
	msb_error_clear(&e);
	return true;
}

bool driver_teardown(msb_backend_instance *inst, driver_paths *p, msb_disposal_failure *failure)
{
	bool left = false;
	msb_disposal_failure f = { 0 };
	driver_egress_forget(inst, p);
	/*
	 * Ask the agent first: it kills what its commands left running, daemons included —
	 * unless the boundary's own death does that (a pid namespace's init).
	 */
	msb_agent_client *client = inst->boundary.pid_ends_all ? NULL : connect_live(inst, p, 1.0);
	if (client) {
		/* Given the chance, the agent kills its descendants and exits on its own. */
		if (msb_agent_shutdown(client, 2.0, NULL) == MSB_OK)
			wait_gone(p, SHUTDOWN_WAIT_MS);
		msb_agent_client_close(client);
	}
	p->box.spec = NULL;
	/* true is failed (msb/driver.h), and so is a failure filled whatever the return. */
	if (inst->boundary.stop(inst->boundary.ctx, &p->box, &f) || f.detail) {
		left = true;
		if (!f.detail)
			msb_disposal_failure_set(&f, MSB_DISPOSAL_UNKNOWN,
						 "backend %s: sandbox %s: its boundary's stop reported "
						 "a failure without saying what it left",
						 inst->boundary.name, p->name);
		msb_disposal_failure_fold(failure, &f);
	}
	if (kill_recorded(inst, p, &f)) {
		msb_disposal_failure_fold(failure, &f);
		return true; /* a live process may still use the directory: keep it addressable */
	}
	/*
	 * (bwrap engineer) The boundary left something it knows of (e.g. a cgroup it could not
	 * empty): keep the directory, whose files are how its stop finds that thing again, so
	 * a later dispose retries instead of forgetting it.
	 */
	if (left)
		return true;
	if (remove_dir(inst, p, &f)) {
		msb_disposal_failure_fold(failure, &f);
		return true;
	}
	return left;
}

/* Dispose every sandbox in the state directory whose metadata matches. */
static void dispose_matching(msb_backend_instance *inst, const driver_key *k, bool scope_only,
			     uint64_t *count, bool *failed, msb_disposal_failure *failure)
{
	DIR *d = opendir(inst->config.state_dir);
	if (!d) {
		if (errno != ENOENT) {
			msb_disposal_failure f = { 0 };
			msb_disposal_failure_set(&f, MSB_DISPOSAL_UNLISTED,
						 "backend %s: state directory %s cannot be listed: %s",
						 inst->boundary.name, inst->config.state_dir,
						 strerror(errno));
			msb_disposal_failure_fold(failure, &f);
			*failed = true;
		}
		return;
	}
	/*
	 * A name begins with hashes of its scope and thread, then of its whole key (driver_box.c),
	 * so only the sandboxes that can match have their metadata read: a dispose costs the same
	 * among a thousand sandboxes as among none. Names of the earlier form ("sb-", one hash)
	 * are still read one by one, so a sandbox an earlier msb started is found too.
	 */
	char prefix[DRIVER_PREFIX_MAX];
	size_t prefix_len = driver_name_prefix(inst->config.state_dir, k, scope_only, prefix);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strlen(de->d_name) != 35)
			continue;
		if (strncmp(de->d_name, prefix, prefix_len) && strncmp(de->d_name, "sb-", 3))
			continue;
		driver_paths p;
		if (driver_paths_make(inst, de->d_name, &p, NULL) != MSB_OK)
			continue;
		if (driver_meta_matches(&p, k, scope_only)) {
			int lock = driver_lock(&p, NULL);
			/* Matched again under the lock: another process may have disposed it. */
			if (lock >= 0 && driver_meta_matches(&p, k, scope_only)) {
				msb_disposal_failure f = { 0 };
				if (driver_teardown(inst, &p, &f)) {
					msb_disposal_failure_fold(failure, &f);
					*failed = true;
					close(lock);
				} else {
					(*count)++;
					driver_unlock_remove(&p, lock);
				}
			} else if (lock >= 0) {
				close(lock);
			} else {
				msb_disposal_failure f = { 0 };
				msb_disposal_failure_set(&f, MSB_DISPOSAL_UNKNOWN,
							 "backend %s: sandbox %s: its lock could not "
							 "be taken", inst->boundary.name, p.name);
				msb_disposal_failure_fold(failure, &f);
				*failed = true;
			}
		}
		driver_paths_free(&p);
	}
	closedir(d);
}

bool msb_driver_dispose(msb_backend_instance *inst, const msb_key *key,
			msb_disposal_failure *failure)
{
	driver_key k;
	driver_key_from(key, &k);
	uint64_t count = 0;
	bool failed = false;
	dispose_matching(inst, &k, false, &count, &failed, failure);
	return failed;
}

void msb_driver_dispose_scope(msb_backend_instance *inst, const char *scope,
			      const char *thread_id, msb_scope_purge *purge)
{
	msb_key key = { .scope = scope, .thread_id = thread_id };
	driver_key k;
	driver_key_from(&key, &k);
	bool failed = false;
	dispose_matching(inst, &k, true, &purge->disposed, &failed, &purge->undisposed);
	purge->has_undisposed = purge->has_undisposed || failed;
}
