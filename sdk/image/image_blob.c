/*
 * image_blob.c — blobs in and out of the store: copying with a sha256 on the way (libcrypto's
 * EVP, the digest the OCI spec names), digest strings, bounded JSON reads (Jansson), and making
 * the store's directories.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image_internal.h"

#define COPY_BLOCK (256 * 1024)

static void to_hex(const unsigned char *md, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < 32; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[64] = '\0';
}

/* Hash fd to its end, writing each block to out_fd when it is not -1. */
static msb_errc hash_stream(int fd, int out_fd, char hex[65], msb_error *err)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	char *buf = malloc(COPY_BLOCK);
	msb_errc rc = MSB_OK;
	if (!ctx || !buf || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		rc = msb_error_set(err, MSB_E_NOMEM, "sha256: out of memory");
	while (!rc) {
		ssize_t n = read(fd, buf, COPY_BLOCK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = msb_error_set_errno(err, MSB_E_OS, errno, "read");
			break;
		}
		if (n == 0)
			break;
		EVP_DigestUpdate(ctx, buf, (size_t)n);
		for (ssize_t done = 0; out_fd >= 0 && done < n;) {
			ssize_t w = write(out_fd, buf + done, (size_t)(n - done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				rc = msb_error_set_errno(err, MSB_E_OS, errno, "write");
				break;
			}
			done += w;
		}
	}
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	if (!rc && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen == 32)
		to_hex(md, hex);
	else if (!rc)
		rc = msb_error_set(err, MSB_E_OS, "sha256 failed");
	EVP_MD_CTX_free(ctx);
	free(buf);
	return rc;
}

msb_errc image_blob_hash(int fd, char hex[65], msb_error *err)
{
	return hash_stream(fd, -1, hex, err);
}

msb_errc image_blob_copy(int fd, const char *dest, char hex[65], msb_error *err)
{
	int out = open(dest, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0)
		return msb_error_set_errno(err, MSB_E_OS, errno, "create %s", dest);
	msb_errc rc = hash_stream(fd, out, hex, err);
	if (close(out) != 0 && !rc)
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "close %s", dest);
	if (rc)
		unlink(dest);
	return rc;
}

const char *image_digest_hex(const char *digest)
{
	if (!digest || strncmp(digest, "sha256:", 7) || strlen(digest) != MSB_IMAGE_DIGEST_LEN)
		return NULL;
	for (const char *p = digest + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return NULL;
	return digest + 7;
}

msb_errc image_json_parse(const char *buf, size_t len, const char *what, json_t **out,
			  msb_error *err)
{
	json_error_t jerr;
	*out = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!*out)
		return msb_error_set(err, MSB_E_VALUE, "%s is not valid JSON: line %d: %s", what,
				     jerr.line, jerr.text);
	return MSB_OK;
}

msb_errc image_json_read_fd(int fd, size_t max, const char *what, json_t **out, msb_error *err)
{
	*out = NULL;
	char *buf = malloc(max + 1);
	if (!buf)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	size_t len = 0;
	msb_errc rc = MSB_OK;
	/* One byte past the bound is read, so a file exactly at it passes and one over it does not. */
	while (len <= max) {
		ssize_t n = read(fd, buf + len, max + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = msb_error_set_errno(err, MSB_E_OS, errno, "read %s", what);
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (!rc && len > max)
		rc = msb_error_set(err, MSB_E_VALUE, "%s is over the %zu-byte limit for image JSON",
				   what, max);
	if (!rc)
		rc = image_json_parse(buf, len, what, out, err);
	free(buf);
	return rc;
}

msb_errc image_mkdirs(const char *dir, msb_error *err)
{
	char buf[4096];
	if (strlen(dir) >= sizeof buf)
		return msb_error_set(err, MSB_E_VALUE, "path too long: %s", dir);
	strcpy(buf, dir);
	for (char *p = buf + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(buf, 0755) != 0 && errno != EEXIST)
				return msb_error_set_errno(err, MSB_E_OS, errno, "mkdir %s", buf);
			*p = c;
			if (!c)
				break;
		}
	}
	return MSB_OK;
}

msb_errc image_store_blob(const char *store, int fd, const char *want, const char *what,
			  char digest[MSB_IMAGE_DIGEST_LEN + 1], msb_error *err)
{
	char *blobs = msb_driver_path(store, "blobs/sha256");
	char *tmp = msb_driver_path(store, "tmp/blob-XXXXXX");
	msb_errc rc = !blobs || !tmp ? msb_error_set(err, MSB_E_NOMEM, "out of memory") : MSB_OK;
	if (!rc)
		rc = image_mkdirs(blobs, err);
	int tfd = rc ? -1 : mkstemp(tmp);
	if (!rc && tfd < 0)
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "mkstemp %s", tmp);
	if (tfd >= 0) {
		close(tfd);
		unlink(tmp);
	}
	char hex[65];
	if (!rc)
		rc = image_blob_copy(fd, tmp, hex, err);
	if (!rc) {
		snprintf(digest, MSB_IMAGE_DIGEST_LEN + 1, "sha256:%s", hex);
		if (want && strcmp(want, digest)) {
			unlink(tmp);
			rc = msb_error_set(err, MSB_E_VALUE, "image blob %s refused: digest mismatch "
					   "(the manifest says %s, the content is %s)", what, want,
					   digest);
		}
	}
	if (!rc) {
		char *final = msb_driver_path(blobs, hex);
		if (!final || rename(tmp, final) != 0)
			rc = msb_error_set_errno(err, MSB_E_OS, errno, "store blob %s", hex);
		free(final);
		if (rc)
			unlink(tmp);
	}
	free(blobs);
	free(tmp);
	return rc;
}

void image_plan_free(image_plan *p)
{
	for (size_t i = 0; i < p->n_layers; i++)
		free(p->layers[i]);
	free(p->layers);
	if (p->config)
		json_decref(p->config);
	memset(p, 0, sizeof *p);
}

static size_t slot_of(const image_pathset *s, const char *path)
{
	size_t h = 1469598103934665603ull;
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	size_t i = h & (s->cap - 1);
	while (s->slots[i] && strcmp(s->slots[i], path))
		i = (i + 1) & (s->cap - 1);
	return i;
}

bool image_pathset_has(const image_pathset *s, const char *path)
{
	return s->cap && s->slots[slot_of(s, path)];
}

msb_errc image_pathset_add(image_pathset *s, const char *path, msb_error *err)
{
	if ((s->len + 1) * 2 > s->cap) {
		image_pathset bigger = { .cap = s->cap ? s->cap * 2 : 64 };
		bigger.slots = calloc(bigger.cap, sizeof *bigger.slots);
		if (!bigger.slots)
			return msb_error_set(err, MSB_E_NOMEM, "out of memory");
		for (size_t i = 0; i < s->cap; i++)
			if (s->slots[i])
				bigger.slots[slot_of(&bigger, s->slots[i])] = s->slots[i];
		bigger.len = s->len;
		free(s->slots);
		*s = bigger;
	}
	size_t i = slot_of(s, path);
	if (s->slots[i])
		return MSB_OK;
	if (!(s->slots[i] = strdup(path)))
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	s->len++;
	return MSB_OK;
}

void image_pathset_free(image_pathset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->slots[i]);
	free(s->slots);
	memset(s, 0, sizeof *s);
}
