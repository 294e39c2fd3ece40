/*
 * image_test.h — what the image store's tests share: real tar layers built with libarchive's
 * writer (every hostile class is a real archive, not a mock), sha256 of files, and a scratch
 * directory holding a store, a source area and an `outside` directory whose contents are
 * checked after every attack.
 */
#ifndef MSB_IMAGE_TEST_H
#define MSB_IMAGE_TEST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct img_tar img_tar;

/* compress: "none" or "gzip". */
img_tar *img_tar_open(const char *path, const char *compress);
void img_tar_file(img_tar *t, const char *name, const char *content, unsigned mode);
void img_tar_blob(img_tar *t, const char *name, const void *data, size_t len, unsigned mode);
/* A file header claiming `size` bytes, followed by exactly that many zero bytes. */
void img_tar_sized(img_tar *t, const char *name, long long size);
void img_tar_dir(img_tar *t, const char *name, unsigned mode);
void img_tar_symlink(img_tar *t, const char *name, const char *target);
void img_tar_hardlink(img_tar *t, const char *name, const char *target);
void img_tar_device(img_tar *t, const char *name, bool block);
void img_tar_fifo(img_tar *t, const char *name);
void img_tar_close(img_tar *t);

/* sha256 of a file, "sha256:<hex>" into out (72 bytes). */
void img_sha256_file(const char *path, char out[72]);
void img_sha256_buf(const void *data, size_t len, char out[72]);
long long img_file_size(const char *path);

typedef struct img_scratch {
	char dir[96];      /* /tmp/msb-image-test-XXXXXX */
	char store[128];   /* <dir>/store */
	char src[128];     /* <dir>/src */
	char outside[128]; /* <dir>/outside: holds canary (content "canary") and nothing else */
} img_scratch;

void img_scratch_make(img_scratch *s);
/* Whether outside/ still holds exactly canary, with its content, and nothing else. */
bool img_outside_intact(const img_scratch *s);
void img_scratch_remove(img_scratch *s);

/* Write a file with content; make directories (mkdir -p). */
void img_write(const char *path, const char *content, size_t len);
void img_mkdirs(const char *path);
/* Read a small file into buf (NUL-terminated); false when it is not there. */
bool img_read(const char *path, char *buf, size_t size);

/*
 * An OCI layout at <src>/oci: layer 1 (gzip) has etc/keep, etc/gone, opq/old and bin/hello;
 * layer 2 whites out etc/gone and makes opq opaque with opq/new. `extra_file` (NULL: none),
 * when given, is a host file added to layer 1 as bin/busybox, with bin/sh linking to it, so
 * a backend can run the image. The manifest digest goes to `manifest`, layer 1's blob path
 * to `layer1`.
 */
void img_make_oci_with(const img_scratch *s, const char *busybox, char manifest[72],
		       char layer1[400]);
void img_make_oci(const img_scratch *s, char manifest[72], char layer1[400]);
/*
 * A one-layer OCI layout at <src>/<leaf> whose config sets User `user` (NULL: unset), with
 * etc/passwd and etc/group of the contents given (NULL: the file is not there), and
 * `busybox` as for img_make_oci_with.
 */
void img_make_oci_user(const img_scratch *s, const char *busybox, const char *leaf,
		       const char *user, const char *passwd, const char *group);
/* Legacy layer ids: 64 hex digits that are not digests of anything. */
#define ID_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define ID_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
/*
 * A legacy `docker save` archive at <src>/save.tar (tree in <src>/docker): layer 1 has
 * bin/hello and etc/old, layer 2 whites out etc/old and adds etc/new; `wrong_diff` (NULL:
 * the right one) replaces layer 2's diff_id. `busybox` as for img_make_oci_with.
 */
void img_make_docker_with(const img_scratch *s, const char *busybox, const char *wrong_diff,
			  char config[72], char tar[200]);
void img_make_docker(const img_scratch *s, const char *wrong_diff, char config[72],
		     char tar[200]);
/* Add host file `path` as bin/busybox, and bin/sh -> busybox, to a layer being written. */
void img_tar_busybox(img_tar *t, const char *path);

#endif
