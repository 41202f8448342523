/* remote.c - the worker thread's body: runs INSIDE the target, copied there as raw bytes (section inj_remote). */
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/*
 * Rules for everything in this file (it is copied byte for byte into the
 * target next to the arch stubs, with no relocation applied):
 *  - one function plus always_inline helpers, so no call leaves the section
 *    except through the function pointers the tracer put in *s;
 *  - no globals, no string literals, no static data, no jump tables, no
 *    library calls the compiler may invent (copy loops use volatile), no
 *    stack protector or sanitizer instrumentation.
 * The worker runs in its own thread with every signal blocked (it inherits
 * the mask the tracer gave the hijacked thread).
 */

#define RM_ATTR __attribute__((section("inj_remote"), used, noinline, no_stack_protector, \
			       no_sanitize("address", "undefined", "thread"),              \
			       optimize("no-jump-tables", "no-tree-loop-distribute-patterns")))
#define RM_INLINE static inline __attribute__((always_inline))

/* RTLD_* values are part of the glibc/musl ABI on Linux. */
#define RM_RTLD_NOW 0x2
#define RM_RTLD_NOLOAD 0x4
#define RM_MFD_CLOEXEC 0x1u
#define RM_POLLIN 0x1

struct rm_pollfd {
	int fd;
	short events, revents;
};

struct rm_timespec {
	long sec, nsec;
};

typedef long (*rm_sys_fn)(long, ...);

RM_INLINE uint32_t ld_acq(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

RM_INLINE void st_rel(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Copies the dlerror() text (or nothing) into s->errmsg. */
RM_INLINE void rm_copy_dlerror(struct rm_shared *s)
{
	volatile char *d = s->errmsg;
	const volatile char *e = 0;
	size_t i = 0;

	if (s->fn_dlerror)
		e = ((const char *(*)(void))s->fn_dlerror)();
	if (e)
		for (; i < RM_ERRLEN - 1 && e[i]; i++)
			d[i] = e[i];
	d[i] = 0;
}

RM_INLINE int rm_errno(struct rm_shared *s)
{
	return s->fn_errno_location ? *((int *(*)(void))s->fn_errno_location)() : 0;
}

/* 1 while the tracer process is alive. */
RM_INLINE int rm_tracer_alive(struct rm_shared *s, int pidfd, long wait_ms)
{
	/* Filled field by field through volatile: an initializer could become
	 * a constant in .rodata, which is not copied into the target. */
	if (pidfd >= 0) {
		volatile struct rm_pollfd pf;
		pf.fd = pidfd;
		pf.events = RM_POLLIN;
		pf.revents = 0;
		/* pidfds turn readable when the process exits. */
		return ((int (*)(volatile struct rm_pollfd *, unsigned long, int))s->fn_poll)(&pf, 1, (int)wait_ms) != 1;
	}
	volatile struct rm_timespec ts;
	ts.sec = 0;
	ts.nsec = wait_ms * 1000000;
	((int (*)(volatile struct rm_timespec *, void *))s->fn_nanosleep)(&ts, 0);
	if (((rm_sys_fn)s->fn_syscall)(s->nr_kill, (long)s->tracer_pid, 0L) < 0 && rm_errno(s) == s->esrch)
		return 0;
	return 1;
}

RM_INLINE void rm_do_op(struct rm_shared *s)
{
	void *(*dlopen_fn)(const char *, int) = (void *(*)(const char *, int))s->fn_dlopen;
	void *(*dlsym_fn)(void *, const char *) = (void *(*)(void *, const char *))s->fn_dlsym;
	int (*dlclose_fn)(void *) = (int (*)(void *))s->fn_dlclose;
	int extra = (int)s->dlopen_extra;
	uint32_t op = s->op;
	void *h;

	s->err = RM_E_OK;
	s->err_no = 0;
	s->result = 0;
	s->result2 = 0;
	s->errmsg[0] = 0;
	if (op == RM_OP_LOAD) {
		h = 0;
		if (s->flags & RM_LOAD_TRY_NOLOAD) {
			h = dlopen_fn(s->path, RM_RTLD_NOW | RM_RTLD_NOLOAD | extra);
			if (h) {
				/* NOLOAD took a reference: give it back, the
				 * handle stays valid while the library is loaded. */
				dlclose_fn(h);
				s->result2 = 1;
			}
		}
		if (!h)
			h = dlopen_fn(s->path, RM_RTLD_NOW | extra);
		if (!h) {
			s->err = RM_E_DLERROR;
			rm_copy_dlerror(s);
		}
		s->result = (int64_t)(uintptr_t)h;
		if (s->flags & RM_LOAD_CLOSE_FD)
			((int (*)(int))s->fn_close)((int)s->args[0]);
	} else if (op == RM_OP_CALL) {
		long (*f)(long, long, long, long, long, long);
		f = (long (*)(long, long, long, long, long, long))dlsym_fn((void *)(uintptr_t)s->handle, s->sym);
		if (!f) {
			s->err = RM_E_NOSYM;
			rm_copy_dlerror(s);
		} else {
			s->result = f((long)s->args[0], (long)s->args[1], (long)s->args[2],
				      (long)s->args[3], (long)s->args[4], (long)s->args[5]);
		}
	} else if (op == RM_OP_UNLOAD) {
		if (s->sym[0]) {
			long (*f)(void) = (long (*)(void))dlsym_fn((void *)(uintptr_t)s->handle, s->sym);
			if (!f) {
				s->err = RM_E_NOSYM;
				rm_copy_dlerror(s);
				return;
			}
			s->result = f();
			/* The library says it must stay (hooks still reachable):
			 * unmapping it now would crash the process. */
			if (s->result != 0) {
				s->err = RM_E_REFUSED;
				return;
			}
		}
		if (dlclose_fn((void *)(uintptr_t)s->handle)) {
			s->err = RM_E_DLERROR;
			rm_copy_dlerror(s);
			return;
		}
		/* Still there?  (NODELETE, musl, another reference.) */
		h = dlopen_fn(s->path, RM_RTLD_NOW | RM_RTLD_NOLOAD | extra);
		if (h) {
			dlclose_fn(h);
			s->result2 = 1;
		}
	} else if (op == RM_OP_MEMFD) {
		s->result = ((rm_sys_fn)s->fn_syscall)(s->nr_memfd_create, (long)s->path, (long)RM_MFD_CLOEXEC);
		if (s->result < 0) {
			s->err = RM_E_ERRNO;
			s->err_no = rm_errno(s);
		}
	} else if (op == RM_OP_CLOSE) {
		((int (*)(int))s->fn_close)((int)s->args[0]);
	} else if (op != RM_OP_QUIT) {
		s->err = RM_E_BADOP;
	}
}

RM_ATTR long rm_worker_main(struct rm_shared *s)
{
	long idle = 0, waited = 0;
	int pidfd;

	((int (*)(unsigned long))s->fn_pthread_detach)(((unsigned long (*)(void))s->fn_pthread_self)());
	/* We inherit "everything blocked" from the hijacked thread, but libc
	 * broadcasts setuid() & co. to every thread with an internal signal
	 * and waits for each: that one must get through, or the program's
	 * next setuid() would hang while we live. */
	if (s->unblock_mask) {
		volatile uint64_t set;
		set = s->unblock_mask;
		((rm_sys_fn)s->fn_syscall)(s->nr_rt_sigprocmask, 1L /* SIG_UNBLOCK */, (long)&set, 0L, 8L);
	}
	/* PR_SET_NAME: other heapsnap sessions (and ps) recognize us. */
	((rm_sys_fn)s->fn_syscall)(s->nr_prctl, 15L, (long)s->worker_name);
	s->worker_tid = (int32_t)((rm_sys_fn)s->fn_syscall)(s->nr_gettid);
	pidfd = (int)((rm_sys_fn)s->fn_syscall)(s->nr_pidfd_open, (long)s->tracer_pid, 0L);
	if (pidfd < 0)
		pidfd = -1;
	s->worker_pidfd = pidfd;
	st_rel(&s->worker_state, RM_W_IDLE);

	/* The pidfd names our tracer only if the tracer was still alive after
	 * we opened it: it acknowledges.  No ack within ~10 s: orphan. */
	while (!ld_acq(&s->tracer_ack)) {
		if (!rm_tracer_alive(s, pidfd, 1) || ++waited > 10000)
			goto orphan;
	}

	for (;;) {
		uint32_t seq = ld_acq(&s->cmd_seq);

		if (seq != s->done_seq) {
			uint32_t op = s->op;
			rm_do_op(s);
			st_rel(&s->done_seq, seq);
			idle = 0;
			if (op == RM_OP_QUIT)
				break;
			continue;
		}
		/* Quick answers while the tracer talks to us, slower polls
		 * when it goes quiet (a long interactive session). */
		if (!rm_tracer_alive(s, pidfd, idle < 2000 ? 1 : 20))
			goto orphan;
		idle++;
	}
	if (pidfd >= 0)
		((int (*)(int))s->fn_close)(pidfd);
	st_rel(&s->worker_state, RM_W_EXITING);
	return 1;

orphan:
	/* The tracer died: leave the pages (the hijacked thread might still
	 * be on its way out of them) and end the thread. */
	if (pidfd >= 0)
		((int (*)(int))s->fn_close)(pidfd);
	st_rel(&s->worker_state, RM_W_ORPHAN);
	return 0;
}
