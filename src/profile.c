/* profile.c - the in-memory heap profile: interning, dedup, merge, compact, /proc maps and build-ids. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile.h"

/* ---- hashing ------------------------------------------------------------ */

static uint64_t mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/* Eight bytes per step: interning hashes every demangled C++ name a reader
 * or the symbolizer adds, and byte-wise FNV showed up in their profiles.
 * Hashes only place entries in this process's tables; nothing keeps them. */
static uint64_t hash_bytes(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *s = data;
	uint64_t h = 0xcbf29ce484222325ULL ^ seed ^ (len * 0x9e3779b97f4a7c15ULL);
	uint64_t w;

	for (; len >= 8; s += 8, len -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0x9fb21c651e98df25ULL;
		h ^= h >> 29;
	}
	w = 0;
	memcpy(&w, s, len);
	return mix64(h ^ w);
}

static uint64_t hash_add(uint64_t h, uint64_t v)
{
	return mix64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	return hash_add(h, hash_bytes(s ? s : "", s ? strlen(s) : 0, 0));
}

/*
 * An open-addressing table of element indexes.  Slots hold index + 1 (0 =
 * empty) and 32 bits of the element's hash, so growing needs no callback.
 */
struct islot {
	uint32_t idx1;
	uint32_t h;
};

struct itab {
	struct islot *slot;
	size_t cap;   /* power of two or 0 */
	size_t n;
};

static int itab_grow(struct itab *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 64;
	struct islot *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->slot[i].idx1)
			continue;
		size_t j = t->slot[i].h & (ncap - 1);
		while (ns[j].idx1)
			j = (j + 1) & (ncap - 1);
		ns[j] = t->slot[i];
	}
	free(t->slot);
	t->slot = ns;
	t->cap = ncap;
	return 0;
}

typedef bool (*itab_eq_fn)(const void *ctx, uint32_t idx, const void *key);

/* Returns the index of an element equal to key, or -1. */
static int64_t itab_find(const struct itab *t, uint32_t h, itab_eq_fn eq,
			 const void *ctx, const void *key)
{
	if (!t->cap)
		return -1;
	for (size_t j = h & (t->cap - 1);; j = (j + 1) & (t->cap - 1)) {
		const struct islot *s = &t->slot[j];
		if (!s->idx1)
			return -1;
		if (s->h == h && eq(ctx, s->idx1 - 1, key))
			return s->idx1 - 1;
	}
}

static int itab_insert(struct itab *t, uint32_t h, uint32_t idx)
{
	if ((t->n + 1) * 10 > t->cap * 7) {
		int rc = itab_grow(t);
		if (rc)
			return rc;
	}
	size_t j = h & (t->cap - 1);
	while (t->slot[j].idx1)
		j = (j + 1) & (t->cap - 1);
	t->slot[j].idx1 = idx + 1;
	t->slot[j].h = h;
	t->n++;
	return 0;
}

static void itab_free(struct itab *t)
{
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

/* ---- string table: interning into one arena ----------------------------- */

#define ARENA_CHUNK (64 * 1024)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	char data[];
};

struct sslot {
	const char *s;
	size_t len;
	uint64_t h;
};

struct prof_strtab {
	struct arena_chunk *chunks;   /* head has free space; big strings get their own */
	struct sslot *slot;
	size_t cap, n;
};

static char *arena_alloc(struct prof_strtab *st, size_t n)
{
	struct arena_chunk *c = st->chunks;

	if (n > ARENA_CHUNK / 4) {
		struct arena_chunk *big = malloc(sizeof(*big) + n);
		if (!big)
			return NULL;
		big->size = big->used = n;
		/* Keep the current chunk at the head so its space stays in use. */
		if (c) {
			big->next = c->next;
			c->next = big;
		} else {
			big->next = NULL;
			st->chunks = big;
		}
		return big->data;
	}
	if (!c || c->size - c->used < n) {
		c = malloc(sizeof(*c) + ARENA_CHUNK);
		if (!c)
			return NULL;
		c->size = ARENA_CHUNK;
		c->used = 0;
		c->next = st->chunks;
		st->chunks = c;
	}
	char *r = c->data + c->used;
	c->used += n;
	return r;
}

static void strtab_free(struct prof_strtab *st)
{
	if (!st)
		return;
	for (struct arena_chunk *c = st->chunks, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	free(st->slot);
	free(st);
}

static int strtab_grow(struct prof_strtab *st)
{
	size_t ncap = st->cap ? st->cap * 2 : 256;
	struct sslot *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < st->cap; i++) {
		if (!st->slot[i].s)
			continue;
		size_t j = st->slot[i].h & (ncap - 1);
		while (ns[j].s)
			j = (j + 1) & (ncap - 1);
		ns[j] = st->slot[i];
	}
	free(st->slot);
	st->slot = ns;
	st->cap = ncap;
	return 0;
}

const char *prof_intern_n(struct profile *p, const char *s, size_t len)
{
	struct prof_strtab *st = p->strtab;
	uint64_t h;

	if (!s) {
		s = "";
		len = 0;
	}
	h = hash_bytes(s, len, 0);
	if (st->cap) {
		for (size_t j = h & (st->cap - 1);; j = (j + 1) & (st->cap - 1)) {
			struct sslot *e = &st->slot[j];
			if (!e->s)
				break;
			if (e->h == h && e->len == len && memcmp(e->s, s, len) == 0)
				return e->s;
		}
	}
	if ((st->n + 1) * 10 > st->cap * 7 && strtab_grow(st))
		return NULL;
	char *copy = arena_alloc(st, len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, s, len);
	copy[len] = '\0';
	size_t j = h & (st->cap - 1);
	while (st->slot[j].s)
		j = (j + 1) & (st->cap - 1);
	st->slot[j].s = copy;
	st->slot[j].len = len;
	st->slot[j].h = h;
	st->n++;
	return copy;
}

const char *prof_intern(struct profile *p, const char *s)
{
	return prof_intern_n(p, s, s ? strlen(s) : 0);
}

/* ---- the profile -------------------------------------------------------- */

struct prof_priv {
	size_t cap_samples, cap_locs, cap_funcs, cap_maps, cap_comments;
	struct itab funcs;        /* dedup of functions on all four fields */
	struct itab locs;         /* dedup of locations on (address, mapping) */
	/* prof_find_mapping: mapping indexes sorted by start and the running
	 * maximum of their limits; rebuilt when nmaps changes. */
	uint32_t *msorted;
	uint64_t *mmaxlim;
	size_t msorted_n;
};

#define PRIV(p) ((struct prof_priv *)(p)->priv)

static const char *const type_names[PT_NTYPES] = {
	"alloc_objects", "alloc_space", "inuse_objects", "inuse_space",
};

const char *prof_type_name(enum prof_type t)
{
	return (unsigned)t < PT_NTYPES ? type_names[t] : "?";
}

const char *prof_type_unit(enum prof_type t)
{
	return (t == PT_ALLOC_SPACE || t == PT_INUSE_SPACE) ? "bytes" : "count";
}

int prof_type_parse(const char *name)
{
	for (int t = 0; name && t < PT_NTYPES; t++)
		if (strcmp(name, type_names[t]) == 0)
			return t;
	return -1;
}

struct profile *prof_new(void)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->strtab = calloc(1, sizeof(*p->strtab));
	p->priv = calloc(1, sizeof(struct prof_priv));
	if (!p->strtab || !p->priv) {
		free(p->strtab);
		free(p->priv);
		free(p);
		return NULL;
	}
	return p;
}

void prof_free(struct profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nsamples; i++) {
		free(p->samples[i].locs);
		free(p->samples[i].labels);
	}
	for (size_t i = 0; i < p->nlocs; i++)
		free(p->locs[i].lines);
	free(p->samples);
	free(p->locs);
	free(p->funcs);
	free(p->maps);
	free(p->comments);
	if (p->priv) {
		itab_free(&PRIV(p)->funcs);
		itab_free(&PRIV(p)->locs);
		free(PRIV(p)->msorted);
		free(PRIV(p)->mmaxlim);
		free(p->priv);
	}
	strtab_free(p->strtab);
	free(p);
}

/* Makes room for one more element in *arr (n used, *cap allocated). */
static int grow(void *arrp, size_t *cap, size_t n, size_t elem)
{
	void **arr = arrp;

	if (n < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 16;
	if (ncap > SIZE_MAX / elem || ncap > UINT32_MAX)
		return -ENOMEM;
	void *na = realloc(*arr, ncap * elem);
	if (!na)
		return -ENOMEM;
	*arr = na;
	*cap = ncap;
	return 0;
}

/* ---- mappings ----------------------------------------------------------- */

int64_t prof_add_mapping(struct profile *p, uint64_t start, uint64_t limit,
			 uint64_t offset, const char *file, const char *build_id)
{
	struct prof_priv *pv = PRIV(p);
	const char *f = prof_intern(p, file), *b = prof_intern(p, build_id);

	if (!f || !b || grow(&p->maps, &pv->cap_maps, p->nmaps, sizeof(*p->maps)))
		return -ENOMEM;
	struct prof_mapping *m = &p->maps[p->nmaps];
	memset(m, 0, sizeof(*m));
	m->start = start;
	m->limit = limit;
	m->offset = offset;
	m->file = f;
	m->build_id = b;
	return (int64_t)p->nmaps++;
}

static int msort_cmp(const void *a, const void *b, void *ctx)
{
	const struct profile *p = ctx;
	const struct prof_mapping *x = &p->maps[*(const uint32_t *)a];
	const struct prof_mapping *y = &p->maps[*(const uint32_t *)b];

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

uint32_t prof_find_mapping(const struct profile *p, uint64_t addr)
{
	struct prof_priv *pv = PRIV(p);

	/* Few mappings, or no memory for the index: a plain scan. */
	if (p->nmaps <= 8)
		goto linear;
	if (pv->msorted_n != p->nmaps) {
		uint32_t *s = realloc(pv->msorted, p->nmaps * sizeof(*s));
		if (!s)
			goto linear;
		pv->msorted = s;
		uint64_t *m = realloc(pv->mmaxlim, p->nmaps * sizeof(*m));
		if (!m)
			goto linear;
		pv->mmaxlim = m;
		for (size_t i = 0; i < p->nmaps; i++)
			s[i] = i;
		qsort_r(s, p->nmaps, sizeof(*s), msort_cmp, (void *)p);
		for (size_t i = 0; i < p->nmaps; i++) {
			uint64_t l = p->maps[s[i]].limit;
			m[i] = (i && m[i - 1] > l) ? m[i - 1] : l;
		}
		pv->msorted_n = p->nmaps;
	}
	/* Last mapping starting at or below addr, then back while a limit
	 * further left could still cover addr (overlapping mappings). */
	size_t lo = 0, hi = p->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->maps[pv->msorted[mid]].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t best = PROF_NONE;
	for (size_t i = lo; i-- > 0;) {
		if (pv->mmaxlim[i] <= addr)
			break;
		const struct prof_mapping *m = &p->maps[pv->msorted[i]];
		if (addr >= m->start && addr < m->limit &&
		    (best == PROF_NONE || pv->msorted[i] < best))
			best = pv->msorted[i];
	}
	return best;
linear:
	for (size_t i = 0; i < p->nmaps; i++)
		if (addr >= p->maps[i].start && addr < p->maps[i].limit)
			return i;
	return PROF_NONE;
}

/* ---- functions ---------------------------------------------------------- */

static uint32_t func_hash(const char *n, const char *s, const char *f, int64_t l)
{
	/* Interned: equal strings are equal pointers within one profile. */
	uint64_t h = hash_add(0, (uintptr_t)n);
	h = hash_add(h, (uintptr_t)s);
	h = hash_add(h, (uintptr_t)f);
	return (uint32_t)hash_add(h, (uint64_t)l);
}

static bool func_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct prof_function *a = &((const struct profile *)ctx)->funcs[idx];
	const struct prof_function *b = key;

	return a->name == b->name && a->system_name == b->system_name &&
	       a->filename == b->filename && a->start_line == b->start_line;
}

/* Appends f (strings already interned in p) and registers it for dedup
 * unless an equal function is already registered. */
static int64_t func_append(struct profile *p, const struct prof_function *f)
{
	struct prof_priv *pv = PRIV(p);
	uint32_t h = func_hash(f->name, f->system_name, f->filename, f->start_line);

	if (grow(&p->funcs, &pv->cap_funcs, p->nfuncs, sizeof(*p->funcs)))
		return -ENOMEM;
	p->funcs[p->nfuncs] = *f;
	if (itab_find(&pv->funcs, h, func_eq, p, f) < 0 &&
	    itab_insert(&pv->funcs, h, p->nfuncs))
		return -ENOMEM;
	return (int64_t)p->nfuncs++;
}

int64_t prof_add_function(struct profile *p, const char *name,
			  const char *system_name, const char *filename,
			  int64_t start_line)
{
	struct prof_function f = {
		.name = prof_intern(p, name),
		.system_name = prof_intern(p, system_name),
		.filename = prof_intern(p, filename),
		.start_line = start_line,
	};

	if (!f.name || !f.system_name || !f.filename)
		return -ENOMEM;
	int64_t i = itab_find(&PRIV(p)->funcs,
			      func_hash(f.name, f.system_name, f.filename, start_line),
			      func_eq, p, &f);
	if (i >= 0)
		return i;
	return func_append(p, &f);
}

/* ---- locations ---------------------------------------------------------- */

struct lockey {
	uint64_t address;
	uint32_t mapping;
};

static uint32_t loc_hash(uint64_t address, uint32_t mapping)
{
	return (uint32_t)hash_add(hash_add(0, address), mapping);
}

static bool loc_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct prof_location *a = &((const struct profile *)ctx)->locs[idx];
	const struct lockey *k = key;

	return a->address == k->address && a->mapping == k->mapping;
}

static int64_t loc_append(struct profile *p, uint64_t address, uint32_t mapping,
			  bool dedup)
{
	struct prof_priv *pv = PRIV(p);

	if (grow(&p->locs, &pv->cap_locs, p->nlocs, sizeof(*p->locs)))
		return -ENOMEM;
	struct prof_location *l = &p->locs[p->nlocs];
	memset(l, 0, sizeof(*l));
	l->address = address;
	l->mapping = mapping;
	if (dedup) {
		struct lockey k = { address, mapping };
		uint32_t h = loc_hash(address, mapping);
		if (itab_find(&pv->locs, h, loc_eq, p, &k) < 0 &&
		    itab_insert(&pv->locs, h, p->nlocs))
			return -ENOMEM;
	}
	return (int64_t)p->nlocs++;
}

int64_t prof_add_location(struct profile *p, uint64_t address, uint32_t mapping)
{
	if (mapping == PROF_NONE)
		mapping = prof_find_mapping(p, address);
	struct lockey k = { address, mapping };
	int64_t i = itab_find(&PRIV(p)->locs, loc_hash(address, mapping), loc_eq, p, &k);
	if (i >= 0)
		return i;
	return loc_append(p, address, mapping, true);
}

int64_t prof_new_location(struct profile *p, uint64_t address, uint32_t mapping)
{
	return loc_append(p, address, mapping, false);
}

int prof_set_lines(struct profile *p, uint32_t loc, const struct prof_line *lines,
		   uint32_t n)
{
	struct prof_line *nl = NULL;

	if (loc >= p->nlocs)
		return -EINVAL;
	if (n) {
		nl = malloc(n * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		memcpy(nl, lines, n * sizeof(*nl));
	}
	free(p->locs[loc].lines);
	p->locs[loc].lines = nl;
	p->locs[loc].nlines = n;
	return 0;
}

/* ---- samples and labels ------------------------------------------------- */

static int intern_label(struct profile *p, struct prof_label *l)
{
	l->key = prof_intern(p, l->key);
	if (!l->key)
		return -ENOMEM;
	if (l->str && !(l->str = prof_intern(p, l->str)))
		return -ENOMEM;
	if (l->num_unit && !(l->num_unit = prof_intern(p, l->num_unit)))
		return -ENOMEM;
	return 0;
}

int64_t prof_add_sample(struct profile *p, const uint32_t *locs, uint32_t nlocs,
			const int64_t v[PT_NTYPES], const struct prof_label *labels,
			uint32_t nlabels)
{
	struct prof_priv *pv = PRIV(p);
	struct prof_sample s = { .nlocs = nlocs, .nlabels = nlabels };

	if (grow(&p->samples, &pv->cap_samples, p->nsamples, sizeof(*p->samples)))
		return -ENOMEM;
	if (nlocs) {
		s.locs = malloc(nlocs * sizeof(*s.locs));
		if (!s.locs)
			return -ENOMEM;
		memcpy(s.locs, locs, nlocs * sizeof(*s.locs));
	}
	if (nlabels) {
		s.labels = malloc(nlabels * sizeof(*s.labels));
		if (!s.labels)
			goto nomem;
		for (uint32_t i = 0; i < nlabels; i++) {
			s.labels[i] = labels[i];
			/* Interning is idempotent, so callers that forgot are safe. */
			if (intern_label(p, &s.labels[i]))
				goto nomem;
		}
	}
	for (int t = 0; t < PT_NTYPES; t++)
		s.v[t] = v ? v[t] : 0;
	p->samples[p->nsamples] = s;
	return (int64_t)p->nsamples++;
nomem:
	free(s.locs);
	free(s.labels);
	return -ENOMEM;
}

int prof_add_num_label(struct profile *p, size_t s, const char *key, int64_t num,
		       const char *unit)
{
	struct prof_label l = { .key = key, .num = num, .num_unit = unit };

	if (s >= p->nsamples)
		return -EINVAL;
	if (intern_label(p, &l))
		return -ENOMEM;
	struct prof_sample *sm = &p->samples[s];
	struct prof_label *nl = realloc(sm->labels, (sm->nlabels + 1) * sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	nl[sm->nlabels++] = l;
	sm->labels = nl;
	return 0;
}

int prof_get_num_label(const struct profile *p, size_t s, const char *key, int64_t *num)
{
	if (s >= p->nsamples)
		return -ENOENT;
	const struct prof_sample *sm = &p->samples[s];
	for (uint32_t i = 0; i < sm->nlabels; i++) {
		if (!sm->labels[i].str && strcmp(sm->labels[i].key, key) == 0) {
			*num = sm->labels[i].num;
			return 0;
		}
	}
	return -ENOENT;
}

/* ---- comments ----------------------------------------------------------- */

static int comment_append(struct profile *p, const char *interned)
{
	if (grow(&p->comments, &PRIV(p)->cap_comments, p->ncomments, sizeof(*p->comments)))
		return -ENOMEM;
	p->comments[p->ncomments++] = interned;
	return 0;
}

int prof_add_comment(struct profile *p, const char *fmt, ...)
{
	char small[256], *buf = small;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= sizeof(small)) {
		buf = malloc(n + 1);
		if (!buf)
			return -ENOMEM;
		va_start(ap, fmt);
		vsnprintf(buf, n + 1, fmt, ap);
		va_end(ap);
	}
	const char *s = prof_intern_n(p, buf, n);
	if (buf != small)
		free(buf);
	return s ? comment_append(p, s) : -ENOMEM;
}

const char *prof_get_comment(const struct profile *p, const char *key)
{
	size_t kl = strlen(key);

	for (size_t i = 0; i < p->ncomments; i++) {
		const char *c = p->comments[i];
		if (c && strncmp(c, key, kl) == 0 && c[kl] == '=')
			return c + kl + 1;
	}
	return NULL;
}

/* ---- merge, clone, scale, compact, total -------------------------------- */

static int64_t scale_val(int64_t v, double scale)
{
	/* Exact for the common factors so big values do not lose bits in a double. */
	if (scale == 1.0)
		return v;
	if (scale == -1.0)
		return (int64_t)(0 - (uint64_t)v);
	double r = round((double)v * scale);
	if (!(r > -9.2233720368547758e18))
		return r != r ? 0 : INT64_MIN;
	if (r >= 9.2233720368547758e18)
		return INT64_MAX;
	return (int64_t)r;
}

/* How a location is identified across profiles (prof_merge). */
static int loc_kind(const struct profile *p, const struct prof_location *l)
{
	if (l->mapping != PROF_NONE && l->mapping < p->nmaps && p->maps[l->mapping].file[0])
		return 1;   /* mapped file: (file, build-id, address relative to the file) */
	if (l->nlines)
		return 2;   /* symbolized: function names and lines */
	return 3;           /* bare address */
}

static uint64_t loc_rel(const struct profile *p, const struct prof_location *l)
{
	const struct prof_mapping *m = &p->maps[l->mapping];

	return l->address - m->start + m->offset;
}

static uint32_t loc_xhash(const struct profile *p, const struct prof_location *l)
{
	int kind = loc_kind(p, l);
	uint64_t h = hash_add(0, kind);

	if (kind == 1) {
		const struct prof_mapping *m = &p->maps[l->mapping];
		h = hash_str(h, m->file);
		h = hash_str(h, m->build_id);
		h = hash_add(h, loc_rel(p, l));
	} else if (kind == 2) {
		for (uint32_t i = 0; i < l->nlines; i++) {
			const struct prof_function *f = &p->funcs[l->lines[i].function];
			h = hash_str(h, f->name);
			h = hash_str(h, f->system_name);
			h = hash_str(h, f->filename);
			h = hash_add(h, l->lines[i].line);
		}
	} else {
		h = hash_add(h, l->address);
	}
	return (uint32_t)h;
}

static bool lines_eq(const struct profile *pa, const struct prof_location *a,
		     const struct profile *pb, const struct prof_location *b)
{
	if (a->nlines != b->nlines)
		return false;
	for (uint32_t i = 0; i < a->nlines; i++) {
		const struct prof_function *fa = &pa->funcs[a->lines[i].function];
		const struct prof_function *fb = &pb->funcs[b->lines[i].function];
		if (a->lines[i].line != b->lines[i].line ||
		    strcmp(fa->name, fb->name) || strcmp(fa->system_name, fb->system_name) ||
		    strcmp(fa->filename, fb->filename))
			return false;
	}
	return true;
}

/* Whether a and b are the same place.  strict: a mapped location's lines
 * must be equal too (so locations a profile keeps apart stay apart);
 * otherwise a symbolized one also matches an unsymbolized one. */
static bool loc_xeq(const struct profile *pa, const struct prof_location *a,
		    const struct profile *pb, const struct prof_location *b, bool strict)
{
	int kind = loc_kind(pa, a);

	if (kind != loc_kind(pb, b))
		return false;
	if (kind == 1) {
		const struct prof_mapping *ma = &pa->maps[a->mapping], *mb = &pb->maps[b->mapping];
		return strcmp(ma->file, mb->file) == 0 &&
		       strcmp(ma->build_id, mb->build_id) == 0 &&
		       loc_rel(pa, a) == loc_rel(pb, b) &&
		       (strict ? lines_eq(pa, a, pb, b) :
			(!a->nlines || !b->nlines || lines_eq(pa, a, pb, b)));
	}
	if (kind == 2)
		return lines_eq(pa, a, pb, b);
	return a->address == b->address;
}

struct xeq_ctx {
	const struct profile *dst, *src;
};

static bool loc_xeq_strict_cb(const void *ctx, uint32_t idx, const void *key)
{
	const struct xeq_ctx *c = ctx;

	return loc_xeq(c->dst, &c->dst->locs[idx], c->src, key, true);
}

static bool loc_xeq_cb(const void *ctx, uint32_t idx, const void *key)
{
	const struct xeq_ctx *c = ctx;

	return loc_xeq(c->dst, &c->dst->locs[idx], c->src, key, false);
}

/* The dst mapping for src mapping m: an identical one, else a copy. */
static int64_t merge_mapping(struct profile *dst, const struct profile *src, uint32_t m)
{
	const struct prof_mapping *sm = &src->maps[m];

	for (size_t i = 0; i < dst->nmaps; i++) {
		const struct prof_mapping *d = &dst->maps[i];
		if (d->start == sm->start && d->limit == sm->limit && d->offset == sm->offset &&
		    strcmp(d->file, sm->file) == 0 && strcmp(d->build_id, sm->build_id) == 0)
			return i;
	}
	int64_t r = prof_add_mapping(dst, sm->start, sm->limit, sm->offset, sm->file, sm->build_id);
	if (r >= 0) {
		dst->maps[r].has_functions = sm->has_functions;
		dst->maps[r].has_filenames = sm->has_filenames;
		dst->maps[r].has_line_numbers = sm->has_line_numbers;
		dst->maps[r].has_inline_frames = sm->has_inline_frames;
	}
	return r;
}

/* Copies src location l's lines into dst location d, mapping functions. */
static int merge_lines(struct profile *dst, uint32_t d, const struct profile *src,
		       const struct prof_location *l, int64_t *fmap)
{
	struct prof_line *lines;
	int rc;

	if (!l->nlines)
		return 0;
	lines = malloc(l->nlines * sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	for (uint32_t i = 0; i < l->nlines; i++) {
		uint32_t sf = l->lines[i].function;
		if (fmap[sf] < 0) {
			const struct prof_function *f = &src->funcs[sf];
			fmap[sf] = prof_add_function(dst, f->name, f->system_name, f->filename,
						     f->start_line);
			if (fmap[sf] < 0) {
				free(lines);
				return -ENOMEM;
			}
		}
		lines[i] = l->lines[i];
		lines[i].function = fmap[sf];
	}
	rc = prof_set_lines(dst, d, lines, l->nlines);
	free(lines);
	return rc;
}

int prof_merge(struct profile *dst, const struct profile *src, double scale)
{
	struct itab xt = { 0 };
	struct xeq_ctx ctx = { dst, src };
	int64_t *lmap = NULL, *fmap = NULL, *mmap_ = NULL;
	uint32_t *stack = NULL;
	struct prof_label *labels = NULL;
	size_t stack_cap = 0, labels_cap = 0;
	int rc = -ENOMEM;

	if (src->nlocs && !(lmap = malloc(src->nlocs * sizeof(*lmap))))
		goto out;
	if (src->nfuncs && !(fmap = malloc(src->nfuncs * sizeof(*fmap))))
		goto out;
	if (src->nmaps && !(mmap_ = malloc(src->nmaps * sizeof(*mmap_))))
		goto out;
	for (size_t i = 0; i < src->nfuncs; i++)
		fmap[i] = -1;
	for (size_t i = 0; i < src->nmaps; i++)
		mmap_[i] = -1;

	/* Every dst location goes in; lookups find the earliest match. */
	for (size_t i = 0; i < dst->nlocs; i++)
		if (itab_insert(&xt, loc_xhash(dst, &dst->locs[i]), i))
			goto out;

	for (size_t i = 0; i < src->nlocs; i++) {
		const struct prof_location *l = &src->locs[i];
		uint32_t h = loc_xhash(src, l);
		int64_t d = itab_find(&xt, h, loc_xeq_strict_cb, &ctx, l);
		if (d < 0)
			d = itab_find(&xt, h, loc_xeq_cb, &ctx, l);

		if (d >= 0) {
			/* Same place: let dst gain the names it lacked. */
			if (!dst->locs[d].nlines && l->nlines && merge_lines(dst, d, src, l, fmap))
				goto out;
			lmap[i] = d;
			continue;
		}
		uint64_t addr = l->address;
		uint32_t dm = PROF_NONE;
		if (l->mapping != PROF_NONE && l->mapping < src->nmaps) {
			const struct prof_mapping *sm = &src->maps[l->mapping];
			uint64_t rel = loc_rel(src, l);
			/* Prefer dst's own mapping of the same file, rebasing the address. */
			for (size_t k = 0; sm->file[0] && k < dst->nmaps; k++) {
				const struct prof_mapping *m = &dst->maps[k];
				if (strcmp(m->file, sm->file) == 0 &&
				    strcmp(m->build_id, sm->build_id) == 0 &&
				    rel >= m->offset && rel - m->offset < m->limit - m->start) {
					dm = k;
					addr = m->start + (rel - m->offset);
					break;
				}
			}
			if (dm == PROF_NONE) {
				if (mmap_[l->mapping] < 0 &&
				    (mmap_[l->mapping] = merge_mapping(dst, src, l->mapping)) < 0)
					goto out;
				dm = mmap_[l->mapping];
			}
		}
		d = loc_append(dst, addr, dm, true);
		if (d < 0)
			goto out;
		dst->locs[d].is_folded = l->is_folded;
		if (merge_lines(dst, d, src, l, fmap))
			goto out;
		if (itab_insert(&xt, loc_xhash(dst, &dst->locs[d]), d))
			goto out;
		lmap[i] = d;
	}

	for (size_t i = 0; i < src->nsamples; i++) {
		const struct prof_sample *s = &src->samples[i];
		int64_t v[PT_NTYPES];

		if (s->nlocs > stack_cap) {
			uint32_t *ns = realloc(stack, s->nlocs * sizeof(*ns));
			if (!ns)
				goto out;
			stack = ns;
			stack_cap = s->nlocs;
		}
		if (s->nlabels > labels_cap) {
			struct prof_label *nl = realloc(labels, s->nlabels * sizeof(*nl));
			if (!nl)
				goto out;
			labels = nl;
			labels_cap = s->nlabels;
		}
		for (uint32_t k = 0; k < s->nlocs; k++)
			stack[k] = lmap[s->locs[k]];
		for (uint32_t k = 0; k < s->nlabels; k++)
			labels[k] = s->labels[k];
		for (int t = 0; t < PT_NTYPES; t++)
			v[t] = scale_val(s->v[t], scale);
		if (prof_add_sample(dst, stack, s->nlocs, v, labels, s->nlabels) < 0)
			goto out;
	}
	dst->has_alloc = dst->has_alloc && src->has_alloc;
	rc = 0;
out:
	itab_free(&xt);
	free(lmap);
	free(fmap);
	free(mmap_);
	free(stack);
	free(labels);
	return rc;
}

struct profile *prof_clone(const struct profile *p)
{
	struct profile *c = prof_new();

	if (!c)
		return NULL;
	for (size_t i = 0; i < p->nmaps; i++) {
		const struct prof_mapping *m = &p->maps[i];
		if (prof_add_mapping(c, m->start, m->limit, m->offset, m->file, m->build_id) < 0)
			goto fail;
		c->maps[i].has_functions = m->has_functions;
		c->maps[i].has_filenames = m->has_filenames;
		c->maps[i].has_line_numbers = m->has_line_numbers;
		c->maps[i].has_inline_frames = m->has_inline_frames;
	}
	for (size_t i = 0; i < p->nfuncs; i++) {
		const struct prof_function *f = &p->funcs[i];
		struct prof_function nf = {
			.name = prof_intern(c, f->name),
			.system_name = prof_intern(c, f->system_name),
			.filename = prof_intern(c, f->filename),
			.start_line = f->start_line,
		};
		if (!nf.name || !nf.system_name || !nf.filename || func_append(c, &nf) < 0)
			goto fail;
	}
	for (size_t i = 0; i < p->nlocs; i++) {
		const struct prof_location *l = &p->locs[i];
		if (loc_append(c, l->address, l->mapping, true) < 0 ||
		    prof_set_lines(c, i, l->lines, l->nlines))
			goto fail;
		c->locs[i].is_folded = l->is_folded;
	}
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];
		if (prof_add_sample(c, s->locs, s->nlocs, s->v, s->labels, s->nlabels) < 0)
			goto fail;
	}
	for (size_t i = 0; i < p->ncomments; i++) {
		const char *s = prof_intern(c, p->comments[i]);
		if (!s || comment_append(c, s))
			goto fail;
	}
	c->has_alloc = p->has_alloc;
	c->period = p->period;
	c->time_nanos = p->time_nanos;
	c->duration_nanos = p->duration_nanos;
	if (p->drop_frames && !(c->drop_frames = prof_intern(c, p->drop_frames)))
		goto fail;
	if (p->maps_text && !(c->maps_text = prof_intern(c, p->maps_text)))
		goto fail;
	return c;
fail:
	prof_free(c);
	return NULL;
}

void prof_scale(struct profile *p, double scale)
{
	for (size_t i = 0; i < p->nsamples; i++)
		for (int t = 0; t < PT_NTYPES; t++)
			p->samples[i].v[t] = scale_val(p->samples[i].v[t], scale);
}

static uint32_t sample_hash(const struct prof_sample *s)
{
	uint64_t h = hash_add(0, s->nlocs);

	for (uint32_t i = 0; i < s->nlocs; i++)
		h = hash_add(h, s->locs[i]);
	for (uint32_t i = 0; i < s->nlabels; i++) {
		h = hash_add(h, (uintptr_t)s->labels[i].key);
		h = hash_add(h, (uintptr_t)s->labels[i].str);
		h = hash_add(h, (uint64_t)s->labels[i].num);
		h = hash_add(h, (uintptr_t)s->labels[i].num_unit);
	}
	return (uint32_t)h;
}

static bool sample_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct prof_sample *a = &((const struct profile *)ctx)->samples[idx];
	const struct prof_sample *b = key;

	if (a->nlocs != b->nlocs || a->nlabels != b->nlabels)
		return false;
	if (a->nlocs && memcmp(a->locs, b->locs, a->nlocs * sizeof(*a->locs)))
		return false;
	for (uint32_t i = 0; i < a->nlabels; i++) {
		const struct prof_label *x = &a->labels[i], *y = &b->labels[i];
		if (x->key != y->key || x->str != y->str || x->num != y->num ||
		    x->num_unit != y->num_unit)
			return false;
	}
	return true;
}

int prof_compact(struct profile *p)
{
	struct itab t = { 0 };
	size_t n = 0;

	/* First pass: fold duplicates into the first occurrence, compacting
	 * the array as we go (kept samples move down, hash indexes follow). */
	for (size_t i = 0; i < p->nsamples; i++) {
		struct prof_sample *s = &p->samples[i];
		uint32_t h = sample_hash(s);
		int64_t j = itab_find(&t, h, sample_eq, p, s);

		if (j >= 0) {
			for (int k = 0; k < PT_NTYPES; k++)
				p->samples[j].v[k] = (int64_t)((uint64_t)p->samples[j].v[k] +
							       (uint64_t)s->v[k]);
			free(s->locs);
			free(s->labels);
			continue;
		}
		p->samples[n] = *s;
		if (itab_insert(&t, h, n)) {
			/* Out of memory: keep the rest unmerged but consistent. */
			n++;
			for (size_t r = i + 1; r < p->nsamples; r++)
				p->samples[n++] = p->samples[r];
			p->nsamples = n;
			itab_free(&t);
			return -ENOMEM;
		}
		n++;
	}
	itab_free(&t);
	p->nsamples = n;

	n = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		struct prof_sample *s = &p->samples[i];
		bool zero = true;
		for (int k = 0; k < PT_NTYPES; k++)
			zero = zero && s->v[k] == 0;
		if (zero) {
			free(s->locs);
			free(s->labels);
			continue;
		}
		p->samples[n++] = *s;
	}
	p->nsamples = n;
	return 0;
}

int64_t prof_total(const struct profile *p, enum prof_type t)
{
	uint64_t sum = 0;

	if ((unsigned)t >= PT_NTYPES)
		return 0;
	for (size_t i = 0; i < p->nsamples; i++)
		sum += (uint64_t)p->samples[i].v[t];
	return (int64_t)sum;
}

/* ---- validation --------------------------------------------------------- */

int prof_validate(const struct profile *p)
{
	if (!p || !p->strtab || !p->priv)
		return -EINVAL;
	if ((p->nsamples && !p->samples) || (p->nlocs && !p->locs) ||
	    (p->nfuncs && !p->funcs) || (p->nmaps && !p->maps) ||
	    (p->ncomments && !p->comments))
		return -EINVAL;
	for (size_t i = 0; i < p->nmaps; i++) {
		const struct prof_mapping *m = &p->maps[i];
		if (!m->file || !m->build_id || m->start > m->limit)
			return -EINVAL;
	}
	for (size_t i = 0; i < p->nfuncs; i++) {
		const struct prof_function *f = &p->funcs[i];
		if (!f->name || !f->system_name || !f->filename)
			return -EINVAL;
	}
	for (size_t i = 0; i < p->nlocs; i++) {
		const struct prof_location *l = &p->locs[i];
		if (l->mapping != PROF_NONE && l->mapping >= p->nmaps)
			return -EINVAL;
		if (l->nlines && !l->lines)
			return -EINVAL;
		for (uint32_t k = 0; k < l->nlines; k++)
			if (l->lines[k].function >= p->nfuncs)
				return -EINVAL;
	}
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];
		if ((s->nlocs && !s->locs) || (s->nlabels && !s->labels))
			return -EINVAL;
		for (uint32_t k = 0; k < s->nlocs; k++)
			if (s->locs[k] >= p->nlocs)
				return -EINVAL;
		for (uint32_t k = 0; k < s->nlabels; k++)
			if (!s->labels[k].key)
				return -EINVAL;
	}
	for (size_t i = 0; i < p->ncomments; i++)
		if (!p->comments[i])
			return -EINVAL;
	if (p->period < 0)
		return -EINVAL;
	return 0;
}

/* ---- sampling maths ----------------------------------------------------- */

double prof_sample_prob(double size, double period)
{
	if (period <= 1)
		return 1;
	if (!(size > 0))
		return 1;   /* a zero-size block cannot be picked by bytes; count it once */
	return -expm1(-size / period);
}

/* ---- /proc/PID/maps and build-ids --------------------------------------- */

/* Reads the GNU build-id of the ELF file open at fd as lowercase hex into
 * hex (size >= 2 * 64 + 1).  0 or -errno (-ENOENT: no build-id note). */
static int elf_build_id(int fd, char *hex, size_t hexsize)
{
	static const char digits[] = "0123456789abcdef";
	Elf *e;
	int rc = -ENOENT;
	size_t nph;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -EINVAL;
	if (elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &nph) != 0) {
		rc = -EINVAL;
		goto out;
	}
	for (size_t pass = 0; pass < 2 && rc == -ENOENT; pass++) {
		/* Program headers first (what the loader sees), then sections. */
		size_t n = pass == 0 ? nph : 0;
		Elf_Scn *scn = NULL;
		for (size_t i = 0;; i++) {
			Elf_Data *d = NULL;
			if (pass == 0) {
				GElf_Phdr ph;
				if (i >= n)
					break;
				if (!gelf_getphdr(e, i, &ph) || ph.p_type != PT_NOTE)
					continue;
				d = elf_getdata_rawchunk(e, ph.p_offset, ph.p_filesz,
							 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
			} else {
				GElf_Shdr sh;
				scn = elf_nextscn(e, scn);
				if (!scn)
					break;
				if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
					continue;
				d = elf_getdata(scn, NULL);
			}
			if (!d)
				continue;
			size_t off = 0, name_off, desc_off;
			GElf_Nhdr nh;
			while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
				if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
				    memcmp((char *)d->d_buf + name_off, "GNU", 4) != 0 ||
				    nh.n_descsz == 0 || nh.n_descsz * 2 + 1 > hexsize)
					continue;
				const unsigned char *b = (unsigned char *)d->d_buf + desc_off;
				for (size_t k = 0; k < nh.n_descsz; k++) {
					hex[2 * k] = digits[b[k] >> 4];
					hex[2 * k + 1] = digits[b[k] & 15];
				}
				hex[nh.n_descsz * 2] = '\0';
				rc = 0;
				goto out;
			}
		}
	}
out:
	elf_end(e);
	return rc;
}

/* Opens path for reading only if it is a regular file: a profile's maps
 * text is untrusted and may name a FIFO or a device that would block. */
static int open_regular(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Build-id of a mapped file: through /proc/PID/map_files when we have a pid
 * (works for deleted files and other mount namespaces, but needs
 * CAP_SYS_ADMIN), then through /proc/PID/root (the target's mount
 * namespace, e.g. a container), else by path. */
static const char *mapping_build_id(struct profile *p, int pid, uint64_t start,
				    uint64_t end, const char *path)
{
	char hex[2 * 64 + 1], mf[PATH_MAX];
	int fd = -1;

	if (pid > 0) {
		snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
		fd = open_regular(mf);
		if (fd < 0 && path[0] == '/' &&
		    (size_t)snprintf(mf, sizeof(mf), "/proc/%d/root%s", pid, path) < sizeof(mf))
			fd = open_regular(mf);
	}
	if (fd < 0 && path[0] == '/')
		fd = open_regular(path);
	if (fd < 0)
		return "";
	int rc = elf_build_id(fd, hex, sizeof(hex));
	close(fd);
	return rc ? "" : prof_intern(p, hex);
}

static const char *skip_ws(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	return s;
}

static bool parse_hex(const char **sp, const char *end, uint64_t *out)
{
	const char *s = *sp;
	uint64_t v = 0;
	int n = 0;

	while (s < end) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (++n > 16)
			return false;
		v = v << 4 | d;
		s++;
	}
	if (!n)
		return false;
	*sp = s;
	*out = v;
	return true;
}

struct maps_line {
	uint64_t start, end, offset;
	char perms[6];
	const char *path;      /* into the text; may be empty */
	size_t pathlen;        /* without " (deleted)" */
};

/* Parses one maps line (without its newline).  Accepts the kernel's format
 * "start-end perms offset dev inode [path]" and the shorter
 * "start-end perms offset [path]" some tools write. */
/* The text is not NUL-terminated: compare within [s, end) only. */
static bool has_prefix(const char *s, const char *end, const char *pre)
{
	size_t n = strlen(pre);
	return (size_t)(end - s) >= n && memcmp(s, pre, n) == 0;
}

static bool parse_maps_line(const char *s, const char *end, struct maps_line *ml)
{
	const char *t;

	memset(ml, 0, sizeof(*ml));
	s = skip_ws(s, end);
	if (!parse_hex(&s, end, &ml->start) || s >= end || *s != '-')
		return false;
	s = skip_ws(s + 1, end);
	if (!parse_hex(&s, end, &ml->end) || ml->end <= ml->start)
		return false;
	s = skip_ws(s, end);
	for (t = s; t < end && strchr("-rwxsp", *t) && *t; t++)
		;
	if (t == s || t - s > 5 || (t < end && *t != ' ' && *t != '\t'))
		return false;
	memcpy(ml->perms, s, t - s);
	s = skip_ws(t, end);
	if (!parse_hex(&s, end, &ml->offset) || (s < end && *s != ' ' && *s != '\t'))
		return false;
	s = skip_ws(s, end);
	/* Optional "major:minor inode". */
	t = s;
	uint64_t x;
	if (parse_hex(&t, end, &x) && t < end && *t == ':') {
		t++;
		if (!parse_hex(&t, end, &x) || t >= end || (*t != ' ' && *t != '\t'))
			return false;
		t = skip_ws(t, end);
		const char *d = t;
		while (t < end && *t >= '0' && *t <= '9')
			t++;
		if (t == d || (t < end && *t != ' ' && *t != '\t'))
			return false;
		s = skip_ws(t, end);
	}
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		end--;
	if (s < end && *s != '/' && *s != '[' && !has_prefix(s, end, "anon_inode:") &&
	    !has_prefix(s, end, "socket:"))
		return false;
	ml->path = s;
	ml->pathlen = end - s;
	static const char del[] = " (deleted)";
	if (ml->pathlen > sizeof(del) - 1 &&
	    memcmp(end - (sizeof(del) - 1), del, sizeof(del) - 1) == 0)
		ml->pathlen -= sizeof(del) - 1;
	return true;
}

struct bid_cache {
	const char *path;   /* interned */
	const char *bid;
};

static int parse_maps(struct profile *p, const char *text, size_t len, int pid,
		      const char *exe, size_t *bad_line)
{
	const char *s = text, *end = text + len;
	const char *mainfile = exe ? prof_intern(p, exe) : NULL;
	size_t first = p->nmaps, lineno = 0;
	struct bid_cache *cache = NULL;
	size_t ncache = 0, cap_cache = 0;
	int rc = 0;

	if (bad_line)
		*bad_line = 0;
	while (s < end) {
		const char *nl = memchr(s, '\n', end - s);
		const char *le = nl ? nl : end;
		struct maps_line ml;

		lineno++;
		const char *t = skip_ws(s, le);
		if (t == le || (le - t == 1 && *t == '\r')) {
			s = le + (nl != NULL);
			continue;
		}
		if (!parse_maps_line(s, le, &ml)) {
			if (bad_line)
				*bad_line = lineno;
			rc = -EINVAL;
			goto out;
		}
		s = le + (nl != NULL);
		if (ml.pathlen == 0 || ml.path[0] != '/')
			continue;
		const char *path = prof_intern_n(p, ml.path, ml.pathlen);
		if (!path) {
			rc = -ENOMEM;
			goto out;
		}
		/* Without a pid, the first file in the maps is the executable:
		 * the kernel lists by address and loads the program first. */
		if (!mainfile)
			mainfile = path;
		if (!strchr(ml.perms, 'x'))
			continue;
		/* A continuation of the previous segment of the same file. */
		if (p->nmaps > first) {
			struct prof_mapping *pm = &p->maps[p->nmaps - 1];
			if (pm->file == path && pm->limit == ml.start &&
			    pm->offset + (pm->limit - pm->start) == ml.offset) {
				pm->limit = ml.end;
				continue;
			}
		}
		const char *bid = NULL;
		for (size_t i = 0; i < ncache; i++)
			if (cache[i].path == path)
				bid = cache[i].bid;
		if (!bid) {
			bid = mapping_build_id(p, pid, ml.start, ml.end, path);
			if (!bid || grow(&cache, &cap_cache, ncache, sizeof(*cache))) {
				rc = -ENOMEM;
				goto out;
			}
			cache[ncache].path = path;
			cache[ncache++].bid = bid;
		}
		if (prof_add_mapping(p, ml.start, ml.end, ml.offset, path, bid) < 0) {
			rc = -ENOMEM;
			goto out;
		}
	}
	/* maps[0] is the main executable (pprof's convention). */
	if (first == 0 && mainfile) {
		for (size_t i = 0; i < p->nmaps; i++) {
			if (p->maps[i].file != mainfile)
				continue;
			if (i > 0) {
				struct prof_mapping m = p->maps[i];
				memmove(&p->maps[1], &p->maps[0], i * sizeof(m));
				p->maps[0] = m;
				/* Locations added before would now point elsewhere. */
				for (size_t k = 0; k < p->nlocs; k++) {
					uint32_t mi = p->locs[k].mapping;
					if (mi == i)
						p->locs[k].mapping = 0;
					else if (mi != PROF_NONE && mi < i)
						p->locs[k].mapping = mi + 1;
				}
				PRIV(p)->msorted_n = 0;
			}
			break;
		}
	}
	PRIV(p)->msorted_n = 0;
	p->maps_text = prof_intern_n(p, text, len);
	if (!p->maps_text)
		rc = -ENOMEM;
out:
	free(cache);
	return rc;
}

int prof_parse_maps_ex(struct profile *p, const char *text, size_t len, size_t *bad_line)
{
	return parse_maps(p, text, len, 0, NULL, bad_line);
}

int prof_parse_maps(struct profile *p, const char *text, size_t len)
{
	return parse_maps(p, text, len, 0, NULL, NULL);
}

int prof_load_proc_maps(struct profile *p, int pid)
{
	char path[64], exe[PATH_MAX];
	char *buf = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd, rc;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap ? cap * 2 : 65536);
			if (!nb) {
				rc = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += n;
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		static const char del[] = " (deleted)";
		size_t dl = sizeof(del) - 1;
		if ((size_t)n > dl && strcmp(exe + n - dl, del) == 0)
			exe[n - dl] = '\0';
	}
	rc = parse_maps(p, buf, len, pid, n > 0 ? exe : NULL, NULL);
out:
	close(fd);
	free(buf);
	return rc;
}
