/*
 * image_internal.h — what the image store's sources share and nothing else sees: a set of
 * paths (the entries one layer made), blob copying with verification, bounded JSON reads,
 * and the store's directory layout.
 */
#ifndef MSB_IMAGE_INTERNAL_H
#define MSB_IMAGE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <msb/driver.h>
#include <msb/error.h>
#include <msb/image_store.h>

/* An open-addressing set of strings. */
typedef struct image_pathset {
	char **slots;
	size_t cap, len;
} image_pathset;

msb_errc image_pathset_add(image_pathset *s, const char *path, msb_error *err);
bool image_pathset_has(const image_pathset *s, const char *path);
void image_pathset_free(image_pathset *s);

/*
 * Copy everything readable from `fd` to a new file `dest` (O_EXCL), hashing it on the way;
 * `hex` gets the sha256 of what was copied (65 bytes). The copy is what is verified and
 * kept, so a source changed after the check cannot change the store.
 */
msb_errc image_blob_copy(int fd, const char *dest, char hex[65], msb_error *err);

/* sha256 of everything readable from `fd`, without keeping it. */
msb_errc image_blob_hash(int fd, char hex[65], msb_error *err);

/* "sha256:<64 lowercase hex>" → the hex part; NULL when malformed (other algorithms too). */
const char *image_digest_hex(const char *digest);

/* Parse at most `max` bytes of JSON from `fd`; a bigger file is refused, naming `what`. */
msb_errc image_json_read_fd(int fd, size_t max, const char *what, json_t **out, msb_error *err);
/* The same from a memory buffer. */
msb_errc image_json_parse(const char *buf, size_t len, const char *what, json_t **out,
			  msb_error *err);

/* Make dir (mode 0755) and every missing parent; existing is fine. */
msb_errc image_mkdirs(const char *dir, msb_error *err);

/*
 * A source reduced to what import applies: layer blobs already copied and verified into
 * the store (`layers[i]` a digest; the blob at blobs/sha256/<hex>), and the image config.
 */
typedef struct image_plan {
	char digest[MSB_IMAGE_DIGEST_LEN + 1];
	const char *format;
	char **layers;
	size_t n_layers;
	char config_digest[MSB_IMAGE_DIGEST_LEN + 1]; /* "" when the source has no config */
	json_t *config; /* the OCI/docker config object, or NULL */
} image_plan;

void image_plan_free(image_plan *p);

/*
 * Fill `plan` from `source` (a directory or an archive), copying each blob into
 * <store>/blobs/sha256/ and verifying it against the digest the manifest names. `work` is
 * a private directory under <store>/tmp for whatever must be extracted or packed first.
 */
msb_errc image_source_read(const char *store, const char *work, const char *source,
			   const msb_image_limits *limits, image_plan *plan, msb_error *err);

/* Copy the blob readable at `fd` into the store, verified against `want` (NULL: trusted). */
msb_errc image_store_blob(const char *store, int fd, const char *want, const char *what,
			  char digest[MSB_IMAGE_DIGEST_LEN + 1], msb_error *err);

/* Pack directory `dir` into an uncompressed tar at `tar_path`, links as links. */
msb_errc image_pack_dir(const char *dir, const char *tar_path, msb_error *err);

/* Read <store>/images/<hex>/image.json into `out` (name left NULL). */
msb_errc image_record_read(const char *store, const char *hex, msb_image_record *out,
			   msb_error *err);

#endif
