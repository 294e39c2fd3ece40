/*
 * plugins/qemu/qemu_launch.c — QEMU's command line and running it.
 *
 * The machine is `-M microvm` with nothing QEMU would add on its own (-nodefaults,
 * -no-user-config, no option ROMs): no firmware, no PCI, and above all no network device —
 * `egress: closed` here is the absence of any NIC, not a rule that could be got around. The
 * one way in is a few virtio-serial ports, each bound to a unix socket in the sandbox's
 * directory.
 * QEMU's own seccomp sandbox is on, denying it resource control and obsolete system calls,
 * and run as root it drops to nobody: a guest that escapes into QEMU lands in a process that
 * can do little.
 *
 * Under TCG the guest kernel cannot calibrate its TSC against a PIT whose ticks arrive late
 * on a loaded host, and hangs at boot ("Marking TSC unstable"); TCG's TSC runs at the host's
 * rate, so the host's rate is handed over on the command line (tsc_early_khz). Also under
 * TCG only, the guest kernel's speculation mitigations are off: every one of them (page table
 * isolation above all) turns into softmmu TLB flushes that make each system call dear, and
 * they protect guest processes from each other inside a VM that holds one tenant — the
 * boundary is the VM, which they do not touch.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msb/agent.h>

#include "qemu_internal.h"
#include "vminit.h"

extern char **environ;

/* The host's TSC rate in kHz, from /proc/cpuinfo; 0 when unknown. */
static unsigned long host_tsc_khz(void)
{
	static unsigned long khz;
	if (khz)
		return khz;
	FILE *f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return 0;
	char line[256];
	double mhz = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "cpu MHz : %lf", &mhz) == 1)
			break;
	fclose(f);
	khz = (unsigned long)(mhz * 1000.0);
	return khz;
}

#define MAX_ARGS (48 + 4 * MSB_QEMU_PORTS)

char **qemu_launch_argv(const qemu_ctx *ctx, qemu_accel accel, const char *dir,
			const char *initrd, const char *extra_append, bool daemonize)
{
	return qemu_launch_argv_ex(ctx, accel, dir, initrd, extra_append, daemonize, NULL);
}

char **qemu_launch_argv_ex(const qemu_ctx *ctx, qemu_accel accel, const char *dir,
			   const char *initrd, const char *extra_append, bool daemonize,
			   const qemu_launch_extra *x)
{
	char machine[160], memobj[4400], qmp[4300];
	char mem[32], kernel[4200], append[512], serial[4200], pidfile[4200];
	char chardev[MSB_QEMU_PORTS][4300], port[MSB_QEMU_PORTS][96], vser[64];
	snprintf(mem, sizeof mem, "%lluM", (unsigned long long)(ctx->memory / (1024 * 1024)));
	snprintf(kernel, sizeof kernel, "%s/vmlinuz", ctx->guest_dir);
	/*
	 * Room for all of it: at 64 bytes this was cut to "mitigations=" (an empty value the
	 * kernel rejects, leaving its default mitigations on).
	 */
	char tsc[160] = "";
	if (accel == QEMU_ACCEL_TCG && host_tsc_khz())
		snprintf(tsc, sizeof tsc, " tsc_early_khz=%lu tsc=reliable no_timer_check mitigations=off",
			 host_tsc_khz());
	/* MSB_QEMU_VERBOSE keeps the guest kernel's boot log (console.log), for diagnosis. */
	const char *verbose = getenv("MSB_QEMU_VERBOSE");
	snprintf(append, sizeof append, "console=ttyS0 %s panic=-1%s%s%s",
		 verbose && *verbose ? "printk.time=1" : "quiet", tsc,
		 extra_append ? " " : "", extra_append ? extra_append : "");
	const char *a[MAX_ARGS];
	size_t n = 0;
	a[n++] = ctx->qemu;
	a[n++] = "-M";
	/*
	 * A template's RAM is a file (issue 22): shared while the template is made, so the
	 * saved state can leave it out (x-ignore-shared), and mapped privately by each clone, so
	 * the clones share its pages read-only and copy only the pages they write.
	 */
	snprintf(machine, sizeof machine, "microvm,x-option-roms=off,isa-serial=on%s",
		 x && (x->mem_path || x->ram_backend) ? ",memory-backend=msb.ram" : "");
	a[n++] = machine;
	if (x && x->ram_backend && !x->mem_path) {
		snprintf(memobj, sizeof memobj, "memory-backend-ram,id=msb.ram,size=%lluM",
			 (unsigned long long)(ctx->memory / (1024 * 1024)));
		a[n++] = "-object";
		a[n++] = memobj;
	}
	if (x && x->mem_path) {
		snprintf(memobj, sizeof memobj, "memory-backend-file,id=msb.ram,size=%lluM,"
			 "mem-path=%s,share=%s", (unsigned long long)(ctx->memory / (1024 * 1024)),
			 x->mem_path, x->mem_share ? "on" : "off");
		a[n++] = "-object";
		a[n++] = memobj;
	}
	if (x && x->qmp) {
		snprintf(qmp, sizeof qmp, "unix:%s/qmp.sock,server=on,wait=off", dir);
		a[n++] = "-qmp";
		a[n++] = qmp;
	}
	if (x && x->incoming) {
		a[n++] = "-incoming";
		a[n++] = "defer";
	}
	a[n++] = "-nodefaults";
	a[n++] = "-no-user-config";
	a[n++] = "-display";
	a[n++] = "none";
	a[n++] = "-nic";
	a[n++] = "none";
	a[n++] = "-sandbox";
	a[n++] = "on,obsolete=deny,resourcecontrol=deny";
	a[n++] = "-accel";
	a[n++] = accel == QEMU_ACCEL_KVM ? "kvm" : "tcg";
	a[n++] = "-cpu";
	a[n++] = accel == QEMU_ACCEL_KVM ? "host" : "max";
	a[n++] = "-m";
	a[n++] = mem;
	a[n++] = "-smp";
	a[n++] = "1";
	a[n++] = "-kernel";
	a[n++] = kernel;
	a[n++] = "-initrd";
	a[n++] = initrd;
	a[n++] = "-append";
	a[n++] = append;
	a[n++] = "-no-reboot";
	/*
	 * As root, QEMU drops to nobody once it has opened its files and sockets: a guest that
	 * escaped into QEMU would hold no privilege on the host.
	 */
	if (geteuid() == 0) {
		a[n++] = "-runas";
		a[n++] = "nobody";
	}
	if (daemonize) {
		snprintf(serial, sizeof serial, "file:%s/console.log", dir);
		for (int i = 0; i < MSB_QEMU_PORTS; i++) {
			snprintf(chardev[i], sizeof chardev[i],
				 "socket,id=agent%d,path=%s/vm%d.sock,server=on,wait=off", i, dir, i);
			snprintf(port[i], sizeof port[i], "virtserialport,chardev=agent%d,name=%s.%d", i,
				 MSB_QEMU_PORT_NAME, i);
		}
		snprintf(pidfile, sizeof pidfile, "%s/qemu.pid", dir);
		/*
		 * Exactly the ports the guest uses (its number 0 is reserved for a console): by
		 * default the device offers 31, and the guest's driver sets up two virtqueues for
		 * each at probe, slow under TCG and on every boot's critical path.
		 */
		snprintf(vser, sizeof vser, "virtio-serial-device,max_ports=%d", MSB_QEMU_PORTS + 1);
		a[n++] = "-serial";
		a[n++] = serial;
		a[n++] = "-device";
		a[n++] = vser;
		for (int i = 0; i < MSB_QEMU_PORTS; i++) {
			a[n++] = "-chardev";
			a[n++] = chardev[i];
			a[n++] = "-device";
			a[n++] = port[i];
		}
		a[n++] = "-pidfile";
		a[n++] = pidfile;
		a[n++] = "-daemonize";
	} else {
		a[n++] = "-serial";
		a[n++] = "stdio";
	}
	a[n] = NULL;
	size_t bytes = (n + 1) * sizeof(char *);
	for (size_t i = 0; i < n; i++)
		bytes += strlen(a[i]) + 1;
	char **out = malloc(bytes);
	if (!out)
		return NULL;
	char *p = (char *)(out + n + 1);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(a[i]) + 1;
		memcpy(p, a[i], len);
		out[i] = p;
		p += len;
	}
	out[n] = NULL;
	return out;
}

msb_errc qemu_launch_run(char **argv, const char *err_path, int *status, msb_error *err)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	pid_t pid;
	int e = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e != 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, e, "backend qemu: cannot run %s",
					   argv[0]);
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return msb_error_set_errno(err, MSB_E_BACKEND, errno,
						   "backend qemu: waiting for %s", argv[0]);
	return MSB_OK;
}

bool qemu_recorded_gone_within(const msb_driver_box *box, const char *pid_path, int ms)
{
	msb_driver_box b = *box;
	b.pid_path = pid_path;
	pid_t pid = msb_driver_read_live_pid(&b);
	if (!pid)
		return true;
	/*
	 * Woken by the exit itself (a pidfd turns readable), not a 5 ms poll: disposal waits on
	 * this after the guest powers off. The pid is checked again with the fd held, so the fd
	 * is the recorded process and not one that took its number since.
	 */
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd >= 0 && msb_driver_read_live_pid(&b) == pid) {
		int64_t deadline = msb_agent_now_ms() + ms;
		int n;
		do {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			int64_t left = deadline - msb_agent_now_ms();
			n = poll(&p, 1, left > 0 ? (int)left : 0);
		} while (n < 0 && errno == EINTR);
		close(fd);
		return n > 0 || !msb_driver_read_live_pid(&b);
	}
	if (fd >= 0)
		close(fd);
	/* No pidfd (a kernel before 5.3): look every 5 ms. */
	for (int waited = 0;; waited += 5) {
		if (!msb_driver_read_live_pid(&b))
			return true;
		if (waited >= ms)
			return false;
		nanosleep(&(struct timespec){ 0, 5 * 1000 * 1000 }, NULL);
	}
}
