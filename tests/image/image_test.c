/*
 * image_test.c — the image tests' tar builder, digests and scratch directories (image_test.h).
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image_test.h"

struct img_tar {
	struct archive *a;
};

static void die(const char *what)
{
	fprintf(stderr, "image_test: %s\n", what);
	abort();
}

img_tar *img_tar_open(const char *path, const char *compress)
{
	img_tar *t = calloc(1, sizeof *t);
	if (!t || !(t->a = archive_write_new()))
		die("oom");
	archive_write_set_format_pax_restricted(t->a);
	if (!strcmp(compress, "gzip"))
		archive_write_add_filter_gzip(t->a);
	if (archive_write_open_filename(t->a, path) != ARCHIVE_OK)
		die(archive_error_string(t->a));
	return t;
}

static struct archive_entry *entry(const char *name, unsigned type, unsigned mode)
{
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, mode);
	archive_entry_set_mtime(e, 1700000000, 0);
	return e;
}

static void put(img_tar *t, struct archive_entry *e, const void *data, size_t len)
{
	if (archive_write_header(t->a, e) != ARCHIVE_OK)
		die(archive_error_string(t->a));
	if (len && archive_write_data(t->a, data, len) != (la_ssize_t)len)
		die(archive_error_string(t->a));
	archive_entry_free(e);
}

void img_tar_file(img_tar *t, const char *name, const char *content, unsigned mode)
{
	struct archive_entry *e = entry(name, AE_IFREG, mode);
	size_t len = strlen(content);
	archive_entry_set_size(e, (la_int64_t)len);
	put(t, e, content, len);
}

void img_tar_blob(img_tar *t, const char *name, const void *data, size_t len, unsigned mode)
{
	struct archive_entry *e = entry(name, AE_IFREG, mode);
	archive_entry_set_size(e, (la_int64_t)len);
	put(t, e, data, len);
}

void img_tar_sized(img_tar *t, const char *name, long long size)
{
	struct archive_entry *e = entry(name, AE_IFREG, 0644);
	archive_entry_set_size(e, size);
	if (archive_write_header(t->a, e) != ARCHIVE_OK)
		die(archive_error_string(t->a));
	static const char zeros[4096];
	for (long long done = 0; done < size;) {
		size_t n = size - done > (long long)sizeof zeros ? sizeof zeros : (size_t)(size - done);
		archive_write_data(t->a, zeros, n);
		done += (long long)n;
	}
	archive_entry_free(e);
}

void img_tar_dir(img_tar *t, const char *name, unsigned mode)
{
	put(t, entry(name, AE_IFDIR, mode), NULL, 0);
}

void img_tar_symlink(img_tar *t, const char *name, const char *target)
{
	struct archive_entry *e = entry(name, AE_IFLNK, 0777);
	archive_entry_set_symlink(e, target);
	put(t, e, NULL, 0);
}

void img_tar_hardlink(img_tar *t, const char *name, const char *target)
{
	struct archive_entry *e = entry(name, AE_IFREG, 0644);
	archive_entry_set_hardlink(e, target);
	archive_entry_set_size(e, 0);
	put(t, e, NULL, 0);
}

void img_tar_device(img_tar *t, const char *name, bool block)
{
	struct archive_entry *e = entry(name, block ? AE_IFBLK : AE_IFCHR, 0666);
	archive_entry_set_rdevmajor(e, block ? 8 : 1);
	archive_entry_set_rdevminor(e, block ? 0 : 3);
	put(t, e, NULL, 0);
}

void img_tar_fifo(img_tar *t, const char *name)
{
	put(t, entry(name, AE_IFIFO, 0644), NULL, 0);
}

void img_tar_close(img_tar *t)
{
	if (archive_write_close(t->a) != ARCHIVE_OK)
		die(archive_error_string(t->a));
	archive_write_free(t->a);
	free(t);
}

static void hex_of(EVP_MD_CTX *ctx, char out[72])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n;
	EVP_DigestFinal_ex(ctx, md, &n);
	strcpy(out, "sha256:");
	for (unsigned i = 0; i < n; i++)
		sprintf(out + 7 + 2 * i, "%02x", md[i]);
	EVP_MD_CTX_free(ctx);
}

void img_sha256_buf(const void *data, size_t len, char out[72])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	EVP_DigestUpdate(ctx, data, len);
	hex_of(ctx, out);
}

void img_sha256_file(const char *path, char out[72])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	FILE *f = fopen(path, "rb");
	if (!f)
		die(path);
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		EVP_DigestUpdate(ctx, buf, n);
	fclose(f);
	hex_of(ctx, out);
}

long long img_file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

void img_write(const char *path, const char *content, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(content, 1, len, f) != len || fclose(f) != 0)
		die(path);
}

void img_mkdirs(const char *path)
{
	char buf[512];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(buf, 0755);
			*p = '/';
		}
	mkdir(buf, 0755);
}

bool img_read(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	size_t n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
	return true;
}

void img_scratch_make(img_scratch *s)
{
	snprintf(s->dir, sizeof s->dir, "/tmp/msb-image-test-XXXXXX");
	if (!mkdtemp(s->dir))
		die("mkdtemp");
	snprintf(s->store, sizeof s->store, "%s/store", s->dir);
	snprintf(s->src, sizeof s->src, "%s/src", s->dir);
	snprintf(s->outside, sizeof s->outside, "%s/outside", s->dir);
	img_mkdirs(s->src);
	img_mkdirs(s->outside);
	char canary[160];
	snprintf(canary, sizeof canary, "%s/canary", s->outside);
	img_write(canary, "canary", 6);
	chmod(canary, 0644);
}

bool img_outside_intact(const img_scratch *s)
{
	DIR *d = opendir(s->outside);
	if (!d)
		return false;
	int n = 0;
	bool only_canary = true;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			n++;
			only_canary = only_canary && !strcmp(de->d_name, "canary");
		}
	closedir(d);
	char canary[160], buf[32];
	snprintf(canary, sizeof canary, "%s/canary", s->outside);
	struct stat st;
	return n == 1 && only_canary && img_read(canary, buf, sizeof buf) && !strcmp(buf, "canary") &&
	       stat(canary, &st) == 0 && st.st_nlink == 1 && (st.st_mode & 07777) == 0644;
}

void img_scratch_remove(img_scratch *s)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", s->dir, s->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "image_test: could not remove %s\n", s->dir);
}
