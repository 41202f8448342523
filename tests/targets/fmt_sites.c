/* fmt_sites.c - allocates known amounts at known call sites, then has the
 * allocator's own profiler (jemalloc prof.dump, gperftools HeapProfilerDump)
 * write a heap profile, for the format readers' real-tool tests.
 *
 * Usage: fmt_sites jemalloc FILE   (run with LD_PRELOAD=libjemalloc.so.2 and
 *                                   MALLOC_CONF=prof:true,lg_prof_sample:0)
 *        fmt_sites gperf           (run with LD_PRELOAD=libtcmalloc.so.4 and
 *                                   HEAPPROFILE=PREFIX: dumps PREFIX.0001.heap)
 *        fmt_sites exit            (allocate, print, exit: for prof_final)
 *
 * Prints `expect <function> <inuse bytes> <inuse objects>` for every live
 * site, `expect-alloc <function> <alloc bytes> <alloc objects>` for every
 * site (live or freed), `live <function> <count> <size>` (ground truth for
 * sampled dumps), then `done`.  Exits 0 only when the dump call succeeded
 * and its own heap is intact.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NA 100
#define SA 4096
#define NB 40
#define SB (256 << 10)
#define NC 4000
#define SC 64
#define ND 50
#define SD 8192

/* Kept live in globals, so the compiler cannot drop the allocations and no
 * call to malloc is a tail call (each site keeps its own frame). */
static void *keep_a[NA], *keep_b[NB], *keep_c[NC];
static void *volatile sink;

__attribute__((noinline)) static void site_a(void)
{
	for (int i = 0; i < NA; i++) {
		keep_a[i] = malloc(SA);
		memset(keep_a[i], 'a', SA);
	}
}

__attribute__((noinline)) static void site_b(void)
{
	for (int i = 0; i < NB; i++) {
		keep_b[i] = malloc(SB);
		memset(keep_b[i], 'b', 4096);
	}
}

__attribute__((noinline)) static void site_c(void)
{
	for (int i = 0; i < NC; i++) {
		keep_c[i] = malloc(SC);
		memset(keep_c[i], 'c', SC);
	}
}

/* Allocated and freed: shows up only in the alloc_ columns. */
__attribute__((noinline)) static void site_d(void)
{
	for (int i = 0; i < ND; i++) {
		void *p = malloc(SD);
		sink = p;
		memset(p, 'd', SD);
		free(p);
	}
}

static int check_heap(void)
{
	for (int i = 0; i < NA; i++)
		if (((char *)keep_a[i])[SA - 1] != 'a')
			return -1;
	for (int i = 0; i < NB; i++)
		if (((char *)keep_b[i])[0] != 'b')
			return -1;
	for (int i = 0; i < NC; i++)
		if (((char *)keep_c[i])[SC - 1] != 'c')
			return -1;
	return 0;
}

static int dump_jemalloc(const char *file)
{
	int (*mallctl)(const char *, void *, size_t *, void *, size_t);

	mallctl = (int (*)(const char *, void *, size_t *, void *, size_t))
		dlsym(RTLD_DEFAULT, "mallctl");
	if (!mallctl) {
		fprintf(stderr, "fmt_sites: no mallctl: run with LD_PRELOAD=libjemalloc.so.2\n");
		return -1;
	}
	int rc = mallctl("prof.dump", NULL, NULL, &file, sizeof(file));
	if (rc) {
		fprintf(stderr, "fmt_sites: mallctl(prof.dump): %s\n", strerror(rc));
		return -1;
	}
	return 0;
}

static int dump_gperf(void)
{
	void (*dump)(const char *);
	int (*running)(void);

	dump = (void (*)(const char *))dlsym(RTLD_DEFAULT, "HeapProfilerDump");
	running = (int (*)(void))dlsym(RTLD_DEFAULT, "IsHeapProfilerRunning");
	if (!dump || !running) {
		fprintf(stderr, "fmt_sites: no HeapProfilerDump: run with LD_PRELOAD=libtcmalloc.so.4\n");
		return -1;
	}
	if (!running()) {
		fprintf(stderr, "fmt_sites: heap profiler not running: set HEAPPROFILE\n");
		return -1;
	}
	dump("fmt_sites");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "jemalloc") == 0 && argc < 3)) {
		fprintf(stderr, "usage: fmt_sites jemalloc FILE | gperf | exit\n");
		return 64;
	}
	site_a();
	site_b();
	site_c();
	site_d();

	printf("expect site_a %d %d\n", NA * SA, NA);
	printf("expect site_b %d %d\n", NB * SB, NB);
	printf("expect site_c %d %d\n", NC * SC, NC);
	printf("expect-alloc site_a %d %d\n", NA * SA, NA);
	printf("expect-alloc site_b %d %d\n", NB * SB, NB);
	printf("expect-alloc site_c %d %d\n", NC * SC, NC);
	printf("expect-alloc site_d %d %d\n", ND * SD, ND);
	/* Ground truth for sampled dumps: every site has one object size. */
	printf("live site_a %d %d\n", NA, SA);
	printf("live site_b %d %d\n", NB, SB);
	printf("live site_c %d %d\n", NC, SC);
	fflush(stdout);

	int rc = 0;
	if (strcmp(argv[1], "jemalloc") == 0)
		rc = dump_jemalloc(argv[2]);
	else if (strcmp(argv[1], "gperf") == 0)
		rc = dump_gperf();
	else if (strcmp(argv[1], "exit") != 0) {
		fprintf(stderr, "fmt_sites: unknown mode '%s'\n", argv[1]);
		return 64;
	}
	if (rc == 0 && check_heap() != 0) {
		fprintf(stderr, "fmt_sites: heap corrupted\n");
		rc = -1;
	}
	printf("done\n");
	return rc ? 1 : 0;
}
