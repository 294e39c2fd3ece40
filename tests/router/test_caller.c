/*
 * test_caller.c — msb_caller_key reads the host's request context at call time, and refuses
 * a missing or empty scope or thread rather than sharing one "" conversation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include <msb/msb.h>

struct request {
	const char *scope, *thread, *agent;
	int reads;
};

static const char *get_scope(void *ctx)
{
	struct request *r = ctx;
	r->reads++;
	return r->scope;
}

static const char *get_thread(void *ctx)
{
	return ((struct request *)ctx)->thread;
}

static const char *get_agent(void *ctx)
{
	return ((struct request *)ctx)->agent;
}

static msb_caller_context context(struct request *r)
{
	return (msb_caller_context){ sizeof(msb_caller_context), r, get_scope, get_thread, get_agent };
}

static void parts_are_read_at_call_time(void **state)
{
	(void)state;
	struct request req = { "tenant-1", "t-1", "devops", 0 };
	msb_caller_context caller = context(&req);
	msb_key key;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_caller_key(&caller, "call-1", &key, &err), MSB_OK);
	assert_string_equal(key.scope, "tenant-1");
	assert_string_equal(key.thread_id, "t-1");
	assert_string_equal(key.agent_dir, "devops");
	assert_string_equal(key.call_id, "call-1");
	/* The next request has moved on; the same context reads the new values. */
	req.scope = "tenant-2";
	req.thread = "t-9";
	assert_int_equal(msb_caller_key(&caller, NULL, &key, &err), MSB_OK);
	assert_string_equal(key.scope, "tenant-2");
	assert_string_equal(key.thread_id, "t-9");
	assert_string_equal(key.call_id, "");
	assert_int_equal(req.reads, 2);
	/* No agent_dir callback reads as "". */
	caller.agent_dir = NULL;
	assert_int_equal(msb_caller_key(&caller, NULL, &key, &err), MSB_OK);
	assert_string_equal(key.agent_dir, "");
}

static void a_missing_or_empty_scope_or_thread_is_refused(void **state)
{
	(void)state;
	struct request req = { "", "t", "a", 0 };
	msb_caller_context caller = context(&req);
	msb_key key;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_caller_key(&caller, NULL, &key, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "empty scope"));
	req.scope = NULL;
	assert_int_equal(msb_caller_key(&caller, NULL, &key, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "scope callback returned nothing"));
	req.scope = "s";
	req.thread = "";
	assert_int_equal(msb_caller_key(&caller, NULL, &key, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "empty thread_id"));
	caller.thread_id = NULL;
	assert_int_equal(msb_caller_key(&caller, NULL, &key, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "both required"));
	caller = context(&req);
	caller.struct_size = 4;
	assert_int_equal(msb_caller_key(&caller, NULL, &key, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "struct_size"));
	assert_int_equal(msb_caller_key(NULL, NULL, &key, &err), MSB_E_VALUE);
	msb_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parts_are_read_at_call_time),
		cmocka_unit_test(a_missing_or_empty_scope_or_thread_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
