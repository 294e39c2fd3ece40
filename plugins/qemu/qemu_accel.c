/*
 * plugins/qemu/qemu_accel.c — choosing KVM or TCG by trying, not by looking.
 *
 * /dev/kvm's presence proves nothing: on a PVM host it exists and opens, and QEMU then
 * aborts setting an MSR or the guest kernel hangs. "auto" therefore boots the probe guest
 * (msb-qemu-init alone, told by msb_probe=1 to print a marker and power off) under KVM with
 * a hard bound, and uses KVM only when the marker arrives. The verdict is cached in the
 * state directory, so the probe's cost is paid once per host, not once per sandbox.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msb/agent.h>

#include "qemu_internal.h"
#include "vminit.h"

extern char **environ;

/* How long a KVM guest may take to print the marker before KVM is judged unusable. */
#define PROBE_MS 5000

/* Boot the probe guest under KVM; true when it printed the marker in time. */
static bool kvm_boots(const qemu_ctx *ctx, const char *state_dir)
{
	char initrd[4200];
	snprintf(initrd, sizeof initrd, "%s/probe.cpio", state_dir);
	if (qemu_guest_initramfs(ctx, NULL, initrd, NULL, 0, true, NULL) != MSB_OK)
		return false;
	char **argv = qemu_launch_argv(ctx, QEMU_ACCEL_KVM, state_dir, initrd, "msb_probe=1", false);
	int out[2];
	if (!argv || pipe2(out, O_CLOEXEC) < 0) {
		free(argv);
		return false;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	int e = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	free(argv);
	close(out[1]);
	bool seen = false;
	if (e == 0) {
		char buf[8192];
		size_t len = 0;
		int64_t deadline = msb_agent_now_ms() + PROBE_MS;
		while (!seen) {
			int64_t left = deadline - msb_agent_now_ms();
			struct pollfd p = { .fd = out[0], .events = POLLIN };
			if (left <= 0 || poll(&p, 1, (int)left) <= 0)
				break;
			ssize_t r = read(out[0], buf + len, sizeof buf - 1 - len);
			if (r <= 0)
				break;
			len += (size_t)r;
			buf[len] = '\0';
			seen = strstr(buf, MSB_QEMU_PROBE_MARKER) != NULL;
			if (len > sizeof buf / 2) { /* keep the tail: the marker may straddle */
				memmove(buf, buf + len - 64, 64);
				len = 64;
			}
		}
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	close(out[0]);
	unlink(initrd);
	return seen;
}

qemu_accel qemu_accel_resolve(const qemu_ctx *ctx, const char *state_dir)
{
	if (ctx->accel != QEMU_ACCEL_AUTO)
		return ctx->accel;
	char cache[4200];
	snprintf(cache, sizeof cache, "%s/accel", state_dir);
	FILE *f = fopen(cache, "re");
	if (f) {
		char word[8] = "";
		bool got = fgets(word, sizeof word, f) != NULL;
		fclose(f);
		if (got && !strncmp(word, "kvm", 3))
			return QEMU_ACCEL_KVM;
		if (got && !strncmp(word, "tcg", 3))
			return QEMU_ACCEL_TCG;
	}
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	bool kvm = fd >= 0;
	if (fd >= 0)
		close(fd);
	kvm = kvm && kvm_boots(ctx, state_dir);
	char tmp[4300];
	snprintf(tmp, sizeof tmp, "%s.%ld", cache, (long)getpid());
	f = fopen(tmp, "we");
	if (f) {
		fputs(kvm ? "kvm\n" : "tcg\n", f);
		if (fclose(f) != 0 || rename(tmp, cache) != 0)
			unlink(tmp);
	}
	return kvm ? QEMU_ACCEL_KVM : QEMU_ACCEL_TCG;
}
