/* cmd_live.c - what the live commands (start, status, dump, stop) share: options, loading, unloading, messages. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "cmd.h"
#include "cmd_live.h"
#include "hs.h"
#include "live.h"
#include "livectl.h"
#include "livegp.h"
#include "livejem.h"
#include "report.h"
#include "symbolize.h"

enum {
	OPT_RATE = 0x100,
	OPT_BACKEND,
	OPT_TIMEOUT,
	OPT_DURATION,
	OPT_FMT,
	OPT_KEEP,
	OPT_UNWINDER,
};

/* The CMD_LIVE_* flag an option belongs to, 0 for the common ones. */
static unsigned opt_needs(int opt)
{
	switch (opt) {
	case OPT_RATE: return CMD_LIVE_RATE;
	case OPT_BACKEND: return CMD_LIVE_BACKEND;
	case OPT_UNWINDER: return CMD_LIVE_UNWINDER;
	case 'o': case OPT_DURATION: case OPT_FMT: case OPT_KEEP: return CMD_LIVE_DUMP;
	default: return 0;
	}
}

static int parse_seconds(const char *s, double max, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v >= 0) || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int cmd_live_parse(struct cmd_live *o, const char *cmd, int argc, char **argv, unsigned which)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "format", required_argument, NULL, OPT_FMT },
		{ "keep", no_argument, NULL, OPT_KEEP },
		{ "unwinder", required_argument, NULL, OPT_UNWINDER },
		{ NULL, 0, NULL, 0 },
	};
	int opt;
	double secs;
	int64_t v;

	memset(o, 0, sizeof(*o));
	o->cmd = cmd;
	o->rate = HSP_DEFAULT_RATE;
	o->timeout_ms = 5000;
	o->duration = 10;
	o->format = FMT_UNKNOWN;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":jo:", opts, NULL)) != -1) {
		if (opt == ':')
			return hs_usage_err(cmd, "option '%s' needs a value", argv[optind - 1]);
		if (opt == '?' || (opt_needs(opt) & which) != opt_needs(opt))
			return hs_usage_err(cmd, "unknown option '%s'", argv[optind - 1]);
		switch (opt) {
		case 'j':
			opt_json = true;
			break;
		case OPT_RATE:
			if (hs_parse_size(optarg, &v) || v < 1 || (uint64_t)v > ((uint64_t)1 << 40) - 1)
				return hs_usage_err(cmd, "bad --rate '%s': expected bytes between samples "
						    "(1 = every allocation, suffixes K M G)", optarg);
			o->rate = (uint64_t)v;
			o->rate_given = true;
			break;
		case OPT_BACKEND:
			if (!strcmp(optarg, "auto"))
				o->backend = CMD_BACKEND_AUTO;
			else if (!strcmp(optarg, "interpose"))
				o->backend = CMD_BACKEND_INTERPOSE;
			else if (!strcmp(optarg, "jemalloc"))
				o->backend = CMD_BACKEND_JEMALLOC;
			else if (!strcmp(optarg, "gperftools"))
				o->backend = CMD_BACKEND_GPERFTOOLS;
			else
				return hs_usage_err(cmd, "unknown backend '%s' (valid: auto, interpose, jemalloc, "
						    "gperftools)", optarg);
			break;
		case OPT_TIMEOUT:
			if (parse_seconds(optarg, 3600, &secs) || secs <= 0)
				return hs_usage_err(cmd, "bad --timeout '%s': expected seconds (0-3600]", optarg);
			o->timeout_ms = (int)(secs * 1000);
			break;
		case 'o':
			o->out = optarg;
			break;
		case OPT_DURATION:
			if (parse_seconds(optarg, 86400, &o->duration))
				return hs_usage_err(cmd, "bad --duration '%s': expected seconds", optarg);
			break;
		case OPT_FMT:
			if ((o->format = fmt_parse(optarg)) == FMT_UNKNOWN)
				return hs_usage_err(cmd, "unknown format '%s' (valid: pprof, jeprof, gperf, "
						    "collapsed, speedscope, svg)", optarg);
			break;
		case OPT_KEEP:
			o->keep = true;
			break;
		case OPT_UNWINDER:
			if (!strcmp(optarg, "auto"))
				o->unwinder = HSP_UNW_AUTO;
			else if (!strcmp(optarg, "libunwind"))
				o->unwinder = HSP_UNW_LIBUNWIND;
			else if (!strcmp(optarg, "libgcc"))
				o->unwinder = HSP_UNW_GCC;
			else
				return hs_usage_err(cmd, "unknown unwinder '%s' (valid: auto, libunwind, libgcc)",
						    optarg);
			break;
		}
	}
	if (optind >= argc)
		return hs_usage_err(cmd, "missing PID");
	if (hs_parse_pid(argv[optind], &o->pid))
		return hs_usage_err(cmd, "bad PID '%s'", argv[optind]);
	optind++;
	return 0;
}

int cmd_live_conn_error(const struct cmd_live *o, int err)
{
	switch (err) {
	case -ESRCH:
		hs_err("cannot talk to pid %d: no such process", o->pid);
		return HS_FAIL;
	case -EACCES:
		hs_err("cannot talk to heapsnap in pid %d: permission denied", o->pid);
		hs_hint("only root and the process's own user may; run heapsnap as one of them");
		return HS_FAIL;
	case -EPERM:
		hs_err("cannot talk to heapsnap in pid %d: it is in another network namespace", o->pid);
		hs_hint("run heapsnap as root, or inside the process's network namespace");
		return HS_FAIL;
	case -EPROTO:
		hs_err("cannot talk to heapsnap in pid %d: its control socket does not answer "
		       "as this version of heapsnap expects", o->pid);
		return HS_FAIL;
	default:
		hs_err("cannot talk to heapsnap in pid %d: %s", o->pid, strerror(-err));
		return HS_FAIL;
	}
}

int cmd_live_load_start(const struct cmd_live *o, bool *already, struct inj_stats *stats)
{
	char reason[LIVECTL_REASONLEN];
	bool left;
	int ret = livectl_start(o->pid, o->rate, o->unwinder, o->timeout_ms, already, &left, reason, stats);

	if (!ret)
		return HS_OK;
	return cmd_live_step_error(o, "start sampling", ret, left, reason);
}

int cmd_live_unload(const struct cmd_live *o, bool *was_loaded)
{
	char reason[LIVECTL_REASONLEN];
	bool left;
	int ret = livectl_unload(o->pid, o->timeout_ms, &left, reason);

	*was_loaded = ret != -ENOENT || left;
	if (!ret || (ret == -ENOENT && !left))
		return HS_OK;
	hs_err("cannot unload heapsnap from pid %d: %s", o->pid, reason);
	const char *hint = livectl_hint(ret, reason);
	if (ret == -EBUSY)
		hs_hint("sampling is off and every hook is out; 'heapsnap status %d' says why it stays", o->pid);
	else if (hint)
		hs_hint("%s", hint);
	return left ? HS_FAIL_LOADED : HS_FAIL;
}

int cmd_live_take(int pid, struct profile **out)
{
	struct live_conn *c;
	int ret = live_connect(pid, &c);

	if (ret)
		return ret;
	ret = live_snapshot(c, out);
	live_close(c);
	if (ret)
		return ret;
	cmd_live_symbolize(pid, *out);
	return 0;
}

void cmd_live_symbolize(int pid, struct profile *p)
{
	struct sym_ctx *sc;
	char err[256];
	int ret = sym_open_pid(pid, &sc, err);

	if (ret) {
		hs_warn("cannot symbolize pid %d: %s (the profile keeps raw addresses)", pid, err);
	} else {
		if (sym_profile(sc, p))
			hs_warn("symbolization of pid %d ran out of memory; some frames stay raw", pid);
		sym_close(sc);
	}
	const char *re = rep_drop_frames_regex();
	if (re)
		p->drop_frames = prof_intern(p, re);
}

int cmd_live_step_error(const struct cmd_live *o, const char *what, int err, bool left,
		       const char *reason)
{
	hs_err("cannot %s in pid %d: %s", what, o->pid, reason);
	const char *hint = livectl_hint(err, reason);
	if (left)
		hs_hint("the payload may still be loaded; run 'heapsnap stop %d' to remove it", o->pid);
	else if (hint)
		hs_hint("%s", hint);
	return left ? HS_FAIL_LOADED : HS_FAIL;
}

int cmd_live_pick_jemalloc(const struct cmd_live *o, bool *use, struct livejem_info *info)
{
	char reason[LIVECTL_REASONLEN];
	bool left = false;
	int ret;

	*use = false;
	memset(info, 0, sizeof(*info));
	if (o->backend == CMD_BACKEND_INTERPOSE || o->backend == CMD_BACKEND_GPERFTOOLS)
		return HS_OK;
	if (o->backend == CMD_BACKEND_AUTO && !livejem_maybe(o->pid))
		return HS_OK;
	ret = livejem_probe(o->pid, o->timeout_ms, info, &left, reason);
	if (ret)
		return cmd_live_step_error(o, "ask jemalloc", ret, left, reason);
	if (o->backend == CMD_BACKEND_AUTO) {
		*use = info->opt_prof;
		return HS_OK;
	}
	if (!info->present) {
		hs_err("pid %d does not use jemalloc (no mallctl in it)", o->pid);
		hs_hint("use --backend auto or interpose");
		return HS_FAIL;
	}
	if (!info->opt_prof) {
		hs_warn("jemalloc's profiler is off (opt.prof false; it can only be enabled at start "
			"with MALLOC_CONF=prof:true%s); using interpose",
			info->config_prof ? "" : ", and this jemalloc was built without --enable-prof");
		return HS_OK;
	}
	*use = true;
	return HS_OK;
}

int cmd_live_pick_gperf(const struct cmd_live *o, bool *use, bool *running, bool *ours)
{
	char reason[LIVECTL_REASONLEN];
	bool left = false;
	int ret;

	*use = *running = *ours = false;
	if (o->backend != CMD_BACKEND_GPERFTOOLS &&
	    (o->backend != CMD_BACKEND_AUTO || !livegp_maybe(o->pid)))
		return HS_OK;
	ret = livegp_probe(o->pid, o->timeout_ms, running, ours, &left, reason);
	if (ret == -ENOENT && !left && o->backend == CMD_BACKEND_GPERFTOOLS) {
		hs_err("pid %d has no gperftools heap profiler (HeapProfilerStart, GetHeapProfile)", o->pid);
		hs_hint("link the program with -ltcmalloc (not tcmalloc_minimal), or use --backend auto");
		return HS_FAIL;
	}
	if (ret == -ENOENT && !left)
		return HS_OK;
	if (ret)
		return cmd_live_step_error(o, "ask gperftools' heap profiler", ret, left, reason);
	/* auto: only a profiler that already runs knows more than interpose. */
	*use = o->backend == CMD_BACKEND_GPERFTOOLS || *running;
	return HS_OK;
}
