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
 * greets the agent through `vm_fd` and writes 'R' to `ready_fd` once the agent answered
 * (then closes it), then serves `listen_fd` until the VM's stream ends. Never returns.
 */
void msb_qemu_relay_run(int listen_fd, int vm_fd, int ready_fd) __attribute__((noreturn));

#endif
