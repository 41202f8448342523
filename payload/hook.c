/* hook.c - the interposed allocator entry points: a countdown on the fast path, sampling on the slow path. */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hsp.h"

__thread struct hsp_tls hsp_tls __attribute__((tls_model("initial-exec")));

void *hk_real[HK_NSYMS];
bool hk_fwd[HK_NSYMS];
static bool hk_probed[HK_NSYMS];
static uintptr_t real_base[HK_NSYMS];
static bool real_in_libc[HK_NSYMS];

/*
 * Fast paths are written so that the compiler turns the call of the real
 * function into a tail jump: an unsampled call leaves no payload frame on
 * the stack while the allocator runs, so after the GOT is restored only a
 * few instructions of payload code can still be executing in any thread.
 * Slow paths (sampled allocations, frees of sampled pointers, dlopen) keep
 * a frame and are counted in hsp_g.inflight[], which unload waits on.
 */
#define REAL(sym, type) ((type)hk_real[sym])

typedef void *(*fn_p_s)(size_t);
typedef void *(*fn_p_ss)(size_t, size_t);
typedef void *(*fn_p_ps)(void *, size_t);
typedef void *(*fn_p_pss)(void *, size_t, size_t);
typedef void (*fn_v_p)(void *);
typedef void (*fn_v_ps)(void *, size_t);
typedef void (*fn_v_pss)(void *, size_t, size_t);
typedef int (*fn_i_pss)(void **, size_t, size_t);
typedef void *(*fn_p_snt)(size_t, const void *);
typedef void *(*fn_p_ssnt)(size_t, size_t, const void *);
typedef void (*fn_v_pnt)(void *, const void *);
typedef void (*fn_v_psnt)(void *, size_t, const void *);
typedef void *(*fn_p_si)(size_t, int);
typedef void *(*fn_p_psi)(void *, size_t, int);
typedef size_t (*fn_s_pssi)(void *, size_t, size_t, int);
typedef void (*fn_v_psi)(void *, size_t, int);
typedef void (*fn_v_pi)(void *, int);
typedef void *(*fn_dlopen)(const char *, int);
typedef int (*fn_dlclose)(void *);

/* std::nothrow: an empty object passed by reference, never read. */
static const char nothrow_obj;

/* ---- sampling decisions ------------------------------------------------- */

/* true when the countdown ran out: the allocation goes to the slow path. */
static inline bool cd_hit(size_t n)
{
	struct hsp_tls *t = &hsp_tls;
	int64_t c = (int64_t)((uint64_t)t->countdown - (uint64_t)n);
	t->countdown = c;
	return unlikely(c <= 0);
}

/*
 * The countdown of an n-byte allocation ran out.  Returns the rate to
 * record it with (the caller is then "inside": inflight counted, guard
 * set, to be ended with slow_end), or 0 to let it pass unrecorded.
 * Every path leaves a fresh countdown, so the bytes seen by this thread
 * stay a Poisson process whatever happens to this one allocation.
 */
static uint64_t slow_begin(size_t n)
{
	struct hsp_tls *t = &hsp_tls;
	uint64_t rg = LOAD(&hsp_g.rate_gen), rate = rg_rate(rg);

	if (unlikely(t->probe)) {
		/* hook_probe() is asking whether a real function calls us. */
		t->probe = 2;
		t->countdown = 0;
		return 0;
	}
	if (t->guard) {
		/* An allocation made by the payload itself (the unwinder,
		 * libc under a hook): straight to the real allocator. */
		t->countdown = sampler_draw(rate);
		return 0;
	}
	inflight_add(1);
	uint32_t st = LOAD(&hsp_g.state);
	if (st != HSP_STATE_SAMPLING) {
		/* Not "never": a thread must come back here soon after sampling
		 * (re)starts, to pick up the new generation. */
		t->countdown = sampler_draw(rate);
		inflight_add(-1);
		return 0;
	}
	if (t->gen != rg_gen(rg)) {
		/* The countdown was drawn for another rate or period (or never):
		 * decide this allocation on a fresh draw. */
		uint64_t c = (uint64_t)sampler_draw(rate);
		t->gen = rg_gen(rg);
		if (c > n) {
			t->countdown = (int64_t)(c - n);
			inflight_add(-1);
			return 0;
		}
	}
	t->countdown = sampler_draw(rate);
	t->guard = 1;
	return rate;
}

static void slow_end(void)
{
	hsp_tls.guard = 0;
	inflight_add(-1);
}

/* Entering only to look at the live table (a free of a maybe-sampled
 * pointer): false when nested inside the payload. */
static bool slow_enter(void)
{
	if (hsp_tls.guard)
		return false;
	inflight_add(1);
	hsp_tls.guard = 1;
	return true;
}

/* Only one slow path in COST_EVERY is timed (and counted COST_EVERY
 * times): a TSC read costs ~25 cycles, a tenth of a sample's cost. */
#define COST_EVERY 8
/* Timed slow paths a thread adds up before it adds them to the process's
 * total. */
#define COST_FLUSH 4

/* Starts timing a slow path: 0 when this one is not timed. */
static inline uint64_t cost_begin(void)
{
	return (++hsp_tls.cost_seq & (COST_EVERY - 1)) == 0 ? cost_now() : 0;
}

/* Ends it: adds a timed slow path to this thread's cost and, every
 * COST_FLUSH of them, to the process's (one shared cache line less
 * bouncing between threads per sample).  What is pending when a thread
 * ends is lost, and what was pending at a reset lands after it: status is
 * off by at most COST_FLUSH * COST_EVERY slow paths per thread. */
static inline void cost_end(uint64_t t0)
{
	struct hsp_tls *t = &hsp_tls;

	if (!t0)
		return;
	t->cost_pending += (cost_now() - t0) * COST_EVERY;
	if ((t->cost_seq & (COST_EVERY * COST_FLUSH - 1)) == 0) {
		ADD_RELAXED(&hsp_g.cost_ticks, t->cost_pending);
		t->cost_pending = 0;
	}
}

static void record(const void *p, size_t n, uint64_t rate)
{
	uintptr_t pcs[HSP_MAX_DEPTH];
	struct hsp_tls *t = &hsp_tls;

	if (!p)
		return;
	uint64_t t0 = cost_begin();
	int d = stack_capture(pcs);
	uint32_t sid = stack_intern(pcs, d);
	if (sid == STACK_NONE) {
		ADD_RELAXED(&hsp_g.dropped, 1);
		return;
	}
	if (!t->tid)
		t->tid = (int32_t)syscall(SYS_gettid);
	struct live_rec r = { n, rate, payload_coarse_ns(), sid, (uint32_t)t->tid };
	table_record(p, &r);
	cost_end(t0);
}

/* Removes p's record if it has one (call only inside). */
static inline void forget(const void *p)
{
	table_remove(p, NULL);
}

/* ---- C allocator ------------------------------------------------------ */

static __attribute__((noinline)) void *slow_malloc(size_t n)
{
	int e = errno;
	uint64_t rate = slow_begin(n);
	if (!rate)
		return REAL(HK_MALLOC, fn_p_s)(n);
	void *p = REAL(HK_MALLOC, fn_p_s)(n);
	e = p ? e : errno;
	record(p, n, rate);
	slow_end();
	errno = e;
	return p;
}

static void *hook_malloc(size_t n)
{
	if (likely(!cd_hit(n)))
		return REAL(HK_MALLOC, fn_p_s)(n);
	return slow_malloc(n);
}

static __attribute__((noinline)) void *slow_calloc(size_t nm, size_t sz, size_t n)
{
	int e = errno;
	uint64_t rate = slow_begin(n);
	if (!rate)
		return REAL(HK_CALLOC, fn_p_ss)(nm, sz);
	void *p = REAL(HK_CALLOC, fn_p_ss)(nm, sz);
	e = p ? e : errno;
	record(p, n, rate);
	slow_end();
	errno = e;
	return p;
}

static void *hook_calloc(size_t nm, size_t sz)
{
	size_t n;
	if (unlikely(__builtin_mul_overflow(nm, sz, &n)) || likely(!cd_hit(n)))
		return REAL(HK_CALLOC, fn_p_ss)(nm, sz);
	return slow_calloc(nm, sz, n);
}

/*
 * realloc = free(old) + malloc(n): the old record goes first (so a thread
 * that gets the old address back from malloc cannot have its record
 * removed by us), and comes back if the real realloc fails.
 */
static __attribute__((noinline)) void *slow_realloc(void *old, size_t n, bool hit, int sym,
						     size_t nm, size_t sz)
{
	int e = errno;
	struct live_rec prev;
	bool had = false;
	uint64_t rate = hit ? slow_begin(n) : 0;

	if (!rate && !slow_enter())
		goto pass;
	if (old)
		had = table_remove(old, &prev);
	void *p = sym == HK_REALLOC ? REAL(HK_REALLOC, fn_p_ps)(old, n)
				    : REAL(HK_REALLOCARRAY, fn_p_pss)(old, nm, sz);
	if (!p) {
		e = errno;
		if (had && n)
			table_reinsert(old, &prev);
	} else if (rate) {
		record(p, n, rate);
	}
	slow_end();
	errno = e;
	return p;
pass:
	if (sym == HK_REALLOC)
		return REAL(HK_REALLOC, fn_p_ps)(old, n);
	return REAL(HK_REALLOCARRAY, fn_p_pss)(old, nm, sz);
}

static void *hook_realloc(void *old, size_t n)
{
	bool hit = cd_hit(n);
	if (likely(!hit && !table_maybe(old)))
		return REAL(HK_REALLOC, fn_p_ps)(old, n);
	return slow_realloc(old, n, hit, HK_REALLOC, 0, 0);
}

static void *hook_reallocarray(void *old, size_t nm, size_t sz)
{
	size_t n;
	if (unlikely(__builtin_mul_overflow(nm, sz, &n)))
		return REAL(HK_REALLOCARRAY, fn_p_pss)(old, nm, sz);
	bool hit = cd_hit(n);
	if (likely(!hit && !table_maybe(old)))
		return REAL(HK_REALLOCARRAY, fn_p_pss)(old, nm, sz);
	return slow_realloc(old, n, hit, HK_REALLOCARRAY, nm, sz);
}

/* The record must go before the memory does: once freed, the address can
 * be handed out and sampled again by another thread. */
static __attribute__((noinline)) void slow_forget(const void *p)
{
	int e = errno;
	if (slow_enter()) {
		uint64_t t0 = cost_begin();
		forget(p);
		cost_end(t0);
		slow_end();
	}
	errno = e;
}

static void hook_free(void *p)
{
	if (unlikely(table_maybe(p)))
		slow_forget(p);
	return REAL(HK_FREE, fn_v_p)(p);
}

static void hook_free_sized(void *p, size_t n)
{
	if (unlikely(table_maybe(p)))
		slow_forget(p);
	return REAL(HK_FREE_SIZED, fn_v_ps)(p, n);
}

static void hook_free_aligned_sized(void *p, size_t al, size_t n)
{
	if (unlikely(table_maybe(p)))
		slow_forget(p);
	return REAL(HK_FREE_ALIGNED_SIZED, fn_v_pss)(p, al, n);
}

static __attribute__((noinline)) int slow_posix_memalign(void **pp, size_t al, size_t n)
{
	int e = errno;
	uint64_t rate = slow_begin(n);
	if (!rate)
		return REAL(HK_POSIX_MEMALIGN, fn_i_pss)(pp, al, n);
	int r = REAL(HK_POSIX_MEMALIGN, fn_i_pss)(pp, al, n);
	if (r == 0)
		record(*pp, n, rate);
	slow_end();
	errno = e;
	return r;
}

static int hook_posix_memalign(void **pp, size_t al, size_t n)
{
	if (likely(!cd_hit(n)))
		return REAL(HK_POSIX_MEMALIGN, fn_i_pss)(pp, al, n);
	return slow_posix_memalign(pp, al, n);
}

/* aligned_alloc and memalign share a signature: (alignment, size). */
static __attribute__((noinline)) void *slow_align(int sym, size_t al, size_t n)
{
	int e = errno;
	uint64_t rate = slow_begin(n);
	if (!rate)
		return REAL(sym, fn_p_ss)(al, n);
	void *p = REAL(sym, fn_p_ss)(al, n);
	e = p ? e : errno;
	record(p, n, rate);
	slow_end();
	errno = e;
	return p;
}

static void *hook_aligned_alloc(size_t al, size_t n)
{
	if (likely(!cd_hit(n)))
		return REAL(HK_ALIGNED_ALLOC, fn_p_ss)(al, n);
	return slow_align(HK_ALIGNED_ALLOC, al, n);
}

static void *hook_memalign(size_t al, size_t n)
{
	if (likely(!cd_hit(n)))
		return REAL(HK_MEMALIGN, fn_p_ss)(al, n);
	return slow_align(HK_MEMALIGN, al, n);
}

/* valloc and pvalloc: (size). */
static __attribute__((noinline)) void *slow_size(int sym, size_t n)
{
	int e = errno;
	uint64_t rate = slow_begin(n);
	if (!rate)
		return REAL(sym, fn_p_s)(n);
	void *p = REAL(sym, fn_p_s)(n);
	e = p ? e : errno;
	record(p, n, rate);
	slow_end();
	errno = e;
	return p;
}

static void *hook_valloc(size_t n)
{
	if (likely(!cd_hit(n)))
		return REAL(HK_VALLOC, fn_p_s)(n);
	return slow_size(HK_VALLOC, n);
}

static void *hook_pvalloc(size_t n)
{
	if (likely(!cd_hit(n)))
		return REAL(HK_PVALLOC, fn_p_s)(n);
	return slow_size(HK_PVALLOC, n);
}

/* ---- C++ operators ------------------------------------------------------ */

/*
 * A throwing operator new may unwind through our frame, and the payload is
 * C without landing pads: the slow path asks the nothrow variant (same
 * allocator, same new_handler loop) and only calls the throwing one, as a
 * tail call with nothing of ours left to undo, when that returned NULL.
 */
static __attribute__((noinline)) void *slow_new(int sym, int nt_sym, size_t n)
{
	int e = errno;
	fn_p_snt nt = REAL(nt_sym, fn_p_snt);
	uint64_t rate = nt ? slow_begin(n) : 0;
	if (!rate)
		return REAL(sym, fn_p_s)(n);
	void *p = nt(n, &nothrow_obj);
	record(p, n, rate);
	slow_end();
	errno = e;
	if (!p)
		return REAL(sym, fn_p_s)(n);
	return p;
}

static void *hook_new(size_t n)
{
	if (likely(!cd_hit(n)))
		return REAL(HK_NEW, fn_p_s)(n);
	return slow_new(HK_NEW, HK_NEW_NT, n);
}

static void *hook_new_a(size_t n)
{
	if (likely(!cd_hit(n)))
		return REAL(HK_NEW_A, fn_p_s)(n);
	return slow_new(HK_NEW_A, HK_NEW_A_NT, n);
}

static __attribute__((noinline)) void *slow_new_nt(int sym, size_t n, const void *nt)
{
	int e = errno;
	uint64_t rate = slow_begin(n);
	if (!rate)
		return REAL(sym, fn_p_snt)(n, nt);
	void *p = REAL(sym, fn_p_snt)(n, nt);
	record(p, n, rate);
	slow_end();
	errno = e;
	return p;
}

static void *hook_new_nt(size_t n, const void *nt)
{
	if (likely(!cd_hit(n)))
		return REAL(HK_NEW_NT, fn_p_snt)(n, nt);
	return slow_new_nt(HK_NEW_NT, n, nt);
}

static void *hook_new_a_nt(size_t n, const void *nt)
{
	if (likely(!cd_hit(n)))
		return REAL(HK_NEW_A_NT, fn_p_snt)(n, nt);
	return slow_new_nt(HK_NEW_A_NT, n, nt);
}

static __attribute__((noinline)) void *slow_new_al(int sym, int nt_sym, size_t n, size_t al)
{
	int e = errno;
	fn_p_ssnt nt = REAL(nt_sym, fn_p_ssnt);
	uint64_t rate = nt ? slow_begin(n) : 0;
	if (!rate)
		return REAL(sym, fn_p_ss)(n, al);
	void *p = nt(n, al, &nothrow_obj);
	record(p, n, rate);
	slow_end();
	errno = e;
	if (!p)
		return REAL(sym, fn_p_ss)(n, al);
	return p;
}

static void *hook_new_al(size_t n, size_t al)
{
	if (likely(!cd_hit(n)))
		return REAL(HK_NEW_AL, fn_p_ss)(n, al);
	return slow_new_al(HK_NEW_AL, HK_NEW_AL_NT, n, al);
}

static void *hook_new_a_al(size_t n, size_t al)
{
	if (likely(!cd_hit(n)))
		return REAL(HK_NEW_A_AL, fn_p_ss)(n, al);
	return slow_new_al(HK_NEW_A_AL, HK_NEW_A_AL_NT, n, al);
}

static __attribute__((noinline)) void *slow_new_al_nt(int sym, size_t n, size_t al, const void *nt)
{
	int e = errno;
	uint64_t rate = slow_begin(n);
	if (!rate)
		return REAL(sym, fn_p_ssnt)(n, al, nt);
	void *p = REAL(sym, fn_p_ssnt)(n, al, nt);
	record(p, n, rate);
	slow_end();
	errno = e;
	return p;
}

static void *hook_new_al_nt(size_t n, size_t al, const void *nt)
{
	if (likely(!cd_hit(n)))
		return REAL(HK_NEW_AL_NT, fn_p_ssnt)(n, al, nt);
	return slow_new_al_nt(HK_NEW_AL_NT, n, al, nt);
}

static void *hook_new_a_al_nt(size_t n, size_t al, const void *nt)
{
	if (likely(!cd_hit(n)))
		return REAL(HK_NEW_A_AL_NT, fn_p_ssnt)(n, al, nt);
	return slow_new_al_nt(HK_NEW_A_AL_NT, n, al, nt);
}

#define DELETE1(name, sym)                                   \
	static void name(void *p)                            \
	{                                                    \
		if (unlikely(table_maybe(p)))                \
			slow_forget(p);                      \
		return REAL(sym, fn_v_p)(p);                 \
	}
#define DELETE2(name, sym, t2, fnt)                          \
	static void name(void *p, t2 a)                      \
	{                                                    \
		if (unlikely(table_maybe(p)))                \
			slow_forget(p);                      \
		return REAL(sym, fnt)(p, a);                 \
	}
#define DELETE3(name, sym, t2, t3, fnt)                      \
	static void name(void *p, t2 a, t3 b)                \
	{                                                    \
		if (unlikely(table_maybe(p)))                \
			slow_forget(p);                      \
		return REAL(sym, fnt)(p, a, b);              \
	}

DELETE1(hook_del, HK_DEL)
DELETE1(hook_del_a, HK_DEL_A)
DELETE2(hook_del_sz, HK_DEL_SZ, size_t, fn_v_ps)
DELETE2(hook_del_a_sz, HK_DEL_A_SZ, size_t, fn_v_ps)
DELETE2(hook_del_nt, HK_DEL_NT, const void *, fn_v_pnt)
DELETE2(hook_del_a_nt, HK_DEL_A_NT, const void *, fn_v_pnt)
DELETE2(hook_del_al, HK_DEL_AL, size_t, fn_v_ps)
DELETE2(hook_del_a_al, HK_DEL_A_AL, size_t, fn_v_ps)
DELETE3(hook_del_sz_al, HK_DEL_SZ_AL, size_t, size_t, fn_v_pss)
DELETE3(hook_del_a_sz_al, HK_DEL_A_SZ_AL, size_t, size_t, fn_v_pss)
DELETE3(hook_del_al_nt, HK_DEL_AL_NT, size_t, const void *, fn_v_psnt)
DELETE3(hook_del_a_al_nt, HK_DEL_A_AL_NT, size_t, const void *, fn_v_psnt)

/* ---- jemalloc's non-standard API ---------------------------------------- */

static __attribute__((noinline)) void *slow_mallocx(size_t n, int flags)
{
	int e = errno;
	uint64_t rate = slow_begin(n);
	if (!rate)
		return REAL(HK_MALLOCX, fn_p_si)(n, flags);
	void *p = REAL(HK_MALLOCX, fn_p_si)(n, flags);
	record(p, n, rate);
	slow_end();
	errno = e;
	return p;
}

static void *hook_mallocx(size_t n, int flags)
{
	if (likely(!cd_hit(n)))
		return REAL(HK_MALLOCX, fn_p_si)(n, flags);
	return slow_mallocx(n, flags);
}

static __attribute__((noinline)) void *slow_rallocx(void *old, size_t n, int flags, bool hit)
{
	int e = errno;
	struct live_rec prev;
	bool had = false;
	uint64_t rate = hit ? slow_begin(n) : 0;

	if (!rate && !slow_enter())
		return REAL(HK_RALLOCX, fn_p_psi)(old, n, flags);
	had = table_remove(old, &prev);
	void *p = REAL(HK_RALLOCX, fn_p_psi)(old, n, flags);
	if (!p && had)
		table_reinsert(old, &prev);
	else if (p && rate)
		record(p, n, rate);
	slow_end();
	errno = e;
	return p;
}

static void *hook_rallocx(void *old, size_t n, int flags)
{
	bool hit = cd_hit(n);
	if (likely(!hit && !table_maybe(old)))
		return REAL(HK_RALLOCX, fn_p_psi)(old, n, flags);
	return slow_rallocx(old, n, flags, hit);
}

/* xallocx resizes in place: a success is free(old size) + alloc(new size)
 * at the same address; a failure leaves the object as it was. */
static __attribute__((noinline)) size_t slow_xallocx(void *p, size_t n, size_t extra, int flags,
						     bool hit)
{
	int e = errno;
	struct live_rec prev;
	uint64_t rate = hit ? slow_begin(n) : 0;

	if (!rate && !slow_enter())
		return REAL(HK_XALLOCX, fn_s_pssi)(p, n, extra, flags);
	bool had = table_remove(p, &prev);
	size_t r = REAL(HK_XALLOCX, fn_s_pssi)(p, n, extra, flags);
	if (r < n) {
		if (had)
			table_reinsert(p, &prev);
	} else if (rate) {
		record(p, n, rate);
	}
	slow_end();
	errno = e;
	return r;
}

static size_t hook_xallocx(void *p, size_t n, size_t extra, int flags)
{
	bool hit = cd_hit(n);
	if (likely(!hit && !table_maybe(p)))
		return REAL(HK_XALLOCX, fn_s_pssi)(p, n, extra, flags);
	return slow_xallocx(p, n, extra, flags, hit);
}

static void hook_sdallocx(void *p, size_t n, int flags)
{
	if (unlikely(table_maybe(p)))
		slow_forget(p);
	return REAL(HK_SDALLOCX, fn_v_psi)(p, n, flags);
}

static void hook_dallocx(void *p, int flags)
{
	if (unlikely(table_maybe(p)))
		slow_forget(p);
	return REAL(HK_DALLOCX, fn_v_pi)(p, flags);
}

/* ---- the loader --------------------------------------------------------- */

/* Modules loaded later get patched once the real dlopen has returned and
 * released the loader lock. */
static void *hook_dlopen(const char *file, int mode)
{
	inflight_add(1);
	void *h = REAL(HK_DLOPEN, fn_dlopen)(file, mode);
	if (h) {
		uint32_t g = hsp_tls.guard;
		hsp_tls.guard = 1;
		got_patch_all();
		hsp_tls.guard = g;
	}
	inflight_add(-1);
	return h;
}

static int hook_dlclose(void *h)
{
	inflight_add(1);
	int r = REAL(HK_DLCLOSE, fn_dlclose)(h);
	/* Forget the records of modules that are gone. */
	if (got_modules_changed()) {
		uint32_t g = hsp_tls.guard;
		hsp_tls.guard = 1;
		got_patch_all();
		hsp_tls.guard = g;
	}
	inflight_add(-1);
	return r;
}

/* ---- the table ---------------------------------------------------------- */

/*
 * The hooks' entry addresses are filled in at run time, never by a
 * relocation: the dynamic linker would otherwise compute each one while
 * loading us and could leave it in a dead stack frame of the loading
 * thread, where the unload scan (payload.c) would take it for a copy of a
 * hook's address kept by the program.
 */
#define HK_LIST(X) \
	X(HK_MALLOC, "malloc", hook_malloc, HKL_C) \
	X(HK_CALLOC, "calloc", hook_calloc, HKL_C) \
	X(HK_REALLOC, "realloc", hook_realloc, HKL_C) \
	X(HK_REALLOCARRAY, "reallocarray", hook_reallocarray, HKL_C) \
	X(HK_FREE, "free", hook_free, HKL_C) \
	X(HK_POSIX_MEMALIGN, "posix_memalign", hook_posix_memalign, HKL_C) \
	X(HK_ALIGNED_ALLOC, "aligned_alloc", hook_aligned_alloc, HKL_C) \
	X(HK_MEMALIGN, "memalign", hook_memalign, HKL_C) \
	X(HK_VALLOC, "valloc", hook_valloc, HKL_C) \
	X(HK_PVALLOC, "pvalloc", hook_pvalloc, HKL_C) \
	X(HK_FREE_SIZED, "free_sized", hook_free_sized, HKL_C) \
	X(HK_FREE_ALIGNED_SIZED, "free_aligned_sized", hook_free_aligned_sized, HKL_C) \
	X(HK_NEW, "_Znwm", hook_new, HKL_CXX) \
	X(HK_NEW_A, "_Znam", hook_new_a, HKL_CXX) \
	X(HK_NEW_NT, "_ZnwmRKSt9nothrow_t", hook_new_nt, HKL_CXX) \
	X(HK_NEW_A_NT, "_ZnamRKSt9nothrow_t", hook_new_a_nt, HKL_CXX) \
	X(HK_NEW_AL, "_ZnwmSt11align_val_t", hook_new_al, HKL_CXX) \
	X(HK_NEW_A_AL, "_ZnamSt11align_val_t", hook_new_a_al, HKL_CXX) \
	X(HK_NEW_AL_NT, "_ZnwmSt11align_val_tRKSt9nothrow_t", hook_new_al_nt, HKL_CXX) \
	X(HK_NEW_A_AL_NT, "_ZnamSt11align_val_tRKSt9nothrow_t", hook_new_a_al_nt, HKL_CXX) \
	X(HK_DEL, "_ZdlPv", hook_del, HKL_CXX) \
	X(HK_DEL_A, "_ZdaPv", hook_del_a, HKL_CXX) \
	X(HK_DEL_SZ, "_ZdlPvm", hook_del_sz, HKL_CXX) \
	X(HK_DEL_A_SZ, "_ZdaPvm", hook_del_a_sz, HKL_CXX) \
	X(HK_DEL_NT, "_ZdlPvRKSt9nothrow_t", hook_del_nt, HKL_CXX) \
	X(HK_DEL_A_NT, "_ZdaPvRKSt9nothrow_t", hook_del_a_nt, HKL_CXX) \
	X(HK_DEL_AL, "_ZdlPvSt11align_val_t", hook_del_al, HKL_CXX) \
	X(HK_DEL_A_AL, "_ZdaPvSt11align_val_t", hook_del_a_al, HKL_CXX) \
	X(HK_DEL_SZ_AL, "_ZdlPvmSt11align_val_t", hook_del_sz_al, HKL_CXX) \
	X(HK_DEL_A_SZ_AL, "_ZdaPvmSt11align_val_t", hook_del_a_sz_al, HKL_CXX) \
	X(HK_DEL_AL_NT, "_ZdlPvSt11align_val_tRKSt9nothrow_t", hook_del_al_nt, HKL_CXX) \
	X(HK_DEL_A_AL_NT, "_ZdaPvSt11align_val_tRKSt9nothrow_t", hook_del_a_al_nt, HKL_CXX) \
	X(HK_MALLOCX, "mallocx", hook_mallocx, HKL_JE) \
	X(HK_RALLOCX, "rallocx", hook_rallocx, HKL_JE) \
	X(HK_XALLOCX, "xallocx", hook_xallocx, HKL_JE) \
	X(HK_SDALLOCX, "sdallocx", hook_sdallocx, HKL_JE) \
	X(HK_DALLOCX, "dallocx", hook_dallocx, HKL_JE) \
	X(HK_DLOPEN, "dlopen", hook_dlopen, HKL_DL) \
	X(HK_DLCLOSE, "dlclose", hook_dlclose, HKL_DL)

#define HK_DEF(sym, name, fn, layer) [sym] = { name, NULL, layer },
struct hk_def hk_defs[HK_NSYMS] = { HK_LIST(HK_DEF) };

void hook_fill(void)
{
	scrub_note();
#define HK_FILL(sym, name, fn, layer) hk_defs[sym].hook = (void *)fn;
	HK_LIST(HK_FILL)
}

bool hook_is_entry(uintptr_t v)
{
	for (int i = 0; i < HK_NSYMS; i++)
		if (v == (uintptr_t)hk_defs[i].hook)
			return true;
	return false;
}

/* ---- finding the real functions ----------------------------------------- */

struct resolve {
	int sym;
	uintptr_t addr, base;
	bool ifunc, libc;
};

static int resolve_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct resolve *r = arg;
	bool ifunc, dummy;

	if (info->dlpi_addr == hsp_g.self_base ||
	    (info->dlpi_name && !strncmp(info->dlpi_name, "linux-vdso", 10)))
		return 0;
	uintptr_t a = elf_lookup(info, hk_defs[r->sym].name, &ifunc);
	if (!a)
		return 0;
	r->addr = a;
	r->base = info->dlpi_addr;
	r->ifunc = ifunc;
	r->libc = elf_lookup(info, "__libc_start_main", &dummy) != 0;
	return 1;
}

/*
 * The real function is the first *definition* in load order, as the
 * dynamic linker binds a PLT slot.  dlsym(RTLD_DEFAULT) is not used first:
 * in a non-PIE program that takes &malloc, it returns the program's
 * canonical PLT stub, which jumps through the very slot we patch.
 */
int hook_resolve(void)
{
	int n = 0;

	for (int i = 0; i < HK_NSYMS; i++) {
		if (hk_real[i]) {
			n++;
			continue;
		}
		struct resolve r = { .sym = i };
		dl_iterate_phdr(resolve_cb, &r);
		if (!r.addr)
			continue;
		if (r.ifunc) {
			/* The resolver's choice: only the loader knows it. */
			r.addr = (uintptr_t)dlsym(RTLD_DEFAULT, hk_defs[i].name);
			if (!r.addr)
				continue;
		}
		real_base[i] = r.base;
		real_in_libc[i] = r.libc;
		STORE(&hk_real[i], (void *)r.addr);
		n++;
	}
	return n;
}

uintptr_t hook_impl_base(enum hk_sym sym, bool *is_libc)
{
	*is_libc = real_in_libc[sym];
	return hk_real[sym] ? real_base[sym] : 0;
}

/* ---- forwarders ------------------------------------------------------------ */

/*
 * Some real entry points are thin wrappers that call another entry point
 * through their own module's PLT, often as a tail call: glibc's
 * reallocarray jumps to realloc, libstdc++'s operator new[] to operator
 * new, the nothrow forms call the throwing ones.  Hooking both would count
 * such an allocation twice, and a tail call leaves no frame to tell.  So
 * each allocating entry point is called once, with hooks in and this
 * thread in probe mode: if it reaches any hook, it is a forwarder, and its
 * own slots are put back (the hook it reaches does the accounting, with
 * the caller's stack).  Only allocation-only entry points are probed: the
 * ones that also free (realloc, rallocx, xallocx) always stay hooked.
 */

struct dealloc_find {
	uintptr_t base;
	const char *name;
	uintptr_t addr;
};

static int dealloc_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct dealloc_find *d = arg;
	bool ifunc;

	if (info->dlpi_addr != d->base)
		return 0;
	d->addr = elf_lookup(info, d->name, &ifunc);
	if (ifunc)
		d->addr = 0;
	return 1;
}

/* The deallocator `name` defined next to the real `sym` (so a probe block
 * goes back to the allocator it came from), or NULL. */
static void *dealloc_for(int sym, const char *name)
{
	struct dealloc_find d = { real_base[sym], name, 0 };
	dl_iterate_phdr(dealloc_cb, &d);
	return (void *)d.addr;
}

static void *probe_one(int sym, int *dealloc_kind)
{
	void *p = NULL, *f = hk_real[sym];

	*dealloc_kind = 0; /* free(p) */
	switch (sym) {
	case HK_CALLOC: return ((fn_p_ss)f)(1, 16);
	case HK_REALLOCARRAY: return ((fn_p_pss)f)(NULL, 1, 16);
	case HK_POSIX_MEMALIGN: return ((fn_i_pss)f)(&p, 64, 16) ? NULL : p;
	case HK_ALIGNED_ALLOC: return ((fn_p_ss)f)(64, 64);
	case HK_MEMALIGN: return ((fn_p_ss)f)(64, 16);
	case HK_VALLOC: return ((fn_p_s)f)(16);
	case HK_PVALLOC: return ((fn_p_s)f)(16);
	case HK_MALLOCX: *dealloc_kind = 5; return ((fn_p_si)f)(16, 0);
	case HK_NEW: case HK_NEW_NT: *dealloc_kind = 1; break;
	case HK_NEW_A: case HK_NEW_A_NT: *dealloc_kind = 2; break;
	case HK_NEW_AL: case HK_NEW_AL_NT: *dealloc_kind = 3; break;
	case HK_NEW_A_AL: case HK_NEW_A_AL_NT: *dealloc_kind = 4; break;
	default: *dealloc_kind = -1; return NULL;
	}
	switch (sym) {
	case HK_NEW: case HK_NEW_A: return ((fn_p_s)f)(16);
	case HK_NEW_NT: case HK_NEW_A_NT: return ((fn_p_snt)f)(16, &nothrow_obj);
	case HK_NEW_AL: case HK_NEW_A_AL: return ((fn_p_ss)f)(64, 64);
	default: return ((fn_p_ssnt)f)(64, 64, &nothrow_obj);
	}
}

bool hook_probe(void)
{
	static const char *const dealloc_names[] = {
		"free", "_ZdlPv", "_ZdaPv", "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t", "dallocx",
	};
	struct hsp_tls *t = &hsp_tls;
	bool any = false;

	for (int sym = 0; sym < HK_NSYMS; sym++) {
		int kind;
		if (!hk_real[sym] || hk_probed[sym])
			continue;
		hk_probed[sym] = true;
		if (sym == HK_MALLOC || sym == HK_REALLOC || sym == HK_RALLOCX || sym == HK_XALLOCX ||
		    hk_defs[sym].layer == HKL_DL)
			continue;
		/* An allocation that a pass-through could not tell from a
		 * forwarded one: the countdown forces any hook it reaches into
		 * slow_begin, which notes the visit and passes it on. */
		t->countdown = 0;
		t->probe = 1;
		void *p = probe_one(sym, &kind);
		bool hit = t->probe == 2;
		t->probe = 0;
		t->countdown = 0;
		if (kind < 0)
			continue;
		if (p) {
			/* A forwarded allocation came from whatever the program's
			 * own deallocator matches; a direct one from its module. */
			static const int global[] = { HK_FREE, HK_DEL, HK_DEL_A, HK_DEL_AL, HK_DEL_A_AL, HK_DALLOCX };
			void *d = hit ? hk_real[global[kind]] : dealloc_for(sym, dealloc_names[kind]);
			if (d && kind == 3)
				((fn_v_ps)d)(p, 64);
			else if (d && kind == 4)
				((fn_v_ps)d)(p, 64);
			else if (d && kind == 5)
				((fn_v_pi)d)(p, 0);
			else if (d)
				((fn_v_p)d)(p);
			/* else: a 16-byte probe block is left to its allocator */
		}
		if (hit) {
			hk_fwd[sym] = true;
			any = true;
		}
	}
	return any;
}
