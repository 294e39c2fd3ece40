/*
 * test_vocab.c — the vocabulary, the error type, spec defaults and refusals, and the
 * positioned config reads: the words every other part of msb is written in.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <msb/backend.h>
#include <msb/node.h>
#include <msb/types.h>
#include <msb/vocab.h>

static void assert_message_has(const msb_error *err, const char *needle)
{
	if (!strstr(msb_error_message(err), needle))
		fail_msg("message '%s' lacks '%s'", msb_error_message(err), needle);
}

static void ladder_order_is_the_seeds(void **state)
{
	(void)state;
	const char *ladder[] = { "none", "runtime", "os_process", "container",
				 "hardened_container", "microvm", "vm" };
	assert_int_equal(msb_axis_count(MSB_AXIS_ISOLATION), 7);
	for (int i = 0; i < 7; i++) {
		int v = -1;
		assert_int_equal(msb_word_parse(MSB_AXIS_ISOLATION, ladder[i], &v, NULL), MSB_OK);
		assert_int_equal(v, i);
		assert_string_equal(msb_word_name(MSB_AXIS_ISOLATION, v), ladder[i]);
	}
	assert_true(msb_isolation_meets(MSB_ISO_VM, MSB_ISO_MICROVM));
	assert_true(msb_isolation_meets(MSB_ISO_MICROVM, MSB_ISO_MICROVM));
	assert_false(msb_isolation_meets(MSB_ISO_HARDENED_CONTAINER, MSB_ISO_MICROVM));
}

static void every_axis_round_trips(void **state)
{
	(void)state;
	for (int a = 0; a < MSB_AXIS__COUNT; a++) {
		assert_true(msb_axis_count((msb_axis)a) > 0);
		for (int v = 0; v < msb_axis_count((msb_axis)a); v++) {
			const char *w = msb_word_name((msb_axis)a, v);
			assert_non_null(w);
			int back = -1;
			assert_int_equal(msb_word_parse((msb_axis)a, w, &back, NULL), MSB_OK);
			assert_int_equal(back, v);
		}
		assert_null(msb_word_name((msb_axis)a, msb_axis_count((msb_axis)a)));
		assert_null(msb_word_name((msb_axis)a, -1));
	}
}

static void unknown_word_is_an_error_never_a_guess(void **state)
{
	(void)state;
	msb_error err = MSB_ERROR_INIT;
	int v = 42;
	assert_int_equal(msb_word_parse(MSB_AXIS_EGRESS, "open", &v, &err), MSB_E_VALUE);
	assert_int_equal(v, 42);
	assert_string_equal(msb_errc_name(err.code), "ValueError");
	assert_message_has(&err, "unknown egress mode 'open'");
	assert_message_has(&err, "allowlist");
	assert_int_equal(msb_word_parse(MSB_AXIS_CAPABILITY, "network", &v, &err), MSB_E_VALUE);
	assert_message_has(&err, "unknown capability 'network'");
	assert_int_equal(msb_word_parse(MSB_AXIS_ISOLATION, "Container", &v, &err), MSB_E_VALUE);
	msb_error_clear(&err);
}

static void retired_process_rung_has_its_own_message(void **state)
{
	(void)state;
	msb_error err = MSB_ERROR_INIT;
	int v = -1;
	assert_int_equal(msb_word_parse(MSB_AXIS_ISOLATION, "process", &v, &err), MSB_E_VALUE);
	assert_int_equal(v, -1);
	assert_message_has(&err, "'process' is a retired isolation rung and is not 'os_process'");
	assert_message_has(&err, "'none'");
	msb_error_clear(&err);
	/* Only the isolation axis has a retired word. */
	assert_int_equal(msb_word_parse(MSB_AXIS_SCOPE, "process", &v, &err), MSB_E_VALUE);
	assert_message_has(&err, "unknown isolation scope 'process'");
	msb_error_clear(&err);
}

static void sets_refuse_duplicates_and_format_in_axis_order(void **state)
{
	(void)state;
	msb_error err = MSB_ERROR_INIT;
	msb_set s = 0;
	assert_int_equal(msb_set_parse(MSB_AXIS_CAPABILITY, MSB_WORDS("files_in", "exec"), &s, &err), MSB_OK);
	assert_int_equal(s, MSB_DEFAULT_CAPABILITIES);
	char buf[64];
	assert_int_equal(msb_set_format(MSB_AXIS_CAPABILITY, s, buf, sizeof buf), (int)strlen("exec, files_in"));
	assert_string_equal(buf, "exec, files_in");
	assert_int_equal(msb_set_parse(MSB_AXIS_EGRESS, MSB_WORDS("closed", "closed"), &s, &err), MSB_E_VALUE);
	assert_message_has(&err, "egress mode 'closed' is listed twice");
	assert_int_equal(msb_set_parse(MSB_AXIS_EGRESS, MSB_WORDS_NONE, &s, &err), MSB_OK);
	assert_int_equal(s, 0);
	/* Formatting into a short buffer reports the length it needed, like snprintf. */
	char tiny[4];
	int need = msb_set_format(MSB_AXIS_CAPABILITY, MSB_DEFAULT_CAPABILITIES, tiny, sizeof tiny);
	assert_int_equal(need, (int)strlen("exec, files_in"));
	assert_int_equal(strlen(tiny), 3);
	msb_error_clear(&err);
}

static void error_names_are_the_seeds(void **state)
{
	(void)state;
	assert_string_equal(msb_errc_name(MSB_E_EGRESS_NOT_ENFORCED), "SandboxEgressNotEnforced");
	assert_string_equal(msb_errc_name(MSB_E_NO_BACKEND), "NoSandboxBackend");
	assert_string_equal(msb_errc_name(MSB_E_UNCLEAN), "SandboxUnclean");
	assert_string_equal(msb_errc_name(MSB_E_QUEUED_TIMEOUT), "SandboxQueuedTimeout");
	assert_string_equal(msb_errc_name((msb_errc)9999), "Unknown");
	for (int c = 0; c < MSB_E__COUNT; c++)
		assert_int_equal(msb_errc_from_name(msb_errc_name((msb_errc)c)), c);
	assert_int_equal(msb_errc_from_name("NoSuchError"), MSB_E__COUNT);
}

static void error_set_prefix_move_clear(void **state)
{
	(void)state;
	msb_error err = MSB_ERROR_INIT, other = MSB_ERROR_INIT;
	assert_string_equal(msb_error_message(&err), "");
	assert_int_equal(msb_error_set(&err, MSB_E_VALUE, "bad %s", "word"), MSB_E_VALUE);
	assert_int_equal(msb_error_prefix(&err, "plugin %s: ", "x.so"), MSB_E_VALUE);
	assert_string_equal(msb_error_message(&err), "plugin x.so: bad word");
	msb_error_move(&other, &err);
	assert_int_equal(err.code, MSB_OK);
	assert_null(err.message);
	assert_string_equal(msb_error_message(&other), "plugin x.so: bad word");
	assert_int_equal(msb_error_set_errno(&other, MSB_E_OS, 2, "open %s", "f"), MSB_E_OS);
	assert_string_equal(msb_error_message(&other), "open f: No such file or directory");
	/* A NULL error is allowed everywhere: the caller wants only the code. */
	assert_int_equal(msb_error_set(NULL, MSB_E_TYPE, "x"), MSB_E_TYPE);
	msb_error_clear(&other);
	assert_int_equal(other.code, MSB_OK);
}

/*
 * A message quotes what others wrote and is printed on a terminal: control characters come
 * out escaped, through set and prefix alike, and other UTF-8 is kept.
 */
static void control_characters_in_a_message_are_escaped(void **state)
{
	(void)state;
	msb_error err = MSB_ERROR_INIT;
	msb_error_set(&err, MSB_E_CONFIG, "key %s is unknown", "a\x1b[31mred\x07\nline\tx\x7f");
	assert_string_equal(msb_error_message(&err), "key a\\x1b[31mred\\x07\\nline\\tx\\x7f is unknown");
	msb_error_prefix(&err, "from %s: ", "\xc2\x9b" "2J caf\xc3\xa9");
	assert_string_equal(msb_error_message(&err),
			    "from \\u009b2J caf\xc3\xa9: key a\\x1b[31mred\\x07\\nline\\tx\\x7f is unknown");
	assert_int_equal(err.code, MSB_E_CONFIG);
	msb_error_clear(&err);
	msb_error_set(&err, MSB_E_VALUE, "%s", "plain words, ünïcode kept");
	assert_string_equal(msb_error_message(&err), "plain words, ünïcode kept");
	msb_error_clear(&err);
}

static void spec_defaults_are_the_seeds(void **state)
{
	(void)state;
	msb_spec spec;
	msb_spec_init(&spec, "bicep");
	assert_string_equal(spec.kind, "bicep");
	assert_int_equal(spec.egress, MSB_EGRESS_CLOSED);
	assert_int_equal(spec.requires, MSB_DEFAULT_CAPABILITIES);
	assert_int_equal(spec.min_isolation, MSB_UNSET);
	assert_int_equal(spec.requires_os_family, MSB_UNSET);
	assert_int_equal(spec.isolation_scope, MSB_SCOPE_CONVERSATION);
	assert_int_equal(spec.files_in.max_bytes_per_file, 8 * MSB_MIB);
	assert_int_equal(spec.files_out.max_total_bytes, 32 * MSB_MIB);
	assert_int_equal(spec.files_out.max_files, 64);
	assert_int_equal(msb_spec_validate(&spec, NULL), MSB_OK);
}

static void spec_egress_allow_needs_allowlist(void **state)
{
	(void)state;
	msb_error err = MSB_ERROR_INIT;
	msb_spec spec;
	msb_spec_init(&spec, "bicep");
	const char *hosts[] = { "mcr.microsoft.com", NULL };
	spec.egress_allow = hosts;
	assert_int_equal(msb_spec_validate(&spec, &err), MSB_E_VALUE);
	assert_message_has(&err, "egress_allow names hosts");
	assert_message_has(&err, "egress is 'closed'");
	spec.egress = MSB_EGRESS_ALLOWLIST;
	assert_int_equal(msb_spec_validate(&spec, &err), MSB_OK);
	/* An empty list is no network, not a host list. */
	const char *none[] = { NULL };
	spec.egress = MSB_EGRESS_CLOSED;
	spec.egress_allow = none;
	assert_int_equal(msb_spec_validate(&spec, &err), MSB_OK);
	msb_error_clear(&err);
}

static void spec_other_refusals(void **state)
{
	(void)state;
	msb_error err = MSB_ERROR_INIT;
	msb_spec spec;
	msb_spec_init(&spec, "");
	assert_int_equal(msb_spec_validate(&spec, &err), MSB_E_VALUE);
	assert_message_has(&err, "needs a kind");
	msb_spec_init(&spec, "k");
	spec.work_dir = "relative";
	assert_int_equal(msb_spec_validate(&spec, &err), MSB_E_VALUE);
	assert_message_has(&err, "work_dir 'relative'");
	/* '.' and '..' segments never reach a plugin: "/msb/../../../root" is /root. */
	const char *dotted[] = { "/msb/../../../root", "/msb/./work", "/..", "/msb/work/." };
	for (size_t i = 0; i < sizeof dotted / sizeof *dotted; i++) {
		msb_spec_init(&spec, "k");
		spec.work_dir = dotted[i];
		assert_int_equal(msb_spec_validate(&spec, &err), MSB_E_VALUE);
		assert_message_has(&err, "a work_dir is spelled without '.' or '..'");
	}
	msb_spec_init(&spec, "k");
	spec.work_dir = "/msb/..work/.x";
	assert_int_equal(msb_spec_validate(&spec, &err), MSB_OK);
	/* A config: typo is told the key it was near. */
	static const char *const keys[] = { "state_dir", "start_timeout", NULL };
	assert_string_equal(msb_node_nearest_key("stat_dir", keys), "state_dir");
	assert_string_equal(msb_node_nearest_key("start", keys), "start_timeout");
	assert_null(msb_node_nearest_key("nothing_like", keys));
	msb_spec_init(&spec, "k");
	spec.min_isolation = 7;
	assert_int_equal(msb_spec_validate(&spec, &err), MSB_E_VALUE);
	msb_spec_init(&spec, "k");
	const char *bad[] = { "../out.png", "/abs", "a//b", "./x", "a/..", "" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		msb_declared_output o = { .path = bad[i], .required = true };
		spec.declared_outputs = &o;
		spec.n_declared_outputs = 1;
		assert_int_equal(msb_spec_validate(&spec, &err), MSB_E_VALUE);
		assert_message_has(&err, "not a literal path");
	}
	msb_declared_output ok = { .path = "out/diagram.png", .required = true };
	spec.declared_outputs = &ok;
	assert_int_equal(msb_spec_validate(&spec, &err), MSB_OK);
	msb_error_clear(&err);
}

static void limits_match_is_asked_never_clamped(void **state)
{
	(void)state;
	msb_transfer_limits ceiling = MSB_DEFAULT_TRANSFER_LIMITS, ask = ceiling;
	assert_true(msb_transfer_limits_within(&ask, &ceiling));
	ask.max_files = 65;
	assert_false(msb_transfer_limits_within(&ask, &ceiling));
	ask = ceiling;
	ask.max_bytes_per_file = 1;
	assert_true(msb_transfer_limits_within(&ask, &ceiling));
}

static void disposal_fold_keeps_most_actionable_and_every_detail(void **state)
{
	(void)state;
	msb_disposal_failure into = { MSB_DISPOSAL_UNKNOWN, NULL }, a = { 0, NULL }, b = { 0, NULL };
	msb_disposal_failure_set(&a, MSB_DISPOSAL_UNREACHABLE, "docker: %s", "socket gone");
	msb_disposal_failure_set(&b, MSB_DISPOSAL_REFUSED, "acas: no role");
	msb_disposal_failure_fold(&into, &a);
	assert_int_equal(into.code, MSB_DISPOSAL_UNREACHABLE);
	msb_disposal_failure_fold(&into, &b);
	assert_int_equal(into.code, MSB_DISPOSAL_REFUSED);
	assert_string_equal(into.detail, "docker: socket gone; acas: no role");
	assert_null(b.detail);
	msb_disposal_failure_free(&into);
}

static void buffers_and_entry_lists(void **state)
{
	(void)state;
	msb_buf buf = { 0 };
	for (int i = 0; i < 1000; i++)
		assert_int_equal(msb_buf_append(&buf, "ab", 2, NULL), MSB_OK);
	assert_int_equal(buf.len, 2000);
	assert_int_equal(buf.data[buf.len], '\0');
	msb_buf_free(&buf);
	assert_null(buf.data);
	msb_entry_list list = { 0 };
	assert_int_equal(msb_entry_list_add(&list, "a", MSB_ENTRY_SYMLINK, -1, NULL), MSB_OK);
	assert_int_equal(msb_entry_list_add(&list, "b", MSB_ENTRY_FILE, 3, NULL), MSB_OK);
	assert_int_equal(list.len, 2);
	assert_int_equal(list.items[0].kind, MSB_ENTRY_SYMLINK);
	assert_int_equal(list.items[1].size_bytes, 3);
	msb_entry_list_free(&list);
}

/* A hand-built tree standing where core's YAML parser would put one. */
static msb_node scalar(const char *path, unsigned line, const char *text)
{
	return (msb_node){ .kind = MSB_NODE_SCALAR, .file = "sandbox.yaml", .path = path,
			   .line = line, .column = 9, .plain = true, .scalar = text };
}

static void node_reads_are_typed_and_positioned(void **state)
{
	(void)state;
	msb_node size = scalar("x.size", 2, "8MiB"), flag = scalar("x.flag", 3, "yes"),
		 time = scalar("x.timeout", 4, "250ms"), count = scalar("x.count", 5, "12"),
		 typo = scalar("x.sise", 6, "1");
	msb_node_pair pairs[] = { { "size", 2, 3, &size }, { "flag", 3, 3, &flag },
				  { "timeout", 4, 3, &time }, { "count", 5, 3, &count } };
	msb_node map = { .kind = MSB_NODE_MAP, .file = "sandbox.yaml", .path = "x", .line = 1,
			 .column = 1, .len = 4, .pairs = pairs };
	msb_error err = MSB_ERROR_INIT;
	uint64_t bytes = 0, n = 0;
	double secs = 0;
	bool b = false;
	assert_int_equal(msb_node_size(&map, "size", &bytes, &err), MSB_OK);
	assert_int_equal(bytes, 8 * MSB_MIB);
	assert_int_equal(msb_node_seconds(&map, "timeout", &secs, &err), MSB_OK);
	assert_true(secs > 0.2499 && secs < 0.2501);
	assert_int_equal(msb_node_uint(&map, "count", &n, &err), MSB_OK);
	assert_int_equal(n, 12);
	assert_int_equal(msb_node_bool(&map, "flag", &b, &err), MSB_E_CONFIG);
	assert_string_equal(msb_error_message(&err),
			    "sandbox.yaml:3:9: x.flag: expected true or false, found 'yes'");
	/* An absent key leaves the caller's default. */
	n = 7;
	assert_int_equal(msb_node_uint(&map, "absent", &n, &err), MSB_OK);
	assert_int_equal(n, 7);
	assert_int_equal(msb_node_size(&map, "count", &bytes, &err), MSB_OK);
	assert_int_equal(bytes, 12);
	msb_node_pair typo_pairs[] = { { "sise", 6, 3, &typo } };
	msb_node typo_map = { .kind = MSB_NODE_MAP, .file = "sandbox.yaml", .path = "x", .len = 1, .pairs = typo_pairs };
	assert_int_equal(msb_node_check_keys(&typo_map, MSB_WORDS("size", "flag"), &err), MSB_E_CONFIG);
	assert_string_equal(msb_error_message(&err),
			    "sandbox.yaml:6:3: x.sise: unknown key 'sise' (did you mean 'size'?; this mapping takes: size, flag)");
	msb_error_clear(&err);
}

static void size_and_duration_literals(void **state)
{
	(void)state;
	msb_error err = MSB_ERROR_INIT;
	uint64_t v;
	assert_int_equal(msb_parse_size("1GiB", &v, &err), MSB_OK);
	assert_int_equal(v, 1024ull * 1024 * 1024);
	assert_int_equal(msb_parse_size("10 MB", &v, &err), MSB_OK);
	assert_int_equal(v, 10000000ull);
	const char *bad[] = { "8 megs", "-1", "", "1.5MiB", "99999999999999999999", "20000000TiB" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		assert_int_equal(msb_parse_size(bad[i], &v, &err), MSB_E_VALUE);
	double s;
	assert_int_equal(msb_parse_seconds("2m", &s, &err), MSB_OK);
	assert_true(s == 120.0);
	assert_int_equal(msb_parse_seconds("soon", &s, &err), MSB_E_VALUE);
	assert_int_equal(msb_parse_seconds("-3", &s, &err), MSB_E_VALUE);
	assert_int_equal(msb_parse_seconds("nan", &s, &err), MSB_E_VALUE);
	/* Past about 31 years a deadline in milliseconds would no longer fit: refused, by
	 * value and after the unit. */
	assert_int_equal(msb_parse_seconds("1e9", &s, &err), MSB_OK);
	assert_int_equal(msb_parse_seconds("1e10", &s, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "longest"));
	assert_int_equal(msb_parse_seconds("20000000m", &s, &err), MSB_E_VALUE);
	assert_int_equal(msb_parse_seconds("99999999999999999999999", &s, &err), MSB_E_VALUE);
	msb_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ladder_order_is_the_seeds),
		cmocka_unit_test(every_axis_round_trips),
		cmocka_unit_test(unknown_word_is_an_error_never_a_guess),
		cmocka_unit_test(retired_process_rung_has_its_own_message),
		cmocka_unit_test(sets_refuse_duplicates_and_format_in_axis_order),
		cmocka_unit_test(error_names_are_the_seeds),
		cmocka_unit_test(error_set_prefix_move_clear),
		cmocka_unit_test(control_characters_in_a_message_are_escaped),
		cmocka_unit_test(spec_defaults_are_the_seeds),
		cmocka_unit_test(spec_egress_allow_needs_allowlist),
		cmocka_unit_test(spec_other_refusals),
		cmocka_unit_test(limits_match_is_asked_never_clamped),
		cmocka_unit_test(disposal_fold_keeps_most_actionable_and_every_detail),
		cmocka_unit_test(buffers_and_entry_lists),
		cmocka_unit_test(node_reads_are_typed_and_positioned),
		cmocka_unit_test(size_and_duration_literals),
	};
	return cmocka_run_group_tests_name("vocab", tests, NULL, NULL);
}
