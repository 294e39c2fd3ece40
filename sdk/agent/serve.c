/*
 * serve.c — the agent's side of one stream: HELLO first, then one reply per request.
 *
 * A refusal of the peer (another protocol version, a malformed frame) is answered with the
 * reason before the stream is dropped, so the host reports the agent's sentence instead of a
 * bare "connection closed". After a frame that cannot be parsed the stream has lost its
 * framing, so nothing more is read from it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msb/agent.h>

#include "agent_internal.h"

static void reply_error(int wfd, uint16_t type, uint32_t id, const msb_error *e)
{
	msb_buf out = { 0 };
	msb_errc code = e->code == MSB_OK ? MSB_E_BACKEND : e->code;
	if (msb_agent_put_u32(&out, MSB_TAG_ERRC, (uint32_t)code, NULL) == MSB_OK &&
	    msb_agent_put_str(&out, MSB_TAG_MESSAGE, msb_error_message(e), NULL) == MSB_OK &&
	    (type & ~MSB_AGENT_REPLY) == MSB_AGENT_HELLO)
		msb_agent_put_u32(&out, MSB_TAG_VERSION, MSB_AGENT_PROTOCOL_VERSION, NULL);
	msb_agent_frame_write(wfd, (uint16_t)(type | MSB_AGENT_REPLY), id, &out, NULL);
	msb_buf_free(&out);
}

static msb_errc hello(msb_buf *reply, msb_error *err)
{
	char info[96];
	snprintf(info, sizeof info, "msb-agent %s pid %ld", PACKAGE_VERSION, (long)getpid());
	msb_errc rc = msb_agent_put_u32(reply, MSB_TAG_VERSION, MSB_AGENT_PROTOCOL_VERSION, err);
	return rc == MSB_OK ? msb_agent_put_str(reply, MSB_TAG_AGENT_INFO, info, err) : rc;
}

/* The stream a request came on, for the one request answered by several frames. */
typedef struct serve_conn {
	int rfd, wfd;
	uint32_t id;
} serve_conn;

static msb_errc dispatch(const serve_conn *sc, const msb_agent_request *req, msb_buf *reply,
			 bool *shutdown, msb_error *err)
{
	switch (req->type) {
	case MSB_AGENT_HELLO:
		if (req->version != MSB_AGENT_PROTOCOL_VERSION)
			return msb_error_set(err, MSB_E_PROTOCOL,
					     "agent protocol: version %u refused by msb-agent, which "
					     "speaks version %u", req->version,
					     MSB_AGENT_PROTOCOL_VERSION);
		return hello(reply, err);
	case MSB_AGENT_PING:
		return MSB_OK;
	case MSB_AGENT_EXEC:
		return agent_exec(req, reply, err);
	case MSB_AGENT_RUN_CODE:
		return agent_run_code(req, reply, err);
	case MSB_AGENT_EXEC_STREAM:
		return agent_exec_stream(sc->rfd, sc->wfd, sc->id, req, reply, err);
	case MSB_AGENT_BG_START:
		return agent_bg_start(sc->rfd, sc->wfd, req, reply, err);
	case MSB_AGENT_BG_READ:
		return agent_bg_read(req, reply, err);
	case MSB_AGENT_BG_SIGNAL:
		return agent_bg_signal(req, err);
	case MSB_AGENT_BG_LIST:
		return agent_bg_list(reply, err);
	case MSB_AGENT_OUTPUT:
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: output refused by msb-agent: it is what the "
				     "agent sends, never what it is asked");
	case MSB_AGENT_SHUTDOWN:
		*shutdown = true;
		return MSB_OK;
	default:
		return agent_file_op(req, reply, err);
	}
}

/* Serve one decoded frame; false when the stream must end. */
static bool serve_one(int rfd, int wfd, const msb_agent_header *h, const msb_buf *payload,
		      msb_buf *reply, bool *greeted, bool *shutdown)
{
	msb_error e = MSB_ERROR_INIT;
	if (h->version != MSB_AGENT_PROTOCOL_VERSION) {
		msb_error_set(&e, MSB_E_PROTOCOL,
			      "agent protocol: a peer speaking version %u refused by msb-agent, "
			      "which speaks version %u", h->version, MSB_AGENT_PROTOCOL_VERSION);
		reply_error(wfd, MSB_AGENT_HELLO, h->id, &e);
		msb_error_clear(&e);
		return false;
	}
	if (!*greeted && h->type != MSB_AGENT_HELLO) {
		msb_error_set(&e, MSB_E_PROTOCOL,
			      "agent protocol: %s refused by msb-agent: hello must come first",
			      msb_agent_type_name(h->type));
		reply_error(wfd, h->type, h->id, &e);
		msb_error_clear(&e);
		return false;
	}
	/*
	 * Input (or a resize) the host sent for a streamed exec that has ended since: what it
	 * read of its stdin before it saw the reply. Dropped unanswered, so the stream stays in
	 * step.
	 */
	if (*greeted && (h->type == MSB_AGENT_INPUT || h->type == MSB_AGENT_RESIZE))
		return true;
	serve_conn sc = { rfd, wfd, h->id };
	msb_agent_request req;
	reply->len = 0;
	msb_errc rc = msb_agent_request_decode(h->type, payload->data, payload->len, &req, &e);
	if (rc == MSB_OK) {
		rc = msb_agent_put_u32(reply, MSB_TAG_ERRC, MSB_OK, &e);
		if (rc == MSB_OK)
			rc = dispatch(&sc, &req, reply, shutdown, &e);
		msb_agent_request_free(&req);
	}
	bool keep = true;
	if (rc == MSB_OK) {
		msb_agent_frame_write(wfd, (uint16_t)(h->type | MSB_AGENT_REPLY), h->id, reply, NULL);
		if (h->type == MSB_AGENT_HELLO)
			*greeted = true;
	} else {
		reply_error(wfd, h->type, h->id, &e);
		keep = h->type != MSB_AGENT_HELLO; /* a refused hello ends the stream */
	}
	msb_error_clear(&e);
	return keep && !*shutdown;
}

unsigned long agent_serve_stream(int rfd, int wfd, bool *shutdown)
{
	unsigned long frames = 0;
	bool greeted = false;
	/* Both kept for the stream's life, for the reason msb_agent_frame_read gives. */
	msb_buf payload = { 0 }, reply = { 0 };
	*shutdown = false;
	for (;;) {
		msb_agent_header h = { 0 };
		msb_error e = MSB_ERROR_INIT;
		bool eof;
		msb_errc rc = msb_agent_frame_read(rfd, 0, &h, &payload, &eof, &e);
		if (rc != MSB_OK) {
			/* A header was read but refused: say why before dropping the stream. */
			if (!eof && rc == MSB_E_PROTOCOL && h.magic == MSB_AGENT_MAGIC)
				reply_error(wfd, h.type, h.id, &e);
			msb_error_clear(&e);
			break;
		}
		frames++;
		bool more = serve_one(rfd, wfd, &h, &payload, &reply, &greeted, shutdown);
		/* No command is in flight between requests: reaping any child is safe here. */
		agent_reap();
		if (!more)
			break;
	}
	msb_buf_free(&payload);
	msb_buf_free(&reply);
	return frames;
}
