/*
 * peer.h — the egress suite's loopback test peer (peer.c). Private to core/conformance.
 */
#ifndef MSB_CONFORMANCE_PEER_H
#define MSB_CONFORMANCE_PEER_H

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>

#include <msb/error.h>

typedef struct conf_peer {
	int fd;
	int stop[2];
	pthread_t thread;
	bool running;
	unsigned connections;
	unsigned port;
	char address[32];
	char token[96];
} conf_peer;

/* Listen on `address` (127.0.0.0/8 only) at an ephemeral port and answer with `token`. */
msb_errc conf_peer_start(conf_peer *p, const char *address, const char *token, msb_error *err);
/* The same on a listening socket made elsewhere (in the kit's network namespace). */
msb_errc conf_peer_start_fd(conf_peer *p, int fd, const char *address, const char *token,
			    msb_error *err);
/* A listening IPv4 TCP socket on address:port (0: ephemeral), or -1 with errno. */
int conf_peer_listen(const char *address, unsigned port);
/* How many connections reached it so far. */
unsigned conf_peer_connections(conf_peer *p);
void conf_peer_stop(conf_peer *p);

#endif
