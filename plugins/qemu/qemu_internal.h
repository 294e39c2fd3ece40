/*
 * plugins/qemu/qemu_internal.h — what the qemu backend's files share: its configuration, and
 * the steps of starting a microVM (guest assembly, acceleration, launch).
 */
#ifndef MSB_QEMU_INTERNAL_H
#define MSB_QEMU_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <msb/backend.h>
#include <msb/driver.h>
#include <msb/image.h>

/* The backend's own `config:` keys, beside the driver's. */
#define QEMU_CONFIG_KEYS "guest_dir", "init", "relay", "qemu", "memory", "accel", "boot_timeout", \
	"images_dir", "mkfs_erofs", "image_run_code", \
	"template", "template_warmup", "template_share_ram"

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
	bool template_on;         /* template: clone a saved, booted guest instead of booting */
	bool template_share_ram;  /* template_share_ram: clones map the template's RAM privately */
	char **template_warmup;   /* template_warmup: sh commands run before the save */
	msb_host host;            /* the host's log, for the line a template fallback writes */
	bool has_host;
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
/* What a template's VM adds to the command line (qemu_template.c). */
typedef struct qemu_launch_extra {
	const char *mem_path; /* RAM as this file (memory-backend-file); NULL: anonymous RAM */
	bool mem_share;       /* share=on (the template being made) or off (a clone) */
	bool qmp;             /* a monitor at <dir>/qmp.sock */
	bool incoming;        /* -incoming defer: wait for migrate-incoming */
	bool ram_backend;     /* no mem_path: RAM as memory-backend-ram msb.ram (a clone's fork) */
} qemu_launch_extra;
char **qemu_launch_argv_ex(const qemu_ctx *ctx, qemu_accel accel, const char *dir,
			   const char *initrd, const char *extra_append, bool daemonize,
			   const qemu_launch_extra *x);
/* Run `argv` to completion with stdin from /dev/null and stderr into `err_path`. */
msb_errc qemu_launch_run(char **argv, const char *err_path, int *status, msb_error *err);
/* Wait up to `ms` for the process recorded in `pid_path` to be gone (a pidfd where the kernel has one). */
bool qemu_recorded_gone_within(const msb_driver_box *box, const char *pid_path, int ms);

/* ---- qemu_template.c: templates (issue 22) ------------------------------------------ */

/* What a template is made of, beside ctx: the guest's initramfs inputs and its disk. */
typedef struct qemu_template_input {
	const char *agent_path;
	const char *agent_args; /* NUL-separated, args_len bytes */
	size_t args_len;
	const char *block;      /* the store image's disk, or NULL */
} qemu_template_input;

/*
 * Start `box` as a clone of the template for `in`, making the template first when there is
 * none. MSB_OK: the clone runs, its relay answered and it took its own identity. Any other
 * return means no clone runs (nothing is left of it) and `why` says why; the caller boots.
 */
msb_errc qemu_template_start(const qemu_ctx *ctx, const msb_driver_box *box,
			     const qemu_template_input *in, char *why, size_t why_size);
/* The boot path's steps the template reuses (qemu.c). */
msb_errc qemu_launch_box(const qemu_ctx *ctx, const msb_driver_box *box, const char *initrd,
			 const char *block, const qemu_launch_extra *x, msb_error *err);
msb_errc qemu_start_relay(const qemu_ctx *ctx, const msb_driver_box *box, msb_error *err);
/* The same, returning with `all` only once every agent answered its HELLO. */
msb_errc qemu_start_relay_all(const qemu_ctx *ctx, const msb_driver_box *box, bool all,
			      msb_error *err);
void qemu_kill_box(const msb_driver_box *box);
void qemu_stop_relay(const msb_driver_box *box);
/* Say why no clone serves `box` (a log line, <box>/template.fallback) before it boots. */
void qemu_template_fallback(const qemu_ctx *ctx, const msb_driver_box *box, const char *why);
/*
 * The VM steps a template and a snapshot share: save a running VM's whole state to the file
 * `state` (the RAM left out with `ignore_shared`, it being a shared file); start `box` from
 * a state (its RAM `ram` mapped privately, or in the state when NULL); then its relay and
 * its own identity.
 */
msb_errc qemu_vm_save(const qemu_ctx *ctx, const msb_driver_box *box, const char *state,
		      bool ignore_shared, msb_error *err);
msb_errc qemu_vm_restore(const qemu_ctx *ctx, const msb_driver_box *box, const char *initrd,
			 const char *block, const char *ram, bool ram_backend, const char *state,
			 msb_error *err);
/* The SHA-256 of a file's contents as 64 hex digits (false: unreadable). */
bool qemu_file_sha256(const char *path, char out[65]);
/* Run a VM that a save left stopped. */
msb_errc qemu_vm_cont(const msb_driver_box *box, msb_error *err);

/* ---- qemu_snapshot.c: the snapshot capability (issue 22) ----------------------------- */

/*
 * What a running VM is made of, beside its config, recorded at its start in <box>/vm.kind:
 * whether its RAM is the memory-backend msb.ram (a template clone) and its store image's
 * disk. A snapshot copies it; a fork needs the same machine to load the state into.
 */
msb_errc qemu_vm_kind_write(const char *dir, bool ram_backend, const char *block, msb_error *err);
msb_errc qemu_snapshot_save(void *ctx, const msb_driver_box *box, const char *snap_dir,
			    msb_error *err);
msb_errc qemu_snapshot_start(const qemu_ctx *ctx, const msb_driver_box *box, msb_error *err);
msb_errc qemu_vm_clone_ready(const qemu_ctx *ctx, const msb_driver_box *box, msb_error *err);

/* ---- qemu_egress.c: `egress: allowlist` over a virtio-serial port of its own -------------- */

/* The egress port's virtio-serial name: the guest's forwarder opens it by this name. */
#define QEMU_EGRESS_PORT "msb.egress"
typedef struct qemu_egress_args {
	char chardev[4300];
} qemu_egress_args;
/* `argv` with the egress port's device and chardev (<dir>/egress.sock) appended: free()
 * the result alone (its strings are argv's, static, or in `ea`). NULL: out of memory. */
char **qemu_egress_argv(char **argv, const char *dir, qemu_egress_args *ea);
/* Once QEMU runs: msb-qemu-relay's egress mode on the port, to box->egress_socket; its pid
 * in <dir>/egress.pid. */
msb_errc qemu_egress_start(const qemu_ctx *ctx, const msb_driver_box *box, msb_error *err);
/* SIGKILL the egress relay, if one is recorded, and see it gone. */
bool qemu_egress_stop(const msb_driver_box *box, msb_disposal_failure *failure);

#endif
