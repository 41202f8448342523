/* table.c - the live-sample table (pointer -> record, lock-free probes for free()) and cumulative per-stack totals. */
#include <errno.h>
#include <string.h>
#include <sys/types.h>

#include "hsp.h"

/*
 * Live table: open addressing with linear probing, keys in their own dense
 * array so a free() of an unsampled pointer touches one or two cache lines.
 * Keys never go back to EMPTY (deletion leaves a TOMB), so a lock-free probe
 * for a key present in the table always finds it.  Growth and cleaning build
 * a new table under the lock and publish it; the old one is retired, and
 * reused or unmapped only later (see lt_new), since a probe may still be
 * reading it.
 * A free() of pointer p happens after the malloc that returned p inserted
 * it (the program itself orders them), so the probe sees that table or a
 * newer one, never an older one that lacks p.
 */
#define EMPTY LT_EMPTY
#define TOMB LT_TOMB
#define LT_MIN_CAP 4096
#define CHUNK_SLOTS 1024

/*
 * Cumulative totals: one entry per stack id, already unbiased, so the table
 * is bounded by the stack depot however many sizes and rates it sees.  Ids
 * are dense: a two-level array, chunks mapped on first use.
 */
#define CUM_CHUNK_BITS 12
#define CUM_CHUNK (1u << CUM_CHUNK_BITS)
#define CUM_NCHUNKS (STACK_MAX_IDS >> CUM_CHUNK_BITS)

struct cum_ent {
	double objects, bytes;
	uint64_t samples;
};

/* On its own line: written by every sample. */
static pthread_mutex_t tlock __attribute__((aligned(64))) = PTHREAD_MUTEX_INITIALIZER;
struct ltab_ptr table_cur;
#define cur table_cur.p
static struct ltab *retired;
static uint64_t live_bytes;
static struct cum_ent *cum[CUM_NCHUNKS];
static uint32_t cum_hi;         /* one past the highest stack id with totals */
static uint64_t cum_gen;        /* bumped when the totals are cleared */
static uint64_t alloc_n, alloc_bytes;
static uint64_t snap_hold;      /* longest hold of tlock by the current/last snapshot copy */
static bool snapping;           /* a copy of the live table is under way */

#define hash_ptr table_hash

/*
 * The filter is sized for the live keys, not the slots: every free() of
 * the program reads one random bit of it, so it must stay in L1 when few
 * samples are live (a byte-rate sampler often has only tens of live
 * samples while the program frees millions of objects a second).  It gets
 * FILTER_PER_LIVE slots (bits) per live key when built and is rebuilt at
 * half that, so false hits stay under 1/32: 1 KiB of bits for up to 128
 * live samples.
 */
#define FILTER_MIN 8192
#define FILTER_PER_LIVE 64

static size_t filter_size(size_t live)
{
	size_t f = FILTER_MIN;
	while (f < (live + 1) * FILTER_PER_LIVE)
		f <<= 1;
	return f;
}

/*
 * Two mappings: the probed part (header, keys and filter bits: what
 * lock-free probes read) and the records with the filter counts (only
 * touched under the lock).  A retired table gives the second back at once.
 * Its probed part goes to the retired list, where a free() that loaded the
 * table pointer just before the switch may still read it; after
 * LT_REUSE_NS it is reused for the next table of its size (a probe that
 * late reads valid memory and at worst misses one free), and one not
 * reused is unmapped after LT_UNMAP_NS.  With frees hitting tombstones,
 * tables are rebuilt often: reuse also saves the mapping.
 */
#define PAGE_ROUND(n) (((n) + 4095) & ~(size_t)4095)

/* Under tlock: a retired probed part for a table of this shape that may
 * be reused, its keys and bits cleared.  The header a late prober reads
 * (pointers, masks, shift) keeps its values all along: same shape. */
static struct ltab *lt_reuse(size_t cap, size_t fsize)
{
	uint64_t now = payload_now_ns();

	for (struct ltab **pp = &retired; *pp; pp = &(*pp)->next) {
		struct ltab *t = *pp;
		if (t->cap == cap && t->fmask == fsize - 1 && now - t->retired_ns >= LT_REUSE_NS) {
			*pp = t->next;
			memset(t->keys, 0, cap * sizeof(*t->keys));
			memset(t->fbits, 0, fsize / 8);
			t->used = t->live = 0;
			t->next = NULL;
			return t;
		}
	}
	return NULL;
}

static struct ltab *lt_new(size_t cap, size_t fsize)
{
	size_t probed = PAGE_ROUND(sizeof(struct ltab) + cap * sizeof(uintptr_t) + fsize / 8);
	size_t lock_len = PAGE_ROUND(cap * sizeof(struct live_rec) + fsize);
	struct ltab *t = lt_reuse(cap, fsize);
	unsigned bits = 0;

	if (!t)
		t = mem_map(probed);
	if (!t)
		return NULL;
	t->recs = mem_map(lock_len);
	if (!t->recs) {
		mem_unmap(t, probed);
		return NULL;
	}
	while (((size_t)1 << bits) < cap)
		bits++;
	t->cap = cap;
	t->mask = cap - 1;
	t->shift = 64 - bits;
	t->maplen = probed;
	t->lock_len = lock_len;
	t->keys = (uintptr_t *)(t + 1);
	t->fbits = (uint8_t *)(t->keys + cap);
	t->fmask = fsize - 1;
	t->fcount = (uint8_t *)(t->recs + cap);
	return t;
}

/* Both mappings of a table (no prober can reach it any more). */
static void lt_free(struct ltab *t)
{
	if (t->lock_len)
		mem_unmap(t->recs, t->lock_len);
	mem_unmap(t, t->maplen);
}

/* Under tlock: t is no longer current. */
static void lt_retire(struct ltab *t)
{
	mem_unmap(t->recs, t->lock_len);
	t->recs = NULL;
	t->fcount = NULL;
	t->lock_len = 0;
	t->retired_ns = payload_now_ns();
	t->next = retired;
	retired = t;
}

/* Under tlock: slot holding k, or -1. */
static ssize_t lt_find(struct ltab *t, uintptr_t k)
{
	size_t i = hash_ptr(k, t->shift);
	for (size_t n = 0; n <= t->mask; n++) {
		uintptr_t s = t->keys[i];
		if (s == k)
			return (ssize_t)i;
		if (s == EMPTY)
			return -1;
		i = (i + 1) & t->mask;
	}
	return -1;
}

/* Under tlock: counts k in or out of the filter; its bit follows whether
 * the slot's count is zero (a count that reached 255 stays). */
static void filter_add(struct ltab *t, uintptr_t k, int d)
{
	size_t f = table_filter_slot(t, k);
	uint8_t c = t->fcount[f], *b = &t->fbits[f >> 3], m = (uint8_t)(1u << (f & 7));

	if (c == 255)
		return;
	c = (uint8_t)(c + d);
	t->fcount[f] = c;
	if (c == 1 && d > 0)
		STORE_RELAXED(b, (uint8_t)(*b | m));
	else if (c == 0)
		STORE_RELAXED(b, (uint8_t)(*b & ~m));
}

/* Under tlock, into a table with room (no existing k). */
static void lt_put(struct ltab *t, uintptr_t k, const struct live_rec *r)
{
	size_t i = hash_ptr(k, t->shift);
	for (;;) {
		uintptr_t s = t->keys[i];
		if (s == EMPTY || s == TOMB) {
			t->recs[i] = *r;
			filter_add(t, k, 1);
			if (s == EMPTY)
				t->used++;
			t->live++;
			/* Record first, key last: a prober that sees the key may
			 * take the lock and read the record. */
			STORE(&t->keys[i], k);
			return;
		}
		i = (i + 1) & t->mask;
	}
}

/* Under tlock: make room for one more key; false when out of memory. */
static bool lt_reserve(void)
{
	struct ltab *t = cur;

	/* Rebuilt at half full: tombstones lengthen every probe of a free()
	 * that gets past the filter and misses; and when the live keys
	 * outgrow the filter (false hits above 1/32). */
	if (t && (t->used + 1) * 2 <= t->cap && (t->live + 1) * FILTER_PER_LIVE / 2 <= t->fmask + 1)
		return true;
	/* While a snapshot copies this table chunk by chunk, a rebuild would
	 * make it start over: wait for it up to three quarters full. */
	if (t && snapping && (t->used + 1) * 4 <= t->cap * 3)
		return true;
	size_t live = t ? t->live : 0, cap = LT_MIN_CAP;
	while (cap < (live + 1) * 4)
		cap <<= 1;
	struct ltab *n = lt_new(cap, filter_size(live + 1));
	if (!n)
		return false;
	if (t) {
		for (size_t i = 0; i < t->cap; i++)
			if (t->keys[i] > TOMB)
				lt_put(n, t->keys[i], &t->recs[i]);
	}
	STORE(&cur, n);
	if (t)
		lt_retire(t);
	return true;
}

/* Under tlock: adds one sample, worth w allocations. */
static void cum_add(uint32_t stack, uint64_t size, double w)
{
	struct cum_ent **c = &cum[stack >> CUM_CHUNK_BITS];

	if (stack >= STACK_MAX_IDS)
		return;
	if (!*c) {
		*c = mem_map(CUM_CHUNK * sizeof(**c));
		if (!*c) {
			ADD_RELAXED(&hsp_g.dropped, 1);
			return;
		}
	}
	struct cum_ent *e = &(*c)[stack & (CUM_CHUNK - 1)];
	e->objects += w;
	e->bytes += w * (double)size;
	e->samples++;
	if (stack >= cum_hi)
		cum_hi = stack + 1;
	alloc_n++;
	alloc_bytes += size;
}

static void cum_clear(void)
{
	for (size_t i = 0; i < CUM_NCHUNKS; i++) {
		if (cum[i])
			mem_unmap(cum[i], CUM_CHUNK * sizeof(*cum[i]));
		cum[i] = NULL;
	}
	cum_hi = 0;
	cum_gen++;
	alloc_n = alloc_bytes = 0;
}

void table_record(const void *p, const struct live_rec *r)
{
	uintptr_t k = (uintptr_t)p;

	if (k <= TOMB)
		return;
	double w = sampler_weight(r->size, r->rate);
	pthread_mutex_lock(&tlock);
	if (cur) {
		ssize_t i = lt_find(cur, k);
		if (i >= 0) {
			/* A stale record: its object was freed where we could not see. */
			live_bytes -= cur->recs[i].size;
			cur->recs[i] = *r;
			live_bytes += r->size;
			cum_add(r->stack, r->size, w);
			goto out;
		}
	}
	if (!lt_reserve()) {
		ADD_RELAXED(&hsp_g.dropped, 1);
		goto out;
	}
	lt_put(cur, k, r);
	live_bytes += r->size;
	cum_add(r->stack, r->size, w);
out:
	pthread_mutex_unlock(&tlock);
}

void table_reinsert(const void *p, const struct live_rec *r)
{
	uintptr_t k = (uintptr_t)p;

	pthread_mutex_lock(&tlock);
	if (cur && lt_find(cur, k) < 0 && lt_reserve()) {
		lt_put(cur, k, r);
		live_bytes += r->size;
	}
	pthread_mutex_unlock(&tlock);
}

bool table_remove(const void *p, struct live_rec *out)
{
	uintptr_t k = (uintptr_t)p;
	bool found = false;

	if (k <= TOMB)
		return false;
	pthread_mutex_lock(&tlock);
	if (cur) {
		ssize_t i = lt_find(cur, k);
		if (i >= 0) {
			if (out)
				*out = cur->recs[i];
			live_bytes -= cur->recs[i].size;
			cur->live--;
			STORE(&cur->keys[i], (uintptr_t)TOMB);
			/* After the key is gone: a prober that still sees the bit
			 * finds the tombstone. */
			filter_add(cur, k, -1);
			found = true;
		}
	}
	pthread_mutex_unlock(&tlock);
	return found;
}

void table_reset_totals(void)
{
	pthread_mutex_lock(&tlock);
	cum_clear();
	pthread_mutex_unlock(&tlock);
}

void table_counts(uint64_t *live, uint64_t *lbytes, uint64_t *alloc, uint64_t *abytes)
{
	pthread_mutex_lock(&tlock);
	*live = cur ? cur->live : 0;
	*lbytes = live_bytes;
	*alloc = alloc_n;
	*abytes = alloc_bytes;
	pthread_mutex_unlock(&tlock);
}

/* A growable output array for the snapshot copies. */
struct outbuf {
	void *p;
	size_t n, cap, elem;
};

/* Outside the lock: make room for `more` elements. */
static bool ob_reserve(struct outbuf *b, size_t more)
{
	if (b->n + more <= b->cap)
		return true;
	size_t ncap = b->cap ? b->cap : 4096;
	while (ncap < b->n + more)
		ncap *= 2;
	void *np = mem_map(ncap * b->elem);
	if (!np)
		return false;
	/* Fault the pages in now: inside the lock, each first touch would
	 * keep allocating threads waiting. */
	for (size_t off = 0; off < ncap * b->elem; off += 4096)
		((volatile char *)np)[off] = 0;
	if (b->p) {
		memcpy(np, b->p, b->n * b->elem);
		mem_unmap(b->p, b->cap * b->elem);
	}
	b->p = np;
	b->cap = ncap;
	return true;
}

static void ob_free(struct outbuf *b)
{
	if (b->p)
		mem_unmap(b->p, b->cap * b->elem);
	b->p = NULL;
	b->n = b->cap = 0;
}

/*
 * The snapshot copies hold the lock for one chunk of CHUNK_SLOTS slots at a
 * time (microseconds), so allocating threads are never held up by a
 * snapshot.  If the table is rebuilt between two chunks, the copy starts
 * again; after a few tries it copies the rest in one go.
 */
/* Under tlock, at the end of one chunk of a snapshot copy. */
static void hold_note(uint64_t h0)
{
	uint64_t h = cost_now() - h0;
	if (h > snap_hold)
		snap_hold = h;
}

uint64_t table_snap_hold(void)
{
	pthread_mutex_lock(&tlock);
	uint64_t h = snap_hold;
	pthread_mutex_unlock(&tlock);
	return h;
}

static void snap_end(void)
{
	pthread_mutex_lock(&tlock);
	snapping = false;
	pthread_mutex_unlock(&tlock);
}

/* A snapshot copies the live records first: it starts a new measure. */
struct hsp_live_rec *table_copy_live(size_t *n, size_t *len)
{
	struct outbuf b = { .elem = sizeof(struct hsp_live_rec) };

	pthread_mutex_lock(&tlock);
	snap_hold = 0;
	snapping = true;
	pthread_mutex_unlock(&tlock);

	for (int attempt = 0; attempt < 4; attempt++) {
		struct ltab *t;
		size_t pos = 0;
		b.n = 0;
		pthread_mutex_lock(&tlock);
		t = cur;
		size_t live = t ? t->live : 0;
		pthread_mutex_unlock(&tlock);
		if (!t)
			break;
		if (!ob_reserve(&b, live + live / 4 + CHUNK_SLOTS))
			goto nomem;
		bool restart = false;
		while (pos < t->cap) {
			size_t step = attempt == 3 ? t->cap : CHUNK_SLOTS;
			if (!ob_reserve(&b, step < t->cap ? step : t->cap))
				goto nomem;
			pthread_mutex_lock(&tlock);
			uint64_t h0 = cost_now();
			if (cur != t) {
				pthread_mutex_unlock(&tlock);
				restart = true;
				break;
			}
			struct hsp_live_rec *o = b.p;
			size_t end = pos + step < t->cap ? pos + step : t->cap;
			for (; pos < end; pos++) {
				if (t->keys[pos] <= TOMB)
					continue;
				const struct live_rec *r = &t->recs[pos];
				o[b.n++] = (struct hsp_live_rec){ r->size, r->rate, r->time_ns, r->stack, r->tid };
			}
			hold_note(h0);
			pthread_mutex_unlock(&tlock);
		}
		if (!restart)
			break;
	}
	snap_end();
	*n = b.n;
	*len = b.cap * b.elem;
	return b.p;
nomem:
	snap_end();
	ob_free(&b);
	*n = 0;
	*len = 0;
	errno = ENOMEM;
	return NULL;
}

struct hsp_alloc_rec *table_copy_alloc(size_t *n, size_t *len)
{
	struct outbuf b = { .elem = sizeof(struct hsp_alloc_rec) };

	for (int attempt = 0; attempt < 4; attempt++) {
		uint32_t id = 0, hi;
		uint64_t gen;
		b.n = 0;
		pthread_mutex_lock(&tlock);
		gen = cum_gen;
		hi = cum_hi;
		pthread_mutex_unlock(&tlock);
		bool restart = false;
		while (id < hi) {
			uint32_t step = attempt == 3 ? hi : CHUNK_SLOTS;
			uint32_t end = hi - id > step ? id + step : hi;
			if (!ob_reserve(&b, end - id))
				goto nomem;
			pthread_mutex_lock(&tlock);
			uint64_t h0 = cost_now();
			if (cum_gen != gen) {
				pthread_mutex_unlock(&tlock);
				restart = true;
				break;
			}
			struct hsp_alloc_rec *o = b.p;
			for (; id < end; id++) {
				const struct cum_ent *c = cum[id >> CUM_CHUNK_BITS];
				if (!c) {
					id |= CUM_CHUNK - 1;
					continue;
				}
				const struct cum_ent *e = &c[id & (CUM_CHUNK - 1)];
				if (e->samples)
					o[b.n++] = (struct hsp_alloc_rec){ e->objects, e->bytes, e->samples, id, 0 };
			}
			hold_note(h0);
			pthread_mutex_unlock(&tlock);
		}
		if (!restart)
			break;
	}
	*n = b.n;
	*len = b.cap * b.elem;
	return b.p;
nomem:
	ob_free(&b);
	*n = 0;
	*len = 0;
	errno = ENOMEM;
	return NULL;
}

void table_reap(uint64_t age_ns)
{
	uint64_t now = payload_now_ns();

	pthread_mutex_lock(&tlock);
	struct ltab **pp = &retired;
	while (*pp) {
		struct ltab *t = *pp;
		if (now - t->retired_ns >= age_ns) {
			*pp = t->next;
			lt_free(t);
		} else {
			pp = &t->next;
		}
	}
	pthread_mutex_unlock(&tlock);
}

int table_init(void)
{
	pthread_mutex_lock(&tlock);
	bool ok = lt_reserve();
	pthread_mutex_unlock(&tlock);
	return ok ? 0 : -ENOMEM;
}

void table_fini(void)
{
	pthread_mutex_lock(&tlock);
	struct ltab *t = cur;
	STORE(&cur, (struct ltab *)NULL);
	if (t)
		lt_free(t);
	while (retired) {
		t = retired;
		retired = t->next;
		lt_free(t);
	}
	cum_clear();
	live_bytes = 0;
	pthread_mutex_unlock(&tlock);
}

void table_forget(void)
{
	/* fork child: another thread of the parent may have held tlock; the
	 * child never takes it again until a new start re-initialises it. */
	STORE(&cur, (struct ltab *)NULL);
	retired = NULL;
	memset(cum, 0, sizeof(cum));
	cum_hi = 0;
	snapping = false;
	alloc_n = alloc_bytes = live_bytes = 0;
	pthread_mutex_init(&tlock, NULL);
}
