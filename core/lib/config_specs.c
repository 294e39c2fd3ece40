/*
 * config_specs.c — the `specs:` mapping: one workload spec per kind, built from the seed's
 * defaults (msb_spec_init: egress closed, work_dir /msb/work, requires {exec, files_in},
 * the default transfer limits) and then what the file states, and refused by
 * msb_spec_validate before any router sees it.
 *
 * `requires` replaces the default set rather than adding to it: a spec listing [run_code]
 * asks for run_code alone, as the seed's SandboxSpec does.
 */
#include <string.h>

#include <msb/outputs.h>
#include <msb/pool.h>

#include "config_internal.h"

static const char *const spec_keys[] = {
	"image", "egress", "egress_allow", "work_dir", "requires", "min_isolation", "isolation_scope",
	"requires_os_family", "files_in", "files_out", "declared_outputs",
	"outputs_named_at_call_time", "labels", "identities", "streaming", "pool", NULL
};

/*
 * A declared output's path and landing name meet the artifact-name invariant (relative, no
 * '..', no empty or '.' segment, no backslash, no control byte, UTF-8) at load, at the
 * value's own position: a name that cannot land is the file's mistake, found by `msb check`
 * rather than by the first collection that reaches it.
 */
static msb_errc check_output_name(const msb_node *v, const char *field, const char *value,
				  msb_error *err)
{
	msb_error why = MSB_ERROR_INIT;
	if (msb_validate_artifact_name(value, &why) == MSB_OK)
		return MSB_OK;
	msb_errc rc = msb_config_refuse(err, v, "declared output %s refused: %s", field,
					msb_error_message(&why));
	msb_error_clear(&why);
	return rc;
}

static msb_errc read_output(const msb_node *n, msb_declared_output *o, msb_error *err)
{
	static const char *const keys[] = { "path", "media_type", "required", "name", "disposition", NULL };
	msb_errc rc = msb_config_map(n, "a declared output (a mapping with path:, and optionally "
				     "media_type:, required:, name:, disposition:)", err);
	if (rc == MSB_OK)
		rc = msb_config_keys(n, keys, err);
	if (rc != MSB_OK)
		return rc;
	o->disposition = MSB_DISPOSITION_LAND;
	o->required = true;
	const msb_node *v = msb_node_get(n, "path");
	if (!v)
		return msb_config_refuse(err, n, "a declared output needs 'path:' (a literal path relative to work_dir)");
	int word;
	if ((rc = msb_config_string(v, &o->path, err)) == MSB_OK)
		rc = check_output_name(v, "path", o->path, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "media_type")))
		rc = msb_config_string(v, &o->media_type, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "required")))
		rc = msb_config_bool(v, &o->required, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "name")) &&
	    (rc = msb_config_string(v, &o->name, err)) == MSB_OK)
		rc = check_output_name(v, "name", o->name, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "disposition")) &&
	    (rc = msb_config_word(v, MSB_AXIS_DISPOSITION, &word, err)) == MSB_OK)
		o->disposition = (msb_disposition)word;
	return rc;
}

static msb_errc read_outputs(msb_config *cfg, const msb_node *n, msb_spec *spec, msb_error *err)
{
	if (n->kind != MSB_NODE_SEQ)
		return msb_config_refuse(err, n, "expected a sequence of declared outputs");
	msb_declared_output *outs = msb_arena_alloc(cfg->arena, (n->len + 1) * sizeof *outs);
	if (!outs)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	for (size_t i = 0; i < n->len; i++) {
		msb_errc rc = read_output(n->items[i], &outs[i], err);
		if (rc != MSB_OK)
			return rc;
	}
	spec->declared_outputs = outs;
	spec->n_declared_outputs = n->len;
	return MSB_OK;
}

/* labels: a mapping of strings, carried as "key=value" (opaque to msb, read by backends). */
static msb_errc read_labels(msb_config *cfg, const msb_node *n, msb_spec *spec, msb_error *err)
{
	msb_errc rc = msb_config_map(n, "a mapping of label names to strings", err);
	if (rc != MSB_OK)
		return rc;
	const char **labels = msb_arena_alloc(cfg->arena, (n->len + 1) * sizeof *labels);
	if (!labels)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	for (size_t i = 0; i < n->len; i++) {
		const char *value;
		if (strchr(n->pairs[i].key, '=')) {
			msb_node at = msb_config_key_at(n, i);
			return msb_config_refuse(err, &at, "a label name cannot contain '=' (labels travel as name=value)");
		}
		if ((rc = msb_config_string(n->pairs[i].value, &value, err)) != MSB_OK)
			return rc;
		labels[i] = msb_arena_printf(cfg->arena, "%s=%s", n->pairs[i].key, value);
		if (!labels[i])
			return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	spec->labels = labels;
	return MSB_OK;
}

static msb_errc read_fields(msb_config *cfg, const msb_node *n, msb_spec *spec, msb_error *err)
{
	const msb_node *v;
	int word;
	unsigned stated;
	msb_errc rc = MSB_OK;
	if ((v = msb_node_get(n, "image")))
		rc = msb_config_string(v, &spec->image, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "egress")) &&
	    (rc = msb_config_word(v, MSB_AXIS_EGRESS, &word, err)) == MSB_OK)
		spec->egress = (msb_egress)word;
	if (rc == MSB_OK && (v = msb_node_get(n, "egress_allow")))
		rc = msb_config_strings(cfg->arena, v, &spec->egress_allow, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "work_dir")))
		rc = msb_config_string(v, &spec->work_dir, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "requires")))
		rc = msb_config_words(cfg->arena, v, MSB_AXIS_CAPABILITY, &spec->requires, NULL, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "min_isolation")))
		rc = msb_config_word(v, MSB_AXIS_ISOLATION, &spec->min_isolation, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "isolation_scope")) &&
	    (rc = msb_config_word(v, MSB_AXIS_SCOPE, &word, err)) == MSB_OK)
		spec->isolation_scope = (msb_scope)word;
	if (rc == MSB_OK && (v = msb_node_get(n, "streaming")))
		rc = msb_config_bool(v, &spec->streaming, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "requires_os_family")))
		rc = msb_config_word(v, MSB_AXIS_OS_FAMILY, &spec->requires_os_family, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "files_in")))
		rc = msb_config_limits(v, &spec->files_in, &stated, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "files_out")))
		rc = msb_config_limits(v, &spec->files_out, &stated, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "declared_outputs")))
		rc = read_outputs(cfg, v, spec, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "outputs_named_at_call_time")))
		rc = msb_config_bool(v, &spec->outputs_named_at_call_time, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "labels")))
		rc = read_labels(cfg, v, spec, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "identities")))
		rc = msb_config_words(cfg->arena, v, MSB_AXIS_IDENTITY, &spec->identities, NULL, err);
	return rc;
}

/* `pool: N`: how many sandboxes of this spec to keep started ahead (0, the default: none). */
static msb_errc read_pool(msb_config *cfg, size_t i, const msb_node *n, msb_error *err)
{
	const msb_node *v = msb_node_is_null(n) ? NULL : msb_node_get(n, "pool");
	if (!v)
		return MSB_OK;
	uint64_t size;
	msb_errc rc = msb_config_uint(v, &size, err);
	if (rc == MSB_OK && size > MSB_POOL_MAX)
		rc = msb_config_refuse(err, v, "pool: %llu refused: a pool holds at most %u sandboxes",
				       (unsigned long long)size, MSB_POOL_MAX);
	if (rc == MSB_OK) {
		cfg->pool_sizes[i] = (unsigned)size;
		cfg->pool_nodes[i] = v;
	}
	return rc;
}

static msb_errc read_spec(msb_config *cfg, const char *kind, const msb_node *n, msb_spec *spec,
			  msb_error *err)
{
	msb_spec_init(spec, kind);
	if (msb_node_is_null(n))
		return MSB_OK; /* `kind:` alone: the seed's defaults, all of them strict */
	msb_errc rc = msb_config_map(n, "a spec (a mapping of spec fields)", err);
	if (rc == MSB_OK)
		rc = msb_config_keys(n, spec_keys, err);
	if (rc == MSB_OK)
		rc = read_fields(cfg, n, spec, err);
	if (rc != MSB_OK)
		return rc;
	if (msb_spec_validate(spec, err) != MSB_OK) {
		/* Point at the field the rule is about where there is one. */
		const msb_node *at = n;
		const msb_node *allow = msb_node_get(n, "egress_allow");
		if (allow && spec->egress_allow && spec->egress_allow[0] && spec->egress != MSB_EGRESS_ALLOWLIST)
			at = allow;
		else if (msb_node_get(n, "declared_outputs") && strstr(msb_error_message(err), "declared output"))
			at = msb_node_get(n, "declared_outputs");
		else if (msb_node_get(n, "work_dir") && strstr(msb_error_message(err), "work_dir"))
			at = msb_node_get(n, "work_dir");
		return msb_config_reposition(err, at);
	}
	return MSB_OK;
}

msb_errc msb_config_read_specs(msb_config *cfg, const msb_node *n, msb_error *err)
{
	if (!n || msb_node_is_null(n))
		return MSB_OK;
	msb_errc rc = msb_config_map(n, "a mapping of spec kinds to specs", err);
	if (rc != MSB_OK)
		return rc;
	cfg->specs = msb_arena_alloc(cfg->arena, (n->len + 1) * sizeof *cfg->specs);
	cfg->pool_sizes = msb_arena_alloc(cfg->arena, (n->len + 1) * sizeof *cfg->pool_sizes);
	cfg->pool_nodes = msb_arena_alloc(cfg->arena, (n->len + 1) * sizeof *cfg->pool_nodes);
	if (!cfg->specs || !cfg->pool_sizes || !cfg->pool_nodes)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	for (size_t i = 0; i < n->len; i++) {
		if (!*n->pairs[i].key) {
			msb_node at = msb_config_key_at(n, i);
			return msb_config_refuse(err, &at, "a spec kind cannot be empty");
		}
		rc = read_spec(cfg, n->pairs[i].key, n->pairs[i].value, &cfg->specs[i], err);
		if (rc == MSB_OK)
			rc = read_pool(cfg, i, n->pairs[i].value, err);
		if (rc != MSB_OK)
			return rc;
		cfg->n_specs++;
	}
	return MSB_OK;
}
