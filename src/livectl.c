/* livectl.c - putting the payload into a live process and taking it out again, through the injector. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "injector.h"
#include "livectl.h"

const char *livectl_payload_path(void)
{
	const char *p = getenv("HEAPSNAP_PAYLOAD");
	return p && *p ? p : HEAPSNAP_LIBDIR "/heapsnap/libheapsnap-payload.so";
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

int livectl_start(int pid, uint64_t rate, int timeout_ms, bool *already, bool *left_loaded,
		  char reason[LIVECTL_REASONLEN])
{
	struct inj_proc *p = NULL;
	char r[INJ_REASONLEN], path[PATH_MAX];
	uint64_t handle = 0, ret = 0;
	bool was_loaded = false;
	int err;

	*already = false;
	*left_loaded = false;
	if (!realpath(livectl_payload_path(), path)) {
		err = -errno;
		snprintf(reason, LIVECTL_REASONLEN, "cannot access '%s': %s", livectl_payload_path(),
			 strerror(errno));
		return err;
	}
	err = inj_preflight(pid, NULL, r);
	if (err) {
		snprintf(reason, LIVECTL_REASONLEN, "%s", r);
		return err;
	}
	err = open_proc(pid, timeout_ms, &p, reason);
	if (err)
		return err;
	err = inj_load(p, path, &handle, &was_loaded, r);
	if (err) {
		snprintf(reason, LIVECTL_REASONLEN, "%s", r);
		*left_loaded = err == -ETIMEDOUT;
		goto out;
	}
	uint64_t args[2] = { rate, 0 };
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
