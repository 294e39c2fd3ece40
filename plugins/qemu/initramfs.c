/*
 * plugins/qemu/initramfs.c — the cpio newc writer (see initramfs.h).
 *
 * newc: per member a 110-byte ASCII header of thirteen 8-digit hex fields, the NUL-terminated
 * name padded to 4 bytes, the data padded to 4 bytes; a member named TRAILER!!! ends it.
 */
#include "initramfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct cpio_out {
	FILE *f;
	unsigned long ino;
} cpio_out;

static int pad4(FILE *f, size_t written)
{
	static const char zeros[4];
	size_t pad = (4 - written % 4) % 4;
	return fwrite(zeros, 1, pad, f) == pad ? 0 : -1;
}

static int member(cpio_out *o, const char *name, mode_t mode, const void *data, size_t len)
{
	size_t namesz = strlen(name) + 1;
	char hdr[160];
	/* Every member is root-owned with mtime 0: the archive depends only on its inputs. */
	int n = snprintf(hdr, sizeof hdr, "070701%08lX%08X%08X%08X%08X%08X%08zX%08X%08X%08X%08X%08zX%08X",
		 ++o->ino, (unsigned)mode, 0u, 0u, 1u, 0u, len, 0u, 0u, 0u, 0u, namesz, 0u);
	if (n != 110 || fwrite(hdr, 1, 110, o->f) != 110 || fwrite(name, 1, namesz, o->f) != namesz ||
	    pad4(o->f, 110 + namesz) != 0)
		return -1;
	if (len > 0 && (fwrite(data, 1, len, o->f) != len || pad4(o->f, len) != 0))
		return -1;
	return 0;
}

static msb_errc slurp(const char *path, unsigned char **data, size_t *len, msb_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return msb_error_set_errno(err, MSB_E_NOT_FOUND, errno,
					   "qemu: cannot read %s for the guest's initramfs", path);
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return msb_error_set(err, MSB_E_VALUE,
				     "qemu: %s is not a regular file; it cannot go into the initramfs",
				     path);
	}
	unsigned char *buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return msb_error_set(err, MSB_E_NOMEM, "qemu: out of memory reading %s", path);
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r < 0 ? errno : EIO;
			free(buf);
			close(fd);
			return msb_error_set_errno(err, MSB_E_OS, e, "qemu: reading %s", path);
		}
		got += (size_t)r;
	}
	close(fd);
	*data = buf;
	*len = got;
	return MSB_OK;
}

msb_errc msb_initramfs_write(const char *path, const msb_initramfs_entry *entries, size_t n,
			     msb_error *err)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
		return msb_error_set(err, MSB_E_VALUE, "qemu: initramfs path too long: %s", path);
	cpio_out o = { fopen(tmp, "we"), 0 };
	if (!o.f)
		return msb_error_set_errno(err, MSB_E_OS, errno, "qemu: cannot create %s", tmp);
	msb_errc rc = MSB_OK;
	for (size_t i = 0; i < n && rc == MSB_OK; i++) {
		const msb_initramfs_entry *e = &entries[i];
		unsigned char *owned = NULL;
		const void *data = e->data;
		size_t len = e->len;
		if (e->host_path) {
			rc = slurp(e->host_path, &owned, &len, err);
			data = owned;
		}
		if (rc == MSB_OK && member(&o, e->guest_path, e->mode, data, len) != 0)
			rc = msb_error_set_errno(err, MSB_E_OS, errno, "qemu: writing %s", tmp);
		free(owned);
	}
	if (rc == MSB_OK && member(&o, "TRAILER!!!", 0, NULL, 0) != 0)
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "qemu: writing %s", tmp);
	if (fclose(o.f) != 0 && rc == MSB_OK)
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "qemu: writing %s", tmp);
	if (rc == MSB_OK && rename(tmp, path) != 0)
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "qemu: installing %s", path);
	if (rc != MSB_OK)
		unlink(tmp);
	return rc;
}
