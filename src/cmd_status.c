/* cmd_status.c - `heapsnap status PID`: is heapsnap in the process, is it sampling, at what cost. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "cmd_live.h"
#include "cmd_report.h"
#include "hs.h"
#include "json.h"
#include "live.h"
#include "livegp.h"
#include "livejem.h"
#include "livectl.h"

struct status_result {
	int pid;
	bool loaded;            /* the payload is mapped */
	bool answering;         /* its control thread answered */
	struct hsp_status st;
	bool jemalloc_ours;     /* jemalloc's profiler, switched on by heapsnap (jemalloc backend) */
	bool gperf_ours;        /* gperftools' heap profiler, started by heapsnap */
};

static const char *unwinder_name(uint32_t u)
{
	switch (u) {
	case HSP_UNW_GCC: return "libgcc";
	case HSP_UNW_BACKTRACE: return "backtrace";
	case HSP_UNW_FP: return "frame-pointers";
	case HSP_UNW_LIBUNWIND: return "libunwind";
	}
	return "unknown";
}

static int fill_json(FILE *f, void *ctx)
{
	const struct status_result *r = ctx;
	const struct hsp_status *s = &r->st;
	struct json j;

	json_begin(&j, f);
	json_obj_open(&j);
	json_kv_int(&j, "pid", r->pid);
	json_kv_bool(&j, "loaded", r->loaded);
	json_kv_bool(&j, "jemalloc_profiler_by_heapsnap", r->jemalloc_ours);
	json_kv_bool(&j, "gperftools_profiler_by_heapsnap", r->gperf_ours);
	if (r->answering) {
		json_kv_str(&j, "state", live_state_name(s->state));
		json_kv_str(&j, "backend", s->backend);
		json_kv_uint(&j, "rate", s->rate);
		json_kv_str(&j, "unwinder", unwinder_name(s->unwinder));
		json_kv_uint(&j, "loaded_at_ns", s->load_ns);
		json_kv_uint(&j, "since_ns", s->since_ns);
		json_kv_double(&j, "sampled_seconds", s->sampled_ns / 1e9, 3);
		json_kv_uint(&j, "live_samples", s->live_samples);
		json_kv_uint(&j, "live_sampled_bytes", s->live_bytes);
		json_kv_uint(&j, "alloc_samples", s->alloc_samples);
		json_kv_uint(&j, "alloc_sampled_bytes", s->alloc_bytes);
		json_kv_uint(&j, "stacks", s->stacks);
		json_kv_uint(&j, "payload_memory", s->mem_bytes);
		json_kv_uint(&j, "dropped_samples", s->dropped);
		json_kv_double(&j, "cost_seconds", s->cost_ns / 1e9, 6);
		json_kv_double(&j, "cost_ns_per_sample",
			       s->alloc_samples ? (double)s->cost_ns / (double)s->alloc_samples : 0, 1);
		json_kv_uint(&j, "last_snapshot_lock_hold_ns", s->snap_hold_ns);
		json_kv_uint(&j, "modules_hooked", s->modules);
		json_kv_uint(&j, "slots_hooked", s->slots);
		json_kv_uint(&j, "patch_failures", s->patch_failures);
		json_kv_int(&j, "unload_error", s->unload_error);
		json_kv_uint(&j, "escaped_hook_copies", s->escaped);
	}
	json_obj_close(&j);
	return json_end(&j);
}

static void print_time(const char *what, uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;
	char buf[64];

	if (!ns || !localtime_r(&t, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm))
		return;
	printf("  %-16s %s\n", what, buf);
}

static void print_plain(const struct status_result *r)
{
	const struct hsp_status *s = &r->st;

	/* The native backends leave nothing of heapsnap loaded. */
	if (r->jemalloc_ours)
		printf("pid %d: jemalloc's profiler is on, switched on by heapsnap (jemalloc backend; "
		       "'heapsnap dump' reads it, 'heapsnap stop %d' switches it off)\n", r->pid, r->pid);
	if (r->gperf_ours)
		printf("pid %d: gperftools' heap profiler is running, started by heapsnap (gperftools "
		       "backend; 'heapsnap stop %d' stops it)\n", r->pid, r->pid);
	if (!r->loaded) {
		if (!r->jemalloc_ours && !r->gperf_ours)
			printf("pid %d: heapsnap is not loaded\n", r->pid);
		return;
	}
	if (!r->answering) {
		printf("pid %d: heapsnap is loaded but not running (run 'heapsnap start %d' or "
		       "'heapsnap stop %d')\n", r->pid, r->pid, r->pid);
		return;
	}
	printf("pid %d: %s (%s backend)\n", r->pid, live_state_name(s->state), s->backend);
	printf("  %-16s %llu bytes between samples on average%s\n", "rate",
	       (unsigned long long)s->rate, s->rate == 1 ? " (every allocation)" : "");
	print_time("loaded", s->load_ns);
	print_time("sampling since", s->since_ns);
	printf("  %-16s %.1f s\n", "sampled for", s->sampled_ns / 1e9);
	printf("  %-16s %llu sampled objects, %llu bytes (not scaled)\n", "live",
	       (unsigned long long)s->live_samples, (unsigned long long)s->live_bytes);
	printf("  %-16s %llu sampled allocations, %llu bytes (not scaled)\n", "allocated",
	       (unsigned long long)s->alloc_samples, (unsigned long long)s->alloc_bytes);
	printf("  %-16s %llu distinct, captured with %s\n", "stacks", (unsigned long long)s->stacks,
	       unwinder_name(s->unwinder));
	if (s->alloc_samples && s->sampled_ns)
		printf("  %-16s %.2f us per sample, %.2f%% of one CPU while sampling\n", "own cost",
		       (double)s->cost_ns / (double)s->alloc_samples / 1e3,
		       100.0 * (double)s->cost_ns / (double)s->sampled_ns);
	if (s->snap_hold_ns)
		printf("  %-16s allocating threads waited %.0f us at most on the last snapshot\n",
		       "snapshot stall", s->snap_hold_ns / 1e3);
	printf("  %-16s %llu KiB\n", "own memory", (unsigned long long)s->mem_bytes >> 10);
	printf("  %-16s %llu slots in %llu modules%s\n", "hooks", (unsigned long long)s->slots,
	       (unsigned long long)s->modules, s->patch_failures ? " (some could not be patched)" : "");
	if (s->dropped)
		printf("  %-16s %llu samples (memory cap)\n", "dropped", (unsigned long long)s->dropped);
	if (s->unload_error)
		printf("  %-16s refused: %s%s\n", "unload", strerror(-s->unload_error),
		       s->escaped ? " (the program kept a copy of a hook's address)" : "");
}

int do_status(int argc, char **argv)
{
	struct cmd_live o;
	struct status_result r = { 0 };
	struct live_conn *c;
	int ret = cmd_live_parse(&o, "status", argc, argv, 0);

	if (ret)
		return ret;
	if (optind != argc)
		return hs_usage_err("status", "too many operands");
	r.pid = o.pid;
	ret = live_connect(o.pid, &c);
	if (!ret) {
		ret = live_status(c, &r.st);
		live_close(c);
		r.answering = r.loaded = !ret;
	}
	if (ret == -ENOENT) {
		r.loaded = livectl_payload_mapped(o.pid, NULL, 0);
		ret = 0;
	}
	if (ret)
		return cmd_live_conn_error(&o, ret);
	r.jemalloc_ours = livejem_maybe(o.pid) && livejem_marked(o.pid);
	r.gperf_ours = livegp_maybe(o.pid) && livegp_ours(o.pid);
	if (opt_json) {
		ret = cmd_report_emit(fill_json, &r);
		if (ret)
			hs_err("cannot write the result: %s", strerror(-ret));
		return ret ? HS_FAIL : HS_OK;
	}
	print_plain(&r);
	return HS_OK;
}
