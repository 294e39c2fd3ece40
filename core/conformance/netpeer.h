/*
 * netpeer.h — the allowlist half's test peers (netpeer.c): a network namespace the kit makes
 * with a veth into it and two HTTP peers on link-local addresses there, plus a UDP socket
 * on the first address's port 53 that counts datagrams. Private to core/conformance.
 */
#ifndef MSB_CONFORMANCE_NETPEER_H
#define MSB_CONFORMANCE_NETPEER_H

#include <stdbool.h>

#include <msb/error.h>

#include "peer.h"

typedef struct conf_netpeer {
	char ns[40], host_if[24], ns_if[24];
	bool made;
	conf_peer listed, other;
	bool listed_up, other_up;
	int udp;
} conf_netpeer;

/*
 * Make the namespace: `listed` and `other` (IPv4, one 169.254.0.0/16 /29) inside it, the
 * /29's first address on the host side; HTTP peers on port 80 of both answering with the
 * tokens. On failure everything made is removed and err says what could not be done.
 */
msb_errc conf_netpeer_start(conf_netpeer *np, const char *listed, const char *other,
			    const char *listed_token, const char *other_token, msb_error *err);
/* Datagrams that reached listed:53 so far (drained). */
unsigned conf_netpeer_datagrams(conf_netpeer *np);
void conf_netpeer_stop(conf_netpeer *np);

#endif
