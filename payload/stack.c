/* stack.c - call-stack capture (libgcc unwinder, glibc backtrace, frame pointers) and the deduplicating stack depot. */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <string.h>

#include "hsp.h"

/* ---- capture ------------------------------------------------------------ */

/* libgcc's unwinder, reached through the copy glibc's backtrace() loaded
 * (RTLD_NOLOAD), and libunwind's (loaded if the process lacks it, unless
 * another unwinder was asked for: see stack_init).  Measured at 25 frames (pl_bench):
 * libgcc ~120 ns/frame (it decodes the FDE of every frame every time),
 * libunwind ~7 ns/frame (it caches), frame pointers ~2 ns/frame (wrong
 * without %rbp in every frame, as in distro libc and -O2 code). */
typedef int (*unw_trace_fn)(void *ctx, void *arg);
static int (*unw_backtrace)(unw_trace_fn fn, void *arg);
static uintptr_t (*unw_getip)(void *ctx);
static int (*lu_backtrace)(void **pcs, int n);
static void *gcc_handle, *lu_handle;
static unsigned cur_unwinder;

struct unw_arg {
	uintptr_t *pcs;
	int n;
	bool ours;  /* still in the payload's own leading frames */
};

static inline bool in_self(uintptr_t pc)
{
	return pc >= hsp_g.self_lo && pc < hsp_g.self_hi;
}

static int unw_cb(void *ctx, void *arg)
{
	struct unw_arg *a = arg;
	uintptr_t ip = unw_getip(ctx);

	if (!ip)
		return 5; /* _URC_END_OF_STACK */
	if (a->ours) {
		if (in_self(ip))
			return 0;
		a->ours = false;
	}
	a->pcs[a->n++] = ip;
	return a->n >= HSP_MAX_DEPTH ? 5 : 0;
}

static int capture_gcc(uintptr_t *pcs)
{
	struct unw_arg a = { pcs, 0, true };

	if (!unw_backtrace)
		return 0;
	unw_backtrace(unw_cb, &a);
	return a.n;
}

static int capture_backtrace(uintptr_t *pcs)
{
	void *buf[HSP_MAX_DEPTH + 16];
	int n = backtrace(buf, HSP_MAX_DEPTH + 16), i = 0, d = 0;

	while (i < n && in_self((uintptr_t)buf[i]))
		i++;
	for (; i < n && d < HSP_MAX_DEPTH; i++)
		pcs[d++] = (uintptr_t)buf[i];
	return d;
}

/* Frame-pointer walk, bounded by this thread's stack: correct only where
 * every frame keeps %rbp (distro libc does not); kept for measurements. */
static int capture_fp(uintptr_t *pcs)
{
	struct hsp_tls *t = &hsp_tls;
	uintptr_t lo = (uintptr_t)__builtin_frame_address(0), hi = t->stack_hi;
	int d = 0;

	if (!hi || lo >= hi) {
		pthread_attr_t attr;
		void *addr;
		size_t size;
		if (pthread_getattr_np(pthread_self(), &attr) != 0)
			return 0;
		if (pthread_attr_getstack(&attr, &addr, &size) == 0)
			t->stack_hi = hi = (uintptr_t)addr + size;
		pthread_attr_destroy(&attr);
		if (!hi || lo >= hi)
			return 0;
	}
	uintptr_t fp = lo;
	bool ours = true;
	while (d < HSP_MAX_DEPTH && fp >= lo && fp + 16 <= hi && !(fp & 7)) {
		uintptr_t next = ((uintptr_t *)fp)[0], ra = ((uintptr_t *)fp)[1];
		if (!ra)
			break;
		if (ours && in_self(ra)) {
			/* still inside the payload */
		} else {
			ours = false;
			pcs[d++] = ra;
		}
		if (next <= fp)
			break;
		fp = next;
	}
	return d;
}

static int capture_libunwind(uintptr_t *pcs)
{
	void *buf[HSP_MAX_DEPTH + 16];
	int n = lu_backtrace(buf, HSP_MAX_DEPTH + 16), i = 0, d = 0;

	while (i < n && in_self((uintptr_t)buf[i]))
		i++;
	for (; i < n && d < HSP_MAX_DEPTH; i++)
		pcs[d++] = (uintptr_t)buf[i];
	return d;
}

int stack_capture_with(unsigned unwinder, uintptr_t *pcs)
{
	switch (unwinder) {
	case HSP_UNW_BACKTRACE:
		return capture_backtrace(pcs);
	case HSP_UNW_FP:
		return capture_fp(pcs);
	case HSP_UNW_LIBUNWIND:
		return capture_libunwind(pcs);
	default:
		return capture_gcc(pcs);
	}
}

int stack_capture(uintptr_t *pcs)
{
	return stack_capture_with(cur_unwinder, pcs);
}

/* ---- depot ------------------------------------------------------------ */

/* Ids index a two-level array: chunks of 64 Ki entries, mapped on demand,
 * so the depot costs what it holds. */
#define CHUNK_BITS 16
#define CHUNK_IDS (1u << CHUNK_BITS)
#define NCHUNKS (STACK_MAX_IDS / CHUNK_IDS)
#define STACK_MAX STACK_MAX_IDS
#define NBUCKETS (1u << 16)

struct stk {
	uint64_t hash;
	uint32_t next;   /* id + 1 of the next entry in the bucket, 0 = end */
	uint32_t depth;
	uintptr_t pc[];
};

static struct stk **chunks[NCHUNKS]; /* published with release stores */
static uint32_t *buckets;       /* id + 1 of the chain head */
static uint32_t nstacks;
static pthread_mutex_t depot_lock = PTHREAD_MUTEX_INITIALIZER;

static struct stk *by_id(uint32_t id)
{
	struct stk **c = LOAD(&chunks[id >> CHUNK_BITS]);
	return LOAD(&c[id & (CHUNK_IDS - 1)]);
}

/* Four independent lanes, kept scalar (vectorised, the 64-bit multiplies
 * become shift-and-add sequences): a stack is hashed on every sample, and
 * one multiply chain over 25 frames would be 25 multiply latencies long. */
static uint64_t stack_hash(const uintptr_t *pcs, int depth)
{
	uint64_t a = 0xcbf29ce484222325ull ^ (uint64_t)depth, b = 0x84222325cbf29ce4ull,
		 c = 0x9e3779b97f4a7c15ull, d = 0xc2b2ae3d27d4eb4full;
	const uint64_t m = 0x100000001b3ull;
	int i = 0;

#define LANE(x, v) do { x = ((x) ^ (v)) * m; x ^= x >> 29; } while (0)
	for (; i + 4 <= depth; i += 4) {
		LANE(a, pcs[i]);
		LANE(b, pcs[i + 1]);
		LANE(c, pcs[i + 2]);
		LANE(d, pcs[i + 3]);
	}
	if (i < depth)
		LANE(a, pcs[i]);
	if (i + 1 < depth)
		LANE(b, pcs[i + 1]);
	if (i + 2 < depth)
		LANE(c, pcs[i + 2]);
#undef LANE
	uint64_t h = a ^ (b * 0x9e3779b97f4a7c15ull) ^ (c * 0xbf58476d1ce4e5b9ull) ^ (d * 0x94d049bb133111ebull);
	return h ^ (h >> 31);
}

static uint32_t lookup(uint64_t h, const uintptr_t *pcs, int depth)
{
	for (uint32_t id1 = LOAD(&buckets[h & (NBUCKETS - 1)]); id1;) {
		struct stk *s = by_id(id1 - 1);
		if (s->hash == h && s->depth == (uint32_t)depth &&
		    !memcmp(s->pc, pcs, depth * sizeof(*pcs)))
			return id1 - 1;
		id1 = s->next;
	}
	return STACK_NONE;
}

uint32_t stack_intern(const uintptr_t *pcs, int depth)
{
	uint64_t h = stack_hash(pcs, depth);
	uint32_t id;

	if (!buckets)
		return STACK_NONE;
	/* Readers walk chains without the lock: entries are immutable once
	 * published, and heads are published after their entry. */
	id = lookup(h, pcs, depth);
	if (id != STACK_NONE)
		return id;
	pthread_mutex_lock(&depot_lock);
	id = lookup(h, pcs, depth);
	if (id == STACK_NONE && nstacks < STACK_MAX) {
		struct stk **c = chunks[nstacks >> CHUNK_BITS];
		if (!c) {
			c = mem_map(CHUNK_IDS * sizeof(*c));
			if (c)
				STORE(&chunks[nstacks >> CHUNK_BITS], c);
		}
		struct stk *s = c ? arena_alloc(sizeof(*s) + depth * sizeof(*pcs)) : NULL;
		if (s) {
			uint32_t b = h & (NBUCKETS - 1);
			s->hash = h;
			s->depth = depth;
			memcpy(s->pc, pcs, depth * sizeof(*pcs));
			s->next = buckets[b];
			id = nstacks;
			STORE(&c[id & (CHUNK_IDS - 1)], s);
			STORE(&buckets[b], id + 1);
			STORE(&nstacks, id + 1);
		}
	}
	pthread_mutex_unlock(&depot_lock);
	return id;
}

uint32_t stack_count(void)
{
	return LOAD(&nstacks);
}

const uintptr_t *stack_get(uint32_t id, uint32_t *depth)
{
	if (id >= LOAD(&nstacks))
		return NULL;
	struct stk *s = by_id(id);
	*depth = s->depth;
	return s->pc;
}

int stack_init(unsigned unwinder)
{
	uintptr_t pcs[HSP_MAX_DEPTH];
	void *warm[4];

	if (!buckets) {
		buckets = mem_map((size_t)NBUCKETS * sizeof(*buckets));
		if (!buckets)
			return -ENOMEM;
	}
	/* backtrace() dlopens libgcc_s on its first call: do that here, before
	 * any hook is live, never inside one. */
	backtrace(warm, 4);
	if (!gcc_handle) {
		gcc_handle = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);
		if (gcc_handle) {
			unw_backtrace = (int (*)(unw_trace_fn, void *))dlsym(gcc_handle, "_Unwind_Backtrace");
			unw_getip = (uintptr_t (*)(void *))dlsym(gcc_handle, "_Unwind_GetIP");
			if (!unw_backtrace || !unw_getip)
				unw_backtrace = NULL;
		}
	}
	if (!lu_handle && unwinder != HSP_UNW_GCC && unwinder != HSP_UNW_BACKTRACE &&
	    unwinder != HSP_UNW_FP) {
		/* libunwind gives every thread that unwinds a cache freed by a
		 * pthread key destructor at thread exit: once used, it must stay
		 * mapped for the life of the process, so it is made NODELETE
		 * (also when the program had it, which might dlclose it).  When
		 * the program does not have it, AUTO loads it: 10-15 times
		 * faster than libgcc's unwinder, which decodes every frame's FDE
		 * on every sample. */
		lu_handle = dlopen("libunwind.so.8", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
		if (!lu_handle)
			lu_handle = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
		if (lu_handle)
			lu_backtrace = (int (*)(void **, int))dlsym(lu_handle, "unw_backtrace");
	}
	if (unwinder == HSP_UNW_AUTO)
		unwinder = lu_backtrace ? HSP_UNW_LIBUNWIND : HSP_UNW_GCC;
	if (unwinder == HSP_UNW_LIBUNWIND && !lu_backtrace)
		unwinder = HSP_UNW_GCC;
	if (unwinder == HSP_UNW_GCC && !unw_backtrace)
		unwinder = HSP_UNW_BACKTRACE;
	cur_unwinder = unwinder;
	hsp_g.unwinder = unwinder;
	/* Warm the chosen unwinder's caches (FDE lookup, stack bounds). */
	stack_capture(pcs);
	return 0;
}

void stack_fini(void)
{
	for (unsigned i = 0; i < NCHUNKS; i++) {
		if (chunks[i])
			mem_unmap(chunks[i], CHUNK_IDS * sizeof(*chunks[i]));
		chunks[i] = NULL;
	}
	if (buckets)
		mem_unmap(buckets, (size_t)NBUCKETS * sizeof(*buckets));
	buckets = NULL;
	nstacks = 0;
	unw_backtrace = NULL;
	unw_getip = NULL;
	if (gcc_handle)
		dlclose(gcc_handle);
	gcc_handle = NULL;
	lu_backtrace = NULL;
	if (lu_handle)
		dlclose(lu_handle);
	lu_handle = NULL;
}

void stack_after_fork(void)
{
	pthread_mutex_init(&depot_lock, NULL);
}
