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

#endif
