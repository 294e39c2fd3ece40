/*
 * fuzz_elf_seeds.c — the seeds of fuzz_elf_replay: small, complete ELF shared objects made
 * here byte by byte (the replay keeps 4 KiB of each input, and a linked .so is bigger), one
 * with DT_HASH and one with DT_GNU_HASH, each defining a descriptor, a function and a stale
 * bare symbol. Each must pass the check whole, so mutants start from inputs that reach the
 * symbol tables.
 */
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_replay.h"
#include "loader_elf.h"

static const char strtab[] = "\0msb_backend_v27\0msb_backend_limits\0helper\0";
enum { NAME_DESC = 1, NAME_STALE = 17, NAME_HELPER = 36 };

/* Layout: Ehdr, 2 Phdrs, dynamic, hash, dynsym, dynstr, data; one PT_LOAD over the file. */
static size_t make_seed(unsigned char *out, size_t cap, bool gnu)
{
	memset(out, 0, cap);
	size_t at = sizeof(ElfW(Ehdr)) + 2 * sizeof(ElfW(Phdr));
	size_t dyn_at = at, n_dyn = 7;
	at += n_dyn * sizeof(ElfW(Dyn));
	size_t hash_at = at;
	uint32_t nsym = 4;
	if (gnu) {
		/* nbuckets 1, symoffset 1, bloom 1 word (all ones), shift 6; bucket[0]=1; chain. */
		uint32_t h[4] = { 1, 1, 1, 6 };
		memcpy(out + at, h, sizeof h);
		at += sizeof h;
		ElfW(Addr) bloom = (ElfW(Addr))-1;
		memcpy(out + at, &bloom, sizeof bloom);
		at += sizeof bloom;
		uint32_t bucket = 1, chain[3] = { 2, 4, 7 }; /* the last has bit 0 set */
		memcpy(out + at, &bucket, 4);
		at += 4;
		memcpy(out + at, chain, sizeof chain);
		at += sizeof chain;
	} else {
		uint32_t h[2 + 1 + 4] = { 1, nsym, 0, 0, 0, 0, 0 };
		memcpy(out + at, h, sizeof h);
		at += sizeof h;
	}
	at = (at + 7) & ~(size_t)7;
	size_t sym_at = at;
	at += nsym * sizeof(ElfW(Sym));
	size_t str_at = at;
	memcpy(out + at, strtab, sizeof strtab);
	at += sizeof strtab;
	at = (at + 7) & ~(size_t)7;
	size_t data_at = at;
	at += 256;
	if (at > cap)
		abort();

	ElfW(Sym) syms[4] = { { 0 } };
	syms[1] = (ElfW(Sym)){ .st_name = NAME_DESC, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
			       .st_shndx = 1, .st_value = data_at, .st_size = 200 };
	syms[2] = (ElfW(Sym)){ .st_name = NAME_STALE, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
			       .st_shndx = 1, .st_value = data_at + 200, .st_size = 48 };
	syms[3] = (ElfW(Sym)){ .st_name = NAME_HELPER, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
			       .st_shndx = 1, .st_value = data_at + 248, .st_size = 8 };
	memcpy(out + sym_at, syms, sizeof syms);

	ElfW(Dyn) dyn[7] = {
		{ gnu ? DT_GNU_HASH : DT_HASH, { hash_at } }, { DT_STRTAB, { str_at } },
		{ DT_SYMTAB, { sym_at } }, { DT_STRSZ, { sizeof strtab } },
		{ DT_SYMENT, { sizeof(ElfW(Sym)) } }, { DT_FLAGS_1, { 0 } }, { DT_NULL, { 0 } },
	};
	memcpy(out + dyn_at, dyn, sizeof dyn);

	ElfW(Phdr) ph[2] = {
		{ .p_type = PT_LOAD, .p_flags = PF_R, .p_offset = 0, .p_vaddr = 0,
		  .p_filesz = at, .p_memsz = at, .p_align = 16 },
		{ .p_type = PT_DYNAMIC, .p_flags = PF_R, .p_offset = dyn_at, .p_vaddr = dyn_at,
		  .p_filesz = sizeof dyn, .p_memsz = sizeof dyn, .p_align = 8 },
	};
	memcpy(out + sizeof(ElfW(Ehdr)), ph, sizeof ph);

	ElfW(Ehdr) eh = { .e_type = ET_DYN, .e_version = EV_CURRENT,
			  .e_phoff = sizeof(ElfW(Ehdr)), .e_ehsize = sizeof(ElfW(Ehdr)),
			  .e_phentsize = sizeof(ElfW(Phdr)), .e_phnum = 2 };
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = UINTPTR_MAX == 0xffffffffu ? ELFCLASS32 : ELFCLASS64;
	eh.e_ident[EI_DATA] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	/* The machine of a real object of this host: this program's own. */
	FILE *self = fopen("/proc/self/exe", "rb");
	ElfW(Ehdr) own;
	if (!self || fread(&own, sizeof own, 1, self) != 1)
		abort();
	fclose(self);
	eh.e_machine = own.e_machine;
	memcpy(out, &eh, sizeof eh);
	return at;
}

static msb_errc count(void *ctx, const msb_elf_symbol *sym, msb_error *err)
{
	(void)sym, (void)err;
	++*(size_t *)ctx;
	return MSB_OK;
}

void fuzz_replay_seeds(fuzz_corpus *c)
{
	for (int gnu = 0; gnu <= 1; gnu++) {
		unsigned char buf[4096];
		size_t len = make_seed(buf, sizeof buf, gnu);
		size_t n = 0;
		msb_error err = MSB_ERROR_INIT;
		if (msb_elf_inspect(buf, len, "seed.so", count, &n, &err) != MSB_OK || n != 3) {
			fprintf(stderr, "fuzz_elf_seeds: the %s seed is refused (%zu symbols): %s\n",
				gnu ? "GNU hash" : "SysV hash", n, msb_error_message(&err));
			exit(1);
		}
		fuzz_corpus_add(c, buf, len);
	}
}
