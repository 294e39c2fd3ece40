/*
 * netns_ports.c — let an unprivileged forwarder bind 80 and 443 inside a sandbox's own
 * network namespace (msb/egress.h). A boundary that drops every capability (bwrap) leaves
 * the agent unable to bind below ip_unprivileged_port_start; that sysctl is per namespace,
 * and in one holding loopback alone a low port guards nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <msb/egress.h>

typedef struct low_ports {
	int fd;
	int error;
	const char *step;
} low_ports;

/* On a thread of its own: setns moves only this thread, which then ends. */
static void *lower(void *arg)
{
	low_ports *a = arg;
	a->step = "setns";
	if (setns(a->fd, CLONE_NEWNET) != 0) {
		a->error = errno;
		return NULL;
	}
	a->step = "writing net.ipv4.ip_unprivileged_port_start";
	int f = open("/proc/sys/net/ipv4/ip_unprivileged_port_start", O_WRONLY | O_CLOEXEC);
	if (f < 0 || write(f, "0\n", 2) != 2)
		a->error = errno ? errno : EIO;
	if (f >= 0)
		close(f);
	return NULL;
}

msb_errc msb_egress_netns_low_ports(int netns_fd, msb_error *err)
{
	low_ports a = { netns_fd, 0, "starting a thread" };
	sigset_t all, was;
	sigfillset(&all);
	pthread_t t;
	pthread_sigmask(SIG_SETMASK, &all, &was);
	int rc = pthread_create(&t, NULL, lower, &a);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	if (rc != 0)
		a.error = rc;
	else
		pthread_join(t, NULL);
	if (a.error)
		return msb_error_set_errno(err, MSB_E_OS, a.error, "egress: the sandbox's network "
					   "namespace cannot open ports 80 and 443 to its forwarder: "
					   "%s failed", a.step);
	return MSB_OK;
}
