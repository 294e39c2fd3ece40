/*
 * plugins/qemu/egress_host.c — msb-qemu-relay's egress mode (relay.h): the host's end of a
 * microVM's egress port. Each OPEN the guest multiplexes on the port becomes a connection
 * of its own to the sandbox's proxy socket, the guest's hello sent first and no descriptor
 * with it, so the proxy treats that connection as the guest's stream and decides it like
 * any other (msb/egress.h). It decides nothing itself: the hello is the guest's, untrusted,
 * and passed on as it came. A proxy socket nobody listens on (no msb process serves the
 * sandbox now) refuses the connection, which the guest sees as a reset.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../../sdk/agent/egress_mux.h"
#include "relay.h"

static int open_proxy(void *ctx, const msb_egress_hello *hello)
{
	const char *path = ctx;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd >= 0 && (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
			send(fd, hello, sizeof *hello, MSG_NOSIGNAL) != (ssize_t)sizeof *hello)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

void msb_qemu_egress_run(int stream, const char *proxy_socket)
{
	int fl = fcntl(stream, F_GETFL);
	if (fl < 0 || fcntl(stream, F_SETFL, fl | O_NONBLOCK) < 0)
		_exit(1);
	eg_mux *m = eg_mux_new(stream, open_proxy, (void *)proxy_socket);
	static struct pollfd fds[EG_MUX_POLLFDS];
	if (!m)
		_exit(1);
	for (;;) {
		eg_mux_fill(m, fds);
		if (poll(fds, EG_MUX_POLLFDS, -1) < 0 && errno != EINTR)
			_exit(1);
		if (!eg_mux_run(m, fds))
			_exit(0); /* the VM is gone */
	}
}
