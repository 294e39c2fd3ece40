/*
 * plugins/qemu/qemu_egress.c — `egress: allowlist` on a microVM, through msb's proxy
 * (msb/egress.h). The guest has no network device at all; its one way out is a
 * virtio-serial port of its own, QEMU_EGRESS_PORT, on a virtio-serial device of its own
 * (so the agents' device and its port count stay as they are), served on the host by
 * msb-qemu-relay in its egress mode: every guest connection is multiplexed over that one
 * stream (sdk/agent/egress_mux.h) and the relay opens a connection to the sandbox's proxy
 * socket for each, hello first. The guest's forwarder is agent 0's (the init tells the
 * others theirs is shared), on a loopback it brings up.
 *
 * Why a port and not vsock or the agents' channel: this host has no vhost-vsock, the
 * agents' ports carry whole request frames one at a time, and a virtio-serial port, unlike
 * a shared filesystem, does not stand in the way of migrating the VM.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msb/unix_socket.h>

#include "qemu_internal.h"
#include "relay.h"

#define STOP_WAIT_MS 3000

char **qemu_egress_argv(char **argv, const char *dir, qemu_egress_args *ea)
{
	size_t n = 0;
	while (argv[n])
		n++;
	char **out = calloc(n + 7, sizeof *out);
	if (!out)
		return NULL;
	snprintf(ea->chardev, sizeof ea->chardev,
		 "socket,id=msbegress,path=%s/egress.sock,server=on,wait=off", dir);
	memcpy(out, argv, n * sizeof *out);
	out[n] = "-device";
	/* Port 0 of a virtio-serial device is a console's: the egress port is number 1. */
	out[n + 1] = "virtio-serial-device,id=msbegressbus,max_ports=2";
	out[n + 2] = "-chardev";
	out[n + 3] = ea->chardev;
	out[n + 4] = "-device";
	out[n + 5] = "virtserialport,bus=msbegressbus.0,chardev=msbegress,name=" QEMU_EGRESS_PORT;
	return out;
}

msb_errc qemu_egress_start(const qemu_ctx *ctx, const msb_driver_box *box, msb_error *err)
{
	char path[4300];
	snprintf(path, sizeof path, "%s/egress.sock", box->dir);
	int stream = msb_unix_connect(path);
	if (stream < 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: sandbox %s: "
					   "cannot connect to the VM's egress port %s", box->name, path);
	pid_t pid = msb_qemu_egress_spawn(ctx->relay_path, stream, box->egress_socket);
	int e = errno;
	close(stream);
	if (pid <= 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, e, "backend qemu: sandbox %s: cannot "
					   "start the egress relay %s", box->name, ctx->relay_path);
	snprintf(path, sizeof path, "%s/egress.pid", box->dir);
	msb_driver_box eb = *box;
	eb.pid_path = path;
	return msb_driver_write_pid(&eb, pid, err);
}

bool qemu_egress_stop(const msb_driver_box *box, msb_disposal_failure *failure)
{
	char path[4300];
	snprintf(path, sizeof path, "%s/egress.pid", box->dir);
	msb_driver_box eb = *box;
	eb.pid_path = path;
	pid_t pid = msb_driver_read_live_pid(&eb);
	if (pid <= 0)
		return true;
	kill(pid, SIGKILL);
	if (qemu_recorded_gone_within(box, path, STOP_WAIT_MS))
		return true;
	msb_disposal_failure_set(failure, MSB_DISPOSAL_TIMEOUT, "backend qemu: sandbox %s: its "
				 "egress relay %ld survived SIGKILL", box->name, (long)pid);
	return false;
}
