/*
 * declarations.c — a backend's six declarations, validated and read by their silence rules
 * (msb_declarations_resolve), and narrowed by an instance or a sandbox.yaml entry, never
 * widened (msb_declarations_narrow).
 *
 * Each field has its own rule for "not stated", because each is a different kind of claim:
 * capabilities is a functionality claim (the protocol already obliges exec and files_in),
 * limits a safety claim (the default ceilings), egress_modes an enforcement claim (stating
 * nothing enforces nothing), os_families an answer (silence answers no one), and
 * isolation_scopes the one read as a claim (the get-or-create every backend does).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <msb/loader.h>

typedef struct set_field {
	const char *name;
	msb_axis axis;
	unsigned bit;
	size_t decl_offset;      /* the word list in msb_declarations */
	size_t eff_offset;       /* the set in msb_effective_declarations */
	msb_set silence;         /* what the field reads as when unstated */
} set_field;

#define SET_FIELD(field, ax, b, dflt)                                                  \
	{ #field, ax, b, offsetof(msb_declarations, field),                            \
	  offsetof(msb_effective_declarations, field), dflt }

static const set_field set_fields[] = {
	SET_FIELD(capabilities, MSB_AXIS_CAPABILITY, MSB_DECL_CAPABILITIES,
		  MSB_DEFAULT_CAPABILITIES),
	SET_FIELD(egress_modes, MSB_AXIS_EGRESS, MSB_DECL_EGRESS_MODES, 0),
	SET_FIELD(os_families, MSB_AXIS_OS_FAMILY, MSB_DECL_OS_FAMILIES, 0),
	SET_FIELD(isolation_scopes, MSB_AXIS_SCOPE, MSB_DECL_ISOLATION_SCOPES,
		  MSB_BIT(MSB_SCOPE_CONVERSATION)),
};
#define N_SET_FIELDS (sizeof set_fields / sizeof set_fields[0])

static const char *const *decl_words(const msb_declarations *d, const set_field *f)
{
	return *(const char *const *const *)((const char *)d + f->decl_offset);
}

static msb_set *eff_set(msb_effective_declarations *e, const set_field *f)
{
	return (msb_set *)((char *)e + f->eff_offset);
}

static msb_set eff_set_get(const msb_effective_declarations *e, const set_field *f)
{
	return *(const msb_set *)((const char *)e + f->eff_offset);
}

msb_errc msb_declarations_resolve(const msb_declarations *decl, const char *what,
				  msb_effective_declarations *out, msb_error *err)
{
	static const msb_declarations none = { 0 };
	static const msb_sandbox_limits default_limits = MSB_DEFAULT_SANDBOX_LIMITS;
	msb_effective_declarations eff = { 0 };
	if (!decl)
		decl = &none;
	if (!what)
		what = "declarations";

	for (size_t i = 0; i < N_SET_FIELDS; i++) {
		const set_field *f = &set_fields[i];
		const char *const *words = decl_words(decl, f);
		if (!words) {
			*eff_set(&eff, f) = f->silence;
			eff.unstated |= f->bit;
			continue;
		}
		if ((uintptr_t)words % _Alignof(const char *) != 0)
			return msb_error_set(err, MSB_E_VALUE,
					     "%s.%s: the word list is at a misaligned address: it "
					     "is not a NULL-terminated array of strings",
					     what, f->name);
		msb_error e = MSB_ERROR_INIT;
		msb_errc rc = msb_set_parse(f->axis, words, eff_set(&eff, f), &e);
		if (rc != MSB_OK) {
			msb_error_prefix(&e, "%s.%s: ", what, f->name);
			msb_error_move(err, &e);
			return rc;
		}
	}

	/*
	 * A zero ceiling is accepted: it states that nothing may cross in that direction,
	 * which is narrow, not wrong.
	 */
	if (decl->limits) {
		/* Copied as bytes: a plugin's pointer need not be aligned for a struct load. */
		memcpy(&eff.limits, decl->limits, sizeof eff.limits);
	} else {
		eff.limits = default_limits;
		eff.unstated |= MSB_DECL_LIMITS;
	}

	if (decl->observes_egress) {
		/* Read as a byte: anything but 0 or 1 is not a bool, and loading it as one is UB. */
		unsigned char byte;
		memcpy(&byte, decl->observes_egress, 1);
		if (byte > 1)
			return msb_error_set(err, MSB_E_VALUE,
					     "%s.observes_egress: holds the byte %u, which is "
					     "neither false (0) nor true (1)",
					     what, (unsigned)byte);
		eff.observes_egress = byte == 1;
	} else {
		eff.observes_egress = false;
		eff.unstated |= MSB_DECL_OBSERVES_EGRESS;
	}

	*out = eff;
	return MSB_OK;
}

static msb_errc refuse_wider_set(const set_field *f, msb_set base, msb_set extra,
				 const char *what, msb_error *err)
{
	int first = 0;
	while (!(extra & MSB_BIT(first)))
		first++;
	char have[256];
	msb_set_format(f->axis, base, have, sizeof have);
	return msb_error_set(err, MSB_E_VALUE,
			     "%s.%s: '%s' widens what is declared ({%s}): declarations may "
			     "only be narrowed, never widened",
			     what, f->name, msb_word_name(f->axis, first), have);
}

static msb_errc check_limit(const char *what, const char *direction, const char *field,
			    uint64_t ask, uint64_t ceiling, msb_error *err)
{
	if (ask <= ceiling)
		return MSB_OK;
	return msb_error_set(err, MSB_E_VALUE,
			     "%s.limits.%s.%s: %" PRIu64 " is above the declared ceiling %" PRIu64
			     ": declarations may only be narrowed, never widened",
			     what, direction, field, ask, ceiling);
}

static msb_errc check_limits(const char *what, const char *direction,
			     const msb_transfer_limits *ask, const msb_transfer_limits *ceiling,
			     msb_error *err)
{
	msb_errc rc = check_limit(what, direction, "max_bytes_per_file", ask->max_bytes_per_file,
				  ceiling->max_bytes_per_file, err);
	if (rc == MSB_OK)
		rc = check_limit(what, direction, "max_total_bytes", ask->max_total_bytes,
				 ceiling->max_total_bytes, err);
	if (rc == MSB_OK)
		rc = check_limit(what, direction, "max_files", ask->max_files, ceiling->max_files,
				 err);
	return rc;
}

msb_errc msb_declarations_narrow(const msb_effective_declarations *base,
				 const msb_declarations *narrow, const char *what,
				 msb_effective_declarations *out, msb_error *err)
{
	msb_effective_declarations stated;
	if (!what)
		what = "declarations";
	msb_errc rc = msb_declarations_resolve(narrow, what, &stated, err);
	if (rc != MSB_OK)
		return rc;

	msb_effective_declarations res = *base;
	for (size_t i = 0; i < N_SET_FIELDS; i++) {
		const set_field *f = &set_fields[i];
		if (stated.unstated & f->bit)
			continue;
		msb_set want = eff_set_get(&stated, f), have = eff_set_get(base, f);
		if (want & ~have)
			return refuse_wider_set(f, have, want & ~have, what, err);
		*eff_set(&res, f) = want;
		res.unstated &= ~f->bit;
	}
	if (!(stated.unstated & MSB_DECL_LIMITS)) {
		rc = check_limits(what, "files_in", &stated.limits.files_in, &base->limits.files_in,
				  err);
		if (rc == MSB_OK)
			rc = check_limits(what, "files_out", &stated.limits.files_out,
					  &base->limits.files_out, err);
		if (rc != MSB_OK)
			return rc;
		res.limits = stated.limits;
		res.unstated &= ~MSB_DECL_LIMITS;
	}
	if (!(stated.unstated & MSB_DECL_OBSERVES_EGRESS)) {
		if (stated.observes_egress && !base->observes_egress)
			return msb_error_set(err, MSB_E_VALUE,
					     "%s.observes_egress: true widens what is declared "
					     "(false): declarations may only be narrowed, never "
					     "widened",
					     what);
		res.observes_egress = stated.observes_egress;
		res.unstated &= ~MSB_DECL_OBSERVES_EGRESS;
	}
	*out = res;
	return MSB_OK;
}
