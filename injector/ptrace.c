/* ptrace.c - the only file that calls ptrace(2) and moves the target's memory (process_vm_*, /proc/PID/mem). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

int64_t inj_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int pt_req(enum __ptrace_request req, pid_t tid, void *addr, void *data)
{
	if (ptrace(req, tid, addr, data) == -1)
		return -errno;
	return 0;
}

int pt_seize(pid_t tid)
{
	/* No EXITKILL (our death must not kill the target) and no TRACECLONE
	 * (the worker thread the hijacked thread creates stays untraced). */
	return pt_req(PTRACE_SEIZE, tid, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD);
}

int pt_interrupt(pid_t tid)
{
	return pt_req(PTRACE_INTERRUPT, tid, NULL, NULL);
}

int pt_detach(pid_t tid, int sig)
{
	return pt_req(PTRACE_DETACH, tid, NULL, (void *)(long)sig);
}

int pt_cont(pid_t tid, int sig)
{
	return pt_req(PTRACE_CONT, tid, NULL, (void *)(long)sig);
}

int pt_syscall(pid_t tid, int sig)
{
	return pt_req(PTRACE_SYSCALL, tid, NULL, (void *)(long)sig);
}

int pt_get_regset(pid_t tid, int type, void *buf, size_t *size)
{
	struct iovec iov = { buf, *size };
	int r = pt_req(PTRACE_GETREGSET, tid, (void *)(long)type, &iov);

	if (!r)
		*size = iov.iov_len;
	return r;
}

int pt_set_regset(pid_t tid, int type, const void *buf, size_t size)
{
	struct iovec iov = { (void *)buf, size };

	return pt_req(PTRACE_SETREGSET, tid, (void *)(long)type, &iov);
}

int pt_get_sigmask(pid_t tid, uint64_t *mask)
{
	return pt_req(PTRACE_GETSIGMASK, tid, (void *)sizeof(*mask), mask);
}

int pt_set_sigmask(pid_t tid, uint64_t mask)
{
	return pt_req(PTRACE_SETSIGMASK, tid, (void *)sizeof(mask), &mask);
}

int pt_get_sysinfo(pid_t tid, struct pt_sysinfo *si)
{
	struct __ptrace_syscall_info in;
	long n;

	memset(&in, 0, sizeof(in));
	n = ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(in), &in);
	if (n < 0)
		return -errno;
	memset(si, 0, sizeof(*si));
	si->op = in.op;
	si->pc = in.instruction_pointer;
	si->sp = in.stack_pointer;
	if (in.op == PTRACE_SYSCALL_INFO_ENTRY)
		si->nr = in.entry.nr;
	else if (in.op == PTRACE_SYSCALL_INFO_EXIT)
		si->rval = in.exit.rval;
	return 0;
}

int pt_get_rseq(pid_t tid, uint64_t *rseq_abi, uint32_t *rseq_len)
{
	struct __ptrace_rseq_configuration c;

	memset(&c, 0, sizeof(c));
	if (ptrace(PTRACE_GET_RSEQ_CONFIGURATION, tid, (void *)sizeof(c), &c) < 0)
		return -errno;
	*rseq_abi = c.rseq_abi_pointer;
	*rseq_len = c.rseq_abi_size;
	return 0;
}

/* The process behind pidfd has exited (or pidfd is unusable). */
static bool pidfd_dead(int pidfd)
{
	struct pollfd pf = { pidfd, POLLIN, 0 };

	if (pidfd < 0)
		return false;
	return poll(&pf, 1, 0) == 1;
}

void inj_pause(int64_t waited_ns)
{
	/* Sleep, never spin with sched_yield(): a tracer that stays runnable
	 * keeps its CPU busy, so the thread it just resumed queues behind a
	 * busy thread of the target for up to a scheduler tick per step. */
	int64_t ns = waited_ns < 2000000 ? 20000 : waited_ns / 20;
	struct timespec ts = { 0, ns < 20000 ? 20000 : ns > 2000000 ? 2000000 : ns };

	nanosleep(&ts, NULL);
}

int pt_wait(pid_t tid, int pidfd, int64_t deadline_ns, int *status)
{
	int64_t start = inj_now_ns();

	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);

		if (r == tid) {
			if (WIFEXITED(*status) || WIFSIGNALED(*status))
				return -ESRCH;
			return 0;
		}
		if (r < 0)
			return errno == ECHILD ? -ESRCH : -errno;
		if (pidfd_dead(pidfd))
			return -ESRCH;
		int64_t now = inj_now_ns();
		if (now >= deadline_ns)
			return -ETIMEDOUT;
		inj_pause(now - start);
	}
}

int pt_poll_stop(pid_t tid, int *status)
{
	pid_t r = waitpid(tid, status, __WALL | WNOHANG);

	if (r == tid)
		return WIFEXITED(*status) || WIFSIGNALED(*status) ? -ESRCH : 1;
	if (r < 0)
		return errno == ECHILD ? -ESRCH : -errno;
	return 0;
}

int pt_mem_open(pid_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int mem_pio(int memfd, uint64_t addr, void *buf, size_t len, bool write)
{
	size_t done = 0;

	if (memfd < 0)
		return -EBADF;
	while (done < len) {
		ssize_t n = write ? pwrite(memfd, (const char *)buf + done, len - done, (off_t)(addr + done))
				  : pread(memfd, (char *)buf + done, len - done, (off_t)(addr + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		done += n;
	}
	return 0;
}

int pt_read_mem(pid_t pid, int memfd, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);

	if (n == (ssize_t)len)
		return 0;
	if (n < 0 && errno == ESRCH)
		return -ESRCH;
	/* Partial or refused (ENOSYS, EPERM under some LSMs): /proc/PID/mem. */
	return mem_pio(memfd, addr, buf, len, false);
}

int pt_write_mem(pid_t pid, int memfd, uint64_t addr, const void *buf, size_t len)
{
	struct iovec l = { (void *)buf, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_writev(pid, &l, 1, &r, 1, 0);

	if (n == (ssize_t)len)
		return 0;
	if (n < 0 && errno == ESRCH)
		return -ESRCH;
	return mem_pio(memfd, addr, (void *)buf, len, true);
}

int pt_write_mem_force(int memfd, uint64_t addr, const void *buf, size_t len)
{
	return mem_pio(memfd, addr, (void *)buf, len, true);
}
