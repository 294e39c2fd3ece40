/*
 * driver_boundary.c — what every boundary driver's start and stop need around an engine
 * (runsc, QEMU): a path in a sandbox's directory, the pid an engine wrote to its own pid
 * file, the tail of its log for the message that says why it failed, and the agent's socket
 * taken out of a channel directory the sandbox can write.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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

/*
 * The agent binds its socket in the channel directory, which the sandbox can write: it
 * could put a symlink there to point the host at some other socket. So the host never
 * connects through that directory. Once the socket is there, it is hard-linked (linkat
 * without following: a planted symlink would be linked as a symlink, and refused) to
 * box->socket_path, a name only the host can change, and checked to be a socket of ours.
 */
msb_errc msb_driver_link_socket(const msb_driver_box *box, const char *backend, const char *chan,
				msb_error *err)
{
	char path[4300];
	snprintf(path, sizeof path, "%s/agent.sock", chan);
	int64_t deadline = msb_agent_now_ms() + (int64_t)(box->config->start_timeout * 1000.0);
	struct stat st;
	/* The engine returns once the agent is started: the socket is a few ms away, not more. */
	for (int delay = 1; lstat(path, &st) != 0; delay = delay < 2 ? delay * 2 : 2) {
		if (msb_agent_now_ms() >= deadline)
			return msb_error_set(err, MSB_E_TIMEOUT, "backend %s: sandbox %s: the agent "
					     "did not create its socket within %.1f s", backend,
					     box->name, box->config->start_timeout);
		nanosleep(&(struct timespec){ 0, delay * 1000000L }, NULL);
	}
	unlink(box->socket_path);
	if (linkat(AT_FDCWD, path, AT_FDCWD, box->socket_path, 0) != 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend %s: sandbox %s: "
					   "link %s", backend, box->name, box->socket_path);
	if (lstat(box->socket_path, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid())
		return msb_error_set(err, MSB_E_BACKEND, "backend %s: sandbox %s: %s is not the "
				     "agent's socket (refused: something else was planted in the "
				     "channel directory)", backend, box->name, path);
	return MSB_OK;
}
