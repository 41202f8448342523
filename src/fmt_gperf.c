/* fmt_gperf.c - gperftools legacy "heap profile:" text (HEAPPROFILE dumps, google-pprof): reader and writer. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_collapsed.h"
#include "fmt_jeprof.h"

static bool skip_word(const char **s, const char *e, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(e - *s) < n || memcmp(*s, w, n))
		return false;
	*s += n;
	return true;
}

/* "@ heapprofile" (exact), "@ heap_v2/N" (sampled, mean N), "@ heap/N" (old
 * sampler; Go pprof takes it as v2 with N/2). */
static int parse_sampling(const char *s, const char *e, size_t lineno, int64_t *period,
			  char err[FMT_ERRLEN])
{
	uint64_t v;
	bool half = false;

	s = jeprof_skip_ws(s, e);
	if (skip_word(&s, e, "heapprofile")) {
		*period = 1;
	} else if (skip_word(&s, e, "heap_v2/") || skip_word(&s, e, "heapz_v2/") ||
		   (half = skip_word(&s, e, "heap/"))) {
		if (jeprof_parse_dec(&s, e, &v) || v == 0 || v > INT64_MAX) {
			snprintf(err, FMT_ERRLEN, "line %zu: bad sampling period in the header", lineno);
			return -EINVAL;
		}
		*period = half ? (int64_t)(v / 2) : (int64_t)v;
		if (*period < 1)
			*period = 1;
	} else {
		snprintf(err, FMT_ERRLEN,
			 "line %zu: expected 'heapprofile', 'heap_v2/N' or 'heap/N' after '@'", lineno);
		return -EINVAL;
	}
	if (jeprof_skip_ws(s, e) != e) {
		snprintf(err, FMT_ERRLEN, "line %zu: unexpected text after the sampling type", lineno);
		return -EINVAL;
	}
	return 0;
}

int gperf_read(const void *buf, size_t len, struct profile **out, char err[FMT_ERRLEN])
{
	struct jeprof_stack st = { 0 };
	struct jeprof_lines c;
	struct profile *p;
	const char *s, *e;
	size_t body_len;
	uint64_t n[4];
	int64_t period;
	bool accum;
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
	rc = -EINVAL;
	if (!jeprof_header_line(&c, &s, &e))
		s = e = buf;
	s = jeprof_skip_ws(s, e);
	if (!skip_word(&s, e, "heap profile:")) {
		snprintf(err, FMT_ERRLEN, "line %zu: expected 'heap profile:' header", c.lineno);
		goto fail;
	}
	rc = jeprof_parse_counts(&s, e, c.lineno, n, err);
	if (rc)
		goto fail;
	accum = n[2] || n[3];
	s = jeprof_skip_ws(s, e);
	if (!skip_word(&s, e, "@")) {
		snprintf(err, FMT_ERRLEN, "line %zu: expected '@' and the sampling type after the totals",
			 c.lineno);
		rc = -EINVAL;
		goto fail;
	}
	rc = parse_sampling(s, e, c.lineno, &period, err);
	if (rc)
		goto fail;

	while (jeprof_next_line(&c, &s, &e)) {
		s = jeprof_skip_ws(s, e);
		if (s == e)
			continue;
		rc = jeprof_parse_counts(&s, e, c.lineno, n, err);
		if (rc)
			goto fail;
		s = jeprof_skip_ws(s, e);
		if (s == e || *s != '@') {
			snprintf(err, FMT_ERRLEN, "line %zu: expected '@' before stack addresses", c.lineno);
			rc = -EINVAL;
			goto fail;
		}
		/* gperftools records return addresses only, the leaf included. */
		rc = jeprof_read_stack(p, s + 1, e, c.lineno, true, &st, err);
		if (rc)
			goto fail;
		if (n[2] || n[3])
			accum = true;
		rc = jeprof_add_block(p, &st, n, period, c.lineno, err);
		if (rc)
			goto fail;
	}
	p->period = period;
	p->has_alloc = accum;
	/* gperftools' stacks start at malloc's caller: the entry points do. */
	rc = jeprof_set_drop_frames(p, NULL, err);
	if (rc)
		goto fail;
	free(st.v);
	*out = p;
	return 0;
fail:
	free(st.v);
	prof_free(p);
	return rc;
}

int gperf_write(const struct profile *p, FILE *out, char err[FMT_ERRLEN])
{
	int64_t period = p->period > 1 ? p->period : 1;
	int64_t tot[4], (*raw)[4];
	int rc;

	rc = jeprof_check_writable(p, "gperf", err);
	if (rc)
		return rc;
	rc = jeprof_raw_samples(p, period, "gperf", &raw, tot, err);
	if (rc)
		return rc;

	fprintf(out, "heap profile: %6" PRId64 ": %8" PRId64 " [%6" PRId64 ": %8" PRId64 "] @ ",
		tot[0], tot[1], tot[2], tot[3]);
	if (period > 1)
		fprintf(out, "heap_v2/%" PRId64 "\n", period);
	else
		fputs("heapprofile\n", out);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *sm = &p->samples[i];

		if (!raw[i][0] && !raw[i][1] && !raw[i][2] && !raw[i][3])
			continue;
		uint32_t first = 0;

		/* gperftools' stacks start at malloc's caller and its readers
		 * expect that: leave out the allocator's frames at the leaf end
		 * (a jemalloc dump has several), unless nothing else is left. */
		while (first < sm->nlocs && collapsed_loc_is_alloc(p, sm->locs[first]))
			first++;
		if (first == sm->nlocs)
			first = 0;
		fprintf(out, "%6" PRId64 ": %8" PRId64 " [%6" PRId64 ": %8" PRId64 "] @",
			raw[i][0], raw[i][1], raw[i][2], raw[i][3]);
		for (uint32_t j = first; j < sm->nlocs; j++)
			fprintf(out, " 0x%016" PRIx64,
				jeprof_file_addr(p->locs[sm->locs[j]].address, true));
		if (sm->nlocs == 0)
			fputs(" 0x0000000000000001", out);
		fputc('\n', out);
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
