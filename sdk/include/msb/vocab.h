/*
 * msb/vocab.h — the words msb speaks: isolation rungs, egress modes, capabilities, OS
 * families, isolation scopes, identities, disposal codes, output dispositions, entry kinds.
 *
 * Every axis is a closed C enum whose values are also its order where the axis is ordered
 * (the isolation ladder, the scope ladder, the disposal codes' actionability), plus one
 * string table, written down exactly once in sdk/lib/vocab.c. An unknown string is an
 * error, never a guess: nothing here can tell which side of a floor an unknown rung falls
 * on. The retired rung spelling "process" has its own message, because a declaration
 * written against its old meaning (no boundary at all) must not come back ranked as
 * os_process, two rungs higher, having claimed a boundary it never drew.
 */
#ifndef MSB_VOCAB_H
#define MSB_VOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "Not stated": an optional enum-valued field left to its silence rule. */
#define MSB_UNSET (-1)

/* The isolation ladder, weakest first. The enum order IS the rank. */
typedef enum msb_isolation {
	MSB_ISO_NONE = 0,
	MSB_ISO_RUNTIME,
	MSB_ISO_OS_PROCESS,
	MSB_ISO_CONTAINER,
	MSB_ISO_HARDENED_CONTAINER,
	MSB_ISO_MICROVM,
	MSB_ISO_VM,
	MSB_ISO__COUNT
} msb_isolation;

/* Least isolated first: unrestricted < allowlist < closed. */
typedef enum msb_egress {
	MSB_EGRESS_UNRESTRICTED = 0,
	MSB_EGRESS_ALLOWLIST,
	MSB_EGRESS_CLOSED,
	MSB_EGRESS__COUNT
} msb_egress;

typedef enum msb_capability {
	MSB_CAP_EXEC = 0,
	MSB_CAP_RUN_CODE,
	MSB_CAP_HOST_TOOLS,
	MSB_CAP_FILES_IN,
	MSB_CAP_FILES_OUT,
	MSB_CAP_FILES_LIST,
	MSB_CAP_FILES_DELETE,
	MSB_CAP_SNAPSHOT,
	MSB_CAP_ATTACHED_IDENTITY,
	MSB_CAP__COUNT
} msb_capability;

typedef enum msb_os_family {
	MSB_OS_POSIX = 0,
	MSB_OS_WINDOWS,
	MSB_OS__COUNT
} msb_os_family;

/* Least separated first: a spec may raise the host's scope floor, never lower it. */
typedef enum msb_scope {
	MSB_SCOPE_CONVERSATION = 0,
	MSB_SCOPE_CALL,
	MSB_SCOPE__COUNT
} msb_scope;

typedef enum msb_identity {
	MSB_IDENTITY_APP = 0,
	MSB_IDENTITY_USER,
	MSB_IDENTITY__COUNT
} msb_identity;

/*
 * A failed delete, as a code a caller branches on. Ordered most actionable first, which is
 * what folding several failures into one picks: a `refused` wants a human (a missing role,
 * far more often than anything transient), a `timeout` a larger bound, an `unreachable` a
 * retry; `unlisted` and `unknown` say the least.
 */
typedef enum msb_disposal_code {
	MSB_DISPOSAL_REFUSED = 0,
	MSB_DISPOSAL_TIMEOUT,
	MSB_DISPOSAL_UNREACHABLE,
	MSB_DISPOSAL_UNLISTED,
	MSB_DISPOSAL_UNKNOWN,
	MSB_DISPOSAL__COUNT
} msb_disposal_code;

typedef enum msb_disposition {
	MSB_DISPOSITION_LAND = 0,
	MSB_DISPOSITION_CONSUME,
	MSB_DISPOSITION__COUNT
} msb_disposition;

typedef enum msb_entry_kind {
	MSB_ENTRY_FILE = 0,
	MSB_ENTRY_DIRECTORY,
	MSB_ENTRY_SYMLINK,
	MSB_ENTRY_OTHER,
	MSB_ENTRY__COUNT
} msb_entry_kind;

typedef enum msb_axis {
	MSB_AXIS_ISOLATION = 0,
	MSB_AXIS_EGRESS,
	MSB_AXIS_CAPABILITY,
	MSB_AXIS_OS_FAMILY,
	MSB_AXIS_SCOPE,
	MSB_AXIS_IDENTITY,
	MSB_AXIS_DISPOSAL_CODE,
	MSB_AXIS_DISPOSITION,
	MSB_AXIS_ENTRY_KIND,
	MSB_AXIS__COUNT
} msb_axis;

/* A set of one axis's values, bit (1u << value). Every axis has fewer than 32 members. */
typedef uint32_t msb_set;
#define MSB_BIT(v) ((msb_set)1u << (unsigned)(v))

/* What an unstated `capabilities` reads as: what the sandbox protocol already obliges. */
#define MSB_DEFAULT_CAPABILITIES (MSB_BIT(MSB_CAP_EXEC) | MSB_BIT(MSB_CAP_FILES_IN))

/* The axis's own name, as sandbox.yaml and messages spell it ("isolation", "egress"…). */
const char *msb_axis_name(msb_axis axis);
/* How many members the axis has. */
int msb_axis_count(msb_axis axis);
/* The member's string, or NULL when `value` is not a member. */
const char *msb_word_name(msb_axis axis, int value);
/*
 * Parse one word. Refuses (MSB_E_VALUE) an unknown word naming the axis and listing the
 * words it knows; refuses the retired rung "process" with a message of its own.
 */
msb_errc msb_word_parse(msb_axis axis, const char *word, int *value, msb_error *err);
/*
 * Parse a NULL-terminated list of words into a set. Refuses an unknown word and a word
 * given twice: a set with a duplicate is a declaration written carelessly, and the loader
 * would rather say so than guess which of the two was meant.
 */
msb_errc msb_set_parse(msb_axis axis, const char *const *words, msb_set *set, msb_error *err);
/*
 * Write the set's words, comma-separated in axis order, into buf ("{}" style is the
 * caller's). Returns the length the full text needs, like snprintf.
 */
int msb_set_format(msb_axis axis, msb_set set, char *buf, size_t size);

/* Whether `declared` sits at or above `floor` on the isolation ladder. */
static inline bool msb_isolation_meets(msb_isolation declared, msb_isolation floor)
{
	return (int)declared >= (int)floor;
}

#ifdef __cplusplus
}
#endif
#endif
