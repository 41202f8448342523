/* report_print.c - writes a built view: Go pprof's text layouts (top, tree, peek, list), heapsnap's diff, and JSON. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "report.h"
#include "report_int.h"

#define SEPARATOR "----------------------------------------------------------+-------------"
#define TREE_LEGEND "      flat  flat%   sum%        cum   cum%   calls calls% + context \t \t "

static const char *basename_of(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

/* pprof's "%.2f" without ".00" in a time unit, for "Duration:". */
static void fmt_duration(char *buf, size_t len, int64_t ns)
{
	static const struct { const char *name; double f; } u[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "hrs", 3.6e12 },
	};
	double v = fabs((double)ns);
	size_t k = 0;
	char num[64];

	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		if (v / u[i].f >= 1.0)
			k = i;
	snprintf(num, sizeof(num), "%.2f", (double)ns / u[k].f);
	size_t n = strlen(num);
	if (n >= 3 && !strcmp(num + n - 3, ".00"))
		num[n - 3] = 0;
	if (!strcmp(num, "0") || !strcmp(num, "-0"))
		snprintf(buf, len, "0");
	else
		snprintf(buf, len, "%s%s", num, u[k].name);
}

/* pprof's ProfileLabels: File, Build ID, comments, Type, Time, Duration. */
static void print_profile_labels(const struct rep_view *v, FILE *f)
{
	const struct profile *p = v->p;
	char a[64], b[64];

	if (p->nmaps > 0) {
		if (p->maps[0].file && *p->maps[0].file)
			fprintf(f, "File: %s\n", basename_of(p->maps[0].file));
		if (p->maps[0].build_id && *p->maps[0].build_id)
			fprintf(f, "Build ID: %s\n", p->maps[0].build_id);
	}
	for (size_t i = 0; i < v->ncomments; i++)
		if (v->comments[i][0] != '#')
			fprintf(f, "%s\n", v->comments[i]);
	fprintf(f, "Type: %s\n", prof_type_name(v->o.type));
	if (v->time_nanos) {
		time_t t = (time_t)(v->time_nanos / 1000000000);
		struct tm tm;
		char tbuf[128];
		if (localtime_r(&t, &tm) &&
		    strftime(tbuf, sizeof(tbuf), "%b %-d, %Y at %-I:%M%P (%Z)", &tm))
			fprintf(f, "Time: %s\n", tbuf);
	}
	if (v->duration_nanos) {
		fmt_duration(a, sizeof(a), v->duration_nanos);
		/* the trailing space is pprof's (an empty ratio field) */
		fprintf(f, "Duration: %s, Total samples = %s \n", a,
			rep_value(v, b, sizeof(b), v->total));
	}
}

static void print_filters(const struct rep_view *v, FILE *f)
{
	if (!(v->o.focus && *v->o.focus) && !(v->o.ignore && *v->o.ignore))
		return;
	fprintf(f, "Active filters:\n");
	if (v->o.focus && *v->o.focus)
		fprintf(f, "   focus=%s\n", v->o.focus);
	if (v->o.ignore && *v->o.ignore)
		fprintf(f, "   ignore=%s\n", v->o.ignore);
}

static int64_t shown_flat(const struct rep_view *v)
{
	int64_t s = 0;
	for (size_t i = 0; i < v->norder; i++)
		s += v->nodes[v->order[i]].flat;
	return s;
}

static const char *trim(char *s)
{
	while (*s == ' ')
		s++;
	return s;
}

/* pprof's reportLabels after the profile labels. */
static void print_report_labels(const struct rep_view *v, FILE *f)
{
	char a[64], b[64], c[64], pct[16];
	int64_t flat = shown_flat(v);

	print_filters(v, f);
	fprintf(f, "Showing nodes accounting for %s, %s of %s total\n",
		rep_value(v, a, sizeof(a), flat), trim(rep_fmt_pct(pct, flat, v->total)),
		rep_value(v, b, sizeof(b), v->total));
	if (v->total != 0) {
		if (v->dropped_nodes > 0) {
			int64_t cut = (int64_t)((double)v->total * v->o.nodefraction);
			fprintf(f, "Dropped %zu node%s (cum <= %s)\n", v->dropped_nodes,
				v->dropped_nodes > 1 ? "s" : "",
				rep_value(v, c, sizeof(c), cut < 0 ? -cut : cut));
		}
		if (v->norder > 0 && v->norder < v->orig_count)
			fprintf(f, "Showing top %zu nodes out of %zu\n", v->norder, v->orig_count);
	}
}

static void print_top(const struct rep_view *v, FILE *f)
{
	char a[64], b[64], p1[16], p2[16], p3[16];
	int64_t sum = 0;

	print_profile_labels(v, f);
	print_report_labels(v, f);
	fprintf(f, "%10s %5s%% %5s%% %10s %5s%%\n", "flat", "flat", "sum", "cum", "cum");
	for (size_t i = 0; i < v->norder; i++) {
		const struct rep_row *r = &v->rows[i];
		sum += r->flat;
		fprintf(f, "%10s %s %s %10s %s  %s%s%s\n",
			rep_value(v, a, sizeof(a), r->flat), rep_fmt_pct(p1, r->flat, v->total),
			rep_fmt_pct(p2, sum, v->total), rep_value(v, b, sizeof(b), r->cum),
			rep_fmt_pct(p3, r->cum, v->total), r->name,
			*r->inline_label ? " " : "", r->inline_label);
	}
}

/* ---- diff --------------------------------------------------------------- */

static char *signed_value(const struct rep_view *v, char *buf, size_t len, int64_t x)
{
	char t[48];
	rep_value(v, t, sizeof(t), x);
	snprintf(buf, len, "%s%s", x > 0 ? "+" : "", t);
	return buf;
}

static double pct_of(int64_t x, int64_t total)
{
	return total ? (double)x / (double)total * 100.0 : 0.0;
}

static char *signed_pct(char *buf, size_t len, int64_t x, int64_t total)
{
	if (!total)
		snprintf(buf, len, "n/a");
	else if (!x)
		snprintf(buf, len, "0%%");
	else if (fabs(pct_of(x, total)) >= 1.0)
		snprintf(buf, len, "%+.2f%%", pct_of(x, total));
	else
		snprintf(buf, len, "%+.2g%%", pct_of(x, total));
	return buf;
}

static void print_diff(const struct rep_view *v, FILE *f)
{
	char a[64], b[64], p1[24], p2[24], p3[24];
	int64_t sum = 0, delta = v->new_total - v->base_total;
	const char *tn = prof_type_name(v->o.type);

	fprintf(f, "Base: %s, %s total %s\n", v->o.base_name ? v->o.base_name : "(base)", tn,
		rep_value(v, a, sizeof(a), v->base_total));
	fprintf(f, "New:  %s, %s total %s\n", v->o.name ? v->o.name : "(new)", tn,
		rep_value(v, a, sizeof(a), v->new_total));
	fprintf(f, "Delta: %s (%s of base)\n", signed_value(v, a, sizeof(a), delta),
		signed_pct(p1, sizeof(p1), delta, v->base_total));
	fprintf(f, "Type: %s\n", tn);
	print_filters(v, f);
	int64_t flat = shown_flat(v);
	fprintf(f, "Showing nodes accounting for %s, %s of %s base total\n",
		signed_value(v, a, sizeof(a), flat), signed_pct(p1, sizeof(p1), flat, v->total),
		rep_value(v, b, sizeof(b), v->total));
	if (v->norder > 0 && v->norder < v->orig_count)
		fprintf(f, "Showing top %zu nodes out of %zu\n", v->norder, v->orig_count);
	if (v->norder == 0) {
		fprintf(f, "No differences\n");
		return;
	}
	fprintf(f, "%10s %8s %8s %10s %8s\n", "flat", "flat%", "sum%", "cum", "cum%");
	for (size_t i = 0; i < v->norder; i++) {
		const struct rep_row *r = &v->rows[i];
		sum += r->flat;
		fprintf(f, "%10s %8s %8s %10s %8s  %s%s%s\n",
			signed_value(v, a, sizeof(a), r->flat),
			signed_pct(p1, sizeof(p1), r->flat, v->total),
			signed_pct(p2, sizeof(p2), sum, v->total),
			signed_value(v, b, sizeof(b), r->cum),
			signed_pct(p3, sizeof(p3), r->cum, v->total), r->name,
			*r->inline_label ? " " : "", r->inline_label);
	}
}

/* ---- tree and peek ------------------------------------------------------ */

static void print_edge(const struct rep_view *v, FILE *f, const struct redge *e, uint32_t other,
		       int64_t cum)
{
	char a[64], p[16];
	fprintf(f, "%50s %s |   %s%s\n", rep_value(v, a, sizeof(a), e->w),
		rep_fmt_pct(p, e->w, cum), v->nodes[other].pname, e->inl ? " (inline)" : "");
}

static void print_tree(const struct rep_view *v, FILE *f)
{
	char a[64], b[64], p1[16], p2[16], p3[16];
	int64_t sum = 0;

	print_profile_labels(v, f);
	print_report_labels(v, f);
	fprintf(f, "%s\n%s\n", SEPARATOR, TREE_LEGEND);
	for (size_t i = 0; i < v->norder; i++) {
		if (v->matched && !v->matched[i])
			continue;
		const struct rnode *n = &v->nodes[v->order[i]];
		const struct rlinks *l = &v->links[i];
		fprintf(f, "%s\n", SEPARATOR);
		for (size_t k = 0; k < l->nin; k++) {
			const struct redge *e = &v->edges[l->in[k]];
			print_edge(v, f, e, e->src, n->cum);
		}
		sum += n->flat;
		fprintf(f, "%10s %s %s %10s %s                | %s\n",
			rep_value(v, a, sizeof(a), n->flat), rep_fmt_pct(p1, n->flat, v->total),
			rep_fmt_pct(p2, sum, v->total), rep_value(v, b, sizeof(b), n->cum),
			rep_fmt_pct(p3, n->cum, v->total), n->pname);
		for (size_t k = 0; k < l->nout; k++) {
			const struct redge *e = &v->edges[l->out[k]];
			print_edge(v, f, e, e->dst, n->cum);
		}
	}
	if (v->norder > 0)
		fprintf(f, "%s\n", SEPARATOR);
}

/* ---- list --------------------------------------------------------------- */

static const char *value_or_dot(const struct rep_view *v, char *buf, size_t len, int64_t x)
{
	if (x == 0)
		return ".";
	return rep_value(v, buf, len, x);
}

static void print_list(const struct rep_view *v, FILE *f)
{
	char a[64], b[64], p[16];

	fprintf(f, "Total: %s\n", rep_value(v, a, sizeof(a), v->total));
	for (size_t i = 0; i < v->nroutines; i++) {
		const struct rroutine *r = &v->routines[i];
		if (!r->file) {
			fprintf(f, "No source information for %s\n", r->name);
			continue;
		}
		fprintf(f, "ROUTINE ======================== %s in %s\n", r->name, r->file);
		fprintf(f, "%10s %10s (flat, cum) %s of Total\n", rep_value(v, a, sizeof(a), r->flat),
			rep_value(v, b, sizeof(b), r->cum), rep_fmt_pct(p, r->cum, v->total));
		if (!r->found)
			fprintf(f, " (source not found: only sampled lines are shown)\n");
		for (size_t k = 0; k < r->nlines; k++) {
			const struct rline *l = &r->lines[k];
			fprintf(f, "%10s %10s %6" PRId64 ":%s\n", value_or_dot(v, a, sizeof(a), l->flat),
				value_or_dot(v, b, sizeof(b), l->cum), l->line, l->text ? l->text : "");
		}
	}
}

int rep_print(const struct rep_view *v, FILE *f)
{
	switch (v->o.kind) {
	case REP_TOP: print_top(v, f); break;
	case REP_DIFF: print_diff(v, f); break;
	case REP_TREE:
	case REP_PEEK: print_tree(v, f); break;
	case REP_LIST: print_list(v, f); break;
	}
	if (fflush(f) != 0 || ferror(f))
		return -EIO;
	return 0;
}

/* ---- JSON --------------------------------------------------------------- */

static const char *kind_name(enum rep_kind k)
{
	switch (k) {
	case REP_TOP: return "top";
	case REP_TREE: return "tree";
	case REP_PEEK: return "peek";
	case REP_LIST: return "list";
	case REP_DIFF: return "diff";
	}
	return "?";
}

static void json_header(const struct rep_view *v, struct json *j)
{
	const struct profile *p = v->p;

	json_kv_str(j, "report", kind_name(v->o.kind));
	json_kv_str(j, "type", prof_type_name(v->o.type));
	json_kv_str(j, "unit", v->unit);
	json_kv_str(j, "granularity", rep_gran_name(v->o.gran));
	if (p->nmaps > 0 && p->maps[0].file && *p->maps[0].file)
		json_kv_str(j, "binary", p->maps[0].file);
	if (v->time_nanos)
		json_kv_int(j, "time_nanos", v->time_nanos);
	if (v->duration_nanos)
		json_kv_int(j, "duration_nanos", v->duration_nanos);
	if (v->o.focus && *v->o.focus)
		json_kv_str(j, "focus", v->o.focus);
	if (v->o.ignore && *v->o.ignore)
		json_kv_str(j, "ignore", v->o.ignore);
	json_kv_int(j, "total", v->total);
}

static void json_rows(const struct rep_view *v, struct json *j)
{
	int64_t sum = 0;

	json_kv_int(j, "shown", shown_flat(v));
	json_kv_uint(j, "nodes", v->orig_count);
	json_kv_uint(j, "dropped_nodes", v->dropped_nodes);
	json_key(j, "rows");
	json_arr_open(j);
	for (size_t i = 0; i < v->norder; i++) {
		const struct rep_row *r = &v->rows[i];
		sum += r->flat;
		json_obj_open(j);
		json_kv_str(j, "name", r->name);
		json_kv_int(j, "flat", r->flat);
		json_kv_double(j, "flat_pct", pct_of(r->flat, v->total), 2);
		json_kv_double(j, "sum_pct", pct_of(sum, v->total), 2);
		json_kv_int(j, "cum", r->cum);
		json_kv_double(j, "cum_pct", pct_of(r->cum, v->total), 2);
		if (*r->inline_label)
			json_kv_str(j, "inline", !strcmp(r->inline_label, "(inline)") ?
				    "inline" : "partial-inline");
		json_obj_close(j);
	}
	json_arr_close(j);
}

static void json_edges(const struct rep_view *v, struct json *j, const char *key,
		       const uint32_t *idx, size_t n, bool callers, int64_t cum)
{
	json_key(j, key);
	json_arr_open(j);
	for (size_t k = 0; k < n; k++) {
		const struct redge *e = &v->edges[idx[k]];
		json_obj_open(j);
		json_kv_str(j, "name", v->nodes[callers ? e->src : e->dst].pname);
		json_kv_int(j, "value", e->w);
		json_kv_double(j, "pct", pct_of(e->w, cum), 2);
		json_kv_bool(j, "inline", e->inl);
		json_obj_close(j);
	}
	json_arr_close(j);
}

static void json_tree(const struct rep_view *v, struct json *j)
{
	int64_t sum = 0;

	json_kv_int(j, "shown", shown_flat(v));
	json_kv_uint(j, "dropped_nodes", v->dropped_nodes);
	json_key(j, "nodes");
	json_arr_open(j);
	for (size_t i = 0; i < v->norder; i++) {
		if (v->matched && !v->matched[i])
			continue;
		const struct rnode *n = &v->nodes[v->order[i]];
		const struct rlinks *l = &v->links[i];
		sum += n->flat;
		json_obj_open(j);
		json_kv_str(j, "name", n->pname);
		json_kv_int(j, "flat", n->flat);
		json_kv_double(j, "flat_pct", pct_of(n->flat, v->total), 2);
		json_kv_double(j, "sum_pct", pct_of(sum, v->total), 2);
		json_kv_int(j, "cum", n->cum);
		json_kv_double(j, "cum_pct", pct_of(n->cum, v->total), 2);
		json_edges(v, j, "callers", l->in, l->nin, true, n->cum);
		json_edges(v, j, "callees", l->out, l->nout, false, n->cum);
		json_obj_close(j);
	}
	json_arr_close(j);
}

static void json_list(const struct rep_view *v, struct json *j)
{
	json_key(j, "routines");
	json_arr_open(j);
	for (size_t i = 0; i < v->nroutines; i++) {
		const struct rroutine *r = &v->routines[i];
		json_obj_open(j);
		json_kv_str(j, "name", r->name);
		json_kv_str(j, "file", r->file);
		json_kv_int(j, "flat", r->flat);
		json_kv_int(j, "cum", r->cum);
		json_kv_double(j, "cum_pct", pct_of(r->cum, v->total), 2);
		json_kv_bool(j, "source_found", r->found);
		json_key(j, "lines");
		json_arr_open(j);
		for (size_t k = 0; k < r->nlines; k++) {
			const struct rline *l = &r->lines[k];
			json_obj_open(j);
			json_kv_int(j, "line", l->line);
			json_kv_int(j, "flat", l->flat);
			json_kv_int(j, "cum", l->cum);
			json_kv_str(j, "text", l->text);
			json_obj_close(j);
		}
		json_arr_close(j);
		json_obj_close(j);
	}
	json_arr_close(j);
}

int rep_print_json(const struct rep_view *v, FILE *f)
{
	struct json j;

	json_begin(&j, f);
	json_obj_open(&j);
	json_header(v, &j);
	switch (v->o.kind) {
	case REP_DIFF:
		json_key(&j, "base");
		json_obj_open(&j);
		json_kv_str(&j, "file", v->o.base_name);
		json_kv_int(&j, "total", v->base_total);
		json_obj_close(&j);
		json_key(&j, "new");
		json_obj_open(&j);
		json_kv_str(&j, "file", v->o.name);
		json_kv_int(&j, "total", v->new_total);
		json_obj_close(&j);
		json_kv_int(&j, "delta", v->new_total - v->base_total);
		/* fall through */
	case REP_TOP:
		json_rows(v, &j);
		break;
	case REP_TREE:
	case REP_PEEK:
		json_tree(v, &j);
		break;
	case REP_LIST:
		json_list(v, &j);
		break;
	}
	json_obj_close(&j);
	return json_end(&j);
}
