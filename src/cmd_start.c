/* cmd_start.c - `heapsnap start PID`: load the payload and start sampling, return at once. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "cmd_live.h"
#include "cmd_report.h"
#include "hs.h"
#include "injector.h"
#include "json.h"
#include "live.h"
#include "livegp.h"
#include "livejem.h"

struct start_result {
	int pid;
	uint64_t rate;
	bool already;
	bool resumed;
	const char *backend;    /* NULL: interpose */
	bool loaded;            /* this command loaded the payload: inj is filled */
	struct inj_stats inj;
};

static int fill_json(FILE *f, void *ctx)
{
	const struct start_result *r = ctx;
	struct json j;

	json_begin(&j, f);
	json_obj_open(&j);
	json_kv_int(&j, "pid", r->pid);
	json_kv_str(&j, "backend", r->backend ? r->backend : "interpose");
	json_kv_str(&j, "state", "sampling");
	json_kv_uint(&j, "rate", r->rate);
	json_kv_bool(&j, "already_running", r->already);
	json_kv_bool(&j, "resumed", r->resumed);
	if (r->loaded) {
		/* What loading cost the target: how long the one thread it
		 * borrowed was kept from its own code, and the wall times. */
		json_kv_uint(&j, "hijacked_tid", (uint64_t)r->inj.hijacked_tid);
		json_kv_uint(&j, "hijacked_stopped_us", r->inj.stopped_us);
		json_kv_uint(&j, "candidates_max_stopped_us", r->inj.others_max_stopped_us);
		json_kv_uint(&j, "load_wall_us", r->inj.wall_us);
	}
	json_obj_close(&j);
	return json_end(&j);
}

/* Already loaded and answering?  Then resume it if paused.  Returns 1 when
 * that settled it, 0 when the payload must be (re)started, or an error. */
static int try_running(const struct cmd_live *o, struct start_result *res)
{
	struct live_conn *c;
	struct hsp_status st;
	int ret = live_connect(o->pid, &c);

	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	ret = live_status(c, &st);
	if (!ret && st.state == HSP_STATE_SAMPLING) {
		res->already = true;
		res->rate = st.rate;
		ret = 1;
	} else if (!ret && st.state == HSP_STATE_PAUSED) {
		ret = live_start(c, o->rate_given ? o->rate : 0);
		if (!ret || ret == -EALREADY) {
			res->resumed = true;
			ret = live_status(c, &st) ? -EIO : 1;
			res->rate = st.rate;
		}
	}
	live_close(c);
	return ret;
}

/* The jemalloc backend: switch prof.active on (prof.reset with --rate's
 * lg_sample first when given); nothing of heapsnap stays in the process. */
static int start_jemalloc(const struct cmd_live *o, const struct livejem_info *info)
{
	char reason[LIVECTL_REASONLEN];
	bool left = false;
	int lg = o->rate_given ? livejem_lg(o->rate) : info->lg_sample;
	int ret = 0;

	if (!info->prof_active || o->rate_given)
		ret = livejem_activate(o->pid, o->timeout_ms, true, o->rate_given ? lg : -1, &left, reason);
	if (ret)
		return cmd_live_step_error(o, "activate jemalloc's profiler", ret, left, reason);
	/* So that `stop` switches off what heapsnap switched on, and only that. */
	if (!info->prof_active && livejem_mark(o->pid, true))
		hs_warn("cannot note that heapsnap activated jemalloc's profiler: 'heapsnap stop %d' "
			"will leave it on", o->pid);
	if (opt_json) {
		struct start_result res = { .pid = o->pid, .rate = lg >= 0 ? 1ull << lg : 0,
					    .already = info->prof_active && !o->rate_given,
					    .backend = "jemalloc" };
		ret = cmd_report_emit(fill_json, &res);
		if (ret)
			hs_err("cannot write the result: %s", strerror(-ret));
		return ret ? HS_FAIL : HS_OK;
	}
	if (!opt_quiet)
		printf("pid %d: jemalloc's profiler %s (jemalloc backend, lg_prof_sample %d: every %llu bytes "
		       "on average)%s\n", o->pid,
		       info->prof_active && !o->rate_given ? "was active already" :
		       o->rate_given ? "reset and active" : "active",
		       lg, lg >= 0 ? 1ull << lg : 0ull,
		       info->prof_active && !o->rate_given ? "; dumps cover allocations since it was activated" : "");
	return HS_OK;
}

/* The gperftools backend: HeapProfilerStart unless it runs already (then
 * it is reused and never stopped by heapsnap). */
static int start_gperf(const struct cmd_live *o)
{
	char reason[LIVECTL_REASONLEN];
	bool left = false, started = false;
	int ret = livegp_start(o->pid, o->timeout_ms, &started, &left, reason);

	if (ret)
		return cmd_live_step_error(o, "start gperftools' heap profiler", ret, left, reason);
	if (opt_json) {
		struct start_result res = { .pid = o->pid, .already = !started, .backend = "gperftools" };
		ret = cmd_report_emit(fill_json, &res);
		if (ret)
			hs_err("cannot write the result: %s", strerror(-ret));
		return ret ? HS_FAIL : HS_OK;
	}
	if (!opt_quiet)
		printf("pid %d: %s\n", o->pid, started ?
		       "gperftools' heap profiler started (gperftools backend, every allocation); "
		       "'heapsnap stop' stops it" :
		       "gperftools' heap profiler was running already (reused; heapsnap will not stop it)");
	return HS_OK;
}

int do_start(int argc, char **argv)
{
	struct cmd_live o;
	struct start_result res = { 0 };
	int ret = cmd_live_parse(&o, "start", argc, argv, CMD_LIVE_RATE | CMD_LIVE_BACKEND | CMD_LIVE_UNWINDER);

	if (ret)
		return ret;
	if (optind != argc)
		return hs_usage_err("start", "too many operands");
	if (o.backend == CMD_BACKEND_JEMALLOC || o.backend == CMD_BACKEND_AUTO) {
		struct livejem_info info;
		bool use;
		ret = cmd_live_pick_jemalloc(&o, &use, &info);
		if (ret)
			return ret;
		if (use)
			return start_jemalloc(&o, &info);
	}
	if (o.backend == CMD_BACKEND_GPERFTOOLS) {
		bool use, running, ours;
		ret = cmd_live_pick_gperf(&o, &use, &running, &ours);
		if (ret)
			return ret;
		return start_gperf(&o);
	}
	res.pid = o.pid;
	res.rate = o.rate;
	ret = try_running(&o, &res);
	if (ret < 0)
		return cmd_live_conn_error(&o, ret);
	if (ret == 0) {
		ret = cmd_live_load_start(&o, &res.already, &res.inj);
		if (ret)
			return ret;
		res.loaded = true;
	}
	if (opt_json) {
		ret = cmd_report_emit(fill_json, &res);
		if (ret)
			hs_err("cannot write the result: %s", strerror(-ret));
		return ret ? HS_FAIL_LOADED : HS_OK;
	}
	if (res.already)
		printf("pid %d: already sampling (interpose backend, every %llu bytes on average)\n",
		       o.pid, (unsigned long long)res.rate);
	else if (!opt_quiet)
		printf("pid %d: sampling %s(interpose backend, every %llu bytes on average)\n", o.pid,
		       res.resumed ? "again " : "", (unsigned long long)res.rate);
	return HS_OK;
}
