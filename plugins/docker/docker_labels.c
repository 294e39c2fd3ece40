/*
 * plugins/docker/docker_labels.c — the engine's labels as the durable truth about which
 * container is whose, and removal by them.
 *
 * The state directory is how the SDK's driver finds a sandbox again; but an operator may
 * wipe /run, or a host crash may lose it, while the engine still runs the container. So
 * every container carries labels saying whose it is — the backend, the state directory, the
 * scope, the thread, the whole key — and dispose and dispose_scope sweep the engine by them
 * after the driver's pass, removing what the state directory forgot. Every value is a full
 * SHA-256 digest (never a truncation: a prefix of a digest could match another key's, and
 * a label is all the sweep has to go by), so no key text reaches the engine's metadata,
 * and a scope of any length or content is one fixed-size label value.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "docker_internal.h"

void docker_sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char md[32];
	unsigned int n = 0;
	if (!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) || n != 32)
		memset(md, 0, sizeof md);
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/*
 * Append one field, length-prefixed (so ("ab","c") and ("a","bc") differ). An absent field
 * reads as "", as the SDK's driver reads it: one key, one sandbox, whichever the host passed.
 */
static void put_field(msb_buf *b, const char *s)
{
	s = s ? s : "";
	uint64_t n = strlen(s);
	unsigned char len[8];
	for (int i = 0; i < 8; i++)
		len[i] = (unsigned char)(n >> (56 - 8 * i));
	msb_buf_append(b, len, 8, NULL);
	msb_buf_append(b, s, n, NULL);
}

void docker_key_digest(const msb_key *key, char out[65])
{
	msb_buf b = { 0 };
	put_field(&b, key->scope);
	put_field(&b, key->thread_id);
	put_field(&b, key->agent_dir);
	put_field(&b, key->call_id);
	docker_sha256_hex(b.data ? (const void *)b.data : "", b.len, out);
	msb_buf_free(&b);
}

void docker_digest_field(const char *s, char out[65])
{
	msb_buf b = { 0 };
	put_field(&b, s);
	docker_sha256_hex(b.data, b.len, out);
	msb_buf_free(&b);
}

json_t *docker_labels(const docker_ctx *ctx, const char *name, const char *scope,
		      const char *thread_id, const char *key_digest)
{
	char scope_d[65], thread_d[65];
	docker_digest_field(scope, scope_d);
	docker_digest_field(thread_id, thread_d);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", DOCKER_LABEL_BACKEND, DOCKER_NAME,
			 DOCKER_LABEL_NAME, name, DOCKER_LABEL_STATE, ctx->state_digest,
			 DOCKER_LABEL_SCOPE, scope_d, DOCKER_LABEL_THREAD, thread_d,
			 DOCKER_LABEL_KEY, key_digest);
}

static void fold(msb_disposal_failure *failure, msb_disposal_code code, const char *fmt, ...)
	MSB_PRINTF(3, 4);
static void fold(msb_disposal_failure *failure, msb_disposal_code code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	msb_disposal_failure f = { 0 };
	msb_disposal_failure_set(&f, code, "%s", msg);
	msb_disposal_failure_fold(failure, &f);
}

static msb_disposal_code code_of(const msb_error *e)
{
	return e->code == MSB_E_TIMEOUT ? MSB_DISPOSAL_TIMEOUT : MSB_DISPOSAL_UNREACHABLE;
}

bool docker_remove(const docker_ctx *ctx, const char *name, msb_disposal_failure *failure)
{
	char *esc = docker_escape(name);
	char path[600];
	if (!esc || strlen(esc) > 400) {
		free(esc);
		fold(failure, MSB_DISPOSAL_UNKNOWN, "backend " DOCKER_NAME ": container %s: out of "
		     "memory", name);
		return true;
	}
	/*
	 * force: kill and remove in one call (the container's init takes every process with it:
	 * a pid namespace); v: its anonymous volumes too (msb mounts none, but an image's VOLUME
	 * would make one). 409 is Docker's "removal already in progress" (another msb process
	 * disposing the same orphan): wait for that one to finish rather than fail.
	 */
	bool left = true;
	for (int attempt = 0; attempt < 20; attempt++) {
		snprintf(path, sizeof path, "/containers/%s?force=1&v=1", esc);
		docker_reply r;
		msb_error e = MSB_ERROR_INIT;
		if (docker_api(ctx, "DELETE", path, NULL, &r, &e) != MSB_OK) {
			fold(failure, code_of(&e), "backend " DOCKER_NAME ": container %s could not be "
			     "removed: %s", name, msb_error_message(&e));
			msb_error_clear(&e);
			break;
		}
		docker_reply_free(&r);
		if (r.status == 409) {
			nanosleep(&(struct timespec){ 0, 100 * 1000000L }, NULL);
			continue;
		}
		if (r.status != 204 && r.status != 200 && r.status != 404) {
			fold(failure, r.status == 403 ? MSB_DISPOSAL_REFUSED : MSB_DISPOSAL_UNKNOWN,
			     "backend " DOCKER_NAME ": container %s could not be removed: %s", name,
			     r.message);
			break;
		}
		/* Verified, not assumed: an inspect must now say there is no such container. */
		snprintf(path, sizeof path, "/containers/%s/json", esc);
		if (docker_api(ctx, "GET", path, NULL, &r, &e) != MSB_OK) {
			fold(failure, code_of(&e), "backend " DOCKER_NAME ": container %s: its removal "
			     "could not be verified: %s", name, msb_error_message(&e));
			msb_error_clear(&e);
			break;
		}
		docker_reply_free(&r);
		if (r.status == 404) {
			left = false;
			break;
		}
		nanosleep(&(struct timespec){ 0, 100 * 1000000L }, NULL);
	}
	if (left && !failure->detail)
		fold(failure, MSB_DISPOSAL_TIMEOUT, "backend " DOCKER_NAME ": container %s: still "
		     "there after its removal", name);
	free(esc);
	return left;
}

bool docker_sweep(const docker_ctx *ctx, const char *const *label_pairs, uint64_t *count,
		  msb_disposal_failure *failure)
{
	json_t *labels = json_array();
	char buf[200];
	snprintf(buf, sizeof buf, "%s=%s", DOCKER_LABEL_BACKEND, DOCKER_NAME);
	json_array_append_new(labels, json_string(buf));
	snprintf(buf, sizeof buf, "%s=%s", DOCKER_LABEL_STATE, ctx->state_digest);
	json_array_append_new(labels, json_string(buf));
	for (const char *const *p = label_pairs; p && *p; p += 2) {
		snprintf(buf, sizeof buf, "%s=%s", p[0], p[1]);
		json_array_append_new(labels, json_string(buf));
	}
	json_t *filters = json_pack("{s:o}", "label", labels);
	char *text = filters ? json_dumps(filters, JSON_COMPACT) : NULL;
	char *esc = text ? docker_escape(text) : NULL;
	json_decref(filters);
	free(text);
	if (!esc) {
		fold(failure, MSB_DISPOSAL_UNKNOWN, "backend " DOCKER_NAME ": out of memory");
		return true;
	}
	size_t plen = strlen(esc) + 64;
	char *path = malloc(plen);
	docker_reply r = { 0 };
	msb_error e = MSB_ERROR_INIT;
	bool failed = false;
	if (!path) {
		fold(failure, MSB_DISPOSAL_UNKNOWN, "backend " DOCKER_NAME ": out of memory");
		failed = true;
	} else {
		snprintf(path, plen, "/containers/json?all=1&filters=%s", esc);
		if (docker_api(ctx, "GET", path, NULL, &r, &e) != MSB_OK) {
			fold(failure, MSB_DISPOSAL_UNLISTED, "backend " DOCKER_NAME ": the engine's "
			     "containers could not be listed: %s", msb_error_message(&e));
			failed = true;
		} else if (r.status != 200 || !json_is_array(r.body)) {
			fold(failure, MSB_DISPOSAL_UNLISTED, "backend " DOCKER_NAME ": the engine's "
			     "containers could not be listed: %s", r.message);
			failed = true;
		}
	}
	size_t i;
	json_t *c;
	json_array_foreach(failed ? NULL : r.body, i, c) {
		const char *id = json_string_value(json_object_get(c, "Id"));
		if (!id)
			continue;
		if (docker_remove(ctx, id, failure))
			failed = true;
		else
			(*count)++;
	}
	docker_reply_free(&r);
	msb_error_clear(&e);
	free(path);
	free(esc);
	return failed;
}
