/*
 * msb_inprocess.h — the test hooks the inprocess plugin exports beside its descriptor.
 *
 * The plugin is a scripted fake (rung `none`: the "sandbox" is this process's memory), so a
 * test needs to see what it was asked and to make it fail on cue. These functions are
 * looked up with dlsym on the plugin's handle — dlopen(path, RTLD_NOW | RTLD_NOLOAD) returns
 * the one the loader opened — and take the instance from msb_backend_instance_of().
 *
 * Recorded event kinds ("what"): "acquire", "release", "dispose", "dispose_scope", "exec",
 * "run_code", "write_file", "remove", "reclaim". The text of each:
 *   acquire / dispose     "scope=S thread=T agent_dir=A call_id=C kind=K" (dispose: no kind)
 *   dispose_scope         "scope=S thread=T"
 *   exec                  the argv joined with single spaces
 *   run_code              the program text
 *   write_file / remove   the absolute guest path
 *   reclaim               the directory
 */
#ifndef MSB_INPROCESS_H
#define MSB_INPROCESS_H

#include <stdbool.h>
#include <stddef.h>

#include <msb/backend.h>

/* How many `what` events were recorded. */
typedef size_t (*msb_inprocess_count_fn)(msb_backend_instance *self, const char *what);
#define MSB_INPROCESS_COUNT "msb_inprocess_count"
/* Copy the i-th recorded `what` into buf (NUL-terminated); false past the end. */
typedef bool (*msb_inprocess_recorded_fn)(msb_backend_instance *self, const char *what, size_t i,
					  char *buf, size_t size);
#define MSB_INPROCESS_RECORDED "msb_inprocess_recorded"
/*
 * Inject a failure, or clear it with value NULL: "acquire" takes an error name
 * ("SandboxBackendError"); "dispose" and "dispose_scope" take a disposal code word
 * ("refused"). Returns 0, or -1 for an unknown `what` or value.
 */
typedef int (*msb_inprocess_inject_fn)(msb_backend_instance *self, const char *what, const char *value);
#define MSB_INPROCESS_INJECT "msb_inprocess_inject"
/* How many sandboxes the instance holds (not disposed). */
typedef size_t (*msb_inprocess_live_fn)(msb_backend_instance *self);
#define MSB_INPROCESS_LIVE "msb_inprocess_live"
/* Report an egress decision through the host's egress_observed, as an enforcing backend would. */
typedef void (*msb_inprocess_egress_fn)(msb_backend_instance *self, const msb_key *key,
					const char *destination, bool allowed);
#define MSB_INPROCESS_EGRESS "msb_inprocess_egress"

#endif
