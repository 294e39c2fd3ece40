/*
 * loader_elf.c — the check a plugin file passes before anything dlopens it: that it is a
 * regular file holding a complete ELF shared object for this machine and word size, and what
 * its OWN dynamic symbol table defines.
 *
 * dlopen trusts the file: it mmaps segments past the end of a truncated file (the first
 * touch is SIGBUS, killing the host), blocks forever opening a FIFO, and reports an object
 * for another machine as "No such file or directory". So the file is read here, with a
 * bound, into memory, and every offset the dynamic linker would follow — program headers,
 * each loadable segment, the dynamic section and the symbol and string tables it points at —
 * is checked to lie inside what was read. Nothing is ever mmapped.
 *
 * Symbols come from the object's own .dynsym, reached the way the dynamic linker reaches it
 * (DT_SYMTAB, DT_STRTAB, and DT_HASH or DT_GNU_HASH for the count), never through dlsym:
 * dlsym on a handle searches the object's dependencies too, so a plugin with no descriptor
 * linked to a library that has one would load under that library's descriptor, and a helper
 * library's stale symbol would be blamed on a clean plugin. Every version of a name is a
 * separate .dynsym entry with the bare name, so a stale symbol exported only as
 * `msb_backend_limits@MSB_26` is seen too.
 *
 * msb_elf_inspect works on bytes alone (no file, no system call), so a fuzzer drives it.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader_elf.h"

/* A plugin bigger than this is refused unread: no backend is near it, and it bounds the read. */
#define ELF_MAX_FILE ((size_t)512 << 20)

#if UINTPTR_MAX == 0xffffffffu
#define HOST_CLASS ELFCLASS32
#define HOST_CLASS_NAME "32-bit"
#else
#define HOST_CLASS ELFCLASS64
#define HOST_CLASS_NAME "64-bit"
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_DATA ELFDATA2LSB
#else
#define HOST_DATA ELFDATA2MSB
#endif

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__i386__)
#define HOST_MACHINE EM_386
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#elif defined(__arm__)
#define HOST_MACHINE EM_ARM
#elif defined(__riscv)
#define HOST_MACHINE EM_RISCV
#elif defined(__powerpc64__)
#define HOST_MACHINE EM_PPC64
#elif defined(__powerpc__)
#define HOST_MACHINE EM_PPC
#elif defined(__s390__)
#define HOST_MACHINE EM_S390
#elif defined(__mips__)
#define HOST_MACHINE EM_MIPS
#elif defined(__loongarch__)
#define HOST_MACHINE 258 /* EM_LOONGARCH */
#else
#error "msb: this machine's ELF e_machine is not known to loader_elf.c"
#endif

typedef ElfW(Ehdr) Ehdr;
typedef ElfW(Phdr) Phdr;
typedef ElfW(Dyn) Dyn;
typedef ElfW(Sym) Sym;

static const struct machine_name {
	unsigned machine;
	const char *name;
} machine_names[] = {
	{ EM_X86_64, "x86-64" }, { EM_386, "Intel 80386" }, { EM_AARCH64, "AArch64" },
	{ EM_ARM, "ARM" }, { EM_RISCV, "RISC-V" }, { EM_PPC64, "PowerPC64" },
	{ EM_PPC, "PowerPC" }, { EM_S390, "IBM S/390" }, { EM_MIPS, "MIPS" },
	{ EM_SPARCV9, "SPARC V9" }, { EM_IA_64, "IA-64" }, { 258, "LoongArch" },
	{ EM_BPF, "BPF" },
};

static const char *machine_name(unsigned m)
{
	for (size_t i = 0; i < sizeof machine_names / sizeof machine_names[0]; i++)
		if (machine_names[i].machine == m)
			return machine_names[i].name;
	return NULL;
}

/* The parse state: the bytes and the headers copied out of them (never read in place). */
typedef struct elf_view {
	const unsigned char *b;
	size_t len;
	const char *file;
	Ehdr eh;
	size_t phoff;
	size_t phnum;
} elf_view;

/* [off, off+n) inside the file, without overflow. */
static bool in_file(const elf_view *v, uint64_t off, uint64_t n)
{
	return off <= v->len && n <= v->len - off;
}

static Phdr phdr_at(const elf_view *v, size_t i)
{
	Phdr ph;
	memcpy(&ph, v->b + v->phoff + i * sizeof ph, sizeof ph);
	return ph;
}

/* The file offset of `size` bytes at virtual address `addr`, found through a PT_LOAD. */
static bool vaddr_to_off(const elf_view *v, uint64_t addr, uint64_t size, uint64_t *off)
{
	for (size_t i = 0; i < v->phnum; i++) {
		Phdr ph = phdr_at(v, i);
		if (ph.p_type != PT_LOAD || addr < ph.p_vaddr)
			continue;
		uint64_t rel = addr - ph.p_vaddr;
		if (rel > ph.p_filesz || size > ph.p_filesz - rel)
			continue;
		*off = ph.p_offset + rel;
		return in_file(v, *off, size);
	}
	return false;
}

/* Whether [addr, addr+size) lies in one loadable segment's memory image (what the host may read). */
static bool vaddr_loaded(const elf_view *v, uint64_t addr, uint64_t size)
{
	for (size_t i = 0; i < v->phnum; i++) {
		Phdr ph = phdr_at(v, i);
		if (ph.p_type != PT_LOAD || addr < ph.p_vaddr)
			continue;
		uint64_t rel = addr - ph.p_vaddr;
		if (rel <= ph.p_memsz && size <= ph.p_memsz - rel)
			return true;
	}
	return false;
}

#define REFUSE(v, ...) msb_error_set(err, MSB_E_IMPORT, __VA_ARGS__)

static msb_errc check_header(elf_view *v, msb_error *err)
{
	const unsigned char *b = v->b;
	if (v->len < 4 || memcmp(b, ELFMAG, SELFMAG) != 0) {
		if (v->len == 0)
			return REFUSE(v, "plugin %s: is an empty file, not a shared object", v->file);
		if (v->len >= 2 && b[0] == '#' && b[1] == '!')
			return REFUSE(v, "plugin %s: is a script (it starts with '#!'), not an ELF "
				      "shared object", v->file);
		if (v->len >= 7 && memcmp(b, "!<arch>", 7) == 0)
			return REFUSE(v, "plugin %s: is a static library (an ar archive), not an ELF "
				      "shared object; link it as a shared object", v->file);
		return REFUSE(v, "plugin %s: is not an ELF file (no \\x7fELF magic at its start): "
			      "a plugin is a shared object", v->file);
	}
	if (v->len < EI_NIDENT)
		return REFUSE(v, "plugin %s: is truncated: %zu bytes, shorter than an ELF "
			      "identification", v->file, v->len);
	if (b[EI_CLASS] != HOST_CLASS)
		return REFUSE(v, "plugin %s: is a %s ELF object, this host is %s", v->file,
			      b[EI_CLASS] == ELFCLASS32   ? "32-bit"
			      : b[EI_CLASS] == ELFCLASS64 ? "64-bit"
							  : "malformed (unknown class)",
			      HOST_CLASS_NAME);
	if (b[EI_DATA] != HOST_DATA)
		return REFUSE(v, "plugin %s: is an ELF object of the other byte order (%s), not "
			      "this host's", v->file,
			      b[EI_DATA] == ELFDATA2MSB   ? "big-endian"
			      : b[EI_DATA] == ELFDATA2LSB ? "little-endian"
							  : "unknown");
	if (b[EI_VERSION] != EV_CURRENT)
		return REFUSE(v, "plugin %s: has ELF identification version %u, expected %u",
			      v->file, (unsigned)b[EI_VERSION], (unsigned)EV_CURRENT);
	if (v->len < sizeof(Ehdr))
		return REFUSE(v, "plugin %s: is truncated: %zu bytes, shorter than its ELF header "
			      "(%zu bytes)", v->file, v->len, sizeof(Ehdr));
	memcpy(&v->eh, b, sizeof v->eh);
	const Ehdr *eh = &v->eh;
	if (eh->e_machine != HOST_MACHINE) {
		const char *m = machine_name(eh->e_machine);
		const char *host = machine_name(HOST_MACHINE);
		if (m)
			return REFUSE(v, "plugin %s: is built for another machine (%s), this host is "
				      "%s", v->file, m, host ? host : "another");
		return REFUSE(v, "plugin %s: is built for another machine (ELF e_machine %u), this "
			      "host is %s", v->file, (unsigned)eh->e_machine, host ? host : "another");
	}
	switch (eh->e_type) {
	case ET_DYN:
		break;
	case ET_EXEC:
		return REFUSE(v, "plugin %s: is an executable, not a shared object (ELF type "
			      "ET_EXEC); build the plugin with -shared", v->file);
	case ET_REL:
		return REFUSE(v, "plugin %s: is a relocatable object file (.o), not a linked "
			      "shared object; link it with -shared", v->file);
	case ET_CORE:
		return REFUSE(v, "plugin %s: is a core dump, not a shared object", v->file);
	default:
		return REFUSE(v, "plugin %s: has ELF type %u, not a shared object (ET_DYN)", v->file,
			      (unsigned)eh->e_type);
	}
	if (eh->e_phentsize != sizeof(Phdr) || eh->e_phnum == 0 || eh->e_phnum == PN_XNUM)
		return REFUSE(v, "plugin %s: has a malformed program header table (%u entries of "
			      "%u bytes; expected entries of %zu bytes)", v->file,
			      (unsigned)eh->e_phnum, (unsigned)eh->e_phentsize, sizeof(Phdr));
	if (!in_file(v, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Phdr)))
		return REFUSE(v, "plugin %s: is truncated: its program headers end past the end "
			      "of the file (%zu bytes)", v->file, v->len);
	v->phoff = (size_t)eh->e_phoff;
	v->phnum = eh->e_phnum;
	if (eh->e_shoff && (eh->e_shentsize != sizeof(ElfW(Shdr)) ||
			    !in_file(v, eh->e_shoff, (uint64_t)eh->e_shnum * eh->e_shentsize)))
		return REFUSE(v, "plugin %s: is truncated: its section headers (at offset %llu) "
			      "end past the end of the file (%zu bytes)", v->file,
			      (unsigned long long)eh->e_shoff, v->len);
	return MSB_OK;
}

/* Every loadable segment's bytes are in the file; returns the PT_DYNAMIC header. */
static msb_errc check_segments(const elf_view *v, Phdr *dyn, msb_error *err)
{
	bool have_dyn = false, have_load = false, have_interp = false;
	for (size_t i = 0; i < v->phnum; i++) {
		Phdr ph = phdr_at(v, i);
		if (ph.p_type == PT_LOAD) {
			have_load = true;
			if (!in_file(v, ph.p_offset, ph.p_filesz))
				return REFUSE(v, "plugin %s: is truncated: loadable segment %zu "
					      "needs bytes up to offset %llu, the file has %zu", v->file,
					      i, (unsigned long long)ph.p_offset + ph.p_filesz, v->len);
			if (ph.p_filesz > ph.p_memsz)
				return REFUSE(v, "plugin %s: loadable segment %zu is malformed: "
					      "more bytes in the file than in memory", v->file, i);
		} else if (ph.p_type == PT_DYNAMIC) {
			*dyn = ph;
			have_dyn = true;
		} else if (ph.p_type == PT_INTERP) {
			have_interp = true;
		}
	}
	if (!have_load)
		return REFUSE(v, "plugin %s: has no loadable segment: nothing of it could be "
			      "mapped", v->file);
	if (!have_dyn)
		return REFUSE(v, "plugin %s: has no dynamic section: it is a static %s, not a "
			      "shared object a host can load", v->file,
			      have_interp ? "object" : "executable");
	if (!in_file(v, dyn->p_offset, dyn->p_filesz) || dyn->p_filesz < sizeof(Dyn))
		return REFUSE(v, "plugin %s: is truncated: its dynamic section lies past the end "
			      "of the file (%zu bytes)", v->file, v->len);
	return MSB_OK;
}

typedef struct dyn_tables {
	uint64_t strtab, strsz, symtab, syment, hash, gnu_hash, flags_1;
	bool have_strtab, have_strsz, have_symtab, have_hash, have_gnu_hash;
} dyn_tables;

static msb_errc read_dynamic(const elf_view *v, const Phdr *dyn, dyn_tables *t, msb_error *err)
{
	memset(t, 0, sizeof *t);
	t->syment = sizeof(Sym);
	size_t n = (size_t)(dyn->p_filesz / sizeof(Dyn));
	bool ended = false;
	for (size_t i = 0; i < n && !ended; i++) {
		Dyn d;
		memcpy(&d, v->b + dyn->p_offset + i * sizeof d, sizeof d);
		uint64_t val = (uint64_t)d.d_un.d_val;
		switch (d.d_tag) {
		case DT_NULL: ended = true; break;
		case DT_STRTAB: t->strtab = val; t->have_strtab = true; break;
		case DT_STRSZ: t->strsz = val; t->have_strsz = true; break;
		case DT_SYMTAB: t->symtab = val; t->have_symtab = true; break;
		case DT_SYMENT: t->syment = val; break;
		case DT_HASH: t->hash = val; t->have_hash = true; break;
		case DT_GNU_HASH: t->gnu_hash = val; t->have_gnu_hash = true; break;
		case DT_FLAGS_1: t->flags_1 = val; break;
		default: break;
		}
	}
	if (!ended)
		return REFUSE(v, "plugin %s: its dynamic section has no DT_NULL end within the "
			      "file", v->file);
	if (t->flags_1 & DF_1_PIE)
		return REFUSE(v, "plugin %s: is a position-independent executable, not a shared "
			      "object; build the plugin with -shared", v->file);
	if (!t->have_strtab || !t->have_strsz || !t->have_symtab)
		return REFUSE(v, "plugin %s: its dynamic section names no symbol table "
			      "(DT_SYMTAB, DT_STRTAB, DT_STRSZ): it exports nothing", v->file);
	if (t->syment != sizeof(Sym))
		return REFUSE(v, "plugin %s: its symbols are %llu bytes each, expected %zu",
			      v->file, (unsigned long long)t->syment, sizeof(Sym));
	if (!t->have_hash && !t->have_gnu_hash)
		return REFUSE(v, "plugin %s: has no symbol hash table (DT_HASH or DT_GNU_HASH): "
			      "no symbol of it could be looked up", v->file);
	return MSB_OK;
}

static bool read_word(const elf_view *v, uint64_t addr, uint32_t *w)
{
	uint64_t off;
	if (!vaddr_to_off(v, addr, 4, &off))
		return false;
	memcpy(w, v->b + off, 4);
	return true;
}

/* How many .dynsym entries there are: DT_HASH says so; DT_GNU_HASH's chains must be walked. */
static msb_errc count_symbols(const elf_view *v, const dyn_tables *t, size_t *count,
			      msb_error *err)
{
	uint32_t w;
	if (t->have_hash) {
		if (!read_word(v, t->hash + 4, &w))
			goto outside;
		*count = w;
		return MSB_OK;
	}
	uint32_t nbuckets, symoffset, bloom_size;
	if (!read_word(v, t->gnu_hash, &nbuckets) || !read_word(v, t->gnu_hash + 4, &symoffset) ||
	    !read_word(v, t->gnu_hash + 8, &bloom_size))
		goto outside;
	uint64_t buckets = t->gnu_hash + 16 + (uint64_t)bloom_size * sizeof(ElfW(Addr));
	uint64_t chains = buckets + (uint64_t)nbuckets * 4;
	uint64_t off;
	if (!vaddr_to_off(v, buckets, (uint64_t)nbuckets * 4, &off))
		goto outside;
	uint32_t max = 0;
	for (uint32_t i = 0; i < nbuckets; i++) {
		memcpy(&w, v->b + off + (size_t)i * 4, 4);
		if (w > max)
			max = w;
	}
	if (max == 0) {
		*count = symoffset;
		return MSB_OK;
	}
	if (max < symoffset)
		return REFUSE(v, "plugin %s: its GNU hash table is malformed (a bucket points "
			      "below its first hashed symbol)", v->file);
	/* Walk the last chain to its end (bit 0 set); each step is bounded by the file. */
	for (uint64_t i = max;; i++) {
		if (!read_word(v, chains + (i - symoffset) * 4, &w))
			goto outside;
		if (w & 1u) {
			*count = (size_t)i + 1;
			return MSB_OK;
		}
	}
outside:
	return REFUSE(v, "plugin %s: is truncated or malformed: its symbol hash table lies "
		      "outside its loadable segments", v->file);
}

msb_errc msb_elf_inspect(const unsigned char *bytes, size_t len, const char *file,
			 msb_elf_symbol_fn each, void *ctx, msb_error *err)
{
	elf_view v = { .b = bytes, .len = len, .file = file ? file : "<memory>" };
	msb_errc rc = check_header(&v, err);
	Phdr dyn = { 0 };
	if (rc == MSB_OK)
		rc = check_segments(&v, &dyn, err);
	dyn_tables t;
	if (rc == MSB_OK)
		rc = read_dynamic(&v, &dyn, &t, err);
	size_t count = 0;
	if (rc == MSB_OK)
		rc = count_symbols(&v, &t, &count, err);
	if (rc != MSB_OK)
		return rc;
	uint64_t symoff, stroff;
	if (count > len / sizeof(Sym) || !vaddr_to_off(&v, t.symtab, count * sizeof(Sym), &symoff))
		return REFUSE(&v, "plugin %s: is truncated or malformed: its symbol table (%zu "
			      "symbols) lies outside its loadable segments", v.file, count);
	if (!vaddr_to_off(&v, t.strtab, t.strsz, &stroff) || t.strsz == 0)
		return REFUSE(&v, "plugin %s: is truncated or malformed: its string table lies "
			      "outside its loadable segments", v.file);
	const char *strtab = (const char *)bytes + stroff;
	for (size_t i = 1; i < count; i++) {
		Sym s;
		memcpy(&s, bytes + symoff + i * sizeof s, sizeof s);
		if (s.st_shndx == SHN_UNDEF || s.st_name >= t.strsz)
			continue;
		unsigned bind = ELF64_ST_BIND(s.st_info);
		unsigned vis = ELF64_ST_VISIBILITY(s.st_other);
		if (bind == STB_LOCAL || vis == STV_HIDDEN || vis == STV_INTERNAL)
			continue;
		const char *name = strtab + s.st_name;
		if (!memchr(name, '\0', t.strsz - s.st_name))
			return REFUSE(&v, "plugin %s: its string table is not terminated", v.file);
		msb_elf_symbol sym = {
			.name = name,
			.type = ELF64_ST_TYPE(s.st_info),
			.absolute = s.st_shndx == SHN_ABS,
			.value = s.st_value,
			.size = s.st_size,
			.loaded = s.st_shndx != SHN_ABS && vaddr_loaded(&v, s.st_value, s.st_size),
		};
		if (each && (rc = each(ctx, &sym, err)) != MSB_OK)
			return rc;
	}
	return MSB_OK;
}

/* Refuse what is not a regular file, naming what it is; a FIFO is never opened blocking. */
static msb_errc refuse_kind(const char *file, mode_t mode, msb_error *err)
{
	const char *what = S_ISDIR(mode)    ? "a directory"
			   : S_ISFIFO(mode) ? "a FIFO (named pipe): reading it could block forever"
			   : S_ISCHR(mode)  ? "a character device"
			   : S_ISBLK(mode)  ? "a block device"
			   : S_ISSOCK(mode) ? "a socket"
					    : "not a regular file";
	return msb_error_set(err, MSB_E_IMPORT, "plugin %s: is %s, not a shared object file",
			     file, what);
}

msb_errc msb_elf_read(const char *file, unsigned char **bytes, size_t *len, msb_error *err)
{
	/* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. */
	int fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return msb_error_set_errno(err, MSB_E_IMPORT,
					   errno, "plugin %s: cannot be opened", file);
	struct stat st;
	msb_errc rc = MSB_OK;
	unsigned char *buf = NULL;
	size_t got = 0;
	if (fstat(fd, &st) != 0) {
		rc = msb_error_set_errno(err, MSB_E_IMPORT, errno, "plugin %s: cannot be examined",
					 file);
	} else if (!S_ISREG(st.st_mode)) {
		rc = refuse_kind(file, st.st_mode, err);
	} else if ((uint64_t)st.st_size > ELF_MAX_FILE) {
		rc = msb_error_set(err, MSB_E_IMPORT, "plugin %s: is %llu bytes, more than the %zu "
				   "a plugin may be", file, (unsigned long long)st.st_size,
				   ELF_MAX_FILE);
	} else if (!(buf = malloc((size_t)st.st_size + 1))) {
		rc = msb_error_set(err, MSB_E_NOMEM, "plugin %s: out of memory reading it", file);
	} else {
		/* A file that shrinks while read is judged by what was there; one that grows, by its size at fstat. */
		while (got < (size_t)st.st_size) {
			ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				rc = msb_error_set_errno(err, MSB_E_IMPORT, errno,
							 "plugin %s: cannot be read", file);
				break;
			}
			if (n == 0)
				break;
			got += (size_t)n;
		}
	}
	close(fd);
	if (rc != MSB_OK) {
		free(buf);
		return rc;
	}
	*bytes = buf;
	*len = got;
	return MSB_OK;
}
