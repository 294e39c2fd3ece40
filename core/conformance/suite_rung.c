/*
 * suite_rung.c — what the declared isolation rung rules out, attempted as the guest.
 *
 * Declarations are checked by the other suites; this one holds the rung itself to its word.
 * Each case attempts, from inside a sandbox and with the kit's own probe program (probe.c),
 * one thing the rung says cannot happen, and compares what the probe found with what the
 * host sees of itself: its kernel's identity, its namespaces, the nonces it planted. A case
 * applies from the rung that rules its attempt out (below it: not applicable); each verdict
 * carries the attempt and the finding, so an author reads what leaked, or what held.
 *
 *   os_process and up   address-space-apart, no-host-fds, other-sandbox-apart
 *   container and up    own-pid-namespace, own-mount-namespace, no-capabilities,
 *                       no-new-privs, own-network-namespace, limits-hold
 *   hardened_container  userspace-kernel
 *   microvm and up      own-kernel-instance, no-host-filesystem
 *
 * Namespace identities (/proc/self/ns/…) mean something only within one kernel: a guest of
 * another kernel (a microVM) numbers its initial namespaces as the host numbers its own. So
 * where the guest's boot id differs from the host's, namespace equality is not compared:
 * another kernel instance is a stronger separation than any namespace.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msb/loader.h>

#include "kit.h"
#include "peer.h"
#include "probe.h"

static msb_isolation rung(const conf_run *run)
{
	return msb_backend_isolation(run->backend);
}

/* Not applicable below `floor`; true when the case applies. */
static bool applies(conf_run *run, msb_isolation floor)
{
	if (msb_isolation_meets(rung(run), floor))
		return true;
	char why[160];
	snprintf(why, sizeof why, "the backend declares rung %s; this is ruled out from %s up",
		 msb_word_name(MSB_AXIS_ISOLATION, rung(run)), msb_word_name(MSB_AXIS_ISOLATION, floor));
	conf_not_applicable(run, why);
	return false;
}

static void host_line(const char *path, char *buf, size_t size)
{
	buf[0] = '\0';
	FILE *f = fopen(path, "re");
	if (f && fgets(buf, (int)size, f))
		buf[strcspn(buf, "\n")] = '\0';
	if (f)
		fclose(f);
}

static void host_ns(const char *ns, char *buf, size_t size)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/ns/%s", ns);
	ssize_t n = readlink(path, buf, size - 1);
	buf[n > 0 ? n : 0] = '\0';
}

/* A pass that says what was attempted and found (kept in the verdict's reason). */
static void conf_note(conf_run *run, const char *fmt, ...) MSB_PRINTF(2, 3);
static void conf_note(conf_run *run, const char *fmt, ...)
{
	if (conf_decided(run) || run->verdict->reason)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&run->verdict->reason, fmt, ap) < 0)
		run->verdict->reason = NULL;
	va_end(ap);
}

/* The probe's `ids` in a fresh sandbox of this suite (NULL after deciding the case). */
static char *guest_ids(conf_run *run, conf_box **boxp)
{
	conf_box *box = *boxp ? *boxp : conf_main_box(run);
	*boxp = box;
	if (!box)
		return NULL;
	static const char *const args[] = { "ids", NULL };
	char *out = NULL;
	return conf_probe_run(run, box, args, &out) ? out : NULL;
}

/* Whether the guest runs on the host's kernel instance (same boot id). */
static bool same_kernel(const char *ids)
{
	char guest[128], host[128];
	conf_probe_field(ids, "boot_id", guest, sizeof guest);
	host_line("/proc/sys/kernel/random/boot_id", host, sizeof host);
	return strcmp(guest, host) == 0 || strcmp(guest, "-") == 0;
}

/*
 * From microvm up, a guest on a kernel instance of its own (its boot id is not the host's,
 * which own-kernel-instance holds it to) has a root, capabilities and privileges that are
 * that kernel's: what they could reach is the VM, not the host. The container-rung checks of
 * those are then satisfied by the stronger boundary, and say so.
 */
static bool own_kernel_vouches(conf_run *run, const char *ids, const char *what)
{
	if (!msb_isolation_meets(rung(run), MSB_ISO_MICROVM) || same_kernel(ids))
		return false;
	char boot[128];
	conf_probe_field(ids, "boot_id", boot, sizeof boot);
	conf_note(run, "%s: the guest runs on a kernel instance of its own (boot id %s), so they are "
		  "that kernel's, not the host's", what, boot);
	return true;
}

/* ---- os_process and up ------------------------------------------------------------------ */

/* The host holds a nonce in its memory; the guest is told where and tries to read it. */
static void case_address_space(conf_run *run)
{
	if (!applies(run, MSB_ISO_OS_PROCESS))
		return;
	static char secret[64];
	conf_unique(run, "secret", secret, sizeof secret);
	conf_box *box = conf_main_box(run);
	if (!box)
		return;
	char pid[24], addr[32], len[16];
	snprintf(pid, sizeof pid, "%ld", (long)getpid());
	snprintf(addr, sizeof addr, "%#lx", (unsigned long)(uintptr_t)secret);
	snprintf(len, sizeof len, "%zu", strlen(secret));
	const char *args[] = { "mem", pid, addr, len, NULL };
	char *out;
	if (!conf_probe_run(run, box, args, &out))
		return;
	char vm[160], mem[160];
	conf_probe_field(out, "vm_readv", vm, sizeof vm);
	conf_probe_field(out, "proc_mem", mem, sizeof mem);
	if (strstr(out, secret))
		conf_fail(run, "the host's memory out of the guest's reach",
			  "the guest read the host's nonce at %s of pid %s: process_vm_readv %s; "
			  "/proc/%s/mem %s", addr, pid, vm, pid, mem);
	else
		conf_note(run, "read %s bytes at %s of host pid %s: process_vm_readv %s; /proc/PID/mem %s",
			  len, addr, pid, vm, mem);
	free(out);
}

/*
 * The host opens a marker file and a pipe without close-on-exec before the sandbox is
 * acquired: a backend that hands the host's fds down leaves them in the agent (or the
 * commands). The probe lists its own fds and its readable ancestors'.
 */
static void case_no_host_fds(conf_run *run)
{
	if (!applies(run, MSB_ISO_OS_PROCESS))
		return;
	char dir[] = "/tmp/msb-conf-fd-XXXXXX", marker[96], path[160];
	if (!mkdtemp(dir)) {
		conf_skip(run, "the kit could not make a temp dir for its marker fd: %s", strerror(errno));
		return;
	}
	conf_unique(run, "hostfd", marker, sizeof marker);
	snprintf(path, sizeof path, "%s/%s", dir, marker);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600); /* deliberately inheritable */
	int pipefd[2] = { -1, -1 };
	char pipe_name[64] = "";
	if (fd >= 0 && pipe(pipefd) == 0) {
		struct stat st;
		if (fstat(pipefd[0], &st) == 0)
			snprintf(pipe_name, sizeof pipe_name, "pipe:[%lu]", (unsigned long)st.st_ino);
	}
	conf_box *box = fd < 0 ? NULL : conf_box_acquire(run, "fds", NULL, MSB_SCOPE_CONVERSATION);
	static const char *const args[] = { "fds", NULL };
	char *out = NULL;
	if (fd < 0)
		conf_skip(run, "the kit could not open its marker %s: %s", path, strerror(errno));
	else if (box && conf_probe_run(run, box, args, &out)) {
		const char *hit = strstr(out, marker) ? marker : pipe_name[0] && strstr(out, pipe_name) ? pipe_name : NULL;
		if (hit) {
			const char *line = strstr(out, hit);
			while (line > out && line[-1] != '\n')
				line--;
			conf_fail(run, "no fd of the host's inherited by the guest",
				  "the host's %s (held open, inheritable, while the sandbox was acquired) "
				  "is open inside: %.*s", hit == marker ? path : pipe_name,
				  (int)strcspn(line, "\n"), line);
		} else {
			unsigned n = 0, unreadable = 0;
			for (const char *p = out; (p = strstr(p, " fd ")); p++)
				n++;
			for (const char *p = out; (p = strstr(p, " unreadable ")); p++)
				unreadable++;
			conf_note(run, "held %s and %s open across the acquire; the guest's %u fds "
				  "(its own and its ancestors'%s) hold neither", path, pipe_name, n,
				  unreadable ? ", some ancestors unreadable" : "");
		}
	}
	free(out);
	if (fd >= 0)
		close(fd);
	if (pipefd[0] >= 0)
		close(pipefd[0]), close(pipefd[1]);
	unlink(path);
	rmdir(dir);
}

/* What one sandbox learns of itself for the other to try: its work dir's path as it sees it. */
typedef struct peer_view {
	conf_box *box;
	char nonce[96];
	char cwd[1024];
} peer_view;

static bool plant_peer(conf_run *run, peer_view *v, const char *tag)
{
	v->box = conf_box_acquire(run, tag, NULL, MSB_SCOPE_CONVERSATION);
	if (!v->box)
		return false;
	conf_unique(run, "peer", v->nonce, sizeof v->nonce);
	if (!conf_plant(run, v->box, "peer-marker", v->nonce))
		return false;
	const char *linger[] = { "linger", v->nonce, "600", NULL };
	static const char *const ids[] = { "ids", NULL };
	char *out = NULL;
	if (!conf_probe_run(run, v->box, linger, &out))
		return false;
	free(out);
	if (!conf_probe_run(run, v->box, ids, &out))
		return false;
	conf_probe_field(out, "cwd", v->cwd, sizeof v->cwd);
	free(out);
	if (!v->cwd[0]) {
		conf_skip(run, "the probe could not tell its working directory");
		return false;
	}
	return true;
}

/*
 * `from` tries `to`'s file, its work dir, its process and its agent's socket. Where both
 * see their work dir at one guest path (each its own, behind a mount namespace), that path
 * names `from`'s own: the marker's content (each sandbox's nonce) still tells whose file was
 * read, and the write and socket attempts are only made where the paths differ.
 */
static void try_peer(conf_run *run, const peer_view *from, const peer_view *to)
{
	char file[1200], intruder[1200], sock[1200];
	bool shared_path = strcmp(from->cwd, to->cwd) == 0;
	snprintf(file, sizeof file, "%s/peer-marker", to->cwd);
	snprintf(intruder, sizeof intruder, "%s/intruder-%s", to->cwd, from->nonce);
	snprintf(sock, sizeof sock, "%s/../agent.sock", to->cwd);
	const char *rd[] = { "read", file, NULL }, *wr[] = { "write", intruder, NULL };
	const char *scan[] = { "scan", to->nonce, NULL }, *ux[] = { "unix", sock, NULL };
	char *a = NULL, *b = NULL, *c = NULL, *d = NULL;
	if (conf_probe_run(run, from->box, rd, &a) && conf_probe_run(run, from->box, scan, &c) &&
	    (shared_path || (conf_probe_run(run, from->box, wr, &b) &&
			     conf_probe_run(run, from->box, ux, &d)))) {
		if (strstr(a, to->nonce))
			conf_fail(run, "one sandbox unable to read another's files",
				  "%s read %s of %s: %s", from->box->thread, file, to->box->thread, a);
		else if (b && strncmp(b, "created", 7) == 0)
			conf_fail(run, "one sandbox unable to write into another's work dir",
				  "%s created %s in %s's work dir", from->box->thread, intruder, to->box->thread);
		else if (strstr(c, "permitted"))
			conf_fail(run, "one sandbox unable to signal another's processes",
				  "%s may signal %s's process: %s", from->box->thread, to->box->thread, c);
		else if (d && strncmp(d, "connected", 9) == 0)
			conf_fail(run, "one sandbox unable to reach another's agent",
				  "%s connected to %s", from->box->thread, sock);
	}
	free(a), free(b), free(c), free(d);
}

static void case_other_sandbox(conf_run *run)
{
	if (!applies(run, MSB_ISO_OS_PROCESS))
		return;
	peer_view one = { 0 }, two = { 0 };
	if (!plant_peer(run, &one, "peer-a") || !plant_peer(run, &two, "peer-b"))
		return;
	try_peer(run, &one, &two);
	try_peer(run, &two, &one);
	conf_note(run, "each of two sandboxes tried the other's marker (read), work dir (create), "
		  "lingering process (signal) and agent socket: all refused");
}

/* ---- container and up -------------------------------------------------------------------- */

/* A host process the guest must not see: msb-probe itself, sleeping with a nonce in argv. */
static pid_t host_lingerer(const char *nonce)
{
	const char *probe = conf_probe_host_path();
	int sync[2];
	if (pipe2(sync, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		execl(probe, probe, "sleep", nonce, "120", (char *)NULL);
		_exit(127);
	}
	/* Its command line holds the nonce only once it has exec'd: the pipe's end of file. */
	close(sync[1]);
	char c;
	while (pid > 0 && read(sync[0], &c, 1) < 0 && errno == EINTR)
		;
	close(sync[0]);
	return pid;
}

static void case_own_pid_namespace(conf_run *run)
{
	if (!applies(run, MSB_ISO_CONTAINER))
		return;
	char nonce[96];
	conf_unique(run, "hostproc", nonce, sizeof nonce);
	pid_t pid = host_lingerer(nonce);
	conf_box *box = NULL;
	char *ids = pid > 0 ? guest_ids(run, &box) : NULL;
	const char *args[] = { "scan", nonce, NULL };
	char *out = NULL;
	if (pid <= 0)
		conf_skip(run, "the kit could not start its host process: %s", strerror(errno));
	else if (ids && conf_probe_run(run, box, args, &out)) {
		char guest_ns[96], host[96], visible[32];
		conf_probe_field(ids, "ns_pid", guest_ns, sizeof guest_ns);
		conf_probe_field(out, "visible", visible, sizeof visible);
		host_ns("pid", host, sizeof host);
		if (strstr(out, "found "))
			conf_fail(run, "no host process visible inside",
				  "the guest sees the host's process %ld (argv holding %s): %s",
				  (long)pid, nonce, out);
		else if (same_kernel(ids) && strcmp(guest_ns, host) == 0)
			conf_fail(run, "a pid namespace of the guest's own",
				  "the guest's pid namespace is the host's (%s)", host);
		else
			conf_note(run, "looked for host process %ld among the %s the guest sees: absent; "
				  "guest pid ns %s, host's %s", (long)pid, visible, guest_ns, host);
	}
	free(ids);
	free(out);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

static void case_own_mount_namespace(conf_run *run)
{
	if (!applies(run, MSB_ISO_CONTAINER))
		return;
	char tmpmark[] = "/tmp/msb-conf-tmp-XXXXXX";
	int fd = mkstemp(tmpmark);
	if (fd < 0) {
		conf_skip(run, "the kit could not plant its /tmp marker: %s", strerror(errno));
		return;
	}
	close(fd);
	conf_box *box = NULL;
	char *ids = guest_ids(run, &box);
	char work[1024], tmp[96];
	conf_path(run, "rw-probe", work, sizeof work);
	conf_unique(run, "/tmp/rw-probe", tmp, sizeof tmp);
	const char *wr[] = { "write", "/ro-probe", "/usr/ro-probe", "/etc/ro-probe", "/bin/ro-probe",
			     work, tmp, NULL };
	const char *rd[] = { "read", tmpmark, NULL };
	char *w = NULL, *r = NULL;
	if (ids && conf_probe_run(run, box, wr, &w) && conf_probe_run(run, box, rd, &r)) {
		char guest_ns[96], host[96], line[1100];
		conf_probe_field(ids, "ns_mnt", guest_ns, sizeof guest_ns);
		host_ns("mnt", host, sizeof host);
		const char *ro[] = { "/ro-probe", "/usr/ro-probe", "/etc/ro-probe", "/bin/ro-probe", NULL };
		const char *written = NULL;
		for (size_t i = 0; ro[i] && !written; i++) {
			snprintf(line, sizeof line, "created %s\n", ro[i]);
			if (strstr(w, line))
				written = ro[i];
		}
		snprintf(line, sizeof line, "created %s\n", work);
		bool work_ok = strstr(w, line) != NULL;
		snprintf(line, sizeof line, "created %s\n", tmp);
		bool tmp_ok = strstr(w, line) != NULL;
		bool vouched = written && own_kernel_vouches(run, ids, "the guest's root is writable");
		if (written && !vouched)
			conf_fail(run, "the guest's root read-only but for the work dir and /tmp",
				  "the guest created %s", written);
		else if (strncmp(r, "read ", 5) == 0)
			conf_fail(run, "a /tmp of the guest's own",
				  "the guest read the host's %s", tmpmark);
		else if (same_kernel(ids) && strcmp(guest_ns, host) == 0)
			conf_fail(run, "a mount namespace of the guest's own",
				  "the guest's mount namespace is the host's (%s)", host);
		else if (!work_ok || !tmp_ok)
			conf_fail(run, "the work dir and /tmp writable", "the guest could not create %s: %s",
				  !work_ok ? work : tmp, w);
		else if (!vouched)
			conf_note(run, "creating in /, /usr, /etc, /bin refused; work dir and /tmp "
				  "writable; host's %s not visible; guest mount ns %s, host's %s",
				  tmpmark, guest_ns, host);
	}
	free(ids), free(w), free(r);
	unlink(tmpmark);
}

static bool all_zero(const char *hex)
{
	if (!hex[0])
		return false;
	for (const char *p = hex; *p; p++)
		if (*p != '0')
			return false;
	return true;
}

static void case_no_capabilities(conf_run *run)
{
	if (!applies(run, MSB_ISO_CONTAINER))
		return;
	conf_box *box = NULL;
	char *ids = guest_ids(run, &box);
	if (!ids)
		return;
	char eff[32], prm[32], uid[64], map[128];
	conf_probe_field(ids, "CapEff", eff, sizeof eff);
	conf_probe_field(ids, "CapPrm", prm, sizeof prm);
	conf_probe_field(ids, "uid", uid, sizeof uid);
	conf_probe_field(ids, "uid_map", map, sizeof map);
	bool host_root = same_kernel(ids) && strstr(uid, "euid 0") &&
			 strncmp(map, "0 0 4294967295", 14) == 0;
	char held[160];
	snprintf(held, sizeof held, "the guest holds CapEff %s as uid %s", eff, uid);
	if ((!all_zero(eff) || !all_zero(prm)) && own_kernel_vouches(run, ids, held))
		;
	else if (!eff[0])
		conf_skip(run, "the guest's /proc/self/status shows no CapEff line");
	else if (!all_zero(eff) || !all_zero(prm))
		conf_fail(run, "no capabilities in the guest",
			  "the guest holds capabilities: CapEff %s, CapPrm %s (uid %s)", eff, prm, uid);
	else if (host_root)
		conf_fail(run, "the guest not the host's root",
			  "the guest runs as uid %s with uid_map \"%s\": the host's root", uid, map);
	else
		conf_note(run, "CapEff %s, CapPrm %s, uid %s, uid_map \"%s\"", eff, prm, uid, map);
	free(ids);
}

static void case_no_new_privs(conf_run *run)
{
	if (!applies(run, MSB_ISO_CONTAINER))
		return;
	conf_box *box = NULL;
	char *ids = guest_ids(run, &box);
	if (!ids)
		return;
	char nnp[16];
	conf_probe_field(ids, "no_new_privs", nnp, sizeof nnp);
	if (strcmp(nnp, "1") != 0 && own_kernel_vouches(run, ids, "no_new_privs is not set"))
		;
	else if (!nnp[0] || strcmp(nnp, "-1") == 0)
		conf_skip(run, "the guest's kernel does not answer prctl(PR_GET_NO_NEW_PRIVS)");
	else if (strcmp(nnp, "1") != 0)
		conf_fail(run, "no_new_privs set on the guest's commands (PR_GET_NO_NEW_PRIVS 1)",
			  "PR_GET_NO_NEW_PRIVS answers %s: a setuid program would raise the guest's "
			  "privileges", nnp);
	else
		conf_note(run, "PR_GET_NO_NEW_PRIVS answers 1");
	free(ids);
}

static void case_own_network_namespace(conf_run *run)
{
	if (!applies(run, MSB_ISO_CONTAINER))
		return;
	conf_box *box = NULL;
	char *ids = guest_ids(run, &box);
	if (!ids)
		return;
	conf_peer peer;
	char token[96];
	msb_error err = MSB_ERROR_INIT;
	conf_unique(run, "netpeer", token, sizeof token);
	if (conf_peer_start(&peer, "127.0.0.1", token, &err) != MSB_OK) {
		conf_skip(run, "the kit could not start its loopback peer: %s", msb_error_message(&err));
		msb_error_clear(&err);
		free(ids);
		return;
	}
	char port[16];
	snprintf(port, sizeof port, "%u", peer.port);
	const char *args[] = { "connect", "127.0.0.1", port, NULL };
	char *out = NULL;
	if (conf_probe_run(run, box, args, &out)) {
		char guest_ns[96], host[96], finding[200];
		conf_probe_field(ids, "ns_net", guest_ns, sizeof guest_ns);
		host_ns("net", host, sizeof host);
		snprintf(finding, sizeof finding, "%.*s", (int)strcspn(out, "\n"), out);
		if (strstr(out, token) || conf_peer_connections(&peer) > 0)
			conf_fail(run, "a network namespace of the guest's own",
				  "the guest reached the host's loopback peer at 127.0.0.1:%s: %s", port,
				  finding);
		else if (same_kernel(ids) && strcmp(guest_ns, host) == 0)
			conf_fail(run, "a network namespace of the guest's own",
				  "the guest's network namespace is the host's (%s)", host);
		else
			conf_note(run, "connect to the host's 127.0.0.1:%s: %s; guest net ns %s, host's %s",
				  port, finding, guest_ns, host);
	}
	conf_peer_stop(&peer);
	free(ids), free(out);
}

/*
 * Limits that hold: the guest touches memory and starts processes up to bounds no sandbox
 * of this rung should grant (the kit cannot know the configured ceilings, only that a
 * container's must stop a runaway somewhere below these).
 */
#define LIMIT_MEMORY_MIB 4096
#define LIMIT_PIDS 4096

static void case_limits_hold(conf_run *run)
{
	if (!applies(run, MSB_ISO_CONTAINER))
		return;
	char mib[16], pids[16];
	snprintf(mib, sizeof mib, "%d", LIMIT_MEMORY_MIB);
	snprintf(pids, sizeof pids, "%d", LIMIT_PIDS);
	const char *alloc[] = { "alloc", mib, NULL }, *forks[] = { "fork", pids, NULL };
	const char *const *attempts[] = { alloc, forks };
	const long bounds[] = { LIMIT_MEMORY_MIB, LIMIT_PIDS };
	const char *what[] = { "a memory limit that stops a guest below 4096 MiB",
			       "a process limit that stops a guest below 4096 processes" };
	char found[2][200];
	for (int i = 0; i < 2 && !conf_decided(run); i++) {
		/* Each in a sandbox of its own: an engine may end the whole sandbox at its limit. */
		conf_box *box = conf_box_acquire(run, i ? "pids" : "memory", NULL, MSB_SCOPE_CONVERSATION);
		char *out = NULL;
		msb_error err = MSB_ERROR_INIT;
		if (!box || !conf_probe_try(run, box, attempts[i], &out, &err)) {
			if (err.code != MSB_OK)
				snprintf(found[i], sizeof found[i], "the sandbox ended under `msb-probe %s %s` "
					 "(%s)", attempts[i][0], attempts[i][1], msb_errc_name(err.code));
			msb_error_clear(&err);
			if (conf_decided(run) || !box)
				return;
			continue;
		}
		long got = -1;
		sscanf(out, "%*s %ld", &got);
		out[strcspn(out, "\n")] = '\0';
		snprintf(found[i], sizeof found[i], "%s", out);
		if (got < 0)
			conf_skip(run, "the probe's answer was not understood: %s", out);
		else if (got >= bounds[i])
			conf_fail(run, what[i], "the guest got all it asked for: %s", out);
		free(out);
	}
	conf_note(run, "%s; %s", found[0], found[1]);
}

/* ---- hardened_container ---------------------------------------------------------------- */

static void case_userspace_kernel(conf_run *run)
{
	if (rung(run) != MSB_ISO_HARDENED_CONTAINER) {
		conf_not_applicable(run, "only hardened_container claims a userspace kernel");
		return;
	}
	conf_box *box = NULL;
	char *ids = guest_ids(run, &box);
	if (!ids)
		return;
	struct utsname u;
	uname(&u);
	char host[600], guest[600];
	snprintf(host, sizeof host, "%s %s %s", u.sysname, u.release, u.version);
	conf_probe_field(ids, "uname", guest, sizeof guest);
	if (strcmp(host, guest) == 0)
		conf_fail(run, "the guest's system calls answered by a kernel other than the host's",
			  "uname inside is the host's own: %s", guest);
	else
		conf_note(run, "uname inside \"%s\", the host's \"%s\"", guest, host);
	free(ids);
}

/* ---- microvm and up ------------------------------------------------------------------- */

static void case_own_kernel_instance(conf_run *run)
{
	if (!applies(run, MSB_ISO_MICROVM))
		return;
	conf_box *box = NULL;
	char *ids = guest_ids(run, &box);
	if (!ids)
		return;
	char guest[128], host[128];
	conf_probe_field(ids, "boot_id", guest, sizeof guest);
	host_line("/proc/sys/kernel/random/boot_id", host, sizeof host);
	if (!guest[0] || strcmp(guest, "-") == 0)
		conf_skip(run, "the guest shows no boot id (/proc/sys/kernel/random/boot_id)");
	else if (strcmp(guest, host) == 0)
		conf_fail(run, "a kernel instance of the guest's own",
			  "the guest's boot id is the host's: %s", host);
	else
		conf_note(run, "boot id inside %s, the host's %s", guest, host);
	free(ids);
}

static void case_no_host_filesystem(conf_run *run)
{
	if (!applies(run, MSB_ISO_MICROVM))
		return;
	char dir[] = "/tmp/msb-conf-host-XXXXXX", path[128];
	if (!mkdtemp(dir)) {
		conf_skip(run, "the kit could not make its host marker: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof path, "%s/marker", dir);
	FILE *f = fopen(path, "we");
	if (f)
		fputs("host", f), fclose(f);
	conf_box *box = conf_main_box(run);
	const char *args[] = { "read", path, conf_probe_host_path(), "/proc/1/root/etc/hostname", NULL };
	char *out = NULL;
	if (box && conf_probe_run(run, box, args, &out)) {
		char line[1200];
		snprintf(line, sizeof line, "read %s ", path);
		char host_probe[1200];
		snprintf(host_probe, sizeof host_probe, "read %s ", conf_probe_host_path());
		if (strstr(out, line) || strstr(out, host_probe))
			conf_fail(run, "no host file reachable from the guest", "the guest read %s",
				  strstr(out, line) ? path : conf_probe_host_path());
		else
			conf_note(run, "opening host paths %s and %s: %.*s", path, conf_probe_host_path(),
				  (int)strcspn(out, "\n"), out);
	}
	free(out);
	unlink(path);
	rmdir(dir);
}

static const char *rung_inapplicable(conf_run *run)
{
	if (!msb_isolation_meets(rung(run), MSB_ISO_OS_PROCESS))
		return "rung none and runtime draw no boundary to probe";
	if (!conf_has(run, MSB_CAP_EXEC) || !conf_has(run, MSB_CAP_FILES_IN))
		return "the probes run the kit's own program inside, which needs exec and files_in";
	return NULL;
}

static const conf_case rung_cases[] = {
	{ "address-space-apart", 0, case_address_space },
	{ "no-host-fds", 0, case_no_host_fds },
	{ "other-sandbox-apart", 0, case_other_sandbox },
	{ "own-pid-namespace", 0, case_own_pid_namespace },
	{ "own-mount-namespace", 0, case_own_mount_namespace },
	{ "no-capabilities", 0, case_no_capabilities },
	{ "no-new-privs", 0, case_no_new_privs },
	{ "own-network-namespace", 0, case_own_network_namespace },
	{ "limits-hold", 0, case_limits_hold },
	{ "userspace-kernel", 0, case_userspace_kernel },
	{ "own-kernel-instance", 0, case_own_kernel_instance },
	{ "no-host-filesystem", 0, case_no_host_filesystem },
};

const conf_suite conf_suite_rung = {
	.name = "rung",
	.inapplicable = rung_inapplicable,
	.cases = rung_cases,
	.n_cases = sizeof(rung_cases) / sizeof(rung_cases[0]),
};
