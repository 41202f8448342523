/* report.c - builds a report view: picks values, drops allocator frames, filters, aggregates frames into nodes, then has the graph made. */
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_int.h"

#define NONE UINT32_MAX

void rep_opts_init(struct rep_opts *o, enum rep_kind kind)
{
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->type = PT_INUSE_SPACE;
	o->gran = kind == REP_LIST ? REP_GRAN_LINES : REP_GRAN_FUNCTIONS;
	o->unit = REP_UNIT_MINIMUM;
	switch (kind) {
	case REP_TOP:
		o->nodecount = 20;
		o->nodefraction = 0.005;
		o->edgefraction = 0.001;
		break;
	case REP_TREE:
		o->nodecount = 80;
		o->nodefraction = 0.005;
		o->edgefraction = 0.001;
		break;
	case REP_DIFF:
		o->nodecount = 20;
		break;
	case REP_PEEK:
	case REP_LIST:
		break;
	}
}

/* ---- strings and nodes ------------------------------------------------ */

static const char *intern(struct rep_view *v, const char *s)
{
	return s ? prof_intern(v->strs, s) : NULL;
}

/* Go's filepath.Clean for the paths that become node names. */
static char *clean_path(const char *path)
{
	size_t n = strlen(path);
	char *out = malloc(n + 2);
	bool abs = path[0] == '/';
	size_t o = 0;
	const char *s = path;

	if (!out)
		return NULL;
	if (abs)
		out[o++] = '/';
	size_t root = o;
	while (*s) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		const char *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if (len == 1 && s[0] == '.') {
			/* skip */
		} else if (len == 2 && s[0] == '.' && s[1] == '.') {
			/* back up over the last element unless it is ".." itself */
			size_t last = o;
			while (last > root && out[last - 1] != '/')
				last--;
			bool dotdot = o - last == 2 && out[last] == '.' && out[last + 1] == '.';
			if (o > root && !dotdot) {
				o = last > root ? last - 1 : root;
			} else if (!abs) {
				if (o > root)
					out[o++] = '/';
				out[o++] = '.';
				out[o++] = '.';
			}
		} else {
			if (o > root)
				out[o++] = '/';
			memcpy(out + o, s, len);
			o += len;
		}
		s += len;
	}
	if (o == 0)
		out[o++] = '.';
	out[o] = 0;
	return out;
}

static uint64_t hmix(uint64_t h, uint64_t x)
{
	h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h;
}

static uint64_t node_hash(const struct rnode *k)
{
	uint64_t h = 0x12345;
	h = hmix(h, (uintptr_t)k->name);
	h = hmix(h, (uintptr_t)k->file);
	h = hmix(h, (uint64_t)k->line);
	h = hmix(h, k->addr);
	h = hmix(h, (uintptr_t)k->obj);
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return h;
}

static bool node_eq(const struct rnode *a, const struct rnode *b)
{
	return a->name == b->name && a->file == b->file && a->line == b->line &&
	       a->addr == b->addr && a->obj == b->obj;
}

static int nhash_grow(struct rep_view *v)
{
	size_t cap = v->nhcap ? v->nhcap * 2 : 1024;
	uint32_t *t = malloc(cap * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t, 0xff, cap * sizeof(*t));
	for (size_t i = 0; i < v->nnodes; i++) {
		size_t j = node_hash(&v->nodes[i]) & (cap - 1);
		while (t[j] != NONE)
			j = (j + 1) & (cap - 1);
		t[j] = (uint32_t)i;
	}
	free(v->nhash);
	v->nhash = t;
	v->nhcap = cap;
	return 0;
}

int rep_grow(void *arrp, size_t *cap, size_t need, size_t elem)
{
	void **arr = arrp;
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 64;
	while (n < need)
		n *= 2;
	void *p = realloc(*arr, n * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

/* Finds or adds the node with key k (pname and start_line filled by the
 * caller on insertion).  Returns its index or -ENOMEM. */
static int64_t node_get(struct rep_view *v, const struct rnode *k, bool *added)
{
	*added = false;
	if ((v->nnodes + 1) * 2 > v->nhcap && nhash_grow(v))
		return -ENOMEM;
	size_t j = node_hash(k) & (v->nhcap - 1);
	while (v->nhash[j] != NONE) {
		if (node_eq(&v->nodes[v->nhash[j]], k))
			return v->nhash[j];
		j = (j + 1) & (v->nhcap - 1);
	}
	if (rep_grow(&v->nodes, &v->cnodes, v->nnodes + 1, sizeof(*v->nodes)))
		return -ENOMEM;
	v->nodes[v->nnodes] = *k;
	v->nhash[j] = (uint32_t)v->nnodes;
	*added = true;
	return (int64_t)v->nnodes++;
}

/* ---- per-profile preparation ------------------------------------------ */

enum {
	F_ENTRY = 1,    /* allocator entry point or allocator module frame */
	F_INTERNAL = 2, /* allocator internal name (see report_drop.c) */
	F_FOCUS = 4,
	F_IGNORE = 8,
	F_DROPRX = 16,  /* matches the profile's drop_frames */
};

enum { L_NONE, L_PRUNE, L_BENEATH };

struct src {
	const struct profile *p;
	int sign;
	uint8_t *fflags;
	uint8_t *mflags;
	const char **mobj;
	uint8_t *lprune;
	uint32_t *lfirst;       /* first line kept after drop_frames trimming */
	uint32_t *lnode;        /* offset into nodeids or NONE */
	uint32_t *nodeids;
	size_t nnodeids, cnodeids;
	/* scratch for one sample, leaf first */
	struct sframe { uint32_t loc; int32_t line; } *fr;
	size_t cfr;
};

static void src_free(struct src *s)
{
	free(s->fflags);
	free(s->mflags);
	free(s->mobj);
	free(s->lprune);
	free(s->lfirst);
	free(s->lnode);
	free(s->nodeids);
	free(s->fr);
}

static bool rx_search(const regex_t *rx, const char *s)
{
	return rx && s && *s && regexec(rx, s, 0, NULL, 0) == 0;
}

struct rxset {
	regex_t focus, ignore, symbol, drop;
	bool has_focus, has_ignore, has_symbol, has_drop;
};

static int src_init(struct rep_view *v, struct src *s, const struct profile *p, int sign,
		    const struct rxset *rx)
{
	regex_t drop;
	bool has_drop = false;

	memset(s, 0, sizeof(*s));
	s->p = p;
	s->sign = sign;
	s->fflags = calloc(p->nfuncs + 1, 1);
	s->mflags = calloc(p->nmaps + 1, 1);
	s->mobj = calloc(p->nmaps + 1, sizeof(*s->mobj));
	s->lprune = calloc(p->nlocs + 1, 1);
	s->lfirst = calloc(p->nlocs + 1, sizeof(*s->lfirst));
	s->lnode = malloc((p->nlocs + 1) * sizeof(*s->lnode));
	if (!s->fflags || !s->mflags || !s->mobj || !s->lprune || !s->lfirst || !s->lnode)
		return -ENOMEM;
	memset(s->lnode, 0xff, (p->nlocs + 1) * sizeof(*s->lnode));

	/* The profile's own drop_frames, anchored as pprof anchors it. */
	has_drop = rep_compile_drop_frames(p->drop_frames, &drop);

	for (size_t f = 0; f < p->nfuncs; f++) {
		const struct prof_function *fn = &p->funcs[f];
		uint8_t fl = 0;
		int cls = rep_alloc_class(fn->name);
		if (cls == REP_ALLOC_NONE)
			cls = rep_alloc_class(fn->system_name);
		if (cls == REP_ALLOC_ENTRY)
			fl |= F_ENTRY;
		else if (cls == REP_ALLOC_INTERNAL)
			fl |= F_INTERNAL;
		if (rx->has_focus && (rx_search(&rx->focus, fn->name) || rx_search(&rx->focus, fn->filename)))
			fl |= F_FOCUS;
		if (rx->has_ignore && (rx_search(&rx->ignore, fn->name) || rx_search(&rx->ignore, fn->filename)))
			fl |= F_IGNORE;
		if (has_drop && rep_match_simplified(&drop, fn->name))
			fl |= F_DROPRX;
		s->fflags[f] = fl;
	}
	if (has_drop)
		regfree(&drop);
	for (size_t m = 0; m < p->nmaps; m++) {
		const struct prof_mapping *mp = &p->maps[m];
		uint8_t fl = 0;
		if (rep_is_alloc_module(mp->file))
			fl |= F_ENTRY;
		if (rx->has_focus && rx_search(&rx->focus, mp->file))
			fl |= F_FOCUS;
		if (rx->has_ignore && rx_search(&rx->ignore, mp->file))
			fl |= F_IGNORE;
		s->mflags[m] = fl;
		s->mobj[m] = mp->file && *mp->file ? intern(v, mp->file) : NULL;
		if (mp->file && *mp->file && !s->mobj[m])
			return -ENOMEM;
	}

	/* pprof's Prune: per location, the outermost line matching
	 * drop_frames; all of it matching prunes the location, else the lines
	 * inside it go (for every sample) and the samples are cut below it. */
	for (size_t l = 0; l < p->nlocs; l++) {
		const struct prof_location *loc = &p->locs[l];
		int64_t i;
		for (i = (int64_t)loc->nlines - 1; i >= 0; i--) {
			uint32_t f = loc->lines[i].function;
			if (f < p->nfuncs && (s->fflags[f] & F_DROPRX))
				break;
		}
		if (i < 0)
			continue;
		if (i == (int64_t)loc->nlines - 1) {
			s->lprune[l] = L_PRUNE;
		} else {
			s->lprune[l] = L_BENEATH;
			s->lfirst[l] = (uint32_t)(i + 1);
		}
	}
	return 0;
}

static const char *basename_of(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

/* The node of line `line` of location `l` (line -1: the unsymbolized
 * location itself) at the view's granularity.  Returns index or -ENOMEM. */
static int64_t make_node(struct rep_view *v, struct src *s, uint32_t l, int32_t line)
{
	const struct profile *p = s->p;
	const struct prof_location *loc = &p->locs[l];
	const struct prof_function *fn = NULL;
	struct rnode k;
	char *cleaned = NULL;
	int64_t lineno = 0;

	memset(&k, 0, sizeof(k));
	if (line >= 0 && loc->lines[line].function < p->nfuncs) {
		fn = &p->funcs[loc->lines[line].function];
		lineno = loc->lines[line].line;
	}
	const char *name = fn && fn->name && *fn->name ? fn->name : NULL;
	const char *obj = loc->mapping < p->nmaps ? s->mobj[loc->mapping] : NULL;
	const char *file = NULL;
	if (fn && fn->filename && *fn->filename) {
		cleaned = clean_path(fn->filename);
		if (!cleaned)
			return -ENOMEM;
		file = intern(v, cleaned);
		free(cleaned);
		if (!file)
			return -ENOMEM;
	}

	bool unsym = false;
	switch (v->o.gran) {
	case REP_GRAN_FUNCTIONS:
		if (name)
			k.name = intern(v, name);
		else
			unsym = true;
		break;
	case REP_GRAN_LINES:
		if (name) {
			k.name = intern(v, name);
			k.file = file;
			k.line = lineno;
		} else
			unsym = true;
		break;
	case REP_GRAN_ADDRESSES:
		if (name) {
			k.name = intern(v, name);
			k.file = file;
			k.line = lineno;
			k.addr = loc->address;
		} else
			unsym = true;
		break;
	case REP_GRAN_FILES:
		if (file)
			k.file = file;
		else
			k.obj = obj;
		break;
	}
	if (unsym) {
		k.addr = loc->address;
		k.obj = obj;
	}
	if ((name && !k.name && v->o.gran != REP_GRAN_FILES))
		return -ENOMEM;

	bool added;
	int64_t idx = node_get(v, &k, &added);
	if (idx < 0)
		return idx;
	struct rnode *n = &v->nodes[idx];
	if (fn && fn->start_line > 0 && (n->start_line == 0 || fn->start_line < n->start_line))
		n->start_line = fn->start_line;
	if (!added)
		return idx;

	/* printable name, as pprof's NodeInfo.PrintableName */
	char *pn = NULL;
	int r;
	if (unsym) {
		const struct prof_mapping *m = loc->mapping < p->nmaps ? &p->maps[loc->mapping] : NULL;
		if (m && m->file && *m->file)
			r = asprintf(&pn, "%s+0x%" PRIx64, basename_of(m->file),
				     loc->address - m->start + m->offset);
		else
			r = asprintf(&pn, "0x%" PRIx64, loc->address);
	} else if (k.name) {
		char addr[24] = "";
		if (k.addr)
			snprintf(addr, sizeof(addr), "%016" PRIx64 " ", k.addr);
		if (k.line)
			r = asprintf(&pn, "%s%s %s:%" PRId64, addr, k.name, k.file ? k.file : "", k.line);
		else if (k.file)
			r = asprintf(&pn, "%s%s %s", addr, k.name, k.file);
		else
			r = asprintf(&pn, "%s%s", addr, k.name);
	} else if (k.file) {
		r = asprintf(&pn, "%s", k.file);
	} else if (k.obj) {
		r = asprintf(&pn, "[%s]", basename_of(k.obj));
	} else {
		r = asprintf(&pn, "<unknown>");
	}
	if (r < 0)
		return -ENOMEM;
	n = &v->nodes[idx];
	n->pname = intern(v, pn);
	free(pn);
	if (!n->pname)
		return -ENOMEM;
	return idx;
}

/* Node ids of location l's kept lines (innermost first), computed once. */
static int loc_nodes(struct rep_view *v, struct src *s, uint32_t l, uint32_t **ids, uint32_t *n)
{
	const struct prof_location *loc = &s->p->locs[l];
	uint32_t first = s->lfirst[l];
	uint32_t cnt = loc->nlines ? loc->nlines - first : 1;

	if (s->lnode[l] == NONE) {
		if (rep_grow(&s->nodeids, &s->cnodeids, s->nnodeids + cnt, sizeof(*s->nodeids)))
			return -ENOMEM;
		for (uint32_t i = 0; i < cnt; i++) {
			int64_t id = make_node(v, s, l, loc->nlines ? (int32_t)(first + i) : -1);
			if (id < 0)
				return (int)id;
			s->nodeids[s->nnodeids + i] = (uint32_t)id;
		}
		s->lnode[l] = (uint32_t)s->nnodeids;
		s->nnodeids += cnt;
	}
	*ids = s->nodeids + s->lnode[l];
	*n = cnt;
	return 0;
}

static uint8_t frame_flags(const struct src *s, const struct sframe *f)
{
	const struct profile *p = s->p;
	const struct prof_location *loc = &p->locs[f->loc];
	uint8_t fl = 0;

	if (loc->mapping < p->nmaps)
		fl |= s->mflags[loc->mapping];
	if (f->line >= 0) {
		uint32_t fn = loc->lines[f->line].function;
		if (fn < p->nfuncs)
			fl |= s->fflags[fn];
	}
	return fl;
}

/* Expands, drops and filters one sample and appends it to the view. */
static int add_sample(struct rep_view *v, struct src *s, const struct prof_sample *smp,
		      const struct rxset *rx)
{
	const struct profile *p = s->p;
	int64_t w = smp->v[v->o.type] * s->sign;
	uint32_t start = 0;

	if (w == 0 || smp->nlocs == 0)
		return 0;

	/* drop_frames: from the root, the first pruned location after a user
	 * frame cuts the stack (pprof's Prune). */
	bool user = false;
	for (int64_t i = (int64_t)smp->nlocs - 1; i >= 0; i--) {
		uint32_t l = smp->locs[i];
		uint8_t pr = l < p->nlocs ? s->lprune[l] : L_NONE;
		if (pr == L_NONE) {
			user = true;
			continue;
		}
		if (!user)
			continue;
		start = pr == L_PRUNE ? (uint32_t)i + 1 : (uint32_t)i;
		break;
	}

	size_t nf = 0;
	for (uint32_t i = start; i < smp->nlocs; i++) {
		uint32_t l = smp->locs[i];
		if (l >= p->nlocs)
			continue;
		const struct prof_location *loc = &p->locs[l];
		uint32_t cnt = loc->nlines ? loc->nlines - s->lfirst[l] : 1;
		if (rep_grow(&s->fr, &s->cfr, nf + cnt, sizeof(*s->fr)))
			return -ENOMEM;
		for (uint32_t j = 0; j < cnt; j++) {
			s->fr[nf].loc = l;
			s->fr[nf].line = loc->nlines ? (int32_t)(s->lfirst[l] + j) : -1;
			nf++;
		}
	}

	/* Allocator frames: the leaf-side run goes up to its last entry frame
	 * (internal names rootward of that may be the program's own), unless
	 * that is everything. */
	size_t skip = 0;
	for (size_t i = 0; i < nf; i++) {
		uint8_t fl = frame_flags(s, &s->fr[i]);
		if (!(fl & (F_ENTRY | F_INTERNAL)))
			break;
		if (fl & F_ENTRY)
			skip = i + 1;
	}
	if (skip == nf)
		skip = 0;

	if (rx->has_focus || rx->has_ignore) {
		bool focus = !rx->has_focus;
		for (size_t i = skip; i < nf; i++) {
			uint8_t fl = frame_flags(s, &s->fr[i]);
			if (fl & F_IGNORE)
				return 0;
			if (fl & F_FOCUS)
				focus = true;
		}
		if (!focus)
			return 0;
	}
	if (skip == nf)
		return 0;

	size_t n = nf - skip;
	if (rep_grow(&v->frames, &v->cframes, v->nframes + n, sizeof(*v->frames)))
		return -ENOMEM;
	if (rep_grow(&v->samples, &v->csamples, v->nsamples + 1, sizeof(*v->samples)))
		return -ENOMEM;

	/* root first */
	size_t o = v->nframes;
	for (size_t i = nf; i-- > skip;) {
		const struct sframe *f = &s->fr[i];
		uint32_t *ids = NULL, cnt = 0;
		int rc = loc_nodes(v, s, f->loc, &ids, &cnt);
		if (rc)
			return rc;
		uint32_t k = f->line < 0 ? 0 : (uint32_t)f->line - s->lfirst[f->loc];
		v->frames[o].node = ids[k];
		v->frames[o].inl = k != cnt - 1;
		o++;
	}
	v->samples[v->nsamples].w = w;
	v->samples[v->nsamples].off = (uint32_t)v->nframes;
	v->samples[v->nsamples].n = (uint32_t)n;
	v->nsamples++;
	v->nframes = o;
	return 0;
}

static int add_profile(struct rep_view *v, const struct profile *p, int sign, const struct rxset *rx)
{
	struct src s;
	int rc = src_init(v, &s, p, sign, rx);
	for (size_t i = 0; !rc && i < p->nsamples; i++)
		rc = add_sample(v, &s, &p->samples[i], rx);
	src_free(&s);
	return rc;
}

static int64_t abs_total(const struct profile *p, enum prof_type t)
{
	int64_t sum = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		int64_t x = p->samples[i].v[t];
		sum += x < 0 ? -x : x;
	}
	return sum;
}

/* ---- build -------------------------------------------------------------- */

static int compile_rx(regex_t *rx, const char *re, const char *what, char err[REP_ERRLEN])
{
	int rc = regcomp(rx, re, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		char msg[128];
		regerror(rc, rx, msg, sizeof(msg));
		regfree(rx);
		snprintf(err, REP_ERRLEN, "bad %s regex '%s': %s", what, re, msg);
		return -EINVAL;
	}
	return 0;
}

static void rx_free(struct rxset *rx)
{
	if (rx->has_focus)
		regfree(&rx->focus);
	if (rx->has_ignore)
		regfree(&rx->ignore);
	if (rx->has_symbol)
		regfree(&rx->symbol);
}

/* pprof's combineHeaders for the report header. */
static int merge_header(struct rep_view *v, const struct profile *p, const struct profile *base)
{
	const struct profile *src[2] = { p, base };
	size_t n = p->ncomments + (base ? base->ncomments : 0);

	v->comments = calloc(n + 1, sizeof(*v->comments));
	if (!v->comments)
		return -ENOMEM;
	for (int i = 0; i < 2 && src[i]; i++) {
		const struct profile *s = src[i];
		if (v->time_nanos == 0 || s->time_nanos < v->time_nanos)
			v->time_nanos = s->time_nanos;
		v->duration_nanos += s->duration_nanos;
		for (size_t c = 0; c < s->ncomments; c++) {
			bool dup = false;
			for (size_t k = 0; k < v->ncomments && !dup; k++)
				dup = !strcmp(v->comments[k], s->comments[c]);
			if (!dup && !(v->comments[v->ncomments++] = intern(v, s->comments[c])))
				return -ENOMEM;
		}
	}
	return 0;
}

static bool has_type(const struct profile *p, enum prof_type t)
{
	return p->has_alloc || t == PT_INUSE_SPACE || t == PT_INUSE_OBJECTS;
}

int rep_build(const struct profile *p, const struct rep_opts *o, struct rep_view **out,
	      char err[REP_ERRLEN])
{
	struct rxset rx;
	struct rep_view *v;
	int rc;

	*out = NULL;
	err[0] = 0;
	memset(&rx, 0, sizeof(rx));
	if ((unsigned)o->type >= PT_NTYPES || o->nodecount < 0 ||
	    o->nodefraction < 0 || o->edgefraction < 0) {
		snprintf(err, REP_ERRLEN, "invalid report options");
		return -EINVAL;
	}
	if (o->kind == REP_DIFF && !o->base) {
		snprintf(err, REP_ERRLEN, "diff needs a base profile");
		return -EINVAL;
	}
	if ((o->kind == REP_PEEK || o->kind == REP_LIST) && (!o->symbol || !*o->symbol)) {
		snprintf(err, REP_ERRLEN, "%s needs a regex", o->kind == REP_PEEK ? "peek" : "list");
		return -EINVAL;
	}
	if (!has_type(p, o->type) || (o->base && !has_type(o->base, o->type))) {
		snprintf(err, REP_ERRLEN, "%s has no %s values (it has inuse_space, inuse_objects)",
			 has_type(p, o->type) ? "the base profile" : "the profile",
			 prof_type_name(o->type));
		return -ENODATA;
	}
	if (o->focus && *o->focus) {
		if ((rc = compile_rx(&rx.focus, o->focus, "--focus", err)))
			return rc;
		rx.has_focus = true;
	}
	if (o->ignore && *o->ignore) {
		if ((rc = compile_rx(&rx.ignore, o->ignore, "--ignore", err))) {
			rx_free(&rx);
			return rc;
		}
		rx.has_ignore = true;
	}
	if (o->symbol && *o->symbol) {
		if ((rc = compile_rx(&rx.symbol, o->symbol, o->kind == REP_LIST ? "list" : "peek", err))) {
			rx_free(&rx);
			return rc;
		}
		rx.has_symbol = true;
	}

	v = calloc(1, sizeof(*v));
	if (!v || !(v->strs = prof_new())) {
		free(v);
		rx_free(&rx);
		snprintf(err, REP_ERRLEN, "out of memory");
		return -ENOMEM;
	}
	v->o = *o;
	if (o->kind == REP_LIST)
		v->o.gran = REP_GRAN_LINES;
	if (o->kind == REP_PEEK || o->kind == REP_LIST) {
		v->o.nodecount = 0;
		v->o.nodefraction = 0;
		v->o.edgefraction = 0;
	}
	v->o.focus = intern(v, o->focus);
	v->o.ignore = intern(v, o->ignore);
	v->o.symbol = intern(v, o->symbol);
	v->o.name = intern(v, o->name);
	v->o.base_name = intern(v, o->base_name);
	v->p = p;
	v->unit = prof_type_unit(o->type);
	if ((rc = merge_header(v, p, o->base)))
		goto fail;

	if (o->kind == REP_DIFF) {
		/* pprof's -diff_base: base values negated, percentages of the
		 * base; nodes match by name, so the two need not share
		 * addresses. */
		v->new_total = prof_total(p, o->type);
		v->base_total = prof_total(o->base, o->type);
		v->total = abs_total(o->base, o->type);
		rc = add_profile(v, p, 1, &rx);
		if (!rc)
			rc = add_profile(v, o->base, -1, &rx);
	} else if (o->base) {
		/* pprof's -base: merge base * -1 into the profile; the total is
		 * of the net stacks */
		v->net = prof_clone(p);
		rc = v->net ? prof_merge(v->net, o->base, -1) : -ENOMEM;
		if (!rc)
			rc = prof_compact(v->net);
		if (!rc) {
			v->total = abs_total(v->net, o->type);
			rc = add_profile(v, v->net, 1, &rx);
		}
	} else {
		v->total = abs_total(p, o->type);
		rc = add_profile(v, p, 1, &rx);
	}
	if (rc)
		goto fail;

	switch (o->kind) {
	case REP_TOP:
	case REP_DIFF:
		if ((rc = rep_graph_trim(v)) || (rc = rep_graph_rows(v)))
			goto fail;
		break;
	case REP_TREE:
		if ((rc = rep_graph_trim(v)) || (rc = rep_graph_links(v)))
			goto fail;
		break;
	case REP_PEEK: {
		if ((rc = rep_graph_build(v, NULL)) || (rc = rep_graph_sort(v)))
			goto fail;
		v->orig_count = v->norder;
		v->matched = calloc(v->norder + 1, sizeof(*v->matched));
		if (!v->matched) {
			rc = -ENOMEM;
			goto fail;
		}
		size_t nm = 0;
		for (size_t i = 0; i < v->norder; i++) {
			v->matched[i] = regexec(&rx.symbol, v->nodes[v->order[i]].pname, 0, NULL, 0) == 0;
			nm += v->matched[i];
		}
		if (!nm) {
			snprintf(err, REP_ERRLEN, "no matches found for regexp: %s", o->symbol);
			rc = -ENOENT;
			goto fail;
		}
		if ((rc = rep_graph_links(v)))
			goto fail;
		break;
	}
	case REP_LIST:
		if ((rc = rep_graph_build(v, NULL)) || (rc = rep_graph_sort(v)))
			goto fail;
		v->orig_count = v->norder;
		if ((rc = rep_build_list(v, &rx.symbol)))
			goto fail;
		if (!v->nroutines) {
			snprintf(err, REP_ERRLEN, "no matches found for regexp: %s", o->symbol);
			rc = -ENOENT;
			goto fail;
		}
		break;
	}
	rep_pick_unit(v);
	rx_free(&rx);
	*out = v;
	return 0;
fail:
	if (!err[0])
		snprintf(err, REP_ERRLEN, "%s", strerror(-rc));
	rx_free(&rx);
	rep_free(v);
	return rc;
}

void rep_free(struct rep_view *v)
{
	if (!v)
		return;
	if (v->links)
		for (size_t i = 0; i < v->norder; i++) {
			free(v->links[i].in);
			free(v->links[i].out);
		}
	free(v->links);
	for (size_t i = 0; i < v->nroutines; i++)
		free(v->routines[i].lines);
	free(v->routines);
	free(v->matched);
	free(v->comments);
	free(v->rows);
	free(v->order);
	free(v->edges);
	free(v->ehash);
	free(v->samples);
	free(v->frames);
	free(v->nodes);
	free(v->nhash);
	prof_free(v->net);
	prof_free(v->strs);
	free(v);
}

size_t rep_nrows(const struct rep_view *v)
{
	return v->rows ? v->norder : 0;
}

const struct rep_row *rep_row(const struct rep_view *v, size_t i)
{
	return v->rows && i < v->norder ? &v->rows[i] : NULL;
}

int64_t rep_total(const struct rep_view *v)
{
	return v->total;
}
