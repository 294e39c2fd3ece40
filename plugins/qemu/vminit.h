/*
 * plugins/qemu/vminit.h — what the host side of the qemu backend and the guest's
 * msb-qemu-init (vminit.c) must agree on.
 */
#ifndef MSB_QEMU_VMINIT_H
#define MSB_QEMU_VMINIT_H

/* The virtserialport's name: the guest finds the agent's port by it. */
#define MSB_QEMU_PORT_NAME "msb.agent"
/* What a guest booted with msb_probe=1 prints before powering off. */
#define MSB_QEMU_PROBE_MARKER "MSB-QEMU-PROBE-OK"

#endif
