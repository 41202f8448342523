/* injector.h - load a shared library into a live process without hurting it (the only interface src/ uses). */
#ifndef HEAPSNAP_INJECTOR_H
#define HEAPSNAP_INJECTOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Lifecycle, read in order (see shared/INJECTION.md for the why):
 *
 *   inj_preflight()  read-only checks, stops nothing
 *   inj_open()       stop ONE thread at a safe point, make it start a helper
 *                    ("worker") thread inside the target, restore the thread
 *                    exactly and detach.  From here on no thread is stopped:
 *   inj_load()       the worker dlopen()s a library             (no ptrace)
 *   inj_call()       the worker calls `long f(long, ...)`        (no ptrace)
 *   inj_unload()     the worker calls a stop function, dlclose() (no ptrace)
 *   inj_close()      the worker unmaps the injector's pages and exits
 *
 * Every function that can fail returns 0 or a negative errno and, when
 * `reason` is not NULL, fills it with one lowercase line without a trailing
 * period and without a "heapsnap:" prefix ("no such process", "already
 * traced by pid 456 (strace)", "no safe point: ...").  Nothing prints,
 * exits or aborts; diagnostics go to the optional log sink.
 *
 * If the calling process dies at any instant, the target restores itself
 * (signal frame + rt_sigreturn) and the worker thread exits on its own; the
 * only trace left is then the injector's two small anonymous mappings.
 *
 * Not thread safe: one struct inj_proc is used by one thread at a time.
 */

#define INJ_REASONLEN 256

/* Log levels of the optional sink. */
enum inj_log_level { INJ_LOG_WARN = 0, INJ_LOG_INFO = 1, INJ_LOG_DEBUG = 2 };

/* What inj_preflight() learned without stopping anything. */
struct inj_info {
	pid_t pid;
	char comm[32];            /* /proc/PID/comm */
	uid_t uid;                /* real uid of the target */
	pid_t tracer_pid;         /* TracerPid (0 = none) */
	int seccomp;              /* 0 off, 1 strict, 2 filter */
	int nthreads;
	bool musl;                /* libc is musl: load works, unload does not */
	bool old_dlopen;          /* no dlopen in libc/libdl: __libc_dlopen_mode */
	char libc_path[256];      /* as in /proc/PID/maps */
	char ldso_path[256];
	uint64_t fn_dlopen, fn_dlsym, fn_dlclose, fn_dlerror; /* fn_dlerror may be 0 */
	uint64_t fn_pthread_create, fn_pthread_detach, fn_pthread_self, fn_pthread_exit;
	uint64_t fn_munmap, fn_poll, fn_nanosleep, fn_close, fn_syscall;
	char warning[INJ_REASONLEN]; /* non-fatal finding ("seccomp filter mode"), or "" */
};

/* Options of inj_open(); a zeroed struct (or NULL) means the defaults. */
struct inj_opts {
	int timeout_ms;              /* deadline of the safe point search and of
				      * each worker operation; 0 = 5000 */
	bool allow_seccomp_filter;   /* go on (with a warning) under seccomp filters */
	bool restore_via_frame;      /* for tests: end the hijack with the signal frame
				      * (the path taken when we die) instead of ptrace */
	void (*log)(void *arg, int level, const char *msg); /* may be NULL */
	void *log_arg;
};

/* Figures for tests and benchmarks, valid after inj_open() succeeded. */
struct inj_stats {
	pid_t hijacked_tid;       /* the thread that ran pthread_create */
	int threads_tried;        /* threads stopped and examined (incl. the hijacked one) */
	int rounds;               /* passes over the thread list */
	uint64_t stopped_us;      /* how long the hijacked thread was kept from its own code */
	uint64_t others_max_stopped_us; /* longest stop of a rejected candidate */
	uint64_t open_wall_us;    /* wall time of inj_open() */
	uint64_t wall_us;         /* wall time since inj_open() started, updated by each call */
	bool gadget_path;         /* first mapping made by the self-restoring gadget chain */
	bool tracer_restore;      /* final restore done with ptrace (else by rt_sigreturn) */
	int stops;                /* ptrace stops of the hijacked thread */
	pid_t worker_tid;
	char unsafe_seen[INJ_REASONLEN]; /* last reason a candidate was rejected, or "" */
};

struct inj_proc;

/*
 * Read-only checks on pid: exists, not a zombie, not stopped, not traced,
 * permission (uid/gid or CAP_SYS_PTRACE, dumpable, Yama), seccomp, dynamic
 * binary with a loader, libc with dlopen/dlsym/dlclose and pthread_create
 * (resolved from the target's own libc file).  Fills *info (may be NULL).
 * Returns 0, or -ESRCH (no such process, exiting), -EPERM (not permitted,
 * already traced), -EBUSY (stopped), -ENOEXEC (static binary or no dynamic
 * loader), -ENOSYS (libc without dlopen or pthread_create), -EACCES (seccomp).
 */
int inj_preflight(pid_t pid, struct inj_info *info, char reason[INJ_REASONLEN]);

/*
 * Preflight, then find a thread at a safe point (stopping one thread at a
 * time, only briefly), map the injector's code (RX) and data (RW) pages in
 * the target, have that thread start the worker thread and restore it.
 * On success *out holds the process (free it with inj_close()).  On error
 * the target is as it was (at most the two anonymous mappings remain if the
 * worker could not be started) and *out is NULL.  Returns 0 or -errno:
 * preflight errors, -ETIMEDOUT (no safe point before the deadline, or the
 * hijacked thread did not come back: it then restores itself), -ESRCH
 * (process exited).  While it holds a thread of the target, the calling
 * thread runs pinned to that thread's CPU at nice -20 (when permitted);
 * its affinity and nice value are put back before the next thread.
 */
int inj_open(pid_t pid, const struct inj_opts *o, struct inj_proc **out, char reason[INJ_REASONLEN]);

/*
 * Loads the library at `path` (absolute) in the target with
 * dlopen(RTLD_NOW), or finds it already loaded (*already_loaded = true; no
 * reference is added then).  If the target cannot see `path` (another mount
 * namespace) the file is copied into a memfd of the target first.  *handle
 * is the target's dlopen handle.  Returns 0, -ENOENT (no such file), -EIO
 * (dlopen failed: reason holds dlerror()), -ETIMEDOUT (worker did not answer;
 * the load may still complete), -ESRCH (process exited).
 */
int inj_load(struct inj_proc *p, const char *path, uint64_t *handle, bool *already_loaded,
	     char reason[INJ_REASONLEN]);

/*
 * Calls `long symbol(long a0, ..., long a5)` of the library `handle` in the
 * worker thread with nargs (0..6) integer arguments.  *ret gets its return
 * value.  Returns 0, -ENOENT (symbol not found), -EINVAL (nargs), -ETIMEDOUT
 * (the call did not return in time: it goes on in the target), -ESRCH.
 */
int inj_call(struct inj_proc *p, uint64_t handle, const char *symbol, const uint64_t *args,
	     int nargs, uint64_t *ret, char reason[INJ_REASONLEN]);

/*
 * Calls `long stop_symbol(void)` when stop_symbol is not NULL (if it is
 * missing nothing is unloaded: -ENOENT; if it returns non-zero the library
 * asked to stay and nothing is unloaded: -EBUSY), then drops the reference taken by
 * the load with dlclose().  Returns 0 when the library left the target's
 * maps, -EBUSY when it is still mapped (NODELETE, musl, or still referenced
 * by the process or another library), -EINVAL (handle not returned by
 * inj_load() on p), -ETIMEDOUT, -ESRCH.  heapsnap holds at most one
 * reference to a library (the load that mapped it), so one dlclose() is all
 * it may drop: references the process took itself are never stolen.
 */
int inj_unload(struct inj_proc *p, uint64_t handle, const char *stop_symbol,
	       char reason[INJ_REASONLEN]);

/*
 * Ends the worker thread (it unmaps the injector's pages itself) and frees
 * p.  Waits for the worker to be gone (bounded by the timeout).  Returns 0,
 * or -ETIMEDOUT when the worker is busy (it leaves on its own later: it
 * watches our process).  p is freed in every case; NULL is a no-op.
 */
int inj_close(struct inj_proc *p);

/* /proc/PID/task/TID/stat (TID = PID: the process's own line) into buf:
 * its third field (the state letter) and what follows, past the command
 * name (which may hold spaces and parentheses); NULL when unreadable. */
const char *inj_task_stat(pid_t pid, pid_t tid, char *buf, size_t len);

/* Statistics of p (see struct inj_stats). */
void inj_get_stats(const struct inj_proc *p, struct inj_stats *st);
/* What preflight found for p. */
const struct inj_info *inj_get_info(const struct inj_proc *p);

#endif
