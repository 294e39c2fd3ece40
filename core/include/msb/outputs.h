/*
 * msb/outputs.h — getting files back: declared outputs, collect_outputs and sinks (host API).
 *
 * A workload's artifacts come back by declaration (msb_spec.declared_outputs), never by
 * discovery, and land wherever the host's sink puts them; msb decides only what reaches the
 * sink and when. msb_collect_outputs runs in the seed's phase order, which is part of the
 * contract: (1) everything the declaration alone decides — a sink for anything that lands,
 * a valid name for every output, no two landing names that collide — before the sandbox is
 * touched; (2) every declared output stat-ed and capped against all three fields of
 * spec->files_out; (3) every landing output read; (4) only then delivered, in declaration
 * order. Delivery is a push nothing can take back, so a refusal after the first deliver
 * could not leave the host as it found it.
 */
#ifndef MSB_OUTPUTS_H
#define MSB_OUTPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/error.h>
#include <msb/observer.h>
#include <msb/sandbox.h>
#include <msb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ceiling validate_artifact_name enforces, in UTF-8 bytes: destinations count bytes. */
#define MSB_MAX_ARTIFACT_NAME_BYTES 255

/*
 * The narrow invariant every name crossing this boundary meets, and nothing more: non-empty,
 * relative, no backslash, no ".." segment, no empty or "." segment, no ASCII control
 * character, valid UTF-8, at most MSB_MAX_ARTIFACT_NAME_BYTES. Lexical only — it says nothing
 * about what already sits where the name resolves, which is the sink's to confine.
 * MSB_E_VALUE naming the rule broken.
 */
msb_errc msb_validate_artifact_name(const char *name, msb_error *err);

/*
 * The key two landing names must not share: NFC, lower-cased (libunistring's u8_tolower,
 * not a case fold — 'ß' and "ss" are distinct files on every destination). Two names with
 * one key are one file on Windows and default macOS. *key is heap-allocated.
 */
msb_errc msb_artifact_collision_key(const char *name, char **key, msb_error *err);

/* One artifact on its way to a sink; everything borrowed for the duration of deliver. */
typedef struct msb_artifact {
	const char *name;          /* validated, relative, spelled as the sink asked (NFC unless NONE) */
	const unsigned char *content;
	size_t len;
	const char *kind;          /* the spec's kind */
	const char *media_type;    /* declared, never sniffed; may be NULL */
	const char *call_id;       /* the host-minted call id; NULL unless the caller gave one */
} msb_artifact;

/*
 * Where one artifact landed. `display` is the one line the model may be shown; `handle` is
 * the host's own reference (a path, a URL with a token in it) and nothing in msb renders it.
 * All strings heap-allocated; `handle` and `media_type` may be NULL.
 */
typedef struct msb_landed_artifact {
	char *name;
	char *media_type;
	char *display;
	char *handle;
} msb_landed_artifact;

typedef struct msb_landed_artifacts {
	msb_landed_artifact *items;
	size_t len;
} msb_landed_artifacts;

void msb_landed_artifact_free(msb_landed_artifact *landed);
void msb_landed_artifacts_free(msb_landed_artifacts *list);

/* What a sink wants done to a name before it sees it. */
typedef enum msb_name_normalization {
	MSB_NAME_NFC = 0, /* compose to NFC, the form all three filesystems recognise alike */
	MSB_NAME_NONE,    /* byte-exact; collision detection still compares normalised forms */
} msb_name_normalization;

/*
 * Where a host lands artifacts. Callers allocate it, so it carries its size (start from
 * MSB_OUTPUT_SINK_INIT). `deliver` refuses by returning a code — never by silently dropping —
 * and on success fills `landed` (heap strings). `per_call` says the sink files artifacts
 * under the call id, so msb_collect_outputs requires one. `destroy` (may be NULL) frees ctx
 * when msb_output_sink_free is called on a sink made by a constructor.
 */
typedef struct msb_output_sink {
	uint32_t struct_size;
	void *ctx;
	bool per_call;
	msb_name_normalization normalization;
	msb_errc (*deliver)(void *ctx, const msb_artifact *artifact, msb_landed_artifact *landed,
			    msb_error *err);
	void (*destroy)(void *ctx);
} msb_output_sink;

#define MSB_OUTPUT_SINK_INIT { (uint32_t)sizeof(msb_output_sink), NULL, false, MSB_NAME_NFC, NULL, NULL }

/* Free a sink a constructor returned (calls destroy, then frees the struct). NULL is fine. */
void msb_output_sink_free(msb_output_sink *sink);

/* What the file-system sink does about a destination that already exists. */
typedef enum msb_landing_existing {
	MSB_LANDING_REFUSE = 0, /* exclusive create: SandboxLandingExists */
	MSB_LANDING_REPLACE,    /* temp + rename over it, still confined */
} msb_landing_existing;

typedef struct msb_file_system_sink_options {
	uint32_t struct_size;
	msb_landing_existing existing;
	/*
	 * The model-visible line, as a template: "{name}", "{bytes}" and "{media_type}" are
	 * replaced, "{{" and "}}" are literal braces. NULL: "{name} ({bytes} bytes)". The host
	 * path never appears in it, because the display reaches the transcript.
	 */
	const char *display;
	/* fsync each artifact before it is renamed into place (durable, slower). */
	bool sync;
} msb_file_system_sink_options;

#define MSB_FILE_SYSTEM_SINK_OPTIONS_INIT \
	{ (uint32_t)sizeof(msb_file_system_sink_options), MSB_LANDING_REFUSE, NULL, false }

/*
 * A sink writing each artifact under `root` (an existing directory, opened once here as a
 * directory fd). Every destination is resolved by the kernel beneath that fd without
 * following any link (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or the O_NOFOLLOW walk),
 * so there is no gap between checking a destination and writing it: anything leaving root —
 * a link planted at any level, before or during delivery — is SandboxLandingNotConfined.
 * Parents a nested name needs are created. An existing destination is SandboxLandingExists
 * unless MSB_LANDING_REPLACE. The refusal arrives per artifact, during delivery, so a
 * collection whose third name is occupied leaves the first two landed. `options` may be NULL.
 * handle is the destination's absolute path.
 */
msb_errc msb_file_system_sink_new(const char *root, const msb_file_system_sink_options *options,
				  msb_output_sink **out, msb_error *err);

/* Whether `spec` sends anything to a sink: a LAND output, or names given at call time. */
bool msb_spec_lands_artifacts(const msb_spec *spec);

/*
 * msb_collect_outputs options; start from MSB_COLLECT_OPTIONS_INIT. `outputs` are
 * declarations settled at call time, collected in addition to spec->declared_outputs and
 * counted against the same caps — refused unless spec->outputs_named_at_call_time. `call_id`
 * is required by a per_call sink. `observer` (may be NULL) receives OutputsCollected, landed
 * or refused, carrying `key` and `call_id`.
 */
typedef struct msb_collect_options {
	uint32_t struct_size;
	const msb_declared_output *outputs;
	size_t n_outputs;
	const char *call_id;
	const msb_observer *observer;
	const msb_key *key;
} msb_collect_options;

#define MSB_COLLECT_OPTIONS_INIT { (uint32_t)sizeof(msb_collect_options), NULL, 0, NULL, NULL, NULL }

/*
 * Pull the declared outputs of `spec` from `sandbox` (paths relative to spec->work_dir) and
 * land the LAND ones in `sink` (may be NULL when nothing lands), in declaration order. A
 * CONSUME output is stat-ed and counted against every cap, then left for the kind to read.
 * `out` receives one msb_landed_artifact per delivered artifact — also when a deliver fails
 * part-way, so the caller sees what did land.
 *
 * Refusals: MSB_E_VALUE (call-time outputs without outputs_named_at_call_time; a landing
 * output with no sink; a per_call sink with no call_id; an invalid name),
 * SandboxArtifactNameCollision, SandboxOutputMissing (a required output absent; an absent
 * optional one is skipped), SandboxOutputSizeUnknown, SandboxTransferCapExceeded (naming
 * the cap and the file), MSB_E_VALUE for a symlink, directory or other non-regular entry,
 * whatever the backend's stat/read answered, and whatever the sink's deliver answered.
 */
msb_errc msb_collect_outputs(msb_sandbox *sandbox, const msb_spec *spec, msb_output_sink *sink,
			     const msb_collect_options *options, msb_landed_artifacts *out,
			     msb_error *err);

#ifdef __cplusplus
}
#endif
#endif
