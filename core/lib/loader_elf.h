/*
 * loader_elf.h — reading a plugin file before dlopen (loader_elf.c), inside libmsb. Private
 * to core/lib and to the fuzz target over it.
 */
#ifndef MSB_LOADER_ELF_H
#define MSB_LOADER_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/error.h>

/* One symbol the object itself defines and exports, as its .dynsym says. */
typedef struct msb_elf_symbol {
	const char *name;   /* inside the bytes given to msb_elf_inspect */
	unsigned type;      /* STT_OBJECT, STT_FUNC, … */
	bool absolute;      /* SHN_ABS: a value, not an address in the object */
	bool loaded;        /* [value, value+size) lies in one loadable segment's memory */
	uint64_t value;     /* the address relative to the object's load base */
	uint64_t size;      /* st_size: how many bytes the object says it is */
} msb_elf_symbol;

/* Called for each defined, exported symbol; a refusal stops the walk and is returned. */
typedef msb_errc (*msb_elf_symbol_fn)(void *ctx, const msb_elf_symbol *sym, msb_error *err);

/*
 * Read `file` whole, with a bound, into a malloc'ed buffer (*bytes, *len). Refuses
 * (MSB_E_IMPORT) a file that cannot be opened or is not a regular file, naming what it is
 * (directory, FIFO, device, socket); a FIFO is opened non-blocking and never read.
 */
msb_errc msb_elf_read(const char *file, unsigned char **bytes, size_t *len, msb_error *err);

/*
 * Check that `bytes` are a complete ELF shared object for this machine and word size —
 * header, program headers, every loadable segment, the dynamic section and the symbol and
 * string tables inside the bytes — then call `each` for every symbol it defines and exports.
 * Refusals are MSB_E_IMPORT naming `file` and what the bytes are (truncated, not ELF, built
 * for AArch64, an executable, …). Reads nothing outside [bytes, bytes+len).
 */
msb_errc msb_elf_inspect(const unsigned char *bytes, size_t len, const char *file,
			 msb_elf_symbol_fn each, void *ctx, msb_error *err);

#endif
