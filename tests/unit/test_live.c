/* test_live.c - the payload and src/live.c against real processes: ground truth, GOT restore, allocators, fork, auth. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <grp.h>
#include <libelf.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "live.h"
#include "profile.h"

/*
 * The targets (tests/targets/pl_known*) load the payload themselves from a
 * thread of their own, exactly as the injector does, so this runs without
 * the injector.  Each target prints the truth about its own heap; the
 * snapshot must match it exactly at rate 1 and within 5 sigma otherwise.
 */

static int failures, skips;
static const char *targets_dir, *payload;

static void fail(const char *test, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "FAIL %s: ", test);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	failures++;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- a target driven over pipes --------------------------------------- */

#define MAXSITES 32
#define MAXSIZES 48

struct size_count {
	uint64_t size, count;
};

struct site {
	char name[32];
	uint64_t lo, hi;
	int64_t bytes, objs, abytes, aobjs;
	struct size_count sizes[MAXSIZES], asizes[MAXSIZES];
	int nsizes, nasizes;
};

struct tgt {
	pid_t pid;
	int in, out;
	char buf[1 << 16];
	size_t blen;
	struct site sites[MAXSITES];
	int nsites;
	char reply[512];
};

static struct site *site_get(struct tgt *t, const char *name)
{
	for (int i = 0; i < t->nsites; i++)
		if (!strcmp(t->sites[i].name, name))
			return &t->sites[i];
	if (t->nsites == MAXSITES)
		return NULL;
	struct site *s = &t->sites[t->nsites++];
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	return s;
}

static void parse_sizes(char *rest, struct size_count *v, int *n)
{
	*n = 0;
	for (char *tok = strtok(rest, " "); tok && *n < MAXSIZES; tok = strtok(NULL, " ")) {
		unsigned long long s, c;
		if (sscanf(tok, "%llu:%llu", &s, &c) == 2)
			v[(*n)++] = (struct size_count){ s, c };
	}
}

static void parse_line(struct tgt *t, char *line)
{
	char tag[32], name[32];
	unsigned long long a, b;
	int off = 0;

	if (sscanf(line, "%31s %31s %n", tag, name, &off) < 2) {
		snprintf(t->reply, sizeof(t->reply), "%.500s", line);
		return;
	}
	struct site *s = NULL;
	if (!strcmp(tag, "site") || !strcmp(tag, "expect") || !strcmp(tag, "expect-alloc") ||
	    !strcmp(tag, "sizes") || !strcmp(tag, "asizes"))
		s = site_get(t, name);
	if (!s) {
		if (strncmp(line, "done ", 5))
			snprintf(t->reply, sizeof(t->reply), "%.500s", line);
		return;
	}
	if (!strcmp(tag, "site") && sscanf(line + off, "%llx %llx", &a, &b) == 2) {
		s->lo = a;
		s->hi = b;
	} else if (!strcmp(tag, "expect") && sscanf(line + off, "%llu %llu", &a, &b) == 2) {
		s->bytes = (int64_t)a;
		s->objs = (int64_t)b;
	} else if (!strcmp(tag, "expect-alloc") && sscanf(line + off, "%llu %llu", &a, &b) == 2) {
		s->abytes = (int64_t)a;
		s->aobjs = (int64_t)b;
	} else if (!strcmp(tag, "sizes")) {
		parse_sizes(line + off, s->sizes, &s->nsizes);
	} else if (!strcmp(tag, "asizes")) {
		parse_sizes(line + off, s->asizes, &s->nasizes);
	}
}

/* Reads lines until `until` (a line prefix); false on timeout or EOF. */
static bool tgt_wait(struct tgt *t, const char *until, double timeout)
{
	double deadline = now_s() + timeout;

	for (;;) {
		char *nl;
		while ((nl = memchr(t->buf, '\n', t->blen))) {
			*nl = 0;
			bool end = !strncmp(t->buf, until, strlen(until));
			parse_line(t, t->buf);
			size_t used = (size_t)(nl + 1 - t->buf);
			memmove(t->buf, nl + 1, t->blen - used);
			t->blen -= used;
			if (end)
				return true;
		}
		double left = deadline - now_s();
		if (left <= 0)
			return false;
		struct pollfd p = { t->out, POLLIN, 0 };
		if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
			continue;
		ssize_t n = read(t->out, t->buf + t->blen, sizeof(t->buf) - 1 - t->blen);
		if (n <= 0)
			return false;
		t->blen += (size_t)n;
	}
}

/* Starts a target; env_extra like "LD_PRELOAD=..." or NULL. */
static bool tgt_start(struct tgt *t, const char *prog, const char *env_extra)
{
	int in[2], out[2];
	char path[4096];

	memset(t, 0, sizeof(*t));
	snprintf(path, sizeof(path), "%s/%s", targets_dir, prog);
	if (pipe(in) || pipe(out))
		return false;
	t->pid = fork();
	if (t->pid < 0)
		return false;
	if (t->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]); close(in[1]); close(out[0]); close(out[1]);
		if (env_extra)
			putenv((char *)env_extra);
		execl(path, prog, "cmd", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	t->in = in[1];
	t->out = out[0];
	return tgt_wait(t, "ready", 10);
}

/* Sends one command and waits for its "done"; t->reply holds its last
 * other line ("loaded 0"). */
static bool tgt_cmd(struct tgt *t, const char *cmd)
{
	char verb[64], done[80];

	t->reply[0] = 0;
	if (dprintf(t->in, "%s\n", cmd) < 0)
		return false;
	sscanf(cmd, "%63s", verb);
	snprintf(done, sizeof(done), "done %s", verb);
	return tgt_wait(t, done, 120);
}

/* quit, and the exit status (0 = its heap was intact); -1 on timeout. */
static int tgt_finish(struct tgt *t)
{
	int st;

	if (dprintf(t->in, "quit\n") >= 0)
		tgt_wait(t, "done quit", 30);
	close(t->in);
	for (int i = 0; i < 3000; i++) {
		pid_t r = waitpid(t->pid, &st, WNOHANG);
		if (r == t->pid) {
			close(t->out);
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		usleep(10000);
	}
	kill(t->pid, SIGKILL);
	waitpid(t->pid, &st, 0);
	close(t->out);
	return -1;
}

static bool tgt_load(struct tgt *t, const char *test, long rate, long flags)
{
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "load %ld %ld", rate, flags);
	if (!tgt_cmd(t, cmd) || strcmp(t->reply, "loaded 0")) {
		fail(test, "load: '%s'", t->reply);
		return false;
	}
	return true;
}

static bool tgt_unload(struct tgt *t, const char *test)
{
	if (!tgt_cmd(t, "unload") || strcmp(t->reply, "unloaded 0 0 0")) {
		fail(test, "unload: '%s' (want rc 0, dlclose 0, unmapped)", t->reply);
		return false;
	}
	return true;
}

/* ---- comparing a profile with the truth -------------------------------- */

struct est {
	double v[PT_NTYPES];
};

/* The site a sample belongs to: the first frame, from the leaf, inside a
 * site's address range. */
static int sample_site(const struct tgt *t, const struct profile *p, const struct prof_sample *s)
{
	for (uint32_t i = 0; i < s->nlocs; i++) {
		uint64_t a = p->locs[s->locs[i]].address;
		for (int k = 0; k < t->nsites; k++)
			if (a >= t->sites[k].lo && a < t->sites[k].hi)
				return k;
	}
	return -1;
}

/*
 * Tolerance for an estimate summed over sampled allocations: 5 sigma with
 * sigma^2 = sum s^2 (1-p)/p (FORMATS.md section 6), valid while no single
 * sample moves the sum by much (near-normal).  Where a few rare samples
 * dominate (a handful of 4-byte objects at a 4 KiB rate: one sample counts
 * as ~1000 objects) the normal tail is wrong; there Bernstein's inequality
 * for bounded terms gives a bound with the same false-alarm rate (1e-6):
 * sqrt(2 V ln(2/d)) + (2/3) M ln(2/d), M the largest single term.
 * Returns 0 when every size is certain to be sampled (exact).
 */
static double tolerance(const struct size_count *v, int n, double rate, bool bytes)
{
	double var = 0, m = 0;
	for (int i = 0; i < n; i++) {
		double p = prof_sample_prob((double)v[i].size, rate);
		if (p <= 0 || p >= 1 || !v[i].count)
			continue;
		double w = bytes ? (double)v[i].size : 1.0;
		var += (double)v[i].count * w * w * (1 - p) / p;
		if (w / p > m)
			m = w / p;
	}
	double sig = sqrt(var);
	if (m <= sig / 2)
		return 5 * sig;
	const double l = log(2 / 1e-6);
	return sqrt(2 * var * l) + 2.0 / 3.0 * m * l;
}

/* One estimate against its truth: exact when the tolerance is 0 (rate 1,
 * or every size certain to be sampled), else within it (plus the rounding
 * of one unit per (stack, size) sample). */
static bool close_enough(const char *test, const char *site, const char *what, double est,
			 double truth, double tol, double slack)
{
	if (tol > 0)
		tol += slack;
	if (fabs(est - truth) <= tol)
		return true;
	fail(test, "site %s %s: estimate %.0f, truth %.0f, tolerance %.0f", site, what, est, truth, tol);
	return false;
}

/* Per-site sums of a profile's values; nsamp: samples per site. */
static void site_estimates(const struct tgt *t, const struct profile *p, struct est e[MAXSITES],
			   int nsamp[MAXSITES])
{
	memset(e, 0, MAXSITES * sizeof(*e));
	memset(nsamp, 0, MAXSITES * sizeof(*nsamp));
	for (size_t i = 0; i < p->nsamples; i++) {
		int k = sample_site(t, p, &p->samples[i]);
		if (k < 0)
			continue;
		nsamp[k]++;
		for (int j = 0; j < PT_NTYPES; j++)
			e[k].v[j] += (double)p->samples[i].v[j];
	}
}

static bool check_profile(const char *test, const struct tgt *t, const struct profile *p,
			  double rate, const char *only)
{
	struct est e[MAXSITES];
	int nsamp[MAXSITES];
	bool ok = true;

	if (prof_validate(p) != 0) {
		fail(test, "profile does not validate");
		return false;
	}
	if (!p->has_alloc || p->period != (int64_t)rate) {
		fail(test, "has_alloc %d period %lld, want 1 and %.0f", p->has_alloc,
		     (long long)p->period, rate);
		ok = false;
	}
	site_estimates(t, p, e, nsamp);
	for (int k = 0; k < t->nsites; k++) {
		const struct site *s = &t->sites[k];
		if (only && strcmp(only, s->name))
			continue;
		double sl = nsamp[k] + 1;
		ok &= close_enough(test, s->name, "inuse_space", e[k].v[PT_INUSE_SPACE], (double)s->bytes,
				   tolerance(s->sizes, s->nsizes, rate, true), sl);
		ok &= close_enough(test, s->name, "inuse_objects", e[k].v[PT_INUSE_OBJECTS], (double)s->objs,
				   tolerance(s->sizes, s->nsizes, rate, false), sl);
		ok &= close_enough(test, s->name, "alloc_space", e[k].v[PT_ALLOC_SPACE], (double)s->abytes,
				   tolerance(s->asizes, s->nasizes, rate, true), sl);
		ok &= close_enough(test, s->name, "alloc_objects", e[k].v[PT_ALLOC_OBJECTS], (double)s->aobjs,
				   tolerance(s->asizes, s->nasizes, rate, false), sl);
	}
	return ok;
}

static struct profile *snapshot(const char *test, pid_t pid)
{
	struct live_conn *c;
	struct profile *p = NULL;
	int ret = live_connect(pid, &c);

	if (ret) {
		fail(test, "live_connect: %s", strerror(-ret));
		return NULL;
	}
	double t0 = now_s();
	ret = live_snapshot(c, &p);
	double dt = now_s() - t0;
	live_close(c);
	if (ret) {
		fail(test, "live_snapshot: %s", strerror(-ret));
		return NULL;
	}
	fprintf(stderr, "# %s: snapshot of %zu samples, %zu locations in %.1f ms\n", test,
		p->nsamples, p->nlocs, dt * 1e3);
	return p;
}

/* Load at `rate`, allocate, snapshot, compare, unload, check the target. */
static void test_truth(const char *test, const char *prog, const char *env, long rate, long flags)
{
	struct tgt t;

	if (!tgt_start(&t, prog, env)) {
		fail(test, "target %s did not start", prog);
		return;
	}
	if (tgt_load(&t, test, rate, flags) && tgt_cmd(&t, "alloc")) {
		struct live_conn *c;
		struct hsp_status st;
		if (!live_connect(t.pid, &c)) {
			if (!live_status(c, &st)) {
				unsigned want = flags & HSP_START_UNWIND_MASK;
				fprintf(stderr, "# %s: unwinder %u\n", test, st.unwinder);
				if (want != HSP_UNW_AUTO && st.unwinder != want)
					fail(test, "unwinder %u in use, asked for %u", st.unwinder, want);
				if (!strcmp(prog, "pl_known_lu") && st.unwinder != HSP_UNW_LIBUNWIND)
					fail(test, "libunwind is loaded but unwinder %u was picked", st.unwinder);
			}
			live_close(c);
		}
		struct profile *p = snapshot(test, t.pid);
		if (p) {
			if (!check_profile(test, &t, p, (double)rate, NULL))
				fprintf(stderr, "# %s: profile had %zu samples\n", test, p->nsamples);
			prof_free(p);
		}
		tgt_unload(&t, test);
	}
	int rc = tgt_finish(&t);
	if (rc != 0)
		fail(test, "target exited %d", rc);
}

/* ---- GOT slots and maps, read from outside ------------------------------ */

static const char *const hooked[] = {
	"malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
	"aligned_alloc", "memalign", "valloc", "pvalloc", "free_sized", "free_aligned_sized",
	"_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t",
	"_ZnamSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t",
	"_ZnamSt11align_val_tRKSt9nothrow_t", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm",
	"_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t", "_ZdlPvSt11align_val_t",
	"_ZdaPvSt11align_val_t", "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
	"_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
	"mallocx", "rallocx", "xallocx", "sdallocx", "dallocx", "dlopen", "dlclose",
};

struct gslot {
	uint64_t addr, val;
};

struct gslots {
	struct gslot *v;
	size_t n, cap;
};

static bool is_hooked(const char *name)
{
	for (size_t i = 0; i < sizeof(hooked) / sizeof(hooked[0]); i++)
		if (!strcmp(name, hooked[i]))
			return true;
	return false;
}

/* Every JUMP_SLOT/GLOB_DAT slot of a hooked name in one mapped ELF file. */
static void module_slots(int memfd, const char *file, uint64_t map_start, struct gslots *out)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	GElf_Ehdr eh;
	size_t nph;
	if (!e || !gelf_getehdr(e, &eh) || elf_getphdrnum(e, &nph)) {
		if (e)
			elf_end(e);
		close(fd);
		return;
	}
	uint64_t minv = UINT64_MAX;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < minv)
			minv = ph.p_vaddr;
	}
	uint64_t base = eh.e_type == ET_EXEC ? 0 : map_start - (minv & ~0xfffull);
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA)
			continue;
		Elf_Scn *symscn = elf_getscn(e, sh.sh_link);
		GElf_Shdr symsh;
		Elf_Data *rd = elf_getdata(scn, NULL), *sd = symscn ? elf_getdata(symscn, NULL) : NULL;
		if (!rd || !sd || !gelf_getshdr(symscn, &symsh))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			if (!gelf_getrela(rd, (int)i, &r))
				continue;
			unsigned type = GELF_R_TYPE(r.r_info);
			if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
				continue;
			if (!gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &sym))
				continue;
			const char *name = elf_strptr(e, symsh.sh_link, sym.st_name);
			if (!name || !is_hooked(name))
				continue;
			uint64_t val = 0, addr = base + r.r_offset;
			if (pread(memfd, &val, sizeof(val), (off_t)addr) != sizeof(val))
				continue;
			if (out->n == out->cap) {
				out->cap = out->cap ? out->cap * 2 : 256;
				out->v = realloc(out->v, out->cap * sizeof(*out->v));
			}
			out->v[out->n++] = (struct gslot){ addr, val };
		}
	}
	elf_end(e);
	close(fd);
}

static bool read_slots(pid_t pid, struct gslots *out)
{
	char path[64], line[4096], last[4096] = "";
	FILE *f;
	int memfd;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	memfd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (memfd < 0 || !f) {
		if (f)
			fclose(f);
		if (memfd >= 0)
			close(memfd);
		return false;
	}
	elf_version(EV_CURRENT);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, off;
		int n = 0;
		if (sscanf(line, "%llx-%*x %*s %llx %*s %*s %n", &lo, &off, &n) < 2 || !n)
			continue;
		char *file = line + n;
		file[strcspn(file, "\n")] = 0;
		if (file[0] != '/' || off != 0 || !strcmp(file, last))
			continue;
		snprintf(last, sizeof(last), "%s", file);
		module_slots(memfd, file, lo, out);
	}
	fclose(f);
	close(memfd);
	return out->n > 0;
}

/* File-backed mappings, verbatim, minus the payload's, libgcc_s (glibc's
 * backtrace() loads it once and never unloads it) and libunwind with its
 * liblzma (the payload loads it NODELETE: its per-thread caches are freed
 * by a thread-exit destructor). */
static char *file_maps(pid_t pid)
{
	char path[64], line[4096];
	size_t len = 0, cap = 1 << 16;
	char *out = calloc(1, cap);
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	FILE *f = fopen(path, "re");
	if (!f || !out) {
		if (f)
			fclose(f);
		free(out);
		return NULL;
	}
	while (fgets(line, sizeof(line), f)) {
		if (!strchr(line, '/') || strstr(line, "libheapsnap-payload") || strstr(line, "libgcc_s") ||
		    strstr(line, "libunwind.so") || strstr(line, "liblzma.so"))
			continue;
		size_t l = strlen(line);
		if (len + l + 1 > cap) {
			cap *= 2;
			out = realloc(out, cap);
		}
		memcpy(out + len, line, l + 1);
		len += l;
	}
	fclose(f);
	return out;
}

/* Address range of the payload's mappings. */
static bool payload_range(pid_t pid, uint64_t *lo, uint64_t *hi)
{
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	FILE *f = fopen(path, "re");
	*lo = UINT64_MAX;
	*hi = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long a, b;
		if (strstr(line, "libheapsnap-payload") && sscanf(line, "%llx-%llx", &a, &b) == 2) {
			*lo = a < *lo ? a : *lo;
			*hi = b > *hi ? b : *hi;
		}
	}
	if (f)
		fclose(f);
	return *hi > 0;
}

static int count_tasks(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	FILE *f = fopen(path, "re");
	char line[256];
	int n = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* Slots are patched while sampling and byte-for-byte back after unload;
 * file mappings (protections included) identical; no thread left. */
static void test_restore(const char *test, const char *prog)
{
	struct tgt t;
	struct gslots before, during, after;
	uint64_t plo, phi;

	if (!tgt_start(&t, prog, NULL)) {
		fail(test, "target %s did not start", prog);
		return;
	}
	char *maps0 = file_maps(t.pid);
	int tasks0 = count_tasks(t.pid);
	if (!read_slots(t.pid, &before)) {
		fail(test, "no GOT slots found in %s", prog);
		goto out;
	}
	if (!tgt_load(&t, test, 4096, 0) || !tgt_cmd(&t, "alloc"))
		goto out;
	read_slots(t.pid, &during);
	if (!payload_range(t.pid, &plo, &phi)) {
		fail(test, "payload not mapped while sampling");
		goto out;
	}
	size_t changed = 0;
	for (size_t j = 0; j < during.n; j++)
		if (during.v[j].val >= plo && during.v[j].val < phi)
			changed++;
	if (!changed)
		fail(test, "no slot was patched while sampling (%zu slots)", before.n);
	struct profile *p = snapshot(test, t.pid);
	if (p) {
		check_profile(test, &t, p, 4096, NULL);
		prof_free(p);
	}
	if (!tgt_unload(&t, test))
		goto out;
	read_slots(t.pid, &after);
	/* A slot we patched must hold its old bytes again; one we left alone
	 * may only have changed by lazy binding while we were in, so it must
	 * be as it was then. */
	for (size_t i = 0; i < before.n; i++) {
		const struct gslot *d = NULL, *a = NULL;
		for (size_t j = 0; j < during.n; j++)
			if (during.v[j].addr == before.v[i].addr)
				d = &during.v[j];
		for (size_t j = 0; j < after.n; j++)
			if (after.v[j].addr == before.v[i].addr)
				a = &after.v[j];
		if (!d || !a) {
			fail(test, "slot %#llx vanished", (unsigned long long)before.v[i].addr);
			continue;
		}
		bool ours = d->val >= plo && d->val < phi;
		uint64_t want = ours ? before.v[i].val : d->val;
		if (a->val != want)
			fail(test, "slot %#llx is %#llx after unload, want %#llx (before %#llx, during %#llx)",
			     (unsigned long long)a->addr, (unsigned long long)a->val,
			     (unsigned long long)want, (unsigned long long)before.v[i].val,
			     (unsigned long long)d->val);
	}
	fprintf(stderr, "# %s: %zu slots, %zu patched while sampling, all restored\n", test,
		before.n, changed);
	char *maps1 = file_maps(t.pid);
	if (!maps0 || !maps1 || strcmp(maps0, maps1))
		fail(test, "file mappings differ after unload:\n--- before\n%s--- after\n%s",
		     maps0 ? maps0 : "?", maps1 ? maps1 : "?");
	free(maps1);
	/* The threads that unload ends (control thread, injector worker) may
	 * still be leaving the kernel's task list: wait for it, bounded. */
	int tasks1 = count_tasks(t.pid);
	for (int i = 0; i < 200 && tasks1 != tasks0; i++) {
		usleep(10000);
		tasks1 = count_tasks(t.pid);
	}
	if (tasks1 != tasks0)
		fail(test, "%d threads after unload, %d before", tasks1, tasks0);
	free(during.v);
	free(after.v);
out:
	free(before.v);
	free(maps0);
	int rc = tgt_finish(&t);
	if (rc != 0)
		fail(test, "target exited %d", rc);
}

/* ---- other behaviours ---------------------------------------------------- */

static void test_dlopen_later(const char *test)
{
	struct tgt t;
	char cmd[4200];

	if (!tgt_start(&t, "pl_known", NULL)) {
		fail(test, "target did not start");
		return;
	}
	snprintf(cmd, sizeof(cmd), "dlopen %s/libpl_dynlib.so", targets_dir);
	if (tgt_load(&t, test, 1, 0) && tgt_cmd(&t, cmd)) {
		if (!site_get(&t, "dyn")->hi)
			fail(test, "dlopen failed: %s", t.reply);
		struct profile *p = snapshot(test, t.pid);
		if (p) {
			check_profile(test, &t, p, 1, "dyn");
			prof_free(p);
		}
		tgt_unload(&t, test);
	}
	int rc = tgt_finish(&t);
	if (rc != 0)
		fail(test, "target exited %d", rc);
}

static void test_fork(const char *test)
{
	struct tgt t;

	if (!tgt_start(&t, "pl_known", NULL)) {
		fail(test, "target did not start");
		return;
	}
	if (tgt_load(&t, test, 1, 0)) {
		if (!tgt_cmd(&t, "fork") || strcmp(t.reply, "forked 0"))
			fail(test, "fork child: '%s'", t.reply);
		/* The parent still samples. */
		if (tgt_cmd(&t, "alloc")) {
			struct profile *p = snapshot(test, t.pid);
			if (p) {
				check_profile(test, &t, p, 1, "large");
				prof_free(p);
			}
		}
		tgt_unload(&t, test);
	}
	int rc = tgt_finish(&t);
	if (rc != 0)
		fail(test, "target exited %d", rc);
}

/* status, start/stop twice, rate, reset; then a second load/unload cycle. */
static void test_commands(const char *test)
{
	struct tgt t;
	struct live_conn *c = NULL;
	struct hsp_status st;
	int ret;

	if (!tgt_start(&t, "pl_known", NULL)) {
		fail(test, "target did not start");
		return;
	}
	ret = live_connect(t.pid, &c);
	if (ret != -ENOENT)
		fail(test, "connect before load: %s, want ENOENT", strerror(-ret));
	if (!ret)
		live_close(c);
	c = NULL;
	if (!tgt_load(&t, test, 8192, 0))
		goto out;
	if (!tgt_cmd(&t, "load 8192 0") || strcmp(t.reply, "loaded -114"))
		fail(test, "second hsp_start: '%s', want -EALREADY (-114)", t.reply);
	ret = live_connect(t.pid, &c);
	if (ret) {
		fail(test, "live_connect: %s", strerror(-ret));
		goto out;
	}
	ret = live_status(c, &st);
	if (ret || st.state != HSP_STATE_SAMPLING || st.rate != 8192 || strcmp(st.backend, "interpose") ||
	    st.slots == 0 || st.modules == 0)
		fail(test, "status: ret %d state %u rate %llu backend %s slots %llu", ret, st.state,
		     (unsigned long long)st.rate, st.backend, (unsigned long long)st.slots);
	fprintf(stderr, "# %s: %llu slots in %llu modules, unwinder %u, payload memory %llu KiB\n",
		test, (unsigned long long)st.slots, (unsigned long long)st.modules, st.unwinder,
		(unsigned long long)st.mem_bytes >> 10);
	if ((ret = live_start(c, 0)) != -EALREADY)
		fail(test, "start while sampling: %d, want -EALREADY", ret);
	if ((ret = live_stop(c)) != 0)
		fail(test, "stop: %d", ret);
	if ((ret = live_stop(c)) != -EALREADY)
		fail(test, "stop twice: %d, want -EALREADY", ret);
	/* Paused: allocations are not sampled. */
	tgt_cmd(&t, "alloc");
	ret = live_status(c, &st);
	if (ret || st.state != HSP_STATE_PAUSED || st.alloc_samples != 0)
		fail(test, "paused status: state %u, %llu samples", st.state,
		     (unsigned long long)st.alloc_samples);
	if ((ret = live_set_rate(c, 0)) != -EINVAL)
		fail(test, "rate 0: %d", ret);
	if ((ret = live_start(c, 1)) != 0)
		fail(test, "start: %d", ret);
	ret = live_status(c, &st);
	if (ret || st.rate != 1 || st.state != HSP_STATE_SAMPLING)
		fail(test, "after start: rate %llu state %u", (unsigned long long)st.rate, st.state);
	if ((ret = live_set_rate(c, 4096)) != 0)
		fail(test, "set rate: %d", ret);
	if ((ret = live_reset(c)) != 0)
		fail(test, "reset: %d", ret);
	ret = live_status(c, &st);
	if (ret || st.alloc_samples != 0 || st.rate != 4096)
		fail(test, "after reset: %llu alloc samples, rate %llu",
		     (unsigned long long)st.alloc_samples, (unsigned long long)st.rate);
	live_close(c);
	c = NULL;
	if (!tgt_unload(&t, test))
		goto out;
	if ((ret = live_connect(t.pid, &c)) != -ENOENT)
		fail(test, "connect after unload: %s, want ENOENT", strerror(-ret));
	if (!ret)
		live_close(c);
	c = NULL;
	/* A second cycle in the same process. */
	if (tgt_load(&t, test, 1, 0)) {
		struct profile *p = snapshot(test, t.pid);
		if (p) {
			/* The first cycle's allocations are still live but were
			 * never seen by this one. */
			double live = (double)prof_total(p, PT_INUSE_SPACE);
			if (live > 1e6)
				fail(test, "second cycle starts with %.0f live bytes", live);
			prof_free(p);
		}
		tgt_unload(&t, test);
	}
out:
	live_close(c);
	int rc = tgt_finish(&t);
	if (rc != 0)
		fail(test, "target exited %d", rc);
}

/* A peer that is neither root nor the target's uid is turned away. */
static void test_auth(const char *test)
{
	struct tgt t;

	if (geteuid() != 0) {
		fprintf(stderr, "# %s: skipped (needs root to switch uid)\n", test);
		skips++;
		return;
	}
	if (!tgt_start(&t, "pl_known", NULL)) {
		fail(test, "target did not start");
		return;
	}
	if (tgt_load(&t, test, 4096, 0)) {
		pid_t c = fork();
		if (c == 0) {
			struct live_conn *lc;
			gid_t g = 54321;
			if (setgroups(1, &g) || setresgid(g, g, g) || setresuid(54321, 54321, 54321))
				_exit(77);
			int ret = live_connect(t.pid, &lc);
			_exit(ret == -EACCES ? 0 : 1);
		}
		int st = -1;
		waitpid(c, &st, 0);
		if (!WIFEXITED(st) || (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 77))
			fail(test, "uid 54321 was not refused (child status %d)", st);
		else if (WEXITSTATUS(st) == 77)
			fprintf(stderr, "# %s: could not switch uid\n", test), skips++;
		/* ...and root still gets in. */
		struct live_conn *lc;
		int ret = live_connect(t.pid, &lc);
		if (ret)
			fail(test, "root refused: %s", strerror(-ret));
		else
			live_close(lc);
		tgt_unload(&t, test);
	}
	int rc = tgt_finish(&t);
	if (rc != 0)
		fail(test, "target exited %d", rc);
}

/*
 * Bias: the mean of K independent runs must be within 5 sigma / sqrt(K) of
 * the truth (FORMATS.md section 6), for the inuse_space of every site
 * where the normal approximation holds.
 */
static void test_bias(const char *test, long rate, int k)
{
	struct est sum[MAXSITES];
	struct tgt t;
	int runs = 0;

	memset(sum, 0, sizeof(sum));
	for (int r = 0; r < k; r++) {
		struct est e[MAXSITES];
		int nsamp[MAXSITES];
		if (!tgt_start(&t, "pl_known", NULL)) {
			fail(test, "target did not start");
			return;
		}
		if (tgt_load(&t, test, rate, 0) && tgt_cmd(&t, "alloc")) {
			struct profile *p = snapshot(test, t.pid);
			if (p) {
				site_estimates(&t, p, e, nsamp);
				for (int s = 0; s < t.nsites; s++)
					for (int j = 0; j < PT_NTYPES; j++)
						sum[s].v[j] += e[s].v[j];
				runs++;
				prof_free(p);
			}
			tgt_unload(&t, test);
		}
		if (tgt_finish(&t) != 0)
			fail(test, "target exited badly");
	}
	if (runs != k)
		return;
	for (int s = 0; s < t.nsites; s++) {
		const struct site *st = &t.sites[s];
		double var = 0, m = 0;
		for (int i = 0; i < st->nsizes; i++) {
			double p = prof_sample_prob((double)st->sizes[i].size, (double)rate);
			if (p > 0 && p < 1 && st->sizes[i].count) {
				double w = (double)st->sizes[i].size;
				var += (double)st->sizes[i].count * w * w * (1 - p) / p;
				m = w / p > m ? w / p : m;
			}
		}
		double sig = sqrt(var / k), mean = sum[s].v[PT_INUSE_SPACE] / k;
		if (sig == 0 || m > sqrt(var) / 2)
			continue; /* exact, or not near-normal: test_truth covers it */
		fprintf(stderr, "# %s: site %s mean %.0f truth %lld (%.2f sigma)\n", test, st->name, mean,
			(long long)st->bytes, (mean - (double)st->bytes) / sig);
		if (fabs(mean - (double)st->bytes) > 5 * sig)
			fail(test, "site %s: mean of %d runs %.0f, truth %lld, 5 sigma/sqrt(K) %.0f", st->name,
			     k, mean, (long long)st->bytes, 5 * sig);
	}
}

/* The program keeps a copy of a hook's address: unload must refuse (and
 * the payload pin itself), the copy must keep working. */
static void test_escape(const char *test)
{
	struct tgt t;

	if (!tgt_start(&t, "pl_known", NULL)) {
		fail(test, "target did not start");
		return;
	}
	if (tgt_load(&t, test, 4096, 0) && tgt_cmd(&t, "escape")) {
		if (!tgt_cmd(&t, "unload") || strcmp(t.reply, "unloaded -16 -1 1"))
			fail(test, "unload with an escaped hook: '%s', want -EBUSY and still mapped", t.reply);
		struct live_conn *c;
		struct hsp_status st;
		if (live_connect(t.pid, &c) || live_status(c, &st)) {
			fail(test, "no status after a refused unload");
		} else {
			if (st.escaped != 1 || st.unload_error != -EBUSY || st.state != HSP_STATE_UNLOADED)
				fail(test, "status: escaped %llu, unload_error %d, state %u",
				     (unsigned long long)st.escaped, st.unload_error, st.state);
			live_close(c);
		}
		if (!tgt_cmd(&t, "call-escaped") || strcmp(t.reply, "called OK"))
			fail(test, "calling the kept copy: '%s'", t.reply);
	}
	int rc = tgt_finish(&t);
	if (rc != 0)
		fail(test, "target exited %d", rc);
}

static const char *find_lib(const char *name)
{
	static char path[512];
	const char *dirs[] = { "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], name);
		if (access(path, R_OK) == 0)
			return path;
	}
	return NULL;
}

static void test_allocator(const char *name, const char *lib)
{
	char test[64], env[600];
	const char *path = find_lib(lib);

	if (!path) {
		fprintf(stderr, "# allocator %s: skipped (%s not installed)\n", name, lib);
		skips++;
		return;
	}
	snprintf(env, sizeof(env), "LD_PRELOAD=%s", path);
	snprintf(test, sizeof(test), "%s-exact", name);
	test_truth(test, "pl_known", env, 1, 0);
	snprintf(test, sizeof(test), "%s-4k", name);
	test_truth(test, "pl_known", env, 4096, 0);
}

static bool selected(int argc, char **argv, const char *name)
{
	if (argc < 2)
		return true;
	for (int i = 1; i < argc; i++)
		if (strstr(name, argv[i]))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	targets_dir = getenv("TARGETS");
	payload = getenv("HEAPSNAP_PAYLOAD");
	if (!targets_dir || !payload || access(payload, R_OK)) {
		fprintf(stderr, "skip: TARGETS and HEAPSNAP_PAYLOAD must point at the build\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stderr, NULL, _IOLBF, 0);

#define RUN(name, call)                                                        \
	do {                                                                   \
		if (selected(argc, argv, name)) {                              \
			int f0 = failures;                                     \
			double t0 = now_s();                                   \
			call;                                                  \
			fprintf(stderr, "%s %s (%.1fs)\n", failures == f0 ? "ok" : "not ok", \
				name, now_s() - t0);                           \
		}                                                              \
	} while (0)

	RUN("exact", test_truth("exact", "pl_known", NULL, 1, 0));
	RUN("sigma-4k", test_truth("sigma-4k", "pl_known", NULL, 4096, 0));
	RUN("sigma-512k", test_truth("sigma-512k", "pl_known", NULL, 512 * 1024, 0));
	RUN("unwind-backtrace", test_truth("unwind-backtrace", "pl_known", NULL, 1, HSP_UNW_BACKTRACE));
	RUN("unwind-fp", test_truth("unwind-fp", "pl_known_fp", NULL, 1, HSP_UNW_FP));
	RUN("unwind-libunwind", test_truth("unwind-libunwind", "pl_known_lu", NULL, 1, HSP_UNW_AUTO));
	RUN("cxx-exact", test_truth("cxx-exact", "pl_known_cxx", NULL, 1, 0));
	RUN("cxx-4k", test_truth("cxx-4k", "pl_known_cxx", NULL, 4096, 0));
	RUN("restore-partial-relro", test_restore("restore-partial-relro", "pl_known"));
	RUN("restore-full-relro", test_restore("restore-full-relro", "pl_known_now"));
	RUN("restore-noplt", test_restore("restore-noplt", "pl_known_noplt"));
	RUN("restore-nopie", test_restore("restore-nopie", "pl_known_nopie"));
	RUN("restore-cxx", test_restore("restore-cxx", "pl_known_cxx"));
	RUN("dlopen-later", test_dlopen_later("dlopen-later"));
	RUN("fork", test_fork("fork"));
	RUN("commands", test_commands("commands"));
	RUN("auth", test_auth("auth"));
	RUN("escape", test_escape("escape"));
	RUN("jemalloc", test_allocator("jemalloc", "libjemalloc.so.2"));
	RUN("tcmalloc", test_allocator("tcmalloc", "libtcmalloc.so.4"));
	RUN("mimalloc", test_allocator("mimalloc", "libmimalloc.so.2"));
	RUN("tcmalloc-linked", test_truth("tcmalloc-linked", "pl_known_tc", NULL, 1, 0));
	RUN("bias", test_bias("bias", 16384, 12));
	fprintf(stderr, "%d failures, %d skipped parts\n", failures, skips);
	return failures ? 1 : 0;
}
