/*
 * egress_mux.h — many egress connections over one byte stream (egress_mux.c), for a
 * boundary whose only channel out is a single stream: a microVM's virtio-serial port
 * (plugins/qemu). Both ends run the same engine: the guest's forwarder (msb-agent
 * --egress-transport mux) and the host's msb-qemu-relay in its egress mode, which opens a
 * connection to the proxy's unix socket per guest connection (hello first, no descriptor).
 *
 * Frames: a 12-byte header (id, type, payload length, host byte order: both ends are one
 * machine) then the payload. OPEN (guest to host) carries a msb_egress_hello; DATA bytes;
 * SHUT says the sender will send no more; CLOSE ends a connection at once (a reset); ACK
 * returns window credit. Each direction of each connection has EG_MUX_WINDOW bytes of
 * credit, so a connection whose reader is slow fills its own window and never stalls the
 * stream the others share, and every buffer on both ends is bounded. The host treats
 * everything the guest sends as hostile: a frame it cannot parse ends the stream, a
 * connection that overruns its window is reset.
 */
#ifndef MSB_EGRESS_MUX_H
#define MSB_EGRESS_MUX_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#include <msb/egress.h>

#define EG_MUX_MAX 256               /* connections at once on one stream */
#define EG_MUX_WINDOW (256 * 1024)   /* credit per connection and direction */
#define EG_MUX_CHUNK (32 * 1024)     /* the largest payload */

typedef struct eg_mux eg_mux;

/*
 * The host's side of an OPEN: a connected, non-blocking socket that carries the guest's
 * connection on (the proxy's, its hello sent), or -1 to refuse it.
 */
typedef int (*eg_mux_open_fn)(void *ctx, const msb_egress_hello *hello);

/* `open` NULL: the guest's side (connections come from eg_mux_add). */
eg_mux *eg_mux_new(int stream, eg_mux_open_fn open, void *ctx);
/* Reset every connection and free; the stream is the caller's to close. */
void eg_mux_free(eg_mux *m);
/* The guest's: carry accepted connection `fd` (non-blocking) for `hello`; false: no room. */
bool eg_mux_add(eg_mux *m, int fd, const msb_egress_hello *hello);
/* Fill the EG_MUX_POLLFDS entries this engine waits on. */
#define EG_MUX_POLLFDS (1 + EG_MUX_MAX)
void eg_mux_fill(eg_mux *m, struct pollfd *fds);
/* Handle what poll said; false when the stream has ended or failed. */
bool eg_mux_run(eg_mux *m, const struct pollfd *fds);

#endif
