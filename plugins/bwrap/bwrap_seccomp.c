/*
 * bwrap_seccomp.c — the seccomp filter of the `bwrap` backend.
 *
 * Namespaces and a dropped capability set already stop most of what is listed here; the
 * filter is the second wall, for the day a kernel bug turns one of these entry points into
 * an escape (most container breakouts of the last decade went through one of them). The
 * default is ALLOW: a deny-list of entry points no sandboxed program needs, refused with
 * EPERM so the program sees an ordinary "not permitted" rather than being killed mid-write.
 * bwrap loads it (no_new_privs set) as the very last step before it execs the agent, so its
 * own mount/unshare calls are unaffected and everything in the sandbox runs under it.
 * doc/threat-model.md keeps the same list with the same reasons.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "bwrap_seccomp.h"

/* Refused outright, each with the reason it is an escape or a host-wide effect. */
static const char *const blocked[] = {
	/* A new mount or root view would undo the read-only image and the private /tmp. */
	"mount", "umount", "umount2", "pivot_root", "chroot",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
	/* New namespaces re-grant capabilities inside a fresh user namespace: the classic
	 * springboard to kernel attack surface (CVE-2022-0185 and its kin). */
	"unshare", "setns",
	/* The kernel keyring is not namespaced: keys are a cross-sandbox channel. */
	"keyctl", "add_key", "request_key",
	/* Reading or steering another process's memory. */
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
	/* Copying a file descriptor out of another process (the agent's sockets above all). */
	"pidfd_getfd",
	/* Loading code into the kernel, or replacing it. */
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "bpf",
	/* Large, frequently-broken attack surface no workload here needs. */
	"perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
	/* Open a host file by handle, bypassing the mount namespace (the "shocker" escape). */
	"open_by_handle_at", "name_to_handle_at",
	/* Raw port I/O. */
	"iopl", "ioperm",
	/* Host-wide effects: swap, power, process accounting, the clock, quotas, the log. */
	"swapon", "swapoff", "reboot", "acct", "settimeofday", "clock_settime", "clock_adjtime",
	"adjtimex", "quotactl", "syslog", "vhangup", "lookup_dcookie", "uselib", "nfsservctl",
	/* clone3 passes its flags in memory a filter cannot read: answer ENOSYS (below) so libc
	 * falls back to clone, whose flags the filter does read. */
};

/* Namespace flags refused in clone(2)'s flags (the same reason as unshare). */
static const unsigned long clone_ns_flags[] = {
	CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
	CLONE_NEWCGROUP,
};

/*
 * Socket families a sandbox may open: local sockets, IP (inside its own, empty network
 * namespace) and netlink (routing queries about that namespace). Everything else is refused,
 * AF_VSOCK above all: a vsock reaches the hypervisor host directly and is not confined by a
 * network namespace, so it would open egress that `closed` promises is shut.
 */
static bool family_allowed(int family)
{
	return family == AF_UNIX || family == AF_INET || family == AF_INET6 || family == AF_NETLINK;
}

static msb_errc add(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n,
		    const struct scmp_arg_cmp *cmp, msb_error *err)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return MSB_OK; /* not a syscall on this architecture: nothing to block */
	int rc = seccomp_rule_add_array(ctx, action, nr, n, cmp);
	if (rc < 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, -rc, "bwrap: seccomp: cannot add a rule for %s",
					   name);
	return MSB_OK;
}

static msb_errc add_rules(scmp_filter_ctx ctx, msb_error *err)
{
	msb_errc rc = MSB_OK;
	for (size_t i = 0; !rc && i < sizeof blocked / sizeof *blocked; i++)
		rc = add(ctx, SCMP_ACT_ERRNO(EPERM), blocked[i], 0, NULL, err);
	if (!rc)
		rc = add(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, err);
	for (size_t i = 0; !rc && i < sizeof clone_ns_flags / sizeof *clone_ns_flags; i++) {
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, clone_ns_flags[i], clone_ns_flags[i]);
		rc = add(ctx, SCMP_ACT_ERRNO(EPERM), "clone", 1, &c, err);
	}
	/* Masked to 32 bits: the kernel reads an int, whatever the register's upper half holds.
	 * Above AF_NETLINK (the highest allowed) one unmasked comparison covers every family,
	 * and refuses a value with stray upper bits too, which is the safe direction. */
	for (int family = 0; !rc && family <= AF_NETLINK; family++) {
		if (family_allowed(family))
			continue;
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, (scmp_datum_t)family);
		rc = add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 1, &c, err);
		if (!rc)
			rc = add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socketpair", 1, &c, err);
	}
	struct scmp_arg_cmp above = SCMP_A0(SCMP_CMP_GT, AF_NETLINK);
	if (!rc)
		rc = add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 1, &above, err);
	if (!rc)
		rc = add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socketpair", 1, &above, err);
	/* Typing into the controlling terminal's input queue (TIOCSTI) or the console's
	 * (TIOCLINUX) runs commands outside the sandbox; --new-session is the first wall. */
	const unsigned long ttys[] = { TIOCSTI, TIOCLINUX };
	for (size_t i = 0; !rc && i < 2; i++) {
		struct scmp_arg_cmp c = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, ttys[i]);
		rc = add(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, &c, err);
	}
	/* Personalities that weaken the kernel's own defences: a mapping at address zero (the
	 * old NULL-dereference exploit aid) and executable-by-default memory. The query value
	 * 0xffffffff carries every bit, so bit 31 (never a real personality flag) is in the mask
	 * and must be clear for the rule to match: the query stays allowed. */
	const unsigned long persona[] = { MMAP_PAGE_ZERO, READ_IMPLIES_EXEC };
	for (size_t i = 0; !rc && i < 2; i++) {
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, persona[i] | 0x80000000u, persona[i]);
		rc = add(ctx, SCMP_ACT_ERRNO(EPERM), "personality", 1, &c, err);
	}
	return rc;
}

msb_errc msb_bwrap_seccomp_compile(msb_buf *bpf, msb_error *err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return msb_error_set(err, MSB_E_BACKEND, "bwrap: seccomp: cannot create a filter");
	/* A binary search over syscall numbers rather than a linear walk: every syscall the
	 * sandbox makes pays for the filter, and warm exec is measured in microseconds. */
	seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	msb_errc rc = add_rules(ctx, err);
	int fd = -1;
	if (!rc) {
		fd = memfd_create("msb-seccomp-export", MFD_CLOEXEC);
		if (fd < 0)
			rc = msb_error_set_errno(err, MSB_E_OS, errno, "bwrap: seccomp: memfd_create");
	}
	if (!rc) {
		int e = seccomp_export_bpf(ctx, fd);
		if (e < 0)
			rc = msb_error_set_errno(err, MSB_E_BACKEND, -e, "bwrap: seccomp: cannot export the filter");
	}
	seccomp_release(ctx);
	off_t end = rc ? -1 : lseek(fd, 0, SEEK_END);
	if (!rc && end <= 0)
		rc = msb_error_set(err, MSB_E_BACKEND, "bwrap: seccomp: the exported filter is empty");
	if (!rc) {
		unsigned char chunk[4096];
		ssize_t n;
		lseek(fd, 0, SEEK_SET);
		while (!rc && (n = read(fd, chunk, sizeof chunk)) > 0)
			rc = msb_buf_append(bpf, chunk, (size_t)n, err);
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

msb_errc msb_bwrap_seccomp_fd(const msb_buf *bpf, int *out, msb_error *err)
{
	int fd = memfd_create("msb-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return msb_error_set_errno(err, MSB_E_OS, errno, "bwrap: seccomp: memfd_create");
	size_t done = 0;
	while (done < bpf->len) {
		ssize_t n = write(fd, bpf->data + done, bpf->len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int saved = errno;
			close(fd);
			return msb_error_set_errno(err, MSB_E_OS, saved, "bwrap: seccomp: writing the filter");
		}
		done += (size_t)n;
	}
	lseek(fd, 0, SEEK_SET);
	*out = fd;
	return MSB_OK;
}
