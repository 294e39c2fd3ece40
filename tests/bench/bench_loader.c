/*
 * bench_loader.c — what validating a plugin costs over merely loading it: per iteration,
 * msb_loader_load + msb_loader_free of the good fixture (dlopen, every descriptor check,
 * dlclose) against a bare dlopen + dlsym + dlclose of the same file. Prints ns per load for
 * each and their ratio; the target is under 1 ms per validated load. Then the same load
 * probed in a child first (issue 18: fork, dlopen + validate there, verdict over a pipe,
 * then the host's own load) against the in-process one: the cost of one fork per plugin
 * file, which a process pays once per plugin.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <msb/loader.h>

#include "msb_test.h"

#define ROUNDS 7
#define ITERATIONS 500

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int bare_load(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h || !dlsym(h, MSB_BACKEND_SYMBOL))
		return -1;
	dlclose(h);
	return 0;
}

static int load_with_probe(const char *path, unsigned probe_ms)
{
	msb_loader *loader;
	msb_error err = MSB_ERROR_INIT;
	if (msb_loader_new(&loader, &err) != MSB_OK)
		return -1;
	msb_loader_set_probe(loader, probe_ms);
	if (msb_loader_load(loader, path, NULL, &err) != MSB_OK) {
		fprintf(stderr, "bench_loader: %s\n", msb_error_message(&err));
		msb_error_clear(&err);
		return -1;
	}
	msb_loader_free(loader);
	return 0;
}

static int validated_load(const char *path)
{
	return load_with_probe(path, 0);
}

static int probed_load(const char *path)
{
	return load_with_probe(path, MSB_LOADER_PROBE_TIMEOUT_MS);
}

/* The median over ROUNDS of the mean ns per call over `iterations`. */
static double measure(int (*load)(const char *), const char *path, int iterations)
{
	double rounds[ROUNDS];
	for (int r = 0; r < ROUNDS; r++) {
		double t0 = now_ns();
		for (int i = 0; i < iterations; i++)
			if (load(path) != 0)
				exit(1);
		rounds[r] = (now_ns() - t0) / iterations;
	}
	for (int i = 1; i < ROUNDS; i++)
		for (int j = i; j > 0 && rounds[j - 1] > rounds[j]; j--) {
			double t = rounds[j];
			rounds[j] = rounds[j - 1];
			rounds[j - 1] = t;
		}
	return rounds[ROUNDS / 2];
}

int main(void)
{
	const char *path = MSB_TEST_FIXTURE("good");
	/* Warm the page cache and the dynamic linker's own state first. */
	if (bare_load(path) != 0 || validated_load(path) != 0) {
		fprintf(stderr, "bench_loader: cannot load %s: %s\n", path, dlerror());
		return 1;
	}
	double bare = measure(bare_load, path, ITERATIONS);
	double validated = measure(validated_load, path, ITERATIONS);
	double probed = measure(probed_load, path, ITERATIONS / 10);
	printf("bare dlopen+dlsym+dlclose:      %8.0f ns per load\n", bare);
	printf("msb_loader_load (validated):    %8.0f ns per load\n", validated);
	printf("ratio validated/bare:           %8.2f\n", validated / bare);
	printf("probe child, then validated:    %8.0f ns per load\n", probed);
	printf("ratio probed/validated:         %8.2f\n", probed / validated);
	printf("target under 1 ms per load:     %s\n", validated < 1e6 ? "met" : "NOT MET");
	return validated < 1e6 ? 0 : 1;
}
