/* rep_sites.c - allocates known amounts at known call sites (plain, recursive, inlined, realloc/calloc, C++-free), then has gperftools or jemalloc dump a heap profile, for the report tests.
 *
 * Usage: rep_sites gperf [STEP]        (LD_PRELOAD=libtcmalloc.so.4 HEAPPROFILE=PREFIX:
 *                                       dumps PREFIX.0001.heap, STEP 2 also
 *                                       PREFIX.0002.heap after more growth)
 *        rep_sites jemalloc FILE [FILE2] (LD_PRELOAD=libjemalloc.so.2,
 *                                       MALLOC_CONF=prof:true,lg_prof_sample:0)
 *
 * Prints `expect <function> <inuse bytes>` per live site (flat, after the
 * allocator frames are dropped; inl_helper is inlined into inl_caller) for the first dump, `grow <function>
 * <bytes>` for what the second dump adds, then `done`.  Exits 0 only when
 * every dump call succeeded and its heap is intact.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NA 64
#define SA 8192         /* leaf_alloc: 512 KiB */
#define NB 6
#define SB (256 << 10)  /* big_alloc: 1.5 MiB */
#define DEPTH 5
#define SR 4096         /* recurse: 5 x 4 KiB, each level allocates */
#define NI 100
#define SI 1024         /* inlined helper inside inl_caller: 100 KiB */
#define NC 40
#define SC 512          /* calloc_site: 20 KiB */
#define SG1 (64 << 10)
#define SG2 (640 << 10) /* grow_site: realloc 64 KiB -> 640 KiB */
#define NX 8
#define SX (128 << 10)  /* step 2 only: later_site 1 MiB */

static void *keep[1024];
static int nkeep;
static void *volatile sink;

static void hold(void *p, size_t n, int c)
{
	memset(p, c, n);
	keep[nkeep++] = p;
}

__attribute__((noinline)) void leaf_alloc(void)
{
	for (int i = 0; i < NA; i++)
		hold(malloc(SA), SA, 'a');
}

__attribute__((noinline)) void big_alloc(void)
{
	for (int i = 0; i < NB; i++)
		hold(malloc(SB), SB, 'b');
}

/* Each level allocates, so recurse's flat is DEPTH * SR and its cum counts
 * every stack once even though recurse appears up to DEPTH times in it. */
__attribute__((noinline)) void recurse(int depth)
{
	hold(malloc(SR), SR, 'r');
	if (depth > 1)
		recurse(depth - 1);
	sink = keep[0];
}

static inline __attribute__((always_inline)) void *inl_helper(size_t n)
{
	void *p = malloc(n);
	sink = p;
	return p;
}

__attribute__((noinline)) void inl_caller(void)
{
	for (int i = 0; i < NI; i++)
		hold(inl_helper(SI), SI, 'i');
}

__attribute__((noinline)) void calloc_site(void)
{
	for (int i = 0; i < NC; i++) {
		void *p = calloc(1, SC);
		keep[nkeep++] = p;
	}
}

__attribute__((noinline)) void grow_site(void)
{
	void *p = malloc(SG1);
	memset(p, 'g', SG1);
	p = realloc(p, SG2);
	hold(p, SG2, 'g');
}

__attribute__((noinline)) void later_site(void)
{
	for (int i = 0; i < NX; i++)
		hold(malloc(SX), SX, 'x');
}

static int heap_ok(void)
{
	for (int i = 0; i < nkeep; i++)
		if (!keep[i])
			return 0;
	return 1;
}

static int dump(const char *mode, const char *file)
{
	if (!strcmp(mode, "gperf")) {
		void (*d)(const char *) = (void (*)(const char *))dlsym(RTLD_DEFAULT, "HeapProfilerDump");
		int (*running)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "IsHeapProfilerRunning");
		if (!d || !running || !running()) {
			fprintf(stderr, "rep_sites: no running gperftools heap profiler "
				"(LD_PRELOAD=libtcmalloc.so.4 HEAPPROFILE=...)\n");
			return -1;
		}
		d("rep_sites");
		return 0;
	}
	int (*mallctl)(const char *, void *, size_t *, void *, size_t) =
		(int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "mallctl");
	if (!mallctl) {
		fprintf(stderr, "rep_sites: no mallctl (LD_PRELOAD=libjemalloc.so.2)\n");
		return -1;
	}
	int rc = mallctl("prof.dump", NULL, NULL, &file, sizeof(file));
	if (rc) {
		fprintf(stderr, "rep_sites: prof.dump: %s\n", strerror(rc));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int jem = !strcmp(mode, "jemalloc");
	if ((!jem && strcmp(mode, "gperf")) || (jem && argc < 3)) {
		fprintf(stderr, "usage: rep_sites gperf [2] | jemalloc FILE [FILE2]\n");
		return 64;
	}
	int two = jem ? argc > 3 : (argc > 2 && !strcmp(argv[2], "2"));

	leaf_alloc();
	big_alloc();
	recurse(DEPTH);
	inl_caller();
	calloc_site();
	grow_site();
	printf("expect leaf_alloc %d\n", NA * SA);
	printf("expect big_alloc %d\n", NB * SB);
	printf("expect recurse %d\n", DEPTH * SR);
	printf("expect inl_helper %d\n", NI * SI);
	printf("expect calloc_site %d\n", NC * SC);
	printf("expect grow_site %d\n", SG2);
	fflush(stdout);
	int rc = dump(mode, jem ? argv[2] : NULL);
	if (!rc && two) {
		later_site();
		big_alloc();
		printf("grow later_site %d\n", NX * SX);
		printf("grow big_alloc %d\n", NB * SB);
		fflush(stdout);
		rc = dump(mode, jem ? argv[3] : NULL);
	}
	if (!rc && !heap_ok()) {
		fprintf(stderr, "rep_sites: heap corrupted\n");
		rc = -1;
	}
	printf("done\n");
	return rc ? 1 : 0;
}
