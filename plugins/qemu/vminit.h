/*
 * plugins/qemu/vminit.h — what the host side of the qemu backend and the guest's
 * msb-qemu-init (vminit.c) must agree on.
 */
#ifndef MSB_QEMU_VMINIT_H
#define MSB_QEMU_VMINIT_H

/*
 * The virtserialports' names are MSB_QEMU_PORT_NAME ".0" … ".<MSB_QEMU_PORTS-1>": the guest
 * finds each agent's port by it, and runs one agent per port, so that one slow command
 * holds one port while the others keep serving.
 */
#define MSB_QEMU_PORT_NAME "msb.agent"
#define MSB_QEMU_PORTS 4
/* What a guest booted with msb_probe=1 prints before powering off. */
#define MSB_QEMU_PROBE_MARKER "MSB-QEMU-PROBE-OK"

/*
 * A restored template clone's identity (issue 22): the host runs
 * `/msb/init --identity` through an agent with this record on stdin, which hands it to
 * PID 1 over MSB_QEMU_IDENTITY_FIFO and waits for 'K' (applied) or 'F' on
 * MSB_QEMU_IDENTITY_ACK. The seed is fresh host entropy: a clone's kernel random pool is
 * its template's until it is reseeded.
 */
#define MSB_QEMU_IDENTITY_FIFO "/msb/identity"
#define MSB_QEMU_IDENTITY_ACK "/msb/identity.ack"
#define MSB_QEMU_IDENTITY_MAGIC "MSBID1\0\0"
#define MSB_QEMU_GUEST_INIT "/msb/init"

#include <stdint.h>
typedef struct msb_qemu_identity {
	char magic[8];
	unsigned char seed[64];
	int64_t realtime_sec;
	int64_t realtime_nsec;
	char hostname[64];
} msb_qemu_identity;

#endif
