/*
 * test_netns.c — msb/netns.h against this machine's kernel: a namespace made is new, holds
 * only its loopback, up, and reaches nothing of the host's; the caller's own namespace never
 * changes; a process without the privilege is refused by name; and the spare is made from
 * an instance's second start on, handed out once, never to a fork of its maker, nor twice to
 * starts racing on threads (run again under ThreadSanitizer in CI). Skips
 * (77) where this process cannot make a network namespace (not root).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/netns.h>

#include "msb_test.h"
#include "netns_probe.h"

static unsigned long ns_of(int fd)
{
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	return (unsigned long)st.st_ino;
}

/* A listener on the host's loopback; its port. */
static int host_listener(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	assert_int_equal(listen(fd, 4), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static int connect_loopback(int port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int rc = connect(s, (struct sockaddr *)&a, sizeof a) == 0 ? 0 : errno;
	close(s);
	return rc;
}

/* In a child joined to `fd`'s namespace: which check failed (0 when none). */
static int check_inside(int fd, int host_port)
{
	if (setns(fd, CLONE_NEWNET) != 0)
		return 10;
	/* One interface, lo, and it is up. */
	FILE *f = fopen("/proc/self/net/dev", "re");
	char line[256];
	int interfaces = 0;
	while (f && fgets(line, sizeof line, f))
		if (strchr(line, ':')) {
			interfaces++;
			if (strncmp(line + strspn(line, " "), "lo:", 3) != 0)
				return 11;
		}
	if (f)
		fclose(f);
	if (interfaces != 1)
		return 12;
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct ifreq ifr = { 0 };
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) != 0 || !(ifr.ifr_flags & IFF_UP))
		return 13;
	close(s);
	/* The host's listener is not reached: nothing listens on this loopback's port. */
	if (connect_loopback(host_port) != ECONNREFUSED)
		return 14;
	/* Its own loopback carries a connection. */
	int port;
	int l = host_listener(&port);
	if (connect_loopback(port) != 0)
		return 15;
	close(l);
	return 0;
}

static void a_made_namespace_is_empty_and_leaves_the_caller_where_it_was(void **state)
{
	(void)state;
	unsigned long mine = netns_probe_of(0);
	assert_true(mine != 0);
	int port, l = host_listener(&port);
	int fd = -1, other = -1;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_netns_make(&fd, &err), MSB_OK);
	assert_int_equal(msb_netns_make(&other, &err), MSB_OK);
	assert_int_equal(netns_probe_of(0), mine);
	assert_true(ns_of(fd) != mine && ns_of(other) != mine && ns_of(fd) != ns_of(other));
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(check_inside(fd, port));
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* And the host's listener never saw a connection. */
	assert_int_equal(accept(l, NULL, NULL), -1);
	close(l);
	close(fd);
	close(other);
}

/* Without CAP_SYS_ADMIN: refused, naming the step and the errno, and nothing is open. */
static void an_unprivileged_make_is_refused_by_name(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
			_exit(20);
		int before = netns_probe_held(NULL), fd = 7;
		msb_error err = MSB_ERROR_INIT;
		if (msb_netns_make(&fd, &err) != MSB_E_OS || errno != EPERM || fd != -1)
			_exit(21);
		const char *m = msb_error_message(&err);
		if (!strstr(m, "network namespace") || !strstr(m, "unshare(CLONE_NEWNET)") ||
		    !strstr(m, "Operation not permitted"))
			_exit(22);
		/* The spare of such a process is never made, and take says so. */
		msb_netns_spare *s = NULL;
		if (msb_netns_spare_new(&s, &err) != MSB_OK)
			_exit(23);
		for (int i = 0; i < 3; i++) {
			if (msb_netns_spare_take(s) != -1)
				_exit(24);
			msb_netns_spare_refill(s);
		}
		msb_netns_spare_free(s);
		msb_error_clear(&err);
		_exit(netns_probe_held(NULL) == before ? 0 : 25);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	assert_non_null(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* This process's threads before any refill (a sanitizer runs threads of its own). */
static int base_threads;

/*
 * Until this process holds `want` namespace descriptors and the refill's thread is gone (it
 * makes one on a thread, which then leaves it in the holder): a fork while that thread held
 * the holder's lock would leave the child's copy locked.
 */
static bool netns_fds_reach(int want)
{
	for (int i = 0; i < 400; i++) {
		if (netns_probe_held(NULL) == want && threads() == base_threads)
			return true;
		usleep(5000);
	}
	return false;
}

static void the_spare_comes_from_the_second_start_once_and_only_to_its_maker(void **state)
{
	(void)state;
	int before = netns_probe_held(NULL);
	base_threads = threads();
	msb_netns_spare *s = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_netns_spare_new(&s, &err), MSB_OK);
	/* The first start finds none and leaves none: it may be a one-shot `msb exec`. (take
	 * waits for a make in flight, so a refill that made one would show here.) */
	assert_int_equal(msb_netns_spare_take(s), -1);
	msb_netns_spare_refill(s);
	/* The second start makes one, which the third takes, once. */
	assert_int_equal(msb_netns_spare_take(s), -1);
	msb_netns_spare_refill(s);
	int fd = msb_netns_spare_take(s);
	assert_true(fd >= 0);
	assert_int_equal(netns_probe_held(NULL), before + 1);
	assert_true(ns_of(fd) != netns_probe_of(0));
	assert_int_equal(msb_netns_spare_take(s), -1);
	/* A fork's copy of the holder hands out nothing: two sandboxes would share it. */
	msb_netns_spare_refill(s);
	assert_true(netns_fds_reach(before + 2));
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int got = msb_netns_spare_take(s);
		msb_netns_spare_refill(s);
		_exit(got == -1 && msb_netns_spare_take(s) == -1 ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	int next = msb_netns_spare_take(s);
	assert_true(next >= 0);
	assert_true(ns_of(next) != ns_of(fd));
	close(fd);
	close(next);
	/* The one not taken is closed with the holder, made or still being made. */
	msb_netns_spare_refill(s);
	assert_true(netns_fds_reach(before + 1));
	msb_netns_spare_free(s);
	assert_int_equal(netns_probe_held(NULL), before);
	s = NULL;
	assert_int_equal(msb_netns_spare_new(&s, &err), MSB_OK);
	for (int i = 0; i < 2; i++)
		assert_int_equal(msb_netns_spare_take(s), -1);
	msb_netns_spare_refill(s);
	msb_netns_spare_free(s);
	assert_int_equal(netns_probe_held(NULL), before);
	/* Nothing to take from no holder. */
	assert_int_equal(msb_netns_spare_take(NULL), -1);
	msb_netns_spare_refill(NULL);
	msb_netns_spare_free(NULL);
}

/* Starts on several threads at once, each taking and refilling as a backend's start does. */
enum { RACERS = 4, STARTS = 12 };

typedef struct racer {
	msb_netns_spare *s;
	int fds[STARTS];
} racer;

static void *race_starts(void *arg)
{
	racer *r = arg;
	for (int i = 0; i < STARTS; i++) {
		r->fds[i] = msb_netns_spare_take(r->s);
		msb_netns_spare_refill(r->s);
	}
	return NULL;
}

/* Concurrent starts never get one namespace twice, and the holder frees clean after them. */
static void concurrent_starts_never_share_a_namespace(void **state)
{
	(void)state;
	int before = netns_probe_held(NULL);
	msb_netns_spare *s = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_netns_spare_new(&s, &err), MSB_OK);
	for (int i = 0; i < 2; i++)
		assert_int_equal(msb_netns_spare_take(s), -1);
	msb_netns_spare_refill(s);
	static racer racers[RACERS];
	pthread_t t[RACERS];
	for (int i = 0; i < RACERS; i++) {
		racers[i].s = s;
		assert_int_equal(pthread_create(&t[i], NULL, race_starts, &racers[i]), 0);
	}
	for (int i = 0; i < RACERS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	msb_netns_spare_free(s);
	/* Every descriptor is held until here, so no namespace (nor its inode) was freed. */
	unsigned long seen[RACERS * STARTS];
	int n = 0;
	for (int i = 0; i < RACERS; i++)
		for (int j = 0; j < STARTS; j++) {
			int fd = racers[i].fds[j];
			if (fd < 0)
				continue;
			seen[n] = ns_of(fd);
			for (int k = 0; k < n; k++)
				assert_true(seen[k] != seen[n]);
			n++;
		}
	assert_true(n > 0);
	for (int i = 0; i < RACERS; i++)
		for (int j = 0; j < STARTS; j++)
			if (racers[i].fds[j] >= 0)
				close(racers[i].fds[j]);
	assert_int_equal(netns_probe_held(NULL), before);
}

int main(void)
{
	if (geteuid() != 0) {
		printf("skip: making a network namespace needs root here\n");
		return MSB_TEST_SKIP;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_made_namespace_is_empty_and_leaves_the_caller_where_it_was),
		cmocka_unit_test(an_unprivileged_make_is_refused_by_name),
		cmocka_unit_test(the_spare_comes_from_the_second_start_once_and_only_to_its_maker),
		cmocka_unit_test(concurrent_starts_never_share_a_namespace),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
