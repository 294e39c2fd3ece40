/*
 * fuzz_replay.c — the main of a replay program (fuzz_replay.h): each seed, then mutants of
 * them made by a fixed-seed generator. The mutations are the blind ones libFuzzer starts
 * with (bits, bytes, the boundary values a length or count field is probed with, ranges
 * dropped, repeated, or taken from another seed, an input cut short), stacked one to four
 * deep.
 *
 *   MSB_FUZZ_MUTANTS  mutants per seed (default FUZZ_REPLAY_MUTANTS, which a program's
 *                     build sets to what its target's speed affords)
 *   MSB_FUZZ_SEED     the generator's seed (default fixed, so every run is the same)
 */
#include <dirent.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuzz_replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

#ifndef FUZZ_REPLAY_MUTANTS
#define FUZZ_REPLAY_MUTANTS 20000
#endif

/* libFuzzer's default cap on an input; the seeds here are far smaller. */
#define INPUT_CAP 4096

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_replay: %s\n", what);
	exit(1);
}

void fuzz_corpus_add(fuzz_corpus *c, const void *data, size_t len)
{
	if (c->len == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;
		msb_buf *items = realloc(c->items, cap * sizeof *items);
		if (!items)
			fail("out of memory");
		c->items = items;
		c->cap = cap;
	}
	msb_buf *b = &c->items[c->len++];
	*b = (msb_buf){ 0 };
	if (msb_buf_append(b, data, len, NULL) != MSB_OK)
		fail("out of memory");
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static const char *dir_suffix;

static int has_suffix(const struct dirent *d)
{
	size_t n = strlen(d->d_name), k = strlen(dir_suffix);
	bool file = d->d_type == DT_REG || d->d_type == DT_UNKNOWN;
	return file && n > k && strcmp(d->d_name + n - k, dir_suffix) == 0;
}

void fuzz_corpus_add_dir(fuzz_corpus *c, const char *dir, const char *suffix)
{
	dir_suffix = suffix;
	struct dirent **names;
	int n = scandir(dir, &names, has_suffix, by_name);
	if (n < 0) {
		fprintf(stderr, "fuzz_replay: cannot read %s\n", dir);
		exit(1);
	}
	for (int i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
		FILE *f = fopen(path, "rb");
		free(names[i]);
		if (!f) {
			fprintf(stderr, "fuzz_replay: cannot read %s\n", path);
			exit(1);
		}
		char data[INPUT_CAP];
		size_t got = fread(data, 1, sizeof data, f);
		fclose(f);
		fuzz_corpus_add(c, data, got);
	}
	free(names);
}

static uint64_t rng_state;

/* xorshift64*: small, and the same sequence on every machine. */
static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static size_t below(size_t n)
{
	return n ? (size_t)(rng() % n) : 0;
}

/* The values a length, count or id field is probed with. */
static uint32_t boundary_u32(size_t len)
{
	static const uint32_t fixed[] = { 0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000,
					  0x7fffffff, 0x80000000u, 0xfffffffeu, 0xffffffffu };
	size_t pick = below(sizeof fixed / sizeof *fixed + 3);
	if (pick < sizeof fixed / sizeof *fixed)
		return fixed[pick];
	return (uint32_t)len + (uint32_t)(pick - sizeof fixed / sizeof *fixed) - 1; /* len-1..len+1 */
}

/* One mutation of buf[0..*len) in place (room for INPUT_CAP bytes); `other` for splicing. */
static void mutate_once(uint8_t *buf, size_t *len, const msb_buf *other)
{
	size_t n = *len;
	switch (below(8)) {
	case 0: /* a bit */
		if (n)
			buf[below(n)] ^= (uint8_t)(1u << below(8));
		break;
	case 1: { /* a byte, to an edge */
		static const uint8_t edge[] = { 0, 1, 0x7f, 0x80, 0xff, '\n', ':', '"' };
		if (n)
			buf[below(n)] = edge[below(sizeof edge)];
		break;
	}
	case 2: { /* four bytes, to a boundary value, little-endian as the protocol is */
		if (n < 4)
			break;
		uint32_t v = boundary_u32(n);
		size_t at = below(n - 3);
		for (int i = 0; i < 4; i++)
			buf[at + (size_t)i] = (uint8_t)(v >> (8 * i));
		break;
	}
	case 3: { /* a range dropped */
		if (!n)
			break;
		size_t at = below(n), cut = 1 + below(n - at);
		memmove(buf + at, buf + at + cut, n - at - cut);
		*len = n - cut;
		break;
	}
	case 4: { /* a range repeated */
		if (!n)
			break;
		size_t at = below(n), span = 1 + below(n - at);
		if (n + span > INPUT_CAP)
			break;
		memmove(buf + at + span, buf + at, n - at);
		*len = n + span;
		break;
	}
	case 5: /* cut short */
		*len = below(n + 1);
		break;
	case 6: { /* the rest from another seed */
		if (!other->len)
			break;
		size_t at = below(n + 1), from = below(other->len + 1);
		size_t take = other->len - from;
		if (at + take > INPUT_CAP)
			take = INPUT_CAP - at;
		memcpy(buf + at, other->data + from, take);
		*len = at + take;
		break;
	}
	default: { /* random bytes inserted */
		size_t add = 1 + below(8);
		if (n + add > INPUT_CAP)
			break;
		size_t at = below(n + 1);
		memmove(buf + at + add, buf + at, n - at);
		for (size_t i = 0; i < add; i++)
			buf[at + i] = (uint8_t)rng();
		*len = n + add;
		break;
	}
	}
}

/* Hand the target exactly `len` bytes of their own, so a sanitizer sees a read past them. */
static void run_one(const uint8_t *data, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);
	if (!copy)
		fail("out of memory");
	memcpy(copy, data, len);
	LLVMFuzzerTestOneInput(copy, len);
	free(copy);
}

static unsigned long env_number(const char *name, unsigned long fallback)
{
	const char *v = getenv(name);
	return v && *v ? strtoul(v, NULL, 0) : fallback;
}

int main(int argc, char **argv)
{
	unsigned long mutants = env_number("MSB_FUZZ_MUTANTS", FUZZ_REPLAY_MUTANTS);
	rng_state = env_number("MSB_FUZZ_SEED", 0x6d73622d66757a7aULL) | 1;
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	fuzz_corpus c = { 0 };
	fuzz_replay_seeds(&c);
	if (!c.len)
		fail("no seeds");
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	static uint8_t buf[INPUT_CAP];
	for (size_t s = 0; s < c.len; s++) {
		const msb_buf *seed = &c.items[s];
		size_t seed_len = seed->len < INPUT_CAP ? seed->len : INPUT_CAP;
		run_one(seed->data, seed_len);
		for (unsigned long m = 0; m < mutants; m++) {
			memcpy(buf, seed->data, seed_len);
			size_t len = seed_len;
			for (size_t depth = 1 + below(4); depth > 0; depth--)
				mutate_once(buf, &len, &c.items[below(c.len)]);
			run_one(buf, len);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("fuzz_replay: %zu seeds and %lu mutants of each ran clean in %.2f s\n", c.len, mutants,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	for (size_t s = 0; s < c.len; s++)
		msb_buf_free(&c.items[s]);
	free(c.items);
	return 0;
}
