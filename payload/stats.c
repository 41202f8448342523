/* stats.c - the allocator's own figures (glibc, jemalloc, tcmalloc, mimalloc) and trimming, asked through hsp_alloc_stats. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include "hsp.h"

/*
 * The figures go into one static buffer as text lines "key value"; the
 * caller (the injector's worker, on behalf of heapsnap) gets its address
 * and reads it out of the process.  Every allocator function is resolved
 * with dlsym(RTLD_DEFAULT): the payload links against none of them, and a
 * process has at most the ones it loaded itself.
 */

static char sbuf[HSP_STATS_MAX];
static size_t slen;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;

static void put(const char *fmt, ...)
{
	va_list ap;
	size_t room = sizeof(sbuf) - sizeof(struct hsp_stats_hdr) - slen;
	char *at = sbuf + sizeof(struct hsp_stats_hdr) + slen;

	va_start(ap, fmt);
	int n = vsnprintf(at, room, fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < room)
		slen += (size_t)n;
}

/* Every entry point: our own allocations (malloc_info's stream, the
 * profilers' buffers) are never sampled; one caller at a time. */
static uint32_t stats_begin(void)
{
	uint32_t guard = hsp_tls.guard;

	hsp_tls.guard = 1;
	pthread_mutex_lock(&stats_lock);
	slen = 0;
	return guard;
}

/* On success (ret 0) seals the buffer and returns its address. */
static long stats_end(long ret, uint32_t guard)
{
	if (!ret) {
		struct hsp_stats_hdr h = { HSP_STATS_MAGIC, (uint32_t)slen };
		memcpy(sbuf, &h, sizeof(h));
		ret = (long)(uintptr_t)sbuf;
	}
	pthread_mutex_unlock(&stats_lock);
	hsp_tls.guard = guard;
	return ret;
}

static void *sym(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

/* The process's own free(), for memory its allocator handed out (the
 * payload never imports the allocator it hooks). */
static void proc_free(void *p)
{
	void (*fr)(void *) = (void (*)(void *))sym("free");
	if (fr && p)
		fr(p);
}

/* Which module's malloc does the process call? */
static const char *malloc_module(void)
{
	Dl_info di;
	void *m = sym("malloc");

	if (!m || !dladdr(m, &di) || !di.dli_fname)
		return "";
	return di.dli_fname;
}

/* ---- glibc ------------------------------------------------------------- */

/* Value of attribute `attr` in the first element `tag` at or after p. */
static unsigned long long xml_attr(const char *p, const char *tag, const char *attr, const char **next)
{
	const char *t = strstr(p, tag);
	if (!t)
		return 0;
	const char *end = strchr(t, '>');
	const char *a = strstr(t, attr);
	if (next)
		*next = end ? end : t + strlen(tag);
	if (!a || (end && a > end))
		return 0;
	return strtoull(a + strlen(attr), NULL, 10);
}

static void glibc_stats(void)
{
	struct mallinfo2 (*mi2)(void) = (struct mallinfo2 (*)(void))sym("mallinfo2");
	int (*info)(int, FILE *) = (int (*)(int, FILE *))sym("malloc_info");

	if (mi2) {
		struct mallinfo2 m = mi2();
		put("glibc.arena %zu\n", m.arena);
		put("glibc.ordblks %zu\n", m.ordblks);
		put("glibc.smblks %zu\n", m.smblks);
		put("glibc.hblks %zu\n", m.hblks);
		put("glibc.hblkhd %zu\n", m.hblkhd);
		put("glibc.fsmblks %zu\n", m.fsmblks);
		put("glibc.uordblks %zu\n", m.uordblks);
		put("glibc.fordblks %zu\n", m.fordblks);
		put("glibc.keepcost %zu\n", m.keepcost);
	}
	if (!info)
		return;
	/* malloc_info's XML: one <heap> per arena, then the process totals. */
	char *xml = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&xml, &len);
	if (!f)
		return;
	int r = info(0, f);
	fclose(f);
	if (r == 0 && xml) {
		unsigned long long heaps = 0;
		const char *p = xml, *last = NULL;
		while ((p = strstr(p, "<heap nr="))) {
			heaps++;
			p++;
		}
		for (p = xml; (p = strstr(p, "</heap>")); p++)
			last = p;
		put("glibc.arenas %llu\n", heaps);
		if (last) {
			const char *q = last;
			put("glibc.free_fast_chunks %llu\n", xml_attr(q, "<total type=\"fast\"", "count=\"", NULL));
			put("glibc.free_fast_bytes %llu\n", xml_attr(q, "<total type=\"fast\"", "size=\"", NULL));
			put("glibc.free_rest_chunks %llu\n", xml_attr(q, "<total type=\"rest\"", "count=\"", NULL));
			put("glibc.free_rest_bytes %llu\n", xml_attr(q, "<total type=\"rest\"", "size=\"", NULL));
			put("glibc.mmap_chunks %llu\n", xml_attr(q, "<total type=\"mmap\"", "count=\"", NULL));
			put("glibc.mmap_bytes %llu\n", xml_attr(q, "<total type=\"mmap\"", "size=\"", NULL));
			put("glibc.system_current %llu\n", xml_attr(q, "<system type=\"current\"", "size=\"", NULL));
			put("glibc.system_max %llu\n", xml_attr(q, "<system type=\"max\"", "size=\"", NULL));
			put("glibc.aspace_total %llu\n", xml_attr(q, "<aspace type=\"total\"", "size=\"", NULL));
		}
	}
	proc_free(xml);
}

/* ---- jemalloc ---------------------------------------------------------- */

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);

static mallctl_fn je_ctl(void)
{
	mallctl_fn f = (mallctl_fn)sym("mallctl");
	return f ? f : (mallctl_fn)sym("je_mallctl");
}

static void je_size(mallctl_fn ctl, const char *name)
{
	size_t v = 0, sz = sizeof(v);
	if (ctl(name, &v, &sz, NULL, 0) == 0 && sz == sizeof(v))
		put("jemalloc.%s %zu\n", name, v);
}

static void je_bool(mallctl_fn ctl, const char *name)
{
	bool v = false;
	size_t sz = sizeof(v);
	if (ctl(name, &v, &sz, NULL, 0) == 0)
		put("jemalloc.%s %d\n", name, (int)v);
}

static void je_stats(mallctl_fn ctl)
{
	uint64_t epoch = 1;
	size_t sz = sizeof(epoch);
	unsigned narenas = 0;
	const char *ver = NULL;

	/* The stats.* figures are cached until the epoch advances. */
	ctl("epoch", &epoch, &sz, &epoch, sz);
	sz = sizeof(ver);
	if (ctl("version", &ver, &sz, NULL, 0) == 0 && ver)
		put("jemalloc.version %s\n", ver);
	je_size(ctl, "stats.allocated");
	je_size(ctl, "stats.active");
	je_size(ctl, "stats.metadata");
	je_size(ctl, "stats.resident");
	je_size(ctl, "stats.mapped");
	je_size(ctl, "stats.retained");
	sz = sizeof(narenas);
	if (ctl("arenas.narenas", &narenas, &sz, NULL, 0) == 0)
		put("jemalloc.arenas.narenas %u\n", narenas);
	je_bool(ctl, "config.prof");
	je_bool(ctl, "opt.prof");
	je_bool(ctl, "prof.active");
	je_size(ctl, "opt.lg_prof_sample");
}

/* ---- tcmalloc (gperftools) ----------------------------------------------- */

static const char *const tc_props[] = {
	"generic.current_allocated_bytes", "generic.heap_size", "generic.total_physical_bytes",
	"tcmalloc.pageheap_free_bytes", "tcmalloc.pageheap_unmapped_bytes",
	"tcmalloc.central_cache_free_bytes", "tcmalloc.transfer_cache_free_bytes",
	"tcmalloc.thread_cache_free_bytes", "tcmalloc.current_total_thread_cache_bytes",
};

static void tc_stats(int (*get)(const char *, size_t *))
{
	for (size_t i = 0; i < sizeof(tc_props) / sizeof(tc_props[0]); i++) {
		size_t v = 0;
		if (get(tc_props[i], &v))
			put("tcmalloc.%s %zu\n", tc_props[i], v);
	}
}

/* ---- mimalloc ------------------------------------------------------------ */

typedef void (*mi_info_fn)(size_t *, size_t *, size_t *, size_t *, size_t *, size_t *, size_t *,
			   size_t *);

static void mi_stats(mi_info_fn f)
{
	size_t el = 0, ut = 0, st = 0, rss = 0, prss = 0, commit = 0, pcommit = 0, pf = 0;
	f(&el, &ut, &st, &rss, &prss, &commit, &pcommit, &pf);
	put("mimalloc.current_rss %zu\n", rss);
	put("mimalloc.peak_rss %zu\n", prss);
	put("mimalloc.current_commit %zu\n", commit);
	put("mimalloc.peak_commit %zu\n", pcommit);
}

/* ---- entry point ---------------------------------------------------------- */

static void trim(const char *mod, mallctl_fn ctl, void (*tc_release)(void))
{
	if (ctl) {
		/* MALLCTL_ARENAS_ALL */
		put("trim.jemalloc %d\n", ctl("arena.4096.purge", NULL, NULL, NULL, 0));
	}
	if (tc_release) {
		tc_release();
		put("trim.tcmalloc 0\n");
	}
	void (*mi_collect)(bool) = (void (*)(bool))sym("mi_collect");
	if (mi_collect) {
		mi_collect(true);
		put("trim.mimalloc 0\n");
	}
	/* glibc's own malloc only when it is the one in use: in a process
	 * with another allocator its arena holds next to nothing. */
	int (*mtrim)(size_t) = (int (*)(size_t))sym("malloc_trim");
	if (mtrim && strstr(mod, "libc.so"))
		put("trim.glibc %d\n", mtrim(0));
}

HSP_EXPORT long hsp_alloc_stats(long op)
{

	if (op != HSP_STATS_GET && op != HSP_STATS_TRIM)
		return -EINVAL;
	uint32_t guard = stats_begin();
	const char *mod = malloc_module();
	mallctl_fn ctl = je_ctl();
	int (*tc_get)(const char *, size_t *) =
		(int (*)(const char *, size_t *))sym("MallocExtension_GetNumericProperty");
	void (*tc_release)(void) = (void (*)(void))sym("MallocExtension_ReleaseFreeMemory");
	mi_info_fn mi = (mi_info_fn)sym("mi_process_info");

	put("malloc.module %s\n", mod);
	if (op == HSP_STATS_TRIM)
		trim(mod, ctl, tc_release);
	if (strstr(mod, "libc.so"))
		glibc_stats();
	if (ctl)
		je_stats(ctl);
	if (tc_get)
		tc_stats(tc_get);
	if (mi)
		mi_stats(mi);
	int (*hp_running)(void) = (int (*)(void))sym("IsHeapProfilerRunning");
	if (hp_running)
		put("gperftools.heap_profiler_running %d\n", hp_running());
	return stats_end(0, guard);
}

/*
 * The jemalloc backend: jemalloc's own profiler, driven through mallctl.
 * It exists only when the process started with opt.prof true (jemalloc
 * cannot turn it on later); prof.active switches it, prof.dump writes a
 * heap_v2 profile.  The dump goes into a fresh mkdtemp directory (mode
 * 0700, owned by the process's user) that heapsnap reads and removes.
 */
HSP_EXPORT long hsp_jemalloc(long op, long arg)
{
	mallctl_fn ctl = je_ctl();
	long ret = 0;

	if (!ctl)
		return -ENOENT;
	uint32_t guard = stats_begin();
	switch (op) {
	case HSP_JE_ACTIVATE:
	case HSP_JE_DEACTIVATE: {
		bool on = op == HSP_JE_ACTIVATE;
		if (on && arg > 0) {
			size_t lg = (size_t)arg - 1;
			if (ctl("prof.reset", NULL, NULL, &lg, sizeof(lg)) != 0)
				put("jemalloc.reset_failed 1\n");
		}
		int r = ctl("prof.active", NULL, NULL, &on, sizeof(on));
		if (r)
			ret = -r;
		break;
	}
	case HSP_JE_DUMP: {
		char dir[] = "/tmp/heapsnap-je.XXXXXX";
		static char path[64];
		if (!mkdtemp(dir)) {
			ret = -errno;
			break;
		}
		snprintf(path, sizeof(path), "%s/heap", dir);
		const char *pp = path;
		int r = ctl("prof.dump", NULL, NULL, &pp, sizeof(pp));
		if (r) {
			rmdir(dir);
			ret = -r;
			break;
		}
		put("jemalloc.dump %s\n", path);
		break;
	}
	default:
		ret = -EINVAL;
	}
	if (!ret)
		je_stats(ctl);
	return stats_end(ret, guard);
}

static int range_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t *r = arg;

	(void)size;
	if (info->dlpi_addr != r[0])
		return 0;
	r[1] = UINTPTR_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		r[1] = a < r[1] ? a : r[1];
		r[2] = a + ph->p_memsz > r[2] ? a + ph->p_memsz : r[2];
	}
	return 1;
}

/* "payload.range LO HI": allocations with a frame in there are heapsnap's
 * own (the profile string GetHeapProfile returns), for the client to drop. */
static void put_self_range(void)
{
	Dl_info di;
	uintptr_t r[3] = { 0, 0, 0 };

	if (!dladdr((void *)hsp_gperf, &di))
		return;
	r[0] = (uintptr_t)di.dli_fbase;
	if (dl_iterate_phdr(range_cb, r) && r[2] > r[1])
		put("payload.range %lu %lu\n", (unsigned long)r[1], (unsigned long)r[2]);
}

/*
 * The gperftools backend: tcmalloc's heap profiler, started at runtime
 * when it is not running (into /tmp/heapsnap-gp.<pid>.XXXXXX, so that a
 * later `heapsnap stop` knows it was heapsnap's to stop), dumped with
 * GetHeapProfile() into a private file heapsnap reads and removes.
 */
HSP_EXPORT long hsp_gperf(long op, long arg)
{
	void (*start)(const char *) = (void (*)(const char *))sym("HeapProfilerStart");
	void (*stop)(void) = (void (*)(void))sym("HeapProfilerStop");
	int (*running)(void) = (int (*)(void))sym("IsHeapProfilerRunning");
	char *(*get)(void) = (char *(*)(void))sym("GetHeapProfile");
	long ret = 0;

	(void)arg;
	if (!start || !stop || !running || !get)
		return -ENOENT;
	uint32_t guard = stats_begin();
	switch (op) {
	case HSP_GP_INFO:
		break;
	case HSP_GP_START: {
		char dir[64], prefix[80];
		if (running())
			break;
		snprintf(dir, sizeof(dir), "/tmp/heapsnap-gp.%d.XXXXXX", (int)getpid());
		if (!mkdtemp(dir)) {
			ret = -errno;
			break;
		}
		snprintf(prefix, sizeof(prefix), "%s/heap", dir);
		start(prefix);
		put("gperf.started %s\n", dir);
		break;
	}
	case HSP_GP_STOP:
		if (running())
			stop();
		break;
	case HSP_GP_DUMP: {
		char dir[] = "/tmp/heapsnap-gp.XXXXXX";
		static char path[64];
		if (!running()) {
			ret = -ESRCH;
			break;
		}
		char *text = get();
		if (!text) {
			ret = -ENOMEM;
			break;
		}
		if (!mkdtemp(dir)) {
			ret = -errno;
			proc_free(text);
			break;
		}
		snprintf(path, sizeof(path), "%s/heap", dir);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		size_t len = strlen(text), off = 0;
		while (fd >= 0 && off < len) {
			ssize_t n = write(fd, text + off, len - off);
			if (n <= 0) {
				ret = -EIO;
				break;
			}
			off += (size_t)n;
		}
		if (fd < 0)
			ret = -errno;
		else
			close(fd);
		/* The process's own free: GetHeapProfile malloc'd it. */
		proc_free(text);
		if (ret) {
			unlink(path);
			rmdir(dir);
			break;
		}
		put("gperf.dump %s\n", path);
		put_self_range();
		break;
	}
	default:
		ret = -EINVAL;
	}
	if (!ret)
		put("gperf.running %d\n", running());
	return stats_end(ret, guard);
}
