/*
 * plugins/docker/docker_api.c — the Engine API client: one HTTP request over the engine's
 * unix socket, with libcurl (CURLOPT_UNIX_SOCKET_PATH) and Jansson for the JSON bodies.
 *
 * Why these two: both are Debian's, maintained, and already the project's (configure.ac);
 * libcurl gets HTTP/1.1 right (chunked replies, which dockerd sends for large bodies,
 * keep-alive, timeouts) where a hand-rolled client would get it mostly right, and Jansson
 * is the one JSON library of the project. The engine is reached only through this file, and
 * never through the `docker` command: a process start per call would cost more than the
 * whole call, and parsing a CLI's text is a contract nobody promised.
 *
 * Every reply is bounded (REPLY_MAX: an inspect is a few KiB, a list of containers of one
 * scope tens) and every call bounded in time (api_timeout): an engine that hangs or answers
 * without end is an error, never a hang.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "docker_internal.h"

/* The API version both engines here serve (Docker 20.10: 1.41; Podman 4.3's compat API too). */
#define API_PREFIX "http://localhost/v1.41"
#define REPLY_MAX (4u * 1024 * 1024)

typedef struct sink {
	msb_buf buf;
	bool over;
} sink;

static size_t on_data(char *data, size_t size, size_t n, void *p)
{
	sink *s = p;
	size_t len = size * n;
	if (s->buf.len + len > REPLY_MAX) {
		s->over = true;
		return 0; /* curl fails the transfer with CURLE_WRITE_ERROR */
	}
	if (msb_buf_append(&s->buf, data, len, NULL) != MSB_OK)
		return 0;
	return len;
}

char *docker_escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0);
	char *out = e ? strdup(e) : NULL;
	curl_free(e);
	return out;
}

void docker_reply_free(docker_reply *reply)
{
	if (reply->body)
		json_decref(reply->body);
	reply->body = NULL;
}

/* The engine's error message (Docker and Podman both say {"message": "..."}), else the text. */
static void set_message(docker_reply *reply, const msb_buf *raw)
{
	const char *m = NULL;
	if (reply->body && json_is_object(reply->body))
		m = json_string_value(json_object_get(reply->body, "message"));
	if (!m)
		m = raw->data ? (const char *)raw->data : "";
	snprintf(reply->message, sizeof reply->message, "%s", m);
	for (char *c = reply->message; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
}

msb_errc docker_api(const docker_ctx *ctx, const char *method, const char *path, json_t *body,
		    docker_reply *reply, msb_error *err)
{
	memset(reply, 0, sizeof *reply);
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	size_t ulen = strlen(API_PREFIX) + strlen(path) + 1;
	char *url = malloc(ulen);
	CURL *c = curl_easy_init();
	struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
	if (!c || !url || !headers || (body && !text)) {
		curl_easy_cleanup(c);
		curl_slist_free_all(headers);
		free(url);
		free(text);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	snprintf(url, ulen, "%s%s", API_PREFIX, path);
	sink s = { 0 };
	char curl_err[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, ctx->socket);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	/* A POST always has a body (empty: Content-Length 0); GET and DELETE have none. */
	if (text || strcmp(method, "POST") == 0)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, text ? text : "");
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_err);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM in a host's threads */
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(ctx->api_timeout * 1000.0));
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(ctx->api_timeout * 1000.0));
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
	CURLcode cc = curl_easy_perform(c);
	msb_errc rc = MSB_OK;
	if (cc == CURLE_OK) {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply->status);
		if (s.buf.len)
			reply->body = json_loadb((const char *)s.buf.data, s.buf.len, 0, NULL);
		set_message(reply, &s.buf);
	} else if (s.over) {
		rc = msb_error_set(err, MSB_E_BACKEND, "the engine at %s answered %s %s with more "
				   "than %u bytes (refused)", ctx->socket, method, path, REPLY_MAX);
	} else if (cc == CURLE_OPERATION_TIMEDOUT) {
		rc = msb_error_set(err, MSB_E_TIMEOUT, "the engine at %s did not answer %s %s within "
				   "%.1f s", ctx->socket, method, path, ctx->api_timeout);
	} else {
		rc = msb_error_set(err, MSB_E_BACKEND, "the engine at %s cannot be reached for %s "
				   "%s: %s", ctx->socket, method, path,
				   curl_err[0] ? curl_err : curl_easy_strerror(cc));
	}
	msb_buf_free(&s.buf);
	curl_easy_cleanup(c);
	curl_slist_free_all(headers);
	free(url);
	free(text);
	return rc;
}
