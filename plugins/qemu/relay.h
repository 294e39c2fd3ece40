/*
 * plugins/qemu/relay.h — the host-side relay between the driver's unix socket and the one
 * virtio-serial stream into a microVM.
 *
 * Why a relay: a virtio-serial port is ONE byte stream, and QEMU's socket chardev serves one
 * connection at a time, while the driver (and two msb processes sharing a key) open a
 * connection per request. Worse, while no host peer is connected the guest side of the port
 * reads end-of-file at once, so an agent waiting for the next peer would spin a TCG vCPU.
 * The relay holds the VM's stream open for the VM's whole life, listens on the sandbox's
 * agent.sock, and passes whole frames through, one request at a time: each client's frame
 * is read completely before a byte of it reaches the guest, so a client that dies halfway
 * can never desynchronise the stream other clients share.
 */
#ifndef MSB_QEMU_RELAY_H
#define MSB_QEMU_RELAY_H

#include <sys/types.h>

/*
 * The relay's body. Runs in a forked child of a possibly multi-threaded host, so it uses
 * system calls only — no malloc, no stdio, no locks (its frame buffer is an mmap). It first
 * greets the agent through the stream (read `rfd`, write `wfd`: one socket twice for a VM,
 * a pipe pair for a container's stdio) and writes 'R' to `ready_fd` once the agent answered
 * (then closes it), then serves `listen_fd` until the stream ends. Never returns.
 *
 * The gvisor backend uses it too (its agent's channel is the container's stdin/stdout).
 */
void msb_qemu_relay_run(int listen_fd, int rfd, int wfd, int ready_fd) __attribute__((noreturn));

/*
 * Start the relay as a daemon of its own (double fork, own session: it must outlive the
 * msb process) over `rfd`/`wfd`, serving `listen_fd`. Returns its pid, or -1. `ready` gets
 * the relay's 'R' (agent answered) or 'F'. The caller keeps and closes its own copies.
 */
pid_t msb_qemu_relay_spawn(int listen_fd, int rfd, int wfd, int ready);
/* Wait up to `timeout` s for the relay's word: 1 ready, 0 the stream closed, -1 timed out. */
int msb_qemu_relay_await(int ready, double timeout);
/* A listening unix socket at `path` (an old one there is replaced); -1 with errno. */
int msb_qemu_relay_listen(const char *path);

#endif
