/*
 * router_fixture.h — backends for the router's tests: inprocess plugins (built under
 * several names and rungs) opened from YAML `config:` text, their recorded calls and
 * injected failures, and a warning collector.
 */
#ifndef ROUTER_FIXTURE_H
#define ROUTER_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#include <msb/config.h>
#include <msb/msb.h>

#define FX_MAX 80

typedef struct fx {
	msb_loader *loader;
	msb_backend *backends[FX_MAX];
	msb_config_doc *docs[FX_MAX];
	size_t n;
	msb_host host;
	msb_observer observer;   /* used by msb_host_init when fx_with_observer() was called */
	char warnings[8192];     /* every warning, one per line */
	size_t n_warnings;
} fx;

/* Start a fixture; `observer` (may be NULL) is what backends' egress reports reach. */
void fx_init(fx *f, const msb_observer *observer);
void fx_free(fx *f);
/* cmocka setup and teardown for a test whose state is one fixture with no observer. */
int fx_setup(void **state);
int fx_teardown(void **state);
/* A cmocka test of `fn` with that setup and teardown. */
#define FX_TEST(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
/*
 * Open a backend of plugin `plugin` ("inprocess", "inproc_b", "inproc_container",
 * "inproc_microvm", "inproc_vm", "inproc_silent") with `yaml` as its config: (NULL: none).
 * Fails the test on any error.
 */
msb_backend *fx_open(fx *f, const char *plugin, const char *yaml);
/* The warning callback for msb_router_options.warn; ctx is the fixture. */
void fx_warn(void *ctx, const char *message);
/* Router options with the floor opted down to `none` and warnings collected. */
msb_router_options fx_options(fx *f);

/* The inprocess test hooks, on an opened backend. */
size_t fx_count(const msb_backend *b, const char *what);
const char *fx_recorded(const msb_backend *b, const char *what, size_t i); /* static buffer */
void fx_inject(const msb_backend *b, const char *what, const char *value);
size_t fx_live(const msb_backend *b);
void fx_egress(const msb_backend *b, const msb_key *key, const char *destination, bool allowed);

/* Assert an error's code and that its message holds every one of the NULL-terminated words. */
#define fx_assert_refused(err, rc, expected, ...) \
	fx_assert_refused_impl((err), (rc), (expected), (const char *const[]){ __VA_ARGS__, NULL }, __FILE__, __LINE__)
void fx_assert_refused_impl(msb_error *err, msb_errc rc, msb_errc expected, const char *const *words,
			    const char *file, int line);

#endif
