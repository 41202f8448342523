/* cmd_watch.c - `heapsnap watch PID`: periodic snapshots of a live process into a directory, all of them or only on growth or a new peak. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"
#include "cmd.h"
#include "cmd_live.h"
#include "format.h"
#include "hs.h"
#include "json.h"
#include "live.h"
#include "report.h"

enum {
	OPT_INTERVAL = 0x100,
	OPT_ON_GROWTH,
	OPT_ON_PEAK,
	OPT_COUNT,
	OPT_RATE,
	OPT_KEEP,
	OPT_TIMEOUT,
};

struct watch {
	struct cmd_live live;   /* pid, rate, timeout for the shared helpers */
	double interval;
	int64_t growth;         /* --on-growth BYTES, -1 if not given */
	bool peak;
	const char *dir;
	long count;             /* files to write, 0 = until stopped */
	bool keep;
};

/* What one written file reports. */
struct written {
	const char *path;
	long seq;
	int64_t inuse, delta;
	const char *why;        /* "interval", "first", "growth", "peak" */
};

static volatile sig_atomic_t watch_stop;

static void on_stop(int sig)
{
	(void)sig;
	watch_stop = 1;
}

static int parse_secs(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v > 0) || v > 86400)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse(struct watch *w, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "on-growth", required_argument, NULL, OPT_ON_GROWTH },
		{ "on-peak", no_argument, NULL, OPT_ON_PEAK },
		{ "output", required_argument, NULL, 'o' },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "keep", no_argument, NULL, OPT_KEEP },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ NULL, 0, NULL, 0 },
	};
	int opt;
	int64_t v;
	double secs;
	char *end;

	memset(w, 0, sizeof(*w));
	w->live.cmd = "watch";
	w->live.rate = HSP_DEFAULT_RATE;
	w->live.timeout_ms = 5000;
	w->growth = -1;
	w->interval = 10;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":jo:", opts, NULL)) != -1) {
		switch (opt) {
		case ':':
			return hs_usage_err("watch", "option '%s' needs a value", argv[optind - 1]);
		case '?':
			return hs_usage_err("watch", "unknown option '%s'", argv[optind - 1]);
		case 'j':
			opt_json = true;
			break;
		case OPT_INTERVAL:
			if (parse_secs(optarg, &w->interval))
				return hs_usage_err("watch", "bad --interval '%s': expected seconds", optarg);
			break;
		case OPT_ON_GROWTH:
			if (hs_parse_size(optarg, &w->growth))
				return hs_usage_err("watch", "bad --on-growth '%s': expected bytes "
						    "(suffixes K M G)", optarg);
			break;
		case OPT_ON_PEAK:
			w->peak = true;
			break;
		case 'o':
			w->dir = optarg;
			break;
		case OPT_COUNT:
			errno = 0;
			w->count = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || w->count < 1)
				return hs_usage_err("watch", "bad --count '%s': expected a positive number", optarg);
			break;
		case OPT_RATE:
			if (hs_parse_size(optarg, &v) || v < 1 || v > ((int64_t)1 << 40) - 1)
				return hs_usage_err("watch", "bad --rate '%s': expected bytes between samples "
						    "(1 = every allocation, suffixes K M G)", optarg);
			w->live.rate = (uint64_t)v;
			w->live.rate_given = true;
			break;
		case OPT_KEEP:
			w->keep = true;
			break;
		case OPT_TIMEOUT:
			if (parse_secs(optarg, &secs) || secs > 3600)
				return hs_usage_err("watch", "bad --timeout '%s': expected seconds (0-3600]", optarg);
			w->live.timeout_ms = (int)(secs * 1000);
			break;
		}
	}
	if (optind >= argc)
		return hs_usage_err("watch", "missing PID");
	if (hs_parse_pid(argv[optind], &w->live.pid))
		return hs_usage_err("watch", "bad PID '%s'", argv[optind]);
	if (++optind != argc)
		return hs_usage_err("watch", "too many operands");
	if (!w->dir)
		return hs_usage_err("watch", "no output directory given (-o DIR)");
	return 0;
}

/* Waits secs or until stopped.  false when stopped or the target is gone. */
static bool wait_tick(const struct watch *w, double secs)
{
	struct timespec t0, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (watch_stop || (kill(w->live.pid, 0) && errno == ESRCH))
			return false;
		clock_gettime(CLOCK_MONOTONIC, &now);
		double left = secs - ((now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9);
		if (left <= 0)
			return true;
		if (left > 0.1)
			left = 0.1;
		struct timespec ts = { 0, (long)(left * 1e9) };
		nanosleep(&ts, NULL);
	}
}

static void report(const struct written *r)
{
	if (opt_json) {
		/* JSON lines: one complete document per written file. */
		struct json j;
		json_begin(&j, stdout);
		json_obj_open(&j);
		json_kv_str(&j, "file", r->path);
		json_kv_int(&j, "seq", r->seq);
		json_kv_int(&j, "inuse_space", r->inuse);
		json_kv_int(&j, "growth", r->delta);
		json_kv_str(&j, "reason", r->why);
		json_obj_close(&j);
		json_end(&j);
	} else if (!opt_quiet) {
		char b[32], d[32];
		rep_fmt_value(b, sizeof(b), r->inuse, "bytes", REP_UNIT_AUTO);
		rep_fmt_value(d, sizeof(d), r->delta, "bytes", REP_UNIT_AUTO);
		printf("%s: %s in use (%s%s, %s)\n", r->path, b, r->delta >= 0 ? "+" : "", d, r->why);
	}
	fflush(stdout);
}

static int watch_loop(struct watch *w, long *nwritten)
{
	int64_t last = 0, high = 0;
	long seq = 0;
	bool first = true;

	while (!w->count || seq < w->count) {
		struct profile *p = NULL;
		char path[4096], stamp[32], err[FMT_ERRLEN];
		struct tm tm;
		time_t now;
		int ret;

		if (!first && !wait_tick(w, w->interval))
			break;
		ret = cmd_live_take(w->live.pid, &p);
		if (ret) {
			if (kill(w->live.pid, 0) && errno == ESRCH)
				break;
			if (ret == -ENOENT) {
				hs_err("heapsnap was unloaded from pid %d by someone else", w->live.pid);
				return HS_FAIL;
			}
			cmd_live_conn_error(&w->live, ret);
			return HS_FAIL;
		}
		int64_t inuse = prof_total(p, PT_INUSE_SPACE);
		const char *why = NULL;
		/* The first snapshot is always written: the base later ones are
		 * compared (and diffed) against. */
		if (first)
			why = "first";
		else if (w->growth >= 0 && inuse - last > w->growth)
			why = "growth";
		else if (w->peak && inuse > high)
			why = "peak";
		else if (w->growth < 0 && !w->peak)
			why = "interval";
		first = false;
		if (inuse > high)
			high = inuse;
		if (!why) {
			prof_free(p);
			continue;
		}
		now = time(NULL);
		gmtime_r(&now, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
		snprintf(path, sizeof(path), "%s/heapsnap.%d.%s.%ld.pb.gz", w->dir, w->live.pid, stamp,
			 seq + 1);
		ret = fmt_write_file(p, path, FMT_PPROF, PT_INUSE_SPACE, err);
		prof_free(p);
		if (ret) {
			hs_err("cannot write '%s': %s", path, err[0] ? err : strerror(-ret));
			return HS_FAIL;
		}
		seq++;
		struct written r = { path, seq, inuse, seq == 1 ? 0 : inuse - last, why };
		report(&r);
		last = inuse;
		*nwritten = seq;
	}
	if (kill(w->live.pid, 0) && errno == ESRCH)
		hs_warn("pid %d exited; wrote %ld file%s", w->live.pid, seq, seq == 1 ? "" : "s");
	return HS_OK;
}

int do_watch(int argc, char **argv)
{
	struct watch w;
	struct sigaction sa = { 0 }, old_int, old_term;
	bool already = false, was;
	long n = 0;
	int ret = parse(&w, argc, argv);

	if (ret)
		return ret;
	if (mkdir(w.dir, 0777) && errno != EEXIST) {
		hs_err("cannot create '%s': %s", w.dir, strerror(errno));
		return HS_FAIL;
	}
	ret = cmd_live_load_start(&w.live, &already, NULL);
	if (ret)
		return ret;
	watch_stop = 0;
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	ret = watch_loop(&w, &n);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	/* Leave the process as found: what watch loaded, it unloads. */
	if (!already && !w.keep && !(kill(w.live.pid, 0) && errno == ESRCH)) {
		int urc = cmd_live_unload(&w.live, &was);
		if (urc)
			ret = urc;
	}
	return ret;
}
