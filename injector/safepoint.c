/* safepoint.c - may this stopped thread run pthread_create now?  Unwinds it with libunwind-ptrace and judges its frames. */
#include <errno.h>
#include <libunwind-ptrace.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * Functions in which a thread must not be hijacked: pthread_create would
 * take a lock the thread may already hold (allocator arenas, the loader
 * lock, the stack cache), or the thread is half-way through its own birth
 * or death.  Matched by name in every module, so an allocator the program
 * brings itself (its own malloc, jemalloc, tcmalloc) counts too.
 */
static const char *const unsafe_funcs[] = {
	"malloc", "free", "calloc", "realloc", "reallocarray", "memalign", "posix_memalign",
	"aligned_alloc", "valloc", "pvalloc", "cfree", "malloc_trim", "malloc_info", "mallinfo",
	"mallinfo2", "malloc_stats", "mallopt", "malloc_usable_size",
	"__libc_malloc", "__libc_free", "__libc_calloc", "__libc_realloc", "__libc_memalign",
	"__libc_valloc", "__libc_pvalloc", "__libc_freeres", "__libc_thread_freeres",
	"fork", "vfork", "_Fork", "__libc_fork", "posix_spawn", "posix_spawnp", "system",
	"pthread_create", "pthread_exit", "pthread_join", "pthread_tryjoin_np",
	"pthread_timedjoin_np", "pthread_clockjoin_np", "pthread_detach",
	"dlopen", "dlclose", "dlsym", "dlvsym", "dladdr", "dladdr1", "dlinfo", "dlmopen",
	"dlerror", "dl_iterate_phdr", "__libc_dlopen_mode", "__libc_dlsym", "__libc_dlvsym",
	"__libc_dlclose", "exit", "_exit", "quick_exit", "abort", "__cxa_thread_atexit_impl",
	"__cxa_finalize", "backtrace", "backtrace_symbols", "backtrace_symbols_fd",
	"_Znwm", "_Znam", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZnwmSt11align_val_t",
	"_ZdlPvSt11align_val_t", "_ZnwmRKSt9nothrow_t", "mallocx", "rallocx", "xallocx",
	"sdallocx", "dallocx", "mallctl", "tc_malloc", "tc_free", "mi_malloc", "mi_free",
	NULL,
};

static bool is_unsafe_name(const char *n)
{
	for (int i = 0; unsafe_funcs[i]; i++)
		if (!strcmp(n, unsafe_funcs[i]))
			return true;
	return false;
}

/*
 * libunwind-ptrace would read registers with PTRACE_GETREGS and the stack
 * word by word with PTRACE_PEEKDATA.  We already hold the registers (read
 * once at the stop) and process_vm_readv moves the stack in one call, so
 * both accessors are ours; only _UPT's find_proc_info (unwind tables from
 * the target's files via /proc/PID/maps) is used as is.  One UPT handle,
 * made for the process, serves every thread: it only names the maps.  The
 * accessors have no room for our context and unwinding is synchronous: a
 * thread-local carries it.
 */
static _Thread_local struct safepoint *cur_sp;
static _Thread_local const struct arch_regs *cur_regs;

/*
 * An unwind reads a few hundred words when the caches are cold (the
 * .eh_frame_hdr search table, FDEs and CIEs, the stack), clustered in a
 * few pages, all while the thread is held: the words come from 4 KiB
 * blocks read whole, one system call each, kept for the one unwind (the
 * stack is only stable while the thread is).
 */
#define SP_PAGE 4096u
#define SP_NPAGES 32

struct sp_page {
	uint64_t addr;
	uint8_t data[SP_PAGE];
};

static void pages_forget(struct safepoint *sp)
{
	sp->npages = 0;
	sp->next_page = 0;
}

static const uint8_t *page_get(struct safepoint *sp, uint64_t page)
{
	struct sp_page *pg;

	for (unsigned i = 0; i < sp->npages; i++)
		if (sp->pages[i].addr == page)
			return sp->pages[i].data;
	if (!sp->pages)
		return NULL;
	pg = &sp->pages[sp->next_page];
	if (pt_read_mem(sp->pid, sp->memfd, page, pg->data, SP_PAGE))
		return NULL;
	pg->addr = page;
	sp->next_page = (sp->next_page + 1) % SP_NPAGES;
	if (sp->npages < SP_NPAGES)
		sp->npages++;
	return pg->data;
}

static int read_word(struct safepoint *sp, uint64_t addr, unw_word_t *val)
{
	uint64_t page = addr & ~(uint64_t)(SP_PAGE - 1), off = addr - page;
	const uint8_t *d = off + sizeof(*val) <= SP_PAGE ? page_get(sp, page) : NULL;

	if (d) {
		memcpy(val, d + off, sizeof(*val));
		return 0;
	}
	/* Across two blocks, or a block that cannot be read whole. */
	return pt_read_mem(sp->pid, sp->memfd, addr, val, sizeof(*val));
}

static int sp_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
	if (write || !cur_sp)
		return -UNW_EINVAL; /* never write into the target while judging it */
	if (read_word(cur_sp, addr, val))
		return -UNW_EINVAL;
	return 0;
}

/*
 * A _UPT handle remembers the unwind table of one module only: each time
 * an unwind crosses from one module to another on a cold cache it reads
 * /proc/PID/maps and maps the ELF file again, hundreds of microseconds
 * per frame while the thread is held.  One handle per module keeps every
 * table found (by safepoint_prewarm() too) for the whole session.
 */
#define SP_MAX_UPTS 64

struct sp_upt {
	uint64_t dev, ino, lo;
	void *upt;
};

static void *upt_for(struct safepoint *sp, uint64_t ip)
{
	struct mod *md = mods_find(sp->mods, ip);
	void *u;

	if (!md)
		return sp->upt;
	for (int i = 0; i < sp->nupts; i++)
		if (sp->upts[i].dev == md->dev && sp->upts[i].ino == md->ino && sp->upts[i].lo == md->lo)
			return sp->upts[i].upt;
	if (!sp->upts || sp->nupts == SP_MAX_UPTS || !(u = _UPT_create(sp->pid)))
		return sp->upt;
	sp->upts[sp->nupts++] = (struct sp_upt){ md->dev, md->ino, md->lo, u };
	return u;
}

static int sp_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi, int need_unwind_info,
			     void *arg)
{
	return _UPT_find_proc_info(as, ip, pi, need_unwind_info, cur_sp ? upt_for(cur_sp, ip) : arg);
}

static int sp_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg)
{
	uint64_t v;

	if (write || !cur_regs || arch_unw_reg(cur_regs, reg, &v))
		return -UNW_EBADREG;
	*val = v;
	return 0;
}

static int sp_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write, void *arg)
{
	return -UNW_EBADREG;
}

int safepoint_init(struct safepoint *sp, pid_t pid, int memfd, struct mods *mods)
{
	static unw_accessors_t acc;

	memset(sp, 0, sizeof(*sp));
	sp->pid = pid;
	sp->memfd = memfd;
	sp->mods = mods;
	sp->pages = malloc(SP_NPAGES * sizeof(*sp->pages)); /* none: word by word */
	sp->upts = calloc(SP_MAX_UPTS, sizeof(*sp->upts));   /* none: the process's handle */
	acc = _UPT_accessors;
	acc.access_mem = sp_access_mem;
	acc.access_reg = sp_access_reg;
	acc.access_fpreg = sp_access_fpreg;
	acc.find_proc_info = sp_find_proc_info;
	acc.resume = NULL; /* we only look */
	unw_addr_space_t as = unw_create_addr_space(&acc, 0);
	if (!as) {
		safepoint_fini(sp);
		return -ENOMEM;
	}
	/* The global cache keeps what was learned per return address across
	 * threads and rounds (and from safepoint_prewarm()). */
	unw_set_caching_policy(as, UNW_CACHE_GLOBAL);
	sp->as = as;
	sp->upt = _UPT_create(pid);
	if (!sp->upt) {
		safepoint_fini(sp);
		return -ENOMEM;
	}
	return 0;
}

void safepoint_fini(struct safepoint *sp)
{
	for (int i = 0; i < sp->nupts; i++)
		_UPT_destroy(sp->upts[i].upt);
	if (sp->upt)
		_UPT_destroy(sp->upt);
	if (sp->as)
		unw_destroy_addr_space((unw_addr_space_t)sp->as);
	free(sp->upts);
	free(sp->pages);
	sp->as = NULL;
	sp->upt = NULL;
	sp->upts = NULL;
	sp->nupts = 0;
	sp->pages = NULL;
}

void safepoint_prewarm(struct safepoint *sp, pid_t tid, int64_t budget_ns)
{
	int64_t end = inj_now_ns() + budget_ns;
	struct arch_regs r;
	unw_cursor_t c;
	uint64_t pc, stk;

	/* A thread blocked in a syscall shows its pc and sp in /proc without
	 * being stopped, and its stack holds still while it sleeps: unwinding
	 * it from there now (registers other than pc/sp unknown, so some
	 * frames may come out wrong: harmless, only the cache is kept) does
	 * the slow part of the real unwind before anything is stopped. */
	if (proc_task_syscall_regs(sp->pid, tid, &stk, &pc) < 0)
		return;
	memset(&r, 0, sizeof(r));
	arch_fake_regs(&r, pc, stk);
	pages_forget(sp);
	cur_sp = sp;
	cur_regs = &r;
	if (unw_init_remote(&c, (unw_addr_space_t)sp->as, sp->upt) == 0)
		for (int i = 0; i < 64 && inj_now_ns() < end && unw_step(&c) > 0; i++)
			;
	cur_sp = NULL;
	cur_regs = NULL;
}

/* Where a frame is, as far as safety goes. */
enum fclass { F_APP, F_LIBC_KNOWN, F_LIBC_UNKNOWN };

int safepoint_check(struct safepoint *sp, pid_t tid, const struct arch_regs *regs, char *why,
		    size_t whylen)
{
	unw_cursor_t c;
	int r, depth = 0, run_start = -1, ret = 1;
	bool leaf_run = false;

	pages_forget(sp);
	cur_sp = sp;
	cur_regs = regs;
	r = unw_init_remote(&c, (unw_addr_space_t)sp->as, sp->upt);
	if (r < 0) {
		snprintf(why, whylen, "tid %d: cannot unwind its stack", (int)tid);
		ret = 0;
		goto out;
	}
	for (;;) {
		unw_word_t ip = 0;
		uint64_t pc;
		struct mod *md;
		const struct elfsym *s = NULL;
		enum fclass fc = F_APP;

		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0) {
			snprintf(why, whylen, "tid %d: cannot unwind its stack", (int)tid);
			ret = 0;
			break;
		}
		/* A return address points after the call: look up the call. */
		pc = depth ? ip - 1 : ip;
		if (unw_is_signal_frame(&c) > 0) {
			snprintf(why, whylen, "tid %d: in a signal handler", (int)tid);
			ret = 0;
			break;
		}
		md = mods_find(sp->mods, pc);
		if (!md) {
			snprintf(why, whylen, "tid %d: frame %d at %#llx outside any file mapping",
				 (int)tid, depth, (unsigned long long)pc);
			ret = 0;
			break;
		}
		if (md->kind == MOD_LDSO) {
			snprintf(why, whylen, "tid %d: in the dynamic loader", (int)tid);
			ret = 0;
			break;
		}
		if (md->kind == MOD_ALLOCATOR) {
			const char *b = strrchr(md->path, '/');
			snprintf(why, whylen, "tid %d: in the allocator (%s)", (int)tid, b ? b + 1 : md->path);
			ret = 0;
			break;
		}
		mods_syms(sp->mods, md);
		s = elfsym_covering(&md->syms, pc);
		if (s && is_unsafe_name(s->name)) {
			snprintf(why, whylen, "tid %d: in %s", (int)tid, s->name);
			ret = 0;
			break;
		}
		if (md->kind == MOD_LIBC)
			fc = s ? F_LIBC_KNOWN : F_LIBC_UNKNOWN;
		/* Internal libc code (no exported symbol covers it: _int_free,
		 * arena code reached by a tail call) is only trusted when an
		 * exported, harmless libc function called it. */
		if (fc == F_LIBC_UNKNOWN) {
			if (run_start < 0) {
				run_start = depth;
				leaf_run = depth == 0;
			}
		} else if (run_start >= 0) {
			if (fc != F_LIBC_KNOWN) {
				snprintf(why, whylen, "tid %d: in an internal libc function called from %s",
					 (int)tid, md->kind == MOD_EXE ? "the program" : "a library");
				ret = 0;
				break;
			}
			run_start = -1;
		}
		if (++depth > 256) {
			snprintf(why, whylen, "tid %d: stack deeper than 256 frames", (int)tid);
			ret = 0;
			break;
		}
		r = unw_step(&c);
		if (r == 0)
			break;
		if (r < 0) {
			snprintf(why, whylen, "tid %d: cannot unwind its stack (%s)", (int)tid,
				 unw_strerror(r));
			ret = 0;
			break;
		}
	}
	/* A run of internal libc frames may end the stack (start_thread,
	 * clone3) unless the thread is just being born or dying in it. */
	if (ret == 1 && run_start >= 0 && leaf_run) {
		snprintf(why, whylen, "tid %d: starting or ending (only internal libc frames)", (int)tid);
		ret = 0;
	}
out:
	pages_forget(sp);
	cur_sp = NULL;
	cur_regs = NULL;
	return ret;
}
