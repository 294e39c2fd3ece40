/*
 * fuzz_agent_decode.c — libFuzzer target for the agent protocol's decoder: a frame header
 * and a request payload of any type, exactly as msb-agent receives them from a peer.
 * Built only on demand (`make fuzz-agent`, needs clang with libFuzzer); run with
 * `tests/agent/fuzz_agent_decode -max_total_time=60`.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <msb/agent.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < MSB_AGENT_HEADER_SIZE)
		return 0;
	msb_agent_header h;
	msb_error err = MSB_ERROR_INIT;
	if (msb_agent_header_decode(data, &h, &err) != MSB_OK) {
		msb_error_clear(&err);
		return 0;
	}
	/* The payload is whatever follows, whatever the header claimed: both must be safe. */
	msb_agent_request req;
	if (msb_agent_request_decode(h.type, data + MSB_AGENT_HEADER_SIZE,
				     size - MSB_AGENT_HEADER_SIZE, &req, &err) == MSB_OK)
		msb_agent_request_free(&req);
	msb_error_clear(&err);
	return 0;
}
