/*
 * bwrap_seccomp.h — the syscall filter every bwrap sandbox runs under (see bwrap_seccomp.c
 * for what it blocks and why).
 */
#ifndef MSB_BWRAP_SECCOMP_H
#define MSB_BWRAP_SECCOMP_H

#include <msb/error.h>
#include <msb/types.h>

/* Compile the filter to classic BPF, as `bwrap --seccomp FD` reads it, into `bpf`. */
msb_errc msb_bwrap_seccomp_compile(msb_buf *bpf, msb_error *err);
/*
 * A fresh memfd holding `bpf` at offset 0 (close-on-exec; the launcher moves it to the fd
 * bwrap is told). Fresh per sandbox because a shared one would share its read offset.
 */
msb_errc msb_bwrap_seccomp_fd(const msb_buf *bpf, int *fd, msb_error *err);

#endif
