/*
 * plugins/qemu/vminit.c — msb-qemu-init, the microVM's /init until the guest agent takes over.
 *
 * The kernel runs this as PID 1 from the initramfs the qemu backend assembles. It does what
 * a distribution's init would do and nothing more — mount /proc, /sys and /dev, load the
 * virtio modules the cloud kernel builds as modules (the list and order come from
 * /msb/modules, written by the host, because dependencies differ between kernel builds),
 * name the agents' virtio-serial ports the way udev would — and then starts one guest agent
 * per port with the argv the host wrote to /msb/agent.args, and stays PID 1: it reaps
 * orphans, restarts an agent a signal killed, and powers the VM off when an agent exits
 * after the host's SHUTDOWN (QEMU's -no-reboot then turns the power-off into QEMU exiting),
 * so disposal needs no guest cooperation beyond that. With /msb/image it first makes a store
 * image's disk the root (enter_image).
 *
 * All of this is on a cold start's critical path, on one TCG vCPU: each agent starts the
 * moment its port is named (the host is ready once one agent answered), and every wait is
 * for an event — a uevent, a signalfd — never a sleep. Every agent runs at the ordinary
 * priority from its start (agents started lower and raised once they opened their ports
 * bought nothing measurable, and a command could have inherited the low priority whenever
 * an agent served before PID 1 raised it), so no command inherits anything but nice 0.
 *
 * Booted with `msb_probe=1` on the kernel command line it prints MSB_QEMU_PROBE_MARKER and
 * powers off at once (no dot in the name: the kernel keeps dotted parameters for modules
 * and would never hand it to init): the bounded KVM probe and the benchmark's bare-boot baseline.
 *
 * Static, libc only. Every failure is printed to the console (the host keeps it in
 * console.log) and ends PID 1, so a broken guest fails its boot fast instead of hanging.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netlink.h>
#include <poll.h>
#include <linux/random.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vminit.h"

/* How long the agents' ports may take to appear after the modules loaded. */
#define PORT_WAIT_MS 10000
_Static_assert(MSB_QEMU_PORTS <= 10, "port names carry one digit");

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("msb-qemu-init: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	fflush(stderr);
	exit(1);
}

/*
 * A stage reached, into the kernel's log at info level: hidden under `quiet`, timestamped in
 * console.log when the host boots the guest verbose (MSB_QEMU_VERBOSE), to see where a
 * boot's time goes.
 */
static void stage(const char *what)
{
	int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	char line[128];
	int n = snprintf(line, sizeof line, "<6>msb-qemu-init: %s\n", what);
	ssize_t w = write(fd, line, (size_t)n);
	(void)w;
	close(fd);
}

static void mount_or_die(const char *type, const char *dir, unsigned long flags)
{
	mkdir(dir, 0755);
	if (mount(type, dir, type, flags, NULL) < 0 && errno != EBUSY)
		die("mount %s on %s: %s", type, dir, strerror(errno));
}

/* Load each module named in `list` (one path per line), in order. */
static void load_modules(const char *list)
{
	FILE *f = fopen(list, "re");
	if (!f)
		return; /* a kernel with everything built in needs no list */
	char line[512];
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0])
			continue;
		int fd = open(line, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die("module %s: %s", line, strerror(errno));
		if (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST)
			die("loading module %s: %s", line, strerror(errno));
		close(fd);
		stage(line);
	}
	fclose(f);
}

/*
 * A store image's root (/msb/image present, written by the host): the read-only erofs disk
 * /dev/vda under an overlay whose upper layer is a tmpfs, so commands write where they like
 * while the host's cached disk never changes. /proc, /sys and /dev move into it, the
 * initramfs's /msb (the agent, its argv) is bound in, and PID 1 chroots there before any
 * agent starts: the agent still comes from the initramfs, everything it runs from the image.
 */
#define IMAGE_DISK "/dev/vda"
#define IMAGE_WAIT_MS 10000

static void enter_image(void)
{
	if (access("/msb/image", F_OK) != 0)
		return;
	/* devtmpfs makes the node once virtio_blk's probe (asynchronous) has found the disk. */
	struct timespec tick = { 0, 2 * 1000 * 1000 };
	for (int waited = 0; access(IMAGE_DISK, F_OK) != 0; waited += 2) {
		if (waited >= IMAGE_WAIT_MS)
			die("the image disk %s did not appear", IMAGE_DISK);
		nanosleep(&tick, NULL);
	}
	static const char *const dirs[] = { "/image", "/image/lower", "/image/rw", "/image/root" };
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		mkdir(dirs[i], 0755);
	if (mount(IMAGE_DISK, "/image/lower", "erofs", MS_RDONLY, NULL) < 0)
		die("mount %s (erofs): %s", IMAGE_DISK, strerror(errno));
	if (mount("tmpfs", "/image/rw", "tmpfs", 0, "mode=0755") < 0)
		die("mount the overlay's tmpfs: %s", strerror(errno));
	mkdir("/image/rw/upper", 0755);
	mkdir("/image/rw/work", 0755);
	if (mount("overlay", "/image/root", "overlay", 0,
		  "lowerdir=/image/lower,upperdir=/image/rw/upper,workdir=/image/rw/work") < 0)
		die("mount the image's overlay: %s", strerror(errno));
	static const char *const moved[] = { "/proc", "/sys", "/dev" };
	for (size_t i = 0; i < sizeof moved / sizeof moved[0]; i++) {
		char to[64];
		snprintf(to, sizeof to, "/image/root%s", moved[i]);
		mkdir(to, 0755);
		if (mount(moved[i], to, NULL, MS_MOVE, NULL) < 0)
			die("move %s into the image: %s", moved[i], strerror(errno));
	}
	mkdir("/image/root/msb", 0755);
	if (mount("/msb", "/image/root/msb", NULL, MS_BIND, NULL) < 0)
		die("bind /msb into the image: %s", strerror(errno));
	mkdir("/image/root/tmp", 01777);
	chmod("/image/root/tmp", 01777);
	if (chdir("/image/root") < 0 || chroot(".") < 0 || chdir("/") < 0)
		die("chroot into the image: %s", strerror(errno));
	stage("image root");
}

/*
 * Agent k's port, by its virtio-serial name msb.agent.<k>, as udev would link it:
 * /dev/virtio-ports/msb.agent.<k> → ../vportXpY. The device (and its node) appears when
 * virtio_console adds the port; its name attribute only when QEMU's name message follows,
 * announced by a "change" uevent. `linked` marks the ports done; returns how many were
 * linked now, into `fresh` (by k).
 */
static int link_ports(bool *linked, bool *fresh)
{
	DIR *d = opendir("/sys/class/virtio-ports");
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) > 40)
			continue;
		char path[320], name[128] = "";
		snprintf(path, sizeof path, "/sys/class/virtio-ports/%s/name", e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue; /* not named yet */
		if (fgets(name, sizeof name, f))
			name[strcspn(name, "\n")] = '\0';
		fclose(f);
		const char *prefix = MSB_QEMU_PORT_NAME ".";
		if (strncmp(name, prefix, strlen(prefix)) || strlen(name) != strlen(prefix) + 1)
			continue;
		int k = name[strlen(prefix)] - '0';
		if (k < 0 || k >= MSB_QEMU_PORTS || linked[k])
			continue;
		char target[300], link[128];
		snprintf(target, sizeof target, "../%s", e->d_name);
		snprintf(link, sizeof link, "/dev/virtio-ports/%s", name);
		if (symlink(target, link) < 0 && errno != EEXIST)
			die("symlink for %s: %s", e->d_name, strerror(errno));
		linked[k] = fresh[k] = true;
		n++;
	}
	closedir(d);
	return n;
}

/*
 * A socket on the kernel's uevents, opened before the modules load so that no port's
 * arrival is missed; -1 if the kernel will not give one (then the wait polls).
 */
static int uevent_socket(void)
{
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			NETLINK_KOBJECT_UEVENT);
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Whether a uevent about a virtio-serial port came (the rest are drained and ignored). */
static bool port_uevent(int fd)
{
	bool port = false;
	char msg[4096];
	ssize_t n;
	while ((n = recv(fd, msg, sizeof msg - 1, 0)) > 0) {
		msg[n] = '\0';
		/* The first string is "<action>@<devpath>". */
		port = port || strstr(msg, "/virtio-ports/") != NULL;
	}
	/* Events were lost (the socket's buffer overflowed): one of them may have been a port's. */
	return port || (n < 0 && errno == ENOBUFS);
}

/* Read the NUL-separated argv the host wrote. */
static char **read_args(const char *path)
{
	static char buf[16384];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0 || buf[n - 1] != '\0')
		die("%s is empty, too long or not NUL-terminated", path);
	static char *argv[256];
	size_t argc = 0;
	for (char *p = buf; p < buf + n && argc + 1 < 256; p += strlen(p) + 1)
		argv[argc++] = p;
	argv[argc] = NULL;
	return argv;
}

/* mkdir -p: the agent creates its work dir's last component only. */
static void make_parents(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s", dir);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
}

/* What PID 1 keeps from boot on. */
typedef struct pid1 {
	char **args;        /* the host's agent argv */
	pid_t agents[MSB_QEMU_PORTS];
	int sigchld;        /* a signalfd: SIGCHLD is blocked and read here */
	int identity;       /* MSB_QEMU_IDENTITY_FIFO, read end (held open read-write) */
	int identity_ack;   /* MSB_QEMU_IDENTITY_ACK, write end (held open read-write) */
} pid1;

/*
 * A restored clone's identity (vminit.h): the host's entropy credited and the kernel's
 * random generator reseeded at once (a clone's pool is its template's until then), the
 * clock set, the hostname. Only PID 1 holds the capabilities; the agent's commands hold
 * none, so the host's `msb-qemu-init --identity` (identity_client) hands the record over
 * the FIFO and waits for the answer.
 */
static void on_identity(pid1 *p)
{
	msb_qemu_identity rec;
	ssize_t n;
	while ((n = read(p->identity, &rec, sizeof rec)) == (ssize_t)sizeof rec) {
		char verdict = 'F';
		rec.hostname[sizeof rec.hostname - 1] = '\0';
		if (!memcmp(rec.magic, MSB_QEMU_IDENTITY_MAGIC, sizeof rec.magic)) {
			int fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
			struct {
				struct rand_pool_info info;
				unsigned char bytes[sizeof rec.seed];
			} pool;
			pool.info.entropy_count = (int)(8 * sizeof rec.seed);
			pool.info.buf_size = (int)sizeof rec.seed;
			memcpy(pool.bytes, rec.seed, sizeof rec.seed);
			bool ok = fd >= 0 && ioctl(fd, RNDADDENTROPY, &pool) == 0 &&
				  ioctl(fd, RNDRESEEDCRNG) == 0;
			if (fd >= 0)
				close(fd);
			memset(&pool, 0, sizeof pool);
			struct timespec ts = { (time_t)rec.realtime_sec, (long)rec.realtime_nsec };
			ok = ok && clock_settime(CLOCK_REALTIME, &ts) == 0;
			ok = ok && sethostname(rec.hostname, strlen(rec.hostname)) == 0;
			verdict = ok ? 'K' : 'F';
			stage(ok ? "identity taken" : "identity failed");
		}
		memset(&rec, 0, sizeof rec);
		ssize_t w = write(p->identity_ack, &verdict, 1);
		(void)w;
	}
}

/* Make the identity FIFOs and hold both ends of each, so a poll never sees a hang-up. */
static void identity_open(pid1 *p)
{
	p->identity = p->identity_ack = -1;
	if ((mkfifo(MSB_QEMU_IDENTITY_FIFO, 0600) < 0 && errno != EEXIST) ||
	    (mkfifo(MSB_QEMU_IDENTITY_ACK, 0600) < 0 && errno != EEXIST)) {
		stage("no identity fifo: clones of this guest cannot take an identity");
		return;
	}
	p->identity = open(MSB_QEMU_IDENTITY_FIFO, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	p->identity_ack = open(MSB_QEMU_IDENTITY_ACK, O_RDWR | O_NONBLOCK | O_CLOEXEC);
}

/*
 * `msb-qemu-init --identity`, run by the host through an agent (no capabilities): read one
 * record from stdin, hand it to PID 1, exit 0 once PID 1 applied it.
 */
static int identity_client(void)
{
	msb_qemu_identity rec;
	size_t got = 0;
	while (got < sizeof rec) {
		ssize_t n = read(0, (char *)&rec + got, sizeof rec - got);
		if (n <= 0)
			die("identity: short record (%zu bytes)", got);
		got += (size_t)n;
	}
	int ack = open(MSB_QEMU_IDENTITY_ACK, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	int fifo = open(MSB_QEMU_IDENTITY_FIFO, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (ack < 0 || fifo < 0)
		die("identity: %s: %s", MSB_QEMU_IDENTITY_FIFO, strerror(errno));
	char stale;
	while (read(ack, &stale, 1) == 1)
		;
	if (write(fifo, &rec, sizeof rec) != (ssize_t)sizeof rec)
		die("identity: write: %s", strerror(errno));
	memset(&rec, 0, sizeof rec);
	struct pollfd pf = { .fd = ack, .events = POLLIN };
	char verdict = 0;
	if (poll(&pf, 1, 5000) != 1 || read(ack, &verdict, 1) != 1)
		die("identity: PID 1 did not answer");
	if (verdict != 'K')
		die("identity: PID 1 could not apply it");
	return 0;
}

/*
 * Start the agent for port `k`: the host's argv with its --device path given the port's
 * suffix. Returns the child's pid.
 */
static pid_t start_agent(char **args, int k)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	static char device[160];
	for (char **a = args; *a && a[1]; a++)
		if (!strcmp(*a, "--device")) {
			snprintf(device, sizeof device, "%s.%d", a[1], k);
			a[1] = device;
		} else if (!strcmp(*a, "--egress-transport") && k != 0) {
			/* One forwarder per guest, agent 0's; the others only point their
			 * commands at it. */
			a[1] = "shared";
		}
	execv(args[0], args);
	die("exec %s: %s", args[0], strerror(errno));
}

/*
 * Reap whatever is orphaned to PID 1, restart an agent that died of a signal (the OOM
 * killer may pick one; a port must not go dead), and power the VM off when an agent exits
 * on its own — it does only after the host asked it to SHUTDOWN, having killed everything
 * its commands started. The other agents' commands die with the VM.
 */
static void on_children(pid1 *p)
{
	struct signalfd_siginfo si;
	while (read(p->sigchld, &si, sizeof si) > 0)
		;
	int status;
	pid_t pid;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		for (int k = 0; k < MSB_QEMU_PORTS; k++) {
			if (p->agents[k] != pid)
				continue;
			if (WIFSIGNALED(status)) {
				p->agents[k] = start_agent(p->args, k);
				break;
			}
			sync();
			reboot(RB_POWER_OFF);
			die("power off: %s", strerror(errno));
		}
}

/*
 * Wait up to `ms` (-1: forever) for a child or (`uevents` >= 0) a uevent, and handle the
 * first. Returns whether a port's uevent came.
 */
static bool wait_events(pid1 *p, int uevents, int ms)
{
	struct pollfd fds[3] = { { .fd = p->sigchld, .events = POLLIN },
				 { .fd = uevents, .events = POLLIN },
				 { .fd = p->identity, .events = POLLIN } };
	if (poll(fds, 3, ms) < 0 && errno != EINTR)
		die("poll: %s", strerror(errno));
	if (fds[0].revents)
		on_children(p);
	if (fds[2].revents)
		on_identity(p);
	return fds[1].revents && port_uevent(uevents);
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Link each agent's port as it appears and start its agent at once; the ports are
 * rescanned when a port's uevent says something changed (every 5 ms when the kernel gave
 * no uevent socket). Agent 0 starts as soon as its port exists, not after the last one.
 */
static void start_agents(pid1 *p, int uevents)
{
	mkdir("/dev/virtio-ports", 0755);
	bool linked[MSB_QEMU_PORTS] = { false };
	int started = 0;
	long long deadline = now_ms() + PORT_WAIT_MS;
	for (bool rescan = true; started < MSB_QEMU_PORTS;) {
		bool fresh[MSB_QEMU_PORTS] = { false };
		started += rescan ? link_ports(linked, fresh) : 0;
		for (int k = 0; k < MSB_QEMU_PORTS; k++)
			if (fresh[k]) {
				p->agents[k] = start_agent(p->args, k);
				char what[32];
				snprintf(what, sizeof what, "agent %d started", k);
				stage(what);
			}
		if (started == MSB_QEMU_PORTS)
			break;
		long long left = deadline - now_ms();
		if (left <= 0)
			for (int k = 0; k < MSB_QEMU_PORTS; k++)
				if (!linked[k])
					die("no virtio-serial port named %s.%d appeared", MSB_QEMU_PORT_NAME, k);
		rescan = wait_events(p, uevents, uevents >= 0 ? (int)left : 5) || uevents < 0;
	}
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--identity"))
		return identity_client();
	/* Mounting over /proc, /sys and /dev is a guest's business only, never a host's. */
	if (getpid() != 1)
		die("refusing to run as pid %ld: this is a microVM guest's /init", (long)getpid());
	if (getenv("msb_probe")) {
		fputs(MSB_QEMU_PROBE_MARKER "\n", stdout);
		fflush(stdout);
		reboot(RB_POWER_OFF);
		return 0;
	}
	mount_or_die("proc", "/proc", MS_NOSUID | MS_NODEV | MS_NOEXEC);
	mount_or_die("sysfs", "/sys", MS_NOSUID | MS_NODEV | MS_NOEXEC);
	mount_or_die("devtmpfs", "/dev", MS_NOSUID);
	/*
	 * The pseudo-terminals a streamed exec under a terminal opens (/dev/ptmx is devtmpfs's;
	 * its slaves live here). Not fatal: without it only that exec is refused, saying so.
	 */
	mkdir("/dev/pts", 0755);
	if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, NULL) < 0)
		stage("devpts not mounted: no terminals in this guest");
	mkdir("/tmp", 01777);
	chmod("/tmp", 01777);
	stage("mounted");
	int uevents = uevent_socket();
	load_modules("/msb/modules");
	stage("modules loaded");
	enter_image();
	pid1 p = { .args = read_args("/msb/agent.args") };
	identity_open(&p);
	for (char **a = p.args; *a && a[1]; a++)
		if (!strcmp(*a, "--work-dir"))
			make_parents(a[1]);
	setenv("PATH", "/usr/local/bin:/usr/bin:/bin:/sbin", 1);
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	p.sigchld = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (p.sigchld < 0)
		die("signalfd: %s", strerror(errno));
	start_agents(&p, uevents);
	if (uevents >= 0)
		close(uevents);
	stage("agents started");
	for (;;)
		wait_events(&p, -1, -1);
}
