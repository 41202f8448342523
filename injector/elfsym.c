/* elfsym.c - dynamic symbols, PT_INTERP and load addresses of the target's ELF files (libelf/gelf). */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static Elf *elf_open_fd(int fd)
{
	static bool inited;

	if (!inited) {
		if (elf_version(EV_CURRENT) == EV_NONE)
			return NULL;
		inited = true;
	}
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return NULL;
	}
	return e;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct elfsym *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	/* Bigger first at the same address: covering lookups see the widest. */
	return x->size > y->size ? -1 : x->size < y->size;
}

int elfsym_load(int fd, uint64_t bias, struct elfsym_tab *t)
{
	Elf_Scn *scn = NULL, *dynsym = NULL, *versym = NULL;
	GElf_Shdr sh, dsh;
	Elf_Data *data, *vdata = NULL, *sdata;
	size_t nsyms, strsz = 0;
	Elf *e;
	int err = 0;

	memset(t, 0, sizeof(*t));
	t->bias = bias;
	e = elf_open_fd(fd);
	if (!e)
		return -ENOEXEC;
	elfsym_interp(fd, t->interp, sizeof(t->interp), NULL);
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM)
			dynsym = scn;
		else if (sh.sh_type == SHT_GNU_versym)
			versym = scn;
	}
	if (!dynsym || !gelf_getshdr(dynsym, &dsh) || !(data = elf_getdata(dynsym, NULL))) {
		elf_end(e);
		return 0; /* no dynamic symbols: an empty table */
	}
	Elf_Scn *strscn = elf_getscn(e, dsh.sh_link);
	sdata = strscn ? elf_getdata(strscn, NULL) : NULL;
	if (!sdata) {
		elf_end(e);
		return -ENOEXEC;
	}
	if (versym)
		vdata = elf_getdata(versym, NULL);
	nsyms = dsh.sh_entsize ? dsh.sh_size / dsh.sh_entsize : 0;
	t->v = calloc(nsyms ? nsyms : 1, sizeof(*t->v));
	t->strings = malloc(sdata->d_size + 1);
	if (!t->v || !t->strings) {
		err = -ENOMEM;
		goto out;
	}
	memcpy(t->strings, sdata->d_buf, sdata->d_size);
	t->strings[sdata->d_size] = 0;
	strsz = sdata->d_size;
	for (size_t i = 1; i < nsyms; i++) {
		GElf_Sym s;
		GElf_Versym vs = 0;
		int type;

		if (!gelf_getsym(data, (int)i, &s))
			continue;
		type = GELF_ST_TYPE(s.st_info);
		if (s.st_shndx == SHN_UNDEF || s.st_name >= strsz || s.st_shndx == SHN_ABS)
			continue;
		if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT)
			continue;
		if (vdata)
			gelf_getversym(vdata, (int)i, &vs);
		struct elfsym *o = &t->v[t->n++];
		o->value = s.st_value + bias;
		o->size = s.st_size;
		o->name = t->strings + s.st_name;
		o->is_func = type == STT_FUNC || type == STT_GNU_IFUNC;
		o->is_default = !(vs & 0x8000);
	}
	qsort(t->v, t->n, sizeof(*t->v), cmp_sym);
out:
	elf_end(e);
	if (err)
		elfsym_free(t);
	return err;
}

void elfsym_free(struct elfsym_tab *t)
{
	free(t->v);
	free(t->strings);
	t->v = NULL;
	t->strings = NULL;
	t->n = 0;
}

uint64_t elfsym_lookup(const struct elfsym_tab *t, const char *name)
{
	uint64_t any = 0;

	for (int i = 0; i < t->n; i++) {
		if (strcmp(t->v[i].name, name))
			continue;
		if (t->v[i].is_default)
			return t->v[i].value;
		if (!any)
			any = t->v[i].value;
	}
	return any;
}

const struct elfsym *elfsym_covering(const struct elfsym_tab *t, uint64_t addr)
{
	int lo = 0, hi = t->n - 1, best = -1;

	/* Last symbol starting at or below addr, then scan back a little for
	 * a wider one that still covers it (aliases, nested local labels). */
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (t->v[mid].value <= addr) {
			best = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	for (int i = best, k = 0; i >= 0 && k < 64; i--, k++) {
		const struct elfsym *s = &t->v[i];
		if (s->is_func && addr >= s->value && addr < s->value + s->size)
			return s;
	}
	return NULL;
}

int elfsym_interp(int fd, char *interp, size_t len, bool *dynamic)
{
	size_t n;
	Elf *e = elf_open_fd(fd);

	if (interp && len)
		interp[0] = 0;
	if (dynamic)
		*dynamic = false;
	if (!e)
		return -ENOEXEC;
	if (elf_getphdrnum(e, &n)) {
		elf_end(e);
		return -ENOEXEC;
	}
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph))
			continue;
		if (ph.p_type == PT_DYNAMIC && dynamic)
			*dynamic = true;
		if (ph.p_type == PT_INTERP && interp && len) {
			size_t l;
			char *raw = elf_rawfile(e, &l);
			if (raw && ph.p_offset < l) {
				size_t m = ph.p_filesz < len - 1 ? ph.p_filesz : len - 1;
				if (ph.p_offset + m > l)
					m = l - ph.p_offset;
				memcpy(interp, raw + ph.p_offset, m);
				interp[m] = 0;
			}
		}
	}
	elf_end(e);
	return 0;
}

int elfsym_first_vaddr(int fd, uint64_t *vaddr)
{
	size_t n;
	bool found = false;
	Elf *e = elf_open_fd(fd);

	if (!e)
		return -ENOEXEC;
	if (elf_getphdrnum(e, &n)) {
		elf_end(e);
		return -ENOEXEC;
	}
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		uint64_t v = ph.p_vaddr - ph.p_offset;
		if (!found || v < *vaddr)
			*vaddr = v;
		found = true;
	}
	elf_end(e);
	return found ? 0 : -ENOEXEC;
}
