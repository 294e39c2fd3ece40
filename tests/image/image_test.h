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

#endif
