/* pl_busy.c - a busy target for start/dump/stop cycles: 8 allocating threads, thread churn, dlopen churn, self-checks. */
/*
 * Usage: pl_busy [DLOPEN_LIB]
 * Eight threads malloc/calloc/realloc/posix_memalign/free blocks carrying a
 * pattern and check it before each free; one thread creates and joins
 * short-lived allocating threads; one dlopens and dlcloses DLOPEN_LIB (if
 * given) and allocates through it.  Prints "ready", then "progress N" (total
 * operations) every 200 ms.  On SIGTERM it stops, frees everything and
 * exits 0 only if no pattern was ever damaged (3 otherwise).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 8
#define SLOTS 512

static volatile int stopping;
static uint64_t ops;
static int damaged;
static const char *lib;

struct block {
	unsigned char *p;
	size_t n;
	unsigned char tag;
};

static void fill(struct block *b)
{
	b->p[0] = b->tag;
	b->p[b->n - 1] = (unsigned char)~b->tag;
	if (b->n > 64)
		memset(b->p + 1, b->tag, 32);
}

static void check(const struct block *b)
{
	if (!b->p)
		return;
	if (b->p[0] != b->tag || b->p[b->n - 1] != (unsigned char)~b->tag ||
	    (b->n > 64 && b->p[1] != b->tag))
		__atomic_store_n(&damaged, 1, __ATOMIC_RELAXED);
}

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void *worker(void *arg)
{
	uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 7;
	struct block *b = calloc(SLOTS, sizeof(*b));
	long n = 0;

	while (!stopping) {
		struct block *s = &b[rnd(&x) % SLOTS];
		size_t size = 2 + rnd(&x) % (rnd(&x) % 16 ? 512 : 65536);
		unsigned op = rnd(&x) % 8;
		check(s);
		if (s->p && op < 2) {
			void *q = realloc(s->p, size);
			if (!q)
				continue;
			/* The pattern's first byte survives a realloc. */
			s->p = q;
			s->n = size;
		} else {
			free(s->p);
			s->p = NULL;
			if (op == 2) {
				s->p = calloc(1, size);
			} else if (op == 3) {
				void *q;
				s->p = posix_memalign(&q, 64, size) ? NULL : q;
			} else {
				s->p = malloc(size);
			}
			s->n = size;
		}
		if (s->p) {
			s->tag = (unsigned char)rnd(&x);
			fill(s);
		}
		if (++n == 1024) {
			__atomic_add_fetch(&ops, n, __ATOMIC_RELAXED);
			n = 0;
		}
	}
	for (int i = 0; i < SLOTS; i++) {
		check(&b[i]);
		free(b[i].p);
	}
	free(b);
	return NULL;
}

static void *short_lived(void *arg)
{
	struct block b = { malloc(1000), 1000, 0x42 };
	if (b.p) {
		fill(&b);
		check(&b);
	}
	free(b.p);
	return arg;
}

static void *churn(void *arg)
{
	while (!stopping) {
		pthread_t t;
		if (pthread_create(&t, NULL, short_lived, NULL) == 0)
			pthread_join(t, NULL);
		if (lib) {
			void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
			void (*fn)(int, void **) = h ? (void (*)(int, void **))dlsym(h, "pl_dyn_alloc") : NULL;
			void *v[16];
			if (fn) {
				fn(16, v);
				for (int i = 0; i < 16; i++)
					free(v[i]);
			}
			if (h)
				dlclose(h);
		}
		usleep(2000);
	}
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t w[WORKERS], c;
	sigset_t set;
	int sig;

	lib = argc > 1 ? argv[1] : NULL;
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (long i = 0; i < WORKERS; i++)
		pthread_create(&w[i], NULL, worker, (void *)(i + 1));
	pthread_create(&c, NULL, churn, NULL);
	printf("ready\n");
	for (;;) {
		struct timespec ts = { 0, 200000000 };
		if (sigtimedwait(&set, NULL, &ts) == SIGTERM)
			break;
		printf("progress %llu\n", (unsigned long long)__atomic_load_n(&ops, __ATOMIC_RELAXED));
	}
	(void)sig;
	stopping = 1;
	for (int i = 0; i < WORKERS; i++)
		pthread_join(w[i], NULL);
	pthread_join(c, NULL);
	printf("done damaged=%d\n", damaged);
	return damaged ? 3 : 0;
}
