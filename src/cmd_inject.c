/* cmd_inject.c - `heapsnap inject PID LIB`: load a library into a live process (low-level, for tests and debugging). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "hs.h"
#include "injector.h"
#include "json.h"

#define MAX_ARGS 6

struct inject_result {
	int pid;
	const char *lib;
	bool already_loaded;
	uint64_t handle;
	const char *symbol;       /* NULL: no --call */
	int64_t returned;
	bool unloaded;
	struct inj_stats st;
};

static void inj_log(void *arg, int level, const char *msg)
{
	if (level == INJ_LOG_WARN)
		hs_warn("%s", msg);
	else if (opt_verbose >= level)
		hs_debug("%s", msg);
}

static void print_plain(const struct inject_result *r, bool unload)
{
	if (r->already_loaded)
		printf("%s already loaded in pid %d\n", r->lib, r->pid);
	else
		printf("loaded %s into pid %d\n", r->lib, r->pid);
	if (r->symbol)
		printf("%s returned %" PRId64 "\n", r->symbol, r->returned);
	if (unload && r->unloaded)
		printf("unloaded %s from pid %d\n", r->lib, r->pid);
}

static int print_json(const struct inject_result *r)
{
	struct json j;
	char h[32];

	json_begin(&j, stdout);
	json_obj_open(&j);
	json_kv_int(&j, "pid", r->pid);
	json_kv_str(&j, "library", r->lib);
	json_kv_bool(&j, "already_loaded", r->already_loaded);
	snprintf(h, sizeof(h), "0x%" PRIx64, r->handle);
	json_kv_str(&j, "handle", h);
	json_key(&j, "call");
	if (r->symbol) {
		json_obj_open(&j);
		json_kv_str(&j, "symbol", r->symbol);
		json_kv_int(&j, "returned", r->returned);
		json_obj_close(&j);
	} else {
		json_null(&j);
	}
	json_kv_bool(&j, "unloaded", r->unloaded);
	json_kv_int(&j, "hijacked_tid", r->st.hijacked_tid);
	json_kv_int(&j, "threads_tried", r->st.threads_tried);
	json_kv_uint(&j, "stopped_us", r->st.stopped_us);
	json_kv_uint(&j, "wall_us", r->st.wall_us);
	json_obj_close(&j);
	return json_end(&j) ? HS_FAIL_LOADED : HS_OK;
}

/* The hint that goes with a failed preflight or attach. */
static void attach_hint(int pid, int err, const char *reason)
{
	if (err == -EPERM && strstr(reason, "already traced"))
		hs_hint("another debugger or tracer holds pid %d; detach it first", pid);
	else if (err == -EPERM && strstr(reason, "yama"))
		hs_hint("run as root, or lower /proc/sys/kernel/yama/ptrace_scope");
	else if (err == -EPERM)
		hs_hint("run heapsnap as the target's user or as root");
	else if (err == -ENOEXEC && strstr(reason, "static"))
		hs_hint("heapsnap loads its payload with the program's dynamic loader; "
			"static programs cannot be inspected");
	else if (err == -EBUSY && strstr(reason, "stopped"))
		hs_hint("resume it with 'kill -CONT %d' first", pid);
	else if (err == -ETIMEDOUT && strstr(reason, "no safe point"))
		hs_hint("every thread was busy in the allocator, the loader or thread code; "
			"retry, or raise --timeout");
	else if (err == -EACCES && strstr(reason, "seccomp"))
		hs_hint("a seccomp sandbox forbids what loading a library needs");
}

static int parse_long(const char *s, int64_t *out)
{
	char *end;

	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (errno || end == s || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int do_inject(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "call", required_argument, NULL, 'c' },
		{ "arg", required_argument, NULL, 'a' },
		{ "unload", no_argument, NULL, 'u' },
		{ "timeout", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	struct inject_result res;
	struct inj_opts io;
	struct inj_info info;
	struct inj_proc *p = NULL;
	char reason[INJ_REASONLEN], libpath[PATH_MAX];
	uint64_t args[MAX_ARGS];
	const char *symbol = NULL;
	int nargs = 0, opt, pid, r, rc = HS_OK;
	bool unload = false;
	double timeout = 5;

	memset(&res, 0, sizeof(res));
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":j", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			if (symbol)
				return hs_usage_err("inject", "--call given twice");
			symbol = optarg;
			break;
		case 'a': {
			int64_t v;
			if (nargs == MAX_ARGS)
				return hs_usage_err("inject", "at most %d --arg", MAX_ARGS);
			if (parse_long(optarg, &v))
				return hs_usage_err("inject", "bad --arg '%s': expected an integer", optarg);
			args[nargs++] = (uint64_t)v;
			break;
		}
		case 'u':
			unload = true;
			break;
		case 't': {
			char *end;
			timeout = strtod(optarg, &end);
			if (end == optarg || *end || !(timeout > 0) || timeout > 3600)
				return hs_usage_err("inject", "bad --timeout '%s': expected seconds (0-3600]", optarg);
			break;
		}
		case 'j':
			opt_json = true;
			break;
		case ':':
			return hs_usage_err("inject", "option '%s' needs a value", argv[optind - 1]);
		default:
			return hs_usage_err("inject", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind < 1)
		return hs_usage_err("inject", "missing PID");
	if (hs_parse_pid(argv[optind], &pid))
		return hs_usage_err("inject", "bad PID '%s'", argv[optind]);
	if (argc - optind < 2)
		return hs_usage_err("inject", "missing LIB");
	if (argc - optind > 2)
		return hs_usage_err("inject", "too many operands");
	if (nargs && !symbol)
		return hs_usage_err("inject", "--arg needs --call");

	/* Refuse early, before stopping anything. */
	r = inj_preflight(pid, &info, reason);
	if (r) {
		hs_err("cannot attach to pid %d: %s", pid, reason);
		attach_hint(pid, r, reason);
		return HS_FAIL;
	}
	if (!realpath(argv[optind + 1], libpath)) {
		hs_err("cannot inject into pid %d: cannot access '%s': %s", pid, argv[optind + 1],
		       strerror(errno));
		return HS_FAIL;
	}
	res.pid = pid;
	res.lib = libpath;

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(&io, 0, sizeof(io));
	io.timeout_ms = (int)(timeout * 1000);
	io.allow_seccomp_filter = true; /* the contract: warn, go on */
	io.log = inj_log;
	r = inj_open(pid, &io, &p, reason);
	if (r) {
		hs_err("cannot attach to pid %d: %s", pid, reason);
		attach_hint(pid, r, reason);
		return HS_FAIL;
	}

	r = inj_load(p, libpath, &res.handle, &res.already_loaded, reason);
	if (r) {
		hs_err("cannot inject into pid %d: %s", pid, reason);
		if (r == -ETIMEDOUT) {
			hs_hint("the load may still complete; check /proc/%d/maps", pid);
			rc = HS_FAIL_LOADED;
		} else {
			rc = HS_FAIL;
		}
		goto out;
	}
	if (symbol) {
		uint64_t ret = 0;
		r = inj_call(p, res.handle, symbol, args, nargs, &ret, reason);
		if (r) {
			hs_err("cannot inject into pid %d: %s", pid, reason);
			rc = HS_FAIL_LOADED;
			if (r == -ESRCH) /* gone: nothing is left anywhere */
				rc = HS_FAIL;
			else
				hs_hint("%s stays loaded; run 'heapsnap inject %d %s --unload' to remove it",
					libpath, pid, libpath);
			goto out;
		}
		res.symbol = symbol;
		res.returned = (int64_t)ret;
	}
	if (unload) {
		r = inj_unload(p, res.handle, NULL, reason);
		if (r) {
			hs_err("cannot inject into pid %d: %s", pid, reason);
			if (r != -EBUSY && r != -ESRCH)
				hs_hint("%s may still be loaded; run 'heapsnap inject %d %s --unload' to retry",
					libpath, pid, libpath);
			rc = r == -ESRCH ? HS_FAIL : HS_FAIL_LOADED;
			goto out;
		}
		res.unloaded = true;
	}
out:
	inj_get_stats(p, &res.st);
	if (inj_close(p))
		hs_warn("the helper thread in pid %d is still busy; it leaves when done", pid);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	res.st.wall_us = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000);
	if (opt_verbose)
		hs_debug("hijacked tid %d (%d threads tried, %d rounds), stopped %" PRIu64
			 " us, others at most %" PRIu64 " us, open %" PRIu64 " us, %s path%s, worker tid %d",
			 res.st.hijacked_tid, res.st.threads_tried, res.st.rounds, res.st.stopped_us,
			 res.st.others_max_stopped_us, res.st.open_wall_us,
			 res.st.gadget_path ? "gadget" : "bare-syscall",
			 res.st.tracer_restore ? ", tracer restore" : "", res.st.worker_tid);
	if (rc != HS_OK)
		return rc;
	if (opt_json)
		return print_json(&res);
	print_plain(&res, unload);
	return HS_OK;
}
