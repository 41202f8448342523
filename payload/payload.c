/* payload.c - the exported hsp_* entry points, state transitions, unload draining and fork handling. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "hsp.h"

struct hsp_global hsp_g = {
	.state = HSP_STATE_IDLE,
	.state_lock = PTHREAD_MUTEX_INITIALIZER,
};

static bool atfork_done;
static bool drained;          /* hooks out and no thread inside: dlclose is safe */
static bool inited;           /* tables and depot exist */
static int unload_error;      /* why the last prepare-unload failed, 0 */
static uint64_t escaped;      /* hook addresses found by the last scan */
static uintptr_t escaped_at;  /* where the first one was */

static uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t payload_now_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

uint64_t payload_coarse_ns(void)
{
	return clock_ns(CLOCK_REALTIME_COARSE);
}

uint64_t payload_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t inflight_total(void)
{
	uint64_t n = 0;
	for (size_t i = 0; i < INFLIGHT_SLOTS; i++)
		n += LOAD(&hsp_g.inflight[i].n);
	return n;
}

/* Chooses cost_now()'s clock: the TSC only when it is the kernel's own
 * clocksource (constant rate, synchronised across CPUs). */
static void cost_clock_init(void)
{
	char buf[16] = "";
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		      O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = 0;
		close(fd);
	}
	hsp_g.cost_tsc = false;
#if defined(__x86_64__)
	if (!strcmp(buf, "tsc\n")) {
		hsp_g.cost_tsc = true;
		hsp_g.cost_mono0 = payload_mono_ns();
		hsp_g.cost_tsc0 = cost_now();
	}
#endif
}

/* cost_now() units to ns. */
static uint64_t cost_to_ns(uint64_t ticks)
{
	if (!hsp_g.cost_tsc)
		return ticks;
	uint64_t dt = cost_now() - hsp_g.cost_tsc0, dn = payload_mono_ns() - hsp_g.cost_mono0;
	if (!dt || dn < 1000000)
		return 0;
	return (uint64_t)((double)ticks * (double)dn / (double)dt);
}


static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

void payload_set_rate(uint64_t rate)
{
	uint64_t rg = LOAD(&hsp_g.rate_gen);
	uint64_t gen = (rg_gen(rg) + 1) & 0xffffff;
	STORE(&hsp_g.rate_gen, (gen << 40) | rate);
}

/* Under state_lock. */
static void run_begin(void)
{
	hsp_g.run_start_ns = payload_now_ns();
}

static void run_end(void)
{
	if (hsp_g.run_start_ns) {
		hsp_g.sampled_ns += payload_now_ns() - hsp_g.run_start_ns;
		hsp_g.run_start_ns = 0;
	}
}

/* ---- finding ourselves ---------------------------------------------- */

static int self_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t me = (uintptr_t)arg;

	if (!elf_in_load(info, me, 1, true))
		return 0;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	hsp_g.self_base = info->dlpi_addr;
	hsp_g.self_lo = lo;
	hsp_g.self_hi = hi;
	return 1;
}

/* ---- fork ------------------------------------------------------------- */

/* In the child of a fork: one thread, no control thread, maybe locks held
 * by threads that do not exist here.  Make every hook pass through without
 * touching a lock; a later hsp_start in the child starts afresh. */
static void at_fork_child(void)
{
	uint32_t st = LOAD(&hsp_g.state);

	if (st == HSP_STATE_SAMPLING || st == HSP_STATE_PAUSED)
		STORE(&hsp_g.state, (uint32_t)HSP_STATE_FORKED);
	memset(hsp_g.inflight, 0, sizeof(hsp_g.inflight));
	hsp_g.run_start_ns = 0;
	hsp_tls.countdown = 0;
	hsp_tls.tid = 0;
	hsp_tls.guard = 0;
	hsp_tls.stack_hi = 0;
	table_forget();
	control_forget();
	got_after_fork();
	arena_after_fork();
	stack_after_fork();
	pthread_mutex_init(&hsp_g.state_lock, NULL);
	inited = false;
}

/* ---- start / stop --------------------------------------------------- */

static void teardown_data(void)
{
	table_fini();
	stack_fini();
	arena_free_all();
	inited = false;
}

/*
 * Loads nothing, hooks everything: resolve the real functions, warm the
 * unwinder, build the tables, open the socket and start the control thread,
 * and only then patch the GOTs.  Called by the injector from a worker
 * thread with integer arguments.  0, -EALREADY when already running, or
 * -errno with nothing left behind.
 */
HSP_EXPORT long hsp_start(long rate, long flags)
{
	long ret = 0;

	if (rate == 0)
		rate = HSP_DEFAULT_RATE;
	if (rate < 0 || (uint64_t)rate > HSP_RATE_MAX)
		return -EINVAL;
	/* Our own allocations (dlsym, pthread_create) must never be sampled. */
	uint32_t guard = hsp_tls.guard;
	hsp_tls.guard = 1;
	pthread_mutex_lock(&hsp_g.state_lock);
	hook_fill();
	uint32_t st = hsp_g.state;
	if (st == HSP_STATE_SAMPLING || st == HSP_STATE_PAUSED) {
		ret = -EALREADY;
		goto out;
	}
	if (!hsp_g.self_base && !dl_iterate_phdr(self_cb, (void *)hsp_start)) {
		ret = -ENOENT;
		goto out;
	}
	if (!atfork_done) {
		if (pthread_atfork(NULL, NULL, at_fork_child) != 0) {
			ret = -ENOMEM;
			goto out;
		}
		atfork_done = true;
	}
	got_init();
	if (!hook_resolve() || !hk_real[HK_MALLOC] || !hk_real[HK_FREE]) {
		ret = -ENOENT;
		goto out;
	}
	/* A new run starts empty: after an unload nothing tracked the frees
	 * (and, drained, nobody is inside a hook), after a fork the tables
	 * are the parent's.  Undrained, the old data stays where it is. */
	if (inited && ((st == HSP_STATE_UNLOADED && drained) || st == HSP_STATE_FORKED))
		teardown_data();
	if (!inited) {
		ret = stack_init((unsigned)flags & HSP_START_UNWIND_MASK);
		if (!ret)
			ret = table_init();
		if (ret) {
			teardown_data();
			goto out;
		}
		inited = true;
	} else {
		stack_init((unsigned)flags & HSP_START_UNWIND_MASK);
	}
	hsp_g.load_ns = hsp_g.since_ns = payload_now_ns();
	hsp_g.sampled_ns = 0;
	cost_clock_init();
	STORE_RELAXED(&hsp_g.cost_ticks, 0);
	payload_set_rate((uint64_t)rate);
	ret = control_start();
	if (ret) {
		teardown_data();
		goto out;
	}
	drained = false;
	unload_error = 0;
	escaped = 0;
	/* Paused while the slots go in and the wrappers are probed. */
	STORE(&hsp_g.state, (uint32_t)HSP_STATE_PAUSED);
	pthread_mutex_unlock(&hsp_g.state_lock);
	ret = got_patch_all();
	pthread_mutex_lock(&hsp_g.state_lock);
	if (!(flags & HSP_START_PAUSED) && hsp_g.state == HSP_STATE_PAUSED) {
		STORE(&hsp_g.state, (uint32_t)HSP_STATE_SAMPLING);
		run_begin();
	}
	pthread_mutex_unlock(&hsp_g.state_lock);
	hsp_tls.guard = guard;
	payload_scrub();
	return ret == -ESRCH ? 0 : ret;
out:
	pthread_mutex_unlock(&hsp_g.state_lock);
	hsp_tls.guard = guard;
	return ret;
}

int payload_resume(uint64_t rate)
{
	int ret = 0;

	if (rate > HSP_RATE_MAX)
		return -EINVAL;
	pthread_mutex_lock(&hsp_g.state_lock);
	if (hsp_g.state == HSP_STATE_PAUSED) {
		if (rate)
			payload_set_rate(rate);
		else
			payload_set_rate(rg_rate(hsp_g.rate_gen));
		STORE(&hsp_g.state, (uint32_t)HSP_STATE_SAMPLING);
		run_begin();
	} else if (hsp_g.state == HSP_STATE_SAMPLING) {
		ret = -EALREADY;
	} else {
		ret = -ESRCH;
	}
	pthread_mutex_unlock(&hsp_g.state_lock);
	return ret;
}

int payload_pause(void)
{
	int ret = 0;

	pthread_mutex_lock(&hsp_g.state_lock);
	if (hsp_g.state == HSP_STATE_SAMPLING) {
		STORE(&hsp_g.state, (uint32_t)HSP_STATE_PAUSED);
		run_end();
	} else {
		ret = hsp_g.state == HSP_STATE_PAUSED ? -EALREADY : -ESRCH;
	}
	pthread_mutex_unlock(&hsp_g.state_lock);
	return ret;
}

void payload_reset(void)
{
	pthread_mutex_lock(&hsp_g.state_lock);
	table_reset_totals();
	hsp_g.since_ns = payload_now_ns();
	hsp_g.sampled_ns = 0;
	STORE_RELAXED(&hsp_g.cost_ticks, 0);
	if (hsp_g.run_start_ns)
		hsp_g.run_start_ns = hsp_g.since_ns;
	pthread_mutex_unlock(&hsp_g.state_lock);
}

HSP_EXPORT long hsp_stop(void)
{
	return payload_pause();
}

HSP_EXPORT long hsp_status(void)
{
	return (long)LOAD(&hsp_g.state);
}

void payload_fill_status(struct hsp_status *st)
{
	memset(st, 0, sizeof(*st));
	st->abi_version = HSP_ABI_VERSION;
	st->pid = (uint32_t)getpid();
	strcpy(st->backend, "interpose");
	pthread_mutex_lock(&hsp_g.state_lock);
	st->state = hsp_g.state;
	st->unwinder = hsp_g.unwinder;
	st->rate = rg_rate(hsp_g.rate_gen);
	st->load_ns = hsp_g.load_ns;
	st->since_ns = hsp_g.since_ns;
	st->sampled_ns = hsp_g.sampled_ns +
		(hsp_g.run_start_ns ? payload_now_ns() - hsp_g.run_start_ns : 0);
	pthread_mutex_unlock(&hsp_g.state_lock);
	if (inited)
		table_counts(&st->live_samples, &st->live_bytes, &st->alloc_samples, &st->alloc_bytes);
	st->stacks = inited ? stack_count() : 0;
	st->mem_bytes = mem_total();
	st->dropped = LOAD_RELAXED(&hsp_g.dropped);
	got_counts(&st->modules, &st->slots, &st->patch_failures);
	st->unload_error = unload_error;
	st->escaped = escaped;
	st->escaped_at = escaped_at;
	st->hooked_calls = st->alloc_samples;
	st->cost_ns = cost_to_ns(LOAD_RELAXED(&hsp_g.cost_ticks));
	st->snap_hold_ns = inited ? cost_to_ns(table_snap_hold()) : 0;
}

/* ---- unload ------------------------------------------------------------- */

struct task {
	int tid;
	uint64_t run0;
	bool pending;
};

/* State letter and on-CPU nanoseconds of one of our threads. */
static bool task_read(int tid, char *state, uint64_t *run)
{
	char path[64], buf[512];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	char *rp = strrchr(buf, ')');
	if (!rp || rp[1] != ' ')
		return false;
	*state = rp[2];
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	*run = 0;
	for (char *p = buf; *p >= '0' && *p <= '9'; p++)
		*run = *run * 10 + (uint64_t)(*p - '0');
	return true;
}

/*
 * After the slots are restored, a thread can still be executing hook code:
 * inside a slow path or a dl* hook (counted in inflight), or within the few
 * instructions of a fast path before its tail jump.  The latter are covered
 * by watching every thread that was runnable: once it has had some CPU
 * time since the restore (50 us: far more than a fast path), or has run
 * and gone to sleep (no system call happens in a fast path), it is out.
 * Bounded; -EBUSY when some thread never got the CPU back.
 */
static int drain(void)
{
	const uint64_t deadline = payload_mono_ns() + 5000000000ull;
	struct task *tasks = NULL;
	size_t ntasks = 0, cap = 0, len = 0;
	int self = (int)syscall(SYS_gettid), ret = 0;
	DIR *d;

	sleep_ns(2000000);
	d = opendir("/proc/self/task");
	if (d) {
		struct dirent *de;
		while ((de = readdir(d))) {
			int tid = atoi(de->d_name);
			char st;
			uint64_t run;
			if (tid <= 0 || tid == self || !task_read(tid, &st, &run))
				continue;
			/* Blocked threads (S, D: in the kernel) are not between
			 * the few instructions of a fast path, which makes no
			 * system call. */
			if (st != 'R')
				continue;
			if (ntasks == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				struct task *nt = mem_map(ncap * sizeof(*nt));
				if (!nt)
					break;
				if (tasks)
					memcpy(nt, tasks, ntasks * sizeof(*nt));
				mem_unmap(tasks, len);
				tasks = nt;
				cap = ncap;
				len = ncap * sizeof(*nt);
			}
			tasks[ntasks++] = (struct task){ tid, run, true };
		}
		closedir(d);
	} else {
		sleep_ns(100000000); /* no /proc: a plain grace period */
	}
	for (;;) {
		bool busy = inflight_total() != 0;
		for (size_t i = 0; i < ntasks; i++) {
			char st;
			uint64_t run;
			if (!tasks[i].pending)
				continue;
			if (!task_read(tasks[i].tid, &st, &run) || run >= tasks[i].run0 + 50000 ||
			    (run > tasks[i].run0 && st != 'R'))
				tasks[i].pending = false;
			else
				busy = true;
		}
		if (!busy)
			break;
		if (payload_mono_ns() > deadline) {
			ret = -EBUSY;
			break;
		}
		sleep_ns(1000000);
	}
	mem_unmap(tasks, len);
	return ret;
}

/*
 * A module may have copied a hook's address out of its GOT while we were
 * in (PIE code loads &free from the GLOB_DAT slot: `p->dtor = free`,
 * pthread_key_create(&k, free)).  Calling it after dlclose would crash the
 * target, so look for our entry addresses in every private writable
 * mapping; if one is there, we stay loaded (inert) instead.  Returns the
 * number found.
 */
static long scan_escaped(void)
{
	const size_t chunk = 1 << 20;
	uint64_t *buf = mem_map(chunk);
	uintptr_t lo = UINTPTR_MAX, hi = 0, here = (uintptr_t)&lo;
	long found = 0;
	FILE *f;
	char line[512];
	const uint64_t deadline = payload_mono_ns() + 3000000000ull;

	if (!buf)
		return 0;
	scrub_note();
	hook_fill(); /* also when never started */
	for (int i = 0; i < HK_NSYMS; i++) {
		uintptr_t a = (uintptr_t)hk_defs[i].hook;
		lo = a < lo ? a : lo;
		hi = a > hi ? a : hi;
	}
	f = fopen("/proc/self/maps", "re");
	if (!f) {
		mem_unmap(buf, chunk);
		return 0;
	}
	while (fgets(line, sizeof(line), f) && payload_mono_ns() < deadline) {
		unsigned long a, b;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &a, &b, perms) != 3)
			continue;
		if (perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p')
			continue;
		if (a < hsp_g.self_hi && b > hsp_g.self_lo)
			continue; /* our own module */
		if (here >= a && here < b)
			continue; /* this thread's stack holds our own locals */
		for (uintptr_t p = a; p < b;) {
			size_t n = b - p < chunk ? b - p : chunk;
			/* Not our own buffer: it holds a copy of what it read last. */
			if (p < (uintptr_t)buf + chunk && p + n > (uintptr_t)buf) {
				if (p < (uintptr_t)buf) {
					n = (uintptr_t)buf - p;
				} else {
					p = (uintptr_t)buf + chunk;
					continue;
				}
			}
			struct iovec l = { buf, n }, r = { (void *)p, n };
			ssize_t got = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
			if (got <= 0)
				break;
			for (size_t i = 0; i < (size_t)got / 8; i++)
				if (buf[i] >= lo && buf[i] <= hi && hook_is_entry(buf[i])) {
					if (!found++)
						escaped_at = p + i * 8;
				}
			p += n;
		}
	}
	fclose(f);
	mem_unmap(buf, chunk);
	return found;
}

/*
 * We must stay: make sure no dlclose can take us away, whoever calls it
 * (an injector that ignores our answer would otherwise unmap code a thread
 * may still run).  RTLD_NODELETE on an already loaded object is permanent.
 */
static void pin_self(void)
{
	Dl_info di;
	static bool pinned;

	if (pinned || !dladdr((void *)hsp_start, &di) || !di.dli_fname)
		return;
	pinned = dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) != NULL;
}

int payload_unhook_and_drain(void)
{
	int ret = 0;
	uint32_t guard = hsp_tls.guard;

	hsp_tls.guard = 1;
	pthread_mutex_lock(&hsp_g.state_lock);
	if (drained)
		goto out;
	uint32_t st = hsp_g.state;
	run_end();
	STORE(&hsp_g.state, (uint32_t)HSP_STATE_UNLOADED);
	if (st == HSP_STATE_SAMPLING || st == HSP_STATE_PAUSED || st == HSP_STATE_FORKED)
		got_restore_all();
	ret = drain();
	if (!ret) {
		escaped = (uint64_t)scan_escaped();
		if (escaped)
			ret = -EBUSY;
	}
	drained = ret == 0;
	unload_error = ret;
	if (ret)
		pin_self();
out:
	pthread_mutex_unlock(&hsp_g.state_lock);
	hsp_tls.guard = guard;
	return ret;
}

/*
 * Stop sampling, restore every slot and its protection, wait until no
 * thread is inside a hook, end the control thread.  After a 0 return the
 * caller may dlclose the payload from a thread of its own; after -EBUSY it
 * must not (the payload stays, inert, and says why in its status).
 */
HSP_EXPORT long hsp_prepare_unload(void)
{
	int ret = payload_unhook_and_drain();
	payload_scrub();
	/* When we must stay, the control thread stays too, to say why. */
	if (ret)
		return ret;
	ret = control_stop();
	if (ret)
		pin_self(); /* it is still running our code */
	return ret;
}

/* The margin below the deepest noted stack pointer: a leaf function's red
 * zone. */
#define SCRUB_MARGIN 128

__attribute__((noinline)) void payload_scrub(void)
{
	uintptr_t lo = hsp_tls.scrub_lo, here = (uintptr_t)__builtin_frame_address(0);

	hsp_tls.scrub_lo = 0;
	if (!lo || lo >= here || here - lo > ((size_t)1 << 20))
		return;
	/* alloca moves the stack pointer over the area first: zeroing below
	 * the stack pointer would race a signal handler's frame.  The area
	 * was in use by this thread moments ago, so it is mapped. */
	size_t n = here - lo + SCRUB_MARGIN;
	char *buf = __builtin_alloca(n);
	memset(buf, 0, n);
	__asm__ volatile("" : : "r"(buf) : "memory");
}

/* dlclose, or the process exiting.  Memory goes only once drained; if the
 * hooks are somehow still in, take them out and leave the data be. */
__attribute__((destructor)) static void payload_fini(void)
{
	uint32_t st = LOAD(&hsp_g.state);

	if (st == HSP_STATE_SAMPLING || st == HSP_STATE_PAUSED) {
		STORE(&hsp_g.state, (uint32_t)HSP_STATE_UNLOADED);
		got_restore_all();
		control_stop();
		return;
	}
	if (drained && inited)
		teardown_data();
}
