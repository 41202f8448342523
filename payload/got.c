/* got.c - patch and restore the GOT slots (JUMP_SLOT and GLOB_DAT) of every loaded module. */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hsp.h"

/*
 * Everything that touches another module's memory runs inside a
 * dl_iterate_phdr callback: the loader's list lock is held there, so no
 * module can be unmapped under us and a module in the list is mapped.  The
 * callbacks only read memory, mprotect and store: dlopen/dlsym inside them
 * would deadlock on the loader lock (heaptrack learnt it the hard way), so
 * symbols are resolved beforehand (hook_resolve).
 */

struct slot {
	uintptr_t addr;
	uintptr_t orig;         /* the exact value we replaced */
	uint32_t sym;
};

struct mod {
	struct mod *next;
	uintptr_t base;
	const char *name;       /* dlpi_name pointer: a reloaded module gets a new one */
	uint32_t nslots;
	bool seen;
	bool stale;             /* its slots no longer lie in the module: never write */
	struct slot *slots;
};

struct prot_range {
	uintptr_t lo, hi;
	int prot;
};

static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mod *mods;
static unsigned long long last_adds, last_subs;
static bool have_counters;
static uint64_t n_modules, n_slots, n_failures;
static size_t pagesz;

/* /proc/self/maps, read before each pass: the page protections to put back. */
static struct prot_range *prots;
static size_t nprots, prots_len;

static void maps_free(void)
{
	mem_unmap(prots, prots_len);
	prots = NULL;
	nprots = prots_len = 0;
}

static int maps_load(void)
{
	size_t cap = 1 << 20, len = 0;
	char *buf = mem_map(cap);
	int fd, ret = 0;

	maps_free();
	if (!buf)
		return -ENOMEM;
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	for (;;) {
		if (len + 4096 > cap) {
			char *nb = mem_map(cap * 2);
			if (!nb) {
				ret = -ENOMEM;
				break;
			}
			memcpy(nb, buf, len);
			mem_unmap(buf, cap);
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r < 0)
				ret = -errno;
			break;
		}
		len += r;
	}
	close(fd);
	if (ret)
		goto out;
	size_t lines = 0;
	for (size_t i = 0; i < len; i++)
		lines += buf[i] == '\n';
	prots_len = (lines + 1) * sizeof(*prots);
	prots = mem_map(prots_len);
	if (!prots) {
		ret = -ENOMEM;
		goto out;
	}
	for (char *p = buf, *end = buf + len; p < end;) {
		char *nl = memchr(p, '\n', end - p);
		if (!nl)
			nl = end;
		uintptr_t lo = 0, hi = 0;
		char *q = p;
		while (q < nl && *q != '-') {
			int c = *q++;
			lo = lo * 16 + (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
		}
		q++;
		while (q < nl && *q != ' ') {
			int c = *q++;
			hi = hi * 16 + (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
		}
		q++;
		if (q + 3 <= nl) {
			int prot = (q[0] == 'r' ? PROT_READ : 0) | (q[1] == 'w' ? PROT_WRITE : 0) |
				   (q[2] == 'x' ? PROT_EXEC : 0);
			prots[nprots++] = (struct prot_range){ lo, hi, prot };
		}
		p = nl + 1;
	}
out:
	mem_unmap(buf, cap);
	return ret;
}

/* Protection of the page at addr, -1 if unknown (not mapped per maps). */
static int page_prot(uintptr_t addr)
{
	size_t lo = 0, hi = nprots;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (addr < prots[mid].lo)
			hi = mid;
		else if (addr >= prots[mid].hi)
			lo = mid + 1;
		else
			return prots[mid].prot;
	}
	return -1;
}

/* Without /proc: the protection the loader gave the page (RELRO pages are
 * read-only once relocated). */
static int phdr_prot(const struct dl_phdr_info *info, uintptr_t addr)
{
	int prot = -1;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)(pagesz - 1);
		uintptr_t hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		if (addr < lo || addr >= hi)
			continue;
		if (ph->p_type == PT_GNU_RELRO)
			return PROT_READ;
		if (ph->p_type == PT_LOAD)
			prot = (ph->p_flags & PF_R ? PROT_READ : 0) | (ph->p_flags & PF_W ? PROT_WRITE : 0) |
			       (ph->p_flags & PF_X ? PROT_EXEC : 0);
	}
	return prot;
}

/* Stores v into the slot at addr, making its page writable only for the
 * store (full RELRO) and putting the exact protection back. */
static bool slot_write(const struct dl_phdr_info *info, uintptr_t addr, uintptr_t v)
{
	int prot = nprots ? page_prot(addr) : phdr_prot(info, addr);
	uintptr_t page = addr & ~(uintptr_t)(pagesz - 1);

	scrub_note();
	if (prot < 0 || !(prot & PROT_READ))
		return false;
	if (!(prot & PROT_WRITE) && mprotect((void *)page, pagesz, prot | PROT_WRITE) != 0)
		return false;
	__atomic_store_n((uintptr_t *)addr, v, __ATOMIC_RELEASE);
	if (!(prot & PROT_WRITE) && mprotect((void *)page, pagesz, prot) != 0)
		n_failures++; /* written, but the page stays writable */
	return true;
}

static bool skip_module(const struct dl_phdr_info *info)
{
	uintptr_t base = info->dlpi_addr;

	if (base == hsp_g.self_base)
		return true;
	if (base && base == getauxval(AT_BASE))
		return true; /* ld.so */
	if (base && base == getauxval(AT_SYSINFO_EHDR))
		return true; /* vdso */
	if (info->dlpi_name && !strncmp(info->dlpi_name, "linux-vdso", 10))
		return true;
	return false;
}

/* Symbol -> hook index, for the names we interpose. */
static int sym_index(const char *name)
{
	switch (name[0]) {
	case 'm': case 'c': case 'r': case 'f': case 'p': case 'a': case 'v':
	case '_': case 's': case 'd': case 'x':
		break;
	default:
		return -1;
	}
	for (int i = 0; i < HK_NSYMS; i++)
		if (!strcmp(name, hk_defs[i].name))
			return i;
	return -1;
}

struct scan {
	const struct dl_phdr_info *info;
	struct mod *m;
	uint32_t cap;
	bool skip_c;    /* this module implements the C++ operators: leave its malloc slots */
};

static bool mod_has_slot(const struct mod *m, uintptr_t addr)
{
	for (uint32_t i = 0; i < m->nslots; i++)
		if (m->slots[i].addr == addr)
			return true;
	return false;
}

static void on_reloc(uintptr_t slot, bool jump_slot, const char *name, void *ctx)
{
	struct scan *s = ctx;
	int i = sym_index(name);

	if (i < 0 || (slot & (sizeof(uintptr_t) - 1)))
		return;
	scrub_note();
	uintptr_t real = (uintptr_t)hk_real[i], hook = (uintptr_t)hk_defs[i].hook;
	if (!real || hk_fwd[i] || (s->skip_c && hk_defs[i].layer == HKL_C))
		return;
	if (!elf_in_load(s->info, slot, sizeof(uintptr_t), false) || mod_has_slot(s->m, slot))
		return;
	uintptr_t v = __atomic_load_n((uintptr_t *)slot, __ATOMIC_RELAXED);
	/* Only slots bound to the function we call as "real" (or lazy PLT
	 * stubs that would bind to it): never change what a module binds to. */
	if (v == hook)
		v = real;
	else if (v != real && !(jump_slot && elf_in_load(s->info, v, 1, true)))
		return;
	if (s->m->nslots == s->cap) {
		uint32_t ncap = s->cap ? s->cap * 2 : 16;
		struct slot *ns = arena_alloc(ncap * sizeof(*ns));
		if (!ns)
			return;
		if (s->m->nslots)
			memcpy(ns, s->m->slots, s->m->nslots * sizeof(*ns));
		s->m->slots = ns;
		s->cap = ncap;
	}
	s->m->slots[s->m->nslots++] = (struct slot){ slot, v, (uint32_t)i };
}

static struct mod *find_mod(const struct dl_phdr_info *info)
{
	for (struct mod *m = mods; m; m = m->next)
		if (!m->stale && m->base == info->dlpi_addr && m->name == info->dlpi_name)
			return m;
	return NULL;
}

/* A record is usable only if every slot still lies in this module. */
static bool mod_valid(const struct dl_phdr_info *info, const struct mod *m)
{
	for (uint32_t i = 0; i < m->nslots; i++)
		if (!elf_in_load(info, m->slots[i].addr, sizeof(uintptr_t), false))
			return false;
	return true;
}

struct pass {
	bool first;
	bool restore;
	bool fwd_only;          /* restore only the slots of forwarders */
	uintptr_t cxx_base, alloc_base;
	bool alloc_is_libc;
};

static void mod_patch(const struct dl_phdr_info *info, struct pass *ps)
{
	scrub_note();
	struct mod *m = arena_alloc(sizeof(*m));
	if (!m)
		return;
	m->base = info->dlpi_addr;
	m->name = info->dlpi_name;
	m->seen = true;
	/* The allocator's own module (jemalloc, tcmalloc, mimalloc) calls its
	 * entry points internally: that is the implementation, not the
	 * program.  glibc's libc only calls them from non-allocator code. */
	if (ps->alloc_base && info->dlpi_addr == ps->alloc_base && !ps->alloc_is_libc) {
		m->next = mods;
		mods = m;
		return;
	}
	struct scan s = {
		.info = info, .m = m,
		.skip_c = ps->cxx_base && info->dlpi_addr == ps->cxx_base && !ps->first,
	};
	elf_each_got_reloc(info, on_reloc, &s);
	uint32_t done = 0;
	for (uint32_t i = 0; i < m->nslots; i++) {
		struct slot *sl = &m->slots[i];
		if (slot_write(info, sl->addr, (uintptr_t)hk_defs[sl->sym].hook))
			m->slots[done++] = *sl;
		else
			n_failures++;
	}
	m->nslots = done;
	if (done) {
		n_modules++;
		n_slots += done;
	}
	m->next = mods;
	mods = m;
}

/* Puts slots back (all, or only forwarders' ones, which then leave the
 * record). */
static void mod_restore(const struct dl_phdr_info *info, struct mod *m, bool fwd_only)
{
	uint32_t kept = 0;

	scrub_note();
	for (uint32_t i = 0; i < m->nslots; i++) {
		const struct slot *sl = &m->slots[i];
		if (fwd_only && !hk_fwd[sl->sym]) {
			m->slots[kept++] = *sl;
			continue;
		}
		uintptr_t v = __atomic_load_n((uintptr_t *)sl->addr, __ATOMIC_RELAXED);
		/* Someone else rewrote it (lazy binding racing our patch): theirs. */
		if (v != (uintptr_t)hk_defs[sl->sym].hook)
			continue;
		if (!slot_write(info, sl->addr, sl->orig))
			n_failures++;
	}
	if (fwd_only) {
		if (n_slots >= m->nslots - kept)
			n_slots -= m->nslots - kept;
		m->nslots = kept;
	}
}

static int pass_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct pass *ps = arg;
	bool first = ps->first;

	if (first && size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		last_adds = info->dlpi_adds;
		last_subs = info->dlpi_subs;
		have_counters = true;
	}
	if (!skip_module(info)) {
		struct mod *m = find_mod(info);
		if (m && !mod_valid(info, m)) {
			m->stale = true;
			m = NULL;
		}
		if (ps->restore) {
			if (m)
				mod_restore(info, m, ps->fwd_only);
		} else if (m) {
			m->seen = true;
		} else {
			mod_patch(info, ps);
		}
	}
	ps->first = false;
	return 0;
}

static void forget_unseen(void)
{
	struct mod **pp = &mods;
	while (*pp) {
		struct mod *m = *pp;
		if (!m->seen || m->stale) {
			*pp = m->next; /* unloaded: its memory is the arena's, leaked until unload */
			if (m->nslots && n_modules)
				n_modules--;
			n_slots -= m->nslots < n_slots ? m->nslots : n_slots;
		} else {
			pp = &m->next;
		}
	}
}

int got_patch_all(void)
{
	struct pass ps = { .first = true };

	pthread_mutex_lock(&patch_lock);
	uint32_t st = LOAD(&hsp_g.state);
	if (st != HSP_STATE_SAMPLING && st != HSP_STATE_PAUSED) {
		pthread_mutex_unlock(&patch_lock);
		return -ESRCH;
	}
	/* Under patch_lock (taken before the loader's lock, never after). */
	hook_resolve();
	/* Without /proc/self/maps the program headers tell the protections. */
	maps_load();
	ps.alloc_base = hook_impl_base(HK_MALLOC, &ps.alloc_is_libc);
	bool dummy;
	ps.cxx_base = hook_impl_base(HK_NEW, &dummy);
	for (struct mod *m = mods; m; m = m->next)
		m->seen = false;
	dl_iterate_phdr(pass_cb, &ps);
	forget_unseen();
	/* With the hooks in, find the wrappers among the new real functions
	 * and take their slots out again. */
	if (hook_probe()) {
		struct pass un = { .first = true, .restore = true, .fwd_only = true };
		dl_iterate_phdr(pass_cb, &un);
	}
	maps_free();
	pthread_mutex_unlock(&patch_lock);
	payload_scrub();
	return 0;
}

struct counters {
	unsigned long long adds, subs;
	bool ok;
};

static int counters_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct counters *c = arg;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		c->adds = info->dlpi_adds;
		c->subs = info->dlpi_subs;
		c->ok = true;
	}
	return 1; /* the first module carries the counters */
}

bool got_modules_changed(void)
{
	struct counters c = { 0, 0, false };

	if (!have_counters)
		return true;
	dl_iterate_phdr(counters_cb, &c);
	return !c.ok || c.adds != last_adds || c.subs != last_subs;
}

int got_restore_all(void)
{
	struct pass ps = { .first = true, .restore = true };

	pthread_mutex_lock(&patch_lock);
	maps_load();
	dl_iterate_phdr(pass_cb, &ps);
	mods = NULL;
	n_modules = n_slots = 0;
	maps_free();
	pthread_mutex_unlock(&patch_lock);
	payload_scrub();
	return 0;
}

void got_counts(uint64_t *modules, uint64_t *slots, uint64_t *failures)
{
	pthread_mutex_lock(&patch_lock);
	*modules = n_modules;
	*slots = n_slots;
	*failures = n_failures;
	pthread_mutex_unlock(&patch_lock);
}

int got_init(void)
{
	long ps = (long)getauxval(AT_PAGESZ);
	pagesz = ps > 0 ? (size_t)ps : (size_t)sysconf(_SC_PAGESIZE);
	return 0;
}

void got_after_fork(void)
{
	/* The records stay: the child keeps the patched slots (inert hooks),
	 * and a later start and unload in the child restore them exactly. */
	prots = NULL;
	nprots = prots_len = 0;
	pthread_mutex_init(&patch_lock, NULL);
}
