/*
 * test_declarations.c — declarations read by each field's own silence rule, unstated kept
 * distinct from stated-empty, and narrowing that accepts a subset and refuses any widening
 * naming the field and the value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include <msb/loader.h>

static void assert_mentions(const msb_error *err, const char *const *words)
{
	for (size_t i = 0; words[i]; i++)
		if (!strstr(msb_error_message(err), words[i]))
			fail_msg("message lacks '%s': %s", words[i], msb_error_message(err));
}

static void test_nothing_stated_reads_every_default(void **state)
{
	msb_effective_declarations d;
	static const msb_sandbox_limits defaults = MSB_DEFAULT_SANDBOX_LIMITS;
	assert_int_equal(msb_declarations_resolve(&(msb_declarations){ 0 }, "t", &d, NULL), MSB_OK);
	assert_int_equal(d.capabilities, MSB_BIT(MSB_CAP_EXEC) | MSB_BIT(MSB_CAP_FILES_IN));
	assert_memory_equal(&d.limits, &defaults, sizeof defaults);
	assert_int_equal(d.limits.files_in.max_bytes_per_file, 8 * MSB_MIB);
	assert_int_equal(d.limits.files_out.max_total_bytes, 32 * MSB_MIB);
	assert_int_equal(d.limits.files_out.max_files, 64);
	assert_int_equal(d.egress_modes, 0);
	assert_int_equal(d.os_families, 0);
	assert_int_equal(d.isolation_scopes, MSB_BIT(MSB_SCOPE_CONVERSATION));
	assert_false(d.observes_egress);
	assert_int_equal(d.unstated, 0x3f);
	/* NULL is the same as nothing stated. */
	msb_effective_declarations n;
	assert_int_equal(msb_declarations_resolve(NULL, "t", &n, NULL), MSB_OK);
	assert_memory_equal(&n, &d, sizeof d);
}

static void test_stated_empty_is_not_unstated(void **state)
{
	static const bool no = false;
	msb_declarations decl = {
		.capabilities = MSB_WORDS_NONE,
		.egress_modes = MSB_WORDS_NONE,
		.isolation_scopes = MSB_WORDS_NONE,
		.observes_egress = &no,
	};
	msb_effective_declarations d;
	assert_int_equal(msb_declarations_resolve(&decl, "t", &d, NULL), MSB_OK);
	assert_int_equal(d.capabilities, 0);
	assert_int_equal(d.isolation_scopes, 0);
	assert_int_equal(d.unstated, MSB_DECL_LIMITS | MSB_DECL_OS_FAMILIES);
}

static void test_zero_ceiling_is_accepted(void **state)
{
	static const msb_sandbox_limits closed = { { 0, 0, 0 }, { 1, 2, 3 } };
	msb_effective_declarations d;
	assert_int_equal(msb_declarations_resolve(&(msb_declarations){ .limits = &closed }, "t",
						  &d, NULL),
			 MSB_OK);
	assert_int_equal(d.limits.files_in.max_files, 0);
	assert_int_equal(d.limits.files_out.max_files, 3);
	assert_false(d.unstated & MSB_DECL_LIMITS);
}

static void test_unknown_word_and_duplicate_name_the_field(void **state)
{
	msb_error err = MSB_ERROR_INIT;
	msb_effective_declarations d;
	msb_declarations decl = { .os_families = MSB_WORDS("posix", "beos") };
	assert_int_equal(msb_declarations_resolve(&decl, "plugin x.so: declarations", &d, &err),
			 MSB_E_VALUE);
	assert_mentions(&err, MSB_WORDS("plugin x.so: declarations.os_families", "'beos'",
					"posix"));
	decl = (msb_declarations){ .isolation_scopes = MSB_WORDS("call", "call") };
	assert_int_equal(msb_declarations_resolve(&decl, "e", &d, &err), MSB_E_VALUE);
	assert_mentions(&err, MSB_WORDS("e.isolation_scopes", "'call' is listed twice"));
	msb_error_clear(&err);
}

/* A base as a rich plugin would declare it. */
static msb_effective_declarations rich_base(void)
{
	static const msb_sandbox_limits limits = { { 100, 1000, 10 }, { 200, 2000, 20 } };
	static const bool yes = true;
	msb_declarations decl = {
		.capabilities = MSB_WORDS("exec", "files_in", "files_out"),
		.limits = &limits,
		.egress_modes = MSB_WORDS("closed", "allowlist"),
		.os_families = MSB_WORDS("posix"),
		.isolation_scopes = MSB_WORDS("conversation", "call"),
		.observes_egress = &yes,
	};
	msb_effective_declarations base;
	assert_int_equal(msb_declarations_resolve(&decl, "base", &base, NULL), MSB_OK);
	return base;
}

static void test_narrowing_accepted(void **state)
{
	msb_effective_declarations base = rich_base(), out;
	static const msb_sandbox_limits smaller = { { 100, 500, 10 }, { 0, 0, 0 } };
	static const bool no = false;
	msb_declarations narrow = {
		.capabilities = MSB_WORDS("exec"),
		.limits = &smaller,
		.egress_modes = MSB_WORDS("closed"),
		.observes_egress = &no,
	};
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_declarations_narrow(&base, &narrow, "entry", &out, &err), MSB_OK);
	assert_int_equal(out.capabilities, MSB_BIT(MSB_CAP_EXEC));
	assert_int_equal(out.limits.files_in.max_total_bytes, 500);
	assert_int_equal(out.limits.files_out.max_files, 0);
	assert_int_equal(out.egress_modes, MSB_BIT(MSB_EGRESS_CLOSED));
	assert_false(out.observes_egress);
	/* What the narrowing leaves unstated keeps the base's value. */
	assert_int_equal(out.os_families, base.os_families);
	assert_int_equal(out.isolation_scopes, base.isolation_scopes);
	assert_int_equal(out.unstated, 0);

	/* Nothing stated narrows nothing. */
	assert_int_equal(msb_declarations_narrow(&base, NULL, "entry", &out, &err), MSB_OK);
	assert_memory_equal(&out, &base, sizeof base);
}

static void test_narrowing_clears_unstated_only_where_stated(void **state)
{
	msb_effective_declarations base, out;
	assert_int_equal(msb_declarations_resolve(NULL, "b", &base, NULL), MSB_OK);
	msb_declarations narrow = { .capabilities = MSB_WORDS("exec") };
	assert_int_equal(msb_declarations_narrow(&base, &narrow, "e", &out, NULL), MSB_OK);
	assert_int_equal(out.unstated, 0x3f & ~MSB_DECL_CAPABILITIES);
}

static void expect_widening(msb_declarations narrow, const msb_effective_declarations *base,
			    const char *const *words)
{
	msb_error err = MSB_ERROR_INIT;
	msb_effective_declarations out;
	memset(&out, 0xa5, sizeof out);
	msb_effective_declarations before = out;
	assert_int_equal(msb_declarations_narrow(base, &narrow, "backend b: declarations", &out,
						 &err),
			 MSB_E_VALUE);
	assert_mentions(&err, words);
	assert_mentions(&err, MSB_WORDS("never widened"));
	/* A refused narrowing writes nothing. */
	assert_memory_equal(&out, &before, sizeof out);
	msb_error_clear(&err);
}

static void test_widening_refused_naming_field_and_value(void **state)
{
	msb_effective_declarations base = rich_base();
	expect_widening((msb_declarations){ .capabilities = MSB_WORDS("exec", "run_code") }, &base,
			MSB_WORDS("backend b: declarations.capabilities", "'run_code'"));
	expect_widening((msb_declarations){ .egress_modes = MSB_WORDS("unrestricted") }, &base,
			MSB_WORDS("declarations.egress_modes", "'unrestricted'",
				  "{allowlist, closed}"));
	expect_widening((msb_declarations){ .os_families = MSB_WORDS("windows") }, &base,
			MSB_WORDS("declarations.os_families", "'windows'"));
	static const msb_sandbox_limits wider = { { 100, 1000, 10 }, { 200, 2000, 21 } };
	expect_widening((msb_declarations){ .limits = &wider }, &base,
			MSB_WORDS("declarations.limits.files_out.max_files", "21", "ceiling 20"));

	static const bool yes = true;
	msb_effective_declarations blind;
	assert_int_equal(msb_declarations_resolve(NULL, "b", &blind, NULL), MSB_OK);
	expect_widening((msb_declarations){ .observes_egress = &yes }, &blind,
			MSB_WORDS("declarations.observes_egress", "true"));
	expect_widening((msb_declarations){ .isolation_scopes = MSB_WORDS("call") }, &blind,
			MSB_WORDS("declarations.isolation_scopes", "'call'", "{conversation}"));
}

static void test_narrowing_validates_its_own_words(void **state)
{
	msb_effective_declarations base = rich_base(), out;
	msb_error err = MSB_ERROR_INIT;
	msb_declarations narrow = { .egress_modes = MSB_WORDS("closed", "closed") };
	assert_int_equal(msb_declarations_narrow(&base, &narrow, "e", &out, &err), MSB_E_VALUE);
	assert_mentions(&err, MSB_WORDS("e.egress_modes", "listed twice"));
	msb_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_stated_reads_every_default),
		cmocka_unit_test(test_stated_empty_is_not_unstated),
		cmocka_unit_test(test_zero_ceiling_is_accepted),
		cmocka_unit_test(test_unknown_word_and_duplicate_name_the_field),
		cmocka_unit_test(test_narrowing_accepted),
		cmocka_unit_test(test_narrowing_clears_unstated_only_where_stated),
		cmocka_unit_test(test_widening_refused_naming_field_and_value),
		cmocka_unit_test(test_narrowing_validates_its_own_words),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
