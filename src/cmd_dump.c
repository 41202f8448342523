/* cmd_dump.c - `heapsnap dump PID -o FILE`: snapshot a live process's heap into a self-contained profile. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "cmd_live.h"
#include "cmd_report.h"
#include "format.h"
#include "hs.h"
#include "json.h"
#include "live.h"
#include "livegp.h"
#include "livejem.h"
#include "report.h"
#include "symbolize.h"

struct dump_result {
	int pid;
	const char *out;
	enum fmt f;
	const struct profile *p;
	bool loaded_here;       /* this dump loaded the payload */
	bool unloaded;
};

static int fill_json(FILE *f, void *ctx)
{
	const struct dump_result *r = ctx;
	struct json j;

	json_begin(&j, f);
	json_obj_open(&j);
	json_kv_int(&j, "pid", r->pid);
	json_kv_str(&j, "output", r->out);
	json_kv_str(&j, "format", fmt_name(r->f));
	json_kv_uint(&j, "samples", r->p->nsamples);
	json_kv_int(&j, "rate", r->p->period);
	json_kv_double(&j, "sampled_seconds", r->p->duration_nanos / 1e9, 3);
	json_kv_int(&j, "inuse_space", prof_total(r->p, PT_INUSE_SPACE));
	json_kv_int(&j, "inuse_objects", prof_total(r->p, PT_INUSE_OBJECTS));
	json_kv_int(&j, "alloc_space", prof_total(r->p, PT_ALLOC_SPACE));
	json_kv_bool(&j, "loaded_by_dump", r->loaded_here);
	json_kv_bool(&j, "unloaded", r->unloaded);
	json_obj_close(&j);
	return json_end(&j);
}

static void nap(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Sample for o->duration; progress on stderr when it is a terminal.
 * false if the process went away. */
static bool wait_sampling(const struct cmd_live *o)
{
	bool tty = isatty(STDERR_FILENO) && !opt_quiet;
	struct timespec t0, now;
	int shown = -1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		double el = (now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9;
		if (kill(o->pid, 0) && errno == ESRCH) {
			if (tty)
				fputc('\n', stderr);
			return false;
		}
		if (tty && (int)el != shown) {
			shown = (int)el;
			fprintf(stderr, "\rheapsnap: sampling pid %d: %d/%.0f s ", o->pid, shown, o->duration);
		}
		if (el >= o->duration)
			break;
		nap(o->duration - el < 0.1 ? o->duration - el : 0.1);
	}
	if (tty)
		fputc('\n', stderr);
	return true;
}

/*
 * The jemalloc backend: when its profiling is active already, dump at once
 * (the profile covers allocations made before heapsnap came); otherwise
 * activate it (prof.reset with --rate's lg_sample when given), wait
 * --duration, dump, and switch it off again unless --keep.  An hs_exit.
 */
static int take_jemalloc(const struct cmd_live *o, const struct livejem_info *info,
			 struct profile **out)
{
	char reason[LIVECTL_REASONLEN];
	bool left = false, since_start = info->prof_active;
	int lg = o->rate_given && !since_start ? livejem_lg(o->rate) : info->lg_sample;
	int ret;

	if (!since_start) {
		ret = livejem_activate(o->pid, o->timeout_ms, true, o->rate_given ? lg : -1, &left, reason);
		if (ret)
			return cmd_live_step_error(o, "activate jemalloc's profiler", ret, left, reason);
		if (!wait_sampling(o)) {
			hs_err("pid %d exited while heapsnap was sampling", o->pid);
			return HS_FAIL;
		}
	}
	ret = livejem_dump(o->pid, o->timeout_ms, since_start, out, &left, reason);
	if (!since_start && o->keep && livejem_mark(o->pid, true))
		hs_warn("cannot note that heapsnap activated jemalloc's profiler: 'heapsnap stop %d' "
			"will leave it on", o->pid);
	if (!since_start && !o->keep) {
		char r2[LIVECTL_REASONLEN];
		bool l2 = false;
		int ret2 = livejem_activate(o->pid, o->timeout_ms, false, -1, &l2, r2);
		if (ret2 && !ret) {
			prof_free(*out);
			*out = NULL;
			return cmd_live_step_error(o, "switch jemalloc's profiler off again", ret2, l2, r2);
		}
	}
	if (ret)
		return cmd_live_step_error(o, "dump jemalloc's profile", ret, left, reason);
	cmd_live_symbolize(o->pid, *out);
	if (!opt_quiet && !opt_json)
		fprintf(stderr, "heapsnap: pid %d: jemalloc's own profiler (lg_prof_sample %d)%s\n", o->pid, lg,
			since_start ? "; it was active before heapsnap came, so the profile covers "
			"allocations made since it was activated" : "");
	return HS_OK;
}

/*
 * The gperftools backend: a heap profiler that runs already (HEAPPROFILE,
 * or an earlier `start`) is dumped at once and left running; otherwise
 * heapsnap starts it, waits --duration, dumps, and stops it again unless
 * --keep.  An hs_exit.
 */
static int take_gperf(const struct cmd_live *o, bool running, bool ours, struct profile **out)
{
	char reason[LIVECTL_REASONLEN];
	bool left = false, started = false;
	int ret = 0;

	if (!running) {
		ret = livegp_start(o->pid, o->timeout_ms, &started, &left, reason);
		if (ret)
			return cmd_live_step_error(o, "start gperftools' heap profiler", ret, left, reason);
		if (!wait_sampling(o)) {
			hs_err("pid %d exited while heapsnap was sampling", o->pid);
			return HS_FAIL;
		}
	}
	ret = livegp_dump(o->pid, o->timeout_ms, running && !ours, out, &left, reason);
	if (started && !o->keep) {
		char r2[LIVECTL_REASONLEN];
		bool l2 = false, stopped;
		int ret2 = livegp_stop_ours(o->pid, o->timeout_ms, &stopped, &l2, r2);
		if (ret2 && !ret) {
			prof_free(*out);
			*out = NULL;
			return cmd_live_step_error(o, "stop gperftools' heap profiler", ret2, l2, r2);
		}
	}
	if (ret)
		return cmd_live_step_error(o, "dump gperftools' heap profile", ret, left, reason);
	cmd_live_symbolize(o->pid, *out);
	if (!opt_quiet && !opt_json)
		fprintf(stderr, "heapsnap: pid %d: gperftools' heap profiler%s\n", o->pid,
			running && !ours ? " was running before heapsnap came (reused, left running): the "
			"profile covers allocations since it started" :
			running ? " (started by an earlier 'heapsnap start')" :
			o->keep ? " (started by heapsnap, left running: --keep)" :
			" (started by heapsnap for this dump, stopped again)");
	return HS_OK;
}

int do_dump(int argc, char **argv)
{
	struct cmd_live o;
	struct dump_result r = { 0 };
	struct profile *p = NULL;
	struct live_conn *c;
	struct hsp_status st;
	char err[FMT_ERRLEN];
	bool jem = false;
	int ret = cmd_live_parse(&o, "dump", argc, argv, CMD_LIVE_RATE | CMD_LIVE_DUMP | CMD_LIVE_BACKEND);

	if (ret)
		return ret;
	if (optind != argc)
		return hs_usage_err("dump", "too many operands");
	if (!o.out)
		return hs_usage_err("dump", "no output file given (-o FILE)");
	r.pid = o.pid;
	r.out = o.out;
	r.f = o.format != FMT_UNKNOWN ? o.format : fmt_from_filename(o.out);
	if (r.f == FMT_UNKNOWN)
		r.f = FMT_PPROF;

	/* Sampling already: snapshot at once, leave it as it is. */
	ret = live_connect(o.pid, &c);
	if (!ret) {
		ret = live_status(c, &st);
		live_close(c);
		if (!ret && st.state != HSP_STATE_SAMPLING && st.state != HSP_STATE_PAUSED)
			ret = -ENOENT;
	}
	if (ret && ret != -ENOENT)
		return cmd_live_conn_error(&o, ret);
	if (ret == -ENOENT || o.backend == CMD_BACKEND_JEMALLOC || o.backend == CMD_BACKEND_GPERFTOOLS) {
		struct livejem_info info;
		bool use;
		int jr = cmd_live_pick_jemalloc(&o, &use, &info);
		if (jr)
			return jr;
		if (use) {
			jr = take_jemalloc(&o, &info, &p);
			if (jr)
				return jr;
			jem = true;
		}
		bool running, ours;
		jr = jem ? HS_OK : cmd_live_pick_gperf(&o, &use, &running, &ours);
		if (jr)
			return jr;
		if (!jem && use) {
			jr = take_gperf(&o, running, ours, &p);
			if (jr)
				return jr;
			jem = true;
		}
	}
	if (ret == -ENOENT && !jem) {
		bool already;
		ret = cmd_live_load_start(&o, &already, NULL);
		if (ret)
			return ret;
		r.loaded_here = !already;
		if (!wait_sampling(&o)) {
			hs_err("pid %d exited while heapsnap was sampling", o.pid);
			return HS_FAIL;
		}
	}
	ret = jem ? 0 : cmd_live_take(o.pid, &p);
	int rc = HS_OK;
	if (ret) {
		hs_err("cannot take a snapshot of pid %d: %s", o.pid, strerror(-ret));
		rc = r.loaded_here ? HS_FAIL_LOADED : HS_FAIL;
	} else if ((ret = fmt_write_file(p, o.out, r.f, PT_INUSE_SPACE, err))) {
		hs_err("cannot write '%s': %s", o.out, err[0] ? err : strerror(-ret));
		rc = r.loaded_here ? HS_FAIL_LOADED : HS_FAIL;
	}
	/* What this dump loaded, it takes out again (unless --keep). */
	if (r.loaded_here && !o.keep) {
		bool was;
		int urc = cmd_live_unload(&o, &was);
		if (urc)
			rc = urc;
		else
			r.unloaded = true;
	}
	if (rc == HS_OK) {
		if (opt_json) {
			r.p = p;
			ret = cmd_report_emit(fill_json, &r);
			if (ret) {
				hs_err("cannot write the result: %s", strerror(-ret));
				rc = HS_FAIL;
			}
		} else if (!opt_quiet) {
			printf("wrote %s: %zu stacks, %lld bytes in use (estimated), pid %d sampled for %.1f s\n",
			       o.out, p->nsamples, (long long)prof_total(p, PT_INUSE_SPACE), o.pid,
			       p->duration_nanos / 1e9);
		}
	}
	prof_free(p);
	return rc;
}
