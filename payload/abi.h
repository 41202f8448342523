/* abi.h - the payload's wire protocol and record layout, shared by payload/ and src/live.c. */
#ifndef HEAPSNAP_PAYLOAD_ABI_H
#define HEAPSNAP_PAYLOAD_ABI_H

#include <stdint.h>

/*
 * Transport: a SOCK_STREAM Unix socket in the abstract namespace named
 * "heapsnap.<pid>" (no leading NUL in HSP_SOCK_PREFIX; the address is
 * "\0heapsnap.<pid>"), where <pid> is the target's pid *as the target sees
 * it* (the last NSpid field of /proc/PID/status from outside its pid
 * namespace).  Abstract names live in a network namespace: a client in
 * another one must setns(2) into /proc/PID/ns/net to connect (root only).
 * The payload admits a peer only when SO_PEERCRED says uid 0 or the target's
 * real or effective uid; the client checks that the peer's pid is the target.
 *
 * Every integer is little-endian and naturally aligned (the payload and the
 * client run on the same host; both check HSP_ABI_VERSION).  One request,
 * one reply header, then the reply body: a fixed struct for most commands,
 * a stream of frames for HSP_CMD_SNAPSHOT.  A peer that sends anything
 * malformed is disconnected.
 */

#define HSP_SOCK_PREFIX "heapsnap."
#define HSP_ABI_VERSION 2
#define HSP_REQ_MAGIC   0x51505348u /* "HSPQ" */
#define HSP_RESP_MAGIC  0x52505348u /* "HSPR" */
#define HSP_FRAME_MAGIC 0x46505348u /* "HSPF" */
#define HSP_MAX_DEPTH   64          /* frames kept per stack */
#define HSP_DEFAULT_RATE (512 * 1024)

enum hsp_cmd {
	HSP_CMD_STATUS = 1,     /* reply body: struct hsp_status */
	HSP_CMD_START = 2,      /* arg: rate (0 = keep); start or resume sampling */
	HSP_CMD_STOP = 3,       /* pause sampling; hooks stay, frees are still tracked */
	HSP_CMD_SET_RATE = 4,   /* arg: rate >= 1 */
	HSP_CMD_RESET = 5,      /* clear cumulative totals, restart the duration */
	HSP_CMD_SNAPSHOT = 6,   /* reply body: frames, HSP_FRAME_END last */
	HSP_CMD_PREPARE_UNLOAD = 7, /* stop, restore every GOT slot, drain, end the
				     * control thread; the reply is its last word */
};

struct hsp_req {
	uint32_t magic;         /* HSP_REQ_MAGIC */
	uint16_t version;       /* HSP_ABI_VERSION */
	uint16_t cmd;           /* enum hsp_cmd */
	uint64_t arg;
};

struct hsp_resp {
	uint32_t magic;         /* HSP_RESP_MAGIC */
	uint16_t version;
	uint16_t cmd;           /* echoes the request */
	int32_t status;         /* 0 or -errno */
	uint32_t len;           /* bytes of fixed body that follow (0 for snapshot) */
};

enum hsp_state {
	HSP_STATE_IDLE = 0,     /* loaded, never started (or restarted after unload) */
	HSP_STATE_SAMPLING = 1, /* hooks in, sampling */
	HSP_STATE_PAUSED = 2,   /* hooks in, sampling paused (HSP_CMD_STOP) */
	HSP_STATE_UNLOADED = 3, /* hooks out, drained: ready for dlclose */
	HSP_STATE_FORKED = 4,   /* inherited by fork(): inert in the child */
};

enum hsp_unwinder {
	HSP_UNW_AUTO = 0,       /* libunwind if installed, else libgcc */
	HSP_UNW_BACKTRACE = 1,  /* glibc backtrace() */
	HSP_UNW_FP = 2,         /* frame-pointer walk (for measurements) */
	HSP_UNW_GCC = 3,        /* libgcc _Unwind_Backtrace */
	HSP_UNW_LIBUNWIND = 4,  /* libunwind's unw_backtrace (loaded, NODELETE, if missing) */
};

/* hsp_start() flags */
#define HSP_START_UNWIND_MASK 0x7   /* enum hsp_unwinder */
#define HSP_START_PAUSED      0x8   /* install hooks, do not sample yet */

/* Reply body of HSP_CMD_STATUS. */
struct hsp_status {
	uint32_t abi_version;
	uint32_t pid;           /* as the target sees itself */
	uint32_t state;         /* enum hsp_state */
	uint32_t unwinder;      /* enum hsp_unwinder in use (never AUTO) */
	char backend[16];       /* "interpose" */
	uint64_t rate;          /* mean bytes between samples; 1 = every allocation */
	uint64_t load_ns;       /* CLOCK_REALTIME of hsp_start */
	uint64_t since_ns;      /* start of the current sampling period (start/reset) */
	uint64_t sampled_ns;    /* nanoseconds spent sampling (pauses excluded) */
	uint64_t live_samples;  /* sampled allocations still live */
	uint64_t live_bytes;    /* their requested bytes (raw, not unbiased) */
	uint64_t alloc_samples; /* sampled allocations since since_ns (raw) */
	uint64_t alloc_bytes;
	uint64_t stacks;        /* distinct stacks in the depot */
	uint64_t mem_bytes;     /* payload's own memory (mmap arenas) */
	uint64_t dropped;       /* samples lost to the memory cap */
	uint64_t modules;       /* modules whose GOT is patched */
	uint64_t slots;         /* GOT slots patched */
	uint64_t patch_failures;/* slots left alone because mprotect failed */
	uint64_t hooked_calls;  /* sampled allocations recorded */
	int32_t unload_error;   /* last prepare-unload: 0 or -errno (-EBUSY: must stay) */
	uint32_t reserved;
	uint64_t escaped;       /* copies of hook addresses found in memory by that unload */
	uint64_t escaped_at;    /* address of the first one */
	uint64_t cost_ns;       /* time all threads spent recording samples and removing
				 * them at free, since since_ns: the sampler's own cost */
	uint64_t snap_hold_ns;  /* longest the last snapshot held the table lock at once:
				 * the most it can have kept an allocating thread waiting */
};

/*
 * Snapshot stream: frames, each a struct hsp_frame then `len` bytes:
 *   HSP_FRAME_BEGIN  struct hsp_snap_begin
 *   HSP_FRAME_LIVE   n x struct hsp_live_rec    one per sampled live object
 *   HSP_FRAME_ALLOC  n x struct hsp_alloc_rec   cumulative, per stack, unbiased
 *   HSP_FRAME_STACK  n x (struct hsp_stack_rec + depth x uint64_t pc)
 *   HSP_FRAME_END    struct hsp_snap_end        counts, for the client to check
 * Stack ids referenced by LIVE and ALLOC records all appear in STACK frames.
 * Every pc is a return address (the payload's own frames are dropped), leaf
 * first: the caller of the allocator is pcs[0].
 * Live records are raw samples; the client unbiases each with
 * p = 1 - exp(-size / rate) (FORMATS.md section 6).
 */
#define HSP_FRAME_MAX (1u << 20)     /* largest frame body */

enum hsp_frame_type {
	HSP_FRAME_BEGIN = 1,
	HSP_FRAME_LIVE = 2,
	HSP_FRAME_ALLOC = 3,
	HSP_FRAME_STACK = 4,
	HSP_FRAME_END = 5,
};

struct hsp_frame {
	uint32_t magic;         /* HSP_FRAME_MAGIC */
	uint32_t type;          /* enum hsp_frame_type */
	uint32_t len;           /* body bytes, <= HSP_FRAME_MAX */
	uint32_t reserved;
};

struct hsp_snap_begin {
	uint64_t rate;          /* current rate (records carry their own) */
	uint64_t load_ns;
	uint64_t since_ns;
	uint64_t sampled_ns;
	uint64_t now_ns;        /* CLOCK_REALTIME when the copy began */
	uint32_t pid;
	uint32_t state;
};

struct hsp_live_rec {
	uint64_t size;          /* requested bytes */
	uint64_t rate;          /* rate in force when it was sampled */
	uint64_t time_ns;       /* CLOCK_REALTIME of the allocation */
	uint32_t stack;         /* stack id */
	uint32_t tid;
};

/* Cumulative totals of one stack since start (or reset), already unbiased
 * by the payload: every sample of n bytes at rate R adds 1/p and n/p,
 * p = 1 - exp(-n/R), so the table stays one entry per stack whatever the
 * sizes and rates. */
struct hsp_alloc_rec {
	double objects;         /* estimated allocations */
	double bytes;           /* estimated bytes */
	uint64_t samples;       /* raw sampled allocations */
	uint32_t stack;
	uint32_t reserved;
};

struct hsp_stack_rec {
	uint32_t id;
	uint32_t depth;         /* <= HSP_MAX_DEPTH; depth x uint64_t follow */
};

struct hsp_snap_end {
	uint64_t nlive;
	uint64_t nalloc;
	uint64_t nstacks;
	int32_t status;         /* 0, or -errno if the copy failed half-way */
	uint32_t reserved;
};

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the heapsnap wire ABI is little-endian"
#endif

_Static_assert(sizeof(struct hsp_req) == 16, "hsp_req layout");
_Static_assert(sizeof(struct hsp_resp) == 16, "hsp_resp layout");
_Static_assert(sizeof(struct hsp_frame) == 16, "hsp_frame layout");
_Static_assert(sizeof(struct hsp_live_rec) == 32, "hsp_live_rec layout");
_Static_assert(sizeof(struct hsp_alloc_rec) == 32, "hsp_alloc_rec layout");
_Static_assert(sizeof(struct hsp_stack_rec) == 8, "hsp_stack_rec layout");

/* Exported entry points of libheapsnap-payload.so (called by the injector
 * with integer arguments from a worker thread it created in the target). */
#define HSP_SYM_START "hsp_start"                   /* long hsp_start(long rate, long flags) */
#define HSP_SYM_PREPARE_UNLOAD "hsp_prepare_unload" /* long hsp_prepare_unload(void) */
#define HSP_SYM_STATUS "hsp_status"                 /* long hsp_status(void): enum hsp_state */
/* long hsp_alloc_stats(long op): op HSP_STATS_GET or HSP_STATS_TRIM (trim
 * first, then gather).  Returns the address, in the target, of a buffer of
 * HSP_STATS_MAX bytes that starts with struct hsp_stats_hdr followed by
 * hdr.len bytes of text lines "key value\n" (keys glibc.*, jemalloc.*,
 * tcmalloc.*, mimalloc.*, malloc.module, trim.*), or -errno.  The buffer
 * stays valid until the next call or until the payload is unloaded.  Needs
 * no hsp_start: heapsnap loads the payload, calls this, reads, unloads. */
#define HSP_SYM_ALLOC_STATS "hsp_alloc_stats"
#define HSP_STATS_GET   0
#define HSP_STATS_TRIM  1
#define HSP_STATS_MAGIC 0x54505348u /* "HSPT" */
#define HSP_STATS_MAX   16384

/* long hsp_jemalloc(long op, long arg): drives jemalloc's own profiler
 * through mallctl.  HSP_JE_ACTIVATE (arg > 0: prof.reset with lg_sample
 * arg - 1 first) and HSP_JE_DEACTIVATE set prof.active; HSP_JE_DUMP runs
 * prof.dump into a new 0700 directory and names the file in the line
 * "jemalloc.dump PATH" (the caller removes file and directory).  Returns
 * the stats buffer (as hsp_alloc_stats, with the jemalloc.* figures after
 * the change) or -errno: -ENOENT no mallctl, else mallctl's error (ENOENT:
 * opt.prof false). */
#define HSP_SYM_JEMALLOC "hsp_jemalloc"
#define HSP_JE_ACTIVATE   1
#define HSP_JE_DEACTIVATE 2
#define HSP_JE_DUMP       3

/* long hsp_gperf(long op, long arg): drives gperftools' heap profiler.
 * HSP_GP_INFO: only "gperf.running 0|1"; HSP_GP_START: HeapProfilerStart
 * into a new /tmp/heapsnap-gp.<pid>.XXXXXX unless running ("gperf.started
 * DIR" when it did); HSP_GP_STOP: HeapProfilerStop; HSP_GP_DUMP:
 * GetHeapProfile() into a new 0600 file, "gperf.dump PATH" (the caller
 * removes file and directory).  Returns the stats buffer or -errno
 * (-ENOENT: no heap profiler in the process, -ESRCH: dump while stopped). */
#define HSP_SYM_GPERF "hsp_gperf"
#define HSP_GP_INFO  0
#define HSP_GP_START 1
#define HSP_GP_STOP  2
#define HSP_GP_DUMP  3

struct hsp_stats_hdr {
	uint32_t magic;         /* HSP_STATS_MAGIC */
	uint32_t len;           /* text bytes that follow */
};

#endif
