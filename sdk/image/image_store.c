/*
 * image_store.c — the image store's names and images (msb/image_store.h): import (read the
 * source into a plan, unpack the plan's layers into a private directory, then rename it into
 * place), inspect, list, remove and gc. Writers hold <store>/lock (flock) so two imports and a
 * gc never interleave; readers need no lock, because every file they read was renamed into
 * place whole.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <msb/confine.h>

#include "image_internal.h"

#ifndef MSB_LOCALSTATEDIR
#define MSB_LOCALSTATEDIR "/var"
#endif

void msb_image_limits_default(msb_image_limits *l)
{
	l->max_entry_bytes = 4ull << 30;
	l->max_total_bytes = 64ull << 30;
	l->max_entries = 1000000;
	l->max_layers = 256;
	l->max_json_bytes = 4u << 20;
}

const char *msb_image_store_default_dir(void)
{
	const char *env = getenv("MSB_IMAGES_DIR");
	if (env && env[0] == '/')
		return env;
	return MSB_LOCALSTATEDIR "/lib/msb/images";
}

msb_errc msb_image_name_check(const char *name, msb_error *err)
{
	size_t n = name ? strlen(name) : 0;
	bool ok = n >= 1 && n <= 128 && ((name[0] >= 'a' && name[0] <= 'z') ||
					 (name[0] >= 'A' && name[0] <= 'Z') ||
					 (name[0] >= '0' && name[0] <= '9'));
	for (size_t i = 0; ok && i < n; i++)
		ok = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-",
			    name[i]) != NULL;
	if (!ok)
		return msb_error_set(err, MSB_E_VALUE, "image name \"%s\" refused: 1 to 128 of "
				     "[A-Za-z0-9._:-], starting with a letter or digit",
				     name ? name : "");
	if (!strcmp(name, "host") || !strcmp(name, "busybox"))
		return msb_error_set(err, MSB_E_VALUE, "image name \"%s\" refused: it is a built-in "
				     "image and cannot be imported over", name);
	return MSB_OK;
}

void msb_image_record_free(msb_image_record *r)
{
	if (!r)
		return;
	free(r->name);
	free(r->format);
	free(r->source);
	free(r->root);
	free(r->dir);
	for (size_t i = 0; i < r->n_layers; i++)
		free(r->layers[i]);
	free(r->layers);
	for (size_t i = 0; i < r->n_env; i++)
		free(r->env[i]);
	free(r->env);
	free(r->working_dir);
	free(r->user);
	memset(r, 0, sizeof *r);
}

void msb_image_records_free(msb_image_record *records, size_t len)
{
	for (size_t i = 0; i < len; i++)
		msb_image_record_free(&records[i]);
	free(records);
}

/* Write `j` to `path` whole: a temporary beside it, then rename. */
static msb_errc json_write_atomic(const char *path, json_t *j, msb_error *err)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
	if (json_dump_file(j, tmp, JSON_INDENT(2) | JSON_SORT_KEYS) != 0) {
		unlink(tmp);
		return msb_error_set(err, MSB_E_OS, "write %s failed", tmp);
	}
	if (rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		return msb_error_set_errno(err, MSB_E_OS, e, "rename %s", path);
	}
	return MSB_OK;
}

static char *json_strdup(json_t *j)
{
	const char *s = json_string_value(j);
	return s && *s ? strdup(s) : NULL;
}

static json_t *str_array(char *const *items, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(items[i]));
	return a;
}

static msb_errc strings_of(json_t *a, char ***out, size_t *n, msb_error *err)
{
	*out = NULL;
	*n = 0;
	size_t len = json_array_size(a);
	if (!len)
		return MSB_OK;
	*out = calloc(len, sizeof **out);
	if (!*out)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	for (size_t i = 0; i < len; i++) {
		const char *s = json_string_value(json_array_get(a, i));
		if (s && !((*out)[(*n)++] = strdup(s)))
			return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	return MSB_OK;
}

msb_errc image_record_read(const char *store, const char *hex, msb_image_record *out,
			   msb_error *err)
{
	memset(out, 0, sizeof *out);
	char rel[100];
	snprintf(rel, sizeof rel, "images/%s", hex);
	out->dir = msb_driver_path(store, rel);
	out->root = out->dir ? msb_driver_path(out->dir, "rootfs") : NULL;
	char *meta = out->dir ? msb_driver_path(out->dir, "image.json") : NULL;
	if (!meta) {
		free(meta);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	int fd = open(meta, O_RDONLY | O_CLOEXEC);
	free(meta);
	if (fd < 0)
		return msb_error_set_errno(err, MSB_E_NOT_FOUND, errno, "image sha256:%s is not in "
					   "the store %s", hex, store);
	json_t *j;
	msb_errc rc = image_json_read_fd(fd, 4u << 20, "image.json", &j, err);
	close(fd);
	if (rc)
		return rc;
	snprintf(out->digest, sizeof out->digest, "sha256:%s", hex);
	out->format = json_strdup(json_object_get(j, "format"));
	out->source = json_strdup(json_object_get(j, "source"));
	json_t *cfg = json_object_get(j, "config");
	out->working_dir = json_strdup(json_object_get(cfg, "WorkingDir"));
	out->user = json_strdup(json_object_get(cfg, "User"));
	out->size_bytes = (uint64_t)json_integer_value(json_object_get(j, "size"));
	out->created = (int64_t)json_integer_value(json_object_get(j, "created"));
	rc = strings_of(json_object_get(j, "layers"), &out->layers, &out->n_layers, err);
	if (!rc)
		rc = strings_of(json_object_get(cfg, "Env"), &out->env, &out->n_env, err);
	json_decref(j);
	return rc;
}

/* The digest names/<name> points at, as hex (65 bytes). */
static msb_errc name_read(const char *store, const char *name, char hex[65], msb_error *err)
{
	msb_errc rc = msb_image_name_check(name, err);
	if (rc)
		return rc;
	char rel[200];
	snprintf(rel, sizeof rel, "names/%s", name);
	char *path = msb_driver_path(store, rel);
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	free(path);
	if (fd < 0)
		return msb_error_set(err, MSB_E_NOT_FOUND, "image \"%s\" is not in the store %s "
				     "(msb image import %s SOURCE adds it)", name, store, name);
	json_t *j;
	rc = image_json_read_fd(fd, 4096, "image name", &j, err);
	close(fd);
	if (rc)
		return rc;
	const char *h = image_digest_hex(json_string_value(json_object_get(j, "digest")));
	if (h)
		strcpy(hex, h);
	else
		rc = msb_error_set(err, MSB_E_VALUE, "image \"%s\": its name file holds no digest",
				   name);
	json_decref(j);
	return rc;
}

msb_errc msb_image_digest(const char *store, const char *name,
			  char out[MSB_IMAGE_DIGEST_LEN + 1], msb_error *err)
{
	char hex[65];
	out[0] = '\0';
	msb_errc rc = name_read(store, name, hex, err);
	if (!rc)
		snprintf(out, MSB_IMAGE_DIGEST_LEN + 1, "sha256:%s", hex);
	return rc;
}

msb_errc msb_image_inspect(const char *store, const char *name, msb_image_record *out,
			   msb_error *err)
{
	memset(out, 0, sizeof *out);
	char hex[65];
	msb_errc rc = name_read(store, name, hex, err);
	if (!rc)
		rc = image_record_read(store, hex, out, err);
	if (!rc && !(out->name = strdup(name)))
		rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
	if (rc)
		msb_image_record_free(out);
	return rc;
}

static int lock_store(const char *store, msb_error *err)
{
	char *path = msb_driver_path(store, "lock");
	int fd = path ? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644) : -1;
	free(path);
	if (fd < 0) {
		msb_error_set_errno(err, MSB_E_OS, errno, "image store %s: lock", store);
		return -1;
	}
	while (flock(fd, LOCK_EX) != 0)
		if (errno != EINTR) {
			msb_error_set_errno(err, MSB_E_OS, errno, "image store %s: flock", store);
			close(fd);
			return -1;
		}
	return fd;
}

static msb_errc store_prepare(const char *store, msb_error *err)
{
	static const char *const dirs[] = { "blobs/sha256", "images", "names", "tmp", NULL };
	msb_errc rc = store[0] == '/' ? image_mkdirs(store, err)
				      : msb_error_set(err, MSB_E_VALUE, "images_dir %s is not "
						      "absolute", store);
	for (const char *const *d = dirs; !rc && *d; d++) {
		char *p = msb_driver_path(store, *d);
		rc = p ? image_mkdirs(p, err) : msb_error_set(err, MSB_E_NOMEM, "out of memory");
		free(p);
	}
	return rc;
}

/* Unpack every layer of `plan` into <img>/rootfs and describe it in <img>/image.json. */
static msb_errc build_image(const char *store, const char *img, const char *source,
			    const image_plan *plan, const msb_image_limits *lim, msb_error *err)
{
	char *rootfs = msb_driver_path(img, "rootfs");
	msb_errc rc = rootfs ? MSB_OK : msb_error_set(err, MSB_E_NOMEM, "out of memory");
	if (!rc && (mkdir(img, 0755) != 0 || mkdir(rootfs, 0755) != 0))
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "mkdir %s", rootfs);
	int root_fd = -1;
	if (!rc)
		rc = msb_confine_open_root(rootfs, &root_fd, err);
	uint64_t total = 0;
	for (size_t i = 0; !rc && i < plan->n_layers; i++) {
		char rel[100], label[120];
		snprintf(rel, sizeof rel, "blobs/sha256/%s", image_digest_hex(plan->layers[i]));
		snprintf(label, sizeof label, "%zu (%s)", i + 1, plan->layers[i]);
		char *blob = msb_driver_path(store, rel);
		rc = blob ? msb_image_unpack_layer(root_fd, blob, label, 1, lim, &total, err)
			  : msb_error_set(err, MSB_E_NOMEM, "out of memory");
		free(blob);
	}
	if (root_fd >= 0)
		close(root_fd);
	if (!rc) {
		json_t *c = json_object_get(plan->config, "config");
		json_t *cfg = json_object();
		json_t *env = json_object_get(c, "Env");
		if (json_is_array(env))
			json_object_set(cfg, "Env", env);
		json_t *wd = json_object_get(c, "WorkingDir");
		if (json_is_string(wd))
			json_object_set(cfg, "WorkingDir", wd);
		json_t *user = json_object_get(c, "User");
		if (json_is_string(user))
			json_object_set(cfg, "User", user);
		json_t *blobs = str_array(plan->layers, plan->n_layers);
		if (plan->config_digest[0])
			json_array_append_new(blobs, json_string(plan->config_digest));
		json_array_append_new(blobs, json_string(plan->digest));
		json_t *j = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:I, s:I}", "digest", plan->digest,
				      "format", plan->format, "source", source, "layers",
				      str_array(plan->layers, plan->n_layers), "blobs", blobs,
				      "config", cfg, "size", (json_int_t)total, "created",
				      (json_int_t)time(NULL));
		char *meta = msb_driver_path(img, "image.json");
		rc = j && meta ? json_write_atomic(meta, j, err)
			       : msb_error_set(err, MSB_E_NOMEM, "out of memory");
		free(meta);
		json_decref(j);
	}
	free(rootfs);
	return rc;
}

static msb_errc name_write(const char *store, const char *name, const char *digest,
			   msb_error *err)
{
	char rel[200];
	snprintf(rel, sizeof rel, "names/%s", name);
	char *path = msb_driver_path(store, rel);
	json_t *j = json_pack("{s:s}", "digest", digest);
	msb_errc rc = path && j ? json_write_atomic(path, j, err)
				: msb_error_set(err, MSB_E_NOMEM, "out of memory");
	json_decref(j);
	free(path);
	return rc;
}

static msb_errc import_locked(const char *store, const char *name, const char *source,
			      const msb_image_limits *lim, msb_error *err)
{
	char work[PATH_MAX];
	snprintf(work, sizeof work, "%s/tmp/import-XXXXXX", store);
	if (!mkdtemp(work))
		return msb_error_set_errno(err, MSB_E_OS, errno, "mkdtemp %s", work);
	image_plan plan = { 0 };
	msb_errc rc = image_source_read(store, work, source, lim, &plan, err);
	char final[PATH_MAX], meta[PATH_MAX + 16], img[PATH_MAX + 8];
	snprintf(final, sizeof final, "%s/images/%s", store, rc ? "" : image_digest_hex(plan.digest));
	snprintf(meta, sizeof meta, "%s/image.json", final);
	snprintf(img, sizeof img, "%s/img", work);
	struct stat st;
	/* An image already unpacked under this digest is the same bytes: not unpacked again. */
	if (!rc && stat(meta, &st) != 0) {
		/* A partial image of an interrupted import (no image.json) is replaced. */
		msb_confine_reclaim(final, store, NULL);
		rc = build_image(store, img, source, &plan, lim, err);
		if (!rc && rename(img, final) != 0)
			rc = msb_error_set_errno(err, MSB_E_OS, errno, "rename into %s", final);
	}
	if (!rc)
		rc = name_write(store, name, plan.digest, err);
	if (rc)
		msb_error_prefix(err, "msb image import %s %s", name, source);
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof tmp, "%s/tmp", store);
	msb_confine_reclaim(work, tmp, NULL);
	image_plan_free(&plan);
	return rc;
}

msb_errc msb_image_import(const char *store, const char *name, const char *source,
			  const msb_image_limits *limits, msb_image_record *out, msb_error *err)
{
	msb_image_limits defaults;
	if (!limits) {
		msb_image_limits_default(&defaults);
		limits = &defaults;
	}
	msb_errc rc = msb_image_name_check(name, err);
	if (!rc)
		rc = store_prepare(store, err);
	if (rc)
		return rc;
	int lock = lock_store(store, err);
	if (lock < 0)
		return MSB_E_OS;
	rc = import_locked(store, name, source, limits, err);
	close(lock);
	if (!rc && out)
		rc = msb_image_inspect(store, name, out, err);
	return rc;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const msb_image_record *)a)->name, ((const msb_image_record *)b)->name);
}

msb_errc msb_image_list(const char *store, msb_image_record **out, size_t *len, msb_error *err)
{
	*out = NULL;
	*len = 0;
	char *names = msb_driver_path(store, "names");
	DIR *d = names ? opendir(names) : NULL;
	free(names);
	if (!d)
		return errno == ENOENT ? MSB_OK
				       : msb_error_set_errno(err, MSB_E_OS, errno, "image store %s",
							     store);
	msb_errc rc = MSB_OK;
	size_t cap = 0;
	struct dirent *de;
	while (!rc && (de = readdir(d))) {
		if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp-") ||
		    msb_image_name_check(de->d_name, NULL) != MSB_OK)
			continue;
		if (*len == cap) {
			cap = cap ? cap * 2 : 8;
			msb_image_record *grown = realloc(*out, cap * sizeof *grown);
			if (!grown) {
				rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
				break;
			}
			*out = grown;
		}
		rc = msb_image_inspect(store, de->d_name, &(*out)[*len], err);
		if (!rc)
			(*len)++;
	}
	closedir(d);
	if (rc) {
		msb_image_records_free(*out, *len);
		*out = NULL;
		*len = 0;
		return rc;
	}
	if (*len)
		qsort(*out, *len, sizeof **out, by_name);
	return MSB_OK;
}

msb_errc msb_image_remove(const char *store, const char *name, msb_error *err)
{
	char hex[65];
	msb_errc rc = name_read(store, name, hex, err);
	if (rc)
		return rc;
	int lock = lock_store(store, err);
	if (lock < 0)
		return MSB_E_OS;
	char rel[200];
	snprintf(rel, sizeof rel, "names/%s", name);
	char *path = msb_driver_path(store, rel);
	if (!path || unlink(path) != 0)
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "image \"%s\": remove", name);
	free(path);
	close(lock);
	return rc;
}

/* Remove every entry of <store>/<sub> for which keep() is false. */
static msb_errc sweep(const char *store, const char *sub, const image_pathset *keep,
		      size_t *removed, msb_error *err)
{
	char *dir = msb_driver_path(store, sub);
	DIR *d = dir ? opendir(dir) : NULL;
	msb_errc rc = MSB_OK;
	struct dirent *de;
	while (d && !rc && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    (keep && image_pathset_has(keep, de->d_name)))
			continue;
		char *victim = msb_driver_path(dir, de->d_name);
		rc = victim ? msb_confine_reclaim(victim, store, err)
			    : msb_error_set(err, MSB_E_NOMEM, "out of memory");
		free(victim);
		if (!rc && removed)
			(*removed)++;
	}
	if (d)
		closedir(d);
	free(dir);
	return rc;
}

msb_errc msb_image_gc(const char *store, size_t *removed, msb_error *err)
{
	if (removed)
		*removed = 0;
	msb_errc rc = store_prepare(store, err);
	if (rc)
		return rc;
	int lock = lock_store(store, err);
	if (lock < 0)
		return MSB_E_OS;
	msb_image_record *list = NULL;
	size_t n = 0;
	image_pathset images = { 0 }, blobs = { 0 };
	rc = msb_image_list(store, &list, &n, err);
	for (size_t i = 0; !rc && i < n; i++) {
		rc = image_pathset_add(&images, image_digest_hex(list[i].digest), err);
		char *meta = msb_driver_path(list[i].dir, "image.json");
		int fd = meta ? open(meta, O_RDONLY | O_CLOEXEC) : -1;
		free(meta);
		json_t *j = NULL;
		if (!rc && fd >= 0)
			rc = image_json_read_fd(fd, 4u << 20, "image.json", &j, err);
		if (fd >= 0)
			close(fd);
		size_t k;
		json_t *b;
		json_array_foreach(json_object_get(j, "blobs"), k, b) {
			const char *h = image_digest_hex(json_string_value(b));
			if (!rc && h)
				rc = image_pathset_add(&blobs, h, err);
		}
		json_decref(j);
	}
	if (!rc)
		rc = sweep(store, "images", &images, removed, err);
	if (!rc)
		rc = sweep(store, "blobs/sha256", &blobs, removed, err);
	if (!rc)
		rc = sweep(store, "tmp", NULL, removed, err);
	msb_image_records_free(list, n);
	image_pathset_free(&images);
	image_pathset_free(&blobs);
	close(lock);
	return rc;
}
