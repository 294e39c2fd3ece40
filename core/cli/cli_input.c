/*
 * cli_input.c — every byte the msb command reads from the host to send into a sandbox (a
 * put's LOCAL file, exec --stdin, a run-code program on stdin) is read with the bound the
 * workload's spec sets for what goes in (files_in max_bytes_per_file), and refused as soon as
 * it would pass it: never read to its end first, so /dev/zero or an endless pipe costs at
 * most the cap in memory, not the host's RAM.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static const char *kind_of(mode_t mode)
{
	return S_ISFIFO(mode) ? "a FIFO" : S_ISCHR(mode) ? "a character device"
	     : S_ISBLK(mode) ? "a block device" : S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

msb_errc msb_cli_input_open(const char *path, int *fd, msb_error *err)
{
	if (path[0] == '-' && !path[1]) {
		*fd = STDIN_FILENO;
		return MSB_OK;
	}
	/* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, for ever. */
	int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (f < 0)
		return msb_error_set_errno(err, errno == ENOENT ? MSB_E_NOT_FOUND : MSB_E_OS, errno,
					   "%s: cannot open '%s' to copy it in", msb_cli.command, path);
	struct stat st;
	msb_errc rc = MSB_OK;
	if (fstat(f, &st) != 0 || S_ISDIR(st.st_mode))
		rc = msb_error_set_errno(err, MSB_E_OS, S_ISDIR(st.st_mode) ? EISDIR : errno,
					 "%s: cannot read '%s' to copy it in", msb_cli.command, path);
	else if (!S_ISREG(st.st_mode))
		rc = msb_error_set(err, MSB_E_VALUE,
				   "%s: '%s' is %s, not a regular file; refused before reading, since it "
				   "could block or never end (give - to read standard input, which is "
				   "read up to the files_in cap)", msb_cli.command, path, kind_of(st.st_mode));
	else if (fcntl(f, F_SETFL, 0) != 0)
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "%s: cannot read '%s'", msb_cli.command,
					 path);
	if (rc != MSB_OK) {
		close(f);
		return rc;
	}
	*fd = f;
	return MSB_OK;
}

static msb_errc over(const char *what, uint64_t cap, msb_error *err)
{
	return msb_error_set(err, MSB_E_TRANSFER_CAP_EXCEEDED,
			     "%s: %s is over this workload's files_in max_bytes_per_file of %" PRIu64
			     " bytes; refused at the cap, before the rest was read",
			     msb_cli.command, what, cap);
}

msb_errc msb_cli_read_bounded(int fd, const char *what, uint64_t cap, msb_buf *buf,
			      msb_error *err)
{
	struct stat st;
	/* A regular file says its size: one that is over is refused before a byte is read. */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > cap)
		return over(what, cap, err);
	char chunk[65536];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n == 0)
			return MSB_OK;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return msb_error_set_errno(err, MSB_E_OS, errno, "%s: cannot read %s",
						   msb_cli.command, what);
		if ((uint64_t)buf->len + (uint64_t)n > cap)
			return over(what, cap, err);
		if (msb_buf_append(buf, chunk, (size_t)n, err) != MSB_OK)
			return MSB_E_NOMEM;
	}
}
