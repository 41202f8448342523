/* inj_regs.c - compute threads that keep known values in GPRs (rbx, rdx, rsi,
 * rdi, r8-r15), vector registers (xmm/ymm 0-15 or zmm 0-31 + k0-k7), MXCSR,
 * the x87 control word and RFLAGS.DF across a spin loop, and check them after
 * every block: a stop at any instruction must give them back intact.
 * Usage: inj_regs [--threads N] [--spins N] [--isa sse|avx|avx512]
 * All N threads (main included) compute; SIGTERM ends it with status 0 if
 * every block checked out, else it dies at once with "FAIL: <reg> changed". */
#include <pthread.h>
#include <stddef.h>
#include "inj_common.h"

/* One block's input and output; offsets are hard-coded in the asm below. */
struct regblk {
	uint64_t gin[12];	/*    0: rbx rdx rsi rdi r8 r9 r10 r11 r12 r13 r14 r15 */
	uint64_t spins;		/*   96 */
	uint32_t mxcsr_in;	/*  104 */
	uint16_t fcw_in;	/*  108 */
	uint16_t pad0;
	uint32_t mxcsr_def;	/*  112: restored after the block */
	uint16_t fcw_def;	/*  116 */
	uint16_t pad1;
	uint64_t flags_out;	/*  120 */
	uint64_t gout[12];	/*  128 */
	uint32_t mxcsr_out;	/*  224 */
	uint16_t fcw_out;	/*  228 */
	uint8_t pad2[10];
	uint16_t kin[8];	/*  240 */
	uint16_t kout[8];	/*  256 */
	uint8_t pad3[240];
	uint8_t vin[32][64];	/*  512 */
	uint8_t vout[32][64];	/* 2560 */
} __attribute__((aligned(64)));

_Static_assert(offsetof(struct regblk, spins) == 96, "layout");
_Static_assert(offsetof(struct regblk, mxcsr_def) == 112, "layout");
_Static_assert(offsetof(struct regblk, flags_out) == 120, "layout");
_Static_assert(offsetof(struct regblk, gout) == 128, "layout");
_Static_assert(offsetof(struct regblk, mxcsr_out) == 224, "layout");
_Static_assert(offsetof(struct regblk, fcw_out) == 228, "layout");
_Static_assert(offsetof(struct regblk, kin) == 240, "layout");
_Static_assert(offsetof(struct regblk, kout) == 256, "layout");
_Static_assert(offsetof(struct regblk, vin) == 512, "layout");
_Static_assert(offsetof(struct regblk, vout) == 2560, "layout");

static const char *const gpr_names[12] = {
	"rbx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"
};

#define GPR_LOAD \
	"mov 0(%%rax), %%rbx\n\t"   "mov 8(%%rax), %%rdx\n\t"   "mov 16(%%rax), %%rsi\n\t" \
	"mov 24(%%rax), %%rdi\n\t"  "mov 32(%%rax), %%r8\n\t"   "mov 40(%%rax), %%r9\n\t" \
	"mov 48(%%rax), %%r10\n\t"  "mov 56(%%rax), %%r11\n\t"  "mov 64(%%rax), %%r12\n\t" \
	"mov 72(%%rax), %%r13\n\t"  "mov 80(%%rax), %%r14\n\t"  "mov 88(%%rax), %%r15\n\t"
#define GPR_STORE \
	"mov %%rbx, 128(%%rax)\n\t" "mov %%rdx, 136(%%rax)\n\t" "mov %%rsi, 144(%%rax)\n\t" \
	"mov %%rdi, 152(%%rax)\n\t" "mov %%r8, 160(%%rax)\n\t"  "mov %%r9, 168(%%rax)\n\t" \
	"mov %%r10, 176(%%rax)\n\t" "mov %%r11, 184(%%rax)\n\t" "mov %%r12, 192(%%rax)\n\t" \
	"mov %%r13, 200(%%rax)\n\t" "mov %%r14, 208(%%rax)\n\t" "mov %%r15, 216(%%rax)\n\t"
/* Set MXCSR (round to zero) and the x87 control word (truncate), DF=1, spin,
 * then record RFLAGS, MXCSR and FCW and put the defaults back.  pushfq goes
 * below the red zone: the compiler may keep live data there.  The global
 * label marks the loop, where every checked value is live (a debugger can
 * break there to clobber one: tests/inject/targets-selfcheck.sh). */
#define SPIN(label) \
	"ldmxcsr 104(%%rax)\n\t" "fldcw 108(%%rax)\n\t" \
	"mov 96(%%rax), %%rcx\n\t" "std\n\t" \
	".globl " label "\n" label ":\n\t" \
	"1: dec %%rcx\n\t" "jnz 1b\n\t" \
	"lea -128(%%rsp), %%rsp\n\t" "pushfq\n\t" "pop %%rcx\n\t" "lea 128(%%rsp), %%rsp\n\t" \
	"cld\n\t" "mov %%rcx, 120(%%rax)\n\t" \
	"stmxcsr 224(%%rax)\n\t" "fnstcw 228(%%rax)\n\t" \
	"ldmxcsr 112(%%rax)\n\t" "fldcw 116(%%rax)\n\t"
#define IRP16 ".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n\t"
#define IRP32 ".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23," \
	"24,25,26,27,28,29,30,31\n\t"
#define GPR_CLOBBERS "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", \
	"r12", "r13", "r14", "r15", "memory", "cc"
#define XMM_CLOBBERS "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", \
	"xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

static void __attribute__((noinline)) block_sse(struct regblk *b)
{
	asm volatile(GPR_LOAD
		     IRP16 "movdqu 512+64*\\i(%%rax), %%xmm\\i\n\t" ".endr\n\t"
		     SPIN("inj_spin_sse")
		     GPR_STORE
		     IRP16 "movdqu %%xmm\\i, 2560+64*\\i(%%rax)\n\t" ".endr\n\t"
		     : : "a"(b) : GPR_CLOBBERS, XMM_CLOBBERS);
}

static void __attribute__((noinline)) block_avx(struct regblk *b)
{
	asm volatile(GPR_LOAD
		     IRP16 "vmovdqu 512+64*\\i(%%rax), %%ymm\\i\n\t" ".endr\n\t"
		     SPIN("inj_spin_avx")
		     GPR_STORE
		     IRP16 "vmovdqu %%ymm\\i, 2560+64*\\i(%%rax)\n\t" ".endr\n\t"
		     "vzeroupper\n\t"
		     : : "a"(b) : GPR_CLOBBERS, XMM_CLOBBERS);
}

/* zmm16-31 and k0-7 need no clobber: this file is built without AVX-512,
 * so the compiler never keeps anything in them. */
static void __attribute__((noinline)) block_avx512(struct regblk *b)
{
	asm volatile(GPR_LOAD
		     IRP32 "vmovdqu64 512+64*\\i(%%rax), %%zmm\\i\n\t" ".endr\n\t"
		     ".irp i,0,1,2,3,4,5,6,7\n\t" "kmovw 240+2*\\i(%%rax), %%k\\i\n\t" ".endr\n\t"
		     SPIN("inj_spin_avx512")
		     GPR_STORE
		     IRP32 "vmovdqu64 %%zmm\\i, 2560+64*\\i(%%rax)\n\t" ".endr\n\t"
		     ".irp i,0,1,2,3,4,5,6,7\n\t" "kmovw %%k\\i, 256+2*\\i(%%rax)\n\t" ".endr\n\t"
		     "vzeroupper\n\t"
		     : : "a"(b) : GPR_CLOBBERS, XMM_CLOBBERS);
}

enum isa { ISA_SSE, ISA_AVX, ISA_AVX512 };
static const char *const isa_names[] = { "sse", "avx", "avx512" };
static const char *const vec_names[] = { "xmm", "ymm", "zmm" };
static const int vec_count[] = { 16, 16, 32 };
static const int vec_bytes[] = { 16, 32, 64 };

static enum isa isa;
static uint64_t spins = 20000;

struct worker {
	pthread_t th;
	int idx;
	uint64_t blocks;
	struct inj_gap *gap;
};

static inline uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void check_block(struct worker *w, struct regblk *b)
{
	int i, j;

	for (i = 0; i < 12; i++)
		if (b->gout[i] != b->gin[i])
			inj_fail("%s changed: 0x%016llx, expected 0x%016llx (tid %d, block %llu)",
				 gpr_names[i], (unsigned long long)b->gout[i],
				 (unsigned long long)b->gin[i], w->gap->tid,
				 (unsigned long long)w->blocks);
	if (!(b->flags_out & 0x400))
		inj_fail("RFLAGS.DF cleared (rflags 0x%llx, tid %d, block %llu)",
			 (unsigned long long)b->flags_out, w->gap->tid, (unsigned long long)w->blocks);
	if (b->flags_out & 0x100)
		inj_fail("RFLAGS.TF set (rflags 0x%llx, tid %d)", (unsigned long long)b->flags_out, w->gap->tid);
	/* The low 6 bits are sticky exception flags, not state we set. */
	if ((b->mxcsr_out & ~0x3fu) != b->mxcsr_in)
		inj_fail("mxcsr changed: 0x%x, expected 0x%x (tid %d)", b->mxcsr_out, b->mxcsr_in, w->gap->tid);
	if (b->fcw_out != b->fcw_in)
		inj_fail("x87 control word changed: 0x%x, expected 0x%x (tid %d)", b->fcw_out, b->fcw_in, w->gap->tid);
	for (i = 0; i < vec_count[isa]; i++)
		for (j = 0; j < vec_bytes[isa]; j++)
			if (b->vout[i][j] != b->vin[i][j])
				inj_fail("%s%d changed: byte %d is 0x%02x, expected 0x%02x (tid %d, block %llu)",
					 vec_names[isa], i, j, b->vout[i][j], b->vin[i][j], w->gap->tid,
					 (unsigned long long)w->blocks);
	if (isa == ISA_AVX512)
		for (i = 0; i < 8; i++)
			if (b->kout[i] != b->kin[i])
				inj_fail("k%d changed: 0x%x, expected 0x%x (tid %d)", i, b->kout[i], b->kin[i], w->gap->tid);
}

static void *compute(void *arg)
{
	struct worker *w = arg;
	static __thread struct regblk b;
	uint64_t seed = 0x5eed0000ull + w->idx * 0x1000003ull;
	uint32_t mxcsr_def;
	uint16_t fcw_def;
	int i, j;

	asm volatile("stmxcsr %0" : "=m"(mxcsr_def));
	asm volatile("fnstcw %0" : "=m"(fcw_def));
	w->gap = inj_gap_new("compute");
	while (!inj_stop) {
		/* Fresh values every block: a register restored from an older
		 * block, or from another thread, differs too. */
		for (i = 0; i < 12; i++)
			b.gin[i] = splitmix(&seed);
		for (i = 0; i < vec_count[isa]; i++)
			for (j = 0; j < vec_bytes[isa]; j += 8) {
				uint64_t v = splitmix(&seed);

				memcpy(&b.vin[i][j], &v, 8);
			}
		for (i = 0; i < 8; i++)
			b.kin[i] = (uint16_t)splitmix(&seed);
		b.spins = spins;
		b.mxcsr_in = 0x7f80;	/* all exceptions masked, round toward zero */
		b.fcw_in = 0x0f7f;	/* x87: extended precision, truncate */
		b.mxcsr_def = mxcsr_def;
		b.fcw_def = fcw_def;
		memset(b.gout, 0, sizeof(b.gout));
		memset(b.vout, 0, sizeof(b.vout));
		if (isa == ISA_AVX512)
			block_avx512(&b);
		else if (isa == ISA_AVX)
			block_avx(&b);
		else
			block_sse(&b);
		check_block(w, &b);
		w->blocks++;
		inj_gap_tick(w->gap);
		inj_progress_add(1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct worker *ws;
	int nthreads = 2, i;

	__builtin_cpu_init();
	isa = __builtin_cpu_supports("avx512f") ? ISA_AVX512 :
	      __builtin_cpu_supports("avx") ? ISA_AVX : ISA_SSE;
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--spins") == 0 && i + 1 < argc)
			spins = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc) {
			i++;
			if (strcmp(argv[i], "sse") == 0)
				isa = ISA_SSE;
			else if (strcmp(argv[i], "avx") == 0 && __builtin_cpu_supports("avx"))
				isa = ISA_AVX;
			else if (strcmp(argv[i], "avx512") == 0 && __builtin_cpu_supports("avx512f"))
				isa = ISA_AVX512;
			else {
				fprintf(stderr, "inj_regs: isa '%s' unknown or not supported here\n", argv[i]);
				return 77;
			}
		} else {
			fprintf(stderr, "usage: inj_regs [--threads N] [--spins N] [--isa sse|avx|avx512]\n");
			return 64;
		}
	}
	if (nthreads < 1 || nthreads > 256 || spins < 1) {
		fprintf(stderr, "inj_regs: bad --threads or --spins\n");
		return 64;
	}
	inj_init();
	inj_on_term(SA_RESTART);
	ws = calloc(nthreads, sizeof(*ws));
	for (i = 0; i < nthreads; i++)
		ws[i].idx = i;
	for (i = 1; i < nthreads; i++)
		if (pthread_create(&ws[i].th, NULL, compute, &ws[i]))
			inj_fail("pthread_create failed");
	printf("inj_regs: %d compute threads checking 12 GPRs, %d %s registers%s, mxcsr, x87 cw, DF "
	       "every %llu spins\n", nthreads, vec_count[isa], vec_names[isa],
	       isa == ISA_AVX512 ? ", k0-k7" : "", (unsigned long long)spins);
	inj_ready();
	compute(&ws[0]);
	for (i = 1; i < nthreads; i++)
		pthread_join(ws[i].th, NULL);
	inj_gap_report();
	for (i = 0; i < nthreads; i++)
		printf("regs: tid %d: %llu blocks intact\n", ws[i].gap->tid, (unsigned long long)ws[i].blocks);
	printf("regs ok: isa %s, %d threads, every block intact\n", isa_names[isa], nthreads);
	return 0;
}
