/*
 * fuzz_config_seeds.c — the seeds of fuzz_config_replay: the shipped sandbox.yaml and its
 * examples, which must parse, and the hand-made seeds of `make fuzz-config`.
 */
#include <stdio.h>
#include <stdlib.h>

#include <msb/config.h>

#include "fuzz_replay.h"

static void add_parsed(fuzz_corpus *c, const char *dir)
{
	size_t first = c->len;
	fuzz_corpus_add_dir(c, dir, ".yaml");
	for (size_t i = first; i < c->len; i++) {
		msb_config *cfg = NULL;
		msb_error err = MSB_ERROR_INIT;
		const msb_buf *seed = &c->items[i];
		if (msb_config_parse((const char *)seed->data, seed->len, "seed.yaml", NULL, &cfg, &err)) {
			fprintf(stderr, "fuzz_config_seeds: a shipped file in %s is refused: %s\n", dir,
				msb_error_message(&err));
			exit(1);
		}
		msb_config_free(cfg);
	}
}

void fuzz_replay_seeds(fuzz_corpus *c)
{
	add_parsed(c, MSB_TOP_SRCDIR "/conf");
	add_parsed(c, MSB_TOP_SRCDIR "/conf/examples");
	fuzz_corpus_add_dir(c, MSB_TOP_SRCDIR "/tests/config/fuzz_seeds", ".yaml");
}
