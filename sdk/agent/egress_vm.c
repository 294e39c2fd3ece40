/*
 * egress_vm.c — the forwarder's mux transport (--egress-transport mux), for a microVM whose
 * one way out is a virtio-serial port: the guest's loopback brought up and its /etc/hosts
 * written, then every accepted connection carried over the port by the mux engine
 * (egress_mux.h), whose host end (msb-qemu-relay egress) opens the proxy connections.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <net/if.h>
#include <unistd.h>

#include <msb/egress.h>

#include "agent_internal.h"
#include "egress_mux.h"

#define START_GRACE_MS 15000

/* The virtio-serial port named `name`, opened non-blocking; -1 while it is not there. */
static int open_port(const char *name)
{
	DIR *d = opendir("/sys/class/virtio-ports");
	int fd = -1;
	struct dirent *e;
	while (d && fd < 0 && (e = readdir(d))) {
		char path[300], got[128] = "";
		if (e->d_name[0] == '.' || strlen(e->d_name) > 40)
			continue;
		snprintf(path, sizeof path, "/sys/class/virtio-ports/%s/name", e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(got, sizeof got, f))
			got[strcspn(got, "\n")] = '\0';
		fclose(f);
		if (strcmp(got, name))
			continue;
		snprintf(path, sizeof path, "/dev/%s", e->d_name);
		fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	}
	if (d)
		closedir(d);
	return fd;
}

/*
 * Mux transport: the port is (re)opened until it answers; while no host end is connected
 * it reads end of file, and every connection accepted meanwhile is refused at once.
 */
void fwd_mux_loop(const char *port_name, fwd_listener *ls, size_t n)
{
	struct pollfd *fds = calloc(n + EG_MUX_POLLFDS, sizeof *fds);
	if (!fds)
		_exit(1);
	for (size_t i = 0; i < n; i++)
		fds[i] = (struct pollfd){ ls[i].fd, POLLIN, 0 };
	eg_mux *m = NULL;
	int stream = -1;
	bool ever_up = false;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (!m && (stream = open_port(port_name)) >= 0 && !(m = eg_mux_new(stream, NULL, NULL))) {
			close(stream);
			stream = -1;
		}
		ever_up = ever_up || m;
		/*
		 * The agents may answer before the egress port is there (its device is probed on
		 * its own): until it first opens, for up to START_GRACE_MS, connections wait in
		 * the listeners' backlog instead of being refused, so a command run right after
		 * the start is not reset for being early.
		 */
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		long long waited = (t.tv_sec - t0.tv_sec) * 1000LL + (t.tv_nsec - t0.tv_nsec) / 1000000;
		bool hold = !ever_up && waited < START_GRACE_MS;
		for (size_t i = 0; i < n; i++)
			fds[i].events = hold ? 0 : POLLIN;
		for (size_t i = 0; i < EG_MUX_POLLFDS; i++)
			fds[n + i] = (struct pollfd){ -1, 0, 0 };
		if (m)
			eg_mux_fill(m, fds + n);
		if (poll(fds, n + EG_MUX_POLLFDS, m ? -1 : 200) < 0 && errno != EINTR)
			_exit(1);
		if (m && !eg_mux_run(m, fds + n)) {
			eg_mux_free(m);
			close(stream);
			m = NULL;
			stream = -1;
		}
		for (size_t i = 0; i < n; i++) {
			if (!fds[i].revents)
				continue;
			int c = accept4(ls[i].fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
			msb_egress_hello h = { MSB_EGRESS_MAGIC, ls[i].kind, ls[i].port, ls[i].index };
			if (c >= 0 && !(m && eg_mux_add(m, c, &h)))
				fwd_refuse(c);
		}
	}
}

/*
 * A microVM's /etc/hosts: every allowed name at its loopback address (as the driver's hosts
 * file says elsewhere), so tools that honour no proxy variable reach them too. The guest's
 * root is its own (an initramfs, an image under an overlay): nothing of the host's changes.
 */
static void write_hosts(char **names, size_t n_names)
{
	FILE *f = fopen("/etc/hosts", "we");
	if (!f)
		return;
	fputs("127.0.0.1\tlocalhost\n::1\tlocalhost\n", f);
	for (size_t i = 0; i < n_names; i++) {
		char addr[16];
		msb_egress_guest_address(i, addr);
		fprintf(f, "%s\t%s\n", addr, names[i]);
	}
	fclose(f);
}

/* A microVM's loopback is down until someone brings it up: the listeners need it. */
static void loopback_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
	if (s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP;
		ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	if (s >= 0)
		close(s);
}

void fwd_vm_prepare(char **names, size_t n_names)
{
	loopback_up();
	write_hosts(names, n_names);
}
