/*
 * libc_compat.h — the system calls the SDK's code uses that a C library may not wrap.
 *
 * msb-agent is linked against musl where Debian's musl-tools is installed (configure.ac
 * says why), and musl 1.2.3, Debian 12's, wraps neither close_range nor renameat2. glibc
 * has both since 2.34 (2.28 for renameat2); with it this header adds nothing.
 */
#ifndef MSB_LIBC_COMPAT_H
#define MSB_LIBC_COMPAT_H

#ifndef __GLIBC__
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static inline int msb_compat_close_range(unsigned first, unsigned last, int flags)
{
	return (int)syscall(SYS_close_range, first, last, flags);
}
#define close_range msb_compat_close_range

static inline int msb_compat_renameat2(int old_dir, const char *old_path, int new_dir,
				       const char *new_path, unsigned flags)
{
	return (int)syscall(SYS_renameat2, old_dir, old_path, new_dir, new_path, flags);
}
#define renameat2 msb_compat_renameat2
#endif

#endif
