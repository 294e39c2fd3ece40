/*
 * plugins/qemu/relay_main.c — msb-qemu-relay, the program a VM's relay runs (relay.c is its
 * body; relay.h says why a relay exists and the fd layout it is started with).
 *
 * A program of its own because the relay lives as long as its VM: as a fork of the host it
 * would pin a copy of every page the host writes afterwards. Static and libc only, like the
 * guest's pieces, so its resident set is its own few pages and not a copy of the host's
 * libraries' data.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "relay.h"

int main(int argc, char **argv)
{
	/* Started with every signal blocked (while it shared the host's memory): unblock. */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (argc == 3 && !strcmp(argv[1], "egress")) {
		close(MSB_QEMU_RELAY_READY_FD);
		msb_qemu_egress_run(MSB_QEMU_RELAY_LISTEN_FD, argv[2]);
	}
	size_t n = 0;
	if (argc == 2 && argv[1][0] >= '1' && argv[1][0] <= '0' + MSB_QEMU_RELAY_MAX_PORTS &&
	    argv[1][1] == '\0')
		n = (size_t)(argv[1][0] - '0');
	bool placed = n > 0;
	for (int fd = MSB_QEMU_RELAY_LISTEN_FD; placed && fd < MSB_QEMU_RELAY_PORT_FD + (int)n; fd++)
		placed = fcntl(fd, F_GETFD) >= 0;
	if (!placed) {
		fprintf(stderr, "usage: %s N (1 to %d): the relay between a microVM's N virtio-serial "
			"ports (fds %d, %d, …) and its agent.sock (fd %d), readiness written to fd "
			"%d; started by the msb qemu backend, not by hand\n",
			argc > 0 ? argv[0] : "msb-qemu-relay", MSB_QEMU_RELAY_MAX_PORTS,
			MSB_QEMU_RELAY_PORT_FD, MSB_QEMU_RELAY_PORT_FD + 1, MSB_QEMU_RELAY_LISTEN_FD,
			MSB_QEMU_RELAY_READY_FD);
		return 2;
	}
	int ports[MSB_QEMU_RELAY_MAX_PORTS];
	for (size_t i = 0; i < n; i++)
		ports[i] = MSB_QEMU_RELAY_PORT_FD + (int)i;
	msb_qemu_relay_run(MSB_QEMU_RELAY_LISTEN_FD, ports, n, MSB_QEMU_RELAY_READY_FD);
}
