/* inj_malloc.c - N threads (default 16, main included) hammering malloc,
 * calloc, realloc, posix_memalign and free, every block filled with a
 * pattern that is verified before it is resized or freed; plus a thread that
 * dlopen()s and dlclose()s libm.so.6 in a loop and one that keeps creating
 * and joining short-lived threads.  Runs until SIGTERM; exit 0 only if no
 * block was ever found damaged.  Usage: inj_malloc [--threads N] */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include "inj_common.h"

#define SLOTS 64

struct blk {
	unsigned char *p;
	size_t size;
	uint64_t id;
};

struct worker {
	pthread_t th;
	int idx;
	uint64_t ops, seed, gen;
	struct blk slot[SLOTS];
	struct inj_gap *gap;
};

static long dl_cycles, churned;

static inline uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static size_t pick_size(uint64_t *s)
{
	unsigned r = rnd(s) % 100;

	if (r < 70)
		return 1 + rnd(s) % 256;
	if (r < 95)
		return 257 + rnd(s) % 16128;
	if (r < 99)
		return 16384 + rnd(s) % 114688;
	return 131072 + rnd(s) % 917504;	/* above the mmap threshold */
}

/* Layout of a block: its 8-byte id (thread, slot, generation) when it fits,
 * then bytes equal to the id's low byte.  A block handed out twice, written
 * by someone else or moved without its contents shows up here. */
static void fill(struct blk *b)
{
	size_t off = 0;

	if (b->size >= 8) {
		memcpy(b->p, &b->id, 8);
		off = 8;
	}
	memset(b->p + off, (uint8_t)b->id, b->size - off);
}

static void verify(const struct blk *b, size_t len, const char *when)
{
	unsigned char idb[8];
	size_t i;

	memcpy(idb, &b->id, 8);
	for (i = 0; i < len; i++) {
		unsigned char want = b->size >= 8 && i < 8 ? idb[i] : (uint8_t)b->id;

		if (b->p[i] != want)
			inj_fail("heap block %p (%zu bytes, id 0x%llx) damaged %s: byte %zu is 0x%02x, "
				 "expected 0x%02x", b->p, b->size, (unsigned long long)b->id, when, i,
				 b->p[i], want);
	}
}

static void new_block(struct worker *w, struct blk *b, int slot)
{
	size_t size = pick_size(&w->seed);
	unsigned kind = rnd(&w->seed) % 8;
	void *p = NULL;

	if (kind < 5) {
		p = malloc(size);
	} else if (kind == 5) {
		size_t i;

		p = calloc(1, size);
		for (i = 0; p && i < size; i++)
			if (((unsigned char *)p)[i])
				inj_fail("calloc(%zu) returned memory with byte %zu = 0x%02x",
					 size, i, ((unsigned char *)p)[i]);
	} else {
		size_t align = (size_t)16 << (rnd(&w->seed) % 9);	/* 16 .. 4096 */
		int r = posix_memalign(&p, align, size);

		if (r)
			inj_fail("posix_memalign(%zu, %zu): %s", align, size, strerror(r));
		if ((uintptr_t)p & (align - 1))
			inj_fail("posix_memalign(%zu) returned %p", align, p);
	}
	if (!p)
		inj_fail("allocation of %zu bytes failed", size);
	if (malloc_usable_size(p) < size)
		inj_fail("malloc_usable_size(%p) = %zu < %zu", p, malloc_usable_size(p), size);
	b->p = p;
	b->size = size;
	b->id = ((uint64_t)w->idx << 48) | ((uint64_t)slot << 40) | (++w->gen & 0xffffffffffull);
	fill(b);
}

static void one_op(struct worker *w)
{
	int i = rnd(&w->seed) % SLOTS;
	struct blk *b = &w->slot[i];

	if (!b->p) {
		new_block(w, b, i);
		return;
	}
	verify(b, b->size, "before free/realloc");
	if (rnd(&w->seed) % 3 == 0) {
		size_t nsize = pick_size(&w->seed), keep = nsize < b->size ? nsize : b->size;
		unsigned char *np = realloc(b->p, nsize);

		if (!np)
			inj_fail("realloc(%zu) failed", nsize);
		b->p = np;
		verify(b, keep, "by realloc");
		b->size = nsize;
		fill(b);
	} else {
		free(b->p);
		b->p = NULL;
	}
}

static void *hammer(void *arg)
{
	struct worker *w = arg;
	int i;

	w->gap = inj_gap_new("malloc hammer");
	w->seed = 0xa110c0000ull + w->idx;
	while (!inj_stop) {
		one_op(w);
		inj_gap_tick(w->gap);
		if ((++w->ops & 255) == 0)
			inj_progress_add(256);
	}
	for (i = 0; i < SLOTS; i++)
		if (w->slot[i].p) {
			verify(&w->slot[i], w->slot[i].size, "at exit");
			free(w->slot[i].p);
		}
	return NULL;
}

static void *dl_loop(void *arg)
{
	struct inj_gap *gap;

	gap = inj_gap_new("dlopen/dlclose libm");
	while (!inj_stop) {
		void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
		double (*cosp)(double);

		if (!h)
			inj_fail("dlopen libm.so.6: %s", dlerror());
		cosp = (double (*)(double))dlsym(h, "cos");
		if (!cosp || cosp(0.0) != 1.0)
			inj_fail("libm cos missing or wrong after dlopen");
		if (dlclose(h))
			inj_fail("dlclose libm.so.6: %s", dlerror());
		dl_cycles++;
		inj_gap_tick(gap);
		inj_nap(200000);
	}
	return NULL;
}

static void *short_lived(void *arg)
{
	struct worker w;
	int i;

	memset(&w, 0, sizeof(w));
	w.idx = 0xfff;
	w.seed = (uintptr_t)arg;
	for (i = 0; i < 16; i++)
		one_op(&w);
	for (i = 0; i < SLOTS; i++)
		if (w.slot[i].p) {
			verify(&w.slot[i], w.slot[i].size, "in a short-lived thread");
			free(w.slot[i].p);
		}
	return NULL;
}

static void *churn(void *arg)
{
	struct inj_gap *gap;

	gap = inj_gap_new("thread churn");
	while (!inj_stop) {
		pthread_t th;
		int r = pthread_create(&th, NULL, short_lived, (void *)(uintptr_t)churned);

		if (r)
			inj_fail("pthread_create in churn thread: %s", strerror(r));
		pthread_join(th, NULL);
		churned++;
		inj_gap_tick(gap);
		inj_nap(500000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t dl_th, churn_th;
	struct worker *ws;
	int n = 16, i;
	uint64_t total = 0;

	if (argc == 3 && strcmp(argv[1], "--threads") == 0)
		n = atoi(argv[2]);
	else if (argc != 1) {
		fprintf(stderr, "usage: inj_malloc [--threads N]\n");
		return 64;
	}
	if (n < 1 || n > 256) {
		fprintf(stderr, "inj_malloc: bad thread count\n");
		return 64;
	}
	inj_init();
	inj_on_term(SA_RESTART);
	ws = calloc(n, sizeof(*ws));
	for (i = 0; i < n; i++)
		ws[i].idx = i;
	for (i = 1; i < n; i++)
		if (pthread_create(&ws[i].th, NULL, hammer, &ws[i]))
			inj_fail("pthread_create failed");
	if (pthread_create(&dl_th, NULL, dl_loop, NULL) || pthread_create(&churn_th, NULL, churn, NULL))
		inj_fail("pthread_create failed");
	printf("inj_malloc: %d threads hammering malloc/calloc/realloc/posix_memalign/free, "
	       "1 dlopen/dlclose libm.so.6 loop, 1 thread churn\n", n);
	inj_ready();
	hammer(&ws[0]);
	for (i = 1; i < n; i++)
		pthread_join(ws[i].th, NULL);
	pthread_join(dl_th, NULL);
	pthread_join(churn_th, NULL);
	inj_gap_report();
	for (i = 0; i < n; i++)
		total += ws[i].ops;
	printf("malloc ok: %llu heap operations verified, %ld dlopen/dlclose cycles, %ld threads churned\n",
	       (unsigned long long)total, dl_cycles, churned);
	return 0;
}
