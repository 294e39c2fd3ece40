/*
 * test_router_noalloc.c — a passing ensure_can_serve allocates nothing, under either
 * selection: it is on a host's per-call path. This binary defines malloc, calloc and
 * realloc itself (the dynamic linker binds libmsb's calls to them, the executable coming
 * first) and counts the calls made while armed. A sanitizer build owns the allocator, so
 * there the test skips.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "msb_test.h"
#include "router_fixture.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COUNTING 0
#else
#define COUNTING 1
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);

static atomic_bool armed;
static atomic_long allocations;

void *malloc(size_t size)
{
	if (atomic_load(&armed))
		atomic_fetch_add(&allocations, 1);
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	if (atomic_load(&armed))
		atomic_fetch_add(&allocations, 1);
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	if (atomic_load(&armed))
		atomic_fetch_add(&allocations, 1);
	return __libc_realloc(p, size);
}

static long counted(msb_router *r, const msb_spec *spec, msb_errc expect)
{
	msb_error err = MSB_ERROR_INIT;
	const msb_backend *chosen = NULL;
	atomic_store(&allocations, 0);
	atomic_store(&armed, true);
	for (int i = 0; i < 100; i++)
		if (msb_router_ensure_can_serve(r, spec, &chosen, &err) != expect)
			break;
	atomic_store(&armed, false);
	msb_error_clear(&err);
	return atomic_load(&allocations);
}
#endif

static void a_passing_check_allocates_nothing(void **state)
{
	(void)state;
#if COUNTING
	static fx f;
	fx_init(&f, NULL);
	msb_backend *bs[2] = { fx_open(&f, "inprocess", "egress_modes: [allowlist]\n"),
			       fx_open(&f, "inproc_b", NULL) };
	msb_router_options o = fx_options(&f);
	msb_router *fixed = NULL, *routed = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_router_new(&bs[1], 1, &o, &fixed, &err), MSB_OK);
	o.selection = MSB_SELECTION_PER_SPEC;
	assert_int_equal(msb_router_new(bs, 2, &o, &routed, &err), MSB_OK);
	msb_spec spec;
	msb_spec_init(&spec, "k");
	assert_int_equal(counted(fixed, &spec, MSB_OK), 0);
	assert_int_equal(counted(routed, &spec, MSB_OK), 0); /* past one refusal, to the second */
	/* The counter sees allocations: a refusal formats its sentence. */
	spec.egress = MSB_EGRESS_UNRESTRICTED;
	assert_true(counted(fixed, &spec, MSB_E_EGRESS_NOT_ENFORCED) > 0);
	msb_router_free(fixed);
	msb_router_free(routed);
	fx_free(&f);
#endif
}

int main(void)
{
#if !COUNTING
	printf("skip: a sanitizer build owns the allocator, so this binary cannot count its calls\n");
	return MSB_TEST_SKIP;
#endif
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_passing_check_allocates_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
