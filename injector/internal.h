/* internal.h - what the injector's files share: the ptrace layer (pt_*), /proc parsing (proc_*),
 * ELF symbols (elfsym_*), the safe point check (safepoint_*), the arch layer (arch_*) and the
 * layout of the injector's data page in the target (struct rm_shared). */
#ifndef HEAPSNAP_INJECTOR_INTERNAL_H
#define HEAPSNAP_INJECTOR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "injector.h"

/* ---- time ---------------------------------------------------------------- */

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t inj_now_ns(void);
/* One pause of a polling wait that has lasted waited_ns: a short sleep
 * (20 us) at first, longer as the wait drags on (at most 2 ms). */
void inj_pause(int64_t waited_ns);

/* ---- ptrace.c: the only file that calls ptrace(2) and process_vm_*(2) ---- */

/* Every pt_* function returns 0 or -errno (ESRCH: the thread is gone or not
 * in a ptrace stop). */
int pt_seize(pid_t tid);                 /* PTRACE_SEIZE, PTRACE_O_TRACESYSGOOD only */
int pt_interrupt(pid_t tid);
int pt_detach(pid_t tid, int sig);
int pt_cont(pid_t tid, int sig);
int pt_syscall(pid_t tid, int sig);      /* resume until the next syscall entry/exit */
int pt_get_regset(pid_t tid, int type, void *buf, size_t *size); /* *size in: room, out: used */
int pt_set_regset(pid_t tid, int type, const void *buf, size_t size);
int pt_get_sigmask(pid_t tid, uint64_t *mask);
int pt_set_sigmask(pid_t tid, uint64_t mask);

/* What kind of stop a PTRACE_SYSCALL-resumed thread is in. */
struct pt_sysinfo {
	int op;                  /* PTRACE_SYSCALL_INFO_{NONE,ENTRY,EXIT} */
	uint64_t pc, sp;
	uint64_t nr;             /* entry */
	int64_t rval;            /* exit */
};
int pt_get_sysinfo(pid_t tid, struct pt_sysinfo *si);

/* rseq area registered by the thread (0 if none). */
int pt_get_rseq(pid_t tid, uint64_t *rseq_abi, uint32_t *rseq_len);

/*
 * Waits until tid reports a stop or exits, or until deadline_ns
 * (inj_now_ns() clock).  pidfd (may be -1) is polled so that the death of
 * the whole process ends the wait at once.  Returns 0 with *status set,
 * -ETIMEDOUT, -ESRCH (thread or process gone, *status set when an exit was
 * reaped) or -errno.
 */
int pt_wait(pid_t tid, int pidfd, int64_t deadline_ns, int *status);

/* Reaps a pending stop of tid without waiting: 1 (stop in *status), 0 (none),
 * -ESRCH (gone). */
int pt_poll_stop(pid_t tid, int *status);

/* Remote memory.  pt_read_mem/pt_write_mem use process_vm_readv/writev and
 * fall back to /proc/PID/mem (memfd, may be -1); pt_write_mem_force always
 * writes through /proc/PID/mem, which also reaches read-only and executable
 * pages (the kernel breaks COW).  All return 0 (every byte moved) or -errno. */
int pt_mem_open(pid_t pid);              /* open /proc/PID/mem O_RDWR: fd or -errno */
int pt_read_mem(pid_t pid, int memfd, uint64_t addr, void *buf, size_t len);
int pt_write_mem(pid_t pid, int memfd, uint64_t addr, const void *buf, size_t len);
int pt_write_mem_force(int memfd, uint64_t addr, const void *buf, size_t len);

/* ---- procfs.c ------------------------------------------------------------ */

struct proc_map {
	uint64_t start, end, offset;
	uint64_t dev, ino;       /* makedev(major, minor), inode */
	char perms[5];
	char *path;              /* "" for anonymous; "[stack]" etc. */
};

struct proc_maps {
	struct proc_map *v;
	int n;
};

/* Parses /proc/PID/maps.  Returns 0 or -errno (-ESRCH when gone). */
int proc_maps_read(pid_t pid, struct proc_maps *m);
void proc_maps_free(struct proc_maps *m);
/* The mapping holding addr, or NULL. */
const struct proc_map *proc_maps_find(const struct proc_maps *m, uint64_t addr);

/* Fields of /proc/PID/status (or /proc/PID/task/TID/status). */
struct proc_status {
	char name[32];
	char state;              /* 'R', 'S', 'D', 'T', 't', 'Z', 'X' */
	pid_t tgid, ppid, tracer_pid;
	uid_t uid[4];            /* real, effective, saved, fs */
	gid_t gid[4];
	int seccomp;             /* -1 if the line is missing */
	int threads;
	uint64_t cap_eff;
};
int proc_status_read(const char *path, struct proc_status *st);
/* The command name of pid into buf (empty when it cannot be read). */
void proc_read_comm(pid_t pid, char *buf, size_t len);

/* Thread ids of pid (sorted ascending).  Returns the count or -errno. */
int proc_tasks(pid_t pid, pid_t **tids);

/* State letter of a thread from /proc/PID/task/TID/stat, 0 if gone. */
char proc_task_state(pid_t pid, pid_t tid);
/* The CPU the thread last ran on (/proc/PID/task/TID/stat), -1 if unknown. */
int proc_task_cpu(pid_t pid, pid_t tid);
/* Syscall number the thread is blocked in (/proc/PID/task/TID/syscall),
 * -1 when running, -2 when unknown/gone. */
long proc_task_syscall(pid_t pid, pid_t tid);
/* The same with the first argument and the pc of a blocked thread. */
long proc_task_syscall_full(pid_t pid, pid_t tid, uint64_t *arg0, uint64_t *pc);
/* The same with the stack pointer and the pc of a blocked thread. */
long proc_task_syscall_regs(pid_t pid, pid_t tid, uint64_t *sp, uint64_t *pc);

/* Opens the file behind mapping mp of pid, checking that it is the very
 * file (dev+inode) the target mapped: /proc/PID/map_files/ first, then
 * /proc/PID/root/<path>.  Returns an fd or -errno. */
int proc_open_mapped(pid_t pid, const struct proc_map *mp);

/* ---- elfsym.c: dynamic symbols of a mapped ELF file (libelf) ------------- */

struct elfsym {
	uint64_t value, size;    /* value: run-time address (bias applied) */
	const char *name;
	bool is_func;
	bool is_default;         /* default version (not hidden by .gnu.version) */
};

struct elfsym_tab {
	struct elfsym *v;        /* sorted by value */
	int n;
	char *strings;           /* backing store for names */
	uint64_t bias;
	char interp[256];        /* PT_INTERP, "" when none */
};

/* Reads .dynsym (+ .gnu.version) of the ELF file open on fd, with load bias
 * `bias`.  Returns 0 or -errno (-ENOEXEC: not ELF). */
int elfsym_load(int fd, uint64_t bias, struct elfsym_tab *t);
void elfsym_free(struct elfsym_tab *t);
/* Address of the defined symbol `name`, default version preferred; 0 if absent. */
uint64_t elfsym_lookup(const struct elfsym_tab *t, const char *name);
/* The function symbol whose [value, value+size) holds addr, or NULL. */
const struct elfsym *elfsym_covering(const struct elfsym_tab *t, uint64_t addr);
/* PT_INTERP and whether the file has a PT_DYNAMIC, without loading symbols. */
int elfsym_interp(int fd, char *interp, size_t len, bool *dynamic);
/* p_vaddr - p_offset of the lowest PT_LOAD: the link-time address of file
 * offset 0, so bias = (run-time address of file offset 0) - *vaddr. */
int elfsym_first_vaddr(int fd, uint64_t *vaddr);

/* ---- modules: the target's loaded ELF objects ---------------------------- */

enum mod_kind { MOD_OTHER, MOD_LIBC, MOD_LDSO, MOD_ALLOCATOR, MOD_EXE };

struct mod {
	char *path;
	uint64_t dev, ino;
	uint64_t lo, hi;         /* union of its mappings */
	uint64_t bias;
	uint64_t m0_start, m0_end, m0_off; /* its first mapping (for map_files) */
	enum mod_kind kind;
	bool syms_tried;
	struct elfsym_tab syms;  /* loaded lazily */
};

struct mods {
	struct mod *v;
	int n;
	pid_t pid;
};

/* Groups the file mappings of m into modules and classifies them. */
int mods_build(pid_t pid, const struct proc_maps *m, struct mods *mods);
void mods_free(struct mods *mods);
/* Rebuilds mods from fresh maps, keeping the symbols already loaded. */
int mods_refresh(pid_t pid, const struct proc_maps *m, struct mods *mods);
struct mod *mods_find(struct mods *mods, uint64_t addr);
struct mod *mods_by_kind(struct mods *mods, enum mod_kind kind);
/* Loads the symbols of md (once).  Returns 0 or -errno. */
int mods_syms(struct mods *mods, struct mod *md);

/* ---- safepoint.c ------------------------------------------------------- */

struct arch_regs;

struct sp_page;
struct sp_upt;

struct safepoint {
	void *as;                /* unw_addr_space_t */
	void *upt;               /* _UPT handle of the process */
	struct sp_upt *upts;     /* one more _UPT handle per module (its unwind table) */
	int nupts;
	struct mods *mods;
	pid_t pid;
	int memfd;
	struct sp_page *pages;   /* target memory read during one unwind */
	unsigned npages, next_page;
};

int safepoint_init(struct safepoint *sp, pid_t pid, int memfd, struct mods *mods);
void safepoint_fini(struct safepoint *sp);
/*
 * Unwinds the stopped thread tid, whose registers are regs, and decides
 * whether it may run pthread_create.  Returns 1 (safe), 0 (unsafe: why
 * holds the reason, e.g. "tid 12: in malloc"), or -errno.
 */
int safepoint_check(struct safepoint *sp, pid_t tid, const struct arch_regs *regs, char *why,
		    size_t whylen);
/* Fills the unwinder's caches from a thread blocked in a syscall, without
 * stopping it (pc and sp from /proc), within budget_ns.  Best effort. */
void safepoint_prewarm(struct safepoint *sp, pid_t tid, int64_t budget_ns);

/* ---- the data page (written by the tracer, used by the remote code) ------ */

#define RM_MAGIC 0x48534e4a44415441ull  /* "HSNJDATA" */

enum rm_worker_state { RM_W_NONE = 0, RM_W_IDLE = 1, RM_W_ORPHAN = 2, RM_W_EXITING = 3 };
enum rm_op { RM_OP_NONE = 0, RM_OP_LOAD, RM_OP_CALL, RM_OP_UNLOAD, RM_OP_MEMFD, RM_OP_CLOSE, RM_OP_QUIT };
enum rm_err { RM_E_OK = 0, RM_E_DLERROR = 1, RM_E_NOSYM = 2, RM_E_ERRNO = 3, RM_E_BADOP = 4,
	       RM_E_REFUSED = 5 /* the stop function returned non-zero: no dlclose */ };
#define RM_LOAD_TRY_NOLOAD 1u    /* look for a loaded copy first */
#define RM_LOAD_CLOSE_FD   2u    /* close args[0] after dlopen (memfd) */

#define RM_WORKER_NAME "heapsnap-inject" /* 15 chars: a whole comm */
#define RM_PATHLEN 4096
#define RM_SYMLEN 256
#define RM_ERRLEN 512

/*
 * At the start of the data area.  The tracer fills the first part before
 * the hijack; afterwards the command channel works without ptrace: the
 * tracer writes op + arguments, then bumps cmd_seq; the worker answers by
 * setting done_seq = cmd_seq once result/err/errmsg are in place.
 * Field offsets are used by the arch stubs (RM_OFF_* checked by static
 * asserts in the arch file).
 */
struct rm_shared {
	uint64_t magic;
	uint64_t fn_pthread_create;   /* offset 8 */
	uint64_t worker_c;            /* 16: code address of rm_worker_main */
	uint64_t map_base;            /* 24: the whole injector mapping */
	uint64_t map_len;             /* 32 */
	uint64_t fn_munmap;           /* 40 */
	uint64_t thread;              /* 48: pthread_t of the worker */
	int32_t create_ret;           /* 56: pthread_create's result */
	uint32_t stub_done;           /* 60: set by the hijack stub */
	uint64_t worker_entry;        /* 64: code address of the worker's entry */
	uint32_t pad0, pad1;          /* 72 */
	int64_t park_timeout[2];      /* 80: struct timespec: how long the stub waits
				       * (ppoll) for the tracer before restoring itself */

	uint64_t fn_pthread_detach, fn_pthread_self;
	uint64_t fn_dlopen, fn_dlsym, fn_dlclose, fn_dlerror;
	uint64_t fn_poll, fn_nanosleep, fn_close, fn_syscall, fn_errno_location;
	uint64_t dlopen_extra;        /* or'ed into dlopen modes (__RTLD_DLOPEN) */
	uint64_t unblock_mask;        /* libc-internal signals the worker must take (setxid) */
	char worker_name[16];         /* its comm (RM_WORKER_NAME), so sessions see each other */
	int32_t tracer_pid;
	int32_t nr_gettid, nr_pidfd_open, nr_memfd_create, nr_kill, nr_rt_sigprocmask, nr_prctl;
	int32_t esrch;

	/* worker */
	uint32_t worker_state;
	int32_t worker_tid;
	uint32_t tracer_ack;
	int32_t worker_pidfd;

	/* command channel */
	uint32_t cmd_seq, done_seq;
	uint32_t op, flags;
	int32_t err, err_no;
	uint32_t nargs, pad;
	uint64_t handle;
	uint64_t args[6];
	int64_t result, result2;
	char path[RM_PATHLEN];
	char sym[RM_SYMLEN];
	char errmsg[RM_ERRLEN];
};

#define RM_OFF_FN_PTHREAD_CREATE 8
#define RM_OFF_WORKER_C 16
#define RM_OFF_MAP_BASE 24
#define RM_OFF_MAP_LEN 32
#define RM_OFF_FN_MUNMAP 40
#define RM_OFF_THREAD 48
#define RM_OFF_CREATE_RET 56
#define RM_OFF_STUB_DONE 60
#define RM_OFF_WORKER_ENTRY 64
#define RM_OFF_PARK_TIMEOUT 80

/* remote.c: the worker's body, position independent, in section inj_remote.
 * Returns 1 when the injector's pages must be unmapped (quit), 0 otherwise. */
long rm_worker_main(struct rm_shared *s);

/* Bounds of the remote code (section inj_remote, copied as one block). */
extern const char __start_inj_remote[], __stop_inj_remote[];

/* ---- arch layer (arch/<arch>.c), same function set on every arch ---------- */

/* Raw register file, big enough for every arch's NT_PRSTATUS. */
struct arch_regs {
	uint64_t w[48];
};

/* Everything arch-specific the core needs to save and rebuild a thread. */
struct arch_thread {
	struct arch_regs regs;        /* as read at the stop */
	struct arch_regs restore;     /* for the signal frame: resume the thread's own code,
				       * interrupted syscall re-issued (restart applied) */
	struct arch_regs restore_tracer; /* the same for a restore done by the tracer, which
				       * can continue an interrupted sleep (restart_syscall) */
	uint8_t *fpstate;             /* NT_X86_XSTATE (x86) */
	size_t fpsize;
	uint64_t sigmask;
	bool restart_block;           /* needs restart_syscall: only the tracer can restore it */
};

int arch_get_thread(pid_t tid, struct arch_thread *t);
void arch_free_thread(struct arch_thread *t);
uint64_t arch_pc(const struct arch_regs *r);
uint64_t arch_sp(const struct arch_regs *r);
void arch_set_pc(struct arch_regs *r, uint64_t pc);
/* A register by libunwind number; 0 or -1 (unknown register). */
int arch_unw_reg(const struct arch_regs *r, int unw_regnum, uint64_t *val);
/* Zeroed registers but pc and sp (to unwind a thread without stopping it). */
void arch_fake_regs(struct arch_regs *r, uint64_t pc, uint64_t sp);
/* Syscall number the thread was stopped in (-1 if none) and its return register. */
long arch_stop_syscall(const struct arch_regs *r);

/* Gadgets the self-restoring first syscall needs, searched in text. */
struct arch_gadgets {
	uint64_t syscall_ret;         /* syscall; ret */
	uint64_t pop_nr_ret;          /* pop <syscall nr reg>; ret */
	uint64_t syscall_any;         /* a bare syscall instruction */
	uint64_t ret;                 /* ret */
};
/* Scans buf (the bytes of text mapped at addr) and fills what it finds. */
void arch_find_gadgets(const uint8_t *buf, size_t len, uint64_t addr, struct arch_gadgets *g);
bool arch_gadgets_complete(const struct arch_gadgets *g);

/* Size of a signal frame (with alignment slack) for t. */
size_t arch_frame_size(const struct arch_thread *t);
/* Alignment the frame's target address needs. */
size_t arch_frame_align(void);
/*
 * Builds in buf (arch_frame_size bytes, to be placed at target address
 * `addr`, aligned to arch_frame_align()) a frame from which rt_sigreturn
 * restores t exactly (t->restore, the FP/vector state and t->sigmask).
 * *sigreturn_sp gets the stack pointer at which the rt_sigreturn syscall
 * must be made.  Returns 0 or -EINVAL (buffer too small).
 */
int arch_build_frame(const struct arch_thread *t, uint64_t addr, uint8_t *buf, size_t len,
		     uint64_t *sigreturn_sp);

/*
 * Self-restoring syscall made of gadgets: bytes (arch_chain_size(), to be
 * written at target address `addr`, right below a frame built at
 * addr + arch_chain_size() whose bytes are in frame_buf) and *regs, so that
 * the thread makes syscall nr(a0..a5) and then rt_sigreturn on that frame.
 */
size_t arch_chain_size(void);
void arch_setup_chain(const struct arch_thread *t, const struct arch_gadgets *g, uint64_t addr,
		      uint8_t *chain_buf, uint8_t *frame_buf, long nr, const uint64_t a[6],
		      struct arch_regs *regs);
/* Windowed fallback: pc at a bare syscall instruction, no way back without us. */
void arch_setup_bare_syscall(const struct arch_thread *t, uint64_t syscall_insn, long nr,
			     const uint64_t a[6], struct arch_regs *regs);
/* Regs for the hijack stub: shared = data base, data_len for mprotect,
 * stack_top (16-aligned), sigreturn_sp from arch_build_frame. */
void arch_setup_hijack(const struct arch_thread *t, uint64_t code_base, uint64_t shared,
		       uint64_t data_len, uint64_t stack_top, uint64_t sigreturn_sp,
		       struct arch_regs *regs);
/* Makes regs resume without a syscall restart and, at a syscall-entry stop,
 * skip the syscall (x86: orig_rax = -1). */
void arch_skip_syscall(struct arch_regs *r);
int arch_set_regs(pid_t tid, const struct arch_regs *r);
int arch_set_fpstate(pid_t tid, const struct arch_thread *t);
/* Entry points inside the remote code block (offsets from its start). */
size_t arch_off_hijack(void);
size_t arch_off_hijack_sigreturn(void); /* the stub's final rt_sigreturn sequence */
size_t arch_off_worker_entry(void);
/* ELF e_machine this arch injects into. */
int arch_elf_machine(void);

#endif
