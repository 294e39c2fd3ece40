/*
 * image_pack.c — a directory source packed into one uncompressed layer tar, so that a
 * directory is imported exactly like a tarball: content-addressed by the tar's digest and
 * unpacked through the same confined path as every other layer. Links are packed as links
 * (never followed): a directory an operator prepared may hold links out of itself, and what
 * they point at on the host is not the image's.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "image_internal.h"

#define PACK_BLOCK (128 * 1024)

static msb_errc copy_data(struct archive *disk, struct archive *out, struct archive_entry *e,
			  msb_error *err)
{
	const char *src = archive_entry_sourcepath(e);
	if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e) ||
	    archive_entry_size(e) == 0)
		return MSB_OK;
	int fd = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return msb_error_set_errno(err, MSB_E_OS, errno, "image pack: open %s", src);
	char buf[PACK_BLOCK];
	msb_errc rc = MSB_OK;
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		if (archive_write_data(out, buf, (size_t)n) != n) {
			rc = msb_error_set(err, MSB_E_OS, "image pack: %s", archive_error_string(out));
			break;
		}
	if (n < 0 && !rc)
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "image pack: read %s", src);
	close(fd);
	(void)disk;
	return rc;
}

msb_errc image_pack_dir(const char *dir, const char *tar_path, msb_error *err)
{
	struct archive *disk = archive_read_disk_new();
	struct archive *out = archive_write_new();
	msb_errc rc = disk && out ? MSB_OK : msb_error_set(err, MSB_E_NOMEM, "out of memory");
	if (!rc) {
		archive_read_disk_set_symlink_physical(disk);
		archive_read_disk_set_standard_lookup(disk);
		archive_write_set_format_pax_restricted(out);
		if (archive_write_open_filename(out, tar_path) != ARCHIVE_OK ||
		    archive_read_disk_open(disk, dir) != ARCHIVE_OK)
			rc = msb_error_set(err, MSB_E_OS, "image pack %s: %s", dir,
					   archive_error_string(archive_errno(out) ? out : disk));
	}
	size_t prefix = strlen(dir);
	while (!rc) {
		struct archive_entry *e = archive_entry_new();
		int r = e ? archive_read_next_header2(disk, e) : ARCHIVE_FATAL;
		if (r == ARCHIVE_EOF) {
			archive_entry_free(e);
			break;
		}
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
			rc = msb_error_set(err, MSB_E_OS, "image pack %s: %s", dir,
					   archive_error_string(disk));
			archive_entry_free(e);
			break;
		}
		archive_read_disk_descend(disk);
		/* Names relative to the directory, as a layer's are. */
		const char *abs = archive_entry_pathname(e);
		const char *rel = abs + (strncmp(abs, dir, prefix) ? 0 : prefix);
		while (*rel == '/')
			rel++;
		if (*rel) {
			archive_entry_set_pathname(e, rel);
			if (archive_write_header(out, e) != ARCHIVE_OK)
				rc = msb_error_set(err, MSB_E_OS, "image pack %s: %s", abs,
						   archive_error_string(out));
			else
				rc = copy_data(disk, out, e, err);
		}
		archive_entry_free(e);
	}
	if (out && archive_write_close(out) != ARCHIVE_OK && !rc)
		rc = msb_error_set(err, MSB_E_OS, "image pack: %s", archive_error_string(out));
	archive_write_free(out);
	archive_read_free(disk);
	return rc;
}
