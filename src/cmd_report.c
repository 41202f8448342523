/* cmd_report.c - shared by the report commands: load and symbolize a file, parse the common options, print a view. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_report.h"
#include "format.h"
#include "hs.h"
#include "symbolize.h"

void cmd_report_init(struct cmd_report *c, const char *cmd, enum rep_kind kind)
{
	memset(c, 0, sizeof(*c));
	c->cmd = cmd;
	rep_opts_init(&c->o, kind);
}

int cmd_report_count(struct cmd_report *c, const char *arg)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(arg, &end, 10);
	if (errno || *end || end == arg || n < 0 || n > 1000000)
		return hs_usage_err(c->cmd, "bad node count '%s' (a number, 0 for all)", arg);
	c->o.nodecount = (int)n;
	return 0;
}

int cmd_report_opt(struct cmd_report *c, int opt, const char *arg)
{
	int v;

	switch (opt) {
	case 'j':
		opt_json = true;
		return 0;
	case OPT_SAMPLE_INDEX:
		v = prof_type_parse(arg);
		if (v < 0)
			return hs_usage_err(c->cmd, "unknown sample index '%s' (valid: inuse_space, "
					    "inuse_objects, alloc_space, alloc_objects)", arg);
		c->o.type = v;
		return 0;
	case OPT_FOCUS:
		c->o.focus = arg;
		return 0;
	case OPT_IGNORE:
		c->o.ignore = arg;
		return 0;
	case OPT_UNIT:
		v = rep_parse_unit(arg);
		if (v < 0)
			return hs_usage_err(c->cmd, "unknown unit '%s' (valid: minimum, auto, B, kB, MB, GB)",
					    arg);
		c->o.unit = v;
		return 0;
	case OPT_GRAN:
		v = rep_parse_gran(arg);
		if (v < 0)
			return hs_usage_err(c->cmd, "unknown granularity '%s' (valid: functions, lines, "
					    "files, addresses)", arg);
		c->o.gran = v;
		return 0;
	case OPT_BASE:
		c->base_path = arg;
		return 0;
	case OPT_CUM:
		c->o.cum_sort = true;
		return 0;
	}
	return -1;
}

static bool needs_symbols(const struct profile *p)
{
	for (size_t i = 0; i < p->nlocs; i++)
		if (p->locs[i].nlines == 0)
			return true;
	return false;
}

int cmd_report_bad_option(const char *cmd, int opt, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "?";
	char shortopt[3] = { '-', (char)optopt, 0 };

	/* getopt names the culprit only through optopt (short options) or
	 * the last argv element it looked at (long ones). */
	if (optopt > 0 && optopt < 0x100)
		arg = shortopt;
	if (opt == ':')
		return hs_usage_err(cmd, "option '%s' needs a value", arg);
	return hs_usage_err(cmd, "unknown option '%s'", arg);
}

struct profile *cmd_report_load(const char *path)
{
	char err[FMT_ERRLEN];
	struct profile *p = NULL;
	int rc;

	rc = fmt_read_file(path, &p, err);
	if (rc) {
		hs_err("cannot read '%s': %s", path, err[0] ? err : strerror(-rc));
		return NULL;
	}
	if (needs_symbols(p)) {
		struct sym_ctx *ctx;
		char serr[256];
		/* Best effort: frames that stay unknown print as module+0xoff. */
		if (sym_open_profile(p, &ctx, serr) == 0) {
			rc = sym_profile(ctx, p);
			sym_close(ctx);
			if (rc) {
				hs_err("cannot symbolize '%s': %s", path, strerror(-rc));
				prof_free(p);
				return NULL;
			}
		} else {
			hs_debug("no symbols for '%s': %s", path, serr);
		}
	}
	return p;
}

int cmd_report_emit(int (*fill)(FILE *f, void *ctx), void *ctx)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int rc;

	if (!m)
		return -errno;
	rc = fill(m, ctx);
	if (fclose(m) != 0 && !rc)
		rc = -EIO;
	if (!rc && len && fwrite(buf, 1, len, stdout) != len)
		rc = -EIO;
	if (!rc && fflush(stdout) != 0)
		rc = errno ? -errno : -EIO;
	free(buf);
	return rc;
}

static int fill_view(FILE *f, void *ctx)
{
	const struct rep_view *v = ctx;
	return opt_json ? rep_print_json(v, f) : rep_print(v, f);
}

int cmd_report_run(struct cmd_report *c, const char *path)
{
	struct profile *p, *base = NULL;
	struct rep_view *v = NULL;
	char err[REP_ERRLEN];
	int rc, ret = HS_FAIL;

	p = cmd_report_load(path);
	if (!p)
		return HS_FAIL;
	if (c->base_path) {
		base = cmd_report_load(c->base_path);
		if (!base)
			goto out;
		c->o.base = base;
		c->o.base_name = c->base_path;
	}
	c->o.name = path;
	rc = rep_build(p, &c->o, &v, err);
	switch (rc) {
	case 0:
		break;
	case -EINVAL:
		ret = hs_usage_err(c->cmd, "%s", err);
		goto out;
	case -ENODATA:
		hs_err("no %s values in '%s' (it has inuse_space and inuse_objects only)",
		       prof_type_name(c->o.type),
		       (base && p->has_alloc) ? c->base_path : path);
		goto out;
	default:
		hs_err("%s", err);
		goto out;
	}
	rc = cmd_report_emit(fill_view, v);
	if (rc) {
		hs_err("cannot write the report: %s", strerror(-rc));
		goto out;
	}
	ret = HS_OK;
out:
	rep_free(v);
	prof_free(base);
	prof_free(p);
	return ret;
}

int cmd_report_graph(int argc, char **argv, const char *name, enum rep_kind kind)
{
	static const struct option opts[] = {
		CMD_REPORT_OPTS,
		{ "nodecount", required_argument, NULL, 'n' },
		{ "cum", no_argument, NULL, OPT_CUM },
		{ "base", required_argument, NULL, OPT_BASE },
		{ NULL, 0, NULL, 0 },
	};
	struct cmd_report c;
	int opt, rc;

	cmd_report_init(&c, name, kind);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":jn:", opts, NULL)) != -1) {
		if (opt == 'n')
			rc = cmd_report_count(&c, optarg);
		else if (opt == '?' || opt == ':')
			return cmd_report_bad_option(name, opt, argv);
		else
			rc = cmd_report_opt(&c, opt, optarg);
		if (rc)
			return HS_USAGE;
	}
	if (argc - optind != 1)
		return hs_usage_err(name, argc - optind ? "too many operands" : "no profile file given");
	return cmd_report_run(&c, argv[optind]);
}
