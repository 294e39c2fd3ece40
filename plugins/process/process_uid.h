/*
 * process_uid.h — one unprivileged uid per `process` sandbox, from a configured range
 * (process_uid.c).
 */
#ifndef MSB_PROCESS_UID_H
#define MSB_PROCESS_UID_H

#include <msb/driver.h>
#include <msb/error.h>

/* Where the host-wide records of which uid each live sandbox holds are kept (root only). */
#define PROCESS_UID_REGISTRY "/run/msb/process-uids"

/*
 * Take a uid of [base, base + count) no live sandbox on this host holds, for `box`, and
 * record it in the box's directory ("uid"). A record whose sandbox directory is gone (msb
 * ended between start and disposal) is taken over. Refused, naming the range, when all are
 * in use.
 */
msb_errc process_uid_take(const msb_driver_box *box, long base, long count, long *uid,
			  msb_error *err);
/* Give back what process_uid_take recorded for `box` (nothing when it recorded nothing). */
void process_uid_release(const msb_driver_box *box);
/*
 * The sandbox's directory was renamed from `old_dir` to box->dir (a warm-pool adoption):
 * its uid record names the new one, or the uid would read as a crash's leftover and be
 * handed to a second live sandbox.
 */
msb_errc process_uid_moved(const char *old_dir, const msb_driver_box *box, msb_error *err);

#endif
