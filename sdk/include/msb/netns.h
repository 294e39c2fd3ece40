/*
 * msb/netns.h — an empty network namespace for a sandbox's closed egress, made ahead.
 *
 * `egress: closed` is a network namespace holding nothing but its own loopback. Making one
 * costs the kernel about 0.55 ms on this kind of machine (every protocol's per-namespace
 * set-up and the loopback device's registration), and bwrap's own --unshare-net paid it at
 * the head of every sandbox's start. It needs nothing of the sandbox it will serve, so it
 * can be made while an earlier start waits for its engine, with a CPU idle, and handed to
 * the next start as an open descriptor: the launch joins it (setns) before the engine
 * runs, and the engine is told to keep the namespace it finds (bwrap's --share-net).
 *
 * A namespace made here is owned by the host's user namespace, so a process in the
 * sandbox's own user namespace holds no capability over it, whatever it holds inside: it
 * can neither configure nor leave it. It is never bind-mounted anywhere: it lives as long
 * as a descriptor or a member holds it, so a host that dies leaves nothing behind.
 */
#ifndef MSB_NETNS_H
#define MSB_NETNS_H

#include <msb/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Bring the calling thread's network namespace's loopback up: 127.0.0.1 and ::1 answer
 * inside and nothing else exists. Returns 0, or -1 with errno. Async-signal-safe.
 */
int msb_netns_loopback_up(void);

/*
 * A new network namespace, its loopback up, as a close-on-exec descriptor in *fd. It is
 * made on a short-lived thread of its own (a namespace is a thread's), so no thread of the
 * host ever leaves its namespace, even for a moment. Needs CAP_SYS_ADMIN in the host's user
 * namespace: refused with MSB_E_OS (errno EPERM) otherwise. errno is set on failure.
 */
msb_errc msb_netns_make(int *fd, msb_error *err);

/*
 * Made ahead: a holder of the next sandbox's namespace, with the policy of msb/cgroup.h's
 * spares. Thread-safe.
 *
 *   new      a holder; makes nothing yet
 *   take     the spare's descriptor, now the caller's to close once its launch has joined
 *            it, or -1 when there is none (the engine then makes its own); one still being
 *            made is waited for. Counts a start. A forked child's copy never hands out its
 *            parent's namespace: two sandboxes would share one
 *   refill   start making the next spare on a thread of its own, and return at once, if
 *            there is none and the instance has started two sandboxes (one start is a
 *            one-shot `msb exec`); once a make is refused (no privilege, no network
 *            namespaces), never again
 *   free     close the spare not taken (waiting for one being made), and free the holder
 */
typedef struct msb_netns_spare msb_netns_spare;
msb_errc msb_netns_spare_new(msb_netns_spare **out, msb_error *err);
int msb_netns_spare_take(msb_netns_spare *s);
void msb_netns_spare_refill(msb_netns_spare *s);
void msb_netns_spare_free(msb_netns_spare *s);

#ifdef __cplusplus
}
#endif
#endif
