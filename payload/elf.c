/* elf.c - reading loaded modules' dynamic sections in memory: symbol lookup and GOT relocations. */
#include <elf.h>
#include <link.h>
#include <string.h>

#include "hsp.h"

/* The only architecture-specific bits of the payload: relocation numbers. */
#if defined(__x86_64__)
#define R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define R_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define R_GLOB_DAT R_AARCH64_GLOB_DAT
#else
#error "unsupported architecture"
#endif

struct dyninfo {
	const ElfW(Sym) *symtab;
	const char *strtab;
	size_t strsz;
	const ElfW(Rela) *jmprel;
	size_t jmprelsz;
	bool jmprel_rela;
	const ElfW(Rela) *rela;
	size_t relasz;
	const uint32_t *gnu_hash;
	const uint32_t *sysv_hash;
	const ElfW(Half) *versym;
};

bool elf_in_load(const struct dl_phdr_info *info, uintptr_t addr, size_t len, bool exec)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || (exec && !(ph->p_flags & PF_X)))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (addr >= lo && addr + len <= hi && addr + len >= addr)
			return true;
	}
	return false;
}

/* glibc rewrites d_ptr entries to absolute addresses when .dynamic is
 * writable; elsewhere (vdso, read-only .dynamic) they are still vaddrs. */
static uintptr_t dptr(const struct dl_phdr_info *info, uintptr_t v)
{
	return v < info->dlpi_addr ? v + info->dlpi_addr : v;
}

static bool dyn_parse(const struct dl_phdr_info *info, struct dyninfo *d)
{
	const ElfW(Dyn) *dyn = NULL;

	memset(d, 0, sizeof(*d));
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return false;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t v = dyn->d_un.d_ptr;
		switch (dyn->d_tag) {
		case DT_SYMTAB: d->symtab = (const void *)dptr(info, v); break;
		case DT_STRTAB: d->strtab = (const void *)dptr(info, v); break;
		case DT_STRSZ: d->strsz = dyn->d_un.d_val; break;
		case DT_JMPREL: d->jmprel = (const void *)dptr(info, v); break;
		case DT_PLTRELSZ: d->jmprelsz = dyn->d_un.d_val; break;
		case DT_PLTREL: d->jmprel_rela = dyn->d_un.d_val == DT_RELA; break;
		case DT_RELA: d->rela = (const void *)dptr(info, v); break;
		case DT_RELASZ: d->relasz = dyn->d_un.d_val; break;
		case DT_GNU_HASH: d->gnu_hash = (const void *)dptr(info, v); break;
		case DT_HASH: d->sysv_hash = (const void *)dptr(info, v); break;
		case DT_VERSYM: d->versym = (const void *)dptr(info, v); break;
		}
	}
	/* Everything we dereference must lie inside the module's own segments. */
	if (!d->symtab || !d->strtab || !elf_in_load(info, (uintptr_t)d->symtab, sizeof(ElfW(Sym)), false) ||
	    !elf_in_load(info, (uintptr_t)d->strtab, d->strsz, false))
		return false;
	if (d->jmprel && (!d->jmprel_rela || !elf_in_load(info, (uintptr_t)d->jmprel, d->jmprelsz, false)))
		d->jmprel = NULL;
	if (d->rela && !elf_in_load(info, (uintptr_t)d->rela, d->relasz, false))
		d->rela = NULL;
	if (d->gnu_hash && !elf_in_load(info, (uintptr_t)d->gnu_hash, 16, false))
		d->gnu_hash = NULL;
	if (d->sysv_hash && !elf_in_load(info, (uintptr_t)d->sysv_hash, 8, false))
		d->sysv_hash = NULL;
	return true;
}

static const char *sym_name(const struct dyninfo *d, const ElfW(Sym) *s)
{
	return s->st_name < d->strsz ? d->strtab + s->st_name : "";
}

/* A definition the dynamic linker would bind to. */
static bool sym_ok(const struct dyninfo *d, uint32_t idx, const char *name, bool *ifunc)
{
	const ElfW(Sym) *s = &d->symtab[idx];
	unsigned type = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);

	if (s->st_shndx == SHN_UNDEF || !s->st_value)
		return false;
	if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
		return false;
	if (bind != STB_GLOBAL && bind != STB_WEAK)
		return false;
	if (ELF64_ST_VISIBILITY(s->st_other) == STV_HIDDEN ||
	    ELF64_ST_VISIBILITY(s->st_other) == STV_INTERNAL)
		return false;
	if (d->versym && (d->versym[idx] & 0x8000))
		return false; /* a hidden, non-default version */
	if (strcmp(sym_name(d, s), name))
		return false;
	*ifunc = type == STT_GNU_IFUNC;
	return true;
}

uintptr_t elf_lookup(const struct dl_phdr_info *info, const char *name, bool *ifunc)
{
	struct dyninfo d;

	*ifunc = false;
	if (!dyn_parse(info, &d))
		return 0;
	if (d.gnu_hash) {
		const uint32_t *gh = d.gnu_hash;
		uint32_t nbuckets = gh[0], symoffset = gh[1], bloom_size = gh[2], shift = gh[3];
		const ElfW(Addr) *bloom = (const ElfW(Addr) *)&gh[4];
		const uint32_t *bucket = (const uint32_t *)&bloom[bloom_size];
		const uint32_t *chain = &bucket[nbuckets];
		uint32_t h = 5381;
		const unsigned bits = sizeof(ElfW(Addr)) * 8;

		if (!nbuckets || !bloom_size)
			return 0;
		for (const unsigned char *c = (const unsigned char *)name; *c; c++)
			h = h * 33 + *c;
		ElfW(Addr) word = bloom[(h / bits) % bloom_size];
		ElfW(Addr) mask = ((ElfW(Addr))1 << (h % bits)) | ((ElfW(Addr))1 << ((h >> shift) % bits));
		if ((word & mask) != mask)
			return 0;
		uint32_t idx = bucket[h % nbuckets];
		if (idx < symoffset)
			return 0;
		for (;; idx++) {
			uint32_t h2 = chain[idx - symoffset];
			if ((h | 1) == (h2 | 1) && sym_ok(&d, idx, name, ifunc))
				return info->dlpi_addr + d.symtab[idx].st_value;
			if (h2 & 1)
				break;
		}
		return 0;
	}
	if (d.sysv_hash) {
		const uint32_t *hh = d.sysv_hash;
		uint32_t nbucket = hh[0], h = 0, g;
		const uint32_t *bucket = &hh[2], *chain = &bucket[nbucket];

		if (!nbucket)
			return 0;
		for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
			h = (h << 4) + *c;
			g = h & 0xf0000000;
			if (g)
				h ^= g >> 24;
			h &= ~g;
		}
		for (uint32_t idx = bucket[h % nbucket]; idx; idx = chain[idx])
			if (sym_ok(&d, idx, name, ifunc))
				return info->dlpi_addr + d.symtab[idx].st_value;
	}
	return 0;
}

static void each_rela(const struct dl_phdr_info *info, const struct dyninfo *d,
		      const ElfW(Rela) *r, size_t sz,
		      void (*fn)(uintptr_t, bool, const char *, void *), void *ctx)
{
	for (size_t i = 0; i < sz / sizeof(*r); i++) {
		unsigned type = ELF64_R_TYPE(r[i].r_info);
		uint32_t sym = ELF64_R_SYM(r[i].r_info);
		if ((type != R_JUMP_SLOT && type != R_GLOB_DAT) || !sym)
			continue;
		const ElfW(Sym) *s = &d->symtab[sym];
		if (!elf_in_load(info, (uintptr_t)s, sizeof(*s), false))
			continue;
		fn(info->dlpi_addr + r[i].r_offset, type == R_JUMP_SLOT, sym_name(d, s), ctx);
	}
}

void elf_each_got_reloc(const struct dl_phdr_info *info,
			void (*fn)(uintptr_t slot, bool jump_slot, const char *name, void *ctx),
			void *ctx)
{
	struct dyninfo d;

	if (!dyn_parse(info, &d))
		return;
	if (d.jmprel)
		each_rela(info, &d, d.jmprel, d.jmprelsz, fn, ctx);
	/* With DT_RELA covering DT_JMPREL (some linkers), a slot is seen twice;
	 * got.c ignores a slot it already holds. */
	if (d.rela)
		each_rela(info, &d, d.rela, d.relasz, fn, ctx);
}
