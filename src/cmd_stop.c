/* cmd_stop.c - `heapsnap stop PID`: stop sampling, unload the payload, leave the process as found. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "cmd_live.h"
#include "cmd_report.h"
#include "hs.h"
#include "json.h"
#include "livectl.h"
#include "livegp.h"
#include "livejem.h"

struct stop_result {
	int pid;
	bool was_loaded;
	bool gperf_stopped;     /* heapsnap's gperftools heap profiler stopped */
	bool jemalloc_stopped;  /* jemalloc's profiler, switched on by heapsnap, switched off */
};

static int fill_json(FILE *f, void *ctx)
{
	const struct stop_result *r = ctx;
	struct json j;

	json_begin(&j, f);
	json_obj_open(&j);
	json_kv_int(&j, "pid", r->pid);
	json_kv_bool(&j, "was_loaded", r->was_loaded);
	json_kv_bool(&j, "unloaded", r->was_loaded);
	json_kv_bool(&j, "gperftools_profiler_stopped", r->gperf_stopped);
	json_kv_bool(&j, "jemalloc_profiler_stopped", r->jemalloc_stopped);
	json_obj_close(&j);
	return json_end(&j);
}

int do_stop(int argc, char **argv)
{
	struct cmd_live o;
	struct stop_result r = { 0 };
	int ret = cmd_live_parse(&o, "stop", argc, argv, 0);

	if (ret)
		return ret;
	if (optind != argc)
		return hs_usage_err("stop", "too many operands");
	r.pid = o.pid;
	/* A gperftools heap profiler heapsnap started goes too (never one
	 * the program started itself). */
	if (livegp_maybe(o.pid)) {
		char reason[LIVECTL_REASONLEN];
		bool left = false;
		ret = livegp_stop_ours(o.pid, o.timeout_ms, &r.gperf_stopped, &left, reason);
		if (ret)
			return cmd_live_step_error(&o, "stop gperftools' heap profiler", ret, left, reason);
	}
	/* Likewise jemalloc's profiler, when heapsnap switched it on (the
	 * payload comes and goes again for the mallctl). */
	if (livejem_maybe(o.pid) && livejem_marked(o.pid)) {
		char reason[LIVECTL_REASONLEN];
		bool left = false;
		ret = livejem_activate(o.pid, o.timeout_ms, false, -1, &left, reason);
		if (ret)
			return cmd_live_step_error(&o, "switch jemalloc's profiler off", ret, left, reason);
		livejem_mark(o.pid, false);
		r.jemalloc_stopped = true;
	}
	ret = cmd_live_unload(&o, &r.was_loaded);
	if (ret)
		return ret;
	if (opt_json) {
		ret = cmd_report_emit(fill_json, &r);
		if (ret)
			hs_err("cannot write the result: %s", strerror(-ret));
		return ret ? HS_FAIL : HS_OK;
	}
	if (r.gperf_stopped && !opt_quiet)
		printf("pid %d: gperftools' heap profiler (started by heapsnap) stopped\n", o.pid);
	if (r.jemalloc_stopped && !opt_quiet)
		printf("pid %d: jemalloc's profiler (switched on by heapsnap) switched off\n", o.pid);
	if (!r.was_loaded && !r.gperf_stopped && !r.jemalloc_stopped)
		printf("pid %d: heapsnap is not running there\n", o.pid);
	else if (r.was_loaded && !opt_quiet)
		printf("pid %d: sampling stopped, heapsnap unloaded\n", o.pid);
	return HS_OK;
}
