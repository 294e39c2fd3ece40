/*
 * image_source.c — reading an import's source into a plan (image_internal.h): which kind of
 * source it is, what its manifest says, and every blob copied into the store and verified
 * against the digest the manifest names before anything is unpacked from it.
 *
 * The manifest, index and config are as untrusted as the layers: every path they name is
 * opened beneath the source's root (sdk/confine), every JSON read is bounded, and a blob
 * whose content does not hash to its name is refused, naming both digests.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <msb/confine.h>

#include "../confine/confine_internal.h"
#include "image_internal.h"

#define OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define INDEX_DEPTH 2

static msb_errc open_in(int root_fd, const char *path, int *fd, msb_error *err)
{
	msb_errc rc = msb_confine_check_path(path, false, err);
	if (!rc)
		rc = confine_open_leaf(root_fd, "image source", path, O_RDONLY, fd, err);
	return rc;
}

static msb_errc read_json_in(int root_fd, const char *path, const msb_image_limits *lim,
			     json_t **out, msb_error *err)
{
	int fd;
	msb_errc rc = open_in(root_fd, path, &fd, err);
	if (rc)
		return rc;
	rc = image_json_read_fd(fd, lim->max_json_bytes, path, out, err);
	close(fd);
	return rc;
}

/* Copy blob `digest` of an OCI layout into the store, verified. */
static msb_errc take_oci_blob(const char *store, int root_fd, const char *digest,
			      const char *what, msb_error *err)
{
	const char *hex = image_digest_hex(digest);
	if (!hex)
		return msb_error_set(err, MSB_E_VALUE, "image %s: digest \"%s\" is not "
				     "sha256:<64 hex digits>", what, digest ? digest : "(none)");
	char path[100];
	snprintf(path, sizeof path, "blobs/sha256/%s", hex);
	int fd;
	msb_errc rc = open_in(root_fd, path, &fd, err);
	if (rc)
		return msb_error_prefix(err, "image %s", what);
	char got[MSB_IMAGE_DIGEST_LEN + 1], named[160];
	snprintf(named, sizeof named, "%s (%s)", what, path);
	rc = image_store_blob(store, fd, digest, named, got, err);
	close(fd);
	return rc;
}

/* Read a blob already in the store as JSON. */
static msb_errc stored_json(const char *store, const char *digest, const msb_image_limits *lim,
			    const char *what, json_t **out, msb_error *err)
{
	char rel[100];
	snprintf(rel, sizeof rel, "blobs/sha256/%s", image_digest_hex(digest));
	char *path = msb_driver_path(store, rel);
	if (!path)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return msb_error_set_errno(err, MSB_E_OS, errno, "open stored %s", what);
	msb_errc rc = image_json_read_fd(fd, lim->max_json_bytes, what, out, err);
	close(fd);
	return rc;
}

static msb_errc plan_add_layer(image_plan *plan, const char *digest, msb_error *err)
{
	char **l = realloc(plan->layers, (plan->n_layers + 1) * sizeof *l);
	if (!l)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	plan->layers = l;
	if (!(l[plan->n_layers] = strdup(digest)))
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	plan->n_layers++;
	return MSB_OK;
}

/* From an index's manifests: the only one, else the linux/amd64 one. */
static json_t *pick_manifest(json_t *index, msb_error *err)
{
	json_t *list = json_object_get(index, "manifests");
	size_t n = json_array_size(list);
	if (!json_is_array(list) || n == 0) {
		msb_error_set(err, MSB_E_VALUE, "image index has no manifests");
		return NULL;
	}
	if (n == 1)
		return json_array_get(list, 0);
	size_t i;
	json_t *m;
	json_array_foreach(list, i, m) {
		json_t *p = json_object_get(m, "platform");
		const char *os = json_string_value(json_object_get(p, "os"));
		const char *arch = json_string_value(json_object_get(p, "architecture"));
		if (os && arch && !strcmp(os, "linux") && !strcmp(arch, "amd64"))
			return m;
	}
	msb_error_set(err, MSB_E_VALUE, "image index has %zu manifests and none is linux/amd64", n);
	return NULL;
}

static msb_errc read_oci(const char *store, int root_fd, const msb_image_limits *lim,
			 image_plan *plan, msb_error *err)
{
	json_t *index = NULL, *manifest = NULL;
	msb_errc rc = read_json_in(root_fd, "index.json", lim, &index, err);
	const char *digest = NULL;
	for (int depth = 0; !rc; depth++) {
		json_t *desc = pick_manifest(index, err);
		if (!desc) {
			rc = MSB_E_VALUE;
			break;
		}
		digest = json_string_value(json_object_get(desc, "digest"));
		const char *media = json_string_value(json_object_get(desc, "mediaType"));
		rc = take_oci_blob(store, root_fd, digest, "manifest", err);
		if (!rc)
			rc = stored_json(store, digest, lim, "image manifest", &manifest, err);
		if (rc || !media || (strcmp(media, OCI_INDEX) && strcmp(media, DOCKER_LIST)))
			break;
		if (depth + 1 >= INDEX_DEPTH) {
			rc = msb_error_set(err, MSB_E_VALUE, "image index nests deeper than %d",
					   INDEX_DEPTH);
			break;
		}
		json_decref(index);
		index = manifest;
		manifest = NULL;
	}
	json_t *layers = manifest ? json_object_get(manifest, "layers") : NULL;
	if (!rc && !json_is_array(layers))
		rc = msb_error_set(err, MSB_E_VALUE, "image manifest has no layers array");
	if (!rc && json_array_size(layers) > lim->max_layers)
		rc = msb_error_set(err, MSB_E_VALUE, "image manifest has %zu layers, over the limit "
				   "of %zu", json_array_size(layers), lim->max_layers);
	if (!rc)
		snprintf(plan->digest, sizeof plan->digest, "%s", digest);
	const char *cfg = json_string_value(json_object_get(json_object_get(manifest, "config"),
							    "digest"));
	if (!rc)
		rc = take_oci_blob(store, root_fd, cfg, "config", err);
	if (!rc) {
		snprintf(plan->config_digest, sizeof plan->config_digest, "%s", cfg);
		rc = stored_json(store, cfg, lim, "image config", &plan->config, err);
	}
	size_t i;
	json_t *layer;
	json_array_foreach(layers, i, layer) {
		if (rc)
			break;
		const char *d = json_string_value(json_object_get(layer, "digest"));
		char what[32];
		snprintf(what, sizeof what, "layer %zu", i + 1);
		rc = take_oci_blob(store, root_fd, d, what, err);
		if (!rc)
			rc = plan_add_layer(plan, d, err);
	}
	json_decref(index);
	json_decref(manifest);
	return rc;
}

/*
 * The digest a `docker save` path names, when it names one: "blobs/sha256/<hex>" (docker 25
 * and later) or "<hex>.json" / "<hex>/layer.tar" style ids (only the config's id is its
 * digest; layers are checked against the config's diff_ids instead).
 */
static bool docker_path_digest(const char *path, char out[MSB_IMAGE_DIGEST_LEN + 1])
{
	char d[MSB_IMAGE_DIGEST_LEN + 8];
	if (!strncmp(path, "blobs/sha256/", 13))
		snprintf(d, sizeof d, "sha256:%s", path + 13);
	else if (strlen(path) == 69 && !strcmp(path + 64, ".json"))
		snprintf(d, sizeof d, "sha256:%.64s", path);
	else
		return false;
	if (!image_digest_hex(d))
		return false;
	strcpy(out, d);
	return true;
}

static msb_errc read_docker(const char *store, int root_fd, const msb_image_limits *lim,
			    image_plan *plan, msb_error *err)
{
	json_t *manifest = NULL;
	msb_errc rc = read_json_in(root_fd, "manifest.json", lim, &manifest, err);
	json_t *entry = rc ? NULL : json_array_get(manifest, 0);
	const char *cfg_path = json_string_value(json_object_get(entry, "Config"));
	json_t *layers = json_object_get(entry, "Layers");
	if (!rc && (!cfg_path || !json_is_array(layers)))
		rc = msb_error_set(err, MSB_E_VALUE, "docker manifest.json: the first entry has no "
				   "Config and Layers");
	if (!rc && json_array_size(layers) > lim->max_layers)
		rc = msb_error_set(err, MSB_E_VALUE, "docker manifest.json has %zu layers, over the "
				   "limit of %zu", json_array_size(layers), lim->max_layers);
	char want[MSB_IMAGE_DIGEST_LEN + 1];
	if (!rc && !docker_path_digest(cfg_path, want))
		rc = msb_error_set(err, MSB_E_VALUE, "docker config \"%s\" is not named by its "
				   "digest, so it cannot be verified", cfg_path);
	int fd = -1;
	if (!rc)
		rc = open_in(root_fd, cfg_path, &fd, err);
	if (!rc)
		rc = image_store_blob(store, fd, want, cfg_path, plan->digest, err);
	if (fd >= 0)
		close(fd);
	if (!rc) {
		strcpy(plan->config_digest, plan->digest);
		rc = stored_json(store, plan->digest, lim, "image config", &plan->config, err);
	}
	json_t *diff_ids = json_object_get(json_object_get(plan->config, "rootfs"), "diff_ids");
	size_t i;
	json_t *layer;
	json_array_foreach(layers, i, layer) {
		if (rc)
			break;
		const char *path = json_string_value(layer);
		const char *diff = json_string_value(json_array_get(diff_ids, i));
		char named[MSB_IMAGE_DIGEST_LEN + 1], got[MSB_IMAGE_DIGEST_LEN + 1];
		/* A layer named by its digest is checked against that; a legacy layer.tar is
		 * uncompressed, so its digest is its diff_id in the (already verified) config. */
		const char *expect = path && docker_path_digest(path, named) ? named : diff;
		if (!path || !expect) {
			rc = msb_error_set(err, MSB_E_VALUE, "docker layer %zu has no path or no "
					   "diff_id to verify it against", i + 1);
			break;
		}
		rc = open_in(root_fd, path, &fd, err);
		if (!rc)
			rc = image_store_blob(store, fd, expect, path, got, err);
		if (fd >= 0)
			close(fd);
		fd = -1;
		if (!rc)
			rc = plan_add_layer(plan, got, err);
	}
	json_decref(manifest);
	return rc;
}

static bool exists_in(int root_fd, const char *name)
{
	struct stat st;
	return fstatat(root_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

/* A tarball as the one layer of an image; its digest is the image's. */
static msb_errc read_tarball(const char *store, const char *path, const char *format,
			     image_plan *plan, msb_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return msb_error_set_errno(err, MSB_E_NOT_FOUND, errno, "image source %s", path);
	msb_errc rc = image_store_blob(store, fd, NULL, path, plan->digest, err);
	close(fd);
	plan->format = format;
	return rc ? rc : plan_add_layer(plan, plan->digest, err);
}

static msb_errc read_tree(const char *store, const char *work, const char *dir, bool archived,
			  const msb_image_limits *lim, image_plan *plan, msb_error *err)
{
	int root_fd;
	msb_errc rc = msb_confine_open_root(dir, &root_fd, err);
	if (rc)
		return rc;
	if (exists_in(root_fd, "index.json")) {
		plan->format = archived ? "oci-archive" : "oci-layout";
		rc = read_oci(store, root_fd, lim, plan, err);
	} else if (exists_in(root_fd, "manifest.json")) {
		plan->format = "docker-archive";
		rc = read_docker(store, root_fd, lim, plan, err);
	} else {
		char *tar = msb_driver_path(work, "directory.tar");
		rc = tar ? image_pack_dir(dir, tar, err) : msb_error_set(err, MSB_E_NOMEM, "oom");
		if (!rc)
			rc = read_tarball(store, tar, "directory", plan, err);
		if (tar)
			unlink(tar);
		free(tar);
	}
	close(root_fd);
	return rc;
}

/* Whether a top-level name belongs to an OCI layout or a docker save archive. */
static bool container_name(const char *top, size_t n)
{
	static const char *const names[] = { "oci-layout", "index.json", "manifest.json",
					     "repositories", "blobs", NULL };
	for (const char *const *p = names; *p; p++)
		if (strlen(*p) == n && !strncmp(top, *p, n))
			return true;
	/* docker's legacy <id>/ directories and <id>.json configs */
	size_t hexlen = n == 69 && !strncmp(top + 64, ".json", 5) ? 64 : n;
	if (hexlen != 64)
		return false;
	for (size_t i = 0; i < 64; i++)
		if (!strchr("0123456789abcdef", top[i]))
			return false;
	return true;
}

/*
 * Whether archive `path` is an OCI or docker save archive (1) or a root filesystem (0): the
 * first top-level name that neither format has decides for a root filesystem.
 */
static int probe_archive(const char *path, const msb_image_limits *lim, msb_error *err)
{
	struct archive *a = archive_read_new();
	if (!a)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory"), -1;
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	archive_read_support_format_empty(a);
	int result = 0;
	if (archive_read_open_filename(a, path, 64 * 1024) != ARCHIVE_OK) {
		msb_error_set(err, MSB_E_VALUE, "image source %s is neither a directory nor a tar "
			      "archive: %s", path, archive_error_string(a));
		result = -1;
	}
	struct archive_entry *e;
	bool marker = false;
	for (uint64_t n = 0; result == 0 && n < lim->max_entries; n++) {
		if (archive_read_next_header(a, &e) != ARCHIVE_OK)
			break;
		const char *name = archive_entry_pathname(e);
		while (name && name[0] == '.' && name[1] == '/')
			name += 2;
		if (!name || !*name || !strcmp(name, "."))
			continue;
		size_t top = strcspn(name, "/");
		if (!container_name(name, top))
			break;
		if ((top == 10 && !strncmp(name, "index.json", 10)) ||
		    (top == 13 && !strncmp(name, "manifest.json", 13)))
			marker = true;
	}
	archive_read_free(a);
	return result < 0 ? -1 : marker;
}

msb_errc image_source_read(const char *store, const char *work, const char *source,
			   const msb_image_limits *lim, image_plan *plan, msb_error *err)
{
	char real[PATH_MAX];
	struct stat st;
	if (!realpath(source, real) || stat(real, &st) != 0)
		return msb_error_set_errno(err, MSB_E_NOT_FOUND, errno, "image source %s", source);
	if (S_ISDIR(st.st_mode))
		return read_tree(store, work, real, false, lim, plan, err);
	if (!S_ISREG(st.st_mode))
		return msb_error_set(err, MSB_E_VALUE, "image source %s is neither a directory nor "
				     "a regular file", source);
	int kind = probe_archive(real, lim, err);
	if (kind < 0)
		return MSB_E_VALUE;
	if (kind == 0)
		return read_tarball(store, real, "rootfs-tar", plan, err);
	/* An archived layout or save is extracted (confined, as any layer) and read as a tree. */
	char *tree = msb_driver_path(work, "source");
	msb_errc rc = tree ? MSB_OK : msb_error_set(err, MSB_E_NOMEM, "out of memory");
	if (!rc && mkdir(tree, 0700) != 0)
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "mkdir %s", tree);
	int fd = -1;
	if (!rc)
		rc = msb_confine_open_root(tree, &fd, err);
	uint64_t total = 0;
	if (!rc)
		rc = msb_image_unpack_layer(fd, real, source, 0, lim, &total, err);
	if (fd >= 0)
		close(fd);
	if (!rc)
		rc = read_tree(store, work, tree, true, lim, plan, err);
	if (!rc && !strcmp(plan->format, "oci-layout"))
		plan->format = "oci-archive";
	free(tree);
	return rc;
}
