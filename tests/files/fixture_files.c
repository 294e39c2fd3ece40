/*
 * fixture_files.c — a test-only backend whose sandboxes are one host directory, served
 * through msb/confine.h, and which records every file call it receives.
 *
 * It exists to hold msb_collect_outputs to its phase order through the real loader, router
 * and sandbox wrappers: the test reads the call log and asserts that, say, a name collision
 * was refused before any stat reached the backend. Two environment variables, read at init:
 * FIXTURE_FILES_DIR (the directory every sandbox serves; working_directory is logged and
 * otherwise ignored) and FIXTURE_FILES_LOG (a file each call appends one line to). A file
 * whose name starts with "unknown-size" is reported with size -1, as a backend that cannot
 * measure would.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msb/backend.h>
#include <msb/confine.h>

struct msb_backend_instance {
	char *dir;
	char *log;
};

struct msb_sandbox_handle {
	msb_backend_instance *self;
};

static void record(msb_backend_instance *self, const char *fmt, ...) MSB_PRINTF(2, 3);
static void record(msb_backend_instance *self, const char *fmt, ...)
{
	if (!self->log)
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof line - 2)
		n = (int)sizeof line - 2;
	line[n++] = '\n';
	int fd = open(self->log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	ssize_t w = write(fd, line, (size_t)n);
	(void)w;
	close(fd);
}

static msb_errc ff_init(const msb_node *config, const msb_host *host, msb_backend_instance **out,
			msb_error *err)
{
	const char *dir = getenv("FIXTURE_FILES_DIR");
	const char *log = getenv("FIXTURE_FILES_LOG");
	if (!dir)
		return msb_error_set(err, MSB_E_CONFIG, "fixture_files: FIXTURE_FILES_DIR is not set");
	msb_backend_instance *self = calloc(1, sizeof *self);
	if (!self || !(self->dir = strdup(dir)) || (log && !(self->log = strdup(log)))) {
		if (self)
			free(self->dir);
		free(self);
		return msb_error_set(err, MSB_E_NOMEM, "fixture_files: out of memory");
	}
	*out = self;
	return MSB_OK;
}

static void ff_fini(msb_backend_instance *self)
{
	if (!self)
		return;
	free(self->dir);
	free(self->log);
	free(self);
}

static msb_errc ff_acquire(msb_backend_instance *self, const msb_key *key, const msb_spec *spec,
			   msb_sandbox_handle **out, msb_error *err)
{
	msb_sandbox_handle *h = calloc(1, sizeof *h);
	if (!h)
		return msb_error_set(err, MSB_E_NOMEM, "fixture_files: out of memory");
	h->self = self;
	record(self, "acquire %s", spec->kind);
	*out = h;
	return MSB_OK;
}

static bool ff_dispose(msb_backend_instance *self, const msb_key *key, msb_disposal_failure *f)
{
	return false;
}

static void ff_dispose_scope(msb_backend_instance *self, const char *scope, const char *thread_id,
			     msb_scope_purge *purge)
{
}

static void ff_release(msb_sandbox_handle *h)
{
	free(h);
}

/* Every operation opens the directory afresh, as a backend serving many calls would. */
static msb_errc open_dir(msb_sandbox_handle *h, int *fd, msb_error *err)
{
	return msb_confine_open_root(h->self->dir, fd, err);
}

static msb_errc ff_write_file(msb_sandbox_handle *h, const char *path, const void *data,
			      size_t len, const char *wd, msb_error *err)
{
	record(h->self, "write %s", path);
	int fd;
	msb_errc rc = open_dir(h, &fd, err);
	if (rc == MSB_OK) {
		rc = msb_confine_write_file(fd, path, data, len, MSB_CONFINE_CREATE_PARENTS, err);
		close(fd);
	}
	return rc;
}

static msb_errc ff_stat_file(msb_sandbox_handle *h, const char *path, const char *wd,
			     msb_entry *entry, bool *found, msb_error *err)
{
	record(h->self, "stat %s", path);
	int fd;
	msb_errc rc = open_dir(h, &fd, err);
	if (rc != MSB_OK)
		return rc;
	rc = msb_confine_stat(fd, path, entry, found, err);
	close(fd);
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (rc == MSB_OK && *found && strncmp(base, "unknown-size", 12) == 0)
		entry->size_bytes = -1;
	return rc;
}

static msb_errc ff_read_file(msb_sandbox_handle *h, const char *path, const char *wd,
			     uint64_t max_bytes, msb_buf *out, msb_error *err)
{
	record(h->self, "read %s %llu", path, (unsigned long long)max_bytes);
	int fd;
	msb_errc rc = open_dir(h, &fd, err);
	if (rc == MSB_OK) {
		rc = msb_confine_read_file(fd, path, max_bytes, out, err);
		close(fd);
	}
	return rc;
}

static msb_errc ff_list_dir(msb_sandbox_handle *h, const char *path, const char *wd,
			    msb_entry_list *out, msb_error *err)
{
	record(h->self, "list %s", path);
	int fd;
	msb_errc rc = open_dir(h, &fd, err);
	if (rc == MSB_OK) {
		rc = msb_confine_list_dir(fd, path, out, err);
		close(fd);
	}
	return rc;
}

static msb_errc ff_remove(msb_sandbox_handle *h, const char *path, const char *wd, bool recursive,
			  msb_error *err)
{
	record(h->self, "remove %s", path);
	int fd;
	msb_errc rc = open_dir(h, &fd, err);
	if (rc == MSB_OK) {
		rc = msb_confine_remove(fd, path, recursive, err);
		close(fd);
	}
	return rc;
}

static msb_errc ff_reclaim(msb_sandbox_handle *h, const char *directory, const char *wd,
			   double timeout, msb_error *err)
{
	record(h->self, "reclaim %s", directory);
	return msb_confine_reclaim(directory, h->self->dir, err);
}

MSB_BACKEND_DEFINE(
	.name = "fixture_files",
	.isolation = "none",
	.declarations = {
		.capabilities = MSB_WORDS("files_in", "files_out", "files_list", "files_delete"),
		.egress_modes = MSB_WORDS("closed"),
	},
	.init = ff_init, .fini = ff_fini,
	.acquire = ff_acquire, .dispose = ff_dispose, .dispose_scope = ff_dispose_scope,
	.release = ff_release, .write_file = ff_write_file, .stat_file = ff_stat_file,
	.read_file = ff_read_file, .list_dir = ff_list_dir, .remove = ff_remove,
	.reclaim = ff_reclaim,
);
