/* fmt_jeprof.c - jemalloc heap_v2 text (what prof.dump and jeprof use): reader, writer, shared helpers. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_jeprof.h"
#include "report.h"

int jeprof_set_drop_frames(struct profile *p, const char *extra, char err[FMT_ERRLEN])
{
	const char *re = rep_drop_frames_regex();
	char *both = NULL;

	if (!re && !extra)
		return 0;
	if (re && extra && asprintf(&both, "%s|%s", re, extra) < 0)
		both = NULL;
	p->drop_frames = prof_intern(p, re && extra ? both : re ? re : extra);
	free(both);
	if (!p->drop_frames || (re && extra && !both)) {
		snprintf(err, FMT_ERRLEN, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

void jeprof_lines_init(struct jeprof_lines *c, const void *buf, size_t len)
{
	c->p = buf;
	c->end = c->p + len;
	c->lineno = 0;
}

bool jeprof_next_line(struct jeprof_lines *c, const char **s, const char **e)
{
	const char *nl;

	if (c->p >= c->end)
		return false;
	nl = memchr(c->p, '\n', c->end - c->p);
	*s = c->p;
	*e = nl ? nl : c->end;
	c->p = nl ? nl + 1 : c->end;
	while (*e > *s && (*e)[-1] == '\r')
		(*e)--;
	c->lineno++;
	return true;
}

bool jeprof_header_line(struct jeprof_lines *c, const char **s, const char **e)
{
	while (jeprof_next_line(c, s, e))
		if (jeprof_skip_ws(*s, *e) != *e)
			return true;
	if (c->lineno == 0)
		c->lineno = 1;
	return false;
}

const char *jeprof_skip_ws(const char *s, const char *e)
{
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	return s;
}

int jeprof_parse_dec(const char **s, const char *e, uint64_t *out)
{
	const char *q = *s;
	uint64_t v = 0;

	if (q >= e || *q < '0' || *q > '9')
		return -EINVAL;
	for (; q < e && *q >= '0' && *q <= '9'; q++) {
		if (v > (UINT64_MAX - (uint64_t)(*q - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*q - '0');
	}
	*s = q;
	*out = v;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int jeprof_parse_hex(const char **s, const char *e, uint64_t *out)
{
	const char *q = *s;
	uint64_t v = 0;
	int d;

	if (e - q >= 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
		q += 2;
	if (q >= e || hexval(*q) < 0)
		return -EINVAL;
	for (; q < e && (d = hexval(*q)) >= 0; q++) {
		if (v >> 60)
			return -ERANGE;
		v = v << 4 | (uint64_t)d;
	}
	*s = q;
	*out = v;
	return 0;
}

static bool expect_char(const char **s, const char *e, char c)
{
	*s = jeprof_skip_ws(*s, e);
	if (*s < e && **s == c) {
		(*s)++;
		return true;
	}
	return false;
}

int jeprof_parse_counts(const char **s, const char *e, size_t lineno,
			uint64_t n[4], char err[FMT_ERRLEN])
{
	static const char *const what[4] = {
		"object count", "byte count", "cumulative object count",
		"cumulative byte count"
	};
	const char *q = *s;

	for (int i = 0; i < 4; i++) {
		int rc;

		if (i == 2 && !expect_char(&q, e, '[')) {
			snprintf(err, FMT_ERRLEN, "line %zu: expected '[' before the cumulative counts", lineno);
			return -EINVAL;
		}
		q = jeprof_skip_ws(q, e);
		if (q < e && *q == '-') {
			snprintf(err, FMT_ERRLEN, "line %zu: negative %s", lineno, what[i]);
			return -EINVAL;
		}
		rc = jeprof_parse_dec(&q, e, &n[i]);
		if (rc == 0 && n[i] > INT64_MAX)
			rc = -ERANGE;
		if (rc == -ERANGE) {
			snprintf(err, FMT_ERRLEN, "line %zu: %s out of range", lineno, what[i]);
			return -EINVAL;
		}
		if (rc) {
			snprintf(err, FMT_ERRLEN, "line %zu: expected %s", lineno, what[i]);
			return -EINVAL;
		}
		if ((i == 0 || i == 2) && !expect_char(&q, e, ':')) {
			snprintf(err, FMT_ERRLEN, "line %zu: expected ':' after the %s", lineno, what[i]);
			return -EINVAL;
		}
	}
	if (!expect_char(&q, e, ']')) {
		snprintf(err, FMT_ERRLEN, "line %zu: expected ']' after the cumulative counts", lineno);
		return -EINVAL;
	}
	*s = q;
	return 0;
}

static bool is_map_marker(const char *s, const char *e)
{
	static const char m1[] = "MAPPED_LIBRARIES:", m2[] = "--- Memory map:";

	s = jeprof_skip_ws(s, e);
	return ((size_t)(e - s) >= sizeof(m1) - 1 && memcmp(s, m1, sizeof(m1) - 1) == 0) ||
	       ((size_t)(e - s) >= sizeof(m2) - 1 && memcmp(s, m2, sizeof(m2) - 1) == 0);
}

int jeprof_read_maps(struct profile *p, const char *buf, size_t len,
		     size_t *body_len, char err[FMT_ERRLEN])
{
	struct jeprof_lines c;
	const char *s, *e;
	int rc;

	jeprof_lines_init(&c, buf, len);
	while (jeprof_next_line(&c, &s, &e)) {
		if (!is_map_marker(s, e))
			continue;
		size_t bad = 0;

		const char *nul = memchr(c.p, '\0', (size_t)(c.end - c.p));

		*body_len = (size_t)(s - buf);
		/* /proc/PID/maps has no NUL bytes, and the text is kept as a C
		 * string: one would cut it short when written out again. */
		if (nul) {
			struct jeprof_lines m;
			const char *ms, *me;

			jeprof_lines_init(&m, c.p, (size_t)(nul - c.p) + 1);
			while (jeprof_next_line(&m, &ms, &me))
				;
			snprintf(err, FMT_ERRLEN, "line %zu: NUL byte in the memory map",
				 c.lineno + m.lineno);
			return -EINVAL;
		}
		rc = prof_parse_maps_ex(p, c.p, (size_t)(c.end - c.p), &bad);
		if (rc == -ENOMEM) {
			snprintf(err, FMT_ERRLEN, "out of memory");
			return rc;
		}
		if (rc) {
			snprintf(err, FMT_ERRLEN, "line %zu: malformed memory map line",
				 c.lineno + bad);
			return -EINVAL;
		}
		return 0;
	}
	*body_len = len;
	return 0;
}

int jeprof_unbias(uint64_t objs, uint64_t bytes, int64_t period,
		  int64_t *est_objs, int64_t *est_bytes)
{
	double p, o, b;

	if (objs > INT64_MAX || bytes > INT64_MAX)
		return -ERANGE;
	/* Degenerate pairs carry no size to correct by: keep them as they are
	 * (jeprof divides by zero on them, Go zeroes them). */
	if (period <= 1 || objs == 0 || bytes == 0) {
		*est_objs = (int64_t)objs;
		*est_bytes = (int64_t)bytes;
		return 0;
	}
	p = prof_sample_prob((double)bytes / (double)objs, (double)period);
	if (!(p > 0 && p <= 1))
		return -ERANGE;
	o = round((double)objs / p);
	b = round((double)bytes / p);
	/* 2^63 is the first double past INT64_MAX. */
	if (!(o < 9223372036854775808.0 && b < 9223372036854775808.0))
		return -ERANGE;
	*est_objs = (int64_t)o;
	*est_bytes = (int64_t)b;
	return 0;
}

/* The raw pair (c, s) near (c0, s0) that jeprof_unbias turns into exactly
 * (objs, bytes), if there is one: for a fixed c the estimated bytes grow
 * with s (the objects shrink), so s is found by bisection. */
static bool raw_exact(int64_t objs, int64_t bytes, int64_t period, int64_t c0, int64_t s0,
		      int64_t *rc, int64_t *rs)
{
	int64_t last = c0 < INT64_MAX ? c0 + 1 : c0;

	for (int64_t c = c0 > 1 ? c0 - 1 : 1; c <= last; c++) {
		uint64_t lo = 1, hi = s0 < INT64_MAX / 2 ? (uint64_t)s0 * 2 + 2 : INT64_MAX;
		int64_t eo, eb;

		while (lo < hi) {
			uint64_t mid = lo + (hi - lo) / 2;

			if (jeprof_unbias((uint64_t)c, mid, period, &eo, &eb) || eb >= bytes)
				hi = mid;
			else
				lo = mid + 1;
		}
		/* For objects much smaller than the period the bytes estimate
		 * hardly moves with s (about cT + s/2): several s give the
		 * same one and the objects estimate picks among them. */
		for (uint64_t s = lo; s < lo + 64 && s <= INT64_MAX; s++) {
			if (jeprof_unbias((uint64_t)c, s, period, &eo, &eb) || eb != bytes)
				break;
			if (eo == objs) {
				*rc = c;
				*rs = (int64_t)s;
				return true;
			}
		}
		if (c == INT64_MAX)
			break;
	}
	return false;
}

/* round(v * p) for 0 < p <= 1, never past v. */
static int64_t scale_down(int64_t v, double p)
{
	double r = round((double)v * p);

	return r < (double)v ? (int64_t)r : v;
}

/* Raw counts for (objs, bytes) by the correction for objects of `size`
 * bytes (0: the pair's average), and how far reading them back lands from
 * (objs, bytes); -ERANGE when they would not read back at all. */
static int raw_with(int64_t objs, int64_t bytes, double size, int64_t period,
		    int64_t *raw_objs, int64_t *raw_bytes, double *dev)
{
	int64_t eo, eb;
	double p;

	if (size <= 0)
		size = (double)bytes / (double)objs;
	p = prof_sample_prob(size, (double)period);
	if (!(p > 0 && p <= 1))
		p = 1;
	*raw_objs = scale_down(objs, p);
	*raw_bytes = scale_down(bytes, p);
	/* The size (a rounded average, or the estimates' own ratio) is close
	 * but not always exact: prefer a pair that reads back unchanged.
	 * (Rounding makes some pairs indistinguishable: any of them will do.) */
	if (*raw_objs > 0 && *raw_bytes > 0 &&
	    (jeprof_unbias((uint64_t)*raw_objs, (uint64_t)*raw_bytes, period, &eo, &eb) ||
	     eo != objs || eb != bytes))
		raw_exact(objs, bytes, period, *raw_objs, *raw_bytes, raw_objs, raw_bytes);
	if (jeprof_unbias((uint64_t)*raw_objs, (uint64_t)*raw_bytes, period, &eo, &eb))
		return -ERANGE;
	*dev = fabs((double)eo - (double)objs) + fabs((double)eb - (double)bytes);
	return 0;
}

int jeprof_raw_counts(int64_t objs, int64_t bytes, double size, int64_t period,
		      int64_t *raw_objs, int64_t *raw_bytes)
{
	int64_t ro, rb;
	double dev, best = -1;

	if (period <= 1 || objs <= 0 || bytes <= 0) {
		*raw_objs = objs;
		*raw_bytes = bytes;
		return 0;
	}
	/* The object size first (it survives the estimates' rounding), then
	 * the average (when the label does not fit this pair). */
	for (int k = size > 0 ? 0 : 1; k < 2 && best != 0; k++) {
		if (raw_with(objs, bytes, k == 0 ? size : 0, period, &ro, &rb, &dev) ||
		    (best >= 0 && dev >= best))
			continue;
		best = dev;
		*raw_objs = ro;
		*raw_bytes = rb;
	}
	return best >= 0 ? 0 : -ERANGE;
}

int jeprof_raw_samples(const struct profile *p, int64_t period, const char *fmt,
		       int64_t (**rawp)[4], int64_t tot[4], char err[FMT_ERRLEN])
{
	int64_t (*raw)[4];

	memset(tot, 0, 4 * sizeof(tot[0]));
	raw = calloc(p->nsamples ? p->nsamples : 1, sizeof(*raw));
	if (!raw) {
		snprintf(err, FMT_ERRLEN, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *sm = &p->samples[i];
		double size = jeprof_sample_size(p, i);

		if (jeprof_raw_counts(sm->v[PT_INUSE_OBJECTS], sm->v[PT_INUSE_SPACE], size,
				      period, &raw[i][0], &raw[i][1]) ||
		    (p->has_alloc &&
		     jeprof_raw_counts(sm->v[PT_ALLOC_OBJECTS], sm->v[PT_ALLOC_SPACE], size,
				       period, &raw[i][2], &raw[i][3]))) {
			snprintf(err, FMT_ERRLEN,
				 "sample %zu: values too large for the %s format at sampling period %" PRId64,
				 i + 1, fmt, period);
			free(raw);
			return -ERANGE;
		}
		for (int k = 0; k < 4; k++)
			if (__builtin_add_overflow(tot[k], raw[i][k], &tot[k])) {
				snprintf(err, FMT_ERRLEN, "totals too large for the %s format", fmt);
				free(raw);
				return -ERANGE;
			}
	}
	*rawp = raw;
	return 0;
}

int jeprof_check_writable(const struct profile *p, const char *fmt,
			  char err[FMT_ERRLEN])
{
	for (size_t i = 0; i < p->nsamples; i++)
		for (int t = 0; t < PT_NTYPES; t++)
			if (p->samples[i].v[t] < 0) {
				snprintf(err, FMT_ERRLEN,
					 "%s format cannot hold negative values (a diff): %s is %" PRId64 " in sample %zu",
					 fmt, prof_type_name(t), p->samples[i].v[t], i + 1);
				return -EINVAL;
			}
	return 0;
}

uint64_t jeprof_file_addr(uint64_t pc, bool caller)
{
	return caller && pc != UINT64_MAX ? pc + 1 : pc;
}

uint64_t jeprof_lookup_pc(uint64_t addr, bool caller)
{
	return caller && addr != 0 ? addr - 1 : addr;
}

void jeprof_write_maps(const struct profile *p, FILE *out)
{
	fputs("MAPPED_LIBRARIES:\n", out);
	if (p->maps_text && *p->maps_text) {
		size_t n = strlen(p->maps_text);

		fwrite(p->maps_text, 1, n, out);
		if (p->maps_text[n - 1] != '\n')
			fputc('\n', out);
		return;
	}
	for (size_t i = 0; i < p->nmaps; i++) {
		const struct prof_mapping *m = &p->maps[i];

		/* Only what a maps line can say (and prof_parse_maps reads). */
		if (!m->file || m->file[0] != '/' || m->limit <= m->start)
			continue;
		fprintf(out, "%08" PRIx64 "-%08" PRIx64 " r-xp %08" PRIx64 " 00:00 0          ",
			m->start, m->limit, m->offset);
		/* As the kernel writes a newline in a path: octal. */
		for (const char *q = m->file; *q; q++)
			if (*q == '\n' || *q == '\r')
				fprintf(out, "\\%03o", (unsigned char)*q);
			else
				fputc(*q, out);
		fputc('\n', out);
	}
}

double jeprof_sample_size(const struct profile *p, size_t s)
{
	int64_t v;

	if (prof_get_num_label(p, s, "bytes", &v) == 0 && v > 0)
		return (double)v;
	return 0;
}

/* ---- heap_v2 ------------------------------------------------------------ */

static int stack_push(struct jeprof_stack *a, uint32_t x)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		uint32_t *v = realloc(a->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = x;
	return 0;
}

int jeprof_read_stack(struct profile *p, const char *s, const char *e, size_t lineno,
		      bool all_callers, struct jeprof_stack *locs, char err[FMT_ERRLEN])
{
	locs->n = 0;
	for (;;) {
		const char *start;
		uint64_t addr;
		int64_t idx;
		int rc;

		s = jeprof_skip_ws(s, e);
		if (s == e)
			break;
		start = s;
		rc = jeprof_parse_hex(&s, e, &addr);
		if (rc == 0 && s < e && *s != ' ' && *s != '\t')
			rc = -EINVAL;
		if (rc) {
			snprintf(err, FMT_ERRLEN, "line %zu: %s '%.*s'", lineno,
				 rc == -ERANGE ? "address out of range:" : "expected a hex address, got",
				 (int)(e - start > 24 ? 24 : e - start), start);
			return -EINVAL;
		}
		idx = prof_add_location(p, jeprof_lookup_pc(addr, all_callers || locs->n > 0), PROF_NONE);
		if (idx < 0 || stack_push(locs, (uint32_t)idx)) {
			snprintf(err, FMT_ERRLEN, "out of memory");
			return -ENOMEM;
		}
	}
	if (locs->n == 0) {
		snprintf(err, FMT_ERRLEN, "line %zu: no addresses after '@'", lineno);
		return -EINVAL;
	}
	return 0;
}

static int add_sample(struct profile *p, const struct jeprof_stack *locs,
		      const int64_t v[PT_NTYPES], uint64_t size)
{
	int64_t idx;

	if (!v[0] && !v[1] && !v[2] && !v[3])
		return 0;
	idx = prof_add_sample(p, locs->v, (uint32_t)locs->n, v, NULL, 0);
	if (idx < 0)
		return -ENOMEM;
	if (size && size <= INT64_MAX &&
	    prof_add_num_label(p, (size_t)idx, "bytes", (int64_t)size, "bytes"))
		return -ENOMEM;
	return 0;
}

int jeprof_add_block(struct profile *p, const struct jeprof_stack *locs, const uint64_t n[4],
		     int64_t period, size_t lineno, char err[FMT_ERRLEN])
{
	int64_t v[PT_NTYPES];
	/* The average size, rounded (what Go pprof puts in its "bytes"
	 * label): writers need it to turn estimates back into these raw
	 * counts, which the estimates alone, rounded, cannot give exactly. */
	/* (n[] <= INT64_MAX: the sums cannot wrap) */
	uint64_t in = n[0] ? (n[1] + n[0] / 2) / n[0] : 0;
	uint64_t acc = n[2] ? (n[3] + n[2] / 2) / n[2] : 0;
	int rc;

	if (jeprof_unbias(n[0], n[1], period, &v[PT_INUSE_OBJECTS], &v[PT_INUSE_SPACE]) ||
	    jeprof_unbias(n[2], n[3], period, &v[PT_ALLOC_OBJECTS], &v[PT_ALLOC_SPACE])) {
		snprintf(err, FMT_ERRLEN, "line %zu: counts out of range after unbiasing", lineno);
		return -EINVAL;
	}
	if (n[0] && n[2] && in != acc) {
		/* Two sizes, one label each: the same stack as two samples,
		 * one with the live counts, one with the cumulative ones. */
		int64_t va[PT_NTYPES] = { v[PT_ALLOC_OBJECTS], v[PT_ALLOC_SPACE], 0, 0 };

		v[PT_ALLOC_OBJECTS] = v[PT_ALLOC_SPACE] = 0;
		rc = add_sample(p, locs, v, in);
		if (rc == 0)
			rc = add_sample(p, locs, va, acc);
	} else {
		rc = add_sample(p, locs, v, in ? in : acc);
	}
	if (rc) {
		snprintf(err, FMT_ERRLEN, "out of memory");
		return rc;
	}
	return 0;
}

static int parse_header(const char *s, const char *e, size_t lineno, int64_t *period,
			char err[FMT_ERRLEN])
{
	static const char magic[] = "heap_v2/";
	uint64_t v;
	int rc;

	s = jeprof_skip_ws(s, e);
	if ((size_t)(e - s) < sizeof(magic) - 1 || memcmp(s, magic, sizeof(magic) - 1)) {
		snprintf(err, FMT_ERRLEN, "line %zu: expected 'heap_v2/<sampling period>' header", lineno);
		return -EINVAL;
	}
	s += sizeof(magic) - 1;
	rc = jeprof_parse_dec(&s, e, &v);
	if (rc || v == 0 || v > INT64_MAX || jeprof_skip_ws(s, e) != e) {
		snprintf(err, FMT_ERRLEN, "line %zu: bad sampling period in 'heap_v2/<period>' header", lineno);
		return -EINVAL;
	}
	*period = (int64_t)v;
	return 0;
}

int jeprof_read(const void *buf, size_t len, struct profile **out, char err[FMT_ERRLEN])
{
	struct jeprof_stack locs = { 0 };
	struct jeprof_lines c;
	struct profile *p;
	const char *s, *e;
	size_t body_len, stack_line = 0;
	bool in_stack = false, stack_counted = false, accum = false;
	int64_t period;
	int rc;

	*out = NULL;
	if (len == 0) {
		snprintf(err, FMT_ERRLEN, "empty file");
		return -EINVAL;
	}
	p = prof_new();
	if (!p) {
		snprintf(err, FMT_ERRLEN, "out of memory");
		return -ENOMEM;
	}
	rc = jeprof_read_maps(p, buf, len, &body_len, err);
	if (rc)
		goto fail;
	jeprof_lines_init(&c, buf, body_len);
	if (!jeprof_header_line(&c, &s, &e))
		s = e = buf;
	rc = parse_header(s, e, c.lineno, &period, err);
	if (rc)
		goto fail;

	while (jeprof_next_line(&c, &s, &e)) {
		uint64_t n[4];

		s = jeprof_skip_ws(s, e);
		if (s == e)
			continue;
		if (*s == '@') {
			if (in_stack && !stack_counted) {
				snprintf(err, FMT_ERRLEN, "line %zu: stack without a 't*:' count line", stack_line);
				rc = -EINVAL;
				goto fail;
			}
			rc = jeprof_read_stack(p, s + 1, e, c.lineno, false, &locs, err);
			if (rc)
				goto fail;
			in_stack = true;
			stack_counted = false;
			stack_line = c.lineno;
			continue;
		}
		if (*s != 't' || e - s < 2 || (s[1] != '*' && (s[1] < '0' || s[1] > '9'))) {
			snprintf(err, FMT_ERRLEN, in_stack ?
				 "line %zu: expected '@' and stack addresses or a 't<thread>:' count line" :
				 "line %zu: expected '@' before stack addresses", c.lineno);
			rc = -EINVAL;
			goto fail;
		}
		bool all = s[1] == '*';
		s++;
		if (all) {
			s++;
		} else {
			uint64_t tid;

			if (jeprof_parse_dec(&s, e, &tid)) {
				snprintf(err, FMT_ERRLEN, "line %zu: bad thread number", c.lineno);
				rc = -EINVAL;
				goto fail;
			}
		}
		if (!expect_char(&s, e, ':')) {
			snprintf(err, FMT_ERRLEN, "line %zu: expected ':' after the thread", c.lineno);
			rc = -EINVAL;
			goto fail;
		}
		rc = jeprof_parse_counts(&s, e, c.lineno, n, err);
		if (rc)
			goto fail;
		if (jeprof_skip_ws(s, e) != e) {
			snprintf(err, FMT_ERRLEN, "line %zu: unexpected text after ']'", c.lineno);
			rc = -EINVAL;
			goto fail;
		}
		if (n[2] || n[3])
			accum = true;
		/* Count lines before the first stack are the whole-profile totals,
		 * per-thread lines repeat what t* sums up: both only checked. */
		if (!in_stack || !all)
			continue;
		stack_counted = true;
		rc = jeprof_add_block(p, &locs, n, period, c.lineno, err);
		if (rc)
			goto fail;
	}
	if (in_stack && !stack_counted) {
		snprintf(err, FMT_ERRLEN, "line %zu: stack without a 't*:' count line (truncated file?)",
			 stack_line);
		rc = -EINVAL;
		goto fail;
	}
	p->period = period;
	p->has_alloc = accum;
	/* jemalloc's stacks start inside libjemalloc (prof_backtrace and the
	 * functions malloc tail-calls, so there is no malloc frame); stripped,
	 * they are symbolized as "libjemalloc.so.2+0x...", which the entry
	 * point names cannot match. */
	rc = jeprof_set_drop_frames(p, "libjemalloc[^+]*\\+0x[0-9a-f]+", err);
	if (rc)
		goto fail;
	free(locs.v);
	*out = p;
	return 0;
fail:
	free(locs.v);
	prof_free(p);
	return rc;
}

int jeprof_write(const struct profile *p, FILE *out, char err[FMT_ERRLEN])
{
	int64_t period = p->period > 1 ? p->period : 1;
	int64_t tot[4], (*raw)[4];
	int rc;

	rc = jeprof_check_writable(p, "jeprof", err);
	if (rc)
		return rc;
	rc = jeprof_raw_samples(p, period, "jeprof", &raw, tot, err);
	if (rc)
		return rc;

	fprintf(out, "heap_v2/%" PRId64 "\n", period);
	fprintf(out, "  t*: %" PRId64 ": %" PRId64 " [%" PRId64 ": %" PRId64 "]\n",
		tot[0], tot[1], tot[2], tot[3]);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *sm = &p->samples[i];

		if (!raw[i][0] && !raw[i][1] && !raw[i][2] && !raw[i][3])
			continue;
		fputc('@', out);
		for (uint32_t j = 0; j < sm->nlocs; j++)
			fprintf(out, " 0x%" PRIx64,
				jeprof_file_addr(p->locs[sm->locs[j]].address, j > 0));
		if (sm->nlocs == 0)
			fputs(" 0x0", out);
		fprintf(out, "\n  t*: %" PRId64 ": %" PRId64 " [%" PRId64 ": %" PRId64 "]\n",
			raw[i][0], raw[i][1], raw[i][2], raw[i][3]);
	}
	free(raw);
	fputc('\n', out);
	jeprof_write_maps(p, out);
	if (ferror(out)) {
		snprintf(err, FMT_ERRLEN, "write error");
		return -EIO;
	}
	return 0;
}
