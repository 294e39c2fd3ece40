/*
 * test_backend.c — backends opened from the good fixture plugin: init from a config node,
 * the instance's own narrowing, the sandbox.yaml entry's narrowing, the refusals of each,
 * and the sandbox operations reached through what the router will call.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <msb/loader.h>

#include "msb_test.h"

static void assert_mentions(const msb_error *err, const char *const *words)
{
	for (size_t i = 0; words[i]; i++)
		if (!strstr(msb_error_message(err), words[i]))
			fail_msg("message lacks '%s': %s", words[i], msb_error_message(err));
}

static int setup(void **state)
{
	msb_loader *loader;
	if (msb_loader_new(&loader, NULL) != MSB_OK ||
	    msb_loader_load(loader, MSB_TEST_FIXTURE("good"), NULL, NULL) != MSB_OK)
		return -1;
	*state = loader;
	return 0;
}

static int teardown(void **state)
{
	msb_loader_free(*state);
	return 0;
}

static const msb_plugin *good(void **state)
{
	return msb_loader_at(*state, 0);
}

/* A one-key config map, as the config reader would hand it over. */
typedef struct one_key {
	msb_node value;
	msb_node_pair pair;
	msb_node map;
} one_key;

static const msb_node *one_key_config(one_key *c, const char *key, const char *scalar)
{
	c->value = (msb_node){ .kind = MSB_NODE_SCALAR, .file = "<test>", .path = "config.x",
			       .line = 2, .column = 3, .plain = true, .scalar = scalar };
	c->pair = (msb_node_pair){ .key = key, .key_line = 2, .key_column = 3,
				   .value = &c->value };
	c->map = (msb_node){ .kind = MSB_NODE_MAP, .file = "<test>", .path = "config",
			     .line = 1, .column = 1, .len = 1, .pairs = &c->pair };
	return &c->map;
}

static void test_open_without_config_keeps_plugin_declarations(void **state)
{
	msb_backend *b;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_backend_open(good(state), NULL, NULL, NULL, &b, &err), MSB_OK);
	assert_string_equal(msb_backend_name(b), "fixture_good");
	assert_int_equal(msb_backend_isolation(b), MSB_ISO_CONTAINER);
	assert_ptr_equal(msb_backend_plugin(b), good(state));
	assert_ptr_equal(msb_backend_ops(b), msb_plugin_descriptor(good(state)));
	assert_non_null(msb_backend_instance_of(b));
	assert_memory_equal(msb_backend_declarations(b), msb_plugin_declarations(good(state)),
			    sizeof(msb_effective_declarations));
	msb_backend_close(b);
}

static void test_instance_narrows(void **state)
{
	one_key c;
	msb_backend *b;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_backend_open(good(state), one_key_config(&c, "closed_only", "true"),
					  NULL, NULL, &b, &err),
			 MSB_OK);
	const msb_effective_declarations *d = msb_backend_declarations(b);
	assert_int_equal(d->egress_modes, MSB_BIT(MSB_EGRESS_CLOSED));
	assert_int_equal(d->capabilities, msb_plugin_declarations(good(state))->capabilities);
	msb_backend_close(b);
}

static void test_instance_widening_refused(void **state)
{
	one_key c;
	msb_backend *b = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_backend_open(good(state),
					  one_key_config(&c, "observes_egress", "true"), NULL,
					  NULL, &b, &err),
			 MSB_E_BACKEND_NOT_PERMITTED);
	assert_null(b);
	assert_mentions(&err, MSB_WORDS("backend fixture_good", "good.so", "instance_declarations",
					"observes_egress", "never widened"));
	msb_error_clear(&err);
}

static void test_init_refusal_names_backend(void **state)
{
	one_key c;
	msb_backend *b = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_backend_open(good(state), one_key_config(&c, "closed_onyl", "true"),
					  NULL, NULL, &b, &err),
			 MSB_E_CONFIG);
	assert_null(b);
	assert_mentions(&err, MSB_WORDS("backend fixture_good: ", "closed_onyl"));
	msb_error_clear(&err);
}

static void test_entry_narrows_and_refuses_widening(void **state)
{
	msb_backend *b = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_declarations narrow = { .capabilities = MSB_WORDS("exec", "files_in") };
	assert_int_equal(msb_backend_open(good(state), NULL, &narrow, NULL, &b, &err), MSB_OK);
	assert_int_equal(msb_backend_declarations(b)->capabilities, MSB_DEFAULT_CAPABILITIES);
	msb_backend_close(b);

	b = NULL;
	narrow = (msb_declarations){ .capabilities = MSB_WORDS("exec", "host_tools") };
	assert_int_equal(msb_backend_open(good(state), NULL, &narrow, NULL, &b, &err),
			 MSB_E_CONFIG);
	assert_null(b);
	assert_mentions(&err, MSB_WORDS("backend fixture_good: declarations.capabilities",
					"'host_tools'", "never widened"));
	msb_error_clear(&err);
}

/* The operations, through the descriptor and instance the router will use. */
static void test_sandbox_operations_do_what_they_promise(void **state)
{
	msb_backend *b;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_backend_open(good(state), NULL, NULL, NULL, &b, &err), MSB_OK);
	const struct msb_backend_v27 *ops = msb_backend_ops(b);
	msb_backend_instance *self = msb_backend_instance_of(b);
	msb_key key = { .scope = "conversation", .thread_id = "t1", .agent_dir = "", .call_id = "" };
	msb_spec spec;
	msb_spec_init(&spec, "py");
	msb_sandbox_handle *h;
	assert_int_equal(ops->acquire(self, &key, &spec, &h, &err), MSB_OK);

	msb_exec_result res = { 0 };
	msb_exec_request req = { .argv = MSB_WORDS("echo", "hello", "sandbox") };
	assert_int_equal(ops->exec(h, &req, &res, &err), MSB_OK);
	assert_int_equal(res.exit_code, 0);
	assert_string_equal((char *)res.out.data, "hello sandbox\n");
	msb_exec_result_free(&res);

	assert_int_equal(ops->write_file(h, "a/b.txt", "data", 4, "/w", &err), MSB_OK);
	msb_buf buf = { 0 };
	assert_int_equal(ops->read_file(h, "a/b.txt", "/w", 4, &buf, &err), MSB_OK);
	assert_string_equal((char *)buf.data, "data");
	msb_buf_free(&buf);
	assert_int_equal(ops->read_file(h, "a/b.txt", "/w", 3, &buf, &err),
			 MSB_E_TRANSFER_CAP_EXCEEDED);
	assert_int_equal(ops->write_file(h, "../x", "d", 1, "/w", &err), MSB_E_VALUE);

	msb_entry_list list = { 0 };
	assert_int_equal(ops->list_dir(h, ".", "/w", &list, &err), MSB_OK);
	assert_int_equal(list.len, 1);
	assert_string_equal(list.items[0].path, "a/b.txt");
	msb_entry_list_free(&list);

	assert_int_equal(ops->remove(h, "a", "/w", false, &err), MSB_E_IS_DIR);
	assert_int_equal(ops->reclaim(h, "/w/a", "/w", 1.0, &err), MSB_OK);
	msb_entry e = { 0 };
	bool found = true;
	assert_int_equal(ops->stat_file(h, "a/b.txt", "/w", &e, &found, &err), MSB_OK);
	assert_false(found);

	/* A second acquire reaches the same sandbox; a disposed one is gone for both. */
	msb_sandbox_handle *h2;
	assert_int_equal(ops->acquire(self, &key, &spec, &h2, &err), MSB_OK);
	assert_int_equal(ops->write_file(h2, "c", "x", 1, "/w", &err), MSB_OK);
	assert_int_equal(ops->stat_file(h, "c", "/w", &e, &found, &err), MSB_OK);
	assert_true(found);
	free(e.path);
	msb_disposal_failure failure = { 0 };
	assert_false(ops->dispose(self, &key, &failure));
	assert_int_equal(ops->stat_file(h, "c", "/w", &e, &found, &err), MSB_E_BACKEND);
	ops->release(h2);
	ops->release(h);
	msb_error_clear(&err);
	msb_backend_close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_without_config_keeps_plugin_declarations),
		cmocka_unit_test(test_instance_narrows),
		cmocka_unit_test(test_instance_widening_refused),
		cmocka_unit_test(test_init_refusal_names_backend),
		cmocka_unit_test(test_entry_narrows_and_refuses_widening),
		cmocka_unit_test(test_sandbox_operations_do_what_they_promise),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
