/*
 * fuzz_replay.h — run a libFuzzer target without libFuzzer, so the plain and sanitizer passes
 * of `make check` hold every fuzz target to its promises on each change: its seeds, then a
 * fixed number of mutants of them, the same on every run (a failure reproduces exactly).
 * It is no substitute for coverage-guided fuzzing (`make fuzz-agent`, `make fuzz-config`,
 * which need clang); it is what keeps their findings from coming back.
 *
 * A replay program links tests/lib/fuzz_replay.c (its main), the target's source (which
 * defines LLVMFuzzerTestOneInput and may define LLVMFuzzerInitialize) and a file defining
 * fuzz_replay_seeds. A finding ends the program as it would end libFuzzer: the target's
 * abort(), a crash, or a sanitizer's report.
 */
#ifndef MSB_FUZZ_REPLAY_H
#define MSB_FUZZ_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include <msb/types.h>

typedef struct fuzz_corpus {
	msb_buf *items;
	size_t len, cap;
} fuzz_corpus;

/* Add a copy of `len` bytes; exits the program when out of memory. */
void fuzz_corpus_add(fuzz_corpus *c, const void *data, size_t len);
/* Add every regular file of `dir` whose name ends in `suffix`, in name order (at most the
 * first 4 KiB of each, libFuzzer's default cap); exits when `dir` cannot be read. */
void fuzz_corpus_add_dir(fuzz_corpus *c, const char *dir, const char *suffix);

/*
 * Provided by each replay program: the well-formed inputs its mutants start from. It should
 * check that they are well-formed (decoded, accepted): mutants of inputs refused at their
 * first byte would never reach the code the target is for.
 */
void fuzz_replay_seeds(fuzz_corpus *c);

#endif
