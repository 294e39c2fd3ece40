/*
 * confine_read.c — reading a file beneath a working directory, bounded by the caller's cap.
 *
 * The cap is a refusal, never a truncation (half a PNG returned as success is an artifact
 * the host cannot tell from a whole one), and it is enforced while reading, not after: the
 * fstat size is checked first, then at most max_bytes are read, then one probe byte tells a
 * file that grew since the fstat from one that did not.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "confine_internal.h"

static msb_errc cap_exceeded(const char *path, const char *how, uint64_t max_bytes,
			     msb_error *err)
{
	return msb_error_set(err, MSB_E_TRANSFER_CAP_EXCEEDED,
			     "read_file refused '%s': it is %s the caller's max_bytes of %" PRIu64
			     "; refused rather than truncated, since a short read returned as "
			     "success cannot be told from a whole file",
			     path, how, max_bytes);
}

/* Make room for `more` bytes plus the NUL msb_buf keeps, without msb_buf_append's copy. */
static msb_errc reserve(msb_buf *out, size_t more, const char *path, msb_error *err)
{
	size_t need = out->len + more + 1;
	if (need <= out->cap)
		return MSB_OK;
	unsigned char *p = realloc(out->data, need);
	if (!p)
		return msb_error_set(err, MSB_E_NOMEM, "read_file '%s': out of memory for %zu bytes",
				     path, more);
	out->data = p;
	out->cap = need;
	return MSB_OK;
}

static msb_errc read_bounded(int fd, const char *path, uint64_t size, uint64_t max_bytes,
			     msb_buf *out, msb_error *err)
{
	if (max_bytes > SIZE_MAX - 1)
		max_bytes = SIZE_MAX - 1;
	size_t start = out->len;
	msb_errc rc = reserve(out, (size_t)size, path, err);
	for (size_t got = 0; rc == MSB_OK;) {
		if (got == (size_t)max_bytes) {
			unsigned char probe;
			ssize_t n = read(fd, &probe, 1);
			if (n > 0)
				rc = cap_exceeded(path, "growing past", max_bytes, err);
			else if (n < 0 && errno == EINTR)
				continue;
			else if (n < 0)
				rc = msb_error_set_errno(err, MSB_E_OS, errno, "read_file '%s'", path);
			break;
		}
		if (out->len + 1 == out->cap) {
			size_t more = out->len - start;
			more = more < 65536 ? 65536 : more;
			if (more > (size_t)max_bytes - got)
				more = (size_t)max_bytes - got;
			rc = reserve(out, more, path, err);
			if (rc != MSB_OK)
				break;
		}
		size_t room = out->cap - 1 - out->len;
		if (room > (size_t)max_bytes - got)
			room = (size_t)max_bytes - got;
		ssize_t n = read(fd, out->data + out->len, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = msb_error_set_errno(err, confine_errno_code(errno), errno, "read_file '%s'",
						 path);
			break;
		}
		if (n == 0)
			break;
		out->len += (size_t)n;
		got += (size_t)n;
	}
	if (rc != MSB_OK)
		out->len = start;
	if (out->data)
		out->data[out->len] = '\0';
	return rc;
}

msb_errc msb_confine_read_file(int root_fd, const char *path, uint64_t max_bytes, msb_buf *out,
			       msb_error *err)
{
	msb_errc rc = msb_confine_check_path(path, false, err);
	if (rc != MSB_OK)
		return rc;
	int fd;
	/* O_NONBLOCK: opening a FIFO must not wait for a writer the guest never starts. */
	rc = confine_open_leaf(root_fd, "read_file", path, O_RDONLY | O_NONBLOCK, &fd, err);
	if (rc != MSB_OK)
		return rc;
	struct stat st;
	if (fstat(fd, &st) != 0)
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "read_file '%s'", path);
	else if (S_ISDIR(st.st_mode))
		rc = msb_error_set(err, MSB_E_IS_DIR, "read_file refused '%s': it is a directory", path);
	else if (!S_ISREG(st.st_mode))
		/* The protocol: a non-regular entry raises the OS error, not the value error. */
		rc = msb_error_set_errno(err, MSB_E_OS, EINVAL,
				   "read_file refused '%s': it is not a regular file (a FIFO, socket "
				   "or device), and only regular files are read",
				   path);
	else if ((uint64_t)st.st_size > max_bytes)
		rc = msb_error_set(err, MSB_E_TRANSFER_CAP_EXCEEDED,
				   "read_file refused '%s': it is %lld bytes, over the caller's "
				   "max_bytes of %" PRIu64 "; refused rather than truncated",
				   path, (long long)st.st_size, max_bytes);
	else
		rc = read_bounded(fd, path, (uint64_t)st.st_size, max_bytes, out, err);
	close(fd);
	return rc;
}
