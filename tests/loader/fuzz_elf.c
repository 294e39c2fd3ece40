/*
 * fuzz_elf.c — libFuzzer target for the check a plugin file passes before dlopen
 * (core/lib/loader_elf.c): arbitrary bytes as a plugin file. The check must never read
 * outside the bytes (ASan), never load a value it has not copied out (UBSan), and answer
 * every input with either success or an ImportError that names the file; each symbol it
 * reports must be a NUL-terminated name inside the bytes.
 *
 * Built on demand (`make fuzz-elf`, clang with libFuzzer); replayed without libFuzzer in
 * every pass of `make check` (fuzz_elf_replay, seeded by fuzz_elf_seeds.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader_elf.h"

#define FUZZ_FILE "fuzz/plugin.so"

const char *__ubsan_default_options(void);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

static void broken(const char *what, const char *message)
{
	fprintf(stderr, "fuzz_elf: %s: %s\n", what, message ? message : "(none)");
	abort();
}

typedef struct bounds {
	const uint8_t *data;
	size_t size;
	size_t symbols;
} bounds;

static msb_errc check_symbol(void *ctx, const msb_elf_symbol *sym, msb_error *err)
{
	bounds *b = ctx;
	const uint8_t *name = (const uint8_t *)sym->name;
	if (name < b->data || name >= b->data + b->size)
		broken("a symbol name outside the input", NULL);
	if (!memchr(name, '\0', (size_t)(b->data + b->size - name)))
		broken("a symbol name not terminated inside the input", NULL);
	b->symbols++;
	return MSB_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly `size` bytes, so ASan sees any read past the end. */
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	bounds b = { copy, size, 0 };
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = msb_elf_inspect(copy, size, FUZZ_FILE, check_symbol, &b, &err);
	if (rc != MSB_OK) {
		if (rc != MSB_E_IMPORT)
			broken("a refusal that is not ImportError", msb_error_message(&err));
		if (strncmp(msb_error_message(&err), "plugin " FUZZ_FILE ": ", 9 + sizeof FUZZ_FILE - 1))
			broken("a refusal that does not name the file", msb_error_message(&err));
	}
	msb_error_clear(&err);
	free(copy);
	return 0;
}
