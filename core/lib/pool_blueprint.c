/*
 * pool_blueprint.c — what makes two sandboxes interchangeable, as one SHA-256: the backend,
 * its configuration as sandbox.yaml states it, and every field of the spec that the backend
 * is handed at acquire. Conservative on purpose: a field that might decide what a sandbox is
 * (a label, a declared output) is in, because an entry handed out for a spec it was not
 * started for is a sandbox of the wrong policy — a few entries disposed needlessly after an
 * edit cost only a refill. A cryptographic hash, because the hash alone is what an acquire
 * compares: a collision would hand a sandbox started closed to a spec that changed.
 */
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "pool_internal.h"

typedef struct hasher {
	EVP_MD_CTX *ctx;
} hasher;

/* A field as "<tag> <length>:<bytes>": no two different field lists hash the same text. */
static void put(hasher *h, const char *tag, const char *value)
{
	char head[64];
	const char *v = value ? value : "";
	int n = snprintf(head, sizeof head, "%s %zu%s:", tag, strlen(v), value ? "" : "n");
	EVP_DigestUpdate(h->ctx, head, (size_t)n);
	EVP_DigestUpdate(h->ctx, v, strlen(v));
}

static void put_num(hasher *h, const char *tag, unsigned long long v)
{
	char text[32];
	snprintf(text, sizeof text, "%llu", v);
	put(h, tag, text);
}

static void put_list(hasher *h, const char *tag, const char *const *list)
{
	size_t n = 0;
	for (; list && list[n]; n++)
		;
	put_num(h, tag, n);
	for (size_t i = 0; i < n; i++)
		put(h, tag, list[i]);
}

static void put_limits(hasher *h, const char *tag, const msb_transfer_limits *l)
{
	put_num(h, tag, l->max_bytes_per_file);
	put_num(h, tag, l->max_total_bytes);
	put_num(h, tag, l->max_files);
}

static void to_hex(const unsigned char *md, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[md[i] >> 4];
		out[2 * i + 1] = digits[md[i] & 15];
	}
	out[2 * n] = '\0';
}

void pool_blueprint_hash(const msb_backend *b, const char *salt, const msb_spec *spec,
			 char out[POOL_HASH_HEX])
{
	hasher h = { EVP_MD_CTX_new() };
	unsigned char md[32] = { 0 };
	unsigned len = 0;
	if (!h.ctx || !EVP_DigestInit_ex(h.ctx, EVP_sha256(), NULL)) {
		/* No digest, no pool: an all-zero name matches nothing a working fill wrote. */
		EVP_MD_CTX_free(h.ctx);
		to_hex(md, sizeof md, out);
		return;
	}
	put(&h, "msb-pool-blueprint", "1");
	/* Another msb may start its sandboxes differently (its agent, its boundary code). */
	put(&h, "msb", PACKAGE_VERSION);
	put(&h, "backend", b->name);
	put(&h, "plugin", msb_plugin_file(b->plugin));
	put(&h, "config", salt);
	put(&h, "kind", spec->kind);
	put(&h, "image", spec->image);
	put(&h, "work_dir", spec->work_dir);
	put_num(&h, "egress", (unsigned long long)spec->egress);
	put_list(&h, "egress_allow", spec->egress_allow);
	put_num(&h, "requires", spec->requires);
	put_num(&h, "min_isolation", (unsigned long long)(spec->min_isolation + 1));
	put_num(&h, "isolation_scope", (unsigned long long)spec->isolation_scope);
	put_num(&h, "requires_os_family", (unsigned long long)(spec->requires_os_family + 1));
	put_limits(&h, "files_in", &spec->files_in);
	put_limits(&h, "files_out", &spec->files_out);
	put_num(&h, "declared_outputs", spec->n_declared_outputs);
	for (size_t i = 0; i < spec->n_declared_outputs; i++) {
		const msb_declared_output *o = &spec->declared_outputs[i];
		put(&h, "path", o->path);
		put_num(&h, "disposition", (unsigned long long)o->disposition);
		put(&h, "media_type", o->media_type);
		put_num(&h, "required", o->required);
		put(&h, "name", o->name);
	}
	put_num(&h, "outputs_named_at_call_time", spec->outputs_named_at_call_time);
	put_list(&h, "labels", spec->labels);
	put_num(&h, "identities", spec->identities);
	put_num(&h, "streaming", spec->streaming);
	if (!EVP_DigestFinal_ex(h.ctx, md, &len) || len != sizeof md)
		memset(md, 0, sizeof md);
	EVP_MD_CTX_free(h.ctx);
	to_hex(md, sizeof md, out);
}

void pool_tag(const char *text, char out[POOL_ID_HEX])
{
	unsigned char md[32] = { 0 };
	unsigned len = 0;
	if (!EVP_Digest(text, strlen(text), md, &len, EVP_sha256(), NULL) || len != sizeof md)
		memset(md, 0, sizeof md);
	to_hex(md, 8, out);
}
