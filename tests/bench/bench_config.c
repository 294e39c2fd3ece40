/*
 * bench_config.c — what reading sandbox.yaml costs. Per iteration, on the shipped
 * conf/sandbox.yaml held in memory: (baseline) a bare libyaml event scan that builds
 * nothing; (tree) msb_config_doc_parse, the positioned node tree with key paths, duplicate
 * checks and ${VAR} expansion; and (load) msb_config_load from the file with the plugins
 * loaded and validated but not initialised (what `msb plugins` does). Prints µs per read
 * and the ratio of each to the baseline, best of ROUNDS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <yaml.h>

#include <msb/config.h>

#include "msb_test.h"

#define ROUNDS 5
#define ITERATIONS 2000

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static char *text;
static size_t text_len;
static const char *path = MSB_TOP_SRCDIR "/conf/sandbox.yaml";

static int bare_scan(void)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int ok = 1;
	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, (const unsigned char *)text, text_len);
	for (int done = 0; ok && !done;) {
		ok = yaml_parser_parse(&p, &ev);
		done = ok && ev.type == YAML_STREAM_END_EVENT;
		if (ok)
			yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	return ok ? 0 : -1;
}

static int tree(void)
{
	msb_config_doc *doc;
	if (msb_config_doc_parse(text, text_len, "sandbox.yaml", &doc, NULL) != MSB_OK)
		return -1;
	msb_config_doc_free(doc);
	return 0;
}

static int load(void)
{
	msb_config_options opts = MSB_CONFIG_OPTIONS_INIT;
	opts.open_backends = false;
	msb_config *cfg;
	msb_error err = MSB_ERROR_INIT;
	if (msb_config_load(path, &opts, &cfg, &err) != MSB_OK) {
		fprintf(stderr, "bench_config: %s\n", msb_error_message(&err));
		msb_error_clear(&err);
		return -1;
	}
	msb_config_free(cfg);
	return 0;
}

static double best_us(int (*fn)(void), int iterations)
{
	double best = 1e300;
	for (int r = 0; r < ROUNDS; r++) {
		double t0 = now_ns();
		for (int i = 0; i < iterations; i++)
			if (fn() != 0)
				exit(1);
		double per = (now_ns() - t0) / iterations / 1e3;
		if (per < best)
			best = per;
	}
	return best;
}

int main(void)
{
	FILE *f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) != 0)
		return 1;
	text_len = (size_t)ftell(f);
	rewind(f);
	text = malloc(text_len);
	if (!text || fread(text, 1, text_len, f) != text_len)
		return 1;
	fclose(f);
	setenv("MSB_PLUGIN_PATH", MSB_TOP_BUILDDIR "/plugins/inprocess/.libs", 1);
	double base = best_us(bare_scan, ITERATIONS);
	double t = best_us(tree, ITERATIONS);
	double l = best_us(load, ITERATIONS / 10);
	printf("conf/sandbox.yaml (%zu bytes), best of %d rounds:\n", text_len, ROUNDS);
	printf("  libyaml event scan (baseline)   %8.1f us\n", base);
	printf("  msb_config_doc_parse (tree)     %8.1f us  %5.2fx baseline\n", t, t / base);
	printf("  msb_config_load (+ plugin load) %8.1f us  %5.2fx baseline\n", l, l / base);
	free(text);
	return 0;
}
