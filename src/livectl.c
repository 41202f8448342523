/* livectl.c - putting the payload into a live process and taking it out again, through the injector. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <fcntl.h>
#include <unistd.h>

#include "abi.h"
#include "injector.h"
#include "livectl.h"

/* Where the payload is: $HEAPSNAP_PAYLOAD; else beside the binary (the
 * build tree: build/heapsnap next to build/libheapsnap-payload.so); else
 * ../lib/heapsnap/ from the binary (an install moved to another prefix
 * than the one compiled in); else the compiled-in libdir. */
const char *livectl_payload_path(void)
{
	static const char name[] = "libheapsnap-payload.so";
	static char found[PATH_MAX];
	const char *p = getenv("HEAPSNAP_PAYLOAD");
	char exe[PATH_MAX];
	ssize_t n;

	if (p && *p)
		return p;
	if (found[0])
		return found;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			if ((size_t)snprintf(found, sizeof(found), "%s/%s", exe, name) < sizeof(found) &&
			    access(found, R_OK) == 0)
				return found;
			if ((size_t)snprintf(found, sizeof(found), "%s/../lib/heapsnap/%s", exe, name) <
				    sizeof(found) && access(found, R_OK) == 0)
				return found;
		}
	}
	found[0] = 0;
	return HEAPSNAP_LIBDIR "/heapsnap/libheapsnap-payload.so";
}

bool livectl_payload_mapped(int pid, char *out, size_t len)
{
	char path[64], line[4096];
	const char *want = strrchr(livectl_payload_path(), '/');
	bool found = false;
	FILE *f;

	want = want ? want + 1 : livectl_payload_path();
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		const char *base = strrchr(line, '/');
		found = base && !strcmp(base + 1, want);
		if (found && out)
			snprintf(out, len, "%s", strchr(line, '/'));
	}
	fclose(f);
	return found;
}

const char *livectl_hint(int err, const char *reason)
{
	if (err == -EPERM && strstr(reason, "already traced"))
		return "another debugger or tracer holds the process; detach it first";
	if (err == -EPERM && strstr(reason, "yama"))
		return "run as root, or lower /proc/sys/kernel/yama/ptrace_scope";
	if (err == -EPERM)
		return "run heapsnap as the target's user or as root";
	if (err == -ENOEXEC)
		return "heapsnap loads its payload with the program's dynamic loader; "
		       "static programs cannot be inspected";
	if (err == -EBUSY && strstr(reason, "stopped"))
		return "resume it with 'kill -CONT PID' first";
	if (err == -ETIMEDOUT && strstr(reason, "no safe point"))
		return "every thread was busy in the allocator, the loader or thread code; retry";
	return NULL;
}

static int open_proc(int pid, int timeout_ms, struct inj_proc **p, char reason[LIVECTL_REASONLEN])
{
	struct inj_opts o = { .timeout_ms = timeout_ms, .allow_seccomp_filter = true };
	char r[INJ_REASONLEN];
	int ret = inj_open(pid, &o, p, r);

	if (ret)
		snprintf(reason, LIVECTL_REASONLEN, "%s", r);
	return ret;
}

/* The worker calls hsp_prepare_unload(); only if it said yes, dlclose. */
static int unload_handle(struct inj_proc *p, uint64_t handle, bool *left_loaded,
			 char reason[LIVECTL_REASONLEN])
{
	char r[INJ_REASONLEN];
	uint64_t ret = 0;
	int err = inj_call(p, handle, HSP_SYM_PREPARE_UNLOAD, NULL, 0, &ret, r);

	*left_loaded = true;
	if (err) {
		snprintf(reason, LIVECTL_REASONLEN, "%s", r);
		return err;
	}
	if ((long)ret != 0) {
		snprintf(reason, LIVECTL_REASONLEN, "the payload must stay loaded (inert): %s",
			 (long)ret == -EBUSY ? "a thread may still run its code, or the program "
			 "kept a copy of a hook's address" : strerror((int)-(long)ret));
		return (int)(long)ret;
	}
	err = inj_unload(p, handle, NULL, r);
	if (err) {
		snprintf(reason, LIVECTL_REASONLEN, "%s", r);
		return err;
	}
	*left_loaded = false;
	return 0;
}

/* Resolves the payload path (path: already filled when *path), opens pid
 * (preflight included) and loads (or finds) the payload.  On error nothing
 * is open and *left_loaded says whether a load may still complete. */
static int open_and_load(int pid, char path[PATH_MAX], int timeout_ms, struct inj_proc **p,
			 uint64_t *handle, bool *was_loaded, bool *left_loaded,
			 char reason[LIVECTL_REASONLEN])
{
	char r[INJ_REASONLEN];
	int err;

	if (!*path && !realpath(livectl_payload_path(), path)) {
		err = -errno;
		snprintf(reason, LIVECTL_REASONLEN, "cannot access '%s': %s", livectl_payload_path(),
			 strerror(errno));
		return err;
	}
	/* inj_open runs the whole preflight first (nothing stopped when it
	 * refuses). */
	err = open_proc(pid, timeout_ms, p, reason);
	if (err)
		return err;
	err = inj_load(*p, path, handle, was_loaded, r);
	if (err) {
		snprintf(reason, LIVECTL_REASONLEN, "%s", r);
		*left_loaded = err == -ETIMEDOUT;
		inj_close(*p);
		*p = NULL;
	}
	return err;
}

int livectl_start(int pid, uint64_t rate, unsigned unwinder, int timeout_ms, bool *already,
		  bool *left_loaded, char reason[LIVECTL_REASONLEN], struct inj_stats *stats)
{
	struct inj_proc *p = NULL;
	char r[INJ_REASONLEN], path[PATH_MAX];
	uint64_t handle = 0, ret = 0;
	bool was_loaded = false;
	int err;

	*already = false;
	*left_loaded = false;
	path[0] = 0;
	err = open_and_load(pid, path, timeout_ms, &p, &handle, &was_loaded, left_loaded, reason);
	if (err)
		return err;
	uint64_t args[2] = { rate, unwinder & HSP_START_UNWIND_MASK };
	err = inj_call(p, handle, HSP_SYM_START, args, 2, &ret, r);
	if (err) {
		snprintf(reason, LIVECTL_REASONLEN, "%s", r);
		*left_loaded = true;
		goto out;
	}
	if ((long)ret == -EALREADY) {
		*already = true;
	} else if ((long)ret != 0) {
		err = (int)(long)ret;
		snprintf(reason, LIVECTL_REASONLEN, "the payload did not start: %s", strerror(-err));
		/* hsp_start leaves nothing behind on failure: take it out again,
		 * unless it was there before us. */
		if (!was_loaded) {
			char r2[LIVECTL_REASONLEN];
			unload_handle(p, handle, left_loaded, r2);
		} else {
			*left_loaded = true;
		}
	}
out:
	if (stats)
		inj_get_stats(p, stats);
	if (inj_close(p) && !err)
		*left_loaded = true;
	return err;
}

int livectl_unload(int pid, int timeout_ms, bool *left_loaded, char reason[LIVECTL_REASONLEN])
{
	struct inj_proc *p = NULL;
	char r[INJ_REASONLEN], path[PATH_MAX];
	uint64_t handle = 0;
	bool was_loaded = false;
	int err;

	*left_loaded = false;
	if (kill(pid, 0) && errno == ESRCH) {
		snprintf(reason, LIVECTL_REASONLEN, "no such process");
		return -ESRCH;
	}
	if (!livectl_payload_mapped(pid, path, sizeof(path))) {
		snprintf(reason, LIVECTL_REASONLEN, "heapsnap is not loaded in it");
		return -ENOENT;
	}
	*left_loaded = true;
	err = inj_preflight(pid, NULL, r);
	if (err) {
		snprintf(reason, LIVECTL_REASONLEN, "%s", r);
		return err;
	}
	err = open_proc(pid, timeout_ms, &p, reason);
	if (err)
		return err;
	/* Finds the resident copy (by the path it was loaded from) without
	 * taking a reference of its own. */
	err = inj_load(p, path, &handle, &was_loaded, r);
	if (err) {
		snprintf(reason, LIVECTL_REASONLEN, "%s", r);
	} else if (!was_loaded) {
		/* Not found under that name (loaded through a memfd): what we
		 * just loaded is a second, unstarted copy; take it out. */
		inj_unload(p, handle, NULL, r);
		snprintf(reason, LIVECTL_REASONLEN, "the resident payload cannot be found by its name %.200s", path);
		err = -ENOENT;
	} else {
		err = unload_handle(p, handle, left_loaded, reason);
	}
	inj_close(p);
	return err;
}

/* Copies the payload's stats buffer at addr out of pid. */
static int read_stats(int pid, uint64_t addr, char **text)
{
	struct hsp_stats_hdr h;
	struct iovec l = { &h, sizeof(h) }, r = { (void *)(uintptr_t)addr, sizeof(h) };

	if (process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof(h))
		return -errno ? -errno : -EIO;
	if (h.magic != HSP_STATS_MAGIC || h.len > HSP_STATS_MAX - sizeof(h))
		return -EPROTO;
	char *t = malloc(h.len + 1);
	if (!t)
		return -ENOMEM;
	l = (struct iovec){ t, h.len };
	r = (struct iovec){ (void *)(uintptr_t)(addr + sizeof(h)), h.len };
	if (h.len && process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)h.len) {
		int e = errno ? -errno : -EIO;
		free(t);
		return e;
	}
	t[h.len] = 0;
	*text = t;
	return 0;
}

int livectl_ask(int pid, const char *sym, const uint64_t *args, int nargs, int timeout_ms,
		char **text, bool *left_loaded, char reason[LIVECTL_REASONLEN])
{
	struct inj_proc *p = NULL;
	char r[INJ_REASONLEN], path[PATH_MAX];
	uint64_t handle = 0, ret = 0;
	bool was_loaded = false;
	int err;

	*left_loaded = false;
	*text = NULL;
	if (kill(pid, 0) && errno == ESRCH) {
		snprintf(reason, LIVECTL_REASONLEN, "no such process");
		return -ESRCH;
	}
	/* The resident copy if there is one (by the path it was loaded
	 * from), else ours. */
	if (!livectl_payload_mapped(pid, path, sizeof(path)))
		path[0] = 0;
	err = open_and_load(pid, path, timeout_ms, &p, &handle, &was_loaded, left_loaded, reason);
	if (err)
		return err;
	err = inj_call(p, handle, sym, args, nargs, &ret, r);
	if (err == -ENOENT) {
		snprintf(reason, LIVECTL_REASONLEN, "the payload loaded in the process is too old (no %s)",
			 sym);
	} else if (err) {
		snprintf(reason, LIVECTL_REASONLEN, "%s", r);
		*left_loaded = err == -ETIMEDOUT;
	} else if ((long)ret < 0) {
		err = (int)(long)ret;
		snprintf(reason, LIVECTL_REASONLEN, "%s failed: %s", sym, strerror(-err));
	} else if ((err = read_stats(pid, ret, text))) {
		snprintf(reason, LIVECTL_REASONLEN, "cannot read the figures out of the process: %s",
			 strerror(-err));
	}
	/* Loaded only to ask: never started, no hook in, so a plain dlclose. */
	if (!was_loaded && !*left_loaded) {
		int uerr = inj_unload(p, handle, NULL, r);
		if (uerr) {
			*left_loaded = true;
			if (!err) {
				free(*text);
				*text = NULL;
				err = uerr;
				snprintf(reason, LIVECTL_REASONLEN, "%s", r);
			}
		}
	}
	if (inj_close(p) && !err)
		*left_loaded = true;
	return err;
}

/* Reads the whole file at path into a malloc'd buffer. */
static int slurp(const char *path, char **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 1 << 16, n = 0;
	char *b;

	if (fd < 0)
		return -errno;
	b = malloc(cap);
	for (;;) {
		if (!b) {
			close(fd);
			return -ENOMEM;
		}
		ssize_t r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;
			free(b);
			close(fd);
			return e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == cap) {
			char *nb = realloc(b, cap *= 2);
			if (!nb)
				free(b);
			b = nb;
		}
	}
	close(fd);
	*buf = b;
	*len = n;
	return 0;
}

int livectl_fetch(int pid, const char *file, const char *dir_prefix, char **buf, size_t *len,
		  char reason[LIVECTL_REASONLEN])
{
	char path[PATH_MAX + 64];
	int ret;

	if (!file || strncmp(file, dir_prefix, strlen(dir_prefix)) || strstr(file, "/..") ||
	    strlen(file) > PATH_MAX) {
		snprintf(reason, LIVECTL_REASONLEN, "the payload did not say where it wrote the profile");
		return -EPROTO;
	}
	/* The path as the target sees it: through its root (mount namespace). */
	snprintf(path, sizeof(path), "/proc/%d/root%s", pid, file);
	ret = slurp(path, buf, len);
	if (ret)
		snprintf(reason, LIVECTL_REASONLEN, "cannot read the profile %.200s: %s", file, strerror(-ret));
	unlink(path);
	*strrchr(path, '/') = 0;
	rmdir(path);
	return ret;
}

bool livectl_lib_mapped(int pid, const char *prefix, const char *unless)
{
	char path[64], line[4096];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		const char *base = strrchr(line, '/');
		found = base && !strncmp(base + 1, prefix, strlen(prefix)) && (!unless || !strstr(base, unless));
	}
	fclose(f);
	return found;
}
