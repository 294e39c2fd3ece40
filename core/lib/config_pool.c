/*
 * config_pool.c — sandbox.yaml's warm pools (issue 22): `pool: N` on a spec, `pool_dir:` at
 * the top, and the pool msb_config_router attaches to the router it builds.
 *
 * Per spec rather than per backend: a pool is N sandboxes of one blueprint, and a blueprint
 * is a spec's (its kind, image, limits, egress) on the backend the router picks for it — a
 * per-backend N would keep N of every kind that backend serves, most never asked for. The
 * backend's `config:` is folded into the blueprint, so editing it makes the entries stale.
 */
#include <stdio.h>
#include <string.h>

#include <msb/pool.h>

#include "config_internal.h"

msb_errc msb_config_read_pool_dir(msb_config *cfg, const msb_node *n, msb_error *err)
{
	if (!n)
		return MSB_OK;
	const char *dir;
	msb_errc rc = msb_config_string(n, &dir, err);
	if (rc == MSB_OK && dir[0] != '/')
		rc = msb_config_refuse(err, n, "pool_dir '%s' refused: expected an absolute directory "
				       "(the registry every process sharing the pools reads)", dir);
	if (rc == MSB_OK) {
		cfg->pool_dir = dir;
		cfg->pool_dir_node = n;
	}
	return rc;
}

/* A node as unambiguous text: kind, length-prefixed scalars, keys in file order. */
static msb_errc node_text(const msb_node *n, msb_buf *out, msb_error *err)
{
	char head[48];
	if (!n)
		return msb_buf_append(out, "~", 1, err);
	if (n->kind == MSB_NODE_SCALAR) {
		const char *s = n->scalar ? n->scalar : "";
		int k = snprintf(head, sizeof head, "s%zu%c:", strlen(s), n->plain ? 'p' : 'q');
		msb_errc rc = msb_buf_append(out, head, (size_t)k, err);
		return rc ? rc : msb_buf_append(out, s, strlen(s), err);
	}
	int k = snprintf(head, sizeof head, "%c%zu{", n->kind == MSB_NODE_MAP ? 'm' : 'q', n->len);
	msb_errc rc = msb_buf_append(out, head, (size_t)k, err);
	for (size_t i = 0; rc == MSB_OK && i < n->len; i++) {
		if (n->kind == MSB_NODE_MAP) {
			const char *key = n->pairs[i].key;
			k = snprintf(head, sizeof head, "k%zu:", strlen(key));
			rc = msb_buf_append(out, head, (size_t)k, err);
			if (rc == MSB_OK)
				rc = msb_buf_append(out, key, strlen(key), err);
			if (rc == MSB_OK)
				rc = node_text(n->pairs[i].value, out, err);
		} else {
			rc = node_text(n->items[i], out, err);
		}
	}
	return rc ? rc : msb_buf_append(out, "}", 1, err);
}

static bool any_pool(const msb_config *cfg)
{
	for (size_t i = 0; i < cfg->n_specs; i++)
		if (cfg->pool_sizes && cfg->pool_sizes[i])
			return true;
	return false;
}

msb_errc msb_config_attach_pools(msb_config *cfg, msb_router *router, msb_error *err)
{
	if (!any_pool(cfg))
		return MSB_OK;
	msb_pool *pool = NULL;
	msb_errc rc = msb_pool_new(router, cfg->pool_dir, &pool, err);
	if (rc != MSB_OK)
		return msb_config_reposition(err, cfg->pool_dir_node);
	for (size_t i = 0; rc == MSB_OK && i < cfg->n_entries; i++) {
		const msb_config_entry *e = &cfg->entries[i];
		if (!e->backend)
			continue;
		msb_buf text = { 0 };
		rc = node_text(e->config, &text, err);
		if (rc == MSB_OK)
			rc = msb_pool_set_backend_blueprint(pool, msb_backend_name(e->backend),
							    text.data ? (char *)text.data : "", err);
		msb_buf_free(&text);
	}
	for (size_t i = 0; rc == MSB_OK && i < cfg->n_specs; i++) {
		if (!cfg->pool_sizes[i])
			continue;
		const msb_node *at = cfg->pool_nodes[i];
		rc = msb_pool_want(pool, &cfg->specs[i], cfg->pool_sizes[i], err);
		if (rc != MSB_OK)
			/* Kept the pool's own code (NotImplementedError for a backend without adopt). */
			msb_error_prefix(err, "%s:%u:%u: %s: ", at->file, at->line, at->column, at->path);
	}
	if (rc != MSB_OK) {
		msb_pool_free(pool);
		return rc;
	}
	msb_router_set_pool(router, pool);
	return MSB_OK;
}

msb_errc msb_config_check_pools(msb_config *cfg, msb_error *err)
{
	if (!any_pool(cfg) || cfg->n_backends == 0)
		return MSB_OK;
	/* Only the pools' refusals here: a router refused on its own is msb_config_router's. */
	msb_router *router = NULL;
	msb_error ignored = MSB_ERROR_INIT;
	msb_errc rc = msb_router_new(cfg->backends, cfg->n_backends, &cfg->router, &router, &ignored);
	msb_error_clear(&ignored);
	if (rc != MSB_OK)
		return MSB_OK;
	rc = msb_config_attach_pools(cfg, router, err);
	msb_router_free(router);
	return rc;
}
