/* shelf.c — a files-only msb backend: each sandbox is a directory under `root`. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <msb/backend.h>
#include <msb/confine.h>

struct msb_backend_instance {
	char root[1024];
};

struct msb_sandbox_handle {
	char dir[1200]; /* the host directory standing in for the guest's "/" */
	char work_dir[1024];
};

/* A name per (scope, thread), then per (agent, call), then per kind: dispose and
 * dispose_scope find a key's sandboxes by prefix. call_id is in the name, so two calls
 * never share a directory — which is what declaring the `call` scope claims. */
static unsigned long hash(unsigned long h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ul;
	return (h ^ 0xff) * 1099511628211ul;
}

static void key_prefix(const msb_key *k, bool with_agent, char *buf, size_t n)
{
	unsigned long conv = hash(hash(14695981039346656037ul, k->scope), k->thread_id);
	if (!with_agent)
		snprintf(buf, n, "%016lx-", conv);
	else
		snprintf(buf, n, "%016lx-%016lx-", conv,
			 hash(hash(14695981039346656037ul, k->agent_dir), k->call_id));
}

static msb_errc shelf_init(const msb_node *config, const msb_host *host,
			   msb_backend_instance **out, msb_error *err)
{
	static const char *const keys[] = { "root", NULL };
	const char *root = NULL;
	(void)host;
	msb_errc rc = msb_node_check_keys(config, keys, err);
	if (rc == MSB_OK)
		rc = msb_node_string(config, "root", &root, err);
	if (rc != MSB_OK)
		return rc;
	if (!root || root[0] != '/')
		return msb_error_set(err, MSB_E_CONFIG, "shelf: config needs an absolute `root:`");
	msb_backend_instance *self = calloc(1, sizeof *self);
	if (!self)
		return msb_error_set(err, MSB_E_NOMEM, "shelf: out of memory");
	snprintf(self->root, sizeof self->root, "%s", root);
	mkdir(self->root, 0700);
	*out = self;
	return MSB_OK;
}

static void shelf_fini(msb_backend_instance *self)
{
	free(self);
}

static msb_errc shelf_acquire(msb_backend_instance *self, const msb_key *key,
			      const msb_spec *spec, msb_sandbox_handle **out, msb_error *err)
{
	msb_sandbox_handle *h = calloc(1, sizeof *h);
	if (!h)
		return msb_error_set(err, MSB_E_NOMEM, "shelf: out of memory");
	char prefix[40];
	key_prefix(key, true, prefix, sizeof prefix);
	snprintf(h->dir, sizeof h->dir, "%s/%s%016lx", self->root, prefix,
		 hash(14695981039346656037ul, spec->kind));
	snprintf(h->work_dir, sizeof h->work_dir, "%s", spec->work_dir);
	/* The guest's work dir, made beneath the sandbox directory, never through a link. */
	int fd;
	msb_errc rc = mkdir(h->dir, 0700) == 0 || access(h->dir, F_OK) == 0
			      ? msb_confine_open_root(h->dir, &fd, err)
			      : msb_error_set(err, MSB_E_BACKEND, "shelf: cannot make %s", h->dir);
	if (rc == MSB_OK) {
		rc = msb_confine_mkdirs(fd, spec->work_dir + 1, err);
		close(fd);
	}
	if (rc != MSB_OK) {
		free(h);
		return rc;
	}
	*out = h;
	return MSB_OK;
}

/* Remove every sandbox whose name starts with `prefix`; count them; say what did not go. */
static bool remove_prefixed(msb_backend_instance *self, const char *prefix, uint64_t *count,
			    msb_disposal_failure *failure)
{
	bool failed = false;
	DIR *d = opendir(self->root);
	for (struct dirent *e; d && (e = readdir(d));) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		char dir[1400];
		snprintf(dir, sizeof dir, "%s/%s", self->root, e->d_name);
		msb_error err = MSB_ERROR_INIT;
		if (msb_confine_reclaim(dir, self->root, &err) == MSB_OK) {
			if (count)
				++*count;
		} else if (!failed) {
			failed = true; /* a delete that did not land is said, never swallowed */
			msb_disposal_failure_set(failure, MSB_DISPOSAL_UNKNOWN, "shelf: %s",
						 msb_error_message(&err));
		}
		msb_error_clear(&err);
	}
	if (d)
		closedir(d);
	return failed;
}

static bool shelf_dispose(msb_backend_instance *self, const msb_key *key,
			  msb_disposal_failure *failure)
{
	char prefix[40];
	key_prefix(key, true, prefix, sizeof prefix);
	return remove_prefixed(self, prefix, NULL, failure);
}

static void shelf_dispose_scope(msb_backend_instance *self, const char *scope,
				const char *thread_id, msb_scope_purge *purge)
{
	msb_key key = { scope, thread_id, "", "" };
	char prefix[40];
	key_prefix(&key, false, prefix, sizeof prefix);
	memset(purge, 0, sizeof *purge);
	purge->has_undisposed = remove_prefixed(self, prefix, &purge->disposed, &purge->undisposed);
}

static void shelf_release(msb_sandbox_handle *h)
{
	free(h);
}

/* Open the working directory the call names (a guest path) beneath the sandbox. An absolute
 * *path inside it becomes the relative one (the protocol refuses only what escapes), and a
 * write creates the directory (`create`: the caller-creates rule). */
static msb_errc open_wd(msb_sandbox_handle *h, const char *wd, const char **path, bool create,
			int *fd, msb_error *err)
{
	char host[2300];
	wd = wd ? wd : h->work_dir;
	if (wd[0] != '/')
		return msb_error_set(err, MSB_E_VALUE, "shelf: working directory %s is not absolute", wd);
	msb_errc rc = msb_confine_relative(*path, wd, path, err);
	if (rc == MSB_OK && create && (rc = msb_confine_open_root(h->dir, fd, err)) == MSB_OK) {
		rc = msb_confine_mkdirs(*fd, wd + 1, err);
		close(*fd);
	}
	snprintf(host, sizeof host, "%s%s", h->dir, wd);
	return rc == MSB_OK ? msb_confine_open_root(host, fd, err) : rc;
}

static msb_errc shelf_write_file(msb_sandbox_handle *h, const char *path, const void *data,
				 size_t len, const char *wd, msb_error *err)
{
	int fd;
	msb_errc rc = open_wd(h, wd, &path, true, &fd, err);
	if (rc == MSB_OK) {
		rc = msb_confine_write_file(fd, path, data, len, MSB_CONFINE_CREATE_PARENTS, err);
		close(fd);
	}
	return rc;
}

static msb_errc shelf_stat_file(msb_sandbox_handle *h, const char *path, const char *wd,
				msb_entry *entry, bool *found, msb_error *err)
{
	int fd;
	msb_errc rc = open_wd(h, wd, &path, false, &fd, err);
	if (rc == MSB_OK) {
		rc = msb_confine_stat(fd, path, entry, found, err);
		close(fd);
	}
	return rc;
}

static msb_errc shelf_read_file(msb_sandbox_handle *h, const char *path, const char *wd,
				uint64_t max_bytes, msb_buf *out, msb_error *err)
{
	int fd;
	msb_errc rc = open_wd(h, wd, &path, false, &fd, err);
	if (rc == MSB_OK) {
		rc = msb_confine_read_file(fd, path, max_bytes, out, err);
		close(fd);
	}
	return rc;
}

static msb_errc shelf_list_dir(msb_sandbox_handle *h, const char *path, const char *wd,
			       msb_entry_list *out, msb_error *err)
{
	int fd;
	msb_errc rc = open_wd(h, wd, &path, false, &fd, err);
	if (rc == MSB_OK) {
		rc = msb_confine_list_dir(fd, path, out, err);
		close(fd);
	}
	return rc;
}

static msb_errc shelf_remove(msb_sandbox_handle *h, const char *path, const char *wd,
			     bool recursive, msb_error *err)
{
	int fd;
	msb_errc rc = open_wd(h, wd, &path, false, &fd, err);
	if (rc == MSB_OK) {
		rc = msb_confine_remove(fd, path, recursive, err);
		close(fd);
	}
	return rc;
}

static msb_errc shelf_reclaim(msb_sandbox_handle *h, const char *directory, const char *wd,
			      double timeout, msb_error *err)
{
	char dir[2300], base[2300];
	(void)timeout; /* a local delete: nothing to bound */
	if (directory[0] != '/' || wd[0] != '/')
		return msb_error_set(err, MSB_E_VALUE, "shelf: reclaim takes absolute guest paths");
	snprintf(dir, sizeof dir, "%s%s", h->dir, directory);
	snprintf(base, sizeof base, "%s%s", h->dir, wd);
	return msb_confine_reclaim(dir, base, err);
}

MSB_BACKEND_DEFINE(
	.name = "shelf",
	.isolation = "none", /* nothing runs here, and nothing is drawn around the files */
	.declarations = {
		.capabilities = MSB_WORDS("files_in", "files_out", "files_list", "files_delete"),
		.egress_modes = MSB_WORDS("closed"), /* it runs nothing, so nothing reaches out */
		.isolation_scopes = MSB_WORDS("conversation", "call"),
	},
	.init = shelf_init, .fini = shelf_fini,
	.acquire = shelf_acquire, .dispose = shelf_dispose, .dispose_scope = shelf_dispose_scope,
	.release = shelf_release,
	.write_file = shelf_write_file, .stat_file = shelf_stat_file, .read_file = shelf_read_file,
	.list_dir = shelf_list_dir, .remove = shelf_remove, .reclaim = shelf_reclaim,
);
