/* fmt_collapsed.c - folded stacks writer (flamegraph.pl, inferno, speedscope) and the frame naming the flame writers share. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_collapsed.h"
#include "report.h"

void collapsed_stack_init(struct collapsed_stack *st, const struct profile *p)
{
	memset(st, 0, sizeof(*st));
	st->has_drop = rep_compile_drop_frames(p->drop_frames, &st->drop);
}

void collapsed_stack_free(struct collapsed_stack *st)
{
	if (st->has_drop)
		regfree(&st->drop);
	free(st->v);
	free(st->fdrop);
	free(st->falloc);
	free(st->lalloc);
	memset(st, 0, sizeof(*st));
}

static const char *frame_func(const struct profile *p, struct collapsed_frame f)
{
	const struct prof_location *l = &p->locs[f.loc];
	const char *name;

	if (f.line == COLLAPSED_NOLINE || f.line >= l->nlines ||
	    l->lines[f.line].function >= p->nfuncs)
		return NULL;
	name = p->funcs[l->lines[f.line].function].name;
	return name && *name ? name : NULL;
}

/* pprof matches drop_frames against names without their argument list
 * (its simplifyFunc): cut at the first '(' that does not start one of the
 * names that contain one. */
static bool drop_match(const regex_t *rx, const char *name)
{
	static const char *const reserved[] = { "(anonymous namespace)", "operator()" };
	char small[256], *buf = small;
	size_t n;
	bool m;

	if (*name == '.')
		name++;
	n = strlen(name);
	for (size_t i = 0; name[i]; i++) {
		bool skip = false;

		for (size_t r = 0; r < 2 && !skip; r++)
			if (strncmp(name + i, reserved[r], strlen(reserved[r])) == 0) {
				i += strlen(reserved[r]) - 1;
				skip = true;
			}
		if (!skip && name[i] == '(') {
			n = i;
			break;
		}
	}
	if (n >= sizeof(small) && !(buf = malloc(n + 1)))
		return false;
	memcpy(buf, name, n);
	buf[n] = '\0';
	m = regexec(rx, buf, 0, NULL, 0) == 0;
	if (buf != small)
		free(buf);
	return m;
}

static bool is_alloc(const struct profile *p, struct collapsed_frame f)
{
	const struct prof_location *l = &p->locs[f.loc];
	const char *name = frame_func(p, f);

	if (l->mapping < p->nmaps && rep_is_alloc_module(p->maps[l->mapping].file))
		return true;
	return name && rep_is_alloc_frame(name);
}

bool collapsed_loc_is_alloc(const struct profile *p, uint32_t loc)
{
	const struct prof_location *l = &p->locs[loc];
	struct collapsed_frame f = { loc, l->nlines ? l->nlines - 1 : COLLAPSED_NOLINE };

	return is_alloc(p, f);
}

/* Matching is by name, the same for every sample: remember the answers. */
static bool dropped(struct collapsed_stack *st, const struct profile *p,
		    struct collapsed_frame f)
{
	const char *name = frame_func(p, f);
	uint32_t fn;

	if (!name)
		return false;
	fn = p->locs[f.loc].lines[f.line].function;
	if (!st->fdrop[fn])
		st->fdrop[fn] = drop_match(&st->drop, name) ? 1 : 2;
	return st->fdrop[fn] == 1;
}

static bool frame_alloc(struct collapsed_stack *st, const struct profile *p,
			struct collapsed_frame f)
{
	const struct prof_location *l = &p->locs[f.loc];
	const char *name = frame_func(p, f);

	if (!st->lalloc[f.loc])
		st->lalloc[f.loc] = l->mapping < p->nmaps &&
				    rep_is_alloc_module(p->maps[l->mapping].file) ? 1 : 2;
	if (st->lalloc[f.loc] == 1)
		return true;
	if (!name)
		return false;
	uint32_t fn = l->lines[f.line].function;
	if (!st->falloc[fn])
		st->falloc[fn] = rep_is_alloc_frame(name) ? 1 : 2;
	return st->falloc[fn] == 1;
}

int collapsed_stack_fill(struct collapsed_stack *st, const struct profile *p, size_t s)
{
	const struct prof_sample *sm = &p->samples[s];
	bool found_user = false;
	size_t n;

	if (!st->lalloc) {
		st->lalloc = calloc(p->nlocs ? p->nlocs : 1, 1);
		st->fdrop = calloc(p->nfuncs ? p->nfuncs : 1, 1);
		st->falloc = calloc(p->nfuncs ? p->nfuncs : 1, 1);
		if (!st->lalloc || !st->fdrop || !st->falloc)
			return -ENOMEM;
	}
	st->n = 0;
	for (uint32_t i = sm->nlocs; i-- > 0;) {
		const struct prof_location *l = &p->locs[sm->locs[i]];
		uint32_t nl = l->nlines ? l->nlines : 1;

		for (uint32_t j = nl; j-- > 0;) {
			if (st->n == st->cap) {
				size_t cap = st->cap ? st->cap * 2 : 64;
				struct collapsed_frame *v = realloc(st->v, cap * sizeof(*v));

				if (!v)
					return -ENOMEM;
				st->v = v;
				st->cap = cap;
			}
			st->v[st->n].loc = sm->locs[i];
			st->v[st->n].line = l->nlines ? j : COLLAPSED_NOLINE;
			st->n++;
		}
	}
	/* As pprof prunes: the root-most matching frame below the first
	 * non-matching one goes, with everything leafward of it. */
	for (size_t k = 0; st->has_drop && k < st->n; k++) {
		if (!dropped(st, p, st->v[k])) {
			found_user = true;
		} else if (found_user) {
			st->n = k;
			break;
		}
	}
	/* As heapsnap's reports do: the allocator's own frames at the leaf end
	 * go (unless nothing else is left), so stacks end at malloc's caller. */
	for (n = st->n; n > 0 && frame_alloc(st, p, st->v[n - 1]); n--)
		;
	if (n > 0)
		st->n = n;
	return 0;
}

const char *collapsed_frame_name(const struct profile *p, struct collapsed_frame f,
				 char buf[COLLAPSED_NAMELEN])
{
	const struct prof_location *l = &p->locs[f.loc];
	const char *name = frame_func(p, f);

	if (name)
		return name;
	if (l->mapping < p->nmaps && p->maps[l->mapping].file && *p->maps[l->mapping].file) {
		const struct prof_mapping *m = &p->maps[l->mapping];
		const char *base = strrchr(m->file, '/');

		base = base && base[1] ? base + 1 : m->file;
		snprintf(buf, COLLAPSED_NAMELEN, "%.40s+0x%" PRIx64, base,
			 l->address - m->start + m->offset);
	} else {
		snprintf(buf, COLLAPSED_NAMELEN, "0x%" PRIx64, l->address);
	}
	return buf;
}

const char *collapsed_frame_file(const struct profile *p, struct collapsed_frame f)
{
	const struct prof_location *l = &p->locs[f.loc];
	const char *file;

	if (f.line == COLLAPSED_NOLINE || f.line >= l->nlines ||
	    l->lines[f.line].function >= p->nfuncs)
		return "";
	file = p->funcs[l->lines[f.line].function].filename;
	return file ? file : "";
}

int collapsed_check(const struct profile *p, enum prof_type type, const char *fmt,
		    char err[FMT_ERRLEN])
{
	if ((unsigned)type >= PT_NTYPES) {
		snprintf(err, FMT_ERRLEN, "invalid sample type");
		return -EINVAL;
	}
	for (size_t i = 0; i < p->nsamples; i++)
		if (p->samples[i].v[type] < 0) {
			snprintf(err, FMT_ERRLEN,
				 "%s cannot show negative values (a diff): %s is %" PRId64 " in sample %zu",
				 fmt, prof_type_name(type), p->samples[i].v[type], i + 1);
			return -EINVAL;
		}
	return 0;
}

size_t collapsed_utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	uint32_t cp;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return h;
}

static int strmap_rehash(struct collapsed_strmap *m, size_t nslots)
{
	uint32_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++) {
		const char *k = m->strs[i];
		size_t h = fnv1a(k + sizeof(size_t), *(const size_t *)k) & (nslots - 1);

		while (slots[h])
			h = (h + 1) & (nslots - 1);
		slots[h] = (uint32_t)i + 1;
	}
	free(m->slots);
	m->slots = slots;
	m->nslots = nslots;
	return 0;
}

/* Keys are stored as a size_t length followed by the bytes and a NUL. */
int64_t collapsed_strmap_add(struct collapsed_strmap *m, const char *key, size_t len)
{
	size_t h;
	char *k;

	if (m->n >= UINT32_MAX - 1)
		return -ENOMEM;
	if ((m->n + 1) * 2 > m->nslots && strmap_rehash(m, m->nslots ? m->nslots * 2 : 256))
		return -ENOMEM;
	h = fnv1a(key, len) & (m->nslots - 1);
	for (; m->slots[h]; h = (h + 1) & (m->nslots - 1)) {
		const char *s = m->strs[m->slots[h] - 1];

		if (*(const size_t *)s == len && memcmp(s + sizeof(size_t), key, len) == 0)
			return m->slots[h] - 1;
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		char **strs = realloc(m->strs, cap * sizeof(*strs));

		if (!strs)
			return -ENOMEM;
		m->strs = strs;
		m->cap = cap;
	}
	k = malloc(sizeof(size_t) + len + 1);
	if (!k)
		return -ENOMEM;
	memcpy(k, &len, sizeof(size_t));
	memcpy(k + sizeof(size_t), key, len);
	k[sizeof(size_t) + len] = '\0';
	m->strs[m->n] = k;
	m->slots[h] = (uint32_t)m->n + 1;
	return (int64_t)m->n++;
}

void collapsed_strmap_free(struct collapsed_strmap *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->strs[i]);
	free(m->strs);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* ---- folded stacks ------------------------------------------------------ */

struct buf {
	char *s;
	size_t n, cap;
};

static int buf_put(struct buf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *ns;

		while (cap < b->n + n + 1)
			cap *= 2;
		ns = realloc(b->s, cap);
		if (!ns)
			return -ENOMEM;
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = '\0';
	return 0;
}

/* ';' separates frames and '\n' lines: percent-encode them (and '%', so the
 * encoding can be undone). */
static int put_escaped(struct buf *b, const char *s)
{
	for (const char *q = s; *q; q++) {
		const char *esc = NULL;

		switch (*q) {
		case ';': esc = "%3B"; break;
		case '\n': esc = "%0A"; break;
		case '\r': esc = "%0D"; break;
		case '%': esc = "%25"; break;
		}
		if (esc ? buf_put(b, esc, 3) : buf_put(b, q, 1))
			return -ENOMEM;
	}
	return 0;
}

struct folded {
	size_t off;       /* into the line buffer */
	int64_t v;
};

static int folded_cmp(const void *a, const void *b, void *base)
{
	const struct folded *x = a, *y = b;

	return strcmp((const char *)base + x->off, (const char *)base + y->off);
}

int collapsed_write(const struct profile *p, FILE *out, enum prof_type type,
		    char err[FMT_ERRLEN])
{
	struct collapsed_stack st;
	struct buf b = { 0 };
	struct folded *lines = NULL;
	size_t nlines = 0;
	int rc;

	rc = collapsed_check(p, type, "folded stacks", err);
	if (rc)
		return rc;
	lines = calloc(p->nsamples ? p->nsamples : 1, sizeof(*lines));
	if (!lines)
		goto nomem;
	collapsed_stack_init(&st, p);
	for (size_t i = 0; i < p->nsamples; i++) {
		char name[COLLAPSED_NAMELEN];

		if (p->samples[i].v[type] == 0)
			continue;
		if (collapsed_stack_fill(&st, p, i))
			goto nomem_st;
		lines[nlines].off = b.n;
		lines[nlines].v = p->samples[i].v[type];
		for (size_t k = 0; k < st.n; k++)
			if ((k && buf_put(&b, ";", 1)) ||
			    put_escaped(&b, collapsed_frame_name(p, st.v[k], name)))
				goto nomem_st;
		if (st.n == 0 && buf_put(&b, "[unknown]", 9))
			goto nomem_st;
		if (buf_put(&b, "", 1))   /* keep the NUL: lines live in one buffer */
			goto nomem_st;
		nlines++;
	}
	collapsed_stack_free(&st);

	/* Sorted and merged: equal stacks (after dropping frames or from
	 * different mappings of one name) become one line, as flamegraph.pl
	 * expects, and the output does not depend on sample order. */
	if (nlines)
		qsort_r(lines, nlines, sizeof(*lines), folded_cmp, b.s);
	for (size_t i = 0; i < nlines;) {
		int64_t v = lines[i].v;
		size_t j = i + 1;

		for (; j < nlines && strcmp(b.s + lines[i].off, b.s + lines[j].off) == 0; j++)
			if (__builtin_add_overflow(v, lines[j].v, &v)) {
				snprintf(err, FMT_ERRLEN, "values too large to sum");
				rc = -ERANGE;
				goto out;
			}
		fprintf(out, "%s %" PRId64 "\n", b.s + lines[i].off, v);
		i = j;
	}
	if (ferror(out)) {
		snprintf(err, FMT_ERRLEN, "write error");
		rc = -EIO;
	}
out:
	free(lines);
	free(b.s);
	return rc;
nomem_st:
	collapsed_stack_free(&st);
nomem:
	free(lines);
	free(b.s);
	snprintf(err, FMT_ERRLEN, "out of memory");
	return -ENOMEM;
}
