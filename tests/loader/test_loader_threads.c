/*
 * test_loader_threads.c — msb_loader_load from several threads at once on one loader (also
 * run under ThreadSanitizer: TSAN_TESTS in Makefile.am). Distinct plugins loaded together
 * are each kept exactly once, while another thread reads the loader; one plugin raced by
 * every thread is kept once, every other load refused as a second load is, and the kept one
 * still works after the losers have dlclosed their references.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <msb/loader.h>

#include "msb_test.h"

/* Rounds of each race: every round is a fresh loader, so a lost update has many chances. */
#define ROUNDS 12
#define LOADERS 8

static const char *const distinct_paths[LOADERS] = {
	MSB_TEST_FIXTURE("good"),
	MSB_TEST_FIXTURE("silent"),
	MSB_TEST_MODULE("tests/loader", "named_0"),
	MSB_TEST_MODULE("tests/loader", "named_1"),
	MSB_TEST_MODULE("tests/loader", "named_2"),
	MSB_TEST_MODULE("tests/loader", "named_3"),
	MSB_TEST_MODULE("tests/loader", "named_4"),
	MSB_TEST_MODULE("tests/loader", "named_5"),
};
static const char *const distinct_names[LOADERS] = {
	"fixture_good",   "fixture_silent", "loader_named_0", "loader_named_1",
	"loader_named_2", "loader_named_3", "loader_named_4", "loader_named_5",
};

struct loading {
	msb_loader *loader;
	const char *path;
	pthread_barrier_t *start;
	const msb_plugin *got;
	msb_errc rc;
	char message[1024];
};

/* cmocka's asserts must stay on the main thread: a loader thread only records. */
static void *load(void *arg)
{
	struct loading *l = arg;
	msb_error err = MSB_ERROR_INIT;
	pthread_barrier_wait(l->start);
	l->rc = msb_loader_load(l->loader, l->path, &l->got, &err);
	snprintf(l->message, sizeof l->message, "%s", msb_error_message(&err));
	msb_error_clear(&err);
	return NULL;
}

struct reading {
	msb_loader *loader;
	pthread_barrier_t *start;
	atomic_bool *stop;
	size_t holes;     /* an index below the count that answered NULL or a nameless plugin */
	size_t most_seen;
};

/* Reads the loader while it grows: every index below the count must name a plugin. */
static void *read_loader(void *arg)
{
	struct reading *r = arg;
	pthread_barrier_wait(r->start);
	do {
		size_t n = msb_loader_count(r->loader);
		for (size_t i = 0; i < n; i++) {
			const msb_plugin *p = msb_loader_at(r->loader, i);
			if (!p || !msb_plugin_name(p) || !*msb_plugin_name(p))
				r->holes++;
		}
		if (n > r->most_seen)
			r->most_seen = n;
	} while (!atomic_load(r->stop));
	return NULL;
}

/* Start one thread per path at one barrier (plus the reader when given); join them all. */
static void race(msb_loader *loader, const char *const *paths, struct loading *l, size_t n,
		 struct reading *reader)
{
	pthread_t th[LOADERS], rt;
	pthread_barrier_t start;
	atomic_bool stop;
	atomic_init(&stop, false);
	pthread_barrier_init(&start, NULL, (unsigned)(n + (reader ? 1 : 0)));
	if (reader) {
		*reader = (struct reading){ .loader = loader, .start = &start, .stop = &stop };
		assert_int_equal(pthread_create(&rt, NULL, read_loader, reader), 0);
	}
	for (size_t i = 0; i < n; i++) {
		l[i] = (struct loading){ .loader = loader, .path = paths[i], .start = &start };
		assert_int_equal(pthread_create(&th[i], NULL, load, &l[i]), 0);
	}
	for (size_t i = 0; i < n; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	if (reader) {
		atomic_store(&stop, true);
		assert_int_equal(pthread_join(rt, NULL), 0);
	}
	pthread_barrier_destroy(&start);
}

static void distinct_plugins_loaded_at_once_are_each_kept_once(void **state)
{
	(void)state;
	for (int round = 0; round < ROUNDS; round++) {
		msb_loader *loader = NULL;
		assert_int_equal(msb_loader_new(&loader, NULL), MSB_OK);
		struct loading l[LOADERS];
		struct reading reader;
		race(loader, distinct_paths, l, LOADERS, &reader);

		for (size_t i = 0; i < LOADERS; i++) {
			if (l[i].rc != MSB_OK)
				fail_msg("round %d: load of %s: %s: %s", round, distinct_paths[i],
					 msb_errc_name(l[i].rc), l[i].message);
			assert_non_null(l[i].got);
			assert_string_equal(msb_plugin_name(l[i].got), distinct_names[i]);
			assert_string_equal(msb_plugin_file(l[i].got), distinct_paths[i]);
		}
		/* Every load kept, none twice, and the loader holds what each load returned. */
		assert_int_equal(msb_loader_count(loader), LOADERS);
		for (size_t i = 0; i < LOADERS; i++) {
			size_t found = 0;
			for (size_t j = 0; j < LOADERS; j++)
				if (msb_loader_at(loader, j) == l[i].got)
					found++;
			assert_int_equal(found, 1);
		}
		assert_null(msb_loader_at(loader, LOADERS));
		assert_int_equal(reader.holes, 0);
		assert_true(reader.most_seen <= LOADERS);
		msb_loader_free(loader);
	}
}

static void one_plugin_raced_by_every_thread_is_kept_once(void **state)
{
	(void)state;
	const char *paths[LOADERS];
	for (size_t i = 0; i < LOADERS; i++)
		paths[i] = MSB_TEST_FIXTURE("good");
	for (int round = 0; round < ROUNDS; round++) {
		msb_loader *loader = NULL;
		assert_int_equal(msb_loader_new(&loader, NULL), MSB_OK);
		struct loading l[LOADERS];
		race(loader, paths, l, LOADERS, NULL);

		const msb_plugin *kept = NULL;
		size_t won = 0;
		for (size_t i = 0; i < LOADERS; i++) {
			if (l[i].rc == MSB_OK) {
				won++;
				kept = l[i].got;
				continue;
			}
			/* A loser is refused exactly as a second load one after the other is. */
			if (l[i].rc != MSB_E_BACKEND_NOT_PERMITTED ||
			    !strstr(l[i].message, "'fixture_good' is already the name of plugin") ||
			    !strstr(l[i].message, "ambiguous"))
				fail_msg("round %d: a losing load: %s: %s", round, msb_errc_name(l[i].rc),
					 l[i].message);
			assert_null(l[i].got);
		}
		assert_int_equal(won, 1);
		assert_int_equal(msb_loader_count(loader), 1);
		assert_ptr_equal(msb_loader_at(loader, 0), kept);
		/* The losers dlclosed their references; the winner's object must still be mapped. */
		assert_string_equal(msb_plugin_name(kept), "fixture_good");
		msb_backend *b = NULL;
		msb_error err = MSB_ERROR_INIT;
		if (msb_backend_open(kept, NULL, NULL, NULL, &b, &err) != MSB_OK)
			fail_msg("open the kept plugin: %s", msb_error_message(&err));
		assert_string_equal(msb_backend_name(b), "fixture_good");
		msb_backend_close(b);
		msb_loader_free(loader);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(distinct_plugins_loaded_at_once_are_each_kept_once),
		cmocka_unit_test(one_plugin_raced_by_every_thread_is_kept_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
