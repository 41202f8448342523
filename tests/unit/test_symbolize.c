/* test_symbolize.c - symbolization (src/symbolize.c) of a live C++ target, of its saved mappings after it exits, and against binutils addr2line. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "profile.h"
#include "symbolize.h"

static int failures;

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
		failures++; \
	} \
} while (0)

static void die(const char *what)
{
	fprintf(stderr, "test_symbolize: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* ---- files -------------------------------------------------------------- */

static char tmpdir[PATH_MAX], srcfile[PATH_MAX];

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out;
	ssize_t n;

	if (in < 0)
		die(from);
	unlink(to);
	if ((out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755)) < 0)
		die(to);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			die(to);
	if (n < 0 || close(out) != 0)
		die(to);
	close(in);
}

static void path_of(char *out, const char *rel)
{
	if ((size_t)snprintf(out, PATH_MAX, "%s/%s", tmpdir, rel) >= PATH_MAX)
		exit(1);
}

/* Flips a byte of the GNU build-id note of an ELF file in place. */
static void patch_build_id(const char *path)
{
	int fd = open(path, O_RDWR);
	Elf *e;
	Elf_Scn *scn = NULL;
	bool done = false;

	if (fd < 0 || !(e = elf_begin(fd, ELF_C_READ, NULL)))
		die(path);
	while (!done && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !(d = elf_rawdata(scn, NULL)))
			continue;
		while (!done && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID)
				continue;
			unsigned char b = ((unsigned char *)d->d_buf)[doff] ^ 0x5a;
			if (pwrite(fd, &b, 1, sh.sh_offset + doff) != 1)
				die(path);
			done = true;
		}
	}
	elf_end(e);
	close(fd);
	if (!done) {
		fprintf(stderr, "test_symbolize: no build-id note in %s\n", path);
		exit(1);
	}
}

/* Line number of the "// LINE:label" marker in the target's source. */
static int marked_line(const char *label)
{
	char line[512], tag[64];
	FILE *f = fopen(srcfile, "r");
	int n = 0;

	if (!f)
		die(srcfile);
	snprintf(tag, sizeof(tag), "// LINE:%s", label);
	while (fgets(line, sizeof(line), f)) {
		n++;
		char *s = strstr(line, tag);
		if (s && (s[strlen(tag)] == '\n' || s[strlen(tag)] == '\0' || s[strlen(tag)] == ' ')) {
			fclose(f);
			return n;
		}
	}
	fclose(f);
	fprintf(stderr, "test_symbolize: marker %s not in %s\n", tag, srcfile);
	exit(1);
}

/* ---- the target --------------------------------------------------------- */

struct site {
	char label[32];
	uint64_t addr;
};

struct target {
	pid_t pid;
	int fd;
	struct site sites[16];
	int nsites;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Starts path, reads its "addr LABEL 0x..." lines until "ready" (10 s max). */
static void start_target(const char *path, struct target *t)
{
	int pfd[2];
	char buf[4096];
	size_t len = 0;
	double deadline = now() + 10;

	memset(t, 0, sizeof(*t));
	if (pipe(pfd) != 0)
		die("pipe");
	if ((t->pid = fork()) < 0)
		die("fork");
	if (t->pid == 0) {
		/* Never outlive a test that dies half-way. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	t->fd = pfd[0];
	for (;;) {
		struct pollfd pf = { .fd = t->fd, .events = POLLIN };
		double left = deadline - now();
		if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) <= 0) {
			fprintf(stderr, "test_symbolize: %s not ready after 10 s\n", path);
			exit(1);
		}
		ssize_t n = read(t->fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0) {
			fprintf(stderr, "test_symbolize: %s exited before ready\n", path);
			exit(1);
		}
		len += n;
		buf[len] = '\0';
		if (strstr(buf, "ready\n"))
			break;
	}
	for (char *s = buf; (s = strstr(s, "addr ")) && t->nsites < 16; s++) {
		struct site *st = &t->sites[t->nsites];
		if (sscanf(s, "addr %31s %" SCNx64, st->label, &st->addr) == 2)
			t->nsites++;
	}
}

/* Reads the target's output until "addr LABEL 0x..." (10 s max). */
static uint64_t wait_addr(struct target *t, const char *label)
{
	char buf[4096], want[64];
	size_t len = 0;
	double deadline = now() + 10;
	uint64_t a = 0;

	snprintf(want, sizeof(want), "addr %s ", label);
	for (;;) {
		struct pollfd pf = { .fd = t->fd, .events = POLLIN };
		double left = deadline - now();
		char *s;
		if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) <= 0)
			break;
		ssize_t n = read(t->fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += n;
		buf[len] = '\0';
		if ((s = strstr(buf, want)) && strchr(s, '\n')) {
			sscanf(s + strlen(want), "%" SCNx64, &a);
			return a;
		}
	}
	fprintf(stderr, "test_symbolize: no '%s' from the target\n", want);
	return 0;
}

/* Stops the target and checks it exits cleanly (5 s max). */
static void stop_target(struct target *t)
{
	int status = 0;
	double deadline = now() + 5;

	kill(t->pid, SIGTERM);
	while (waitpid(t->pid, &status, WNOHANG) == 0) {
		if (now() > deadline) {
			kill(t->pid, SIGKILL);
			waitpid(t->pid, &status, 0);
			break;
		}
		usleep(10000);
	}
	close(t->fd);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "target exit status %#x", status);
}

static const struct site *site(const struct target *t, const char *label)
{
	for (int i = 0; i < t->nsites; i++)
		if (strcmp(t->sites[i].label, label) == 0)
			return &t->sites[i];
	fprintf(stderr, "test_symbolize: target did not print addr %s\n", label);
	exit(1);
}

/* ---- profiles ----------------------------------------------------------- */

static const char *labels[] = { "grow", "nested", "tmpl", "grow_caller", "malloc_fn" };
#define NLABELS (sizeof(labels) / sizeof(labels[0]))
static const uint64_t junk[] = { 0, 0x10, 0xffffffffffffff00ULL };
#define NJUNK (sizeof(junk) / sizeof(junk[0]))

/* Locations 0..NLABELS-1 are the sites, then the junk addresses. */
static struct profile *make_profile(int pid, const struct target *t)
{
	struct profile *p = prof_new();
	int rc;

	if (!p)
		exit(1);
	if ((rc = prof_load_proc_maps(p, pid)) != 0) {
		fprintf(stderr, "test_symbolize: prof_load_proc_maps: %s\n", strerror(-rc));
		exit(1);
	}
	for (size_t i = 0; i < NLABELS; i++) {
		uint64_t a = site(t, labels[i])->addr;
		/* Return addresses are looked up at pc - 1 (profile.h);
		 * malloc_fn is a function start, a leaf address. */
		if (strcmp(labels[i], "malloc_fn") != 0)
			a--;
		if (prof_add_location(p, a, PROF_NONE) != (int64_t)i)
			exit(1);
	}
	for (size_t i = 0; i < NJUNK; i++)
		if (prof_add_location(p, junk[i], PROF_NONE) < 0)
			exit(1);
	return p;
}

/* Same mappings and locations, nothing symbolized. */
static struct profile *fresh_copy(const struct profile *p)
{
	struct profile *c = prof_new();

	if (!c)
		exit(1);
	for (size_t i = 0; i < p->nmaps; i++) {
		const struct prof_mapping *m = &p->maps[i];
		if (prof_add_mapping(c, m->start, m->limit, m->offset, m->file, m->build_id) != (int64_t)i)
			exit(1);
	}
	for (size_t i = 0; i < p->nlocs; i++)
		if (prof_new_location(c, p->locs[i].address, p->locs[i].mapping) != (int64_t)i)
			exit(1);
	return c;
}

static uint32_t map_named(const struct profile *p, const char *base)
{
	for (uint32_t i = 0; i < p->nmaps; i++) {
		const char *s = strrchr(p->maps[i].file, '/');
		if (s && strcmp(s + 1, base) == 0)
			return i;
	}
	fprintf(stderr, "test_symbolize: no mapping of %s\n", base);
	exit(1);
}

/* "name @file:line:col | ..." for one location, innermost frame first. */
static void render(const struct profile *p, size_t li, char *out, size_t size)
{
	const struct prof_location *l = &p->locs[li];
	size_t n = 0;

	out[0] = '\0';
	for (uint32_t k = 0; k < l->nlines && n < size; k++) {
		const struct prof_function *f = &p->funcs[l->lines[k].function];
		n += snprintf(out + n, size - n, "%s%s [%s] @%s:%" PRId64 ":%" PRId64 " start %" PRId64,
			      k ? " | " : "", f->name, f->system_name, f->filename,
			      l->lines[k].line, l->lines[k].column, f->start_line);
	}
}

#define RLEN 4096
static char ref[NLABELS + NJUNK][RLEN];

static void save_ref(const struct profile *p)
{
	for (size_t i = 0; i < NLABELS + NJUNK; i++)
		render(p, i, ref[i], RLEN);
}

static void check_same_as_ref(const struct profile *p, const char *what)
{
	char got[RLEN];

	for (size_t i = 0; i < NLABELS + NJUNK; i++) {
		render(p, i, got, RLEN);
		CHECK(strcmp(got, ref[i]) == 0, "%s: location %zu:\n  got  %s\n  want %s", what, i, got, ref[i]);
	}
}

/* ---- what the C++ target must resolve to -------------------------------- */

struct want {
	const char *label;
	struct { const char *name, *mark; } f[4];
};

static const struct want wants[] = {
	{ "grow", { { "ns::alloc_inline(unsigned long, char const*)", "alloc_site" },
		    { "ns::Widget::grow(unsigned long)", "grow_call" } } },
	{ "nested", { { "ns::alloc_inline(unsigned long, char const*)", "alloc_site" },
		      { "ns::outer_inline(unsigned long, char const*)", "outer_call" },
		      { "ns::run_nested(int)", "nested_call" } } },
	{ "tmpl", { { "double* ns::detail::make_array<double>(unsigned long)", "tmpl_site" } } },
	{ "grow_caller", { { "main", "main_grow" } } },
};

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void check_cxx(const struct profile *p, const char *what)
{
	for (size_t w = 0; w < sizeof(wants) / sizeof(wants[0]); w++) {
		size_t li = 0, nf = 0;
		while (strcmp(labels[li], wants[w].label) != 0)
			li++;
		while (nf < 4 && wants[w].f[nf].name)
			nf++;
		const struct prof_location *l = &p->locs[li];
		char got[RLEN];
		render(p, li, got, RLEN);
		CHECK(l->nlines == nf, "%s %s: %u frames, want %zu: %s", what, wants[w].label,
		      l->nlines, nf, got);
		for (size_t k = 0; k < nf && k < l->nlines; k++) {
			const struct prof_function *f = &p->funcs[l->lines[k].function];
			int line = marked_line(wants[w].f[k].mark);
			CHECK(strcmp(f->name, wants[w].f[k].name) == 0 && l->lines[k].line == line,
			      "%s %s frame %zu: want %s at line %d, got %s", what, wants[w].label,
			      k, wants[w].f[k].name, line, got);
			CHECK(f->filename[0] == '/' && ends_with(f->filename, "tests/targets/sym_cxx.cc"),
			      "%s %s frame %zu: file %s", what, wants[w].label, k, f->filename);
			CHECK(l->lines[k].column > 0, "%s %s frame %zu: no column: %s", what,
			      wants[w].label, k, got);
		}
	}
	/* Declaration lines, mangled names. */
	bool seen_grow = false, seen_inline = false;
	for (size_t i = 0; i < p->nfuncs; i++) {
		const struct prof_function *f = &p->funcs[i];
		if (strcmp(f->name, "ns::Widget::grow(unsigned long)") == 0) {
			seen_grow = true;
			CHECK(strcmp(f->system_name, "_ZN2ns6Widget4growEm") == 0, "%s: grow system_name %s",
			      what, f->system_name);
			CHECK(f->start_line == marked_line("grow_def"), "%s: grow start_line %" PRId64,
			      what, f->start_line);
		}
		if (strcmp(f->name, "ns::alloc_inline(unsigned long, char const*)") == 0) {
			seen_inline = true;
			CHECK(f->start_line == marked_line("alloc_def"), "%s: alloc_inline start_line %" PRId64,
			      what, f->start_line);
		}
		if (strcmp(f->name, "main") == 0)
			CHECK(f->system_name[0] == '\0', "%s: main system_name %s", what, f->system_name);
	}
	CHECK(seen_grow && seen_inline, "%s: functions missing", what);

	/* libc from its ELF symbols (Debian ships it without DWARF). */
	char got[RLEN];
	render(p, NLABELS - 1, got, RLEN);
	CHECK(p->locs[NLABELS - 1].nlines >= 1 && strstr(got, "malloc"), "%s: malloc_fn: %s", what, got);
	/* Junk: named by address, never an error. */
	for (size_t j = 0; j < NJUNK; j++) {
		char want[32];
		snprintf(want, sizeof(want), "0x%" PRIx64, junk[j]);
		const struct prof_location *l = &p->locs[NLABELS + j];
		CHECK(l->nlines == 1 && strcmp(p->funcs[l->lines[0].function].name, want) == 0,
		      "%s: junk %s", what, want);
	}
}

/* The target's own frames must be "sym_cxx+0xOFFSET": its binary is not trusted. */
static void check_untrusted(const struct profile *p, const char *what)
{
	uint32_t mi = map_named(p, "sym_cxx");
	const struct prof_mapping *m = &p->maps[mi];

	for (size_t i = 0; i < NLABELS - 1; i++) {
		const struct prof_location *l = &p->locs[i];
		char want[64], got[RLEN];
		snprintf(want, sizeof(want), "sym_cxx+0x%" PRIx64, l->address - m->start + m->offset);
		render(p, i, got, RLEN);
		CHECK(l->mapping == mi && l->nlines == 1 &&
		      strcmp(p->funcs[l->lines[0].function].name, want) == 0 && l->lines[0].line == 0,
		      "%s: %s: want %s, got %s", what, labels[i], want, got);
	}
	CHECK(!m->has_functions && !m->has_line_numbers, "%s: flags set on an untrusted mapping", what);
	/* Other modules are still symbolized. */
	CHECK(ref[NLABELS - 1][0] != '\0', "no libc reference");
	char got[RLEN];
	render(p, NLABELS - 1, got, RLEN);
	CHECK(strcmp(got, ref[NLABELS - 1]) == 0, "%s: libc frame %s", what, got);
}

static struct profile *symbolize_live(int pid, const struct profile *src)
{
	struct profile *p = fresh_copy(src);
	struct sym_ctx *c;
	char err[256];
	int rc = sym_open_pid(pid, &c, err);

	CHECK(rc == 0, "sym_open_pid: %s", err);
	if (rc)
		return p;
	CHECK(sym_profile(c, p) == 0, "sym_profile");
	sym_close(c);
	return p;
}

static struct profile *symbolize_offline(const struct profile *src)
{
	struct profile *p = fresh_copy(src);
	struct sym_ctx *c;
	char err[256];
	int rc = sym_open_profile(p, &c, err);

	CHECK(rc == 0, "sym_open_profile: %s", err);
	if (rc)
		return p;
	CHECK(sym_profile(c, p) == 0, "sym_profile");
	sym_close(c);
	CHECK(prof_validate(p) == 0, "profile invalid after symbolization");
	return p;
}

/* ---- binutils addr2line as an independent oracle ------------------------ */

struct fnr {
	uint64_t lo, hi;
	char *name;
};

/* a and b are names of symbols at the same address (aliases). */
static bool aliases(const struct fnr *fns, size_t n, const char *a, const char *b)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(fns[i].name, a) != 0)
			continue;
		for (size_t j = 0; j < n; j++)
			if (fns[j].lo == fns[i].lo && strcmp(fns[j].name, b) == 0)
				return true;
	}
	return false;
}

static int cmp_fnr(const void *a, const void *b)
{
	const struct fnr *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Symbolizes about `want` addresses inside the functions of `binary`
 * (mapped as m in some process) offline and compares every frame with
 * `addr2line -a -f -i -C`.  Addresses between functions are left out: there
 * addr2line carries the previous line on, heapsnap says module+offset. */
static void check_against_addr2line(const char *binary, const struct prof_mapping *m, size_t want)
{
	char cmd[3 * PATH_MAX + 64], inpath[PATH_MAX], outpath[PATH_MAX];
	uint64_t bias = 0, total = 0;
	int fd = open(binary, O_RDONLY);
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	struct fnr *fns = NULL;
	size_t nph, nfn = 0;
	Elf_Scn *scn = NULL;

	if (system("command -v addr2line >/dev/null 2>&1") != 0) {
		fprintf(stderr, "# addr2line not installed: cross-check skipped\n");
		return;
	}
	if (!e)
		die(binary);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !(d = elf_getdata(scn, NULL)))
			continue;
		size_t n = sh.sh_size / sh.sh_entsize;
		if (!(fns = calloc(n, sizeof(*fns))))
			exit(1);
		for (size_t i = 0; i < n; i++) {
			GElf_Sym s;
			if (gelf_getsym(d, i, &s) && GELF_ST_TYPE(s.st_info) == STT_FUNC &&
			    s.st_size && s.st_shndx != SHN_UNDEF) {
				fns[nfn++] = (struct fnr){ s.st_value, s.st_value + s.st_size,
							   strdup(elf_strptr(e, sh.sh_link, s.st_name)) };
				total += s.st_size;
			}
		}
	}
	elf_end(e);
	close(fd);
	/* The load bias from the mapped file's own program headers (a debug
	 * file's p_offset values are meaningless). */
	if ((fd = open(m->file, O_RDONLY)) < 0 || !(e = elf_begin(fd, ELF_C_READ, NULL)) ||
	    elf_getphdrnum(e, &nph) != 0)
		die(m->file);
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			bias = m->start - m->offset - ph.p_vaddr + ph.p_offset;
	}
	elf_end(e);
	close(fd);
	CHECK(nfn > 0, "no function symbols in %s", binary);
	qsort(fns, nfn, sizeof(*fns), cmp_fnr);

	struct profile *p = prof_new();
	if (!p || prof_add_mapping(p, m->start, m->limit, m->offset, binary, m->build_id) != 0)
		exit(1);
	path_of(inpath, "a2l.in");
	path_of(outpath, "a2l.out");
	FILE *in = fopen(inpath, "w");
	if (!in)
		die(inpath);
	/* An odd stride walks through different instruction offsets. */
	uint64_t stride = total / want < 3 ? 3 : (total / want) | 1, carry = 0;
	for (size_t i = 0; i < nfn; i++) {
		if (i > 0 && fns[i].lo < fns[i - 1].hi)
			continue;   /* aliases */
		uint64_t v = fns[i].lo + carry;
		for (; v < fns[i].hi; v += stride) {
			fprintf(in, "0x%" PRIx64 "\n", v);
			prof_new_location(p, v + bias, 0);
		}
		carry = v - fns[i].hi;
	}
	fclose(in);

	struct sym_ctx *c;
	char err[256];
	double t0 = now();
	CHECK(sym_open_profile(p, &c, err) == 0, "sym_open_profile: %s", err);
	CHECK(sym_profile(c, p) == 0, "sym_profile");
	double t1 = now();
	sym_close(c);

	snprintf(cmd, sizeof(cmd), "addr2line -a -f -i -C -e '%s' < '%s' > '%s'", binary, inpath, outpath);
	CHECK(system(cmd) == 0, "%s", cmd);
	double t2 = now();
	FILE *out = fopen(outpath, "r");
	if (!out)
		die(outpath);
	char line[4096], fn[4096];
	size_t li = (size_t)-1, k = 0, compared = 0, bad = 0, inl = 0;
	bool have_fn = false;
	while (fgets(line, sizeof(line), out)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "0x", 2) == 0 && !have_fn) {
			li++;
			k = 0;
			continue;
		}
		if (!have_fn) {
			snprintf(fn, sizeof(fn), "%s", line);
			have_fn = true;
			continue;
		}
		have_fn = false;
		const char *colon = strrchr(line, ':');
		long want_line = colon ? strtol(colon + 1, NULL, 10) : 0;
		if (li >= p->nlocs || strcmp(fn, "??") == 0) {
			k++;
			continue;
		}
		const struct prof_location *l = &p->locs[li];
		compared++;
		inl += k > 0;
		/* addr2line prints C linkage names (glibc's __GI_ungetc),
		 * heapsnap the source name with the label as system_name. */
		const struct prof_function *f = k < l->nlines ? &p->funcs[l->lines[k].function] : NULL;
		bool same = f && (strcmp(f->name, fn) == 0 || strcmp(f->system_name, fn) == 0 ||
				  (want_line == 0 && aliases(fns, nfn, f->name, fn)));
		if (!same || (want_line > 0 && l->lines[k].line != want_line)) {
			char got[RLEN];
			render(p, li, got, RLEN);
			if (bad++ < 5)
				fprintf(stderr, "addr2line 0x%" PRIx64 " frame %zu: %s:%ld, heapsnap: %s\n",
					l->address - bias, k, fn, want_line, got);
		}
		k++;
	}
	fclose(out);
	for (size_t i = 0; i < nfn; i++)
		free(fns[i].name);
	free(fns);
	fprintf(stderr, "# addr2line cross-check on %s: %zu addresses, %zu frames (%zu inlined) "
		"compared, %zu differ; heapsnap %.3f s, addr2line %.3f s\n", binary, p->nlocs,
		compared, inl, bad, t1 - t0, t2 - t1);
	CHECK(compared >= p->nlocs && bad == 0, "%zu of %zu frames differ from addr2line", bad, compared);
	prof_free(p);
}

/* ---- speed -------------------------------------------------------------- */

/* Symbolizes every `stride`-th address of mapping mi of the live process,
 * cold (new session) then warm (same session, cached), and reports the
 * rates.  No timing is asserted; the warm pass must give the same result,
 * and so must a third pass into a profile whose function table already
 * holds other functions (the session must not reuse another profile's
 * function indexes). */
static void bench(int pid, const struct profile *src, uint32_t mi, uint64_t stride)
{
	struct profile *p[3];
	size_t nlines = 0;
	double t[3];
	struct sym_ctx *c;
	char err[256];

	for (int r = 0; r < 3; r++) {
		p[r] = fresh_copy(src);
		for (uint64_t a = src->maps[mi].start; a < src->maps[mi].limit; a += stride)
			prof_new_location(p[r], a, mi);
	}
	CHECK(prof_add_function(p[2], "pre-existing", "", "", 1) == 0, "prof_add_function");
	t[0] = now();
	CHECK(sym_open_pid(pid, &c, err) == 0, "sym_open_pid: %s", err);
	CHECK(sym_profile(c, p[0]) == 0, "sym_profile cold");
	t[1] = now();
	CHECK(sym_profile(c, p[1]) == 0, "sym_profile warm");
	t[2] = now();
	CHECK(sym_profile(c, p[2]) == 0, "sym_profile third");
	sym_close(c);
	size_t n = p[0]->nlocs - src->nlocs;
	for (size_t i = 0; i < p[0]->nlocs; i++)
		nlines += p[0]->locs[i].nlines;
	fprintf(stderr, "# speed, %s every %" PRIu64 " bytes (%s): %zu locations, %zu frames: "
		"cold %.0f locations/s, warm %.0f locations/s\n", src->maps[mi].file, stride,
		p[0]->maps[mi].has_line_numbers ? "DWARF" : "ELF symbols", n, nlines,
		n / (t[1] - t[0]), n / (t[2] - t[1]));
	for (size_t i = 0; i < p[0]->nlocs; i++) {
		char a[RLEN], b[RLEN], d[RLEN];
		render(p[0], i, a, RLEN);
		render(p[1], i, b, RLEN);
		render(p[2], i, d, RLEN);
		if (strcmp(a, b) != 0 || strcmp(a, d) != 0) {
			CHECK(0, "warm result differs at %zu: %s / %s / %s", i, a, b, d);
			break;
		}
	}
	for (int r = 0; r < 3; r++)
		prof_free(p[r]);
}

/* ---- the scenarios ------------------------------------------------------ */

/* This test program itself: C at -O2 with much inlining (profile.c,
 * symbolize.c), a real workload for the inline chains; then libc. */
static void check_self_against_addr2line(void)
{
	struct profile *p = prof_new();
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (!p || n <= 0 || prof_load_proc_maps(p, getpid()) != 0)
		die("self");
	self[n] = '\0';
	check_against_addr2line(self, &p->maps[0], 3000);

	/* libc through its separate debug file (libc6-dbg), when installed:
	 * the debug file stands in for the binary. */
	for (size_t i = 0; i < p->nmaps; i++) {
		const struct prof_mapping *m = &p->maps[i];
		const char *b = strrchr(m->file, '/');
		char dbg[PATH_MAX];
		if (!b || strncmp(b, "/libc.so", 8) != 0 || strlen(m->build_id) < 4)
			continue;
		snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug", m->build_id,
			 m->build_id + 2);
		if (access(dbg, R_OK) == 0)
			check_against_addr2line(dbg, m, 3000);
		else
			fprintf(stderr, "# no %s: libc cross-check skipped\n", dbg);
	}
	prof_free(p);
}

static void test_errors(void)
{
	struct sym_ctx *c = (struct sym_ctx *)&c;
	char err[256] = "";

	CHECK(sym_open_pid(-1, &c, err) == -ESRCH && err[0], "bad pid");
	CHECK(sym_open_pid(0x7ffffff0, &c, err) == -ESRCH && err[0], "missing pid");
	CHECK(c == (struct sym_ctx *)&c, "*out touched on error");
	sym_close(NULL);

	/* A profile with nothing usable still opens and names by address. */
	struct profile *p = prof_new();
	prof_add_mapping(p, 0x400000, 0x401000, 0, "/nonexistent/lib.so", "00112233");
	prof_add_mapping(p, 0x500000, 0x501000, 0, "", "");
	prof_add_location(p, 0x400123, PROF_NONE);
	prof_add_location(p, 0x500010, PROF_NONE);
	CHECK(sym_open_profile(p, &c, err) == 0, "sym_open_profile: %s", err);
	CHECK(sym_profile(c, p) == 0, "sym_profile");
	sym_close(c);
	CHECK(p->locs[0].nlines == 1 && strcmp(p->funcs[p->locs[0].lines[0].function].name,
						 "lib.so+0x123") == 0, "module+offset");
	CHECK(p->locs[1].nlines == 1 && strcmp(p->funcs[p->locs[1].lines[0].function].name,
						 "0x500010") == 0, "anonymous mapping");
	prof_free(p);

	/* Files a hostile or stale profile may name: not ELF, a directory, a
	 * device, a FIFO (opening it would block), a real ELF at an offset it
	 * does not have, absurd ranges.  All end as module+offset. */
	char fifo[PATH_MAX], self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	path_of(fifo, "fifo");
	if (mkfifo(fifo, 0600) != 0 || n <= 0)
		die("mkfifo");
	self[n] = '\0';
	const char *files[] = { "/etc/passwd", "/", "/dev/null", fifo, self, self, "relative/x.so" };
	const uint64_t offs[] = { 0, 0, 0, 0, 0x7fffffff0000ULL, 0, 0 };
	p = prof_new();
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		uint64_t start = 0x10000000ULL * (i + 1);
		prof_add_mapping(p, start, start + 0x100000, offs[i], files[i], i == 5 ? "0badc0de" : "");
		prof_add_location(p, start + 0x1234, PROF_NONE);
	}
	prof_add_mapping(p, ~0ULL - 0x1000, ~0ULL, ~0ULL - 5, "/etc/passwd", "");
	prof_add_location(p, ~0ULL - 0x10, PROF_NONE);
	CHECK(sym_open_profile(p, &c, err) == 0, "sym_open_profile: %s", err);
	CHECK(sym_profile(c, p) == 0, "sym_profile");
	sym_close(c);
	for (size_t i = 0; i < p->nlocs; i++) {
		const struct prof_location *l = &p->locs[i];
		const char *name = l->nlines == 1 ? p->funcs[l->lines[0].function].name : "";
		CHECK(strchr(name, '+') && strstr(name, "+0x"), "junk mapping %zu: '%s'", i, name);
	}
	prof_free(p);
}

/* A library the process loads after the session opened is found too. */
static void test_late_library(struct target *t)
{
	struct profile *p = make_profile(t->pid, t);
	struct sym_ctx *c;
	char err[256], got[RLEN];

	CHECK(sym_open_pid(t->pid, &c, err) == 0, "sym_open_pid: %s", err);
	CHECK(sym_profile(c, p) == 0, "sym_profile");
	prof_free(p);
	kill(t->pid, SIGUSR1);
	uint64_t cos = wait_addr(t, "late_cos");
	CHECK(cos != 0, "the target could not dlopen libm");
	p = make_profile(t->pid, t);
	int64_t li = prof_add_location(p, cos, PROF_NONE);
	CHECK(sym_profile(c, p) == 0, "sym_profile");
	sym_close(c);
	const struct prof_location *l = &p->locs[li];
	render(p, (size_t)li, got, RLEN);
	CHECK(l->mapping != PROF_NONE && strstr(p->maps[l->mapping].file, "/libm") &&
	      l->nlines >= 1 && strstr(p->funcs[l->lines[l->nlines - 1].function].name, "cos"),
	      "late libm: %s", got);
	fprintf(stderr, "# late_cos: %s\n", got);
	prof_free(p);
}

/* Locations that already have lines, and mappings already symbolized,
 * are left alone. */
static void test_keeps_existing(int pid, const struct profile *src)
{
	struct profile *p = fresh_copy(src);
	uint32_t libc = p->locs[NLABELS - 1].mapping;
	int64_t f = prof_add_function(p, "kept", "", "", 0);
	struct prof_line l = { (uint32_t)f, 7, 0 };
	struct sym_ctx *c;
	char err[256];

	prof_set_lines(p, 0, &l, 1);
	CHECK(libc != PROF_NONE, "malloc_fn has no mapping");
	if (libc != PROF_NONE)
		p->maps[libc].has_functions = true;
	CHECK(sym_open_pid(pid, &c, err) == 0, "sym_open_pid: %s", err);
	CHECK(sym_profile(c, p) == 0, "sym_profile");
	sym_close(c);
	CHECK(p->locs[0].nlines == 1 && p->locs[0].lines[0].function == (uint32_t)f, "lines replaced");
	CHECK(p->locs[NLABELS - 1].nlines == 0, "location of a symbolized mapping touched");
	CHECK(p->locs[1].nlines == 3, "other locations not symbolized");
	prof_free(p);
}

/* Without CAP_SYS_ADMIN /proc/PID/map_files is closed: as an ordinary user
 * the executable must come through /proc/PID/exe (even deleted or
 * replaced) and libraries by path with a matching inode.  Runs as nobody
 * in a child when we are root, else as ourselves. */
static void test_unprivileged(const char *orig)
{
	char dir[] = "/tmp/hs-symtest.XXXXXX", bin[64], patched[64];
	struct target t;
	pid_t pid;
	int status = 0;

	if (!mkdtemp(dir) || chmod(dir, 0755) != 0)
		die("mkdtemp");
	snprintf(bin, sizeof(bin), "%s/sym_cxx", dir);
	snprintf(patched, sizeof(patched), "%s/patched", dir);
	copy_file(orig, bin);
	copy_file(orig, patched);
	patch_build_id(patched);
	if (geteuid() == 0 && (chown(dir, 65534, 65534) != 0 || chown(patched, 65534, 65534) != 0))
		die("chown");
	fflush(NULL);
	if ((pid = fork()) < 0)
		die("fork");
	if (pid == 0) {
		if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0))
			die("setuid");
		failures = 0;
		start_target(bin, &t);
		struct profile *p0 = make_profile(t.pid, &t), *p;
		char mf[128];
		const struct prof_mapping *m = &p0->maps[0];
		snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, t.pid, m->start, m->limit);
		int fd = open(mf, O_RDONLY);
		fprintf(stderr, "# unprivileged: map_files %s\n", fd < 0 ? strerror(errno) : "open");
		if (fd >= 0)
			close(fd);
		p = symbolize_live(t.pid, p0);
		check_same_as_ref(p, "unprivileged live");
		prof_free(p);
		CHECK(unlink(bin) == 0, "unlink");
		p = symbolize_live(t.pid, p0);
		check_same_as_ref(p, "unprivileged live, binary deleted");
		prof_free(p);
		CHECK(rename(patched, bin) == 0, "rename");
		p = symbolize_live(t.pid, p0);
		check_same_as_ref(p, "unprivileged live, binary replaced");
		prof_free(p);
		stop_target(&t);
		prof_free(p0);
		_exit(failures ? 1 : 0);
	}
	double deadline = now() + 60;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		usleep(10000);
	}
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "unprivileged checks failed (%#x)", status);
	snprintf(bin, sizeof(bin), "rm -rf '%s'", dir);
	if (system(bin) != 0)
		fprintf(stderr, "# could not remove %s\n", dir);
}

/* The same target built by clang (tests/targets/sym_cxx.mk): DWARF 5 with
 * decl_file 0 for the main source and no .debug_aranges.  Live, then
 * offline after exit, then against addr2line. */
static void test_clang(void)
{
	char src[PATH_MAX], bin[PATH_MAX];
	struct target t;

	snprintf(src, sizeof(src), "%s/sym_cxx_clang", getenv("TARGETS"));
	if (access(src, X_OK) != 0) {
		fprintf(stderr, "# no %s (clang++ missing?): clang case skipped\n", src);
		return;
	}
	path_of(bin, "sym_cxx_clang");
	copy_file(src, bin);
	start_target(bin, &t);
	struct profile *p0 = make_profile(t.pid, &t), *p;
	p = symbolize_live(t.pid, p0);
	check_cxx(p, "clang live");
	save_ref(p);
	fprintf(stderr, "# clang nested: %s\n", ref[1]);
	prof_free(p);
	stop_target(&t);
	p = symbolize_offline(p0);
	check_same_as_ref(p, "clang offline");
	prof_free(p);
	check_against_addr2line(bin, &p0->maps[map_named(p0, "sym_cxx_clang")], 1000);
	prof_free(p0);
}

int main(void)
{
	const char *targets = getenv("TARGETS"), *srcdir = getenv("SRCDIR");
	char orig[PATH_MAX], run[PATH_MAX], other[PATH_MAX], dir[PATH_MAX], cmd[4 * PATH_MAX];
	struct target t;
	struct profile *p0, *p;

	if (!targets || !srcdir) {
		fprintf(stderr, "skip: TARGETS and SRCDIR must be set (run through tests/run.sh)\n");
		return 77;
	}
	/* Debuginfod would go to the network for the libraries' debug info. */
	unsetenv("DEBUGINFOD_URLS");
	unsetenv("HEAPSNAP_DEBUG_PATH");
	unsetenv("PPROF_BINARY_PATH");
	elf_version(EV_CURRENT);
	snprintf(srcfile, sizeof(srcfile), "%s/tests/targets/sym_cxx.cc", srcdir);
	if (!getcwd(tmpdir, sizeof(tmpdir)))
		die("getcwd");
	if (getenv("TMPDIR") && getenv("TMPDIR")[0] == '/')
		snprintf(tmpdir, sizeof(tmpdir), "%s", getenv("TMPDIR"));
	if (strlen(tmpdir) + 32 > sizeof(tmpdir))
		return 1;
	strcat(tmpdir, "/symtest.XXXXXX");
	if (!mkdtemp(tmpdir))
		die("mkdtemp");
	const char *subdirs[] = { "orig", "run", "dbg2", "dbg3" };
	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		path_of(dir, subdirs[i]);
		if (mkdir(dir, 0755) != 0)
			die(dir);
	}
	snprintf(cmd, sizeof(cmd), "%s/sym_cxx", targets);
	path_of(orig, "orig/sym_cxx");
	path_of(run, "run/sym_cxx");
	path_of(other, "other");
	copy_file(cmd, orig);
	copy_file(orig, run);

	test_errors();

	/* Live. */
	start_target(run, &t);
	p0 = make_profile(t.pid, &t);
	uint32_t mi = map_named(p0, "sym_cxx");
	CHECK(mi == 0, "the executable is not mapping 0");
	CHECK(p0->maps[mi].build_id[0] != '\0', "no build-id for the target");
	p = symbolize_live(t.pid, p0);
	check_cxx(p, "live");
	save_ref(p);
	for (size_t i = 0; i < NLABELS; i++)
		fprintf(stderr, "# %s: %s\n", labels[i], ref[i]);
	const struct prof_mapping *m = &p->maps[mi];
	CHECK(m->has_functions && m->has_filenames && m->has_line_numbers && m->has_inline_frames,
	      "mapping flags %d %d %d %d", m->has_functions, m->has_filenames, m->has_line_numbers,
	      m->has_inline_frames);
	prof_free(p);
	test_keeps_existing(t.pid, p0);
	test_late_library(&t);
	bench(t.pid, p0, mi, 1);
	bench(t.pid, p0, p0->locs[NLABELS - 1].mapping, 16);
	check_against_addr2line(orig, &p0->maps[mi], 1000);
	check_self_against_addr2line();

	/* Deleted, then replaced by a binary with another build-id: the live
	 * process still resolves through the file it mapped. */
	CHECK(unlink(run) == 0, "unlink");
	p = symbolize_live(t.pid, p0);
	check_same_as_ref(p, "live, binary deleted");
	prof_free(p);
	path_of(dir, "patched");
	copy_file(orig, dir);
	patch_build_id(dir);
	CHECK(rename(dir, run) == 0, "rename");
	p = symbolize_live(t.pid, p0);
	check_same_as_ref(p, "live, binary replaced");
	prof_free(p);
	/* prof_load_proc_maps reads build-ids through map_files (root only),
	 * so a snapshot taken now still names the mapped binary. */
	if (geteuid() == 0) {
		p = make_profile(t.pid, &t);
		CHECK(strcmp(p->maps[map_named(p, "sym_cxx")].build_id, p0->maps[mi].build_id) == 0,
		      "build-id of a replaced binary read from the new file: %s",
		      p->maps[map_named(p, "sym_cxx")].build_id);
		prof_free(p);
	}
	stop_target(&t);
	test_unprivileged(orig);

	/* Offline, the process is gone. */
	p = symbolize_offline(p0);
	check_untrusted(p, "offline, other build-id at the path");
	prof_free(p);

	copy_file("/proc/self/exe", other);
	CHECK(rename(other, run) == 0, "rename");
	p = symbolize_offline(p0);
	check_untrusted(p, "offline, another program at the path");
	prof_free(p);

	path_of(dir, "orig");
	setenv("HEAPSNAP_DEBUG_PATH", dir, 1);
	p = symbolize_offline(p0);
	check_same_as_ref(p, "offline, HEAPSNAP_DEBUG_PATH by name");
	prof_free(p);
	unsetenv("HEAPSNAP_DEBUG_PATH");

	const char *bid = p0->maps[mi].build_id;
	path_of(dir, "dbg3");
	snprintf(cmd, sizeof(cmd), "%s/%s", dir, bid);
	CHECK(mkdir(cmd, 0755) == 0, "mkdir");
	snprintf(cmd, sizeof(cmd), "%s/%s/sym_cxx", dir, bid);
	copy_file(orig, cmd);
	setenv("PPROF_BINARY_PATH", dir, 1);
	p = symbolize_offline(p0);
	check_same_as_ref(p, "offline, PPROF_BINARY_PATH/BUILDID/name");
	prof_free(p);
	unsetenv("PPROF_BINARY_PATH");

	/* A separate debug file found by build-id is enough. */
	if (system("command -v objcopy >/dev/null 2>&1") == 0) {
		path_of(dir, "dbg2");
		snprintf(cmd, sizeof(cmd), "mkdir -p '%s/.build-id/%.2s' && objcopy --only-keep-debug '%s' "
			 "'%s/.build-id/%.2s/%s.debug'", dir, bid, orig, dir, bid, bid + 2);
		CHECK(system(cmd) == 0, "%s", cmd);
		setenv("HEAPSNAP_DEBUG_PATH", dir, 1);
		p = symbolize_offline(p0);
		check_same_as_ref(p, "offline, debug file by build-id");
		prof_free(p);
		unsetenv("HEAPSNAP_DEBUG_PATH");
	} else {
		fprintf(stderr, "# objcopy not installed: debug-file case skipped\n");
	}

	/* The original binary back at its path. */
	copy_file(orig, run);
	p = symbolize_offline(p0);
	check_cxx(p, "offline");
	check_same_as_ref(p, "offline");
	prof_free(p);
	prof_free(p0);

	test_clang();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", tmpdir);
	if (failures) {
		fprintf(stderr, "test_symbolize: %d failures\n", failures);
		return 1;
	}
	fprintf(stderr, "test_symbolize: ok\n");
	return 0;
}
