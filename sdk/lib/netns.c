/*
 * netns.c — an empty network namespace, made on a thread of its own, and the holder of the
 * one made ahead for the next sandbox (msb/netns.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <msb/netns.h>

int msb_netns_loopback_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	memcpy(ifr.ifr_name, "lo", 3);
	int rc = ioctl(s, SIOCGIFFLAGS, &ifr);
	if (rc == 0) {
		ifr.ifr_flags |= IFF_UP;
		rc = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	int saved = errno;
	close(s);
	errno = saved;
	return rc;
}

typedef struct maker {
	int fd;
	int error; /* errno of the step that failed, 0 when fd is set */
	const char *step;
} maker;

/* The thread: leave the host's namespace for a new one, which the process keeps by fd. */
static void *make_on_thread(void *arg)
{
	maker *m = arg;
	m->step = "unshare(CLONE_NEWNET)";
	if (unshare(CLONE_NEWNET) != 0) {
		m->error = errno;
		return NULL;
	}
	m->step = "opening /proc/thread-self/ns/net";
	int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		m->error = errno;
		return NULL;
	}
	m->step = "bringing its loopback up";
	if (msb_netns_loopback_up() != 0) {
		m->error = errno;
		close(fd);
		return NULL;
	}
	m->fd = fd;
	return NULL;
}

msb_errc msb_netns_make(int *fd, msb_error *err)
{
	*fd = -1;
	maker m = { .fd = -1, .step = "starting a thread" };
	/* The thread starts with every signal blocked: no handler of the host's runs in a
	 * namespace the host never asked to be in. */
	sigset_t all, was;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &was);
	pthread_t t;
	int rc = pthread_create(&t, NULL, make_on_thread, &m);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	if (rc != 0)
		m.error = rc;
	else
		pthread_join(t, NULL);
	if (m.fd < 0) {
		msb_error_set_errno(err, MSB_E_OS, m.error, "cannot make a network namespace: %s failed",
				    m.step);
		errno = m.error;
		return MSB_E_OS;
	}
	*fd = m.fd;
	return MSB_OK;
}

struct msb_netns_spare {
	pthread_mutex_t lock;
	int fd;              /* made, not yet taken; -1 when none */
	unsigned long takes; /* starts so far: the first makes none, the second the first */
	bool refused;        /* a make was refused: this process cannot make one */
	pid_t owner;         /* the process whose spare it is (a fork's copy hands out none) */
};

msb_errc msb_netns_spare_new(msb_netns_spare **out, msb_error *err)
{
	msb_netns_spare *s = calloc(1, sizeof *s);
	if (!s)
		return msb_error_set(err, MSB_E_NOMEM, "network namespace: out of memory");
	pthread_mutex_init(&s->lock, NULL);
	s->fd = -1;
	s->owner = getpid();
	*out = s;
	return MSB_OK;
}

int msb_netns_spare_take(msb_netns_spare *s)
{
	if (!s)
		return -1;
	pthread_mutex_lock(&s->lock);
	int fd = s->owner == getpid() ? s->fd : -1;
	if (fd >= 0)
		s->fd = -1;
	s->takes++;
	pthread_mutex_unlock(&s->lock);
	return fd;
}

void msb_netns_spare_refill(msb_netns_spare *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	bool wanted = s->fd < 0 && s->takes >= 2 && !s->refused && s->owner == getpid();
	pthread_mutex_unlock(&s->lock);
	if (!wanted)
		return;
	int fd = -1;
	/* A start that finds no spare lets its engine make the namespace: nothing to report. */
	msb_errc rc = msb_netns_make(&fd, NULL);
	int saved = errno;
	pthread_mutex_lock(&s->lock);
	if (rc == MSB_OK && s->fd < 0) {
		s->fd = fd;
		fd = -1;
	}
	/* Only a refusal is for good; a lack of memory or descriptors may pass. */
	if (rc != MSB_OK && (saved == EPERM || saved == EACCES || saved == EINVAL || saved == ENOSYS))
		s->refused = true;
	pthread_mutex_unlock(&s->lock);
	if (fd >= 0)
		close(fd); /* another thread's start filled it first */
}

void msb_netns_spare_free(msb_netns_spare *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
