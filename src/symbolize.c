/* symbolize.c - profile locations to functions, inlined frames and file:line with libdwfl; the only user of libdw. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "symbolize.h"

/* libstdc++'s demangler (the one eu-stack and eu-addr2line use too). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define MAX_INLINE 64          /* deeper chains lose their outermost inlined calls */
#define MAX_BUILD_ID 64        /* bytes */

/* ---- a small open-addressing map: (k1, k2) -> non-NULL pointer --------- */

struct hent {
	uint64_t k1, k2;
	void *v;
};

struct hmap {
	struct hent *e;
	size_t cap, n;          /* cap is 0 or a power of two */
};

static uint64_t hmix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL + (a << 6) + (a >> 2));
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 33);
}

static void *hmap_get(const struct hmap *h, uint64_t k1, uint64_t k2)
{
	if (!h->cap)
		return NULL;
	for (size_t i = hmix(k1, k2) & (h->cap - 1);; i = (i + 1) & (h->cap - 1)) {
		const struct hent *e = &h->e[i];
		if (!e->v)
			return NULL;
		if (e->k1 == k1 && e->k2 == k2)
			return e->v;
	}
}

/* Inserts a key known to be absent.  0 or -ENOMEM. */
static int hmap_put(struct hmap *h, uint64_t k1, uint64_t k2, void *v)
{
	if ((h->n + 1) * 4 > h->cap * 3) {
		size_t ncap = h->cap ? h->cap * 2 : 256;
		struct hent *ne = calloc(ncap, sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		for (size_t i = 0; i < h->cap; i++) {
			struct hent *e = &h->e[i];
			if (!e->v)
				continue;
			size_t j = hmix(e->k1, e->k2) & (ncap - 1);
			while (ne[j].v)
				j = (j + 1) & (ncap - 1);
			ne[j] = *e;
		}
		free(h->e);
		h->e = ne;
		h->cap = ncap;
	}
	size_t i = hmix(k1, k2) & (h->cap - 1);
	while (h->e[i].v)
		i = (i + 1) & (h->cap - 1);
	h->e[i] = (struct hent){ k1, k2, v };
	h->n++;
	return 0;
}

/* In arr[0..n), sorted by the field lo: how many elements start at or below
 * key, i.e. the index of the first one starting above it. */
#define COUNT_LO_LE(arr, n, key) __extension__ ({				\
	size_t lo_ = 0, hi_ = (n);						\
	__typeof__(key) key_ = (key);						\
	while (lo_ < hi_) {							\
		size_t mid_ = (lo_ + hi_) / 2;					\
		if ((arr)[mid_].lo <= key_)					\
			lo_ = mid_ + 1;						\
		else								\
			hi_ = mid_;						\
	}									\
	lo_;									\
})

/* ---- the session -------------------------------------------------------- */

struct sym_func {               /* one function (keyed by its DWARF origin) */
	char *name;             /* demangled, or NULL when DWARF has no name */
	bool cxx;               /* name was demangled from a linkage name */
	char *sysname;          /* mangled, "" when the same as name */
	char *file;             /* declaration file, "" unknown */
	int64_t start_line;
	/* The function's index in the profile sym_profile is filling, valid
	 * while pass is that call's sym_ctx.pass: warm frames then cost no
	 * string interning. */
	uint64_t pass;
	uint32_t fid;
};

struct sym_frame {
	struct sym_func *fn;
	int64_t line, col;
};

enum { RES_DWARF, RES_ELF };

struct sym_res {                /* the frames of one address, innermost first */
	uint8_t how;
	uint32_t n;
	struct sym_frame f[];
};

struct fn_range {
	Dwarf_Addr lo, hi;      /* [lo, hi) in DWARF addresses */
	Dwarf_Die die;
};

struct pc_range {
	Dwarf_Addr lo, hi;
};

struct cu_index {               /* the CU's top-level functions by address */
	size_t n;
	struct fn_range *r;
	/* The code ranges of all the CU's top-level DIEs, sorted by lo, each
	 * hi raised to the running maximum; built when the index first
	 * misses.  top_all: unknown (imported units, no memory). */
	bool top_done, top_all;
	size_t ntop;
	struct pc_range *top;
};

struct sym_ent {                /* an ELF function symbol */
	GElf_Addr lo, hi;       /* [lo, hi) absolute */
	const char *name;       /* libdwfl's string, lives with the module */
	int rank;               /* binding preference: global > weak > local */
};

struct cu_range {               /* a CU's code range (no .debug_aranges) */
	Dwarf_Addr lo, hi;      /* [lo, hi) in DWARF addresses */
	Dwarf_Die cu;
};

struct sym_mod {                /* per-module state (the module's userdata) */
	struct sym_ctx *ctx;
	bool bid_done, syms_done, cus_done;
	char bid[2 * MAX_BUILD_ID + 1];   /* module's build-id, "" none or no ELF */
	struct sym_ent *syms;   /* sorted by lo, one per address */
	size_t nsyms;
	struct cu_range *cus;   /* sorted by lo, built only when needed */
	size_t ncus;
	struct sym_mod *next;
};

struct vma {                    /* one /proc/PID/maps line (live sessions) */
	uint64_t start, end;
	uint64_t ino;
	unsigned int dmajor, dminor;
};

struct sym_ctx {
	Dwfl_Callbacks cb;
	Dwfl *dwfl;
	char *debuginfo_path;   /* cb.debuginfo_path points here */
	char **dirs;            /* HEAPSNAP_DEBUG_PATH then PPROF_BINARY_PATH entries */
	size_t ndirs;
	int pid;                /* live session, else 0 */
	struct vma *vmas;
	size_t nvmas;
	struct sym_mod *mods;
	struct hmap addrs;      /* (module, address) -> sym_res or &no_res */
	struct hmap funcs;      /* (origin DIE data pointer, 0) -> sym_func */
	struct hmap cus;        /* (CU DIE data pointer, 0) -> cu_index */
	struct hmap kids;       /* (scope DIE data pointer, 0) -> kids */
	uint64_t pass;          /* sym_profile calls so far */
};

/* Cached "nothing known at this address". */
static struct sym_res no_res;

static void set_err(char err[256], const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(char err[256], const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, 256, fmt, ap);
	va_end(ap);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Path without the " (deleted)" the kernel appends to unlinked files. */
static char *clean_path(const char *name)
{
	static const char del[] = " (deleted)";
	size_t n = strlen(name), dl = sizeof(del) - 1;

	if (n > dl && strcmp(name + n - dl, del) == 0)
		n -= dl;
	return strndup(name, n);
}

static void to_hex(const unsigned char *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

/* A build-id we can compare: non-empty lowercase/uppercase hex. */
static bool checkable_bid(const char *bid)
{
	size_t n = 0;

	if (!bid)
		return false;
	for (; bid[n]; n++)
		if (!((bid[n] >= '0' && bid[n] <= '9') || (bid[n] >= 'a' && bid[n] <= 'f') ||
		      (bid[n] >= 'A' && bid[n] <= 'F')))
			return false;
	return n >= 2 && n % 2 == 0 && n <= 2 * MAX_BUILD_ID;
}

static int split_dirs(struct sym_ctx *c, const char *env)
{
	const char *s = getenv(env);

	while (s && *s) {
		const char *e = strchr(s, ':');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (n) {
			char **nd = realloc(c->dirs, (c->ndirs + 1) * sizeof(*nd));
			if (!nd)
				return -ENOMEM;
			c->dirs = nd;
			if (!(c->dirs[c->ndirs] = strndup(s, n)))
				return -ENOMEM;
			c->ndirs++;
		}
		s = e ? e + 1 : NULL;
	}
	return 0;
}

static int ctx_new(struct sym_ctx **out,
		   int (*find_elf)(Dwfl_Module *, void **, const char *, Dwarf_Addr,
				   char **, Elf **),
		   char err[256])
{
	struct sym_ctx *c = calloc(1, sizeof(*c));
	size_t len;

	if (!c || split_dirs(c, "HEAPSNAP_DEBUG_PATH") || split_dirs(c, "PPROF_BINARY_PATH"))
		goto nomem;
	/* libdwfl's default path plus our directories, so separate debug files
	 * there are found by build-id (DIR/.build-id/xx/rest.debug). */
	len = sizeof(":.debug:/usr/lib/debug");
	for (size_t i = 0; i < c->ndirs; i++)
		len += strlen(c->dirs[i]) + 1;
	if (!(c->debuginfo_path = malloc(len)))
		goto nomem;
	strcpy(c->debuginfo_path, ":.debug:/usr/lib/debug");
	for (size_t i = 0; i < c->ndirs; i++)
		if (c->dirs[i][0] == '/')
			strcat(strcat(c->debuginfo_path, ":"), c->dirs[i]);
	c->cb.find_elf = find_elf;
	c->cb.find_debuginfo = dwfl_standard_find_debuginfo;
	c->cb.debuginfo_path = &c->debuginfo_path;
	c->dwfl = dwfl_begin(&c->cb);
	if (!c->dwfl) {
		set_err(err, "cannot start libdwfl: %s", dwfl_errmsg(-1));
		sym_close(c);
		return -EINVAL;
	}
	*out = c;
	return 0;
nomem:
	set_err(err, "%s", strerror(ENOMEM));
	sym_close(c);
	return -ENOMEM;
}

static struct sym_mod *mod_new(struct sym_ctx *c)
{
	struct sym_mod *m = calloc(1, sizeof(*m));

	if (m) {
		m->ctx = c;
		m->next = c->mods;
		c->mods = m;
	}
	return m;
}

static struct sym_mod *mod_info(Dwfl_Module *mod)
{
	void **ud = NULL;

	dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	return ud ? *ud : NULL;
}

/* Opens path only if it is a regular file: a mapped device or a FIFO named
 * in a profile could block or have side effects on open. */
static int open_regular(const char *path)
{
	struct stat st;
	int fd;

	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* ---- live sessions ------------------------------------------------------ */

static int cmp_vma(const void *a, const void *b)
{
	const struct vma *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int read_vmas(struct sym_ctx *c)
{
	char path[64], *line = NULL;
	size_t cap = 0, n = 0, vcap = 0;
	struct vma *v = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", c->pid);
	if (!(f = fopen(path, "re")))
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		struct vma x;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %*x %x:%x %" SCNu64,
			   &x.start, &x.end, &x.dmajor, &x.dminor, &x.ino) != 5 || !x.ino)
			continue;
		if (n == vcap) {
			size_t ncap = vcap ? 2 * vcap : 256;
			struct vma *nv = realloc(v, ncap * sizeof(*nv));
			if (!nv) {
				free(line);
				free(v);
				fclose(f);
				return -ENOMEM;
			}
			v = nv;
			vcap = ncap;
		}
		v[n++] = x;
	}
	free(line);
	fclose(f);
	qsort(v, n, sizeof(*v), cmp_vma);
	free(c->vmas);
	c->vmas = v;
	c->nvmas = n;
	return 0;
}

static const struct vma *find_vma(const struct sym_ctx *c, uint64_t start)
{
	size_t lo = 0, hi = c->nvmas;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->vmas[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nvmas && c->vmas[lo].start == start ? &c->vmas[lo] : NULL;
}

/* fd is the file the process mapped at v: the inode numbers agree.  The
 * device is not compared: on overlayfs stat() reports the overlay's device
 * while the maps may show the underlying one. */
static bool same_file(int fd, const struct vma *v)
{
	struct stat st;

	return v && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_ino == v->ino;
}

/* find_elf for live sessions: the exact file the process mapped, never a
 * different file that now sits at the same path. */
static int live_find_elf(Dwfl_Module *mod, void **userdata, const char *name,
			 Dwarf_Addr base, char **file_name, Elf **elfp)
{
	struct sym_mod *sm = *userdata;
	struct sym_ctx *c;
	const struct vma *v;
	char p[PATH_MAX + 64];
	int fd;

	/* The vdso and other non-file modules: libdwfl's own recipe. */
	if (!sm || name[0] != '/')
		return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
	c = sm->ctx;
	v = find_vma(c, base);
	if (!v && read_vmas(c) == 0)
		v = find_vma(c, base);      /* mapped after we first looked */
	if (!v)
		return -1;
	char *path = clean_path(name);
	if (!path)
		return -1;

	/* The mapped inode itself, even when deleted or replaced (needs
	 * CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE). */
	snprintf(p, sizeof(p), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, c->pid, v->start, v->end);
	fd = open_regular(p);
	if (fd >= 0)
		goto found;
	/* The executable, for anyone allowed to ptrace-read the process. */
	snprintf(p, sizeof(p), "/proc/%d/exe", c->pid);
	fd = open_regular(p);
	if (fd >= 0 && same_file(fd, v))
		goto found;
	if (fd >= 0)
		close(fd);
	/* By path, in the process's mount namespace first. */
	snprintf(p, sizeof(p), "/proc/%d/root%s", c->pid, path);
	fd = open_regular(p);
	if (fd >= 0 && same_file(fd, v))
		goto found;
	if (fd >= 0)
		close(fd);
	fd = open_regular(path);
	if (fd >= 0 && same_file(fd, v))
		goto found;
	if (fd >= 0)
		close(fd);
	free(path);
	return -1;
found:
	/* The real path, so libdwfl looks for .gnu_debuglink files beside it. */
	*file_name = path;
	return fd;
}

static int attach_mod(Dwfl_Module *mod, void **userdata, const char *name,
		      Dwarf_Addr start, void *arg)
{
	struct sym_mod *sm;

	if (*userdata)
		return DWARF_CB_OK;
	if (!(sm = mod_new(arg)))
		return DWARF_CB_ABORT;
	*userdata = sm;
	return DWARF_CB_OK;
}

/* A live process may have loaded libraries since sym_open_pid: when a
 * mapping of p has no module, report the process's modules again.  Only
 * additions (dwfl_report_begin_add): modules are never freed while the
 * caches hold pointers to them; a library unloaded and replaced at the same
 * place is caught by the build-id check. */
static int refresh_live(struct sym_ctx *c, const struct profile *p)
{
	size_t i;

	for (i = 0; i < p->nmaps; i++)
		if (p->maps[i].file[0] == '/' && p->maps[i].start < p->maps[i].limit &&
		    !dwfl_addrmodule(c->dwfl, p->maps[i].start))
			break;
	if (i == p->nmaps || read_vmas(c) != 0)
		return 0;
	dwfl_report_begin_add(c->dwfl);
	dwfl_linux_proc_report(c->dwfl, c->pid);
	if (dwfl_report_end(c->dwfl, NULL, NULL) != 0)
		return 0;
	return dwfl_getmodules(c->dwfl, attach_mod, c, 0) == 0 ? 0 : -ENOMEM;
}

int sym_open_pid(int pid, struct sym_ctx **out, char err[256])
{
	struct sym_ctx *c;
	char path[64];
	int rc;

	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (pid <= 0 || access(path, F_OK) != 0) {
		set_err(err, "no such process");
		return -ESRCH;
	}
	if ((rc = ctx_new(&c, live_find_elf, err)))
		return rc;
	c->pid = pid;
	if ((rc = read_vmas(c))) {
		set_err(err, "cannot read /proc/%d/maps: %s", pid, strerror(-rc));
		goto fail;
	}
	dwfl_report_begin(c->dwfl);
	rc = dwfl_linux_proc_report(c->dwfl, pid);
	if (dwfl_report_end(c->dwfl, NULL, NULL) != 0 && rc == 0)
		rc = -1;
	if (rc) {
		if (rc > 0) {
			set_err(err, "cannot read the mappings of pid %d: %s", pid, strerror(rc));
			rc = rc == ENOENT ? -ESRCH : -rc;
		} else {
			set_err(err, "cannot report the modules of pid %d: %s", pid, dwfl_errmsg(-1));
			rc = -EINVAL;
		}
		goto fail;
	}
	if (dwfl_getmodules(c->dwfl, attach_mod, c, 0) != 0) {
		set_err(err, "%s", strerror(ENOMEM));
		rc = -ENOMEM;
		goto fail;
	}
	*out = c;
	return 0;
fail:
	sym_close(c);
	return rc;
}

/* ---- offline sessions --------------------------------------------------- */

/* Offline modules are all reported with an open file; nothing to find. */
static int no_find_elf(Dwfl_Module *mod, void **userdata, const char *name,
		       Dwarf_Addr base, char **file_name, Elf **elfp)
{
	return -1;
}

/* Opens path if it is an ELF file whose build-id is bid (any ELF file when
 * bid is NULL).  Returns the fd or -1. */
static int open_matching(const char *path, const char *bid)
{
	int fd = open_regular(path);
	bool ok = false;
	Elf *e;

	if (fd < 0)
		return -1;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && elf_kind(e) == ELF_K_ELF) {
		const void *bits;
		ssize_t n = dwelf_elf_gnu_build_id(e, &bits);
		char hex[2 * MAX_BUILD_ID + 1];
		if (!bid)
			ok = true;
		else if (n > 0 && n <= MAX_BUILD_ID) {
			to_hex(bits, n, hex);
			ok = strcasecmp(hex, bid) == 0;
		}
	}
	elf_end(e);
	if (!ok) {
		close(fd);
		return -1;
	}
	return fd;
}

#define CAND_MAX (2 * PATH_MAX)

/* open_matching on a formatted path, left in p[CAND_MAX]. */
static int try_open(char *p, const char *bid, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int try_open(char *p, const char *bid, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(p, CAND_MAX, fmt, ap);
	va_end(ap);
	return n < 0 || n >= CAND_MAX ? -1 : open_matching(p, bid);
}

/* Finds a trusted ELF for mapping m (see symbolize.h): fd and its path in
 * *found (malloc'd), or -1. */
static int find_binary(const struct sym_ctx *c, const struct prof_mapping *m, char **found)
{
	const char *bid = checkable_bid(m->build_id) ? m->build_id : NULL;
	const char *file = m->file, *base = base_name(file);
	char p[CAND_MAX];
	int fd = -1;

	for (size_t i = 0; i < c->ndirs && fd < 0; i++) {
		const char *d = c->dirs[i];
		if (bid)
			fd = try_open(p, bid, "%s/%s/%s", d, bid, base);
		if (fd < 0)
			fd = try_open(p, bid, "%s/%s", d, base);
		if (fd < 0)
			fd = try_open(p, bid, "%s%s", d, file);
		if (fd < 0 && bid)
			fd = try_open(p, bid, "%s/.build-id/%.2s/%s.debug", d, bid, bid + 2);
		if (fd < 0 && bid)
			fd = try_open(p, bid, "%s/.build-id/%.2s/%s", d, bid, bid + 2);
	}
	if (fd < 0)
		fd = try_open(p, bid, "%s", file);
	if (fd < 0 && bid)
		fd = try_open(p, bid, "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
	if (fd < 0 && bid)
		fd = try_open(p, bid, "/usr/lib/debug/.build-id/%.2s/%s", bid, bid + 2);
	if (fd < 0)
		return -1;
	if (!(*found = strdup(p))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Load bias of the ELF at fd given that file offset m->offset is mapped at
 * m->start (the segment containing it, executable segments preferred).
 * 0 or -1 when no segment fits (not the file that was mapped). */
static int mapping_bias(int fd, const struct prof_mapping *m, GElf_Addr *bias)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	GElf_Ehdr eh;
	size_t nph;
	int rc = -1, best = -1;

	if (!e || !gelf_getehdr(e, &eh) || elf_getphdrnum(e, &nph) != 0)
		goto out;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		GElf_Addr b;
		int score;
		if (!gelf_getphdr(e, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_filesz == 0) {
			/* A separate debug file keeps the program headers but
			 * not the contents: its p_offset means nothing.  The
			 * executable segment starts the mapping, page-aligned. */
			if (!(ph.p_flags & PF_X) || ph.p_memsz == 0)
				continue;
			score = 1;
			b = m->start - (ph.p_vaddr & ~(page - 1));
		} else {
			uint64_t align = ph.p_align > page ? ph.p_align : page;
			/* The kernel maps from p_offset rounded down to a page. */
			if (!((m->offset >= ph.p_offset && m->offset < ph.p_offset + ph.p_filesz) ||
			      (m->offset < ph.p_offset && ph.p_offset - m->offset < align)))
				continue;
			score = (ph.p_flags & PF_X) ? 3 : 2;
			b = m->start - m->offset - ph.p_vaddr + ph.p_offset;
		}
		if (score > best) {
			best = score;
			*bias = b;
		}
	}
	if (best > 0 && !(eh.e_type == ET_EXEC && *bias != 0))
		rc = 0;
out:
	elf_end(e);
	return rc;
}

int sym_open_profile(const struct profile *p, struct sym_ctx **out, char err[256])
{
	struct sym_ctx *c;
	struct { const char *file; uint64_t base; } *seen;
	size_t nseen = 0;
	int rc;

	if ((rc = ctx_new(&c, no_find_elf, err)))
		return rc;
	if (!(seen = calloc(p->nmaps + 1, sizeof(*seen)))) {
		rc = -ENOMEM;
		goto nomem;
	}
	dwfl_report_begin(c->dwfl);
	for (size_t i = 0; i < p->nmaps; i++) {
		const struct prof_mapping *m = &p->maps[i];
		char *path = NULL;
		GElf_Addr bias;
		size_t k;

		if (!m->file || m->file[0] != '/' || m->limit <= m->start)
			continue;
		/* Several segments of one loaded file: report it once. */
		for (k = 0; k < nseen; k++)
			if (strcmp(seen[k].file, m->file) == 0 && seen[k].base == m->start - m->offset)
				break;
		if (k < nseen)
			continue;
		seen[nseen].file = m->file;
		seen[nseen++].base = m->start - m->offset;

		int fd = find_binary(c, m, &path);
		if (fd < 0)
			continue;
		if (mapping_bias(fd, m, &bias) != 0) {
			close(fd);
			free(path);
			continue;
		}
		Dwfl_Module *mod = dwfl_report_elf(c->dwfl, m->file, path, fd, bias, true);
		free(path);
		if (!mod) {
			/* Overlapping or unreadable: leave its frames unknown. */
			close(fd);
			continue;
		}
		void **ud = NULL;
		struct sym_mod *sm = mod_new(c);
		dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
		if (!sm || !ud) {
			dwfl_report_end(c->dwfl, NULL, NULL);
			rc = -ENOMEM;
			goto nomem;
		}
		*ud = sm;
	}
	free(seen);
	seen = NULL;
	if (dwfl_report_end(c->dwfl, NULL, NULL) != 0) {
		set_err(err, "cannot report modules: %s", dwfl_errmsg(-1));
		sym_close(c);
		return -EINVAL;
	}
	*out = c;
	return 0;
nomem:
	free(seen);
	set_err(err, "%s", strerror(ENOMEM));
	sym_close(c);
	return rc;
}

/* ---- DWARF: functions, scopes, inline chains ---------------------------- */

static char *demangle(const char *s)
{
	int status = -1;
	char *d;

	if (strncmp(s, "_Z", 2) != 0)
		return NULL;
	d = __cxa_demangle(s, NULL, NULL, &status);
	if (status != 0) {
		free(d);
		return NULL;
	}
	return d;
}

/* name/sysname for a possibly mangled symbol: both malloc'd, or -ENOMEM. */
static int names_for(const char *sym, char **name, char **sysname)
{
	char *d = demangle(sym);

	*name = d ? d : strdup(sym);
	*sysname = strdup(d ? sym : "");
	if (!*name || !*sysname) {
		free(*name);
		free(*sysname);
		return -ENOMEM;
	}
	return 0;
}

static const char *die_string(Dwarf_Die *die, int at)
{
	Dwarf_Attribute a;
	return dwarf_formstring(dwarf_attr_integrate(die, at, &a));
}

/* The declaration file of die (following abstract_origin/specification,
 * possibly into another CU), made absolute with that CU's comp_dir.  Not
 * dwarf_decl_file: libdw 0.188 takes index 0 for "none", but in DWARF 5
 * it is the primary source file (clang uses it). */
static char *decl_file(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word idx;
	Dwarf_Die cu;
	Dwarf_Half version;
	Dwarf_Files *files;
	size_t nfiles;
	const char *f, *dir;
	char *s;

	if (dwarf_formudata(dwarf_attr_integrate(die, DW_AT_decl_file, &a), &idx) != 0 ||
	    !dwarf_cu_die(a.cu, &cu, &version, NULL, NULL, NULL, NULL, NULL) ||
	    (idx == 0 && version < 5) || dwarf_getsrcfiles(&cu, &files, &nfiles) != 0 ||
	    idx >= nfiles || !(f = dwarf_filesrc(files, idx, NULL, NULL)))
		return strdup("");
	/* A relative comp_dir (-fdebug-prefix-map=...=.) cannot help. */
	if (f[0] == '/' || !(dir = die_string(&cu, DW_AT_comp_dir)) || dir[0] != '/' ||
	    asprintf(&s, "%s/%s", dir, f) < 0)
		return strdup(f);
	return s;
}

static void func_free(struct sym_func *f)
{
	if (f) {
		free(f->name);
		free(f->sysname);
		free(f->file);
		free(f);
	}
}

/* The function a subprogram or inlined_subroutine DIE stands for, cached
 * by its abstract origin (all inlined copies share one record). */
static struct sym_func *func_for_die(struct sym_ctx *c, Dwarf_Die *die)
{
	Dwarf_Die origin = *die, tmp;
	Dwarf_Attribute a;
	struct sym_func *f;
	const char *mangled, *plain;
	int line = 0;

	for (int i = 0; i < 8 && dwarf_attr(&origin, DW_AT_abstract_origin, &a) &&
			dwarf_formref_die(&a, &tmp); i++)
		origin = tmp;
	if ((f = hmap_get(&c->funcs, (uintptr_t)origin.addr, 0)))
		return f;
	if (!(f = calloc(1, sizeof(*f))))
		return NULL;
	mangled = die_string(&origin, DW_AT_linkage_name);
	if (!mangled)
		mangled = die_string(&origin, DW_AT_MIPS_linkage_name);
	plain = die_string(&origin, DW_AT_name);
	if (mangled && (f->name = demangle(mangled))) {
		f->cxx = true;
		f->sysname = strdup(mangled);
	} else if (plain) {
		/* C with an asm label (glibc's __GI___libc_malloc): the
		 * source name reads better, the label stays as system_name. */
		f->name = strdup(plain);
		f->sysname = strdup(mangled && strcmp(mangled, plain) != 0 ? mangled : "");
	} else {
		f->name = mangled ? strdup(mangled) : NULL;
		f->sysname = strdup("");
		if (mangled && !f->name)
			goto nomem;
	}
	if (!f->sysname || (plain && !f->name))
		goto nomem;
	if (!(f->file = decl_file(&origin)))
		goto nomem;
	if (dwarf_decl_line(&origin, &line) == 0 && line > 0)
		f->start_line = line;
	if (hmap_put(&c->funcs, (uintptr_t)origin.addr, 0, f))
		goto nomem;
	return f;
nomem:
	func_free(f);
	return NULL;
}

static int cmp_range(const void *a, const void *b)
{
	const struct fn_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	/* Aliases (gas emits one DIE per symbol): DIE order, so the choice
	 * does not depend on qsort. */
	return (uintptr_t)x->die.addr < (uintptr_t)y->die.addr ? -1 :
	       (uintptr_t)x->die.addr > (uintptr_t)y->die.addr;
}

struct rvec {
	struct fn_range *r;
	size_t n, cap;
	bool oom;
};

/* Collects the code ranges of the subprograms directly in parent and in its
 * namespaces.  Concrete C++ methods sit at CU or namespace level with
 * DW_AT_specification, so classes need not be walked; anything this misses
 * is still found by the slower dwarf_getscopes path. */
static void index_scope(Dwarf_Die *parent, struct rvec *v, int depth)
{
	Dwarf_Die child;

	if (depth > 32 || dwarf_child(parent, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_namespace) {
			index_scope(&child, v, depth + 1);
		} else if (tag == DW_TAG_subprogram) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;
			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
				if (hi <= lo)
					continue;
				if (v->n == v->cap) {
					size_t ncap = v->cap ? 2 * v->cap : 64;
					struct fn_range *nr = realloc(v->r, ncap * sizeof(*nr));
					if (!nr) {
						v->oom = true;
						return;
					}
					v->r = nr;
					v->cap = ncap;
				}
				v->r[v->n++] = (struct fn_range){ lo, hi, child };
			}
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

static struct cu_index *cu_index_get(struct sym_ctx *c, Dwarf_Die *cudie)
{
	struct cu_index *ci = hmap_get(&c->cus, (uintptr_t)cudie->addr, 0);
	struct rvec v = { 0 };

	if (ci)
		return ci;
	index_scope(cudie, &v, 0);
	if (v.oom || !(ci = malloc(sizeof(*ci)))) {
		free(v.r);
		return NULL;
	}
	qsort(v.r, v.n, sizeof(*v.r), cmp_range);
	*ci = (struct cu_index){ .n = v.n, .r = v.r };
	if (hmap_put(&c->cus, (uintptr_t)cudie->addr, 0, ci)) {
		free(ci->r);
		free(ci);
		return NULL;
	}
	return ci;
}

static bool cu_index_find(const struct cu_index *ci, Dwarf_Addr pc, Dwarf_Die *fn)
{
	/* First range starting after pc; candidates are before it. */
	size_t lo = COUNT_LO_LE(ci->r, ci->n, pc);

	for (size_t i = lo, k = 0; i-- > 0 && k < 16; k++) {
		if (pc < ci->r[i].hi) {
			*fn = ci->r[i].die;
			return true;
		}
	}
	return false;
}

static int cmp_pc_range(const void *a, const void *b)
{
	const struct pc_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void build_top(struct cu_index *ci, Dwarf_Die *cudie)
{
	Dwarf_Die child;
	size_t cap = 0;

	ci->top_done = true;
	if (dwarf_child(cudie, &child) != 0)
		return;
	do {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;
		if (dwarf_tag(&child) == DW_TAG_imported_unit) {
			ci->top_all = true;
			return;
		}
		while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
			if (hi <= lo)
				continue;
			if (ci->ntop == cap) {
				size_t ncap = cap ? 2 * cap : 64;
				struct pc_range *n = realloc(ci->top, ncap * sizeof(*n));
				if (!n) {
					ci->top_all = true;
					return;
				}
				ci->top = n;
				cap = ncap;
			}
			ci->top[ci->ntop++] = (struct pc_range){ lo, hi };
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	qsort(ci->top, ci->ntop, sizeof(*ci->top), cmp_pc_range);
	for (size_t i = 1; i < ci->ntop; i++)
		if (ci->top[i].hi < ci->top[i - 1].hi)
			ci->top[i].hi = ci->top[i - 1].hi;
}

/* Whether dwarf_getscopes could find a scope at pc: it only descends into
 * DIEs containing pc (and splices imported units in), so pc must lie in a
 * top-level DIE's ranges.  Addresses between functions then skip its walk
 * over the whole CU, which found nothing anyway. */
static bool top_has_pc(struct cu_index *ci, Dwarf_Die *cudie, Dwarf_Addr pc)
{
	size_t lo;

	if (!ci)
		return true;
	if (!ci->top_done)
		build_top(ci, cudie);
	if (ci->top_all)
		return true;
	lo = COUNT_LO_LE(ci->top, ci->ntop, pc);
	return lo > 0 && pc < ci->top[lo - 1].hi;
}

static bool is_inner_scope(int tag)
{
	return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
	       tag == DW_TAG_try_block || tag == DW_TAG_catch_block;
}

/* The first child of scope, in DIE order, that is an inner scope holding
 * pc, straight from DWARF. */
static bool scan_scope(Dwarf_Die *scope, Dwarf_Addr pc, Dwarf_Die *out)
{
	Dwarf_Die child;

	if (dwarf_child(scope, &child) != 0)
		return false;
	do {
		if (is_inner_scope(dwarf_tag(&child)) && dwarf_haspc(&child, pc) > 0) {
			*out = child;
			return true;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

struct kid {                    /* one code range of an inner scope */
	Dwarf_Addr lo, hi;
	Dwarf_Die die;
};

struct kids {                   /* a scope's inner-scope children, DIE order */
	size_t n;
	struct kid k[];
};

/* Shared by all scopes without inner scopes (most of them). */
static struct kids no_kids;

/* The code ranges of scope's inner-scope children, collected once: big
 * functions have hundreds of inlined calls, and every address in them
 * would walk and decode those DIEs again.  NULL on ENOMEM. */
static struct kids *kids_get(struct sym_ctx *c, Dwarf_Die *scope)
{
	struct kids *k = hmap_get(&c->kids, (uintptr_t)scope->addr, 0), *nk;
	Dwarf_Die child;
	size_t cap = 8;

	if (k)
		return k;
	if (!(k = malloc(sizeof(*k) + cap * sizeof(k->k[0]))))
		return NULL;
	k->n = 0;
	if (dwarf_child(scope, &child) == 0) {
		do {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;
			if (!is_inner_scope(dwarf_tag(&child)))
				continue;
			/* dwarf_haspc's own test, range by range. */
			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
				if (hi <= lo)
					continue;
				if (k->n == cap) {
					cap *= 2;
					if (!(nk = realloc(k, sizeof(*k) + cap * sizeof(k->k[0])))) {
						free(k);
						return NULL;
					}
					k = nk;
				}
				k->k[k->n++] = (struct kid){ lo, hi, child };
			}
		} while (dwarf_siblingof(&child, &child) == 0);
	}
	if (k->n == 0) {
		free(k);
		k = &no_kids;
	} else if (k->n < cap && (nk = realloc(k, sizeof(*k) + k->n * sizeof(k->k[0])))) {
		k = nk;
	}
	if (hmap_put(&c->kids, (uintptr_t)scope->addr, 0, k)) {
		if (k != &no_kids)
			free(k);
		return NULL;
	}
	return k;
}

/* scan_scope through the cache. */
static bool inner_scope(struct sym_ctx *c, Dwarf_Die *scope, Dwarf_Addr pc, Dwarf_Die *out)
{
	const struct kids *k = kids_get(c, scope);

	if (!k)
		return scan_scope(scope, pc, out);
	for (size_t i = 0; i < k->n; i++) {
		if (pc >= k->k[i].lo && pc < k->k[i].hi) {
			*out = k->k[i].die;
			return true;
		}
	}
	return false;
}

/* From a function DIE down to the innermost inlined_subroutine containing
 * pc: out[0] = fn, out[1..] the inlined calls, outermost first. */
static int descend(struct sym_ctx *c, Dwarf_Die *fn, Dwarf_Addr pc, Dwarf_Die *out, int max)
{
	Dwarf_Die cur = *fn, child;
	int n = 0;

	out[n++] = cur;
	for (int depth = 0; depth < 256 && inner_scope(c, &cur, pc, &child); depth++) {
		if (dwarf_tag(&child) == DW_TAG_inlined_subroutine) {
			if (n == max)   /* keep the innermost ones */
				memmove(out + 1, out + 2, (max - 2) * sizeof(*out)), n--;
			out[n++] = child;
		}
		cur = child;
	}
	return n;
}

/* The same chain through libdw's general scope search, for functions the
 * index does not hold (nested functions, odd producers). */
static int scopes_chain(Dwarf_Die *cudie, Dwarf_Addr pc, Dwarf_Die *out, int max)
{
	Dwarf_Die *scopes = NULL, inner;
	int ns, k, n = 0, first = -1;

	ns = dwarf_getscopes(cudie, pc, &scopes);
	if (ns <= 0) {
		free(scopes);
		return 0;
	}
	inner = scopes[0];
	free(scopes);
	scopes = NULL;
	/* The physical parents of the innermost scope: its inline callers. */
	ns = dwarf_getscopes_die(&inner, &scopes);
	for (k = 0; k < ns; k++) {
		int tag = dwarf_tag(&scopes[k]);
		if (tag == DW_TAG_subprogram) {
			first = k;
			break;
		}
	}
	if (first >= 0) {
		for (k = first; k >= 0 && n < max; k--) {
			int tag = dwarf_tag(&scopes[k]);
			if (k == first || tag == DW_TAG_inlined_subroutine)
				out[n++] = scopes[k];
		}
	}
	free(scopes);
	return n;
}

static int64_t attr_udata(Dwarf_Die *die, int at)
{
	Dwarf_Attribute a;
	Dwarf_Word w;

	if (dwarf_formudata(dwarf_attr(die, at, &a), &w) != 0 || w > INT64_MAX)
		return 0;
	return (int64_t)w;
}

static struct sym_res *res_new(uint32_t n, uint8_t how)
{
	struct sym_res *r = calloc(1, sizeof(*r) + n * sizeof(r->f[0]));

	if (r) {
		r->n = n;
		r->how = how;
	}
	return r;
}

/* ELF symbols: libdwfl's dwfl_module_addrinfo scans the whole table on
 * every call, far too slow for thousands of addresses in libc, so each
 * module gets a sorted table of its function symbols once. */

static int leading_underscores(const char *s)
{
	int n = 0;
	while (s[n] == '_')
		n++;
	return n;
}

static int cmp_ent(const void *a, const void *b)
{
	const struct sym_ent *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	/* Among aliases the public name: malloc before __libc_malloc. */
	if (x->rank != y->rank)
		return y->rank - x->rank;
	if ((x->hi > x->lo) != (y->hi > y->lo))
		return x->hi > x->lo ? -1 : 1;
	int ux = leading_underscores(x->name), uy = leading_underscores(y->name);
	if (ux != uy)
		return ux - uy;
	size_t lx = strlen(x->name), ly = strlen(y->name);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void build_symtab(struct sym_mod *sm, Dwfl_Module *mod)
{
	int n = dwfl_module_getsymtab(mod);
	size_t k = 0;

	sm->syms_done = true;
	if (n <= 1 || !(sm->syms = malloc(n * sizeof(*sm->syms))))
		return;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
		if (!name || !*name || shndx == SHN_UNDEF || shndx == (GElf_Word)-1 ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		sm->syms[k++] = (struct sym_ent){ addr, addr + sym.st_size, name,
						  bind == STB_GLOBAL ? 3 : bind == STB_LOCAL ? 1 : 2 };
	}
	qsort(sm->syms, k, sizeof(*sm->syms), cmp_ent);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (u == 0 || sm->syms[i].lo != sm->syms[u - 1].lo)
			sm->syms[u++] = sm->syms[i];
	/* A symbol without a size (hand-written assembly) runs to the next. */
	for (size_t i = 0; i < u; i++)
		if (sm->syms[i].hi <= sm->syms[i].lo)
			sm->syms[i].hi = i + 1 < u ? sm->syms[i + 1].lo : sm->syms[i].lo + 1;
	sm->nsyms = u;
}

static const struct sym_ent *find_sym(Dwfl_Module *mod, GElf_Addr addr)
{
	struct sym_mod *sm = mod_info(mod);
	size_t lo;

	if (!sm)
		return NULL;
	if (!sm->syms_done)
		build_symtab(sm, mod);
	lo = COUNT_LO_LE(sm->syms, sm->nsyms, addr);
	/* Nested symbols are rare; look back a little for an enclosing one. */
	for (size_t i = lo, k = 0; i-- > 0 && k < 8; k++)
		if (addr < sm->syms[i].hi)
			return &sm->syms[i];
	return NULL;
}

/* A function record for an ELF symbol, with what DWARF knows of its file
 * and line. */
static struct sym_func *func_for_sym(struct sym_ctx *c, Dwfl_Module *mod, const struct sym_ent *e,
				     const char *file, int64_t start_line)
{
	/* Keyed (module, address): never equal to a DIE key (data, 0). */
	struct sym_func *f = hmap_get(&c->funcs, (uintptr_t)mod, e->lo);

	if (f)
		return f;
	if (!(f = calloc(1, sizeof(*f))) || names_for(e->name, &f->name, &f->sysname) ||
	    !(f->file = strdup(file ? file : "")) ||
	    hmap_put(&c->funcs, (uintptr_t)mod, e->lo, f)) {
		func_free(f);
		return NULL;
	}
	f->cxx = f->sysname[0] != '\0';
	f->start_line = start_line;
	return f;
}

static bool is_cxx(Dwarf_Die *cudie)
{
	switch (dwarf_srclang(cudie)) {
	case DW_LANG_C_plus_plus:
	case DW_LANG_C_plus_plus_03:
	case DW_LANG_C_plus_plus_11:
	case DW_LANG_C_plus_plus_14:
		return true;
	default:
		return false;
	}
}

static int cmp_cu_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void build_cu_ranges(struct sym_mod *sm, Dwfl_Module *mod)
{
	Dwarf_Die *cu = NULL;
	Dwarf_Addr bias;
	size_t cap = 0;

	sm->cus_done = true;
	while ((cu = dwfl_module_nextcu(mod, cu, &bias))) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;
		while ((off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0) {
			if (hi <= lo)
				continue;
			if (sm->ncus == cap) {
				size_t ncap = cap ? 2 * cap : 64;
				struct cu_range *n = realloc(sm->cus, ncap * sizeof(*n));
				if (!n)
					return;   /* keep what we have */
				sm->cus = n;
				cap = ncap;
			}
			sm->cus[sm->ncus++] = (struct cu_range){ lo, hi, *cu };
		}
	}
	qsort(sm->cus, sm->ncus, sizeof(*sm->cus), cmp_cu_range);
}

/* The CU containing addr.  libdwfl looks CUs up in .debug_aranges, which
 * clang does not emit by default; then the CUs' own ranges are used. */
static Dwarf_Die *cu_for_addr(Dwfl_Module *mod, Dwarf_Addr addr, Dwarf_Addr *bias,
			      Dwarf_Die *mem)
{
	Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, bias);
	struct sym_mod *sm;
	size_t lo;

	if (cu)
		return cu;
	if (!(sm = mod_info(mod)) || !dwfl_module_getdwarf(mod, bias))
		return NULL;
	if (!sm->cus_done)
		build_cu_ranges(sm, mod);
	lo = COUNT_LO_LE(sm->cus, sm->ncus, addr - *bias);
	for (size_t i = lo, k = 0; i-- > 0 && k < 8; k++) {
		if (addr - *bias < sm->cus[i].hi) {
			*mem = sm->cus[i].cu;
			return mem;
		}
	}
	return NULL;
}

/* Resolves addr in mod: the frames, &no_res when nothing is known, NULL on
 * ENOMEM. */
static struct sym_res *resolve(struct sym_ctx *c, Dwfl_Module *mod, Dwarf_Addr addr)
{
	Dwarf_Die chain[MAX_INLINE], *cudie, cumem;
	Dwarf_Addr bias = 0;
	struct sym_res *r;
	int n = 0, line = 0, col = 0;
	const char *src = NULL;
	Dwarf_Line *l;

	if ((cudie = cu_for_addr(mod, addr, &bias, &cumem))) {
		struct cu_index *ci = cu_index_get(c, cudie);
		Dwarf_Die fn;
		if (ci && cu_index_find(ci, addr - bias, &fn))
			n = descend(c, &fn, addr - bias, chain, MAX_INLINE);
		if (n == 0 && top_has_pc(ci, cudie, addr - bias))
			n = scopes_chain(cudie, addr - bias, chain, MAX_INLINE);
		if ((l = dwarf_getsrc_die(cudie, addr - bias)) && (src = dwarf_linesrc(l, NULL, NULL))) {
			dwarf_lineno(l, &line);
			dwarf_linecol(l, &col);
		}
	}
	if (n > 0) {
		if (!(r = res_new(n, RES_DWARF)))
			return NULL;
		for (int k = n - 1, i = 0; k >= 0; k--, i++) {
			if (!(r->f[i].fn = func_for_die(c, &chain[k]))) {
				free(r);
				return NULL;
			}
			if (k == n - 1) {
				r->f[i].line = line > 0 ? line : 0;
				r->f[i].col = col > 0 ? col : 0;
				/* No DW_AT_decl_file (assembler DIEs): the line
				 * table still knows the source file. */
				struct sym_func *fn = r->f[i].fn;
				char *dup;
				if (!fn->file[0] && src && src[0] && (dup = strdup(src))) {
					free(fn->file);
					fn->file = dup;
					fn->pass = 0;   /* its profile function changed */
				}
			} else {
				r->f[i].line = attr_udata(&chain[k + 1], DW_AT_call_line);
				r->f[i].col = attr_udata(&chain[k + 1], DW_AT_call_column);
			}
		}
		/* GCC gives static C++ functions no linkage name: the ELF
		 * symbol of the outermost frame has the full signature
		 * (on_term -> "on_term(int)").  Also names nameless DIEs. */
		const struct sym_func *outer = r->f[n - 1].fn;
		if (!outer->name || (!outer->cxx && is_cxx(cudie))) {
			const struct sym_ent *e = find_sym(mod, addr);
			char *d = e ? demangle(e->name) : NULL;
			bool use = e && (!outer->name || (d && strstr(d, outer->name)));
			struct sym_func *f = use ? func_for_sym(c, mod, e, outer->file,
								outer->start_line) : NULL;
			free(d);
			if (use && !f) {
				free(r);
				return NULL;
			}
			if (f)
				r->f[n - 1].fn = f;
		}
		return r;
	}
	const struct sym_ent *e = find_sym(mod, addr);
	if (!e)
		return &no_res;
	if (!(r = res_new(1, RES_ELF)))
		return NULL;
	if (!(r->f[0].fn = func_for_sym(c, mod, e, src, 0))) {
		free(r);
		return NULL;
	}
	r->f[0].line = src && line > 0 ? line : 0;
	r->f[0].col = src && col > 0 ? col : 0;
	return r;
}

/* Whether mod may symbolize a location whose mapping says bid. */
static bool module_matches(Dwfl_Module *mod, const char *bid)
{
	struct sym_mod *sm = mod_info(mod);
	Dwarf_Addr b;

	if (!sm)
		return false;
	if (!sm->bid_done) {
		const unsigned char *bits;
		GElf_Addr vaddr;
		int n;
		sm->bid_done = true;
		/* Loads the ELF (find_elf) so its build-id note is known. */
		if (dwfl_module_getelf(mod, &b) &&
		    (n = dwfl_module_build_id(mod, &bits, &vaddr)) > 0 && n <= MAX_BUILD_ID)
			to_hex(bits, n, sm->bid);
	}
	return !checkable_bid(bid) || strcasecmp(sm->bid, bid) == 0;
}

/* A mapping's verdict on the module it last met (one sym_profile call):
 * its locations almost always fall in a single module. */
struct map_memo {
	Dwfl_Module *mod;
	bool ok;
};

static struct sym_res *lookup(struct sym_ctx *c, uint64_t addr, const struct prof_mapping *m,
			      struct map_memo *mm)
{
	Dwfl_Module *mod = dwfl_addrmodule(c->dwfl, addr);
	struct sym_res *r;

	if (!mod)
		return &no_res;
	if (m && mm->mod != mod) {
		mm->mod = mod;
		mm->ok = module_matches(mod, m->build_id);
	}
	if (m && !mm->ok)
		return &no_res;
	if ((r = hmap_get(&c->addrs, (uintptr_t)mod, addr)))
		return r;
	if (!(r = resolve(c, mod, addr)))
		return NULL;
	if (hmap_put(&c->addrs, (uintptr_t)mod, addr, r)) {
		if (r != &no_res)
			free(r);
		return NULL;
	}
	return r;
}

/* The profile function for f in p, added once per sym_profile call. */
static int64_t func_id(struct sym_ctx *c, struct profile *p, struct sym_func *f)
{
	int64_t fid;

	if (f->pass == c->pass)
		return f->fid;
	fid = prof_add_function(p, f->name ? f->name : "??", f->sysname, f->file,
				f->start_line);
	if (fid >= 0) {
		f->pass = c->pass;
		f->fid = (uint32_t)fid;
	}
	return fid;
}

int sym_profile(struct sym_ctx *c, struct profile *p)
{
	struct prof_line lines[MAX_INLINE];
	bool *done = calloc(p->nmaps + 1, sizeof(*done));
	struct map_memo *memo = calloc(p->nmaps + 1, sizeof(*memo));
	char name[PATH_MAX + 32];

	if (!done || !memo || (c->pid && refresh_live(c, p) != 0))
		goto nomem;
	/* A new pass: function ids remembered from another call belong to
	 * another profile (or to this one before someone else changed it). */
	c->pass++;
	for (size_t i = 0; i < p->nmaps; i++)
		done[i] = p->maps[i].has_functions;
	for (size_t i = 0; i < p->nlocs; i++) {
		uint64_t addr = p->locs[i].address;
		uint32_t mi = p->locs[i].mapping;
		struct prof_mapping *m = mi < p->nmaps ? &p->maps[mi] : NULL;
		struct sym_res *r;
		uint32_t n = 0;

		if (p->locs[i].nlines || (m && done[mi]))
			continue;
		if (!(r = lookup(c, addr, m, m ? &memo[mi] : NULL)))
			goto nomem;
		for (; n < r->n; n++) {
			struct sym_func *f = r->f[n].fn;
			int64_t fid = func_id(c, p, f);
			if (fid < 0)
				goto nomem;
			lines[n] = (struct prof_line){ (uint32_t)fid, r->f[n].line, r->f[n].col };
			if (m) {
				m->has_functions = true;
				m->has_filenames |= f->file[0] != '\0';
				m->has_line_numbers |= r->f[n].line > 0;
				m->has_inline_frames |= r->how == RES_DWARF;
			}
		}
		if (n == 0) {
			if (m && m->file[0])
				snprintf(name, sizeof(name), "%s+0x%" PRIx64, base_name(m->file),
					 addr - m->start + m->offset);
			else
				snprintf(name, sizeof(name), "0x%" PRIx64, addr);
			int64_t fid = prof_add_function(p, name, "", "", 0);
			if (fid < 0)
				goto nomem;
			lines[n++] = (struct prof_line){ (uint32_t)fid, 0, 0 };
		}
		if (prof_set_lines(p, (uint32_t)i, lines, n))
			goto nomem;
	}
	free(done);
	free(memo);
	return 0;
nomem:
	free(done);
	free(memo);
	return -ENOMEM;
}

void sym_close(struct sym_ctx *c)
{
	if (!c)
		return;
	if (c->dwfl)
		dwfl_end(c->dwfl);
	for (size_t i = 0; i < c->addrs.cap; i++)
		if (c->addrs.e[i].v && c->addrs.e[i].v != &no_res)
			free(c->addrs.e[i].v);
	for (size_t i = 0; i < c->funcs.cap; i++)
		func_free(c->funcs.e[i].v);
	for (size_t i = 0; i < c->cus.cap; i++) {
		struct cu_index *ci = c->cus.e[i].v;
		if (ci) {
			free(ci->r);
			free(ci->top);
			free(ci);
		}
	}
	for (size_t i = 0; i < c->kids.cap; i++)
		if (c->kids.e[i].v != &no_kids)
			free(c->kids.e[i].v);
	free(c->addrs.e);
	free(c->funcs.e);
	free(c->cus.e);
	free(c->kids.e);
	while (c->mods) {
		struct sym_mod *m = c->mods;
		c->mods = m->next;
		free(m->syms);
		free(m->cus);
		free(m);
	}
	for (size_t i = 0; i < c->ndirs; i++)
		free(c->dirs[i]);
	free(c->dirs);
	free(c->debuginfo_path);
	free(c->vmas);
	free(c);
}
