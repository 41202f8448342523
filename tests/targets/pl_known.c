/* pl_known.c - a C target that allocates known sizes and counts at known sites through every C entry point (see pl_common.h). */
#include <malloc.h>

#include "pl_common.h"

#define SMALL_THREADS 4
#define SMALL_N 50000
#define SMALL_SZ 64
#define LARGE_N 40
#define LARGE_SZ (1 << 20)
#define MIXED_N 100000
#define CALLOC_N 5000
#define REALLOC_N 2000
#define FREED_N 10000
#define ALIGN_N 500
#define RARR_N 1000

PL_RANGE(small); PL_RANGE(large); PL_RANGE(mixed); PL_RANGE(calloc);
PL_RANGE(r1); PL_RANGE(r2); PL_RANGE(freed); PL_RANGE(align); PL_RANGE(rarr);

static void *small_p[SMALL_THREADS][SMALL_N];
static void *large_p[LARGE_N];
static void *mixed_p[MIXED_N];
static size_t mixed_sz[MIXED_N];
static void *calloc_p[CALLOC_N];
static void *realloc_p[REALLOC_N];
static void *align_p[5][ALIGN_N];
static void *rarr_p[RARR_N];
static void *volatile sink;
static int allocated;

PL_SITE(small) static void site_small(void **out, int n)
{
	for (int i = 0; i < n; i++) {
		out[i] = malloc(SMALL_SZ);
		pl_mark(out[i], SMALL_SZ, 1);
	}
}

static void *small_thread(void *arg)
{
	site_small((void **)arg, SMALL_N);
	return NULL;
}

PL_SITE(large) static void site_large(void)
{
	for (int i = 0; i < LARGE_N; i++) {
		large_p[i] = malloc(LARGE_SZ);
		pl_mark(large_p[i], LARGE_SZ, 2);
	}
}

/* One call instruction, mixed sizes: unbiasing must be per allocation. */
PL_SITE(mixed) static void site_mixed(void)
{
	for (int i = 0; i < MIXED_N; i++) {
		mixed_p[i] = malloc(mixed_sz[i]);
		pl_mark(mixed_p[i], mixed_sz[i], 3);
	}
}

PL_SITE(calloc) static void site_calloc(void)
{
	for (int i = 0; i < CALLOC_N; i++) {
		calloc_p[i] = calloc(10, 100);
		pl_mark(calloc_p[i], 1000, 4);
	}
}

PL_SITE(r1) static void site_r1(void)
{
	for (int i = 0; i < REALLOC_N; i++)
		realloc_p[i] = malloc(100);
}

/* realloc moves the bytes to this site: r1 ends with none live. */
PL_SITE(r2) static void site_r2(void)
{
	for (int i = 0; i < REALLOC_N; i++) {
		void *n = realloc(realloc_p[i], 3000);
		if (n)
			realloc_p[i] = n;
		pl_mark(realloc_p[i], 3000, 5);
	}
}

PL_SITE(freed) static void site_freed(void)
{
	static void *v[FREED_N];
	for (int i = 0; i < FREED_N; i++)
		v[i] = malloc(256);
	for (int i = 0; i < FREED_N; i++)
		free(v[i]);
}

static int have_valloc, have_pvalloc;

PL_SITE(align) static void site_align(void)
{
	for (int i = 0; i < ALIGN_N; i++) {
		if (posix_memalign(&align_p[0][i], 64, 200))
			align_p[0][i] = NULL;
		align_p[1][i] = aligned_alloc(64, 256);
		align_p[2][i] = memalign(128, 300);
		if (i < 100 && have_valloc)
			align_p[3][i] = valloc(5000);
		if (i < 100 && have_pvalloc)
			align_p[4][i] = pvalloc(6000);
	}
}

PL_SITE(rarr) static void site_rarr(void)
{
	for (int i = 0; i < RARR_N; i++) {
		rarr_p[i] = reallocarray(NULL, 10, 50);
		pl_mark(rarr_p[i], 500, 6);
	}
}

static void pl_alloc(void)
{
	pthread_t th[SMALL_THREADS];
	struct pl_site *s;

	if (allocated++)
		return;
	/* Threads created after the payload started, allocating at once. */
	for (int t = 0; t < SMALL_THREADS; t++)
		pthread_create(&th[t], NULL, small_thread, small_p[t]);
	site_large();
	for (int i = 0; i < MIXED_N; i++)
		mixed_sz[i] = i % 5000 == 0 ? 2 << 20 : i % 50 == 0 ? 4096 : 32;
	site_mixed();
	site_calloc();
	site_r1();
	site_r2();
	site_freed();
	have_valloc = pl_same_allocator("valloc");
	have_pvalloc = pl_same_allocator("pvalloc");
	site_align();
	site_rarr();
	for (int t = 0; t < SMALL_THREADS; t++)
		pthread_join(th[t], NULL);

	s = pl_site("small", __start_pl_site_small, __stop_pl_site_small);
	pl_truth(s, SMALL_SZ, SMALL_THREADS * SMALL_N, 1);
	s = pl_site("large", __start_pl_site_large, __stop_pl_site_large);
	pl_truth(s, LARGE_SZ, LARGE_N, 1);
	s = pl_site("mixed", __start_pl_site_mixed, __stop_pl_site_mixed);
	for (int i = 0; i < MIXED_N; i++)
		pl_truth(s, mixed_sz[i], 1, 1);
	s = pl_site("calloc", __start_pl_site_calloc, __stop_pl_site_calloc);
	pl_truth(s, 1000, CALLOC_N, 1);
	s = pl_site("r1", __start_pl_site_r1, __stop_pl_site_r1);
	pl_truth(s, 100, REALLOC_N, 0);
	s = pl_site("r2", __start_pl_site_r2, __stop_pl_site_r2);
	pl_truth(s, 3000, REALLOC_N, 1);
	s = pl_site("freed", __start_pl_site_freed, __stop_pl_site_freed);
	pl_truth(s, 256, FREED_N, 0);
	s = pl_site("align", __start_pl_site_align, __stop_pl_site_align);
	pl_truth(s, 200, ALIGN_N, 1);
	pl_truth(s, 256, ALIGN_N, 1);
	pl_truth(s, 300, ALIGN_N, 1);
	if (have_valloc)
		pl_truth(s, 5000, 100, 1);
	if (have_pvalloc)
		pl_truth(s, 6000, 100, 1);
	s = pl_site("rarr", __start_pl_site_rarr, __stop_pl_site_rarr);
	pl_truth(s, 500, RARR_N, 1);
}

static void pl_verify_and_free(void)
{
	if (!allocated)
		return;
	allocated = 0;
	for (int t = 0; t < SMALL_THREADS; t++)
		for (int i = 0; i < SMALL_N; i++) {
			pl_check(small_p[t][i], SMALL_SZ, 1);
			free(small_p[t][i]);
		}
	for (int i = 0; i < LARGE_N; i++) {
		pl_check(large_p[i], LARGE_SZ, 2);
		free(large_p[i]);
	}
	for (int i = 0; i < MIXED_N; i++) {
		pl_check(mixed_p[i], mixed_sz[i], 3);
		free(mixed_p[i]);
	}
	for (int i = 0; i < CALLOC_N; i++) {
		pl_check(calloc_p[i], 1000, 4);
		free(calloc_p[i]);
	}
	for (int i = 0; i < REALLOC_N; i++) {
		pl_check(realloc_p[i], 3000, 5);
		free(realloc_p[i]);
	}
	for (int k = 0; k < 5; k++)
		for (int i = 0; i < ALIGN_N; i++)
			free(align_p[k][i]);
	for (int i = 0; i < RARR_N; i++) {
		pl_check(rarr_p[i], 500, 6);
		free(rarr_p[i]);
	}
}

/* A library loaded after the payload started: its GOT gets patched then. */
static void pl_dlopen(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("dlopen-failed %s\n", dlerror());
		return;
	}
	void (*fn)(int, void **) = (void (*)(int, void **))dlsym(h, "pl_dyn_alloc");
	void (*range)(const void **, const void **) =
		(void (*)(const void **, const void **))dlsym(h, "pl_dyn_range");
	if (!fn || !range) {
		printf("dlopen-failed no symbols\n");
		return;
	}
	static void *dyn_p[3000];
	const void *lo, *hi;
	fn(3000, dyn_p);
	range(&lo, &hi);
	pl_truth(pl_site("dyn", lo, hi), 700, 3000, 1);
	sink = dyn_p;
}

int main(int argc, char **argv)
{
	return pl_main(argc, argv);
}
