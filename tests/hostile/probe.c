/*
 * probe.c — a hostile guest: run inside a sandbox (static, so it runs in any guest, a
 * busybox microVM included), it tries every way it knows to reach a process it must not:
 * its own agent, its boundary's helpers, another sandbox's processes, the host's.
 *
 *   probe scan [MARKER]   every process visible in /proc but the probe itself is a
 *                         target; with MARKER, a process whose command line holds it is
 *                         also signalled (kill 0: "may I?") — another sandbox's daemon
 *   probe caps            capabilities in any set, no_new_privs unset
 *
 * Each success is printed as "REACHED <pid> <comm> <how>", and the exit status is 1 when
 * there was one. What counts as reaching: opening /proc/<pid>/mem (either way), reading
 * anything through process_vm_readv (or a fault, which means access was granted),
 * PTRACE_SEIZE, pidfd_getfd of any fd, reading environ, opening or reading the link of an
 * fd, opening cwd or root as a directory, reading any of the ptrace-guarded files (maps,
 * auxv, syscall, stack, pagemap, io, personality, map_files, fdinfo).
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static int reached;

static void hit(long pid, const char *comm, const char *how)
{
	printf("REACHED %ld %s %s\n", pid, comm, how);
	reached = 1;
}

static void read_small(const char *path, char *out, size_t cap)
{
	out[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, out, cap - 1);
	close(fd);
	out[n > 0 ? n : 0] = '\0';
	for (ssize_t i = 0; i < n; i++)
		if (out[i] == '\0' || out[i] == '\n')
			out[i] = ' ';
}

/* Whether a read of `path` yields a byte. */
static int readable(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char c;
	ssize_t n = read(fd, &c, 1);
	close(fd);
	return n > 0;
}

/* `intrusive`: also PTRACE_SEIZE (only our own sandbox's agent and the marked daemon: an
 * attach to a stranger on a broken host would disturb it). */
static void try_memory(long pid, const char *comm, int intrusive)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/mem", pid);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		hit(pid, comm, "mem opened read-write");
		close(fd);
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		hit(pid, comm, "mem opened read-only");
		close(fd);
	}
	/* An address below mmap_min_addr, never mapped: the kernel checks access to the
	 * process first (EPERM), then the address (EFAULT) — so EFAULT means we were let in,
	 * and nothing is ever read or written. */
	char buf[8] = { 0 };
	struct iovec local = { buf, sizeof buf }, remote = { (void *)0x1000ul, sizeof buf };
	ssize_t n = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
	if (n >= 0 || errno == EFAULT)
		hit(pid, comm, "process_vm_readv allowed");
	n = process_vm_writev((pid_t)pid, &local, 1, &remote, 1, 0);
	if (n >= 0 || errno == EFAULT)
		hit(pid, comm, "process_vm_writev allowed");
	if (intrusive && ptrace(PTRACE_SEIZE, (pid_t)pid, NULL, NULL) == 0) {
		hit(pid, comm, "ptrace seized");
		ptrace(PTRACE_DETACH, (pid_t)pid, NULL, NULL);
	}
}

static void try_fds(long pid, const char *comm)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%ld/fd", pid);
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char p[320], link[256];
			snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
			if (readlink(p, link, sizeof link) > 0) {
				hit(pid, comm, "fd link read");
				break;
			}
			int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
			if (fd >= 0) {
				close(fd);
				hit(pid, comm, "fd reopened");
				break;
			}
		}
		closedir(d);
	}
	int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (pidfd >= 0) {
		for (int n = 0; n < 32; n++) {
			int fd = (int)syscall(SYS_pidfd_getfd, pidfd, n, 0);
			if (fd >= 0) {
				close(fd);
				hit(pid, comm, "pidfd_getfd took an fd");
				break;
			}
		}
		close(pidfd);
	}
}

static void try_files(long pid, const char *comm)
{
	static const char *const guarded[] = { "environ", "maps", "auxv", "syscall", "stack",
					      "pagemap", "io", "personality", "fdinfo/0",
					      "fdinfo/3", "smaps", "numa_maps" };
	char p[96];
	for (size_t i = 0; i < sizeof guarded / sizeof *guarded; i++) {
		snprintf(p, sizeof p, "/proc/%ld/%s", pid, guarded[i]);
		if (readable(p)) {
			char how[64];
			snprintf(how, sizeof how, "%s read", guarded[i]);
			hit(pid, comm, how);
		}
	}
	/* cwd and root: opening them at all is the way into the process's files. map_files:
	 * its directory opens for the owner; listing an entry is what reveals the mappings. */
	static const char *const dirs[] = { "cwd", "root", "map_files" };
	for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
		snprintf(p, sizeof p, "/proc/%ld/%s", pid, dirs[i]);
		DIR *d = opendir(p);
		if (!d)
			continue;
		int got = i < 2;
		struct dirent *e;
		while (!got && (e = readdir(d)))
			got = e->d_name[0] != '.';
		closedir(d);
		if (got) {
			char how[64];
			snprintf(how, sizeof how, "%s %s", dirs[i], i < 2 ? "opened" : "listed");
			hit(pid, comm, how);
		}
	}
}

static int scan(const char *marker)
{
	long self = getpid();
	int targets = 0;
	DIR *d = opendir("/proc");
	if (!d) {
		perror("probe: /proc");
		return 2;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid == self)
			continue;
		char p[64], comm[64], cmdline[512];
		snprintf(p, sizeof p, "/proc/%ld/comm", pid);
		read_small(p, comm, sizeof comm);
		comm[strcspn(comm, " ")] = '\0';
		snprintf(p, sizeof p, "/proc/%ld/cmdline", pid);
		read_small(p, cmdline, sizeof cmdline);
		/* A thread of ours or a kernel thread (no command line) holds nothing to take. */
		if (!cmdline[0])
			continue;
		/*
		 * bwrap's own init (pid 1 of a bwrap sandbox) is the workload's equal, not its
		 * supervisor: the same uid, no capability, no host file (bwrap_backend's
		 * no_host_descriptors_inside) — reaching it gains nothing, so it is no target.
		 * (Pid 1 only: a bwrap elsewhere is another sandbox's, and a target.)
		 */
		if (pid == 1 && !strcmp(comm, "bwrap"))
			continue;
		targets++;
		printf("probe: target %ld %s\n", pid, comm);
		int ours = !strcmp(comm, "msb-agent") || (marker && strstr(cmdline, marker));
		try_memory(pid, comm, ours);
		try_fds(pid, comm);
		try_files(pid, comm);
		if (marker && strstr(cmdline, marker) && kill((pid_t)pid, 0) == 0)
			hit(pid, comm, "may be signalled");
	}
	closedir(d);
	printf("probe: %d targets\n", targets);
	return reached;
}

static int caps(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	if (!f) {
		perror("probe: /proc/self/status");
		return 2;
	}
	char line[256];
	/* Asked of the kernel, not read from status (a sentry's status may not say). */
	int nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
	while (fgets(line, sizeof line, f)) {
		unsigned long long v;
		char name[32];
		if (sscanf(line, "%31[^:]:\t%llx", name, &v) == 2 && !strncmp(name, "Cap", 3) && v) {
			printf("REACHED self %s %llx\n", name, v);
			reached = 1;
		}
	}
	fclose(f);
	if (nnp != 1) {
		printf("REACHED self no_new_privs unset\n");
		reached = 1;
	}
	printf("probe: caps checked\n");
	return reached;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "scan"))
		return scan(argc >= 3 ? argv[2] : NULL);
	if (argc == 2 && !strcmp(argv[1], "caps"))
		return caps();
	fprintf(stderr, "usage: probe scan [MARKER] | probe caps\n");
	return 2;
}
