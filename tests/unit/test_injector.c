/* test_injector.c - unit tests of injector/: the remote code block is relocation-free, symbols resolve
 * to the target's real addresses, preflight reasons, the x86_64 signal frame layout, and a whole
 * open/load/call/unload/close cycle on a forked child. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "injector.h"
#include "internal.h"
#include "check.h"

static char build_dir[PATH_MAX];

/* The build directory: $HEAPSNAP_BUILD, else two levels above this binary. */
static void find_build_dir(void)
{
	const char *e = getenv("HEAPSNAP_BUILD");
	char self[PATH_MAX];
	ssize_t n;

	if (e && *e) {
		snprintf(build_dir, sizeof(build_dir), "%s", e);
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;
	for (int i = 0; i < 3; i++) {
		char *s = strrchr(self, '/');
		if (s)
			*s = 0;
	}
	snprintf(build_dir, sizeof(build_dir), "%s", self);
}

/* No relocation may touch section inj_remote: it is copied raw into targets. */
static void test_remote_has_no_relocations(const char *obj)
{
	char path[PATH_MAX + 64];
	Elf_Scn *scn = NULL;
	size_t shstrndx, remote = 0;
	bool seen = false;
	int fd;
	Elf *e;

	snprintf(path, sizeof(path), "%s/%s", build_dir, obj);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "note: %s not found, relocation check skipped\n", path);
		return;
	}
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	CHECK(e != NULL);
	if (!e) {
		close(fd);
		return;
	}
	elf_getshdrstrndx(e, &shstrndx);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		gelf_getshdr(scn, &sh);
		const char *name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && !strcmp(name, "inj_remote")) {
			remote = elf_ndxscn(scn);
			seen = true;
		}
	}
	CHECK(seen);
	scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		gelf_getshdr(scn, &sh);
		if ((sh.sh_type == SHT_RELA || sh.sh_type == SHT_REL) && sh.sh_info == remote && sh.sh_size) {
			fprintf(stderr, "%s: %zu bytes of relocations against inj_remote\n", obj,
				(size_t)sh.sh_size);
			failures++;
		}
	}
	elf_end(e);
	close(fd);
}

/* The section of .rodata/.data the remote code must not need: the remote
 * block lies between its bounds and holds both stubs and the worker. */
static void test_remote_bounds(void)
{
	uintptr_t s = (uintptr_t)__start_inj_remote, e = (uintptr_t)__stop_inj_remote;
	uintptr_t w = (uintptr_t)rm_worker_main;

	CHECK(e > s);
	CHECK(w >= s && w < e);
	CHECK(arch_off_hijack() < e - s);
	CHECK(arch_off_worker_entry() < e - s);
}

static pid_t spawn_sleeper(void)
{
	pid_t c = fork();

	if (c == 0) {
		for (;;)
			pause();
	}
	return c;
}

/* A child that holds known values in callee-saved GPRs and xmm0-15 and
 * sits in pause(2) forever (in asm: nothing else touches them). */
static pid_t spawn_patterned(void)
{
	pid_t c = fork();

	if (c == 0) {
		__asm__ volatile(
			"mov $0x1111222233334444, %%rbx\n"
			"mov $0x5555666677778888, %%r12\n"
			"mov $0x99990000aaaabbbb, %%r13\n"
			"mov $0xccccddddeeeeffff, %%r14\n"
			"mov $0x0123456789abcdef, %%r15\n"
			"movq %%rbx, %%xmm0\n movq %%r12, %%xmm1\n movq %%r13, %%xmm2\n"
			"movq %%r14, %%xmm3\n movq %%r15, %%xmm4\n movq %%rbx, %%xmm5\n"
			"movq %%r12, %%xmm6\n movq %%r13, %%xmm7\n movq %%r14, %%xmm8\n"
			"movq %%r15, %%xmm9\n movq %%rbx, %%xmm10\n movq %%r12, %%xmm11\n"
			"movq %%r13, %%xmm12\n movq %%r14, %%xmm13\n movq %%r15, %%xmm14\n"
			"movq %%rbx, %%xmm15\n"
			"1: mov $34, %%eax\n syscall\n jmp 1b\n"
			::: "rax", "rbx", "rcx", "r11", "r12", "r13", "r14", "r15", "memory");
	}
	return c;
}

/* Registers and the legacy FP/SSE area of a thread, read with ptrace
 * (the thread sits in pause: the state is stable). */
struct snap {
	struct arch_regs r;
	uint8_t fx[416];
	uint64_t mask;
};

static int take_snap(pid_t c, struct snap *s)
{
	struct arch_thread t;
	int st, r = pt_seize(c);

	if (r)
		return r;
	pt_interrupt(c);
	if (waitpid(c, &st, __WALL) != c) {
		pt_detach(c, 0);
		return -ECHILD;
	}
	r = arch_get_thread(c, &t);
	if (!r) {
		s->r = t.regs;
		memcpy(s->fx, t.fpstate, sizeof(s->fx));
		s->mask = t.sigmask;
		arch_free_thread(&t);
	}
	pt_detach(c, 0);
	return r;
}

static void reap(pid_t c)
{
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
}

/* A forked child maps libc where we do: what preflight resolves from the
 * child's libc file must be exactly our own addresses. */
static void test_preflight_resolves(void)
{
	struct inj_info info;
	char reason[INJ_REASONLEN];
	pid_t c = spawn_sleeper();

	CHECK(c > 0);
	int r = inj_preflight(c, &info, reason);
	CHECK_EQ(r, 0);
	if (r)
		fprintf(stderr, "preflight: %s\n", reason);
	CHECK_EQ(info.pid, c);
	CHECK(strstr(info.libc_path, "libc") != NULL);
	CHECK_EQ(info.fn_dlopen, (uintptr_t)dlsym(RTLD_DEFAULT, "dlopen"));
	CHECK_EQ(info.fn_dlsym, (uintptr_t)dlsym(RTLD_DEFAULT, "dlsym"));
	CHECK_EQ(info.fn_dlclose, (uintptr_t)dlsym(RTLD_DEFAULT, "dlclose"));
	CHECK_EQ(info.fn_pthread_create, (uintptr_t)dlsym(RTLD_DEFAULT, "pthread_create"));
	CHECK_EQ(info.fn_munmap, (uintptr_t)munmap);
	CHECK_EQ(info.fn_poll, (uintptr_t)dlsym(RTLD_DEFAULT, "poll"));
	CHECK_EQ(info.fn_syscall, (uintptr_t)dlsym(RTLD_DEFAULT, "syscall"));
	CHECK_EQ(info.tracer_pid, 0);
	CHECK(!info.musl);

	/* Stopped by job control: refused, and left stopped. */
	kill(c, SIGSTOP);
	for (int i = 0; i < 200; i++) {
		char path[64], st = 0;
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)c);
		FILE *f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%*d %*s %c", &st) != 1)
				st = 0;
			fclose(f);
		}
		if (st == 'T')
			break;
		usleep(5000);
	}
	r = inj_preflight(c, &info, reason);
	CHECK_EQ(r, -EBUSY);
	CHECK_STR(reason, "process is stopped (state T)");
	reap(c);
}

static void *thread_tid(void *arg)
{
	*(volatile pid_t *)arg = gettid();
	for (;;)
		pause();
	return NULL;
}

static void test_preflight_errors(void)
{
	char reason[INJ_REASONLEN];
	int r;

	r = inj_preflight(0x3ffffff0, NULL, reason);
	CHECK_EQ(r, -ESRCH);
	CHECK_STR(reason, "no such process");

	/* A thread id that is not a process. */
	pthread_t t;
	static volatile pid_t tid;
	if (pthread_create(&t, NULL, thread_tid, (void *)&tid) == 0) {
		while (!tid)
			usleep(1000);
		r = inj_preflight(tid, NULL, reason);
		CHECK_EQ(r, -ESRCH);
		CHECK(strstr(reason, "is a thread of process") != NULL);
		pthread_cancel(t);
		pthread_join(t, NULL);
	}
}

/* The frame: magic words where the kernel looks for them, registers in
 * sigcontext order, the pretcode slot at the frame's address. */
static void test_frame_layout(void)
{
	struct arch_thread t;
	uint8_t *buf;
	uint64_t sp = 0, v;
	uint32_t m;

	memset(&t, 0, sizeof(t));
	t.fpsize = 2688;
	t.fpstate = calloc(1, t.fpsize);
	for (int i = 0; i < 48; i++) {
		t.restore.w[i] = 0x1000 + i;
		t.regs.w[i] = 0x1000 + i;
	}
	t.sigmask = 0x5a5a;
	size_t fsz = arch_frame_size(&t);
	buf = calloc(1, fsz);
	CHECK_EQ(arch_build_frame(&t, 0x10001, buf, fsz, &sp), -EINVAL); /* misaligned */
	CHECK_EQ(arch_build_frame(&t, 0x10000, buf, fsz, &sp), 0);
	CHECK_EQ(sp, 0x10008);
	memcpy(&v, buf + 8 + 296, 8);
	CHECK_EQ(v, 0x5a5a);                         /* uc_sigmask */
	memcpy(&v, buf + 8 + 40 + 128, 8);
	CHECK_EQ(v, 0x1000 + 16);                    /* rip: user_regs_struct slot 16 */
	memcpy(&v, buf + 8 + 40 + 120, 8);
	CHECK_EQ(v, 0x1000 + 19);                    /* rsp: slot 19 */
	memcpy(&v, buf + 8 + 40 + 184, 8);
	CHECK_EQ(v, 0x10000 + 512);                  /* fpstate pointer, 64-byte aligned */
	memcpy(&m, buf + 512 + 464, 4);
	CHECK_EQ(m, 0x46505853u);                    /* FP_XSTATE_MAGIC1 */
	memcpy(&m, buf + 512 + t.fpsize, 4);
	CHECK_EQ(m, 0x46505845u);                    /* FP_XSTATE_MAGIC2 */
	free(buf);
	free(t.fpstate);
}

static void test_gadgets(void)
{
	static const uint8_t text[] = { 0x90, 0x0f, 0x05, 0x90, 0x58, 0xc3, 0x0f, 0x05, 0xc3 };
	struct arch_gadgets g;

	memset(&g, 0, sizeof(g));
	arch_find_gadgets(text, sizeof(text), 0x1000, &g);
	CHECK(arch_gadgets_complete(&g));
	CHECK_EQ(g.syscall_ret, 0x1006);
	CHECK_EQ(g.pop_nr_ret, 0x1004);
	CHECK_EQ(g.ret, 0x1005);
}

/* The whole cycle on a forked child: no thread left traced, library gone,
 * helper thread gone, child still fine. */
static void test_cycle(bool via_frame)
{
	char lib[PATH_MAX + 64], reason[INJ_REASONLEN];
	struct inj_proc *p = NULL;
	struct inj_stats st;
	uint64_t h = 0, ret = 0, args[1] = { 41 };
	bool already = true;
	pid_t c;
	int r;

	snprintf(lib, sizeof(lib), "%s/tests/inject/libinjtest.so", build_dir);
	if (access(lib, R_OK)) {
		fprintf(stderr, "note: %s not built, cycle test skipped\n", lib);
		return;
	}
	char *rl = realpath(lib, NULL);
	struct inj_opts o;
	struct snap before, after;
	memset(&o, 0, sizeof(o));
	o.restore_via_frame = via_frame;
	c = spawn_patterned();
	for (int i = 0; i < 200 && proc_task_syscall(c, c) != 34; i++)
		usleep(5000);
	CHECK_EQ(take_snap(c, &before), 0);
	CHECK_EQ(before.r.w[5], 0x1111222233334444ull); /* rbx reached pause */
	r = inj_open(c, &o, &p, reason);
	CHECK_EQ(r, 0);
	if (r) {
		fprintf(stderr, "inj_open: %s\n", reason);
		reap(c);
		free(rl);
		return;
	}
	inj_get_stats(p, &st);
	CHECK_EQ(st.hijacked_tid, c);
	CHECK(st.threads_tried >= 1);
	CHECK(st.worker_tid > 0 && st.worker_tid != c);
	r = inj_load(p, rl, &h, &already, reason);
	CHECK_EQ(r, 0);
	CHECK(h != 0);
	CHECK(!already);
	r = inj_call(p, h, "hsp_test_ping", args, 1, &ret, reason);
	CHECK_EQ(r, 0);
	CHECK_EQ(ret, 42);
	r = inj_call(p, h, "hsp_test_pid", NULL, 0, &ret, reason);
	CHECK_EQ(r, 0);
	CHECK_EQ(ret, c);
	r = inj_call(p, h, "no_such_symbol", NULL, 0, &ret, reason);
	CHECK_EQ(r, -ENOENT);
	CHECK(strstr(reason, "symbol 'no_such_symbol' not found") != NULL);
	/* A stop function that says "stay" keeps the library loaded. */
	r = inj_unload(p, h, "hsp_test_refuse", reason);
	CHECK_EQ(r, -EBUSY);
	CHECK(strstr(reason, "refused to unload: hsp_test_refuse returned 7") != NULL);
	r = inj_call(p, h, "hsp_test_ping", args, 1, &ret, reason);
	CHECK_EQ(r, 0);
	CHECK_EQ(ret, 42);
	r = inj_unload(p, h, "hsp_test_stop", reason);
	CHECK_EQ(r, 0);
	r = inj_unload(p, h, NULL, reason);
	CHECK_EQ(r, -EINVAL); /* forgotten after the unload */
	CHECK_EQ(inj_close(p), 0);

	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)c, (int)st.worker_tid);
	CHECK(access(path, F_OK) != 0);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)c);
	struct proc_status ps;
	CHECK_EQ(proc_status_read(path, &ps), 0);
	CHECK_EQ(ps.tracer_pid, 0);
	CHECK_EQ(ps.threads, 1);
	CHECK(ps.state == 'S' || ps.state == 'R');
	struct proc_maps m;
	CHECK_EQ(proc_maps_read(c, &m), 0);
	for (int i = 0; i < m.n; i++)
		CHECK(strcmp(m.v[i].path, rl) != 0);
	proc_maps_free(&m);
	CHECK_EQ(waitpid(c, NULL, WNOHANG), 0); /* alive */
	/* Back in pause() with every register, the SSE state and the mask as
	 * they were (the same interrupt stop gives the same picture). */
	CHECK_EQ(take_snap(c, &after), 0);
	CHECK(memcmp(&before.r, &after.r, sizeof(before.r)) == 0);
	CHECK(memcmp(before.fx, after.fx, sizeof(before.fx)) == 0);
	CHECK_EQ(before.mask, after.mask);
	CHECK_EQ(st.tracer_restore, !via_frame);
	reap(c);
	free(rl);
}

int main(void)
{
	find_build_dir();
	test_remote_has_no_relocations("injector/remote.o");
	test_remote_has_no_relocations("injector/arch/x86_64.o");
	test_remote_bounds();
	test_gadgets();
	test_frame_layout();
	test_preflight_errors();
	test_preflight_resolves();
	test_cycle(false);
	test_cycle(true);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("injector unit tests ok\n");
	return 0;
}
