/*
 * msb/store.h — a host's file store, the sink that lands a call's artifacts in it, and the
 * read-only tools a model reads them back with (host API; the C form of the seed's
 * AgentFileStore, make_file_store_sink and sandbox_outputs_read_tools).
 *
 * The file-system sink (msb/outputs.h) lands `<name>` under a directory and answers the model
 * with a line. The file-store sink lands `<call_id>/<name>` in a store the model can READ and
 * not write, so the model reads its own output back with a file-read tool instead of being
 * told by the workload which names landed, and one call's file can never answer for the next
 * call's. The call id is host-minted: the sink declares itself per_call, so msb_collect_outputs
 * refuses to run it without one.
 *
 * Point it at a store the model can read and NOT write — never the one an agent's own file
 * tools write to: a model that can write where artifacts land can forge a call's output.
 */
#ifndef MSB_STORE_H
#define MSB_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/error.h>
#include <msb/observer.h>
#include <msb/outputs.h>
#include <msb/router.h>
#include <msb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A store, as a small vtable the host implements over whatever holds its files (a
 * directory, a blob container, a database). Paths are relative, '/'-separated, already
 * checked by msb_validate_artifact_name before a store sees them. Callers allocate it: start
 * from MSB_FILE_STORE_INIT. Every operation may be called from several threads at once.
 */
typedef struct msb_file_store {
	uint32_t struct_size;
	void *ctx;
	/* Create `path` holding `len` bytes, creating its parents; EXCLUSIVELY: a path that is
	 * already there is MSB_E_LANDING_EXISTS and is left as it was. */
	msb_errc (*put)(void *ctx, const char *path, const unsigned char *content, size_t len,
			msb_error *err);
	/* Whether anything is at `path`. */
	msb_errc (*exists)(void *ctx, const char *path, bool *exists, msb_error *err);
	/* The entries directly under directory `dir` ("" is the store's root), sorted by name,
	 * each `path` relative to the store's root; a directory that is not there is
	 * MSB_E_NOT_FOUND. */
	msb_errc (*list)(void *ctx, const char *dir, msb_entry_list *out, msb_error *err);
	/* Append the whole of file `path` to `out`; larger than max_bytes is
	 * MSB_E_TRANSFER_CAP_EXCEEDED (never a truncation); absent is MSB_E_NOT_FOUND. */
	msb_errc (*read)(void *ctx, const char *path, uint64_t max_bytes, msb_buf *out,
			 msb_error *err);
	void (*destroy)(void *ctx); /* may be NULL: msb_file_store_free then frees only the struct */
} msb_file_store;

#define MSB_FILE_STORE_INIT { (uint32_t)sizeof(msb_file_store), NULL, NULL, NULL, NULL, NULL, NULL }

/*
 * A store over an existing host directory, confined as the file-system sink is: the root is
 * opened once and every path is resolved by the kernel beneath it without following a link
 * at any level (msb/confine.h), so a link planted in the directory, before or during a call,
 * is refused rather than written or read through. Writes are atomic and exclusive.
 */
msb_errc msb_directory_store_new(const char *root, msb_file_store **out, msb_error *err);

/* Free a store a constructor returned (calls destroy, then frees the struct). NULL is fine. */
void msb_file_store_free(msb_file_store *store);

/*
 * One landing, as the provenance callback records it — BEFORE the bytes are written, so a
 * record exists for everything that ever reached the store, and a landing whose record
 * could not be made is never written. Borrowed for the duration of the callback.
 */
typedef struct msb_landing_record {
	const char *path;        /* where it lands in the store: "<call_id>/<name>" */
	const char *name;        /* the artifact's name */
	const char *call_id;     /* the host-minted call id */
	const char *kind;        /* the spec's kind */
	const char *media_type;  /* declared, never sniffed; may be NULL */
	uint64_t bytes;
	char sha256[65];         /* of the bytes, lowercase hex */
} msb_landing_record;

typedef struct msb_file_store_sink_options {
	uint32_t struct_size;
	/* Records each landing before it is written; may be NULL (nothing recorded). A non-zero
	 * return refuses the landing with that code; `err` says why. */
	msb_errc (*provenance)(void *ctx, const msb_landing_record *record, msb_error *err);
	void *provenance_ctx;
	/* The model-visible line, as the file-system sink's template ("{name}", "{bytes}",
	 * "{media_type}"), where {name} is the store path "<call_id>/<name>" — the name the
	 * model reads the artifact back by. NULL: "{name} ({bytes} bytes)". */
	const char *display;
} msb_file_store_sink_options;

#define MSB_FILE_STORE_SINK_OPTIONS_INIT \
	{ (uint32_t)sizeof(msb_file_store_sink_options), NULL, NULL, NULL }

/*
 * The sink landing each artifact at "<call_id>/<name>" in `store` (borrowed: it must outlive
 * the sink). per_call, so msb_collect_outputs requires a call id. Each delivery, in order:
 * the name is validated; bytes that are not UTF-8 are refused with SandboxLandingNotText
 * (a store holding text is never handed mangled bytes); an existing destination is refused
 * with SandboxLandingExists, never replaced; the landing is recorded into provenance; then
 * the store's exclusive put writes it (a destination taken in between is still
 * SandboxLandingExists). `landed->handle` is the store path. `options` may be NULL.
 */
msb_errc msb_file_store_sink_new(const msb_file_store *store,
				 const msb_file_store_sink_options *options, msb_output_sink **out,
				 msb_error *err);

/* ---- the read-only tools over one store ---------------------------------------------- */

/* The longest prefix a pair of store tools takes: names are "<prefix>_ls", "<prefix>_read". */
#define MSB_STORE_TOOLS_MAX_PREFIX 48
/* What <prefix>_read answers at most, and how many entries <prefix>_ls lists, by default. */
#define MSB_STORE_TOOLS_DEFAULT_MAX_READ (1024u * 1024u)
#define MSB_STORE_TOOLS_DEFAULT_MAX_ENTRIES 1000u

typedef struct msb_store_tools_options {
	uint32_t struct_size;
	uint64_t max_read_bytes;    /* 0: MSB_STORE_TOOLS_DEFAULT_MAX_READ */
	size_t max_entries;         /* 0: MSB_STORE_TOOLS_DEFAULT_MAX_ENTRIES */
	/* Receives StoreFileRead for every read, found or not; may be NULL. */
	const msb_observer *observer;
	/* Where the key of a read is read from, at call time; may be NULL (events carry none). */
	const msb_caller_context *caller;
} msb_store_tools_options;

#define MSB_STORE_TOOLS_OPTIONS_INIT { (uint32_t)sizeof(msb_store_tools_options), 0, 0, NULL, NULL }

typedef struct msb_store_tools msb_store_tools;

/*
 * The two tools over `store` (borrowed), named "<prefix>_ls" and "<prefix>_read". Read-only
 * by construction: the tools keep the store's list and read operations and never its put, so
 * no argument, however crafted, reaches a write. The prefix is the host's, so two stores'
 * tools never share a name: [a-z][a-z0-9_]*, at most MSB_STORE_TOOLS_MAX_PREFIX bytes
 * (MSB_E_VALUE otherwise, naming it).
 */
msb_errc msb_store_tools_new(const msb_file_store *store, const char *prefix,
			     const msb_store_tools_options *options, msb_store_tools **out,
			     msb_error *err);
void msb_store_tools_free(msb_store_tools *tools);

const char *msb_store_tools_ls_name(const msb_store_tools *tools);
const char *msb_store_tools_read_name(const msb_store_tools *tools);
/* Each tool's input schema (JSON Schema, exact: one optional or required "path" string). */
const char *msb_store_tools_ls_schema(void);
const char *msb_store_tools_read_schema(void);

/*
 * <prefix>_ls: one line per entry directly under `path` ("" or NULL: the root), "name/" for
 * a directory, "name (N bytes)" for a file, at most max_entries (then a line saying how many
 * more). <prefix>_read: the file's text. `path` is model input: checked, never trusted.
 *
 * Both return MSB_OK whenever the model has something to read in `answer` — the listing, the
 * text, or a sentence saying why not (nothing there, not a file, over the read cap, not
 * text); they fail only on the host's own trouble. `call` (may be NULL) is the tool call's
 * id, carried on the StoreFileRead event <prefix>_read emits.
 */
msb_errc msb_store_tools_ls(msb_store_tools *tools, const char *call, const char *path,
			    msb_buf *answer, msb_error *err);
msb_errc msb_store_tools_read(msb_store_tools *tools, const char *call, const char *path,
			      msb_buf *answer, msb_error *err);

#ifdef __cplusplus
}
#endif
#endif
