/* injector.c - the lifecycle: find a safe thread, map our pages, start the worker, restore the thread; then talk to the worker through memory. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "preflight.h"

/*
 * How a load goes (INJECTION.md gives the reasons):
 *
 *  inj_open   preflight (/proc, ELF: nothing stopped); unwind tables warmed
 *             on sleeping threads; then one thread at a time: PTRACE_SEIZE +
 *             PTRACE_INTERRUPT, registers and XSAVE state read, stack
 *             unwound and judged (safepoint.c); unsafe -> detached untouched,
 *             next thread, back-off, retry to the deadline.  On a safe one:
 *     1. a signal frame holding its exact state is written below its red
 *        zone, and registers point into a gadget chain in its libc:
 *        mmap(RX) by "syscall; ret", then "pop rax; ret" -> rt_sigreturn on
 *        that frame.  Stops: mmap entry, mmap exit (we read the address);
 *     2. at mmap's exit stop, code and data go in through /proc/PID/mem and
 *        a second frame is built in the data area;
 *     3. one register write sends the thread to the stub (PTRACE_CONT):
 *        mprotect(data, RW), pthread_create(worker), stub_done = 1, park in
 *        ppoll(2 s), then rt_sigreturn on the frame;
 *     4. we see stub_done in memory, interrupt the parked thread and put its
 *        state back with ptrace (FP, mask, registers last), detach.
 *     If we die anywhere in 1-4, the thread runs on into rt_sigreturn and
 *     is back where it was.  Before 1 nothing was changed; after 4 no
 *     thread is stopped any more.  While a thread is held, we run on its
 *     CPU at raised priority and wait by sleeping, never spinning (struct
 *     boost): each hand-over then costs tens of microseconds, not a tick.
 *  inj_load/inj_call/inj_unload  commands to the worker through the data
 *             page (process_vm_writev, poll for the answer): no ptrace.
 *  inj_close  the worker unmaps our pages and ends itself.
 */

#define DEFAULT_TIMEOUT_MS 5000
#define STACK_SIZE (64 * 1024)     /* private stack of the hijack stub */
#define INTERRUPT_WAIT_MS 300      /* a thread that does not stop by then is skipped */
#define MAX_PENDING 64

struct inj_lib {
	uint64_t handle;
	char *path;                /* as the worker dlopen()ed it */
	dev_t dev;
	ino_t ino;
	bool memfd;
};

struct inj_proc {
	pid_t pid;
	int pidfd, memfd;
	struct inj_opts opts;
	struct inj_info info;
	struct inj_stats st;
	int64_t t0;
	uint64_t map_base, map_len, code_len, data_base, data_len;
	bool worker_ok;            /* worker running and acknowledged */
	uint32_t seq;
	struct inj_lib *libs;
	int nlibs;
	pid_t pending[MAX_PENDING]; /* seized threads that never reached their stop */
	int npending;
};

static void logf_(const struct inj_proc *p, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void logf_(const struct inj_proc *p, int level, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!p->opts.log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	p->opts.log(p->opts.log_arg, level, buf);
}

static int setr(char *reason, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int setr(char *reason, int err, const char *fmt, ...)
{
	va_list ap;

	if (reason) {
		va_start(ap, fmt);
		vsnprintf(reason, INJ_REASONLEN, fmt, ap);
		va_end(ap);
	}
	return err;
}

static bool proc_gone(const struct inj_proc *p)
{
	struct pollfd pf = { p->pidfd, POLLIN, 0 };

	/* A pidfd turns readable when the process has exited. */
	return p->pidfd >= 0 && poll(&pf, 1, 0) == 1;
}

static uint64_t us_since(int64_t t)
{
	return (uint64_t)((inj_now_ns() - t) / 1000);
}

static void nap_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

/* ---- stops ---------------------------------------------------------------- */

/*
 * After PTRACE_INTERRUPT: waits for the interrupt's stop.  A signal that
 * comes first is delivered (the interrupt stays pending and stops the
 * thread after it, in its handler: not a safe point, we will see).
 * Returns 0 at the stop, -EBUSY if the process is being stopped by job
 * control (thread in group-stop), -ETIMEDOUT, -ESRCH.
 */
static int wait_interrupt_stop(struct inj_proc *p, pid_t tid, int64_t deadline)
{
	for (int i = 0; i < 32; i++) {
		int st, r = pt_wait(tid, p->pidfd, deadline, &st);

		if (r)
			return r;
		if ((st >> 16) == PTRACE_EVENT_STOP)
			return WSTOPSIG(st) == SIGTRAP ? 0 : -EBUSY;
		if (st >> 16)
			continue;
		r = pt_cont(tid, WSTOPSIG(st) == (SIGTRAP | 0x80) ? 0 : WSTOPSIG(st));
		if (r)
			return r;
	}
	return -EAGAIN;
}

/*
 * Resumes tid with PTRACE_SYSCALL until its next syscall stop (*si).
 * Group-stops are run through (detaching later re-applies them); signals
 * are passed on (our code runs with all signals blocked, so they stay
 * pending) except faults, which mean our code crashed: -EFAULT with *fault
 * set, the thread held at that signal-delivery stop for the caller to
 * restore.
 */
static int next_syscall_stop(struct inj_proc *p, pid_t tid, int64_t deadline, struct pt_sysinfo *si,
			     int *fault)
{
	int sig = 0;

	for (int i = 0; i < 1024; i++) {
		int st, r = pt_syscall(tid, sig);

		sig = 0;
		if (r)
			return r;
		r = pt_wait(tid, p->pidfd, deadline, &st);
		if (r)
			return r;
		if (WSTOPSIG(st) == (SIGTRAP | 0x80))
			return pt_get_sysinfo(tid, si);
		if (st >> 16)
			continue;
		switch (WSTOPSIG(st)) {
		case SIGSEGV: case SIGBUS: case SIGILL: case SIGFPE: case SIGTRAP: case SIGSYS:
			*fault = WSTOPSIG(st);
			return -EFAULT;
		default:
			sig = WSTOPSIG(st);
		}
	}
	return -EAGAIN;
}

/* Puts t's own state back with ptrace and detaches: FP first, then the
 * mask, the registers last, so that if we die in between, the thread
 * (still at our syscall stop, its rt_sigreturn pending, or at a fault stop
 * with the signal discarded by the kernel's detach) is never left with
 * its own registers but our mask or vector state. */
static int restore_by_tracer(pid_t tid, const struct arch_thread *t)
{
	int r = arch_set_fpstate(tid, t);

	if (!r)
		r = pt_set_sigmask(tid, t->sigmask);
	if (!r)
		r = arch_set_regs(tid, &t->restore_tracer);
	int d = pt_detach(tid, 0);
	return r ? r : d;
}

/* ---- the remote side ------------------------------------------------------ */

static size_t page_size(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	return ps > 0 ? (size_t)ps : 4096;
}

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

static int read_shared(struct inj_proc *p, size_t off, void *buf, size_t len)
{
	return pt_read_mem(p->pid, p->memfd, p->data_base + off, buf, len);
}

static int write_shared(struct inj_proc *p, size_t off, const void *buf, size_t len)
{
	return pt_write_mem(p->pid, p->memfd, p->data_base + off, buf, len);
}

#define SH_OFF(f) offsetof(struct rm_shared, f)

static void fill_shared(struct inj_proc *p, struct rm_shared *s, const struct arch_gadgets *g)
{
	const struct inj_info *in = &p->info;
	uint64_t code = p->map_base;

	memset(s, 0, sizeof(*s));
	s->magic = RM_MAGIC;
	s->fn_pthread_create = in->fn_pthread_create;
	s->worker_c = code + ((uintptr_t)rm_worker_main - (uintptr_t)__start_inj_remote);
	s->worker_entry = code + arch_off_worker_entry();
	s->map_base = p->map_base;
	s->map_len = p->map_len;
	s->fn_munmap = in->fn_munmap;
	s->fn_pthread_detach = in->fn_pthread_detach;
	s->fn_pthread_self = in->fn_pthread_self;
	s->fn_dlopen = in->fn_dlopen;
	s->fn_dlsym = in->fn_dlsym;
	s->fn_dlclose = in->fn_dlclose;
	s->fn_dlerror = in->fn_dlerror;
	s->fn_poll = in->fn_poll;
	s->fn_nanosleep = in->fn_nanosleep;
	s->fn_close = in->fn_close;
	s->fn_syscall = in->fn_syscall;
	s->dlopen_extra = in->old_dlopen ? 0x80000000u : 0; /* __RTLD_DLOPEN */
	s->tracer_pid = getpid();
	s->nr_gettid = SYS_gettid;
	s->nr_pidfd_open = SYS_pidfd_open;
	s->nr_memfd_create = SYS_memfd_create;
	s->nr_kill = SYS_kill;
	s->nr_rt_sigprocmask = SYS_rt_sigprocmask;
	s->nr_prctl = SYS_prctl;
	snprintf(s->worker_name, sizeof(s->worker_name), "%s", RM_WORKER_NAME);
	/* glibc's SIGSETXID is 33, musl's SIGSYNCCALL 34 (bit n-1). */
	s->unblock_mask = 1ull << ((in->musl ? 34 : 33) - 1);
	s->esrch = ESRCH;
	(void)g;
}

/* ---- hijack --------------------------------------------------------------- */

/* Where the thread's stack has room for a chain + frame below the red zone. */
static int chain_place(const struct proc_maps *maps, const struct arch_thread *t, size_t need,
		       uint64_t *chain_addr)
{
	uint64_t sp = arch_sp(&t->regs);
	uint64_t f = (sp - 128 - need - 64) & ~(uint64_t)(arch_frame_align() - 1);
	uint64_t a = f - arch_chain_size();
	const struct proc_map *mp = proc_maps_find(maps, sp - 1);

	if (!mp || mp->perms[1] != 'w' || a < mp->start || sp > mp->end)
		return -ENOSPC;
	*chain_addr = a;
	return 0;
}

/* Leaves a thread that runs our code to its own way back (the frame):
 * detach, stopping it first if it is running. */
static void let_go(struct inj_proc *p, pid_t tid)
{
	if (pt_detach(tid, 0) == 0)
		return;
	if (pt_interrupt(tid) == 0 &&
	    wait_interrupt_stop(p, tid, inj_now_ns() + 1000000000ll) != -ETIMEDOUT)
		pt_detach(tid, 0);
}

/*
 * While the hijacked thread runs the stub on its own (PTRACE_CONT), waits
 * until the stub reports through memory that the worker exists, handling
 * the ptrace stops that may come meanwhile.  Returns 0 when the stub is
 * done (the thread is then parked in the stub or already restored by its
 * frame, still running), 1 when it parked without starting the worker (its
 * mprotect failed), -EFAULT (fault: the thread is held at that stop),
 * -ETIMEDOUT, -ESRCH.
 */
static int wait_stub(struct inj_proc *p, pid_t tid, int64_t deadline, int *fault)
{
	int64_t start = inj_now_ns();
	int spins = 0;

	for (;;) {
		uint32_t done = 0;
		int st, r;
		int w = pt_poll_stop(tid, &st);

		if (w < 0)
			return w;
		if (w == 1) {
			if (st >> 16) {
				/* Group-stop: keep running our code through it
				 * (detaching later re-applies the stop). */
				r = pt_cont(tid, 0);
			} else {
				switch (WSTOPSIG(st)) {
				case SIGSEGV: case SIGBUS: case SIGILL: case SIGFPE: case SIGTRAP: case SIGSYS:
					*fault = WSTOPSIG(st);
					return -EFAULT;
				}
				r = pt_cont(tid, WSTOPSIG(st));
			}
			if (r)
				return r;
			continue;
		}
		r = read_shared(p, SH_OFF(stub_done), &done, sizeof(done));
		if (r)
			return r;
		if (done)
			return 0;
		/* Parked without having said so: its mprotect failed (the data
		 * stayed read-only), it waits for us in its ppoll. */
		if ((spins & 63) == 63) {
			uint64_t a0 = 0, pc = 0;
			if (proc_task_syscall_full(p->pid, tid, &a0, &pc) == SYS_ppoll &&
			    pc >= p->map_base && pc < p->map_base + p->code_len) {
				/* The stub may have set stub_done and parked
				 * between our read of the flag and this look:
				 * read it again before calling it a failure. */
				r = read_shared(p, SH_OFF(stub_done), &done, sizeof(done));
				if (r)
					return r;
				return done ? 0 : 1;
			}
		}
		if (proc_gone(p))
			return -ESRCH;
		int64_t now = inj_now_ns();
		if (now > deadline)
			return -ETIMEDOUT;
		spins++;
		inj_pause(now - start);
	}
}

/*
 * Runs the whole hijack on tid, stopped at a safe point with t read.  On
 * return the thread is detached in every case.  Returns 0 (worker
 * created), -EAGAIN (nothing was changed: try another thread), or an
 * error with reason set.
 *
 * Stops of the hijacked thread: the interrupt, mmap's entry and exit, and
 * one interrupt at the end; everything else runs on its own.  At every
 * instant from the first register change on, the thread's way back without
 * us is a signal frame in the target's memory (see INJECTION.md, principle 4).
 */
static int hijack(struct inj_proc *p, pid_t tid, struct arch_thread *t, struct proc_maps *maps,
		  const struct arch_gadgets *g, uint64_t errno_loc, int64_t t_stop, int64_t deadline,
		  char *reason)
{
	size_t fsz = arch_frame_size(t), ps = page_size();
	uint8_t *frame = NULL, chain[64];
	uint64_t chain_addr = 0, a[6] = { 0 }, base, faddr, stack_top, sr_sp;
	struct arch_regs regs;
	struct pt_sysinfo si;
	struct rm_shared *sh = NULL;
	int r, fault = 0;
	bool chain_ok = arch_gadgets_complete(g);
	int64_t step_deadline = deadline;

	/* Even when our overall deadline is near, give the thread's own
	 * steps time: they are short and abandoning them halfway costs more. */
	if (step_deadline < inj_now_ns() + 2000000000ll)
		step_deadline = inj_now_ns() + 2000000000ll;

	p->code_len = round_up((size_t)(__stop_inj_remote - __start_inj_remote), ps);
	p->data_len = round_up(sizeof(struct rm_shared) + 64 + fsz + 64 + STACK_SIZE, ps);
	p->map_len = p->code_len + p->data_len;
	frame = calloc(1, fsz);
	sh = calloc(1, sizeof(*sh));
	if (!frame || !sh) {
		free(frame);
		free(sh);
		pt_detach(tid, 0);
		return setr(reason, -ENOMEM, "out of memory");
	}

	/* Step 1: mmap(NULL, len, PROT_READ|PROT_EXEC, private anonymous).
	 * Code and data start read+exec: the stub makes the data part
	 * read+write itself, so no page is ever writable and executable. */
	a[1] = p->map_len;
	a[2] = PROT_READ | PROT_EXEC;
	a[3] = MAP_PRIVATE | MAP_ANONYMOUS;
	a[4] = (uint64_t)-1;
	if (chain_ok && chain_place(maps, t, fsz, &chain_addr) == 0) {
		/* Self-restoring: the syscall by gadgets, then rt_sigreturn on
		 * a frame below the thread's own stack pointer (red zone kept). */
		faddr = chain_addr + arch_chain_size();
		r = arch_build_frame(t, faddr, frame, fsz, &sr_sp);
		if (!r) {
			arch_setup_chain(t, g, chain_addr, chain, frame, SYS_mmap, a, &regs);
			r = pt_write_mem(p->pid, p->memfd, faddr, frame, fsz);
		}
		if (!r)
			r = pt_write_mem(p->pid, p->memfd, chain_addr, chain, arch_chain_size());
		if (r) {
			pt_detach(tid, 0);
			free(frame);
			free(sh);
			return r == -ESRCH ? setr(reason, -ESRCH, "process exited") : -EAGAIN;
		}
		p->st.gadget_path = true;
	} else {
		/* No gadgets (or no room on the stack): a bare syscall
		 * instruction.  If we die before the next register change, the
		 * thread runs on from libc with our registers: recorded. */
		if (!g->syscall_any) {
			pt_detach(tid, 0);
			free(frame);
			free(sh);
			return setr(reason, -ENOEXEC, "no syscall instruction found in libc");
		}
		arch_setup_bare_syscall(t, g->syscall_any, SYS_mmap, a, &regs);
		p->st.gadget_path = false;
		logf_(p, INJ_LOG_WARN, "no gadgets for a self-restoring first syscall: "
		      "tid %d is exposed until its pages are mapped", (int)tid);
	}

	/* Registers first, then block every signal: dying in between leaves
	 * a thread that runs our self-restoring chain with its own mask. */
	r = arch_set_regs(tid, &regs);
	if (!r)
		r = pt_set_sigmask(tid, ~0ull);
	if (r)
		goto lost;

	r = next_syscall_stop(p, tid, step_deadline, &si, &fault);
	p->st.stops++;
	if (!r && !(si.op == PTRACE_SYSCALL_INFO_ENTRY && si.nr == SYS_mmap))
		r = -EPROTO;
	if (!r)
		r = next_syscall_stop(p, tid, step_deadline, &si, &fault);
	p->st.stops++;
	if (!r && si.op != PTRACE_SYSCALL_INFO_EXIT)
		r = -EPROTO;
	if (r)
		goto lost;
	if (si.rval < 0 && si.rval > -4096) {
		restore_by_tracer(tid, t);
		free(frame);
		free(sh);
		return setr(reason, (int)si.rval, "mmap in the target failed: %s", strerror((int)-si.rval));
	}
	base = (uint64_t)si.rval;
	p->map_base = base;
	p->data_base = base + p->code_len;
	logf_(p, INJ_LOG_DEBUG, "tid %d: pages mapped at %#llx, %llu us after the stop", (int)tid,
	      (unsigned long long)base, (unsigned long long)us_since(t_stop));

	/* Step 2, still at mmap's exit stop (the chain's rt_sigreturn is
	 * pending): code and data through /proc/PID/mem (the pages are RX),
	 * with the frame the stub returns through. */
	fill_shared(p, sh, g);
	sh->fn_errno_location = errno_loc;
	sh->park_timeout[0] = 2; /* s: then the stub restores itself */
	faddr = p->data_base + round_up(sizeof(*sh), 64);
	stack_top = (p->data_base + p->data_len - 64) & ~(uint64_t)15;
	r = arch_build_frame(t, faddr, frame, fsz, &sr_sp);
	if (!r)
		r = pt_write_mem_force(p->memfd, base, __start_inj_remote,
				       (size_t)(__stop_inj_remote - __start_inj_remote));
	if (!r)
		r = pt_write_mem_force(p->memfd, p->data_base, sh, sizeof(*sh));
	if (!r)
		r = pt_write_mem_force(p->memfd, faddr, frame, fsz);
	if (r) {
		restore_by_tracer(tid, t);
		free(frame);
		free(sh);
		return setr(reason, r, "cannot write into the target: %s", strerror(-r));
	}

	/* Step 3: one register write moves the thread from the chain to the
	 * stub; from here its way back is the frame in the data area.  It runs
	 * pthread_create on its own (no syscall stops). */
	arch_setup_hijack(t, base, p->data_base, p->data_len, stack_top, sr_sp, &regs);
	r = arch_set_regs(tid, &regs);
	if (!r)
		r = pt_cont(tid, 0);
	if (r)
		goto lost;
	r = wait_stub(p, tid, step_deadline, &fault);
	bool no_rw = r == 1;
	if (no_rw)
		r = 0;
	if (r == -ETIMEDOUT) {
		/* pthread_create waits for a lock (a malloc wrapper of the
		 * program's own, held by this very thread?), or the stub could
		 * not make its data writable.  Its way back is the frame: let it
		 * go, it restores itself whenever it gets on. */
		let_go(p, tid);
		free(frame);
		free(sh);
		p->st.stopped_us = us_since(t_stop);
		return setr(reason, -ETIMEDOUT,
			    "tid %d did not come back from pthread_create in time (waiting for a lock?); "
			    "it restores itself when it gets it", (int)tid);
	}
	if (r)
		goto lost;
	logf_(p, INJ_LOG_DEBUG, "tid %d: pthread_create done %llu us after the stop", (int)tid,
	      (unsigned long long)us_since(t_stop));

	/* Step 4: the stub is parked (or about to be).  Stop it there and put
	 * its own state back with ptrace, or let its frame do it.  Nothing the
	 * thread ran since the first stop touched its restart block: mmap,
	 * mprotect, pthread_create's calls, ppoll (-ERESTARTNOHAND). */
	int32_t cret = -1;
	if (!no_rw)
		read_shared(p, SH_OFF(create_ret), &cret, sizeof(cret));
	r = pt_interrupt(tid);
	if (!r)
		r = wait_interrupt_stop(p, tid, step_deadline);
	p->st.stops++;
	for (int i = 0; r == -EBUSY && i < 8; i++) {
		/* A group-stop came first: run through it and ask again. */
		r = pt_cont(tid, 0);
		if (!r)
			r = pt_interrupt(tid);
		if (!r)
			r = wait_interrupt_stop(p, tid, step_deadline);
	}
	if (r)
		goto lost;
	struct arch_regs now;
	size_t nsz = sizeof(now.w);
	r = pt_get_regset(tid, 1 /* NT_PRSTATUS */, now.w, &nsz);
	if (r)
		goto lost;
	uint64_t pc = arch_pc(&now);
	if (pc < base || pc >= base + p->code_len) {
		/* The park timed out before we came: the frame restored it. */
		r = pt_detach(tid, 0);
		p->st.tracer_restore = false;
	} else if (p->opts.restore_via_frame && !t->restart_block) {
		/* Test mode: run the stub's own rt_sigreturn and check the
		 * thread really is back where it was. */
		arch_set_pc(&now, base + arch_off_hijack_sigreturn());
		arch_skip_syscall(&now);
		r = arch_set_regs(tid, &now);
		if (!r)
			r = next_syscall_stop(p, tid, step_deadline, &si, &fault);
		if (!r && !(si.op == PTRACE_SYSCALL_INFO_ENTRY && si.nr == SYS_rt_sigreturn))
			r = -EPROTO;
		if (!r)
			r = next_syscall_stop(p, tid, step_deadline, &si, &fault);
		p->st.stops += 2;
		if (r == -EFAULT) {
			restore_by_tracer(tid, t);
			r = -EPROTO;
		} else if (!r) {
			r = pt_detach(tid, 0);
		}
		p->st.tracer_restore = false;
	} else {
		r = restore_by_tracer(tid, t);
		p->st.tracer_restore = true;
	}
	p->st.stopped_us = us_since(t_stop);
	logf_(p, INJ_LOG_DEBUG, "tid %d: back to its own code %llu us after the stop (%d stops)", (int)tid,
	      (unsigned long long)p->st.stopped_us, p->st.stops);
	free(frame);
	free(sh);
	if (r)
		return setr(reason, r, "restoring tid %d failed: %s", (int)tid, strerror(-r));
	if (no_rw)
		return setr(reason, -EACCES, "the target refused to make our data pages writable (mprotect)");
	if (cret)
		return setr(reason, -cret, "pthread_create in the target failed: %s", strerror(cret));
	return 0;

lost:
	/* Something broke while the thread ran our code. */
	free(frame);
	free(sh);
	if (r == -EFAULT) {
		restore_by_tracer(tid, t);
		return setr(reason, -EPROTO, "our code faulted in tid %d (signal %d); thread restored",
			    (int)tid, fault);
	}
	if (r == -ESRCH)
		return setr(reason, -ESRCH, "process exited");
	let_go(p, tid);
	return setr(reason, r, "lost control of tid %d: %s", (int)tid, strerror(-r));
}

/* rseq: a thread stopped inside a critical section must resume at its
 * abort handler, or it would commit on data another thread changed. */
static void rseq_fixup(struct inj_proc *p, pid_t tid, struct arch_thread *t)
{
	uint64_t abi = 0, cs = 0, rc[4];
	uint32_t len = 0;
	uint64_t pc = arch_pc(&t->restore);

	if (pt_get_rseq(tid, &abi, &len) || !abi)
		return;
	if (pt_read_mem(p->pid, p->memfd, abi + 8, &cs, 8) || !cs)
		return;
	/* struct rseq_cs: u32 version, u32 flags, u64 start_ip,
	 * u64 post_commit_offset, u64 abort_ip */
	if (pt_read_mem(p->pid, p->memfd, cs, rc, sizeof(rc)))
		return;
	if (pc >= rc[1] && pc < rc[1] + rc[2]) {
		arch_set_pc(&t->restore, rc[3]);
		arch_set_pc(&t->restore_tracer, rc[3]);
		logf_(p, INJ_LOG_DEBUG, "tid %d in an rseq critical section: resumes at its abort handler",
		      (int)tid);
	}
}

/* Candidate order: asleep in a syscall first (waking it costs it nothing),
 * then running, then asleep in calls that a ptrace stop turns into EINTR
 * (epoll), then uninterruptible. */
static int thread_rank(pid_t pid, pid_t tid)
{
	char s = proc_task_state(pid, tid);
	long nr;

	switch (s) {
	case 'S':
		nr = proc_task_syscall(pid, tid);
		if (nr == SYS_epoll_wait || nr == SYS_epoll_pwait || nr == SYS_epoll_pwait2)
			return 2;
		return 0;
	case 'R':
		return 1;
	case 'D':
		return 3;
	default:
		return -1; /* stopped, traced, zombie or gone */
	}
}

static void drain_pending(struct inj_proc *p)
{
	for (int i = 0; i < p->npending; i++) {
		int st;
		if (pt_wait(p->pending[i], p->pidfd, inj_now_ns() + 200000000ll, &st) == 0)
			pt_detach(p->pending[i], 0);
	}
	p->npending = 0;
}

static int find_gadgets(struct inj_proc *p, const struct proc_maps *maps, struct mods *mods,
			struct arch_gadgets *g)
{
	struct mod *libc = mods_by_kind(mods, MOD_LIBC);
	size_t chunk = 1 << 20;
	uint8_t *buf = malloc(chunk + 16);

	memset(g, 0, sizeof(*g));
	if (!buf)
		return -ENOMEM;
	for (int i = 0; libc && i < maps->n && !arch_gadgets_complete(g); i++) {
		const struct proc_map *mp = &maps->v[i];
		if (mp->dev != libc->dev || mp->ino != libc->ino || mp->perms[2] != 'x')
			continue;
		for (uint64_t a = mp->start; a < mp->end && !arch_gadgets_complete(g); a += chunk) {
			size_t n = mp->end - a < chunk + 8 ? mp->end - a : chunk + 8;
			if (pt_read_mem(p->pid, p->memfd, a, buf, n))
				break;
			arch_find_gadgets(buf, n, a, g);
		}
	}
	free(buf);
	return 0;
}

static uint64_t lookup_errno_location(struct mods *mods)
{
	struct mod *libc = mods_by_kind(mods, MOD_LIBC);
	return libc ? elfsym_lookup(&libc->syms, "__errno_location") : 0;
}

static int wait_worker(struct inj_proc *p, int64_t deadline, char *reason)
{
	uint32_t state = 0;
	int64_t start = inj_now_ns();

	for (;;) {
		int r = read_shared(p, SH_OFF(worker_state), &state, sizeof(state));
		if (r)
			return setr(reason, r == -ESRCH ? -ESRCH : r, r == -ESRCH ? "process exited"
						: "cannot read the data page: %s", strerror(-r));
		if (state == RM_W_IDLE)
			break;
		if (state != RM_W_NONE)
			return setr(reason, -EPROTO, "the worker thread ended early");
		if (proc_gone(p))
			return setr(reason, -ESRCH, "process exited");
		int64_t now = inj_now_ns();
		if (now > deadline)
			return setr(reason, -ETIMEDOUT, "the worker thread did not start in time");
		inj_pause(now - start);
	}
	uint32_t one = 1;
	int32_t wt = 0;
	read_shared(p, SH_OFF(worker_tid), &wt, sizeof(wt));
	p->st.worker_tid = wt;
	int r = write_shared(p, SH_OFF(tracer_ack), &one, sizeof(one));
	if (r)
		return setr(reason, r, "cannot write the data page: %s", strerror(-r));
	p->worker_ok = true;
	return 0;
}

/*
 * While a thread of the target is held, the tracer is the one thing it
 * waits for.  On a loaded machine every hand-over (stop -> tracer,
 * resume -> thread) could otherwise wait a scheduler tick behind a busy
 * thread: the tracer runs on the CPU the thread last ran on (where a
 * resumed thread is woken: the tracer's sleeps then leave that CPU to it)
 * at the highest priority it may take (so that it is not preempted in the
 * middle of its short work).  Best effort: without CAP_SYS_NICE or with a
 * cpuset that excludes that CPU, the step is skipped.  Only the calling
 * thread is changed, and only until boost_end().
 */
struct boost {
	cpu_set_t cpus;
	int nice;
	bool pinned, niced;
};

static void boost_begin(const struct inj_proc *p, pid_t tid, struct boost *b)
{
	int cpu = proc_task_cpu(p->pid, tid);

	b->pinned = b->niced = false;
	if (cpu >= 0 && cpu < CPU_SETSIZE && sched_getaffinity(0, sizeof(b->cpus), &b->cpus) == 0 &&
	    CPU_ISSET(cpu, &b->cpus)) {
		cpu_set_t one;

		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		b->pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
	}
	errno = 0;
	b->nice = getpriority(PRIO_PROCESS, 0);
	if (!errno && b->nice > -20)
		b->niced = setpriority(PRIO_PROCESS, 0, -20) == 0;
}

static void boost_end(const struct boost *b)
{
	if (b->niced)
		setpriority(PRIO_PROCESS, 0, b->nice);
	if (b->pinned)
		sched_setaffinity(0, sizeof(b->cpus), &b->cpus);
}

/*
 * Stops tid, judges it, and hijacks it when safe.  Returns 1 (worker
 * started), 0 (not this one: the thread is detached untouched, or left in
 * p->pending if it would not stop), or -errno with reason set (give up).
 */
static int try_thread_held(struct inj_proc *p, pid_t tid, struct safepoint *sp, struct proc_maps *maps,
			   const struct arch_gadgets *g, uint64_t errno_loc, int64_t deadline, char *reason)
{
	char why[INJ_REASONLEN] = "";
	struct arch_thread t;
	int64_t t_stop, d;
	int r;

	if (proc_gone(p))
		return setr(reason, -ESRCH, "process exited");
	r = pt_seize(tid);
	if (r == -EPERM) {
		/* Another tracer (a concurrent heapsnap, strace) got there
		 * after our preflight: name it rather than blame policy. */
		char path[80], comm[32];
		struct proc_status ts;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)p->pid, (int)tid);
		if (proc_status_read(path, &ts) == 0 && ts.tracer_pid) {
			proc_read_comm(ts.tracer_pid, comm, sizeof(comm));
			return setr(reason, -EBUSY, "already traced by pid %d (%s)", (int)ts.tracer_pid,
				    comm[0] ? comm : "?");
		}
	}
	if (r == -EPERM && !p->st.threads_tried && proc_task_state(p->pid, tid))
		return setr(reason, -EPERM, "not permitted: %s",
			    p->info.warning[0] ? p->info.warning : "the kernel refused ptrace (LSM or container policy)");
	if (r)
		return 0; /* gone, or exiting */
	p->st.threads_tried++;
	int64_t t_int = inj_now_ns();
	d = t_int + INTERRUPT_WAIT_MS * 1000000ll;
	r = pt_interrupt(tid);
	if (!r)
		r = wait_interrupt_stop(p, tid, d < deadline ? d : deadline);
	if (r == -EBUSY) {
		pt_detach(tid, 0);
		return setr(reason, -EBUSY, "process is being stopped (job control)");
	}
	if (r == -ESRCH && proc_gone(p))
		return setr(reason, -ESRCH, "process exited");
	if (r) {
		/* Not stopped (uninterruptible sleep) or gone: come back later. */
		if (pt_detach(tid, 0) != 0 && r != -ESRCH && p->npending < MAX_PENDING)
			p->pending[p->npending++] = tid;
		return 0;
	}
	t_stop = inj_now_ns();
	if (arch_get_thread(tid, &t)) {
		pt_detach(tid, 0);
		return 0;
	}
	r = safepoint_check(sp, tid, &t.regs, why, sizeof(why));
	logf_(p, INJ_LOG_DEBUG, "tid %d: stopped %llu us after the interrupt, registers and stack judged "
	      "in %llu us", (int)tid, (unsigned long long)(t_stop - t_int) / 1000,
	      (unsigned long long)us_since(t_stop));
	if (r != 1) {
		arch_free_thread(&t);
		pt_detach(tid, 0);
		uint64_t us = us_since(t_stop);
		if (us > p->st.others_max_stopped_us)
			p->st.others_max_stopped_us = us;
		if (r == 0) {
			snprintf(p->st.unsafe_seen, sizeof(p->st.unsafe_seen), "%s", why);
			logf_(p, INJ_LOG_DEBUG, "unsafe: %s", why);
		}
		return 0;
	}
	rseq_fixup(p, tid, &t);
	p->st.hijacked_tid = tid;
	r = hijack(p, tid, &t, maps, g, errno_loc, t_stop, deadline, reason);
	arch_free_thread(&t);
	if (r == -EAGAIN) {
		p->st.hijacked_tid = 0;
		return 0;
	}
	return r ? r : 1;
}

/* try_thread_held() with the tracer boosted (see struct boost). */
static int try_thread(struct inj_proc *p, pid_t tid, struct safepoint *sp, struct proc_maps *maps,
		      const struct arch_gadgets *g, uint64_t errno_loc, int64_t deadline, char *reason)
{
	struct boost b;
	int r;

	boost_begin(p, tid, &b);
	r = try_thread_held(p, tid, sp, maps, g, errno_loc, deadline, reason);
	boost_end(&b);
	return r;
}

int inj_open(pid_t pid, const struct inj_opts *o, struct inj_proc **out, char reason[INJ_REASONLEN])
{
	struct inj_proc *p;
	struct proc_maps maps;
	struct mods mods;
	struct safepoint sp;
	struct arch_gadgets g;
	int r, backoff = 10;
	bool sp_ok = false;

	*out = NULL;
	if (reason)
		reason[0] = 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return setr(reason, -ENOMEM, "out of memory");
	p->t0 = inj_now_ns();
	p->pid = pid;
	p->pidfd = -1;
	p->memfd = -1;
	if (o)
		p->opts = *o;
	if (p->opts.timeout_ms <= 0)
		p->opts.timeout_ms = DEFAULT_TIMEOUT_MS;
	int64_t deadline = p->t0 + (int64_t)p->opts.timeout_ms * 1000000;

	r = preflight_full(pid, &p->info, reason, &maps, &mods);
	if (r)
		goto out;
	if (p->info.seccomp == 2 && !p->opts.allow_seccomp_filter) {
		r = setr(reason, -EACCES, "seccomp filter mode: the loader's system calls may be refused");
		goto out;
	}
	if (p->info.warning[0])
		logf_(p, INJ_LOG_WARN, "%s", p->info.warning);
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p->pidfd < 0) {
		r = setr(reason, errno == ESRCH ? -ESRCH : -errno, errno == ESRCH ? "process exited"
			 : "pidfd_open: %s", strerror(errno));
		goto out;
	}
	p->memfd = pt_mem_open(pid);
	if (p->memfd < 0) {
		r = setr(reason, p->memfd == -EACCES ? -EPERM : p->memfd, "cannot open /proc/%d/mem: %s",
			 (int)pid, strerror(-p->memfd));
		p->memfd = -1;
		goto out;
	}
	find_gadgets(p, &maps, &mods, &g);
	uint64_t errno_loc = lookup_errno_location(&mods);
	r = safepoint_init(&sp, pid, p->memfd, &mods);
	if (r) {
		setr(reason, r, "cannot set up the unwinder");
		goto out;
	}
	sp_ok = true;

	for (;;) {
		pid_t *tids = NULL;
		int n;

		p->st.rounds++;
		if (proc_gone(p)) {
			r = setr(reason, -ESRCH, "process exited");
			break;
		}
		/* Fresh maps each round: thread stacks and libraries come and go. */
		proc_maps_free(&maps);
		r = proc_maps_read(pid, &maps);
		if (r) {
			setr(reason, r, r == -ESRCH ? "process exited" : "cannot read maps");
			break;
		}
		r = mods_refresh(pid, &maps, &mods);
		if (r) {
			setr(reason, r, "out of memory");
			break;
		}
		/* Symbols of libc and the program now, not while a thread waits. */
		for (int k = 0; k < mods.n; k++)
			if (mods.v[k].kind == MOD_LIBC || mods.v[k].kind == MOD_EXE)
				mods_syms(&mods, &mods.v[k]);
		n = proc_tasks(pid, &tids);
		if (n < 0) {
			r = setr(reason, n == -ESRCH ? -ESRCH : n, "process exited");
			break;
		}
		/* The slow part of unwinding (unwind tables from the files), done
		 * on threads asleep in syscalls before we stop any of them. */
		if (p->st.rounds == 1)
			for (int i = 0; i < n && i < 64; i++)
				safepoint_prewarm(&sp, tids[i], 5000000);
		r = 0;
		for (int rank = 0; rank <= 3 && !r; rank++)
			for (int i = 0; i < n && !r; i++)
				if (thread_rank(pid, tids[i]) == rank)
					r = try_thread(p, tids[i], &sp, &maps, &g, errno_loc, deadline, reason);
		free(tids);
		if (r == 1) {
			r = 0;
			break;
		}
		if (r)
			break;
		if (inj_now_ns() + (int64_t)backoff * 1000000 >= deadline) {
			r = setr(reason, -ETIMEDOUT, "no safe point within %d ms%s%s",
				 p->opts.timeout_ms, p->st.unsafe_seen[0] ? ": last seen: " : "",
				 p->st.unsafe_seen);
			if (!p->st.threads_tried)
				setr(reason, -ETIMEDOUT, "no safe point within %d ms: no thread stopped",
				     p->opts.timeout_ms);
			break;
		}
		nap_ms(backoff);
		if (backoff < 50)
			backoff += 10;
	}
	drain_pending(p);
	if (!r) {
		r = wait_worker(p, inj_now_ns() + (int64_t)p->opts.timeout_ms * 1000000, reason);
	}
out:
	if (sp_ok)
		safepoint_fini(&sp);
	mods_free(&mods);
	proc_maps_free(&maps);
	p->st.open_wall_us = us_since(p->t0);
	p->st.wall_us = p->st.open_wall_us;
	if (r) {
		if (p->pidfd >= 0)
			close(p->pidfd);
		if (p->memfd >= 0)
			close(p->memfd);
		free(p);
		return r;
	}
	*out = p;
	return 0;
}

/* ---- worker commands ------------------------------------------------------ */

struct rm_reply {
	int32_t err, err_no;
	int64_t result, result2;
	char errmsg[RM_ERRLEN];
};

/* Sends one command (fields already written) and waits for the answer. */
static int rm_command(struct inj_proc *p, uint32_t op, struct rm_reply *rep, char *reason)
{
	int64_t start = inj_now_ns(), deadline = start + (int64_t)p->opts.timeout_ms * 1000000;
	uint32_t seq = ++p->seq, done = 0;
	int r;

	if (!p->worker_ok)
		return setr(reason, -EPIPE, "the worker thread is not running");
	r = write_shared(p, SH_OFF(op), &op, sizeof(op));
	if (!r)
		r = write_shared(p, SH_OFF(cmd_seq), &seq, sizeof(seq));
	if (r)
		return setr(reason, r, r == -ESRCH ? "process exited" : "cannot write the data page: %s",
			    strerror(-r));
	for (;;) {
		r = read_shared(p, SH_OFF(done_seq), &done, sizeof(done));
		if (r && op == RM_OP_QUIT && r != -ESRCH)
			return 0; /* answered and already unmapped its pages */
		if (r)
			return setr(reason, r, r == -ESRCH ? "process exited"
				    : "cannot read the data page: %s", strerror(-r));
		if (done == seq) {
			if (op == RM_OP_QUIT)
				return 0; /* the page is going away: nothing to read */
			break;
		}
		if (proc_gone(p))
			return setr(reason, -ESRCH, "process exited");
		int64_t now = inj_now_ns();
		if (now > deadline) {
			/* It is still busy: do not send it anything else. */
			p->worker_ok = false;
			return setr(reason, -ETIMEDOUT, "the worker thread did not answer within %d ms",
				    p->opts.timeout_ms);
		}
		inj_pause(now - start);
	}
	r = read_shared(p, SH_OFF(err), &rep->err, sizeof(rep->err));
	if (!r)
		r = read_shared(p, SH_OFF(err_no), &rep->err_no, sizeof(rep->err_no));
	if (!r)
		r = read_shared(p, SH_OFF(result), &rep->result, sizeof(rep->result));
	if (!r)
		r = read_shared(p, SH_OFF(result2), &rep->result2, sizeof(rep->result2));
	if (!r)
		r = read_shared(p, SH_OFF(errmsg), rep->errmsg, sizeof(rep->errmsg));
	rep->errmsg[sizeof(rep->errmsg) - 1] = 0;
	p->st.wall_us = us_since(p->t0);
	if (r)
		return setr(reason, r, "cannot read the data page: %s", strerror(-r));
	return 0;
}

static int put_str(struct inj_proc *p, size_t off, size_t cap, const char *s)
{
	size_t n = strlen(s) + 1;

	if (n > cap)
		return -ENAMETOOLONG;
	return write_shared(p, off, s, n);
}

/* Copies the file into a memfd of the target; returns the target's fd. */
static int load_via_memfd(struct inj_proc *p, const char *path, int *rfd, char *reason)
{
	struct rm_reply rep;
	char proc_path[64];
	int r, in, out;

	r = put_str(p, SH_OFF(path), RM_PATHLEN, "heapsnap-payload");
	if (r)
		return setr(reason, r, "cannot write the data page: %s", strerror(-r));
	r = rm_command(p, RM_OP_MEMFD, &rep, reason);
	if (r)
		return r;
	if (rep.err)
		return setr(reason, -rep.err_no ? -rep.err_no : -EIO, "memfd_create in the target failed: %s",
			    strerror(rep.err_no));
	*rfd = (int)rep.result;
	snprintf(proc_path, sizeof(proc_path), "/proc/%d/fd/%d", (int)p->pid, *rfd);
	in = open(path, O_RDONLY | O_CLOEXEC);
	out = open(proc_path, O_WRONLY | O_CLOEXEC);
	r = 0;
	if (in < 0 || out < 0) {
		r = -errno;
	} else {
		char buf[65536];
		ssize_t k;
		while ((k = read(in, buf, sizeof(buf))) > 0)
			if (write(out, buf, k) != k) {
				r = -EIO;
				break;
			}
		if (k < 0)
			r = -errno;
	}
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (r) {
		uint64_t fd = *rfd;
		write_shared(p, SH_OFF(args), &fd, sizeof(fd));
		rm_command(p, RM_OP_CLOSE, &rep, NULL);
		return setr(reason, r, "cannot fill the target's memfd: %s", strerror(-r));
	}
	return 0;
}

int inj_load(struct inj_proc *p, const char *path, uint64_t *handle, bool *already_loaded,
	     char reason[INJ_REASONLEN])
{
	struct stat mine, theirs;
	char rpath[PATH_MAX + 64];
	struct rm_reply rep;
	uint32_t flags = RM_LOAD_TRY_NOLOAD;
	bool memfd = false;
	int r, rfd = -1;

	if (reason)
		reason[0] = 0;
	*handle = 0;
	*already_loaded = false;
	if (!path || path[0] != '/')
		return setr(reason, -EINVAL, "library path must be absolute");
	if (stat(path, &mine) < 0)
		return setr(reason, -errno, "cannot access '%s': %s", path, strerror(errno));
	snprintf(rpath, sizeof(rpath), "/proc/%d/root%s", (int)p->pid, path);
	if (stat(rpath, &theirs) < 0 || theirs.st_dev != mine.st_dev || theirs.st_ino != mine.st_ino) {
		/* Not the same file from the target's mount namespace. */
		r = load_via_memfd(p, path, &rfd, reason);
		if (r)
			return r;
		snprintf(rpath, sizeof(rpath), "/proc/self/fd/%d", rfd);
		flags |= RM_LOAD_CLOSE_FD;
		memfd = true;
		logf_(p, INJ_LOG_INFO, "%s is not visible in the target: loading it through memfd %d",
		      path, rfd);
	} else {
		snprintf(rpath, sizeof(rpath), "%s", path);
	}
	uint64_t a0 = (uint64_t)rfd;
	r = put_str(p, SH_OFF(path), RM_PATHLEN, rpath);
	if (!r)
		r = write_shared(p, SH_OFF(flags), &flags, sizeof(flags));
	if (!r)
		r = write_shared(p, SH_OFF(args), &a0, sizeof(a0));
	if (r)
		return setr(reason, r, r == -ENAMETOOLONG ? "path too long" : "cannot write the data page: %s",
			    strerror(-r));
	r = rm_command(p, RM_OP_LOAD, &rep, reason);
	if (r)
		return r;
	if (rep.err || !rep.result)
		return setr(reason, -EIO, "dlopen failed: %s", rep.errmsg[0] ? rep.errmsg : "no reason given");
	*handle = (uint64_t)rep.result;
	*already_loaded = rep.result2 != 0;

	struct inj_lib *nl = realloc(p->libs, (p->nlibs + 1) * sizeof(*nl));
	if (nl) {
		p->libs = nl;
		nl[p->nlibs].handle = *handle;
		nl[p->nlibs].path = strdup(rpath);
		nl[p->nlibs].dev = mine.st_dev;
		nl[p->nlibs].ino = mine.st_ino;
		nl[p->nlibs].memfd = memfd;
		if (nl[p->nlibs].path)
			p->nlibs++;
	}
	return 0;
}

int inj_call(struct inj_proc *p, uint64_t handle, const char *symbol, const uint64_t *args,
	     int nargs, uint64_t *ret, char reason[INJ_REASONLEN])
{
	uint64_t a[6] = { 0 };
	struct rm_reply rep;
	int r;

	if (reason)
		reason[0] = 0;
	if (nargs < 0 || nargs > 6 || (nargs && !args))
		return setr(reason, -EINVAL, "at most 6 arguments");
	for (int i = 0; i < nargs; i++)
		a[i] = args[i];
	r = put_str(p, SH_OFF(sym), RM_SYMLEN, symbol);
	if (!r)
		r = write_shared(p, SH_OFF(handle), &handle, sizeof(handle));
	if (!r)
		r = write_shared(p, SH_OFF(args), a, sizeof(a));
	if (r)
		return setr(reason, r, r == -ENAMETOOLONG ? "symbol name too long"
			    : "cannot write the data page: %s", strerror(-r));
	r = rm_command(p, RM_OP_CALL, &rep, reason);
	if (r)
		return r;
	if (rep.err == RM_E_NOSYM)
		return setr(reason, -ENOENT, "symbol '%s' not found%s%s", symbol,
			    rep.errmsg[0] ? ": " : "", rep.errmsg);
	if (rep.err)
		return setr(reason, -EIO, "call failed");
	*ret = (uint64_t)rep.result;
	return 0;
}

/* Is a file with this dev/ino still mapped in the target? */
static bool still_mapped(pid_t pid, dev_t dev, ino_t ino)
{
	struct proc_maps m;
	bool found = false;

	if (proc_maps_read(pid, &m))
		return false;
	for (int i = 0; i < m.n && !found; i++)
		found = m.v[i].dev == dev && m.v[i].ino == ino;
	proc_maps_free(&m);
	return found;
}

/* A worker of another heapsnap session in the process (its tid), or 0. */
static pid_t other_worker(struct inj_proc *p)
{
	pid_t *tids = NULL, found = 0;
	int n = proc_tasks(p->pid, &tids);

	for (int i = 0; i < n && !found; i++) {
		char path[80], comm[32] = "";
		if (tids[i] == p->st.worker_tid)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)p->pid, (int)tids[i]);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t k = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		comm[k > 0 ? k : 0] = 0;
		if (!strncmp(comm, RM_WORKER_NAME, strlen(RM_WORKER_NAME)))
			found = tids[i];
	}
	free(tids);
	return found;
}

int inj_unload(struct inj_proc *p, uint64_t handle, const char *stop_symbol,
	       char reason[INJ_REASONLEN])
{
	int64_t deadline = inj_now_ns() + (int64_t)p->opts.timeout_ms * 1000000;
	pid_t busy;
	struct inj_lib *lib = NULL;
	struct rm_reply rep;
	int r;

	if (reason)
		reason[0] = 0;
	for (int i = 0; i < p->nlibs; i++)
		if (p->libs[i].handle == handle)
			lib = &p->libs[i];
	if (!lib)
		return setr(reason, -EINVAL, "unknown library handle %#llx", (unsigned long long)handle);
	/* Another session's worker may be running a call inside the library:
	 * unmapping it would pull the code from under it.  Wait it out. */
	while ((busy = other_worker(p))) {
		if (proc_gone(p))
			return setr(reason, -ESRCH, "process exited");
		if (inj_now_ns() > deadline)
			return setr(reason, -EBUSY, "another heapsnap session is still working in the "
				    "process (thread %d); retry when it is done", (int)busy);
		nap_ms(10);
	}
	r = put_str(p, SH_OFF(sym), RM_SYMLEN, stop_symbol ? stop_symbol : "");
	if (!r)
		r = put_str(p, SH_OFF(path), RM_PATHLEN, lib->path);
	if (!r)
		r = write_shared(p, SH_OFF(handle), &handle, sizeof(handle));
	if (r)
		return setr(reason, r, r == -ENAMETOOLONG ? "symbol name too long"
			    : "cannot write the data page: %s", strerror(-r));
	r = rm_command(p, RM_OP_UNLOAD, &rep, reason);
	if (r)
		return r;
	if (rep.err == RM_E_NOSYM)
		return setr(reason, -ENOENT, "stop function '%s' not found%s%s", stop_symbol,
			    rep.errmsg[0] ? ": " : "", rep.errmsg);
	if (rep.err == RM_E_REFUSED)
		return setr(reason, -EBUSY, "library refused to unload: %s returned %lld",
			    stop_symbol, (long long)rep.result);
	if (rep.err)
		return setr(reason, -EIO, "dlclose failed: %s", rep.errmsg[0] ? rep.errmsg : "no reason given");
	if (rep.result2 || (!lib->memfd && still_mapped(p->pid, lib->dev, lib->ino)))
		return setr(reason, -EBUSY, "library cannot be unloaded: still mapped after dlclose (%s)",
			    p->info.musl ? "musl never unloads" :
			    "NODELETE, or still used by the process or another library");
	/* Gone: forget the handle. */
	free(lib->path);
	*lib = p->libs[--p->nlibs];
	return 0;
}

int inj_close(struct inj_proc *p)
{
	struct rm_reply rep;
	int r = 0;

	if (!p)
		return 0;
	if (p->worker_ok) {
		pid_t wt = p->st.worker_tid;
		r = rm_command(p, RM_OP_QUIT, &rep, NULL);
		if (!r) {
			/* It unmaps our pages and returns: wait until both are gone. */
			int64_t deadline = inj_now_ns() + (int64_t)p->opts.timeout_ms * 1000000;
			for (;;) {
				char path[80];
				struct proc_maps m;
				bool mapped = false;

				snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)p->pid, (int)wt);
				if (proc_maps_read(p->pid, &m) == 0) {
					mapped = proc_maps_find(&m, p->map_base) != NULL;
					proc_maps_free(&m);
				}
				if ((wt <= 0 || access(path, F_OK) < 0) && !mapped)
					break;
				if (proc_gone(p))
					break;
				if (inj_now_ns() > deadline) {
					r = -ETIMEDOUT;
					break;
				}
				nap_ms(1);
			}
		}
	}
	p->st.wall_us = us_since(p->t0);
	for (int i = 0; i < p->nlibs; i++)
		free(p->libs[i].path);
	free(p->libs);
	if (p->pidfd >= 0)
		close(p->pidfd);
	if (p->memfd >= 0)
		close(p->memfd);
	free(p);
	return r;
}

void inj_get_stats(const struct inj_proc *p, struct inj_stats *st)
{
	*st = p->st;
	st->wall_us = us_since(p->t0);
}

const struct inj_info *inj_get_info(const struct inj_proc *p)
{
	return &p->info;
}
