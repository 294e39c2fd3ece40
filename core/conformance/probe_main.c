/*
 * probe_main.c — msb-probe, the conformance kit's own program inside the guest.
 *
 * The rung probes (suite_rung.c) and the egress suite must not depend on what the image
 * happens to hold: a busybox root has no curl, a bare root has no shell. So the kit carries
 * this static, libc-only program in with write_file, runs it with exec, and reads what it
 * prints. Each subcommand ATTEMPTS one thing a rung rules out and prints, one line per
 * finding, what it tried and what happened ("key value…"), never a verdict: the kit, on the
 * host, compares the findings with what the host itself sees (its own kernel's identity,
 * its own namespaces, the nonces it planted) and decides.
 *
 *   ids                      the kernel and the process's identity (uname, boot id, ns, caps)
 *   fds                      every open fd of this process and each readable ancestor
 *   mem PID ADDR LEN         read another process's memory (process_vm_readv, /proc/PID/mem)
 *   scan NONCE               every visible process whose command line holds NONCE; signal it
 *   write PATH…              create each PATH (O_EXCL), removing what it made
 *   read PATH…               open and read each PATH
 *   connect ADDR PORT        TCP connect (5 s), send an HTTP GET, print what came back
 *   unix PATH                connect to a unix socket
 *   linger NONCE SECONDS     leave a daemon (own session, fds closed) sleeping, NONCE in argv
 *   fork N                   start up to N processes at once; print how many started
 *   alloc MIB                touch up to MIB MiB in a child; print how far it got
 *
 * Exit status: 0 when the attempt was made (whatever it found), 2 on a usage error.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The first line of a small file, newline dropped; "" when unreadable. */
static void first_line(const char *path, char *buf, size_t size)
{
	buf[0] = '\0';
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)size, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* Print `text` on one line with anything unprintable escaped. */
static void put_clean(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c < 0x20 || c >= 0x7f || c == '\\')
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

static int cmd_ids(void)
{
	struct utsname u;
	if (uname(&u) == 0)
		printf("uname %s %s %s\n", u.sysname, u.release, u.version);
	char line[512];
	first_line("/proc/sys/kernel/random/boot_id", line, sizeof line);
	printf("boot_id %s\n", line[0] ? line : "-");
	first_line("/proc/version", line, sizeof line);
	printf("proc_version %s\n", line[0] ? line : "-");
	static const char *const ns[] = { "mnt", "pid", "net", "user", "ipc", "uts", NULL };
	for (const char *const *n = ns; *n; n++) {
		char path[64], target[128];
		snprintf(path, sizeof path, "/proc/self/ns/%s", *n);
		ssize_t len = readlink(path, target, sizeof target - 1);
		target[len > 0 ? len : 0] = '\0';
		printf("ns_%s %s\n", *n, len > 0 ? target : "-");
	}
	printf("uid %ld euid %ld\n", (long)getuid(), (long)geteuid());
	char cwd[4096];
	printf("cwd %s\n", getcwd(cwd, sizeof cwd) ? cwd : "-");
	first_line("/proc/self/uid_map", line, sizeof line);
	printf("uid_map %s\n", line[0] ? line : "-");
	/* Asked of the kernel itself: not every kernel's status file shows the flag. */
	int nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
	printf("no_new_privs %d\n", nnp);
	FILE *f = fopen("/proc/self/status", "re");
	while (f && fgets(line, sizeof line, f)) {
		static const char *const keep[] = { "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:",
						    "NoNewPrivs:", NULL };
		for (const char *const *k = keep; *k; k++)
			if (strncmp(line, *k, strlen(*k)) == 0) {
				char *v = line + strlen(*k);
				v += strspn(v, " \t");
				v[strcspn(v, "\n")] = '\0';
				printf("%.*s %s\n", (int)strlen(*k) - 1, *k, v);
			}
	}
	if (f)
		fclose(f);
	return 0;
}

/* Every fd of process `pid` ("self" or a number) but 0-2 of this process itself. */
static void fds_of(const char *pid, const char *label)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%s/fd", pid);
	DIR *d = opendir(dir);
	if (!d) {
		printf("%s %s unreadable %s\n", label, pid, strerror(errno));
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[384], target[512];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		ssize_t n = readlink(path, target, sizeof target - 1);
		target[n > 0 ? n : 0] = '\0';
		printf("%s %s fd %s ", label, pid, e->d_name);
		put_clean(target, strlen(target));
		putchar('\n');
	}
	closedir(d);
}

static int cmd_fds(void)
{
	fds_of("self", "self");
	/* Up the ancestry: an agent holding a host fd hands it to nobody, yet holds it. */
	pid_t pid = getppid();
	for (int depth = 0; pid >= 1 && depth < 8; depth++) {
		char num[16], stat[64], line[512];
		snprintf(num, sizeof num, "%ld", (long)pid);
		fds_of(num, "ancestor");
		snprintf(stat, sizeof stat, "/proc/%ld/stat", (long)pid);
		first_line(stat, line, sizeof line);
		const char *close_paren = strrchr(line, ')');
		long ppid = 0;
		if (pid == 1 || !close_paren || sscanf(close_paren + 1, " %*c %ld", &ppid) != 1)
			break;
		pid = (pid_t)ppid;
	}
	return 0;
}

static int cmd_mem(const char *pid_s, const char *addr_s, const char *len_s)
{
	pid_t pid = (pid_t)strtol(pid_s, NULL, 10);
	unsigned long addr = strtoul(addr_s, NULL, 0);
	size_t len = strtoul(len_s, NULL, 10);
	char buf[256];
	if (len > sizeof buf)
		len = sizeof buf;
	struct iovec local = { buf, len }, remote = { (void *)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n > 0) {
		printf("vm_readv read %zd ", n);
		put_clean(buf, (size_t)n);
		putchar('\n');
	} else {
		printf("vm_readv refused %s\n", strerror(errno));
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/mem", (long)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? pread(fd, buf, len, (off_t)addr) : -1;
	if (n > 0) {
		printf("proc_mem read %zd ", n);
		put_clean(buf, (size_t)n);
		putchar('\n');
	} else {
		printf("proc_mem refused %s\n", strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

static int cmd_scan(const char *nonce)
{
	DIR *d = opendir("/proc");
	if (!d) {
		printf("proc unreadable %s\n", strerror(errno));
		return 0;
	}
	struct dirent *e;
	unsigned visible = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		visible++;
		char path[300], cmd[4096];
		snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, cmd, sizeof cmd - 1);
		close(fd);
		if (n <= 0)
			continue;
		for (ssize_t i = 0; i < n; i++)
			if (!cmd[i])
				cmd[i] = ' ';
		cmd[n] = '\0';
		if (!strstr(cmd, nonce) || atol(e->d_name) == (long)getpid())
			continue;
		pid_t pid = (pid_t)atol(e->d_name);
		printf("found %ld ", (long)pid);
		put_clean(cmd, (size_t)n);
		putchar('\n');
		printf("signal %ld %s\n", (long)pid, kill(pid, 0) == 0 ? "permitted" : strerror(errno));
	}
	closedir(d);
	printf("visible %u\n", visible);
	return 0;
}

static int cmd_write(int n, char **paths)
{
	for (int i = 0; i < n; i++) {
		int fd = open(paths[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd >= 0) {
			close(fd);
			unlink(paths[i]);
			printf("created %s\n", paths[i]);
		} else {
			printf("refused %s %s\n", paths[i], strerror(errno));
		}
	}
	return 0;
}

static int cmd_read(int n, char **paths)
{
	for (int i = 0; i < n; i++) {
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		char buf[128];
		ssize_t got = fd >= 0 ? read(fd, buf, sizeof buf) : -1;
		if (got >= 0) {
			printf("read %s %zd ", paths[i], got);
			put_clean(buf, (size_t)got);
			putchar('\n');
		} else {
			printf("refused %s %s\n", paths[i], strerror(errno));
		}
		if (fd >= 0)
			close(fd);
	}
	return 0;
}

static int cmd_connect(const char *addr, const char *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "msb-probe: %s is not an IPv4 address\n", addr);
		return 2;
	}
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		printf("refused socket %s\n", strerror(errno));
		return 0;
	}
	int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
	if (rc < 0 && errno == EINPROGRESS) {
		struct pollfd p = { fd, POLLOUT, 0 };
		int e = 0;
		socklen_t el = sizeof e;
		rc = poll(&p, 1, 5000) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && !e ? 0 : -1;
		errno = e ? e : ETIMEDOUT;
	}
	if (rc < 0) {
		printf("refused connect %s\n", strerror(errno));
		close(fd);
		return 0;
	}
	printf("connected %s:%s\n", addr, port);
	static const char get[] = "GET / HTTP/1.0\r\n\r\n";
	(void)!send(fd, get, sizeof get - 1, MSG_NOSIGNAL);
	char buf[512];
	size_t have = 0;
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, 5000) != 1)
			break;
		ssize_t n = recv(fd, buf + have, sizeof buf - 1 - have, 0);
		if (n <= 0)
			break;
		have += (size_t)n;
		if (have == sizeof buf - 1)
			break;
	}
	printf("reply ");
	put_clean(buf, have);
	putchar('\n');
	close(fd);
	return 0;
}

static int cmd_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sa.sun_path) {
		printf("refused %s path too long\n", path);
		return 0;
	}
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
		printf("connected %s\n", path);
	else
		printf("refused %s %s\n", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	return 0;
}

static int cmd_linger(const char *self, const char *nonce, const char *seconds)
{
	pid_t pid = fork();
	if (pid < 0) {
		printf("refused fork %s\n", strerror(errno));
		return 0;
	}
	if (pid == 0) {
		/* A daemon: its own session, no fd of the command's, reparented on our exit. */
		setsid();
		if (fork() != 0)
			_exit(0);
		int null = open("/dev/null", O_RDWR);
		for (int fd = 0; fd < 3; fd++)
			if (null >= 0)
				dup2(null, fd);
			else
				close(fd);
		execl(self, self, "sleep", nonce, seconds, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, NULL, 0);
	printf("lingering %s\n", nonce);
	return 0;
}

static int cmd_fork(long want)
{
	pid_t *kids = calloc((size_t)want, sizeof *kids);
	if (!kids)
		return 1;
	long got = 0;
	int why = 0;
	for (; got < want; got++) {
		pid_t p = fork();
		if (p == 0) {
			pause();
			_exit(0);
		}
		if (p < 0) {
			why = errno;
			break;
		}
		kids[got] = p;
	}
	printf("started %ld of %ld %s\n", got, want, got < want ? strerror(why) : "all");
	for (long i = 0; i < got; i++)
		kill(kids[i], SIGKILL);
	for (long i = 0; i < got; i++)
		waitpid(kids[i], NULL, 0);
	free(kids);
	return 0;
}

static int cmd_alloc(long mib)
{
	int progress[2];
	if (pipe(progress) < 0)
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		close(progress[0]);
		for (long i = 0; i < mib; i++) {
			char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				_exit(3);
			for (size_t o = 0; o < (1 << 20); o += 4096)
				p[o] = 1;
			(void)!write(progress[1], "x", 1);
		}
		_exit(0);
	}
	close(progress[1]);
	long touched = 0;
	char buf[256];
	ssize_t n;
	while ((n = read(progress[0], buf, sizeof buf)) > 0)
		touched += n;
	close(progress[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	printf("touched %ld of %ld MiB %s %d\n", touched, mib,
	       WIFSIGNALED(status) ? "signal" : "exit",
	       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: msb-probe ids|fds|mem PID ADDR LEN|scan NONCE|write PATH…|read PATH…|"
			"connect ADDR PORT|unix PATH|linger NONCE SECONDS|fork N|alloc MIB\n");
	return 2;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		return usage();
	const char *c = argv[1];
	if (strcmp(c, "ids") == 0)
		return cmd_ids();
	if (strcmp(c, "fds") == 0)
		return cmd_fds();
	if (strcmp(c, "mem") == 0 && argc == 5)
		return cmd_mem(argv[2], argv[3], argv[4]);
	if (strcmp(c, "scan") == 0 && argc == 3)
		return cmd_scan(argv[2]);
	if (strcmp(c, "write") == 0)
		return cmd_write(argc - 2, argv + 2);
	if (strcmp(c, "read") == 0)
		return cmd_read(argc - 2, argv + 2);
	if (strcmp(c, "connect") == 0 && argc == 4)
		return cmd_connect(argv[2], argv[3]);
	if (strcmp(c, "unix") == 0 && argc == 3)
		return cmd_unix(argv[2]);
	if (strcmp(c, "linger") == 0 && argc == 4) {
		char self[4096];
		ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
		if (n <= 0) {
			printf("refused /proc/self/exe %s\n", strerror(errno));
			return 0;
		}
		self[n] = '\0';
		return cmd_linger(self, argv[2], argv[3]);
	}
	if (strcmp(c, "sleep") == 0 && argc == 4) {
		struct timespec ts = { atol(argv[3]), 0 };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		return 0;
	}
	if (strcmp(c, "fork") == 0 && argc == 3 && atol(argv[2]) > 0 && atol(argv[2]) <= 100000)
		return cmd_fork(atol(argv[2]));
	if (strcmp(c, "alloc") == 0 && argc == 3 && atol(argv[2]) > 0)
		return cmd_alloc(atol(argv[2]));
	return usage();
}
