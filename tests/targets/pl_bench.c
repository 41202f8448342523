/* pl_bench.c - measures the payload's costs: hook fast path, stack-capture candidates, sampled path, 2-thread throughput. */
/*
 * Not run by `make check` (timings are not assertions).  Usage:
 *   pl_bench unwind                 stack capture ns per candidate, at depth 20
 *   pl_bench pair RATE [UNWINDER]   CPU ns per malloc(64)+free pair at call
 *                                   depth 20, one thread (RATE 0: payload
 *                                   not loaded; UNWINDER: enum hsp_unwinder)
 *   pl_bench mt RATE                2 threads, mixed sizes: CPU ns per op
 * The payload comes from $HEAPSNAP_PAYLOAD, loaded from a thread of our own
 * and started with hsp_start(RATE, UNWINDER), as the injector would.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unwind.h>

/* CPU time, not wall time: the figures stay meaningful on a loaded box. */
static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_all(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long load_rate, load_flags, load_rc = -1;

static void *loader(void *arg)
{
	void *h = dlopen(getenv("HEAPSNAP_PAYLOAD"), RTLD_NOW | RTLD_LOCAL);
	long (*start)(long, long) = h ? (long (*)(long, long))dlsym(h, "hsp_start") : NULL;
	load_rc = start ? start(load_rate, load_flags) : -1;
	return NULL;
}

static void load(long rate, long flags)
{
	pthread_t t;
	load_rate = rate;
	load_flags = flags;
	pthread_create(&t, NULL, loader, NULL);
	pthread_join(t, NULL);
	if (load_rc) {
		fprintf(stderr, "pl_bench: hsp_start failed: %ld\n", load_rc);
		exit(1);
	}
}

/* ---- stack capture candidates ------------------------------------------ */

/* The shared libgcc_s unwinder (the one glibc's backtrace() and the
 * payload use), not the static copy gcc links into executables. */
static _Unwind_Reason_Code (*gcc_backtrace)(_Unwind_Trace_Fn, void *);
static uintptr_t (*gcc_getip)(struct _Unwind_Context *);

struct ubt {
	void **pcs;
	int n, max;
};

static _Unwind_Reason_Code ubt_cb(struct _Unwind_Context *ctx, void *arg)
{
	struct ubt *u = arg;
	if (u->n >= u->max)
		return _URC_END_OF_STACK;
	u->pcs[u->n++] = (void *)gcc_getip(ctx);
	return _URC_NO_REASON;
}


static int cap_gcc(void **pcs, int max)
{
	struct ubt u = { pcs, 0, max };
	gcc_backtrace(ubt_cb, &u);
	return u.n;
}

__attribute__((noinline)) static int cap_fp(void **pcs, int max)
{
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0), lo = fp, hi = lo + (1 << 20);
	int n = 0;
	while (n < max && fp >= lo && fp + 16 <= hi && !(fp & 7)) {
		uintptr_t next = ((uintptr_t *)fp)[0], ra = ((uintptr_t *)fp)[1];
		if (!ra)
			break;
		pcs[n++] = (void *)ra;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

/* libunwind's local unw_backtrace, dlopened: linking it would hand glibc's
 * backtrace() libunwind's _Unwind_* instead of libgcc's. */
static int (*lu_backtrace)(void **, int);

static int which;
static volatile int sink;

__attribute__((noinline)) static int capture(void)
{
	void *pcs[64];
	switch (which) {
	case 0: return backtrace(pcs, 64);
	case 1: return cap_gcc(pcs, 64);
	case 2: return lu_backtrace ? lu_backtrace(pcs, 64) : 0;
	default: return cap_fp(pcs, 64);
	}
}

__attribute__((noinline)) static int deep(int d)
{
	if (d == 0)
		return capture();
	int r = deep(d - 1);
	sink = r;
	return r + 0 * sink;
}

static void bench_unwind(void)
{
	static const char *const names[] = {
		"glibc backtrace()", "libgcc _Unwind_Backtrace", "libunwind unw_backtrace",
		"frame pointers"
	};
	void *warm[4];
	backtrace(warm, 4);
	void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);
	gcc_backtrace = h ? (_Unwind_Reason_Code (*)(_Unwind_Trace_Fn, void *))dlsym(h, "_Unwind_Backtrace") : NULL;
	gcc_getip = h ? (uintptr_t (*)(struct _Unwind_Context *))dlsym(h, "_Unwind_GetIP") : NULL;
	if (!gcc_backtrace || !gcc_getip) {
		fprintf(stderr, "pl_bench: libgcc_s unwinder not found\n");
		exit(1);
	}
	void *lu = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	lu_backtrace = lu ? (int (*)(void **, int))dlsym(lu, "unw_backtrace") : NULL;
	for (which = 0; which < 4; which++) {
		if (which == 2 && !lu_backtrace) {
			printf("%-26s not available\n", names[which]);
			continue;
		}
		int depth = deep(20);
		double t0 = now();
		const int n = which == 3 ? 2000000 : 100000;
		for (int i = 0; i < n; i++)
			deep(20);
		double dt = now() - t0;
		printf("%-26s %6.0f ns per capture, %d frames (%.0f ns/frame)\n", names[which],
		       dt / n * 1e9, depth, dt / n * 1e9 / depth);
	}
}

/* ---- allocation loops ---------------------------------------------------- */

static void *volatile keep;

__attribute__((noinline)) static double pairs(long n, int depth)
{
	if (depth > 0)
		return pairs(n, depth - 1) + 0 * sink;
	double t0 = now();
	for (long i = 0; i < n; i++) {
		void *p = malloc(64);
		keep = p;
		free(p);
	}
	return (now() - t0) / n * 1e9;
}

static void *mt_thread(void *arg)
{
	uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
	void *slots[256] = { 0 };
	for (long i = 0; i < 4000000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		int k = (int)(x & 255);
		free(slots[k]);
		slots[k] = malloc(16 + (x >> 8) % 4096);
	}
	for (int k = 0; k < 256; k++)
		free(slots[k]);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: pl_bench unwind | pair RATE [UNWINDER] | mt RATE\n");
		return 64;
	}
	if (!strcmp(argv[1], "unwind")) {
		bench_unwind();
		return 0;
	}
	long rate = argc > 2 ? atol(argv[2]) : 0;
	long flags = argc > 3 ? atol(argv[3]) : 0;
	/* Unwinder 4 (libunwind) is used only when the process has it. */
	if (flags == 4 && !dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL))
		fprintf(stderr, "pl_bench: no libunwind.so.8\n");
	if (rate)
		load(rate, flags);
	if (!strcmp(argv[1], "pair")) {
		long n = rate == 1 ? 200000 : 20000000;
		pairs(n / 10, 20); /* warm up */
		printf("rate %ld unwinder %ld: %.1f ns per malloc+free pair\n", rate, flags, pairs(n, 20));
	} else if (!strcmp(argv[1], "mt")) {
		pthread_t t[2];
		double t0 = cpu_all();
		for (long i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, mt_thread, (void *)(i + 1));
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		printf("rate %ld: %.1f ns CPU per malloc+free (2 threads, mixed sizes)\n", rate,
		       (cpu_all() - t0) / (2 * 4000000) * 1e9);
	}
	return 0;
}
