/*
 * plugins/qemu/relay.h — the host-side relay between the driver's unix socket and the one
 * virtio-serial stream into a microVM.
 *
 * Why a relay: a virtio-serial port is ONE byte stream, and QEMU's socket chardev serves one
 * connection at a time, while the driver (and two msb processes sharing a key) open a
 * connection per request. Worse, while no host peer is connected the guest side of the port
 * reads end-of-file at once, so an agent waiting for the next peer would spin a TCG vCPU.
 * The relay holds the VM's streams open for the VM's whole life, listens on the sandbox's
 * agent.sock, and passes whole frames through, one request per port at a time (the guest
 * runs one agent per port, so requests run concurrently up to the number of ports): each
 * client's frame is read completely before a byte of it reaches the guest, so a client that
 * dies halfway can never desynchronise a stream other clients share.
 */
#ifndef MSB_QEMU_RELAY_H
#define MSB_QEMU_RELAY_H

#include <sys/types.h>

/* How many ports (and guest agents) one VM may have. */
#define MSB_QEMU_RELAY_MAX_PORTS 8

/*
 * The relay's body (relay.c), what msb-qemu-relay runs. It uses system calls only — no
 * malloc, no stdio, no locks (its frame buffer is an mmap), so a test may also run it in a
 * fork of a multi-threaded process. It sends
 * every port (a connected socket each) a HELLO at once and writes 'R' to `ready_fd` as
 * soon as the FIRST agent answered it well ('F' if none did), serving `listen_fd` from
 * then on; the other ports join as their answers come. A port is handed requests only
 * after its own HELLO succeeded; one whose answer fails is closed and never used. Serves
 * until a greeted port's stream ends. Never returns.
 */
void msb_qemu_relay_run(int listen_fd, const int *port_fds, size_t n_ports, int ready_fd)
	__attribute__((noreturn));
/*
 * The msb-qemu-relay program's command line: `msb-qemu-relay N` (N ports, 1 to
 * MSB_QEMU_RELAY_MAX_PORTS), started with the listening socket at fd 3, the ready pipe at 4
 * and the ports at 5, 6, … 4+N.
 */
#define MSB_QEMU_RELAY_LISTEN_FD 3
#define MSB_QEMU_RELAY_READY_FD 4
#define MSB_QEMU_RELAY_PORT_FD 5
/*
 * Start `program` (msb-qemu-relay) as a daemon of its own (double fork, own session: it
 * must outlive the msb process) over `port_fds`, serving `listen_fd` (relay_spawn.c).
 * Returns its pid once the exec went through, or -1 with errno (the exec's own when that
 * failed). `ready` gets the relay's 'R' or 'F'. The caller keeps and closes its own copies.
 */
pid_t msb_qemu_relay_spawn(const char *program, int listen_fd, const int *port_fds,
			   size_t n_ports, int ready);
/*
 * The egress mode (`msb-qemu-relay egress PROXY_SOCKET`, the port's stream at fd 3): every
 * guest connection multiplexed on the VM's egress port gets a connection of its own to the
 * proxy's socket (egress_host.c, sdk/agent/egress_mux.h). Serves until the stream ends.
 */
void msb_qemu_egress_run(int stream, const char *proxy_socket) __attribute__((noreturn));
/* Start it as a daemon, as msb_qemu_relay_spawn does; its pid, or -1 with errno. */
pid_t msb_qemu_egress_spawn(const char *program, int stream, const char *proxy_socket);
/*
 * Wait up to `timeout` s for the relay's word: 1 ready, 0 the stream closed, -1 timed out.
 * After 'R' the relay also says 'A' once every port answered its HELLO ('P': some failed)
 * and closes the pipe: msb_qemu_relay_await_all waits for that too (a template's save).
 */
int msb_qemu_relay_await(int ready, double timeout);
int msb_qemu_relay_await_all(int ready, double timeout);

#endif
