/* report_fmt.c - numbers the way Go pprof prints them: units in steps of 1024, "%.2f" without ".00", percentages. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "report.h"
#include "report_int.h"

static const char *const unit_names[] = { "B", "kB", "MB", "GB", "TB", "PB" };

/* Index into unit_names of the largest unit that keeps |v| >= 1 (pprof's
 * autoScale), "B" for 0. */
static int auto_index(double v)
{
	int k = 0;

	v = fabs(v);
	while (k < 5 && v / ldexp(1.0, 10 * (k + 1)) >= 1.0)
		k++;
	return k;
}

static enum rep_unit unit_of_index(int k)
{
	switch (k) {
	case 0: return REP_UNIT_B;
	case 1: return REP_UNIT_KB;
	case 2: return REP_UNIT_MB;
	default: return REP_UNIT_GB;
	}
}

enum rep_unit rep_minimum_unit(int64_t min, int64_t max)
{
	double mn = fabs((double)min), mx = fabs((double)max);
	int umin, umax;

	if (mn == 0)
		mn = mx;
	umin = auto_index(mn);
	umax = auto_index(mx);
	if (umin != umax && mn * 100 < mx)
		umin = auto_index(mn * 100);
	/* pprof goes up to PB; heapsnap's fixed units stop at GB, which only
	 * matters above 1 PiB of heap. */
	return unit_of_index(umin);
}

static void trim_zero_decimals(char *s)
{
	size_t n = strlen(s);
	if (n >= 3 && !strcmp(s + n - 3, ".00"))
		s[n - 3] = 0;
}

char *rep_fmt_value(char *buf, size_t len, int64_t v, const char *unit, enum rep_unit u)
{
	char num[64];
	double d = (double)v;
	int k;

	if (unit && !strcmp(unit, "count")) {
		snprintf(num, sizeof(num), "%.2f", d);
		trim_zero_decimals(num);
		if (!strcmp(num, "-0"))
			strcpy(num, "0");
		snprintf(buf, len, "%s", num);
		return buf;
	}
	switch (u) {
	case REP_UNIT_B: k = 0; break;
	case REP_UNIT_KB: k = 1; break;
	case REP_UNIT_MB: k = 2; break;
	case REP_UNIT_GB: k = 3; break;
	default: k = auto_index(d); break;
	}
	snprintf(num, sizeof(num), "%.2f", d / ldexp(1.0, 10 * k));
	trim_zero_decimals(num);
	if (!strcmp(num, "0") || !strcmp(num, "-0")) {
		snprintf(buf, len, "0");
		return buf;
	}
	snprintf(buf, len, "%s%s", num, unit_names[k]);
	return buf;
}

char *rep_fmt_pct(char buf[16], int64_t v, int64_t total)
{
	double r = 0;

	if (total != 0)
		r = fabs((double)v / (double)total) * 100;
	if (r >= 99.95 && r <= 100.05)
		snprintf(buf, 16, "  100%%");
	else if (r >= 1.0)
		snprintf(buf, 16, "%5.2f%%", r);
	else
		snprintf(buf, 16, "%5.2g%%", r);
	return buf;
}

char *rep_value(const struct rep_view *v, char *buf, size_t len, int64_t val)
{
	return rep_fmt_value(buf, len, val, v->unit, v->out_unit);
}

static const struct {
	const char *name;
	enum rep_gran g;
} grans[] = {
	{ "functions", REP_GRAN_FUNCTIONS },
	{ "files", REP_GRAN_FILES },
	{ "lines", REP_GRAN_LINES },
	{ "addresses", REP_GRAN_ADDRESSES },
};

static const struct {
	const char *name;
	enum rep_unit u;
} units[] = {
	{ "minimum", REP_UNIT_MINIMUM },
	{ "auto", REP_UNIT_AUTO },
	{ "B", REP_UNIT_B },
	{ "kB", REP_UNIT_KB },
	{ "MB", REP_UNIT_MB },
	{ "GB", REP_UNIT_GB },
};

int rep_parse_gran(const char *s)
{
	for (size_t i = 0; i < sizeof(grans) / sizeof(grans[0]); i++)
		if (s && !strcasecmp(s, grans[i].name))
			return grans[i].g;
	return -1;
}

int rep_parse_unit(const char *s)
{
	if (!s)
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcasecmp(s, units[i].name))
			return units[i].u;
	/* pprof also accepts the long spellings */
	if (!strcasecmp(s, "bytes") || !strcasecmp(s, "byte"))
		return REP_UNIT_B;
	return -1;
}

const char *rep_gran_name(enum rep_gran g)
{
	for (size_t i = 0; i < sizeof(grans) / sizeof(grans[0]); i++)
		if (grans[i].g == g)
			return grans[i].name;
	return "?";
}

const char *rep_unit_name(enum rep_unit u)
{
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (units[i].u == u)
			return units[i].name;
	return "?";
}
