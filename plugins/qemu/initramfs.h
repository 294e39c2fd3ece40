/*
 * plugins/qemu/initramfs.h — write a cpio "newc" archive, the format the Linux kernel
 * unpacks as an initramfs.
 *
 * The qemu backend assembles its guest's root file system itself (the guest agent as /init,
 * the virtio modules it loads, a module list) instead of depending on the cpio tool: the
 * format is forty lines of code, and writing it here means the set-up installs nothing but
 * the kernel.
 */
#ifndef MSB_QEMU_INITRAMFS_H
#define MSB_QEMU_INITRAMFS_H

#include <stddef.h>
#include <sys/types.h>

#include <msb/error.h>

/* One member. A directory has neither host_path nor data; a file has exactly one. */
typedef struct msb_initramfs_entry {
	const char *guest_path; /* without a leading '/': "init", "lib/modules/virtio.ko" */
	mode_t mode;            /* S_IFDIR|0755, S_IFREG|0755, … */
	const char *host_path;  /* a file's content, read from here */
	const void *data;       /* …or given inline */
	size_t len;
} msb_initramfs_entry;

/*
 * Write `n` entries to `path` atomically (a temporary beside it, then rename), so a VM
 * started concurrently never boots a half-written archive. Parents must come before their
 * children in `entries`.
 */
msb_errc msb_initramfs_write(const char *path, const msb_initramfs_entry *entries, size_t n,
			     msb_error *err);

#endif
