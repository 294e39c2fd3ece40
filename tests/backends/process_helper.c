/*
 * process_helper.c — what the process backend's tests run inside a sandbox to probe it:
 *   connect PORT   exit 0 when a TCP connection to 127.0.0.1:PORT succeeds, 1 when refused
 *                  or unreachable (errno on stderr)
 *   alloc MIB      exit 0 when MIB MiB could be allocated and touched, 3 when refused
 *   unix PATH      exit 0 when a connection to unix socket PATH succeeds, 1 otherwise
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int probe_connect(const char *port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0) {
		perror("socket");
		return 1;
	}
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
		fprintf(stderr, "connect: %s\n", strerror(errno));
		return 1;
	}
	close(s);
	return 0;
}

static int probe_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
		fprintf(stderr, "unix: %s\n", strerror(errno));
		return 1;
	}
	close(s);
	return 0;
}

static int probe_alloc(const char *mib)
{
	size_t n = (size_t)atol(mib) * 1024 * 1024;
	char *p = malloc(n);
	if (!p) {
		fprintf(stderr, "alloc: refused\n");
		return 3;
	}
	memset(p, 1, n);
	free(p);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "connect"))
		return probe_connect(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "unix"))
		return probe_unix(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "alloc"))
		return probe_alloc(argv[2]);
	fprintf(stderr, "usage: process_helper connect PORT | alloc MIB | unix PATH\n");
	return 2;
}
