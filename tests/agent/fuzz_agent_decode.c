/*
 * fuzz_agent_decode.c — libFuzzer target for the agent protocol's decoder: a frame header
 * and a request payload of any type, exactly as msb-agent receives them from a peer.
 * Beyond "no crash, no leak": a decoded request is consistent (argv ends where argc says,
 * no string longer than the payload, an exec has a command), and a refusal is the
 * protocol's or memory's, with its message.
 *
 * Replayed in every `make check` (fuzz_agent_decode_replay, tests/lib/fuzz_replay.h); for
 * coverage-guided runs, `make fuzz-agent` builds tests/agent/fuzz_agent_decode with clang
 * (`-max_total_time=60`).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msb/agent.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
msb_errc fuzz_agent_decode_once(const uint8_t *data, size_t size);

static void broken(const char *what, const char *message)
{
	fprintf(stderr, "fuzz_agent_decode: %s: %s\n", what, message ? message : "(no message)");
	abort();
}

static void check_decoded(const msb_agent_request *req, uint16_t type, size_t len)
{
	if (req->argc && (!req->argv || req->argv[req->argc]))
		broken("argv does not end where argc says", NULL);
	for (size_t i = 0; i < req->argc; i++)
		if (strlen(req->argv[i]) > len)
			broken("an argument longer than the payload", NULL);
	if ((type == MSB_AGENT_EXEC || type == MSB_AGENT_EXEC_STREAM) && req->argc < 1)
		broken("an exec decoded without a command", NULL);
	for (size_t i = 0; type == MSB_AGENT_EXEC_STREAM && i < req->envc; i++)
		if (!msb_env_entry_valid(req->env[i], NULL))
			broken("a streamed exec decoded with an unchecked environment name", req->env[i]);
	if (type == MSB_AGENT_OUTPUT &&
	    ((req->stream != MSB_STREAM_STDOUT && req->stream != MSB_STREAM_STDERR) || !req->has_data))
		broken("an output decoded without its stream or data", NULL);
	if ((type == MSB_AGENT_BG_READ || type == MSB_AGENT_BG_SIGNAL) && !msb_bg_id_valid(req->bg_id))
		broken("a background request decoded with an id of no handle's shape", req->bg_id);
	if (type == MSB_AGENT_BG_SIGNAL && (req->signal < 1 || req->signal > 64))
		broken("a signal decoded that does not exist", NULL);
	if (type == MSB_AGENT_BG_START && req->argc < 1)
		broken("a background start decoded without a command", NULL);
	for (size_t i = 0; type == MSB_AGENT_BG_START && i < req->envc; i++)
		if (!msb_env_entry_valid(req->env[i], NULL))
			broken("a background start decoded with an unchecked environment name", req->env[i]);
	if (req->data_len > len)
		broken("data longer than the payload", NULL);
}

/* The decoder's verdict on one frame: the header's, else the payload's. */
msb_errc fuzz_agent_decode_once(const uint8_t *data, size_t size)
{
	if (size < MSB_AGENT_HEADER_SIZE)
		return MSB_E_PROTOCOL;
	msb_agent_header h;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = msb_agent_header_decode(data, &h, &err);
	/* The payload is whatever follows, whatever the header claimed: both must be safe. */
	msb_agent_request req;
	size_t len = size - MSB_AGENT_HEADER_SIZE;
	if (rc == MSB_OK)
		rc = msb_agent_request_decode(h.type, data + MSB_AGENT_HEADER_SIZE, len, &req, &err);
	if (rc == MSB_OK) {
		check_decoded(&req, h.type, len);
		msb_agent_request_free(&req);
		return rc;
	}
	const char *msg = msb_error_message(&err);
	if (err.code != rc || !msg || !*msg || (rc != MSB_E_PROTOCOL && rc != MSB_E_NOMEM))
		broken("a refusal without its code or message, or not the protocol's", msg);
	msb_error_clear(&err);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_agent_decode_once(data, size);
	return 0;
}
