/*
 * statx_shim.c — msb-statx.so, preloaded by the agent into the commands it starts on a
 * kernel that refuses AT_NO_AUTOMOUNT with EINVAL (agent_statx_broken: the gVisor this
 * project runs, 20221219, on statx and newfstatat alike). GNU `ls -l` and `stat` pass that
 * flag on every call, so every one failed. The flag asks not to trigger an automount, and
 * such a kernel has no automounts to trigger: dropping it changes nothing a program can see.
 *
 * Why not a seccomp filter answering ENOSYS (which the C library falls back from): glibc's
 * fallback hands the same flag to fstatat, which this kernel refuses the same way, and a
 * filter cannot rewrite an argument. The shim is built for the host's C library, so a
 * boundary maps it only into a root made of the host's image (gVisor's host image).
 * Built without sanitizers: it is loaded into programs that have none.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef AT_NO_AUTOMOUNT
#define AT_NO_AUTOMOUNT 0x800
#endif

struct statx;

int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *buf)
{
	return (int)syscall(SYS_statx, dirfd, path, flags & ~AT_NO_AUTOMOUNT, mask, buf);
}

#ifdef SYS_newfstatat
int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	return (int)syscall(SYS_newfstatat, dirfd, path, st, flags & ~AT_NO_AUTOMOUNT);
}

int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
	/* On a 64-bit ABI, struct stat64 is struct stat, and both are the kernel's. */
	return (int)syscall(SYS_newfstatat, dirfd, path, st, flags & ~AT_NO_AUTOMOUNT);
}
#endif
