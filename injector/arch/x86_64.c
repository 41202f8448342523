/* x86_64.c - everything the injector does differently on x86_64: registers, XSAVE state, syscall
 * restart, the rt_sigframe the target restores itself from, gadgets, and the remote stubs. */
#include <elf.h>
#include <errno.h>
#include <libunwind-x86_64.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/user.h>

#include "internal.h"

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

_Static_assert(sizeof(struct user_regs_struct) <= sizeof(struct arch_regs), "arch_regs too small");
_Static_assert(offsetof(struct rm_shared, fn_pthread_create) == RM_OFF_FN_PTHREAD_CREATE, "layout");
_Static_assert(offsetof(struct rm_shared, worker_c) == RM_OFF_WORKER_C, "layout");
_Static_assert(offsetof(struct rm_shared, map_base) == RM_OFF_MAP_BASE, "layout");
_Static_assert(offsetof(struct rm_shared, map_len) == RM_OFF_MAP_LEN, "layout");
_Static_assert(offsetof(struct rm_shared, fn_munmap) == RM_OFF_FN_MUNMAP, "layout");
_Static_assert(offsetof(struct rm_shared, thread) == RM_OFF_THREAD, "layout");
_Static_assert(offsetof(struct rm_shared, create_ret) == RM_OFF_CREATE_RET, "layout");
_Static_assert(offsetof(struct rm_shared, stub_done) == RM_OFF_STUB_DONE, "layout");
_Static_assert(offsetof(struct rm_shared, worker_entry) == RM_OFF_WORKER_ENTRY, "layout");
_Static_assert(offsetof(struct rm_shared, park_timeout) == RM_OFF_PARK_TIMEOUT, "layout");

/*
 * The remote stubs, copied into the target with remote.c's worker body (same
 * section).  Offsets into struct rm_shared are the RM_OFF_* constants.
 *
 * rm_x86_hijack runs in the hijacked thread, all signals blocked, on the
 * private stack (rsp 16-byte aligned), with r12 = data area, r13 = its
 * length, r14 = stack pointer for rt_sigreturn (frame - 8 on x86_64 is the
 * pretcode slot, the kernel reads the frame at rsp - 8).  It makes the data
 * area writable (it was mapped read+exec with the code: never W and X at
 * once), starts the worker with the target's pthread_create, raises
 * stub_done, then parks in ppoll() on no fds, bounded by park_timeout.
 * (Not futex or nanosleep: interrupted with a timeout they would replace
 * the thread's restart block, which an interrupted sleep of its own still
 * needs; ppoll restarts with -ERESTARTNOHAND and leaves it alone.)  The tracer, which watches stub_done through memory,
 * interrupts the parked thread and restores it with ptrace.  If the tracer
 * is gone, the wait times out and the stub ends with rt_sigreturn on the
 * frame holding the thread's own state: it is back where it was anyway.
 *
 * rm_x86_worker_entry is the worker's start routine.  When the worker is
 * told to quit it must unmap the very page it runs from: it tail-jumps into
 * the target's munmap with start_thread's return address on top of the
 * stack, so munmap "returns" 0 straight into libc and the thread ends
 * normally (no pthread_exit, so no libgcc_s unwinding is needed).
 */
__asm__(
	".pushsection inj_remote,\"ax\",@progbits\n"
	".globl rm_x86_hijack\n"
	".hidden rm_x86_hijack\n"
	".type rm_x86_hijack,@function\n"
	"rm_x86_hijack:\n"
	"	endbr64\n"
	"	mov %r12, %rdi\n"
	"	mov %r13, %rsi\n"
	"	mov $3, %edx\n"               /* PROT_READ | PROT_WRITE */
	"	mov $10, %eax\n"              /* SYS_mprotect */
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 2f\n"                    /* data still read-only: just park */
	"	lea 48(%r12), %rdi\n"         /* &s->thread */
	"	xor %esi, %esi\n"             /* default attributes */
	"	mov 64(%r12), %rdx\n"         /* s->worker_entry */
	"	mov %r12, %rcx\n"             /* arg = s */
	"	call *8(%r12)\n"              /* s->fn_pthread_create */
	"	mov %eax, 56(%r12)\n"         /* s->create_ret */
	"	movl $1, 60(%r12)\n"          /* s->stub_done */
	"2:	xor %edi, %edi\n"             /* ppoll(NULL, 0, */
	"	xor %esi, %esi\n"
	"	lea 80(%r12), %rdx\n"         /*   &s->park_timeout, */
	"	xor %r10d, %r10d\n"           /*   NULL, */
	"	mov $8, %r8d\n"               /*   8) */
	"	mov $271, %eax\n"             /* SYS_ppoll */
	"	syscall\n"
	".globl rm_x86_hijack_sigreturn\n"
	".hidden rm_x86_hijack_sigreturn\n"
	"rm_x86_hijack_sigreturn:\n"
	"	mov %r14, %rsp\n"
	"	mov $15, %eax\n"              /* SYS_rt_sigreturn */
	"	syscall\n"
	"	ud2\n"
	".size rm_x86_hijack, .-rm_x86_hijack\n"
	"\n"
	".globl rm_x86_worker_entry\n"
	".hidden rm_x86_worker_entry\n"
	".type rm_x86_worker_entry,@function\n"
	"rm_x86_worker_entry:\n"
	"	endbr64\n"
	"	push %rbx\n"
	"	mov %rdi, %rbx\n"
	"	call *16(%rbx)\n"             /* s->worker_c: rm_worker_main(s) */
	"	test %rax, %rax\n"
	"	jz 2f\n"
	"	mov 24(%rbx), %rdi\n"         /* s->map_base */
	"	mov 32(%rbx), %rsi\n"         /* s->map_len */
	"	mov 40(%rbx), %rax\n"         /* s->fn_munmap */
	"	pop %rbx\n"
	"	jmp *%rax\n"
	"2:	xor %eax, %eax\n"
	"	pop %rbx\n"
	"	ret\n"
	".size rm_x86_worker_entry, .-rm_x86_worker_entry\n"
	".popsection\n");

extern const char rm_x86_hijack[], rm_x86_hijack_sigreturn[], rm_x86_worker_entry[];

size_t arch_off_hijack_sigreturn(void)
{
	return (size_t)((uintptr_t)rm_x86_hijack_sigreturn - (uintptr_t)__start_inj_remote);
}

size_t arch_off_hijack(void)
{
	return (size_t)((uintptr_t)rm_x86_hijack - (uintptr_t)__start_inj_remote);
}

size_t arch_off_worker_entry(void)
{
	return (size_t)((uintptr_t)rm_x86_worker_entry - (uintptr_t)__start_inj_remote);
}

int arch_elf_machine(void)
{
	return EM_X86_64;
}

static struct user_regs_struct *R(struct arch_regs *r)
{
	return (struct user_regs_struct *)r->w;
}

static const struct user_regs_struct *CR(const struct arch_regs *r)
{
	return (const struct user_regs_struct *)r->w;
}

uint64_t arch_pc(const struct arch_regs *r)
{
	return CR(r)->rip;
}

uint64_t arch_sp(const struct arch_regs *r)
{
	return CR(r)->rsp;
}

void arch_set_pc(struct arch_regs *r, uint64_t pc)
{
	R(r)->rip = pc;
}

int arch_unw_reg(const struct arch_regs *r, int unw_regnum, uint64_t *val)
{
	const struct user_regs_struct *u = CR(r);

	switch (unw_regnum) {
	case UNW_X86_64_RAX: *val = u->rax; break;
	case UNW_X86_64_RDX: *val = u->rdx; break;
	case UNW_X86_64_RCX: *val = u->rcx; break;
	case UNW_X86_64_RBX: *val = u->rbx; break;
	case UNW_X86_64_RSI: *val = u->rsi; break;
	case UNW_X86_64_RDI: *val = u->rdi; break;
	case UNW_X86_64_RBP: *val = u->rbp; break;
	case UNW_X86_64_RSP: *val = u->rsp; break;
	case UNW_X86_64_R8: *val = u->r8; break;
	case UNW_X86_64_R9: *val = u->r9; break;
	case UNW_X86_64_R10: *val = u->r10; break;
	case UNW_X86_64_R11: *val = u->r11; break;
	case UNW_X86_64_R12: *val = u->r12; break;
	case UNW_X86_64_R13: *val = u->r13; break;
	case UNW_X86_64_R14: *val = u->r14; break;
	case UNW_X86_64_R15: *val = u->r15; break;
	case UNW_X86_64_RIP: *val = u->rip; break;
	default: return -1;
	}
	return 0;
}

void arch_fake_regs(struct arch_regs *r, uint64_t pc, uint64_t sp)
{
	memset(r, 0, sizeof(*r));
	R(r)->rip = pc;
	R(r)->rsp = sp;
}

long arch_stop_syscall(const struct arch_regs *r)
{
	return (long)CR(r)->orig_rax;
}

void arch_skip_syscall(struct arch_regs *r)
{
	R(r)->orig_rax = (unsigned long long)-1;
}

/* Kernel-internal syscall restart codes, visible to tracers in rax. */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

#define X86_EFLAGS_TF 0x100ull
#define X86_EFLAGS_DF 0x400ull

int arch_get_thread(pid_t tid, struct arch_thread *t)
{
	size_t sz = sizeof(struct user_regs_struct);
	struct user_regs_struct *g, *f, *k;
	int r;

	memset(t, 0, sizeof(*t));
	r = pt_get_regset(tid, NT_PRSTATUS, t->regs.w, &sz);
	if (r)
		return r;
	/* The XSAVE area's size is the regset's (the user xstate size the
	 * kernel also uses for signal frames, CPUID 0xD for the enabled
	 * features): ask with room to spare and keep what was used. */
	t->fpsize = 64 * 1024;
	t->fpstate = calloc(1, t->fpsize);
	if (!t->fpstate)
		return -ENOMEM;
	r = pt_get_regset(tid, NT_X86_XSTATE, t->fpstate, &t->fpsize);
	if (r) {
		arch_free_thread(t);
		return r;
	}
	r = pt_get_sigmask(tid, &t->sigmask);
	if (r) {
		arch_free_thread(t);
		return r;
	}

	/*
	 * Stopped inside a syscall the thread has rip past the syscall
	 * instruction and rax = -ERESTART*: the kernel would restart it on
	 * the way out, but we resume it elsewhere with orig_rax = -1, so the
	 * restart is applied here, once, into the registers we restore.
	 */
	g = R(&t->regs);
	t->restore = t->regs;
	f = R(&t->restore);
	f->orig_rax = (unsigned long long)-1;
	t->restore_tracer = t->restore;
	k = R(&t->restore_tracer);
	if ((long long)g->orig_rax >= 0) {
		switch (-(long long)g->rax) {
		case ERESTARTSYS:
		case ERESTARTNOINTR:
		case ERESTARTNOHAND:
			f->rax = k->rax = g->orig_rax;
			f->rip = k->rip = g->rip - 2;
			break;
		case ERESTART_RESTARTBLOCK:
			/* Only restart_syscall continues a relative sleep where
			 * it stopped, and rt_sigreturn resets the restart block:
			 * the tracer restores this case itself.  The frame (used
			 * only if the tracer dies) re-issues the call instead:
			 * a longer sleep, never a spurious EINTR. */
			f->rax = g->orig_rax;
			f->rip = g->rip - 2;
			k->rax = SYS_restart_syscall;
			k->rip = g->rip - 2;
			t->restart_block = true;
			break;
		}
	}
	return 0;
}

void arch_free_thread(struct arch_thread *t)
{
	free(t->fpstate);
	t->fpstate = NULL;
	t->fpsize = 0;
}

int arch_set_regs(pid_t tid, const struct arch_regs *r)
{
	return pt_set_regset(tid, NT_PRSTATUS, r->w, sizeof(struct user_regs_struct));
}

int arch_set_fpstate(pid_t tid, const struct arch_thread *t)
{
	return pt_set_regset(tid, NT_X86_XSTATE, t->fpstate, t->fpsize);
}

/*
 * The x86_64 rt_sigframe as rt_sigreturn reads it (the kernel's struct
 * rt_sigframe / ucontext / sigcontext_64), at F, 64-byte aligned:
 *   F+0    pretcode (the return address a handler would pop)
 *   F+8    struct ucontext: uc_flags, uc_link, uc_stack, uc_mcontext, uc_sigmask
 *   F+312  siginfo (not read by rt_sigreturn)
 *   F+512  the XSAVE image (64-byte aligned, as XRSTOR wants), then
 *          FP_XSTATE_MAGIC2
 * rt_sigreturn takes the frame at rsp - 8, so it is called with rsp = F + 8.
 */
#define FR_UC 8
#define FR_UC_FLAGS (FR_UC + 0)
#define FR_UC_STACK (FR_UC + 16)
#define FR_MCTX (FR_UC + 40)
#define FR_SIGMASK (FR_UC + 296)
#define FR_FPSTATE 512

#define UC_FP_XSTATE 0x1
#define UC_SIGCONTEXT_SS 0x2
#define UC_STRICT_RESTORE_SS 0x4
#define FP_XSTATE_MAGIC1 0x46505853u
#define FP_XSTATE_MAGIC2 0x46505845u
#define FPX_SW_OFFSET 464 /* sw_reserved in the legacy FXSAVE area */

size_t arch_frame_align(void)
{
	return 64;
}

size_t arch_frame_size(const struct arch_thread *t)
{
	return (FR_FPSTATE + t->fpsize + 4 + 63) & ~(size_t)63;
}

static void put64(uint8_t *b, size_t off, uint64_t v)
{
	memcpy(b + off, &v, 8);
}

static void put32(uint8_t *b, size_t off, uint32_t v)
{
	memcpy(b + off, &v, 4);
}

static void put16(uint8_t *b, size_t off, uint16_t v)
{
	memcpy(b + off, &v, 2);
}

static uint64_t xgetbv0(void)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (uint64_t)hi << 32 | lo;
}

int arch_build_frame(const struct arch_thread *t, uint64_t addr, uint8_t *buf, size_t len,
		     uint64_t *sigreturn_sp)
{
	const struct user_regs_struct *r = CR(&t->restore);
	uint8_t *m;
	uint64_t xfeatures;

	if (len < arch_frame_size(t) || (addr & 63) || t->fpsize < 576)
		return -EINVAL;
	memset(buf, 0, arch_frame_size(t));
	put64(buf, FR_UC_FLAGS, UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS);
	/*
	 * uc_stack: rt_sigreturn hands it to sigaltstack and ignores any
	 * error.  We cannot read another thread's alternate stack, so we
	 * give an invalid mode (4 is neither 0, SS_ONSTACK nor SS_DISABLE):
	 * the call fails with EINVAL and the thread's sigaltstack setting is
	 * left exactly as it is.
	 */
	put64(buf, FR_UC_STACK + 0, 0);
	put32(buf, FR_UC_STACK + 8, 4);
	put64(buf, FR_UC_STACK + 16, 0);

	m = buf + FR_MCTX;
	put64(m, 0, r->r8);
	put64(m, 8, r->r9);
	put64(m, 16, r->r10);
	put64(m, 24, r->r11);
	put64(m, 32, r->r12);
	put64(m, 40, r->r13);
	put64(m, 48, r->r14);
	put64(m, 56, r->r15);
	put64(m, 64, r->rdi);
	put64(m, 72, r->rsi);
	put64(m, 80, r->rbp);
	put64(m, 88, r->rbx);
	put64(m, 96, r->rdx);
	put64(m, 104, r->rax);
	put64(m, 112, r->rcx);
	put64(m, 120, r->rsp);
	put64(m, 128, r->rip);
	put64(m, 136, r->eflags);
	put16(m, 144, (uint16_t)r->cs);
	put16(m, 146, 0);
	put16(m, 148, 0);
	put16(m, 150, (uint16_t)r->ss);
	put64(m, 184, addr + FR_FPSTATE); /* fpstate pointer */
	put64(buf, FR_SIGMASK, t->sigmask);

	/* The XSAVE image as the regset gave it (standard format), with the
	 * software bytes that tell rt_sigreturn it is a full xstate frame. */
	memcpy(buf + FR_FPSTATE, t->fpstate, t->fpsize);
	memcpy(&xfeatures, buf + FR_FPSTATE + FPX_SW_OFFSET + 8, 8);
	if (!xfeatures)
		xfeatures = xgetbv0();
	put32(buf, FR_FPSTATE + FPX_SW_OFFSET + 0, FP_XSTATE_MAGIC1);
	put32(buf, FR_FPSTATE + FPX_SW_OFFSET + 4, (uint32_t)(t->fpsize + 4)); /* extended_size */
	put64(buf, FR_FPSTATE + FPX_SW_OFFSET + 8, xfeatures);
	put32(buf, FR_FPSTATE + FPX_SW_OFFSET + 16, (uint32_t)t->fpsize); /* xstate_size */
	put32(buf, FR_FPSTATE + t->fpsize, FP_XSTATE_MAGIC2);

	*sigreturn_sp = addr + 8;
	return 0;
}

void arch_find_gadgets(const uint8_t *buf, size_t len, uint64_t addr, struct arch_gadgets *g)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (!g->syscall_any && buf[i] == 0x0f && buf[i + 1] == 0x05)
			g->syscall_any = addr + i;
		if (!g->syscall_ret && i + 2 < len && buf[i] == 0x0f && buf[i + 1] == 0x05 && buf[i + 2] == 0xc3)
			g->syscall_ret = addr + i;
		if (!g->pop_nr_ret && buf[i] == 0x58 && buf[i + 1] == 0xc3) {
			g->pop_nr_ret = addr + i;
			g->ret = addr + i + 1;
		}
		if (g->syscall_ret && g->pop_nr_ret)
			break;
	}
	if (g->syscall_ret)
		g->syscall_any = g->syscall_ret;
}

bool arch_gadgets_complete(const struct arch_gadgets *g)
{
	return g->syscall_ret && g->pop_nr_ret;
}

/* Registers to run code of ours: no syscall restart on the way out, no
 * single step, string ops forward. */
static void base_regs(const struct arch_thread *t, struct arch_regs *regs)
{
	*regs = t->regs;
	R(regs)->orig_rax = (unsigned long long)-1;
	R(regs)->eflags &= ~(X86_EFLAGS_TF | X86_EFLAGS_DF);
}

static void set_syscall_args(struct user_regs_struct *u, long nr, const uint64_t a[6])
{
	u->rax = nr;
	u->rdi = a[0];
	u->rsi = a[1];
	u->rdx = a[2];
	u->r10 = a[3];
	u->r8 = a[4];
	u->r9 = a[5];
}

size_t arch_chain_size(void)
{
	return 16;
}

/*
 * rip -> "syscall; ret": the syscall, then ret pops "pop rax; ret", which
 * pops 15 (rt_sigreturn) into rax and returns to the pretcode slot's
 * address, a "syscall": rt_sigreturn runs with rsp = F + 8, frame at F.
 *   addr+0: &"pop rax; ret"   addr+8: 15   addr+16 = F: &"syscall" (pretcode)
 */
void arch_setup_chain(const struct arch_thread *t, const struct arch_gadgets *g, uint64_t addr,
		      uint8_t *chain_buf, uint8_t *frame_buf, long nr, const uint64_t a[6],
		      struct arch_regs *regs)
{
	put64(chain_buf, 0, g->pop_nr_ret);
	put64(chain_buf, 8, SYS_rt_sigreturn);
	put64(frame_buf, 0, g->syscall_any);
	base_regs(t, regs);
	set_syscall_args(R(regs), nr, a);
	R(regs)->rip = g->syscall_ret;
	R(regs)->rsp = addr;
}

void arch_setup_bare_syscall(const struct arch_thread *t, uint64_t syscall_insn, long nr,
			     const uint64_t a[6], struct arch_regs *regs)
{
	base_regs(t, regs);
	set_syscall_args(R(regs), nr, a);
	R(regs)->rip = syscall_insn;
	/* Below the red zone, aligned: nothing is pushed, but be tidy. */
	R(regs)->rsp = (CR(&t->regs)->rsp - 256) & ~15ull;
}

void arch_setup_hijack(const struct arch_thread *t, uint64_t code_base, uint64_t shared,
		       uint64_t data_len, uint64_t stack_top, uint64_t sigreturn_sp,
		       struct arch_regs *regs)
{
	struct user_regs_struct *u;

	base_regs(t, regs);
	u = R(regs);
	u->rip = code_base + arch_off_hijack();
	u->rsp = stack_top & ~15ull;
	u->r12 = shared;
	u->r13 = data_len;
	u->r14 = sigreturn_sp;
}
