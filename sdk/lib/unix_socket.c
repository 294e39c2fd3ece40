/*
 * unix_socket.c — msb/unix_socket.h: the one place a socket address is built from a path.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <msb/unix_socket.h>

/* A socket and the address of `path`, or -1 with errno. */
static int unix_socket_for(const char *path, struct sockaddr_un *sa)
{
	size_t len = strlen(path);
	if (len >= sizeof sa->sun_path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, len + 1);
	return socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

static int fail_closing(int fd)
{
	int e = errno;
	close(fd);
	errno = e;
	return -1;
}

int msb_unix_listen(const char *path)
{
	struct sockaddr_un sa;
	int fd = unix_socket_for(path, &sa);
	if (fd < 0)
		return -1;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 64) != 0)
		return fail_closing(fd);
	return fd;
}

int msb_unix_listen_owner_only(const char *path)
{
	mode_t old = umask(0177);
	int fd = msb_unix_listen(path);
	int e = errno;
	umask(old);
	errno = e;
	return fd;
}

int msb_unix_connect(const char *path)
{
	struct sockaddr_un sa;
	int fd = unix_socket_for(path, &sa);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
		return fail_closing(fd);
	return fd;
}
