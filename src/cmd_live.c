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
#include "livectl.h"

enum {
	OPT_RATE = 0x100,
	OPT_BACKEND,
	OPT_TIMEOUT,
	OPT_DURATION,
	OPT_FMT,
	OPT_KEEP,
};

/* The CMD_LIVE_* flag an option belongs to, 0 for the common ones. */
static unsigned opt_needs(int opt)
{
	switch (opt) {
	case OPT_RATE: return CMD_LIVE_RATE;
	case OPT_BACKEND: return CMD_LIVE_BACKEND;
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
			if (!strcmp(optarg, "auto") || !strcmp(optarg, "interpose"))
				break;
			if (!strcmp(optarg, "jemalloc") || !strcmp(optarg, "gperftools"))
				return hs_usage_err(cmd, "backend '%s' is not available yet (valid: auto, interpose)",
						    optarg);
			return hs_usage_err(cmd, "unknown backend '%s' (valid: auto, interpose)", optarg);
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

int cmd_live_load_start(const struct cmd_live *o, bool *already)
{
	char reason[LIVECTL_REASONLEN];
	bool left;
	int ret = livectl_start(o->pid, o->rate, o->timeout_ms, already, &left, reason);

	if (!ret)
		return HS_OK;
	hs_err("cannot start sampling in pid %d: %s", o->pid, reason);
	const char *hint = livectl_hint(ret, reason);
	if (left)
		hs_hint("the payload may still be loaded; run 'heapsnap stop %d' to remove it", o->pid);
	else if (hint)
		hs_hint("%s", hint);
	return left ? HS_FAIL_LOADED : HS_FAIL;
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
