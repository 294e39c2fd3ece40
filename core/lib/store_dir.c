/*
 * store_dir.c — a file store over a host directory, confined like the file-system sink.
 *
 * The store is where artifacts land and where the model reads them back from, so both
 * directions go through the same kernel-confined lookups (msb/confine.h): the root is opened
 * once, and no path is ever resolved through a link at any level. A link planted in the
 * directory by anything that can write there is refused, not followed, whether the store is
 * writing a landing or reading one for the model.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msb/confine.h>
#include <msb/store.h>

typedef struct dir_store {
	int root_fd;
} dir_store;

static msb_errc dir_put(void *ctx, const char *path, const unsigned char *content, size_t len,
			msb_error *err)
{
	const dir_store *d = ctx;
	return msb_confine_write_file(d->root_fd, path, content, len,
				      MSB_CONFINE_CREATE_PARENTS | MSB_CONFINE_EXCLUSIVE, err);
}

static msb_errc dir_exists(void *ctx, const char *path, bool *exists, msb_error *err)
{
	const dir_store *d = ctx;
	msb_entry entry = { 0 };
	msb_errc rc = msb_confine_stat(d->root_fd, path, &entry, exists, err);
	free(entry.path);
	return rc;
}

static msb_errc dir_list(void *ctx, const char *dir, msb_entry_list *out, msb_error *err)
{
	const dir_store *d = ctx;
	return msb_confine_list_dir(d->root_fd, dir, out, err);
}

static msb_errc dir_read(void *ctx, const char *path, uint64_t max_bytes, msb_buf *out,
			 msb_error *err)
{
	const dir_store *d = ctx;
	return msb_confine_read_file(d->root_fd, path, max_bytes, out, err);
}

static void dir_destroy(void *ctx)
{
	dir_store *d = ctx;
	if (d && d->root_fd >= 0)
		close(d->root_fd);
	free(d);
}

msb_errc msb_directory_store_new(const char *root, msb_file_store **out, msb_error *err)
{
	*out = NULL;
	if (!root || root[0] != '/')
		return msb_error_set(err, MSB_E_VALUE,
				     "directory store: the root must be an absolute directory, not '%s'",
				     root ? root : "(none)");
	dir_store *d = calloc(1, sizeof *d);
	msb_file_store *s = calloc(1, sizeof *s);
	if (!d || !s) {
		free(d);
		free(s);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory for a directory store");
	}
	msb_errc rc = msb_confine_open_root(root, &d->root_fd, err);
	if (rc != MSB_OK) {
		free(d);
		free(s);
		msb_error_prefix(err, "directory store: ");
		return rc;
	}
	*s = (msb_file_store)MSB_FILE_STORE_INIT;
	s->ctx = d;
	s->put = dir_put;
	s->exists = dir_exists;
	s->list = dir_list;
	s->read = dir_read;
	s->destroy = dir_destroy;
	*out = s;
	return MSB_OK;
}

void msb_file_store_free(msb_file_store *store)
{
	if (!store)
		return;
	if (store->destroy)
		store->destroy(store->ctx);
	free(store);
}
