/* hsp.h - internal interfaces between the payload's files (never installed, never used by src/). */
#ifndef HEAPSNAP_PAYLOAD_HSP_H
#define HEAPSNAP_PAYLOAD_HSP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "abi.h"

#define HSP_EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define LOAD_RELAXED(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define STORE_RELAXED(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST)
#define ADD_RELAXED(p, v) __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)

/*
 * Per-thread state: initial-exec TLS, because a dlopened library only gets
 * glibc's small static-TLS surplus, and global-dynamic TLS would call malloc
 * on first touch from inside a hook.  Keep it to these few words.
 */
struct hsp_tls {
	int64_t countdown;      /* bytes until the next sample; <= 0: slow path */
	uint32_t gen;           /* rate generation the countdown was drawn under */
	uint32_t guard;         /* nonzero: inside the payload, pass everything through */
	int32_t tid;            /* cached gettid(), 0 unknown */
	uint32_t probe;         /* hook_probe(): 1 probing, 2 a hook was reached */
	uintptr_t stack_hi;     /* top of this thread's stack (frame-pointer walk only) */
	uintptr_t scrub_lo;     /* deepest stack pointer of code holding hook addresses, 0 none */
	uint64_t rng;           /* this thread's sampler state, 0 until the first draw */
	uint32_t cost_seq;      /* counts this thread's slow paths: one in COST_EVERY is timed */
	uint64_t cost_pending;  /* timed cost not yet in hsp_g.cost_ticks */
};
extern __thread struct hsp_tls hsp_tls __attribute__((tls_model("initial-exec")));

/*
 * Stack hygiene.  The unload scan (payload.c) refuses to unload while any
 * writable memory holds a hook's entry address, dead stack included (a
 * thread's cached stack, the part below a stack pointer): our own code
 * must not leave them there.  Code that holds hook addresses calls
 * scrub_note(); the outermost caller then calls payload_scrub(), which
 * zeroes the stack from its frame down to the deepest point noted.
 */
static inline __attribute__((always_inline)) void scrub_note(void)
{
	uintptr_t sp;
#if defined(__x86_64__)
	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
#elif defined(__aarch64__)
	__asm__ volatile("mov %0, sp" : "=r"(sp));
#else
	sp = (uintptr_t)__builtin_frame_address(0) - 1024;
#endif
	if (!hsp_tls.scrub_lo || sp < hsp_tls.scrub_lo)
		hsp_tls.scrub_lo = sp;
}
void payload_scrub(void);

/* Largest rate: rate and generation share one word (payload.c). */
#define HSP_RATE_MAX (((uint64_t)1 << 40) - 1)

/* ---- exported entry points (payload.c; names in abi.h) ------------------ */
HSP_EXPORT long hsp_start(long rate, long flags);
HSP_EXPORT long hsp_stop(void);
HSP_EXPORT long hsp_status(void);
HSP_EXPORT long hsp_prepare_unload(void);
HSP_EXPORT long hsp_alloc_stats(long op);   /* stats.c */
HSP_EXPORT long hsp_jemalloc(long op, long arg); /* stats.c */
HSP_EXPORT long hsp_gperf(long op, long arg);    /* stats.c */

/* ---- global state (payload.c) ------------------------------------------- */
struct hsp_global {
	/* Read by every sampled allocation in every thread, rarely written. */
	uint32_t state;             /* enum hsp_state, read by hooks (relaxed) */
	uint64_t rate_gen;          /* (generation << 40) | rate */
	bool cost_tsc;              /* cost_now() reads the TSC (the kernel's clocksource) */
	uintptr_t self_lo, self_hi; /* the payload's own mapped range */
	/* Threads inside a slow path or a dl* hook, counted in one of
	 * INFLIGHT_SLOTS counters picked by thread (inflight_add): threads
	 * sampling at once do not pass one cache line back and forth. */
	struct { uint64_t n; } __attribute__((aligned(64))) inflight[16];
	/* Written by slow paths, less often.  cost_ticks: cost_now() units
	 * spent recording, estimated from timed samples, added in batches
	 * (hook.c). */
	uint64_t cost_ticks __attribute__((aligned(64)));
	uint64_t dropped;
	/* The rest: control paths. */
	uint32_t unwinder __attribute__((aligned(64))); /* enum hsp_unwinder */
	uint64_t load_ns, since_ns;
	uint64_t sampled_ns;        /* accumulated while SAMPLING, up to run_start_ns */
	uint64_t run_start_ns;      /* when SAMPLING last began, 0 when not sampling */
	uint64_t cost_tsc0, cost_mono0; /* a TSC and CLOCK_MONOTONIC pair, for the conversion */
	uintptr_t self_base;        /* its dlpi_addr */
	pthread_mutex_t state_lock; /* start/stop/unload transitions (never taken by hooks) */
};
extern struct hsp_global hsp_g;

#define INFLIGHT_SLOTS (sizeof(hsp_g.inflight) / sizeof(hsp_g.inflight[0]))

/* This thread's inflight counter: from the address of its TLS block. */
static inline void inflight_add(int64_t d)
{
	uintptr_t a = (uintptr_t)&hsp_tls;
	size_t i = (size_t)(((a >> 6) * 0x9e3779b97f4a7c15ull) >> 60) % INFLIGHT_SLOTS;
	ADD(&hsp_g.inflight[i].n, (uint64_t)d);
}
/* Threads inside, summed (0: none). */
uint64_t inflight_total(void);

static inline uint64_t rg_rate(uint64_t rg) { return rg & HSP_RATE_MAX; }
static inline uint32_t rg_gen(uint64_t rg) { return (uint32_t)(rg >> 40); }

uint64_t payload_now_ns(void);
uint64_t payload_mono_ns(void);

/* A cheap timestamp for the sampler's cost accounting: the TSC (~7 ns)
 * when the kernel itself trusts it, else CLOCK_MONOTONIC in ns. */
static inline uint64_t cost_now(void)
{
#if defined(__x86_64__)
	if (likely(hsp_g.cost_tsc)) {
		uint32_t lo, hi;
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		return ((uint64_t)hi << 32) | lo;
	}
#endif
	return payload_mono_ns();
}
/* The same clock at the kernel tick's resolution (a few ms), for stamping
 * samples: a quarter of the cost. */
uint64_t payload_coarse_ns(void);
/* Sets the rate (1..HSP_RATE_MAX) and starts a new generation: every thread
 * redraws its countdown at its next slow path. */
void payload_set_rate(uint64_t rate);
/* State transitions used by the control thread; 0 or -errno. */
int payload_resume(uint64_t rate);
int payload_pause(void);
void payload_reset(void);
void payload_fill_status(struct hsp_status *st);
/* Stops sampling, restores every slot, drains; 0 or -errno (-EBUSY: the
 * payload must stay loaded, inert). */
int payload_unhook_and_drain(void);

/* ---- memory (arena.c) ------------------------------------------------- */
/* Anonymous private mappings, counted; never the hooked allocator. */
void *mem_map(size_t len);
void mem_unmap(void *p, size_t len);
uint64_t mem_total(void);
/* Zeroed bump allocation from 1 MiB chunks, freed all at once. */
void *arena_alloc(size_t len);
void arena_free_all(void);
/* In a fork child: locks possibly held by vanished threads start afresh. */
void arena_after_fork(void);
extern uint64_t mem_cap;

/* ---- sampling (sampler.c) --------------------------------------------- */
/* A fresh countdown: ceil(Exp(rate)), 0 for rate <= 1. */
int64_t sampler_draw(uint64_t rate);
/* ln(x) for x > 0 without libm. */
double sampler_log(double x);
/* 1/p, p = 1 - exp(-size/rate): what one sample of `size` bytes stands for
 * (1 at rate <= 1 and for size 0, as the client's prof_sample_prob). */
double sampler_weight(uint64_t size, uint64_t rate);

/* ---- stacks (stack.c) ----------------------------------------------- */
#define STACK_NONE UINT32_MAX
#define STACK_MAX_IDS (1u << 22)   /* the depot's capacity: ids are 0 .. this - 1 */
int stack_init(unsigned unwinder);
void stack_fini(void);
/* Fills pcs with return addresses, leaf first, the payload's frames
 * dropped; returns the depth (<= HSP_MAX_DEPTH). */
int stack_capture(uintptr_t *pcs);
/* Deduplicates a stack into the depot; returns its id or STACK_NONE. */
uint32_t stack_intern(const uintptr_t *pcs, int depth);
uint32_t stack_count(void);
/* Stack id -> depth and pcs (valid until stack_fini). */
const uintptr_t *stack_get(uint32_t id, uint32_t *depth);
void stack_after_fork(void);
/* Measurement helper: capture with a given unwinder. */
int stack_capture_with(unsigned unwinder, uintptr_t *pcs);

/* ---- live and cumulative tables (table.c) --------------------------- */
struct live_rec {
	uint64_t size;
	uint64_t rate;
	uint64_t time_ns;
	uint32_t stack;
	uint32_t tid;
};
/* The live table; table.c explains the probing rules. */
#define LT_EMPTY 0
#define LT_TOMB 1
struct ltab {
	/* Read by every free() in every thread: nothing here changes while
	 * the table is current. */
	size_t cap, mask;
	unsigned shift;
	uintptr_t *keys;
	/* One bit per filter slot: set while a live key hashes to the slot
	 * (32-64 slots per live key, 8192 at least: 1 KiB of bits): a
	 * free() of an unsampled pointer usually stops at this small array,
	 * which stays in L1, instead of missing on `keys`.  Live keys only:
	 * malloc hands freed addresses out again at once, so bits
	 * remembering every key ever sampled would keep sending their frees
	 * on to `keys`.  The counts behind the bits (`fcount`) are only
	 * touched under the lock. */
	uint8_t *fbits;
	size_t fmask;           /* filter slots - 1 */
	/* Written under the lock, on their own cache line so the writes do
	 * not evict the line above from the other threads' caches. */
	size_t used __attribute__((aligned(64))); /* live + tombstones */
	size_t live;
	size_t maplen;          /* the probed mapping (this header, keys, fbits) */
	size_t lock_len;        /* the mapping of recs and fcount, 0 once retired */
	uint64_t retired_ns;
	struct ltab *next;      /* retired list */
	struct live_rec *recs;
	uint8_t *fcount;        /* live keys per filter slot, 255 sticks (after recs) */
};
/* How long a retired table's probed part is kept before it may be reused
 * for a new table of its size, and before an unused one is unmapped (a
 * free() may still be probing it: reused, it reads valid memory). */
#define LT_REUSE_NS 2000000000ull
#define LT_UNMAP_NS 60000000000ull
/* The current live table, published with release stores, alone on its
 * cache line: every free() in every thread reads it. */
struct ltab_ptr {
	struct ltab *p;
} __attribute__((aligned(64)));
extern struct ltab_ptr table_cur;

static inline size_t table_hash(uintptr_t k, unsigned shift)
{
	return (size_t)(((k >> 4) * 0x9e3779b97f4a7c15ull) >> shift);
}

static inline size_t table_filter_slot(const struct ltab *t, uintptr_t k)
{
	return (size_t)(((k >> 4) * 0xc2b2ae3d27d4eb4full) >> 17) & t->fmask;
}

/* Lock-free: might p be a sampled live pointer?  A few ns when not: every
 * free() runs this. */
static inline bool table_maybe(const void *p)
{
	struct ltab *t = LOAD(&table_cur.p);
	uintptr_t k = (uintptr_t)p;

	if (!t || k <= LT_TOMB)
		return false;
	size_t f = table_filter_slot(t, k);
	if (!((LOAD_RELAXED(&t->fbits[f >> 3]) >> (f & 7)) & 1))
		return false;
	size_t i = table_hash(k, t->shift);
	for (size_t n = 0; n <= t->mask; n++) {
		uintptr_t s = LOAD_RELAXED(&t->keys[i]);
		if (s == k)
			return true;
		if (s == LT_EMPTY)
			return false;
		i = (i + 1) & t->mask;
	}
	return false;
}

int table_init(void);
void table_fini(void);
/* Under the table lock: record a sampled allocation, add it to the totals. */
void table_record(const void *p, const struct live_rec *r);
/* Removes p's record if any; copies it to *out when out != NULL.  true if found. */
bool table_remove(const void *p, struct live_rec *out);
/* Re-inserts a record removed by a failed realloc. */
void table_reinsert(const void *p, const struct live_rec *r);
void table_reset_totals(void);
/* Totals for status. */
void table_counts(uint64_t *live, uint64_t *live_bytes, uint64_t *alloc, uint64_t *alloc_bytes);
/* Snapshot copies, in chunks under the lock: return a mem_map'd array and
 * its element count (caller mem_unmaps n * sizeof, or *len bytes). */
struct hsp_live_rec *table_copy_live(size_t *n, size_t *len);
struct hsp_alloc_rec *table_copy_alloc(size_t *n, size_t *len);
/* cost_now() units the last snapshot copy held the table lock at most. */
uint64_t table_snap_hold(void);
/* Frees live tables retired more than `age_ns` ago. */
void table_reap(uint64_t age_ns);
/* In a fork child: forget everything without touching locks. */
void table_forget(void);

/* ---- hooks (hook.c) ------------------------------------------------- */
enum hk_sym {
	HK_MALLOC, HK_CALLOC, HK_REALLOC, HK_REALLOCARRAY, HK_FREE,
	HK_POSIX_MEMALIGN, HK_ALIGNED_ALLOC, HK_MEMALIGN, HK_VALLOC, HK_PVALLOC,
	HK_FREE_SIZED, HK_FREE_ALIGNED_SIZED,
	HK_NEW, HK_NEW_A, HK_NEW_NT, HK_NEW_A_NT, HK_NEW_AL, HK_NEW_A_AL,
	HK_NEW_AL_NT, HK_NEW_A_AL_NT,
	HK_DEL, HK_DEL_A, HK_DEL_SZ, HK_DEL_A_SZ, HK_DEL_NT, HK_DEL_A_NT,
	HK_DEL_AL, HK_DEL_A_AL, HK_DEL_SZ_AL, HK_DEL_A_SZ_AL, HK_DEL_AL_NT,
	HK_DEL_A_AL_NT,
	HK_MALLOCX, HK_RALLOCX, HK_XALLOCX, HK_SDALLOCX, HK_DALLOCX,
	HK_DLOPEN, HK_DLCLOSE,
	HK_NSYMS
};
/* Layers: a module that implements the C++ operators (libstdc++) calls
 * malloc underneath them; patching its malloc slots would count twice. */
enum hk_layer { HKL_C = 1, HKL_CXX = 2, HKL_JE = 3, HKL_DL = 4 };
struct hk_def {
	const char *name;
	void *hook;
	uint8_t layer;
};
extern struct hk_def hk_defs[HK_NSYMS];
/* Fills hk_defs[].hook (before anything reads it). */
void hook_fill(void);
extern void *hk_real[HK_NSYMS];
/* Real functions that call another hooked entry point themselves: their
 * slots stay unpatched (hook.c explains). */
extern bool hk_fwd[HK_NSYMS];
/* Probes the real functions resolved since the last call (hooks must be
 * in); true when a new forwarder was found.  Under got's patch lock. */
bool hook_probe(void);
/* Resolves hk_real[] for symbols not yet resolved (never inside a
 * dl_iterate_phdr callback).  Returns how many are resolved. */
int hook_resolve(void);
/* Load address (dlpi_addr) of the module defining the real `sym`, 0 if
 * unknown; *is_libc tells whether that module is the C library. */
uintptr_t hook_impl_base(enum hk_sym sym, bool *is_libc);
/* Is v the entry address of one of our hooks? */
bool hook_is_entry(uintptr_t v);

/* ---- GOT patching (got.c) ------------------------------------------- */
int got_init(void);
/* Patches every loaded module not yet patched (and forgets unloaded ones).
 * Never call from inside dl_iterate_phdr.  Returns 0 or -errno. */
int got_patch_all(void);
/* Cheap check whether modules were added or removed since the last patch. */
bool got_modules_changed(void);
/* Restores every slot we patched (and its page protection). */
int got_restore_all(void);
void got_counts(uint64_t *modules, uint64_t *slots, uint64_t *failures);
/* In a fork child: make the lock usable again (the child keeps the hooks,
 * inert, and the records to restore them). */
void got_after_fork(void);

/* ---- ELF helpers (elf.c) -------------------------------------------- */
struct dl_phdr_info;
/* Looks `name` up in the dynamic symbol table of a loaded module; returns
 * its address if defined there (not SHN_UNDEF), else 0.  *ifunc is set when
 * the symbol is an IFUNC (the address is then its resolver). */
uintptr_t elf_lookup(const struct dl_phdr_info *info, const char *name, bool *ifunc);
/* Calls fn(slot address, relocation type is JUMP_SLOT, symbol name, ctx)
 * for every JUMP_SLOT and GLOB_DAT relocation of the module. */
void elf_each_got_reloc(const struct dl_phdr_info *info,
			void (*fn)(uintptr_t slot, bool jump_slot, const char *name, void *ctx),
			void *ctx);
/* Is addr inside one of the module's PT_LOAD segments?  exec: only
 * executable ones. */
bool elf_in_load(const struct dl_phdr_info *info, uintptr_t addr, size_t len, bool exec);

/* ---- control thread (control.c) ------------------------------------- */
/* Binds the socket and starts the thread; 0 or -errno. */
int control_start(void);
/* Asks the thread to end and joins it (from any other thread): 0, or
 * -EBUSY if it did not end in time (then the payload must stay loaded). */
int control_stop(void);
/* In a fork child: close the inherited sockets (async-signal-safe). */
void control_forget(void);

#endif
