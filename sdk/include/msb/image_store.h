/*
 * msb/image_store.h — the image store (backend SDK): named images imported from local
 * sources, content-addressed by sha256, verified, and unpacked once into a root directory
 * that backends run a spec's `image:` from.
 *
 * Sources (all local; a host with a registry produces one with skopeo, docker/podman save):
 *   - an OCI image layout directory (oci-layout, index.json, blobs/sha256/…);
 *   - an OCI archive (a tar of such a layout);
 *   - a `docker save` archive (manifest.json, <id>.json config, layer tars), or its tree;
 *   - a root filesystem tarball (any compression libarchive reads);
 *   - a directory (packed into one layer tar, then imported like a tarball).
 *
 * Layout under the store directory (`images_dir`):
 *   blobs/sha256/<hex>        every blob an image was built from, verified as it was copied in
 *   images/<hex>/rootfs/      the unpacked root, layers applied in order with OCI whiteouts
 *   images/<hex>/image.json   what the image's config says (Env, WorkingDir, User) and its layers
 *   images/<hex>/<cache>      per-digest caches a backend builds (qemu's block image)
 *   names/<NAME>              the digest a name points at
 *   tmp/                      imports in progress (an interrupted one is removed by gc)
 *
 * An image's digest is its content address: the OCI manifest's digest for a layout or OCI
 * archive, the config's digest (docker's image ID) for a docker save archive, and the layer
 * blob's digest for a tarball or a directory.
 *
 * A layer is untrusted bytes (whoever built the image may be the guest). Unpacking never
 * uses libarchive's disk writer: every entry is created by this library beneath an fd of the
 * root with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) (msb/confine.h), so nothing outside
 * the image's own directory is ever created, changed or removed. Refused, naming the layer and
 * the entry (MSB_E_VALUE): an absolute name, a ".." segment, a path through a symlink, a hard
 * link whose target is not beneath the root, a whiteout that is any of those, a device node,
 * an entry over the size limit, a layer over its entry count, an image over its total size.
 * Confined rather than refused: setuid, setgid and sticky bits are dropped; owners are not
 * applied (every file belongs to whoever imported the image); a symlink is stored as written
 * and never followed on the host — a backend resolves it inside the sandbox's own root.
 * Directories keep u+rwx so that a later layer, and gc, can change them.
 */
#ifndef MSB_IMAGE_STORE_H
#define MSB_IMAGE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <msb/error.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MSB_IMAGE_DIGEST_LEN 71 /* "sha256:" + 64 hex digits */

/* Bounds on what one import may unpack; each refusal names the bound it hit. */
typedef struct msb_image_limits {
	uint64_t max_entry_bytes;  /* one file */
	uint64_t max_total_bytes;  /* every file of every layer */
	uint64_t max_entries;      /* entries of one layer */
	size_t max_layers;
	size_t max_json_bytes;     /* index.json, a manifest, a config */
} msb_image_limits;

/* 4 GiB a file, 64 GiB an image, a million entries a layer, 256 layers, 4 MiB of JSON. */
void msb_image_limits_default(msb_image_limits *limits);

typedef struct msb_image_record {
	char *name;                            /* NULL when read by digest */
	char digest[MSB_IMAGE_DIGEST_LEN + 1]; /* "sha256:<hex>" */
	char *format;  /* oci-layout | oci-archive | docker-archive | rootfs-tar | directory */
	char *source;  /* the path it was imported from */
	char *root;    /* absolute: <images_dir>/images/<hex>/rootfs */
	char *dir;     /* absolute: <images_dir>/images/<hex> (per-digest caches go here) */
	char **layers; /* blob digests, in the order applied */
	size_t n_layers;
	char **env;    /* the config's Env, "K=V" each */
	size_t n_env;
	char *working_dir; /* the config's WorkingDir (NULL: unset) */
	char *user;        /* the config's User (NULL: unset) */
	uint64_t size_bytes; /* bytes of regular files unpacked */
	int64_t created;     /* import time, seconds since the epoch */
} msb_image_record;

void msb_image_record_free(msb_image_record *record);

/* $MSB_IMAGES_DIR when set and absolute, else LOCALSTATEDIR/lib/msb/images. */
const char *msb_image_store_default_dir(void);

/*
 * Whether `name` may name an image: 1 to 128 of [A-Za-z0-9._:-], starting alphanumeric, not
 * "host" (the built-in image) and not "busybox" (qemu's built-in guest).
 */
msb_errc msb_image_name_check(const char *name, msb_error *err);

/*
 * Import `source` as `name` (replacing what `name` named before; the old image stays until
 * gc). `limits` NULL: the defaults. On success `out` (may be NULL) describes the image.
 */
msb_errc msb_image_import(const char *images_dir, const char *name, const char *source,
			  const msb_image_limits *limits, msb_image_record *out, msb_error *err);

/* What `name` names; MSB_E_NOT_FOUND naming the store when nothing. */
msb_errc msb_image_inspect(const char *images_dir, const char *name, msb_image_record *out,
			   msb_error *err);

/*
 * The digest `name` points at, from its name file alone (no image record read): what a
 * backend reports before each acquire. MSB_E_NOT_FOUND as msb_image_inspect.
 */
msb_errc msb_image_digest(const char *images_dir, const char *name,
			  char out[MSB_IMAGE_DIGEST_LEN + 1], msb_error *err);

/*
 * The uid and gid an image config's User names (OCI's forms: user, uid, user:group,
 * uid:gid, user:gid, uid:group), names looked up in the image's own etc/passwd and
 * etc/group beneath `root` (its unpacked root), never the host's. A uid with no group is
 * its passwd line's group, or 0 when the image has no such line. *uid and *gid are -1 when
 * `user` is NULL or empty (the backend's default). A name the image does not define, a
 * malformed line for it, or an account file past 4 MiB is refused (MSB_E_VALUE, naming
 * `image`, the User and the file): a workload is never run as some other user instead.
 */
msb_errc msb_image_user_resolve(const char *root, const char *image, const char *user,
				long *uid, long *gid, msb_error *err);

/* Every name, sorted; free each record and the array (msb_image_records_free). */
msb_errc msb_image_list(const char *images_dir, msb_image_record **out, size_t *len,
			msb_error *err);
void msb_image_records_free(msb_image_record *records, size_t len);

/* Remove the name (MSB_E_NOT_FOUND when absent); the image itself goes at the next gc. */
msb_errc msb_image_remove(const char *images_dir, const char *name, msb_error *err);

/*
 * Remove every image no name points at, every blob no image uses, and every import left
 * in tmp/. *removed (may be NULL) counts what went.
 */
msb_errc msb_image_gc(const char *images_dir, size_t *removed, msb_error *err);

/*
 * Apply one layer tar (any compression) at `layer_path` to the root opened as `root_fd`
 * (msb_confine_open_root), with OCI whiteouts when `whiteouts`. `label` names the layer in
 * refusals. *total_bytes accumulates regular-file bytes against limits->max_total_bytes.
 * Exposed for the hostile-layer tests and for backends that assemble a root themselves.
 */
msb_errc msb_image_unpack_layer(int root_fd, const char *layer_path, const char *label,
				int whiteouts, const msb_image_limits *limits,
				uint64_t *total_bytes, msb_error *err);

#ifdef __cplusplus
}
#endif
#endif
