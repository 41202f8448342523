/* heap.c - bench workload with a heap it knows: bulk live objects and eight known sites, driven by stdin. */
/*
 * Commands on stdin, one per line, each answered by one JSON line:
 *   alloc N SIZE   allocate N objects of SIZE bytes (touched) and keep them
 *   sites SCALE    allocate the accuracy set: site_K() keeps COUNT[K]*SCALE
 *                  objects of SIZE[K] bytes; answers the true bytes per site
 *   phase          per-thread max gaps since the last phase (probe.h format)
 *   quit
 * Two threads besides main measure stalls: a probe sleeping 1 ms per loop
 * (probe_t[0]) and a worker churning small objects (probe_t[1]).
 */
#include <pthread.h>
#include <string.h>

#include "probe.h"

static void *sleeper(void *arg)
{
	struct probe_thread *t = arg;
	struct timespec ts = { 0, PROBE_SLEEP_NS };
	uint64_t last = probe_now(), n = 0;

	probe_thread_init(t);
	while (!probe_stopping()) {
		nanosleep(&ts, NULL);
		probe_tick(t, &last, ++n);
	}
	return NULL;
}

static void *churner(void *arg)
{
	struct probe_thread *t = arg;
	void *slots[64] = { 0 };
	uint64_t last = probe_now(), n = 0, x = 88172645463325252ull;

	probe_thread_init(t);
	while (!probe_stopping()) {
		for (int k = 0; k < 64; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			free(slots[x & 63]);
			slots[x & 63] = malloc(16 + (x >> 10) % 512);
		}
		n += 64;
		probe_tick(t, &last, n);
	}
	return NULL;
}

static void **keep;
static size_t nkeep, capkeep;

static void hold(void *p)
{
	if (nkeep == capkeep) {
		capkeep = capkeep ? capkeep * 2 : 1 << 16;
		keep = realloc(keep, capkeep * sizeof(*keep));
	}
	keep[nkeep++] = p;
}

__attribute__((noinline)) static void bulk(long n, size_t size)
{
	for (long i = 0; i < n; i++) {
		char *p = malloc(size);
		memset(p, 1, size < 64 ? size : 64);
		hold(p);
	}
}

/* Eight sites with distinct functions (the profile's leaf frame names them). */
static const size_t site_size[8] = { 64, 200, 1000, 4096, 10000, 100000, 500000, 1048576 };
static const long site_count[8] = { 100000, 50000, 20000, 5000, 2000, 200, 40, 20 };

#define SITE(K)                                                              \
	__attribute__((noinline)) static void site_##K(long n)                \
	{                                                                     \
		for (long i = 0; i < n; i++) {                                \
			char *p = malloc(site_size[K]);                       \
			p[0] = 1;                                             \
			hold(p);                                              \
		}                                                             \
		__asm__ volatile("" ::: "memory");                            \
	}
SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7)
static void (*const sites[8])(long) = { site_0, site_1, site_2, site_3, site_4, site_5, site_6, site_7 };

int main(void)
{
	pthread_t th[2];
	char line[256];

	probe_nthreads = 2;
	pthread_create(&th[0], NULL, sleeper, &probe_t[0]);
	pthread_create(&th[1], NULL, churner, &probe_t[1]);
	probe_phase_t0 = probe_now();
	printf("{\"ready\":%d}\n", (int)getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		long n;
		size_t size;
		double scale;

		if (sscanf(line, "alloc %ld %zu", &n, &size) == 2) {
			bulk(n, size);
			printf("{\"allocated\":%ld,\"bytes\":%llu}\n", n, (unsigned long long)n * size);
		} else if (sscanf(line, "sites %lf", &scale) == 1) {
			printf("{\"sites\":[");
			for (int k = 0; k < 8; k++) {
				long c = (long)(site_count[k] * scale);
				sites[k](c);
				printf("%s{\"function\":\"site_%d\",\"size\":%zu,\"count\":%ld,\"bytes\":%llu}",
				       k ? "," : "", k, site_size[k], c, (unsigned long long)c * site_size[k]);
			}
			printf("]}\n");
		} else if (!strncmp(line, "phase", 5)) {
			probe_report("phase");
		} else if (!strncmp(line, "quit", 4)) {
			break;
		} else {
			printf("{\"error\":\"unknown command\"}\n");
		}
		fflush(stdout);
	}
	__atomic_store_n(&probe_stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return 0;
}
