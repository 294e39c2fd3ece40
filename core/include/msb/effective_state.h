/*
 * msb/effective_state.h — the effective-state record: what held for each tool's last served
 * call, kept to persist beside a transcript (host API; the C form of the seed's
 * effective_state_middleware writing EffectiveState into AgentSession.state).
 *
 * A span survives with the trace that sampled it; somebody reading a conversation back a
 * month later has the transcript and no trace. So a tool session hands each served acquire's
 * msb_effective_state to its on_effective_state callback, and this record keeps one entry
 * per tool, overwritten each call. It carries posture, never payload: the backend, the rung,
 * the resolved scope, the egress mode with its allowlist, both sides of the capability
 * match, the host tools the sealed registry carried, the image's content address, and the
 * call id — which is its one identifier. No model-chosen text, no labels, no key: this record may be classified
 * differently from the conversation it sits beside. A refused call writes nothing.
 */
#ifndef MSB_EFFECTIVE_STATE_H
#define MSB_EFFECTIVE_STATE_H

#include <stddef.h>

#include <msb/error.h>
#include <msb/observer.h>
#include <msb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct msb_effective_states msb_effective_states;

msb_errc msb_effective_states_new(msb_effective_states **out, msb_error *err);
void msb_effective_states_free(msb_effective_states *record);

/*
 * The callback to give msb_tool_options.on_effective_state, with the record as its ctx.
 * Thread-safe. An entry that cannot be stored (out of memory) removes the tool's previous
 * entry rather than leave a stale one standing for this call.
 */
void msb_effective_states_record(void *record, const char *tool, const msb_effective_state *state);

/* How many tools have an entry. */
size_t msb_effective_states_count(const msb_effective_states *record);

/*
 * The whole record as one JSON object, tool name to entry, tools in name order:
 *   {"<tool>": {"backend": "process", "isolation": "os_process", "scope": "conversation",
 *               "egress": "closed", "egress_allow": [], "capabilities_asked": [...],
 *               "capabilities_declared": [...], "host_tools": [...], "call": "<id>",
 *               "image_digest": "sha256:<hex>" or null}}
 * Appended to `out`.
 */
msb_errc msb_effective_states_json(const msb_effective_states *record, msb_buf *out,
				   msb_error *err);

/* One state as that entry's JSON object, appended to `out`. */
msb_errc msb_effective_state_json(const msb_effective_state *state, msb_buf *out,
				  msb_error *err);

#ifdef __cplusplus
}
#endif
#endif
