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

/* On a thread of msb's own: leave the host's namespace for a new one, kept by fd. */
static void make_here(maker *m)
{
	m->fd = -1;
	m->step = "unshare(CLONE_NEWNET)";
	if (unshare(CLONE_NEWNET) != 0) {
		m->error = errno;
		return;
	}
	m->step = "opening /proc/thread-self/ns/net";
	int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		m->error = errno;
		return;
	}
	m->step = "bringing its loopback up";
	if (msb_netns_loopback_up() != 0) {
		m->error = errno;
		close(fd);
		return;
	}
	m->fd = fd;
}

static void *make_on_thread(void *arg)
{
	make_here(arg);
	return NULL;
}

/* Start fn(arg) on a new thread with every signal blocked: no handler of the host's runs in
 * a namespace the host never asked to be in. Returns 0 or an errno. */
static int thread_start(pthread_t *t, bool detached, void *(*fn)(void *), void *arg)
{
	sigset_t all, was;
	sigfillset(&all);
	pthread_attr_t attr;
	int rc = pthread_attr_init(&attr);
	if (rc)
		return rc;
	if (detached)
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_sigmask(SIG_SETMASK, &all, &was);
	rc = pthread_create(t, &attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	pthread_attr_destroy(&attr);
	return rc;
}

msb_errc msb_netns_make(int *fd, msb_error *err)
{
	maker m = { .fd = -1, .step = "starting a thread" };
	pthread_t t;
	int rc = thread_start(&t, false, make_on_thread, &m);
	if (rc != 0)
		m.error = rc;
	else
		pthread_join(t, NULL);
	*fd = m.fd;
	if (m.fd < 0) {
		msb_error_set_errno(err, MSB_E_OS, m.error, "cannot make a network namespace: %s failed",
				    m.step);
		errno = m.error;
		return MSB_E_OS;
	}
	return MSB_OK;
}

struct msb_netns_spare {
	pthread_mutex_t lock;
	pthread_cond_t done;  /* a make in flight has ended */
	int fd;               /* made, not yet taken; -1 when none */
	bool making;          /* a thread is making the next one */
	bool refused;         /* a make was refused: this process cannot make one */
	unsigned long takes;  /* starts so far: the first makes none, the second the first */
	pid_t owner;          /* the process whose spare it is (a fork's copy hands out none) */
};

msb_errc msb_netns_spare_new(msb_netns_spare **out, msb_error *err)
{
	msb_netns_spare *s = calloc(1, sizeof *s);
	if (!s)
		return msb_error_set(err, MSB_E_NOMEM, "network namespace: out of memory");
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->done, NULL);
	s->fd = -1;
	s->owner = getpid();
	*out = s;
	return MSB_OK;
}

/* With the lock held: until no make is in flight. A fork's copy has no such thread. */
static void await_make(msb_netns_spare *s)
{
	while (s->making && s->owner == getpid())
		pthread_cond_wait(&s->done, &s->lock);
}

int msb_netns_spare_take(msb_netns_spare *s)
{
	if (!s)
		return -1;
	pthread_mutex_lock(&s->lock);
	/* One in flight is nearly made: waiting for it is cheaper than the engine's own. */
	await_make(s);
	int fd = s->owner == getpid() ? s->fd : -1;
	if (fd >= 0)
		s->fd = -1;
	s->takes++;
	pthread_mutex_unlock(&s->lock);
	return fd;
}

/* The refill's thread: make one and leave it in the holder. Nothing touches `s` after the
 * unlock, so a holder's free (which waits for `making` to clear) may follow at once. */
static void *refill_on_thread(void *arg)
{
	msb_netns_spare *s = arg;
	maker m;
	make_here(&m);
	pthread_mutex_lock(&s->lock);
	s->fd = m.fd;
	/* Only a refusal is for good; a lack of memory or descriptors may pass. */
	if (m.fd < 0 && (m.error == EPERM || m.error == EACCES || m.error == EINVAL ||
			 m.error == ENOSYS))
		s->refused = true;
	s->making = false;
	pthread_cond_broadcast(&s->done);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

void msb_netns_spare_refill(msb_netns_spare *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	bool wanted = s->fd < 0 && !s->making && s->takes >= 2 && !s->refused &&
		      s->owner == getpid();
	pthread_t t;
	if (wanted && thread_start(&t, true, refill_on_thread, s) == 0)
		s->making = true;
	pthread_mutex_unlock(&s->lock);
}

void msb_netns_spare_free(msb_netns_spare *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	await_make(s);
	pthread_mutex_unlock(&s->lock);
	if (s->fd >= 0)
		close(s->fd);
	pthread_cond_destroy(&s->done);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
