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
 * so disposal needs no guest cooperation beyond that.
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
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vminit.h"

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
	}
	fclose(f);
}

/* Whether /sys/class/virtio-ports/<port>/name says `want`; the port's name in `port`. */
static bool find_port(const char *want, char *port, size_t cap)
{
	DIR *d = opendir("/sys/class/virtio-ports");
	if (!d)
		return false;
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[320], name[128] = "";
		snprintf(path, sizeof path, "/sys/class/virtio-ports/%s/name", e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(name, sizeof name, f))
			name[strcspn(name, "\n")] = '\0';
		fclose(f);
		if (!strcmp(name, want)) {
			snprintf(port, cap, "%s", e->d_name);
			found = true;
		}
	}
	closedir(d);
	return found;
}

/*
 * Make /dev/virtio-ports/<name> point at agent k's port, as udev would. The ports appear
 * when virtio_console probes the device, which can trail the module load by a moment.
 */
static void link_port(int k)
{
	mkdir("/dev/virtio-ports", 0755);
	{
		char want[64], port[256];
		snprintf(want, sizeof want, "%s.%d", MSB_QEMU_PORT_NAME, k);
		for (int i = 0; !find_port(want, port, sizeof port); i++) {
			if (i >= 2000)
				die("no virtio-serial port named %s appeared", want);
			nanosleep(&(struct timespec){ 0, 5 * 1000 * 1000 }, NULL);
		}
		char target[300], link[128];
		snprintf(target, sizeof target, "../%s", port);
		snprintf(link, sizeof link, "/dev/virtio-ports/%s", want);
		if (symlink(target, link) < 0 && errno != EEXIST)
			die("symlink for %s: %s", port, strerror(errno));
	}
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

/*
 * Start the agent for port `k`: the host's argv with its --device path given the port's
 * suffix. Returns the child's pid.
 */
static pid_t start_agent(char **args, int k)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	static char device[160];
	for (char **a = args; *a && a[1]; a++)
		if (!strcmp(*a, "--device")) {
			snprintf(device, sizeof device, "%s.%d", a[1], k);
			a[1] = device;
		}
	execv(args[0], args);
	die("exec %s: %s", args[0], strerror(errno));
}

/*
 * PID 1 from here on: reap whatever is orphaned to it, restart an agent that died of a
 * signal (the OOM killer may pick one; a port must not go dead), and power the VM off when
 * an agent exits on its own — it does only after the host asked it to SHUTDOWN, having
 * killed everything its commands started. The other agents' commands die with the VM.
 */
static void supervise(char **args, pid_t *agents)
{
	for (;;) {
		int status;
		pid_t pid = wait(&status);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			die("wait: %s", strerror(errno));
		}
		for (int k = 0; k < MSB_QEMU_PORTS; k++) {
			if (agents[k] != pid)
				continue;
			if (WIFSIGNALED(status)) {
				agents[k] = start_agent(args, k);
				break;
			}
			sync();
			reboot(RB_POWER_OFF);
			die("power off: %s", strerror(errno));
		}
	}
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
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
	mkdir("/tmp", 01777);
	chmod("/tmp", 01777);
	stage("mounted");
	load_modules("/msb/modules");
	stage("modules loaded");
	char **args = read_args("/msb/agent.args");
	for (char **a = args; *a && a[1]; a++)
		if (!strcmp(*a, "--work-dir"))
			make_parents(a[1]);
	setenv("PATH", "/usr/local/bin:/usr/bin:/bin:/sbin", 1);
	/* Each agent starts as soon as its port is there, while the next port is being added. */
	pid_t agents[MSB_QEMU_PORTS];
	for (int k = 0; k < MSB_QEMU_PORTS; k++) {
		link_port(k);
		agents[k] = start_agent(args, k);
	}
	stage("agents started");
	supervise(args, agents);
}
