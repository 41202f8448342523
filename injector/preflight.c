/* preflight.c - may we inject into this pid, and with which of its libc functions?  Reads /proc and ELF files only: stops nothing. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "preflight.h"

#define CAP_SYS_PTRACE_BIT 19

static int yama_scope(void)
{
	char b[16] = "";
	int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (read(fd, b, sizeof(b) - 1) <= 0)
		b[0] = 0;
	close(fd);
	return b[0] ? atoi(b) : -1;
}

/* Is pid a descendant of ours?  (Yama scope 1 lets us attach then.) */
static bool is_descendant(pid_t pid)
{
	pid_t me = getpid();

	for (int i = 0; i < 4096 && pid > 1; i++) {
		char path[64];
		struct proc_status st;

		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
		if (proc_status_read(path, &st))
			return false;
		if (st.ppid == me)
			return true;
		pid = st.ppid;
	}
	return false;
}

static bool have_cap_ptrace(void)
{
	struct proc_status me;

	if (proc_status_read("/proc/self/status", &me))
		return false;
	return me.cap_eff & (1ull << CAP_SYS_PTRACE_BIT);
}

static int fail(char *reason, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *reason, int err, const char *fmt, ...)
{
	va_list ap;

	if (reason) {
		va_start(ap, fmt);
		vsnprintf(reason, INJ_REASONLEN, fmt, ap);
		va_end(ap);
	}
	return err;
}

static int check_permission(pid_t pid, const struct proc_status *st, char *reason,
			    struct inj_info *info)
{
	uid_t me = getuid();
	gid_t mg = getgid();
	bool cap = have_cap_ptrace();
	struct stat ps;
	char path[64];
	int scope;

	if (!cap) {
		for (int i = 0; i < 3; i++)
			if (st->uid[i] != me)
				return fail(reason, -EPERM,
					    "not permitted: pid %d belongs to uid %u and we are uid %u",
					    (int)pid, (unsigned)st->uid[i], (unsigned)me);
		for (int i = 0; i < 3; i++)
			if (st->gid[i] != mg)
				return fail(reason, -EPERM,
					    "not permitted: pid %d runs with gid %u and we are gid %u",
					    (int)pid, (unsigned)st->gid[i], (unsigned)mg);
		/* A non-dumpable process's /proc/PID belongs to root. */
		snprintf(path, sizeof(path), "/proc/%d", (int)pid);
		if (stat(path, &ps) == 0 && ps.st_uid != st->uid[1])
			return fail(reason, -EPERM,
				    "not permitted: pid %d is not dumpable (setuid, or PR_SET_DUMPABLE 0)",
				    (int)pid);
	}
	scope = yama_scope();
	if (scope == 3)
		return fail(reason, -EPERM, "not permitted: yama ptrace_scope is 3 (ptrace disabled)");
	if (scope == 2 && !cap)
		return fail(reason, -EPERM,
			    "not permitted: yama ptrace_scope is 2 (only CAP_SYS_PTRACE may attach)");
	if (scope == 1 && !cap && !is_descendant(pid) && info)
		/* The target may have named us with PR_SET_PTRACER: try. */
		snprintf(info->warning, sizeof(info->warning),
			 "yama ptrace_scope is 1 and pid %d is not our descendant", (int)pid);
	return 0;
}

/* Resolves what the remote code calls, from the target's own files. */
static int resolve(struct mods *mods, struct inj_info *info, char *reason)
{
	struct mod *libc = mods_by_kind(mods, MOD_LIBC), *dl = NULL, *pth = NULL;
	const char *b;

	if (!libc)
		return fail(reason, -ENOSYS, "no libc found in the process");
	snprintf(info->libc_path, sizeof(info->libc_path), "%s", libc->path);
	b = strrchr(libc->path, '/');
	b = b ? b + 1 : libc->path;
	info->musl = !strncmp(b, "ld-musl-", 8) || !strncmp(b, "libc.musl-", 10);
	int r = mods_syms(mods, libc);
	if (r)
		return fail(reason, r, "cannot read the symbols of %s: %s", libc->path, strerror(-r));
	for (int i = 0; i < mods->n; i++) {
		const char *n = strrchr(mods->v[i].path, '/');
		n = n ? n + 1 : mods->v[i].path;
		if (!strncmp(n, "libdl.so", 8) || !strncmp(n, "libdl-", 6))
			dl = &mods->v[i];
		if (!strncmp(n, "libpthread.so", 13) || !strncmp(n, "libpthread-", 11))
			pth = &mods->v[i];
	}

	const struct elfsym_tab *ct = &libc->syms;
	info->fn_dlopen = elfsym_lookup(ct, "dlopen");
	info->fn_dlsym = elfsym_lookup(ct, "dlsym");
	info->fn_dlclose = elfsym_lookup(ct, "dlclose");
	info->fn_dlerror = elfsym_lookup(ct, "dlerror");
	if (!info->fn_dlopen && dl && !mods_syms(mods, dl)) {
		/* glibc < 2.34: libdl.so.2, when the program links it. */
		info->fn_dlopen = elfsym_lookup(&dl->syms, "dlopen");
		info->fn_dlsym = elfsym_lookup(&dl->syms, "dlsym");
		info->fn_dlclose = elfsym_lookup(&dl->syms, "dlclose");
		info->fn_dlerror = elfsym_lookup(&dl->syms, "dlerror");
	}
	if (!info->fn_dlopen) {
		/* glibc < 2.34 without libdl: the internal entry points, which
		 * need __RTLD_DLOPEN in the mode and offer no dlerror. */
		info->fn_dlopen = elfsym_lookup(ct, "__libc_dlopen_mode");
		info->fn_dlsym = elfsym_lookup(ct, "__libc_dlsym");
		info->fn_dlclose = elfsym_lookup(ct, "__libc_dlclose");
		info->fn_dlerror = 0;
		info->old_dlopen = info->fn_dlopen != 0;
	}
	if (!info->fn_dlopen || !info->fn_dlsym || !info->fn_dlclose)
		return fail(reason, -ENOSYS, "libc without dlopen (%s)", libc->path);

	info->fn_pthread_create = elfsym_lookup(ct, "pthread_create");
	info->fn_pthread_detach = elfsym_lookup(ct, "pthread_detach");
	info->fn_pthread_self = elfsym_lookup(ct, "pthread_self");
	info->fn_pthread_exit = elfsym_lookup(ct, "pthread_exit");
	if (!info->fn_pthread_create && pth && !mods_syms(mods, pth)) {
		info->fn_pthread_create = elfsym_lookup(&pth->syms, "pthread_create");
		info->fn_pthread_detach = elfsym_lookup(&pth->syms, "pthread_detach");
		info->fn_pthread_exit = elfsym_lookup(&pth->syms, "pthread_exit");
		if (!info->fn_pthread_self)
			info->fn_pthread_self = elfsym_lookup(&pth->syms, "pthread_self");
	}
	if (!info->fn_pthread_create || !info->fn_pthread_detach || !info->fn_pthread_self)
		return fail(reason, -ENOSYS,
			    "libc without pthread_create (glibc before 2.34 needs libpthread loaded)");
	info->fn_munmap = elfsym_lookup(ct, "munmap");
	info->fn_poll = elfsym_lookup(ct, "poll");
	info->fn_nanosleep = elfsym_lookup(ct, "nanosleep");
	info->fn_close = elfsym_lookup(ct, "close");
	info->fn_syscall = elfsym_lookup(ct, "syscall");
	if (!info->fn_munmap || !info->fn_poll || !info->fn_nanosleep || !info->fn_close ||
	    !info->fn_syscall)
		return fail(reason, -ENOSYS, "libc lacks munmap, poll, nanosleep, close or syscall");
	return 0;
}

int preflight_full(pid_t pid, struct inj_info *info, char *reason, struct proc_maps *maps,
		   struct mods *mods)
{
	char path[64], tcomm[32];
	struct proc_status st;
	int r;

	memset(info, 0, sizeof(*info));
	memset(maps, 0, sizeof(*maps));
	memset(mods, 0, sizeof(*mods));
	info->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	r = proc_status_read(path, &st);
	if (r == -ESRCH || r == -ENOENT)
		return fail(reason, -ESRCH, "no such process");
	if (r)
		return fail(reason, r, "cannot read %s: %s", path, strerror(-r));
	if (st.tgid && st.tgid != pid)
		return fail(reason, -ESRCH, "pid %d is a thread of process %d", (int)pid, (int)st.tgid);
	proc_read_comm(pid, info->comm, sizeof(info->comm));
	info->uid = st.uid[0];
	info->tracer_pid = st.tracer_pid;
	info->seccomp = st.seccomp < 0 ? 0 : st.seccomp;
	info->nthreads = st.threads;
	if (st.state == 'Z' || st.state == 'X')
		return fail(reason, -ESRCH, "process is exiting (state %c)", st.state);
	if (st.tracer_pid) {
		proc_read_comm(st.tracer_pid, tcomm, sizeof(tcomm));
		return fail(reason, -EPERM, "already traced by pid %d (%s)", (int)st.tracer_pid,
			    tcomm[0] ? tcomm : "?");
	}
	/* Stopped by job control: attaching would have to resume it or keep
	 * it stopped with a stop we cannot complete.  Leave it alone. */
	if (st.state == 'T' || st.state == 't')
		return fail(reason, -EBUSY, "process is stopped (state T)");
	r = check_permission(pid, &st, reason, info);
	if (r)
		return r;
	if (st.seccomp == 1)
		return fail(reason, -EACCES, "seccomp strict mode");
	if (st.seccomp == 2)
		snprintf(info->warning, sizeof(info->warning),
			 "seccomp filter mode: the loader's system calls may be refused");

	/* A program without PT_INTERP has no loader to answer dlopen. */
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return fail(reason, -ENOEXEC, "static binary or no dynamic loader (kernel thread)");
		return fail(reason, errno == EACCES ? -EPERM : -errno, "cannot open %s: %s", path,
			    strerror(errno));
	}
	char interp[256];
	bool dynamic = false;
	r = elfsym_interp(fd, interp, sizeof(interp), &dynamic);
	{
		unsigned char eh[20];
		if (pread(fd, eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) && eh[4] != 2)
			r = fail(reason, -ENOEXEC, "not a 64-bit process");
		else if (r == 0 && (eh[18] | eh[19] << 8) != arch_elf_machine())
			r = fail(reason, -ENOEXEC, "process of another architecture");
	}
	close(fd);
	if (r == -ENOEXEC && reason && reason[0])
		return r;
	if (r || !interp[0])
		return fail(reason, -ENOEXEC, "static binary or no dynamic loader");

	r = proc_maps_read(pid, maps);
	if (r)
		return fail(reason, r, r == -ESRCH ? "no such process" : "cannot read maps: %s",
			    strerror(-r));
	r = mods_build(pid, maps, mods);
	if (r)
		return fail(reason, r, "out of memory");
	struct mod *ld = mods_by_kind(mods, MOD_LDSO);
	if (!ld && !mods_by_kind(mods, MOD_LIBC))
		return fail(reason, -ENOEXEC, "static binary or no dynamic loader");
	if (ld)
		snprintf(info->ldso_path, sizeof(info->ldso_path), "%s", ld->path);
	r = resolve(mods, info, reason);
	if (r)
		return r;
	return 0;
}

int inj_preflight(pid_t pid, struct inj_info *info, char reason[INJ_REASONLEN])
{
	struct inj_info tmp;
	struct proc_maps maps;
	struct mods mods;
	int r;

	if (reason)
		reason[0] = 0;
	r = preflight_full(pid, info ? info : &tmp, reason, &maps, &mods);
	mods_free(&mods);
	proc_maps_free(&maps);
	return r;
}
