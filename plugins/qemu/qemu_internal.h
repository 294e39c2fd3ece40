/*
 * plugins/qemu/qemu_internal.h — what the qemu backend's files share: its configuration, and
 * the steps of starting a microVM (guest assembly, acceleration, launch).
 */
#ifndef MSB_QEMU_INTERNAL_H
#define MSB_QEMU_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <msb/driver.h>
#include <msb/image.h>

/* The backend's own `config:` keys, beside the driver's. */
#define QEMU_CONFIG_KEYS "guest_dir", "init", "relay", "qemu", "memory", "accel", "boot_timeout", \
	"images_dir", "mkfs_erofs", "image_run_code"

typedef enum qemu_accel { QEMU_ACCEL_AUTO = 0, QEMU_ACCEL_KVM, QEMU_ACCEL_TCG } qemu_accel;

typedef struct qemu_ctx {
	char *guest_dir;     /* fetch-guest.sh's DEST: vmlinuz, modules/, busybox, busybox.applets */
	char *init_path;     /* the static msb-qemu-init, the guest's /init */
	char *relay_path;    /* msb-qemu-relay, each VM's relay on the host (relay.h) */
	char *qemu;          /* qemu-system-x86_64 */
	uint64_t memory;     /* guest RAM, bytes */
	qemu_accel accel;
	double boot_timeout; /* seconds from launch to the agent's HELLO */
	char *images_dir;    /* the image store a spec's image other than busybox comes from */
	char *mkfs_erofs;    /* erofs-utils' mkfs.erofs, which builds an image's block device */
	struct qemu_image_run_code *image_run_code; /* image_run_code: image → run_code argv */
	size_t n_image_run_code;
	msb_images env_images; /* .store = images_dir: the store images' Env, kept (msb/image.h) */
} qemu_ctx;

/* One image_run_code: entry (the image's own runtime, where `run_code:` is busybox's sh). */
typedef struct qemu_image_run_code {
	char *image;
	char **argv; /* NULL-terminated */
} qemu_image_run_code;

/* ---- qemu_guest.c: the initramfs ----------------------------------------------------- */

/*
 * Write the guest's initramfs to `path`: msb-qemu-init as /init, the agent, busybox and its
 * applet links, the virtio modules and their load order, and `agent_args` (the agent's argv,
 * NUL-separated, `args_len` bytes). With `probe_only`, /init alone (the KVM probe's guest).
 */
msb_errc qemu_guest_initramfs(const qemu_ctx *ctx, const char *agent_path, const char *path,
			      const char *agent_args, size_t args_len, bool probe_only,
			      msb_error *err);

/*
 * The same, for a guest whose root is a store image on a virtio-blk disk: the block, erofs
 * and overlay modules are added to the load list, and /msb/image tells msb-qemu-init to
 * mount the disk under an overlay and run the agents inside it.
 */
msb_errc qemu_guest_initramfs_image(const qemu_ctx *ctx, const char *agent_path,
				    const char *path, const char *agent_args, size_t args_len,
				    msb_error *err);

/* ---- qemu_image.c: a store image as a read-only disk ---------------------------------- */

/*
 * The erofs block image of store image `image` (heap path into *block), built on first use
 * and cached per image digest. MSB_E_VALUE naming the store when the image is not there.
 */
msb_errc qemu_image_block(const qemu_ctx *ctx, const char *image, char **block, msb_error *err);
/*
 * `argv` with the read-only drive for `block` appended: a new pointer array (free() it, and
 * then `argv` as before); its strings point into `argv` except the drive option, which is
 * out[n + 1] (free() it too). NULL when out of memory.
 */
char **qemu_image_argv(char **argv, const char *block);
/*
 * Read `image_run_code: {python: [python3], …}` (absent: none) into ctx; freed by
 * qemu_image_run_code_free.
 */
msb_errc qemu_image_run_code_read(qemu_ctx *ctx, const msb_node *config, msb_error *err);
/* The run_code argv for `image`, or NULL (the backend's `run_code:`). */
const char *const *qemu_image_run_code_for(const qemu_ctx *ctx, const char *image);
void qemu_image_run_code_free(qemu_ctx *ctx);

/* ---- qemu_accel.c: which accelerator ----------------------------------------------- */

/*
 * The accelerator to use. "auto" boots a probe guest under KVM with a bound and caches the
 * verdict in <state_dir>/accel, because on some hosts (a PVM host among them) /dev/kvm
 * exists and opens, yet an ordinary guest kernel hangs or QEMU aborts under it.
 */
qemu_accel qemu_accel_resolve(const qemu_ctx *ctx, const char *state_dir);

/* ---- qemu_launch.c: QEMU itself ---------------------------------------------------- */

/*
 * The qemu argv for one VM (NULL-terminated, one allocation: free() it). `daemonize` with
 * pid/socket/console paths under `dir`; otherwise a foreground VM whose console is stdout
 * (the probe and the benchmark's bare boot).
 */
char **qemu_launch_argv(const qemu_ctx *ctx, qemu_accel accel, const char *dir,
			const char *initrd, const char *extra_append, bool daemonize);
/* Run `argv` to completion with stdin from /dev/null and stderr into `err_path`. */
msb_errc qemu_launch_run(char **argv, const char *err_path, int *status, msb_error *err);
/* Wait up to `ms` for the process recorded in `pid_path` to be gone (a pidfd where the kernel has one). */
bool qemu_recorded_gone_within(const msb_driver_box *box, const char *pid_path, int ms);

#endif
