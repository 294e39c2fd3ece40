/*
 * msb/disk.h — the per-sandbox disk ceiling every shipped boundary reads from `disk:`
 * (backend SDK).
 *
 * A sandbox writes to its own size-limited filesystem, never to the host's: a guest that
 * writes past the ceiling gets ENOSPC inside, and the host's disk cannot fill through it.
 * What holds the ceiling is each boundary's (a tmpfs with size= on process, bwrap and
 * gvisor; the guest's RAM on qemu) — see doc/threat-model.md.
 */
#ifndef MSB_DISK_H
#define MSB_DISK_H

#include <stdint.h>

#include <msb/error.h>
#include <msb/node.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ceiling when `disk:` is absent: 1 GiB. */
#define MSB_DISK_DEFAULT ((uint64_t)1 << 30)
/* The least accepted: 1 MiB (less leaves a guest no room to work). */
#define MSB_DISK_MIN ((uint64_t)1 << 20)

/*
 * Read `disk:` (a size: 512MiB, 2GiB, …) of `config` into *bytes, leaving it as it is when
 * absent. A value below MSB_DISK_MIN — 0 included: there is no "unbounded" — is refused
 * at its position, naming `backend`.
 */
msb_errc msb_disk_read(const msb_node *config, const char *backend, uint64_t *bytes,
		       msb_error *err);

#ifdef __cplusplus
}
#endif
#endif
