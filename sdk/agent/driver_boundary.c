/*
 * driver_boundary.c — what every boundary driver's start and stop need around an engine
 * (runsc, QEMU): a path in a sandbox's directory, the pid an engine wrote to its own pid
 * file, and the tail of its log for the message that says why it failed.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msb/driver.h>

char *msb_driver_path(const char *dir, const char *leaf)
{
	size_t n = strlen(dir) + strlen(leaf) + 2;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s/%s", dir, leaf);
	return s;
}

pid_t msb_driver_read_pid_file(const char *path)
{
	FILE *f = path ? fopen(path, "re") : NULL;
	long pid = 0;
	if (f) {
		if (fscanf(f, "%ld", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	return (pid_t)pid;
}

void msb_driver_file_tail(const char *path, char *out, size_t cap)
{
	out[0] = '\0';
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0)
		return;
	off_t end = lseek(fd, 0, SEEK_END);
	off_t from = end > (off_t)cap - 1 ? end - (off_t)cap + 1 : 0;
	ssize_t n = pread(fd, out, cap - 1, from);
	close(fd);
	out[n > 0 ? n : 0] = '\0';
	/* One line: the tail goes inside an error message. */
	for (char *p = out; *p; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
}
