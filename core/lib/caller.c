/*
 * caller.c — the key of the caller, read from the host's request context at call time.
 *
 * The parts are callbacks rather than values on purpose: a key a caller can supply is a key
 * a model can supply, and that would let one conversation address another's sandbox. So
 * the context is read when the call happens, and a missing or empty scope or thread is a
 * refusal rather than a shared "" conversation every caller would land in.
 */
#include <stddef.h>

#include <msb/router.h>

msb_errc msb_caller_key(const msb_caller_context *caller, const char *call_id, msb_key *key,
			msb_error *err)
{
	if (!caller || caller->struct_size < offsetof(msb_caller_context, agent_dir) + sizeof caller->agent_dir)
		return msb_error_set(err, MSB_E_VALUE,
				     "caller context: missing, or its struct_size predates msb_caller_context; "
				     "initialise it with struct_size = sizeof(msb_caller_context)");
	if (!caller->scope || !caller->thread_id)
		return msb_error_set(err, MSB_E_VALUE,
				     "caller context: the scope and thread_id callbacks are both required; "
				     "they are how a key stays a property of the host's request");
	const char *scope = caller->scope(caller->ctx);
	if (!scope || !*scope)
		return msb_error_set(err, MSB_E_VALUE,
				     "caller context: the scope callback returned %s at call time; a key "
				     "with no scope would let conversations share a sandbox",
				     scope ? "an empty scope" : "nothing");
	const char *thread_id = caller->thread_id(caller->ctx);
	if (!thread_id || !*thread_id)
		return msb_error_set(err, MSB_E_VALUE,
				     "caller context: the thread_id callback returned %s at call time; a "
				     "key with no thread would let conversations share a sandbox",
				     thread_id ? "an empty thread_id" : "nothing");
	const char *agent_dir = caller->agent_dir ? caller->agent_dir(caller->ctx) : NULL;
	key->scope = scope;
	key->thread_id = thread_id;
	key->agent_dir = agent_dir ? agent_dir : "";
	key->call_id = call_id ? call_id : "";
	return MSB_OK;
}
