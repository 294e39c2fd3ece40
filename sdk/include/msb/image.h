/*
 * msb/image.h — the images a backend that builds its sandbox's root from host directories
 * (bwrap, gvisor) runs a spec from: the built-in `host` image, and the `images:` config key
 * that names root directories.
 *
 *   images:
 *     tiny: /srv/images/tiny     a spec's image "tiny" runs with that directory as its root
 *
 * "host" (or no image) is the host's programs and libraries and only the pieces of /etc a
 * program and a shell need; it cannot be redefined.
 *
 *   images_dir: /srv/msb/images        the image store (msb/image_store.h) a name not in
 *                                      `images:` is looked up in (default: the store's own)
 */
#ifndef MSB_IMAGE_H
#define MSB_IMAGE_H

#include <stddef.h>

#include <msb/error.h>
#include <msb/node.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct msb_image {
	char *name;
	char *root;              /* absolute path of an existing directory */
} msb_image;

typedef struct msb_images {
	msb_image *list;
	size_t len;
	/* Appended: the image store, and the roots resolved from it (kept until free). */
	char *store;
	struct msb_images_seen *seen;
} msb_images;

/*
 * The host paths the built-in `host` image shows, read-only, NULL-terminated: the
 * top-level program and library directories, then the pieces of /etc (the loader cache,
 * user names, the time zone). Nothing else of /etc — no resolv.conf, no credentials, no ssh
 * keys — and nothing of /root or /home. A path may be missing on a given host, and a
 * usr-merged /bin -> usr/bin must be recreated as a link, or ld.so paths break.
 */
const char *const *msb_image_host_paths(void);

/* Read config `images:` (absent or null: none) into `out`, which msb_images_free frees. */
msb_errc msb_images_read(const msb_node *config, msb_images *out, msb_error *err);
/*
 * The root directory of `image` (NULL for "host" or no image): a config `images:` entry
 * first, else the image store's unpacked root for that name. MSB_E_VALUE, naming the images
 * `backend` has and the store, when it is neither. The root stays valid until
 * msb_images_free. Thread-safe.
 */
msb_errc msb_images_resolve(const msb_images *images, const char *backend, const char *image,
			    const char **root, msb_error *err);
/*
 * What a sandbox of `image` starts from, for msb_boundary.identity: the root directory
 * msb_images_resolve gives ("" for "host"). A store image's root is named by its digest, so a
 * name re-imported with other content resolves to another identity.
 */
msb_errc msb_images_identity(const msb_images *images, const char *backend, const char *image,
			     char *out, size_t size, msb_error *err);
/*
 * The content address of `image` for a backend's image_digest operation: a store image's
 * digest; "" for "host", no image, a config `images:` directory (no content address) and a
 * name that resolves to nothing (the start refuses that, in its own words).
 */
msb_errc msb_images_digest(const msb_images *images, const char *image, char *out, size_t size,
			   msb_error *err);
/*
 * A store image's Env for msb_boundary.image_config: NULL-terminated "K=V" entries owned by
 * `images` (kept until msb_images_free); NULL for "host", a config directory, no image, or
 * a name the store does not have (the start refuses that in its own words).
 */
msb_errc msb_images_env(const msb_images *images, const char *image, const char *const **env,
			msb_error *err);
/*
 * A store image's User for msb_boundary.image_user: the uid and gid its commands run as
 * (msb_image_user_resolve); both -1 for "host", a config directory, no image, an image
 * whose config sets no User, or a name the store does not have (the start refuses that in
 * its own words). A User the image cannot resolve is refused (MSB_E_VALUE).
 */
msb_errc msb_images_user(const msb_images *images, const char *image, long *uid, long *gid,
			 msb_error *err);
void msb_images_free(msb_images *images);

#ifdef __cplusplus
}
#endif
#endif
