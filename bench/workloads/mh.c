/* mh.c - malloc-heavy bench workload: N threads churn a ring of live objects of random sizes, counting ops. */
/*
 * Usage: mh THREADS [RING] [MAX_SECS]
 * Each worker keeps RING live objects (default 4096): random sizes 16 B -
 * 4 KiB, one in 256 is 64 KiB - 1 MiB; each op frees a random slot and
 * allocates a new object into it (touching its first byte).  The main
 * thread is the latency probe (probe.h): SIGUSR1 prints a phase line,
 * SIGUSR2/SIGTERM ends the run with a final line {"phase":...,"name":"end"}.
 * The allocator is whatever the program is linked with (bench.mk variants).
 */
#include <pthread.h>
#include "probe.h"

static int ring = 4096;

static inline uint64_t xs(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A few real frames between the loop and main(), as a server would have. */
__attribute__((noinline)) static void churn(struct probe_thread *t, uint64_t seed)
{
	void **slots = calloc((size_t)ring, sizeof(*slots));
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1, last = probe_now(), n = 0;

	while (!probe_stopping()) {
		for (int k = 0; k < 64; k++) {
			uint64_t r = xs(&x);
			size_t i = (size_t)(r % (uint64_t)ring);
			size_t sz = (r >> 32 & 255) == 0 ? 65536 + (r >> 40) % (1 << 20) - 65536 / 16
							  : 16 + (r >> 20) % 4081;
			free(slots[i]);
			char *p = malloc(sz);
			p[0] = (char)r;
			slots[i] = p;
		}
		n += 64;
		probe_tick(t, &last, n);
	}
	for (int i = 0; i < ring; i++)
		free(slots[i]);
	free(slots);
}

__attribute__((noinline)) static void nest(struct probe_thread *t, uint64_t seed, int depth)
{
	if (depth)
		nest(t, seed, depth - 1);
	else
		churn(t, seed);
	__asm__ volatile("" ::: "memory");
}

static void *worker(void *arg)
{
	struct probe_thread *t = arg;
	probe_thread_init(t);
	nest(t, (uint64_t)(t - probe_t) + 1, 6);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	double max_secs = argc > 3 ? atof(argv[3]) : 600;

	if (argc > 2)
		ring = atoi(argv[2]);
	if (n < 1 || n > PROBE_MAX_THREADS || ring < 1) {
		fprintf(stderr, "usage: mh THREADS [RING] [MAX_SECS]\n");
		return 64;
	}
	return probe_run(n, worker, max_secs);
}
