/*
 * cgroup_mounts_threads.c — the kept mount table (msb_cgroup_mounts_read) is one per
 * process and read by every thread that starts a sandbox: threads reading it while others
 * drop it (msb_cgroup_mounts_forget, as a refusal path does) all get the same whole table.
 * Runs under ThreadSanitizer too (TSAN_TESTS), which is what finds a missing lock.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "cgroup_internal.h"

enum { READERS = 4, READS = 300 };

static size_t expected;

static void *reader(void *arg)
{
	(void)arg;
	static __thread msb_cgroup_mounts m; /* 100 KB: not on a thread's stack */
	for (int i = 0; i < READS; i++)
		if (msb_cgroup_mounts_read(&m, NULL) != MSB_OK || m.len != expected)
			return (void *)1;
	return NULL;
}

static void *forgetter(void *arg)
{
	(void)arg;
	for (int i = 0; i < READS; i++)
		msb_cgroup_mounts_forget();
	return NULL;
}

static void readers_and_a_forgetter_agree(void **state)
{
	(void)state;
	static msb_cgroup_mounts first;
	assert_int_equal(msb_cgroup_mounts_read(&first, NULL), MSB_OK);
	expected = first.len;
	pthread_t t[READERS + 1];
	for (int i = 0; i < READERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader, NULL), 0);
	assert_int_equal(pthread_create(&t[READERS], NULL, forgetter, NULL), 0);
	for (int i = 0; i <= READERS; i++) {
		void *bad = NULL;
		assert_int_equal(pthread_join(t[i], &bad), 0);
		assert_null(bad);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(readers_and_a_forgetter_agree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
