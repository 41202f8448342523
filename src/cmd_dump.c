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

/* Snapshot, symbolize from the live process, mark allocator frames. */
static int take(const struct cmd_live *o, struct profile **out)
{
	struct live_conn *c;
	struct sym_ctx *sc;
	char err[256];
	int ret = live_connect(o->pid, &c);

	if (ret)
		return ret;
	ret = live_snapshot(c, out);
	live_close(c);
	if (ret)
		return ret;
	ret = sym_open_pid(o->pid, &sc, err);
	if (ret) {
		hs_warn("cannot symbolize pid %d: %s (the profile keeps raw addresses)", o->pid, err);
	} else {
		if (sym_profile(sc, *out))
			hs_warn("symbolization of pid %d ran out of memory; some frames stay raw", o->pid);
		sym_close(sc);
	}
	const char *re = rep_drop_frames_regex();
	if (re)
		(*out)->drop_frames = prof_intern(*out, re);
	return 0;
}

int do_dump(int argc, char **argv)
{
	struct cmd_live o;
	struct dump_result r = { 0 };
	struct profile *p = NULL;
	struct live_conn *c;
	struct hsp_status st;
	char err[FMT_ERRLEN];
	int ret = cmd_live_parse(&o, "dump", argc, argv, CMD_LIVE_RATE | CMD_LIVE_DUMP);

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
	if (ret == -ENOENT) {
		bool already;
		ret = cmd_live_load_start(&o, &already);
		if (ret)
			return ret;
		r.loaded_here = !already;
		if (!wait_sampling(&o)) {
			hs_err("pid %d exited while heapsnap was sampling", o.pid);
			return HS_FAIL;
		}
	}
	ret = take(&o, &p);
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
