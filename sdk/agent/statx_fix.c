/*
 * statx_fix.c — whether this kernel refuses statx's AT_NO_AUTOMOUNT with EINVAL (the gVisor
 * this project runs, 20221219: it knows no automounts and refuses the flag rather than
 * ignore it), which breaks every GNU `ls -l` and `stat`. The agent asks once, at start; on
 * such a kernel it preloads msb-statx.so (statx_shim.c, which says why a shim) into the
 * commands it starts, when the boundary mapped it in at MSB_AGENT_STATX_SHIM. On a kernel
 * that honours the flag nothing changes at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent_internal.h"

#ifndef AT_NO_AUTOMOUNT
#define AT_NO_AUTOMOUNT 0x800
#endif

bool agent_statx_broken(void)
{
#ifdef SYS_statx
	unsigned char buf[256]; /* struct statx, 256 bytes */
	/* 0x7ff: STATX_BASIC_STATS. The flag alone refused, the same call without it served. */
	long with = syscall(SYS_statx, AT_FDCWD, "/", AT_NO_AUTOMOUNT, 0x7ffu, buf);
	int e = errno;
	long without = syscall(SYS_statx, AT_FDCWD, "/", 0, 0x7ffu, buf);
	return with < 0 && e == EINVAL && without == 0;
#else
	return false;
#endif
}

bool agent_statx_shim(void)
{
	/* A mount point the boundary left empty is no shim: preloading it would only warn. */
	struct stat st;
	return agent_statx_broken() && stat(MSB_AGENT_STATX_SHIM, &st) == 0 &&
	       S_ISREG(st.st_mode) && st.st_size > 0 && access(MSB_AGENT_STATX_SHIM, R_OK) == 0;
}
