/*
 * router_fixture.c — see router_fixture.h.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "msb_inprocess.h"
#include "msb_test.h"
#include "router_fixture.h"

static const char *plugin_path(const char *plugin)
{
	static char path[4096];
	if (strcmp(plugin, "inprocess") == 0)
		snprintf(path, sizeof path, "%s", MSB_TEST_MODULE("plugins/inprocess", "inprocess"));
	else
		snprintf(path, sizeof path, MSB_TOP_BUILDDIR "/tests/router/.libs/%s.so", plugin);
	return path;
}

void fx_init(fx *f, const msb_observer *observer)
{
	memset(f, 0, sizeof *f);
	msb_error err = MSB_ERROR_INIT;
	if (msb_loader_new(&f->loader, &err) != MSB_OK)
		fail_msg("loader: %s", msb_error_message(&err));
	msb_host_init(&f->host, observer);
}

void fx_free(fx *f)
{
	for (size_t i = 0; i < f->n; i++) {
		msb_backend_close(f->backends[i]);
		msb_config_doc_free(f->docs[i]);
	}
	msb_loader_free(f->loader);
	f->n = 0;
}

int fx_setup(void **state)
{
	static fx f;
	fx_init(&f, NULL);
	*state = &f;
	return 0;
}

int fx_teardown(void **state)
{
	fx_free(*state);
	return 0;
}

static const msb_plugin *plugin_get(fx *f, const char *plugin)
{
	for (size_t i = 0; i < msb_loader_count(f->loader); i++)
		if (strcmp(msb_plugin_name(msb_loader_at(f->loader, i)), plugin) == 0)
			return msb_loader_at(f->loader, i);
	const msb_plugin *p = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (msb_loader_load(f->loader, plugin_path(plugin), &p, &err) != MSB_OK)
		fail_msg("load %s: %s", plugin, msb_error_message(&err));
	return p;
}

msb_backend *fx_open(fx *f, const char *plugin, const char *yaml)
{
	assert_true(f->n < FX_MAX);
	const msb_plugin *p = plugin_get(f, plugin);
	msb_error err = MSB_ERROR_INIT;
	const msb_node *config = NULL;
	if (yaml) {
		if (msb_config_doc_parse(yaml, strlen(yaml), "<test>", &f->docs[f->n], &err) != MSB_OK)
			fail_msg("config for %s: %s", plugin, msb_error_message(&err));
		config = msb_config_doc_root(f->docs[f->n]);
	}
	msb_backend *b = NULL;
	if (msb_backend_open(p, config, NULL, &f->host, &b, &err) != MSB_OK)
		fail_msg("open %s: %s", plugin, msb_error_message(&err));
	f->backends[f->n++] = b;
	return b;
}

void fx_warn(void *ctx, const char *message)
{
	fx *f = ctx;
	size_t used = strlen(f->warnings);
	snprintf(f->warnings + used, sizeof f->warnings - used, "%s\n", message);
	f->n_warnings++;
}

msb_router_options fx_options(fx *f)
{
	msb_router_options o = MSB_ROUTER_OPTIONS_INIT;
	o.min_isolation = MSB_ISO_NONE;
	o.warn = fx_warn;
	o.warn_ctx = f;
	return o;
}

static void *hook(const msb_backend *b, const char *name)
{
	void *handle = dlopen(msb_plugin_file(msb_backend_plugin(b)), RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(handle);
	void *fn = dlsym(handle, name);
	dlclose(handle); /* drops only the reference NOLOAD took */
	assert_non_null(fn);
	return fn;
}

size_t fx_count(const msb_backend *b, const char *what)
{
	msb_inprocess_count_fn fn = (msb_inprocess_count_fn)hook(b, MSB_INPROCESS_COUNT);
	return fn(msb_backend_instance_of(b), what);
}

const char *fx_recorded(const msb_backend *b, const char *what, size_t i)
{
	static char buf[4096];
	msb_inprocess_recorded_fn fn = (msb_inprocess_recorded_fn)hook(b, MSB_INPROCESS_RECORDED);
	if (!fn(msb_backend_instance_of(b), what, i, buf, sizeof buf))
		return NULL;
	return buf;
}

void fx_inject(const msb_backend *b, const char *what, const char *value)
{
	msb_inprocess_inject_fn fn = (msb_inprocess_inject_fn)hook(b, MSB_INPROCESS_INJECT);
	assert_int_equal(fn(msb_backend_instance_of(b), what, value), 0);
}

size_t fx_live(const msb_backend *b)
{
	msb_inprocess_live_fn fn = (msb_inprocess_live_fn)hook(b, MSB_INPROCESS_LIVE);
	return fn(msb_backend_instance_of(b));
}

void fx_egress(const msb_backend *b, const msb_key *key, const char *destination, bool allowed)
{
	msb_inprocess_egress_fn fn = (msb_inprocess_egress_fn)hook(b, MSB_INPROCESS_EGRESS);
	fn(msb_backend_instance_of(b), key, destination, allowed);
}

void fx_assert_refused_impl(msb_error *err, msb_errc rc, msb_errc expected, const char *const *words,
			    const char *file, int line)
{
	if (rc != expected || err->code != expected)
		fail_msg("%s:%d: expected %s, got %s (error holds %s): %s", file, line,
			 msb_errc_name(expected), msb_errc_name(rc), msb_errc_name(err->code),
			 msb_error_message(err));
	for (size_t i = 0; words[i]; i++)
		if (!strstr(msb_error_message(err), words[i]))
			fail_msg("%s:%d: %s message lacks \"%s\": %s", file, line, msb_errc_name(expected),
				 words[i], msb_error_message(err));
	msb_error_clear(err);
}
