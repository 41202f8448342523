/* fmt_pprof.c - pprof profile.proto (gzipped) reader and writer, with protobuf-c and zlib. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "format.h"
#include "profile.pb-c.h"

/* Nothing legitimate comes near it; a gzip bomb must not eat the machine. */
#define MAX_DECOMPRESSED ((size_t)1 << 30)

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__ValueType PbValueType;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;

static int errf(char err[FMT_ERRLEN], int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int errf(char err[FMT_ERRLEN], int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, FMT_ERRLEN, fmt, ap);
	va_end(ap);
	return rc;
}

/* ======================================================================
 * Writer
 * ====================================================================== */

/* The string table under construction: "" first, then in order of use. */
struct strtab {
	const char **str;
	size_t n, cap;
	struct { const char *s; int64_t idx; } *slot;
	size_t scap;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h ^ (h >> 29);
}

static int strtab_rehash(struct strtab *t)
{
	size_t ncap = t->scap ? t->scap * 2 : 1024;
	void *ns = calloc(ncap, sizeof(*t->slot));

	if (!ns)
		return -ENOMEM;
	free(t->slot);
	t->slot = ns;
	t->scap = ncap;
	for (size_t i = 0; i < t->n; i++) {
		size_t j = str_hash(t->str[i]) & (ncap - 1);
		while (t->slot[j].s)
			j = (j + 1) & (ncap - 1);
		t->slot[j].s = t->str[i];
		t->slot[j].idx = i;
	}
	return 0;
}

/* Index of s in the table, adding it; -ENOMEM on failure.  NULL is "". */
static int64_t strtab_idx(struct strtab *t, const char *s)
{
	if (!s)
		s = "";
	if ((t->n + 1) * 2 > t->scap && strtab_rehash(t))
		return -ENOMEM;
	size_t j = str_hash(s) & (t->scap - 1);
	for (; t->slot[j].s; j = (j + 1) & (t->scap - 1))
		if (strcmp(t->slot[j].s, s) == 0)
			return t->slot[j].idx;
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 256;
		const char **ns = realloc(t->str, nc * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		t->str = ns;
		t->cap = nc;
	}
	t->str[t->n] = s;
	t->slot[j].s = s;
	t->slot[j].idx = t->n;
	return (int64_t)t->n++;
}

/* A ProtobufCBuffer that deflates what protobuf-c packs straight into a FILE. */
struct gzsink {
	ProtobufCBuffer base;
	z_stream z;
	FILE *out;
	int err;              /* 0, or -errno of the first failure */
	unsigned char buf[65536];
};

static void gz_drain(struct gzsink *g, int flush)
{
	int zr;

	do {
		g->z.next_out = g->buf;
		g->z.avail_out = sizeof(g->buf);
		zr = deflate(&g->z, flush);
		if (zr == Z_STREAM_ERROR) {
			g->err = -EIO;
			return;
		}
		size_t have = sizeof(g->buf) - g->z.avail_out;
		if (have && !g->err && fwrite(g->buf, 1, have, g->out) != have)
			g->err = errno ? -errno : -EIO;
	} while (g->z.avail_out == 0 || (flush == Z_FINISH && zr != Z_STREAM_END));
}

static void gz_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	struct gzsink *g = (struct gzsink *)b;

	while (len && !g->err) {
		/* avail_in is 32 bits; feed huge appends in pieces. */
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
		g->z.next_in = (Bytef *)data;
		g->z.avail_in = n;
		gz_drain(g, Z_NO_FLUSH);
		data += n;
		len -= n;
	}
}

static const enum prof_type order_alloc[] = {
	PT_ALLOC_OBJECTS, PT_ALLOC_SPACE, PT_INUSE_OBJECTS, PT_INUSE_SPACE,
};
static const enum prof_type order_inuse[] = { PT_INUSE_OBJECTS, PT_INUSE_SPACE };

int pprof_write(const struct profile *p, FILE *out, char err[FMT_ERRLEN])
{
	PbProfile pb = PERFTOOLS__PROFILES__PROFILE__INIT;
	PbValueType vt[PT_NTYPES], period_type = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	PbValueType *vtp[PT_NTYPES];
	struct strtab st = { 0 };
	const enum prof_type *order = p->has_alloc ? order_alloc : order_inuse;
	size_t ntypes = p->has_alloc ? 4 : 2;
	PbMapping *maps = NULL, **mapp = NULL;
	PbFunction *funcs = NULL, **funcp = NULL;
	PbLocation *locs = NULL, **locp = NULL;
	PbLine *lines = NULL, **linep = NULL;
	PbSample *samples = NULL, **samplep = NULL;
	PbLabel *labels = NULL, **labelp = NULL;
	uint64_t *locids = NULL;
	int64_t *values = NULL, *comments = NULL;
	size_t nlines = 0, nlocids = 0, nlabels = 0;
	struct gzsink *g = NULL;
	int rc = -ENOMEM;
	int64_t ix;

	err[0] = '\0';
	if (prof_validate(p))
		return errf(err, -EINVAL, "internal error: inconsistent profile");

#define STR(dst, s) do { if ((ix = strtab_idx(&st, (s))) < 0) goto out; (dst) = ix; } while (0)
	STR(ix, "");
	for (size_t i = 0; i < ntypes; i++) {
		vt[i] = (PbValueType)PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
		STR(vt[i].type, prof_type_name(order[i]));
		STR(vt[i].unit, prof_type_unit(order[i]));
		vtp[i] = &vt[i];
		if (order[i] == PT_INUSE_SPACE)
			pb.default_sample_type = vt[i].type;
	}
	pb.n_sample_type = ntypes;
	pb.sample_type = vtp;

	for (size_t i = 0; i < p->nsamples; i++) {
		nlocids += p->samples[i].nlocs;
		nlabels += p->samples[i].nlabels;
	}
	for (size_t i = 0; i < p->nlocs; i++)
		nlines += p->locs[i].nlines;

	/* calloc(0) may return NULL; ask for at least one element. */
#define ALLOC(ptr, n) do { if (!((ptr) = calloc((n) != 0 ? (n) : 1, sizeof(*(ptr))))) goto out; } while (0)
	ALLOC(samples, p->nsamples);
	ALLOC(samplep, p->nsamples);
	ALLOC(locids, nlocids);
	ALLOC(values, p->nsamples * ntypes);
	ALLOC(labels, nlabels);
	ALLOC(labelp, nlabels);
	ALLOC(maps, p->nmaps);
	ALLOC(mapp, p->nmaps);
	ALLOC(funcs, p->nfuncs);
	ALLOC(funcp, p->nfuncs);
	ALLOC(locs, p->nlocs);
	ALLOC(locp, p->nlocs);
	ALLOC(lines, nlines);
	ALLOC(linep, nlines);
	ALLOC(comments, p->ncomments);

	uint64_t *lid = locids;
	int64_t *val = values;
	size_t lab = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];
		PbSample *ps = &samples[i];
		*ps = (PbSample)PERFTOOLS__PROFILES__SAMPLE__INIT;
		ps->n_location_id = s->nlocs;
		ps->location_id = lid;
		for (uint32_t k = 0; k < s->nlocs; k++)
			*lid++ = (uint64_t)s->locs[k] + 1;
		ps->n_value = ntypes;
		ps->value = val;
		for (size_t k = 0; k < ntypes; k++)
			*val++ = s->v[order[k]];
		ps->n_label = s->nlabels;
		ps->label = &labelp[lab];
		for (uint32_t k = 0; k < s->nlabels; k++, lab++) {
			const struct prof_label *l = &s->labels[k];
			PbLabel *pl = &labels[lab];
			*pl = (PbLabel)PERFTOOLS__PROFILES__LABEL__INIT;
			STR(pl->key, l->key);
			if (l->str) {
				STR(pl->str, l->str);
			} else {
				pl->num = l->num;
				if (l->num_unit)
					STR(pl->num_unit, l->num_unit);
			}
			labelp[lab] = pl;
		}
		samplep[i] = ps;
	}
	pb.n_sample = p->nsamples;
	pb.sample = samplep;

	for (size_t i = 0; i < p->nmaps; i++) {
		const struct prof_mapping *m = &p->maps[i];
		PbMapping *pm = &maps[i];
		*pm = (PbMapping)PERFTOOLS__PROFILES__MAPPING__INIT;
		pm->id = i + 1;
		pm->memory_start = m->start;
		pm->memory_limit = m->limit;
		pm->file_offset = m->offset;
		STR(pm->filename, m->file);
		STR(pm->build_id, m->build_id);
		pm->has_functions = m->has_functions;
		pm->has_filenames = m->has_filenames;
		pm->has_line_numbers = m->has_line_numbers;
		pm->has_inline_frames = m->has_inline_frames;
		mapp[i] = pm;
	}
	pb.n_mapping = p->nmaps;
	pb.mapping = mapp;

	size_t li = 0;
	for (size_t i = 0; i < p->nlocs; i++) {
		const struct prof_location *l = &p->locs[i];
		PbLocation *pl = &locs[i];
		*pl = (PbLocation)PERFTOOLS__PROFILES__LOCATION__INIT;
		pl->id = i + 1;
		pl->mapping_id = l->mapping == PROF_NONE ? 0 : (uint64_t)l->mapping + 1;
		pl->address = l->address;
		pl->is_folded = l->is_folded;
		pl->n_line = l->nlines;
		pl->line = &linep[li];
		for (uint32_t k = 0; k < l->nlines; k++, li++) {
			lines[li] = (PbLine)PERFTOOLS__PROFILES__LINE__INIT;
			lines[li].function_id = (uint64_t)l->lines[k].function + 1;
			lines[li].line = l->lines[k].line;
			lines[li].column = l->lines[k].column;
			linep[li] = &lines[li];
		}
		locp[i] = pl;
	}
	pb.n_location = p->nlocs;
	pb.location = locp;

	for (size_t i = 0; i < p->nfuncs; i++) {
		const struct prof_function *f = &p->funcs[i];
		PbFunction *pf = &funcs[i];
		*pf = (PbFunction)PERFTOOLS__PROFILES__FUNCTION__INIT;
		pf->id = i + 1;
		STR(pf->name, f->name);
		STR(pf->system_name, f->system_name);
		STR(pf->filename, f->filename);
		pf->start_line = f->start_line;
		funcp[i] = pf;
	}
	pb.n_function = p->nfuncs;
	pb.function = funcp;

	if (p->drop_frames && p->drop_frames[0])
		STR(pb.drop_frames, p->drop_frames);
	for (size_t i = 0; i < p->ncomments; i++)
		STR(comments[i], p->comments[i]);
	pb.n_comment = p->ncomments;
	pb.comment = comments;
	pb.time_nanos = p->time_nanos;
	pb.duration_nanos = p->duration_nanos;
	STR(period_type.type, "space");
	STR(period_type.unit, "bytes");
	pb.period_type = &period_type;
	pb.period = p->period;
#undef STR
#undef ALLOC

	pb.n_string_table = st.n;
	pb.string_table = (char **)st.str;

	g = calloc(1, sizeof(*g));
	if (!g)
		goto out;
	g->base.append = gz_append;
	g->out = out;
	/* windowBits 15 + 16: a gzip wrapper, header with mtime 0, so equal
	 * profiles give equal bytes.  Fastest level, as Go's runtime/pprof:
	 * snapshots are written on busy machines, and deflate dominates. */
	if (deflateInit2(&g->z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		g = NULL;
		goto out;
	}
	perftools__profiles__profile__pack_to_buffer(&pb, &g->base);
	if (!g->err) {
		g->z.next_in = NULL;
		g->z.avail_in = 0;
		gz_drain(g, Z_FINISH);
	}
	deflateEnd(&g->z);
	rc = g->err;
	if (rc)
		errf(err, rc, "write error: %s", strerror(-rc));
out:
	if (rc == -ENOMEM && !err[0])
		errf(err, rc, "out of memory");
	free(g);
	free(st.str);
	free(st.slot);
	free(maps);
	free(mapp);
	free(funcs);
	free(funcp);
	free(locs);
	free(locp);
	free(lines);
	free(linep);
	free(samples);
	free(samplep);
	free(labels);
	free(labelp);
	free(locids);
	free(values);
	free(comments);
	return rc;
}

/* ======================================================================
 * Reader
 * ====================================================================== */

/* Gunzips buf (one or more concatenated gzip members) into a new buffer. */
static int gunzip(const unsigned char *buf, size_t len, unsigned char **outp,
		  size_t *outlen, char err[FMT_ERRLEN])
{
	z_stream z;
	size_t cap = len < MAX_DECOMPRESSED / 4 ? len * 4 : MAX_DECOMPRESSED;
	size_t used = 0;
	unsigned char *out;
	int zr, rc;

	if (cap < 65536)
		cap = 65536;
	out = malloc(cap);
	if (!out)
		return errf(err, -ENOMEM, "out of memory");
	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 15 + 16) != Z_OK) {
		free(out);
		return errf(err, -ENOMEM, "out of memory");
	}
	/* len fits: format.c caps files at 1 GiB. */
	z.next_in = (Bytef *)buf;
	z.avail_in = len > UINT32_MAX ? UINT32_MAX : (uInt)len;
	for (;;) {
		if (used == cap) {
			if (cap >= MAX_DECOMPRESSED) {
				rc = errf(err, -EFBIG, "decompressed size exceeds 1 GiB");
				goto fail;
			}
			size_t nc = cap * 2 > MAX_DECOMPRESSED ? MAX_DECOMPRESSED : cap * 2;
			unsigned char *no = realloc(out, nc);
			if (!no) {
				rc = errf(err, -ENOMEM, "out of memory");
				goto fail;
			}
			out = no;
			cap = nc;
		}
		z.next_out = out + used;
		z.avail_out = cap - used > UINT32_MAX ? UINT32_MAX : (uInt)(cap - used);
		size_t before = z.avail_out;
		zr = inflate(&z, Z_NO_FLUSH);
		used += before - z.avail_out;
		if (zr == Z_STREAM_END) {
			size_t consumed = len - z.avail_in;
			if (z.avail_in == 0)
				break;
			/* Another gzip member may follow, as gzip(1) allows. */
			if (z.avail_in >= 2 && z.next_in[0] == 0x1f && z.next_in[1] == 0x8b) {
				inflateReset(&z);
				continue;
			}
			rc = errf(err, -EINVAL, "garbage after the gzip stream at byte %zu", consumed);
			goto fail;
		}
		if (zr == Z_DATA_ERROR) {
			rc = errf(err, -EINVAL, "corrupt gzip stream at byte %zu: %s",
				  len - z.avail_in, z.msg ? z.msg : "data error");
			goto fail;
		}
		if (zr == Z_MEM_ERROR) {
			rc = errf(err, -ENOMEM, "out of memory");
			goto fail;
		}
		if (zr == Z_BUF_ERROR && z.avail_in == 0) {
			rc = errf(err, -EINVAL, "truncated gzip stream at byte %zu", len);
			goto fail;
		}
		if (zr != Z_OK && zr != Z_BUF_ERROR) {
			rc = errf(err, -EINVAL, "corrupt gzip stream: %s", z.msg ? z.msg : "error");
			goto fail;
		}
		if (z.avail_in == 0 && z.avail_out != 0) {
			/* All input consumed, output room left, no stream end. */
			rc = errf(err, -EINVAL, "truncated gzip stream at byte %zu", len);
			goto fail;
		}
	}
	inflateEnd(&z);
	*outp = out;
	*outlen = used;
	return 0;
fail:
	inflateEnd(&z);
	free(out);
	return rc;
}

/* id -> index, for ids that are usually 1..n in order. */
struct idmap {
	const char *what;       /* "mapping", "location", "function" */
	size_t n;
	bool dense;             /* ids are exactly 1..n in order */
	struct { uint64_t id; uint32_t idx; } *sorted;
};

static int idpair_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int idmap_build(struct idmap *m, const char *what, size_t n,
		       uint64_t (*get)(const PbProfile *, size_t), const PbProfile *pb,
		       char err[FMT_ERRLEN])
{
	m->what = what;
	m->n = n;
	m->dense = true;
	m->sorted = NULL;
	for (size_t i = 0; i < n; i++) {
		uint64_t id = get(pb, i);
		if (id == 0)
			return errf(err, -EINVAL, "%s %zu has id 0", what, i);
		if (id != i + 1)
			m->dense = false;
	}
	if (m->dense)
		return 0;
	m->sorted = malloc(n * sizeof(*m->sorted));
	if (!m->sorted)
		return errf(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		m->sorted[i].id = get(pb, i);
		m->sorted[i].idx = i;
	}
	qsort(m->sorted, n, sizeof(*m->sorted), idpair_cmp);
	for (size_t i = 1; i < n; i++)
		if (m->sorted[i].id == m->sorted[i - 1].id)
			return errf(err, -EINVAL, "%s id %" PRIu64 " appears twice",
				    what, m->sorted[i].id);
	return 0;
}

/* Index of id, or -1. */
static int64_t idmap_get(const struct idmap *m, uint64_t id)
{
	if (m->dense)
		return (id >= 1 && id <= m->n) ? (int64_t)(id - 1) : -1;
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->sorted[mid].id < id)
			lo = mid + 1;
		else if (m->sorted[mid].id > id)
			hi = mid;
		else
			return m->sorted[mid].idx;
	}
	return -1;
}

static uint64_t map_id(const PbProfile *pb, size_t i) { return pb->mapping[i]->id; }
static uint64_t loc_id(const PbProfile *pb, size_t i) { return pb->location[i]->id; }
static uint64_t fn_id(const PbProfile *pb, size_t i) { return pb->function[i]->id; }

struct rd {
	const PbProfile *pb;
	struct profile *p;
	const char **interned;    /* per string index, lazily */
	char *err;
};

/* Checks string index ix (for `what`) and returns the interned string via *s. */
static int rd_str(struct rd *r, int64_t ix, const char **s, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int rd_str(struct rd *r, int64_t ix, const char **s, const char *fmt, ...)
{
	if (ix < 0 || (uint64_t)ix >= r->pb->n_string_table) {
		char where[160];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(where, sizeof(where), fmt, ap);
		va_end(ap);
		return errf(r->err, -EINVAL,
			    "%s: string index %" PRId64 " out of range (string table has %zu entries)",
			    where, ix, r->pb->n_string_table);
	}
	if (!r->interned[ix]) {
		const char *str = r->pb->string_table[ix];
		r->interned[ix] = prof_intern(r->p, str ? str : "");
		if (!r->interned[ix])
			return errf(r->err, -ENOMEM, "out of memory");
	}
	*s = r->interned[ix];
	return 0;
}

static const char *type_str(const PbProfile *pb, const PbValueType *vt, char *buf, size_t size)
{
	const char *t = "?", *u = "?";

	if (vt->type >= 0 && (uint64_t)vt->type < pb->n_string_table)
		t = pb->string_table[vt->type];
	if (vt->unit >= 0 && (uint64_t)vt->unit < pb->n_string_table)
		u = pb->string_table[vt->unit];
	snprintf(buf, size, "%s/%s", t, u);
	return buf;
}

static int convert(struct rd *r)
{
	const PbProfile *pb = r->pb;
	struct profile *p = r->p;
	struct idmap mm = { 0 }, lm = { 0 }, fm = { 0 };
	int col[PT_NTYPES];        /* column of each heap type, -1 absent */
	uint32_t *fidx = NULL, *stack = NULL;
	struct prof_line *lines = NULL;
	struct prof_label *labels = NULL;
	size_t lines_cap = 0, stack_cap = 0, labels_cap = 0;
	const char *s;
	int rc;

	if (pb->n_string_table == 0)
		return errf(r->err, -EINVAL, "string table is empty");
	if (!pb->string_table[0] || pb->string_table[0][0])
		return errf(r->err, -EINVAL, "string table entry 0 is not empty");

	/* Sample types, matched by name. */
	for (int t = 0; t < PT_NTYPES; t++)
		col[t] = -1;
	for (size_t i = 0; i < pb->n_sample_type; i++) {
		const PbValueType *vt = pb->sample_type[i];
		const char *name, *unit;
		if ((rc = rd_str(r, vt->type, &name, "sample type %zu", i)) ||
		    (rc = rd_str(r, vt->unit, &unit, "sample type %zu unit", i)))
			return rc;
		int t = prof_type_parse(name);
		if (t < 0 || strcmp(unit, prof_type_unit(t)) != 0)
			continue;
		if (col[t] >= 0)
			return errf(r->err, -EINVAL, "sample type %s appears twice", name);
		col[t] = i;
	}
	if (col[PT_INUSE_SPACE] < 0 && col[PT_INUSE_OBJECTS] < 0 &&
	    col[PT_ALLOC_SPACE] < 0 && col[PT_ALLOC_OBJECTS] < 0) {
		char list[FMT_ERRLEN - 40], tb[96];
		size_t used = 0;
		list[0] = '\0';
		for (size_t i = 0; i < pb->n_sample_type && used < sizeof(list); i++)
			used += snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
					 type_str(pb, pb->sample_type[i], tb, sizeof(tb)));
		if (!pb->n_sample_type)
			return errf(r->err, -EINVAL, "not a heap profile (no sample types)");
		return errf(r->err, -EINVAL, "not a heap profile (sample types: %s)", list);
	}
	p->has_alloc = col[PT_ALLOC_OBJECTS] >= 0 && col[PT_ALLOC_SPACE] >= 0;

	if (pb->period_type) {
		if ((rc = rd_str(r, pb->period_type->type, &s, "period type")) ||
		    (rc = rd_str(r, pb->period_type->unit, &s, "period type unit")))
			return rc;
	}
	if (pb->period < 0)
		return errf(r->err, -EINVAL, "negative period %" PRId64, pb->period);
	p->period = pb->period;
	p->time_nanos = pb->time_nanos;
	p->duration_nanos = pb->duration_nanos;
	if ((rc = rd_str(r, pb->default_sample_type, &s, "default sample type")) ||
	    (rc = rd_str(r, pb->keep_frames, &s, "keep_frames")) ||
	    (rc = rd_str(r, pb->drop_frames, &s, "drop_frames")))
		return rc;
	p->drop_frames = s[0] ? s : NULL;
	for (size_t i = 0; i < pb->n_comment; i++) {
		if ((rc = rd_str(r, pb->comment[i], &s, "comment %zu", i)))
			return rc;
		/* prof_add_comment would re-intern; "%s" keeps it verbatim. */
		if (prof_add_comment(p, "%s", s))
			return errf(r->err, -ENOMEM, "out of memory");
	}

	/* Mappings, in file order (mapping[0] is the main program). */
	if ((rc = idmap_build(&mm, "mapping", pb->n_mapping, map_id, pb, r->err)))
		goto out;
	for (size_t i = 0; i < pb->n_mapping; i++) {
		const PbMapping *m = pb->mapping[i];
		const char *file, *bid;
		if ((rc = rd_str(r, m->filename, &file, "mapping id %" PRIu64 " filename", m->id)) ||
		    (rc = rd_str(r, m->build_id, &bid, "mapping id %" PRIu64 " build_id", m->id)))
			goto out;
		if (m->memory_limit < m->memory_start) {
			rc = errf(r->err, -EINVAL, "mapping id %" PRIu64 ": memory_limit 0x%" PRIx64
				  " is below memory_start 0x%" PRIx64, m->id, m->memory_limit,
				  m->memory_start);
			goto out;
		}
		int64_t mi = prof_add_mapping(p, m->memory_start, m->memory_limit,
					      m->file_offset, file, bid);
		if (mi < 0)
			goto nomem;
		p->maps[mi].has_functions = m->has_functions;
		p->maps[mi].has_filenames = m->has_filenames;
		p->maps[mi].has_line_numbers = m->has_line_numbers;
		p->maps[mi].has_inline_frames = m->has_inline_frames;
	}

	/* Functions. */
	if ((rc = idmap_build(&fm, "function", pb->n_function, fn_id, pb, r->err)))
		goto out;
	if (pb->n_function && !(fidx = malloc(pb->n_function * sizeof(*fidx))))
		goto nomem;
	for (size_t i = 0; i < pb->n_function; i++) {
		const PbFunction *f = pb->function[i];
		const char *name, *sys, *file;
		if ((rc = rd_str(r, f->name, &name, "function id %" PRIu64 " name", f->id)) ||
		    (rc = rd_str(r, f->system_name, &sys, "function id %" PRIu64 " system_name", f->id)) ||
		    (rc = rd_str(r, f->filename, &file, "function id %" PRIu64 " filename", f->id)))
			goto out;
		int64_t fi = prof_add_function(p, name, sys, file, f->start_line);
		if (fi < 0)
			goto nomem;
		fidx[i] = fi;
	}

	/* Locations. */
	if ((rc = idmap_build(&lm, "location", pb->n_location, loc_id, pb, r->err)))
		goto out;
	for (size_t i = 0; i < pb->n_location; i++) {
		const PbLocation *l = pb->location[i];
		uint32_t mapping = PROF_NONE;
		if (l->mapping_id) {
			int64_t mi = idmap_get(&mm, l->mapping_id);
			if (mi < 0) {
				rc = errf(r->err, -EINVAL, "location id %" PRIu64 " refers to mapping id %"
					  PRIu64 " which does not exist", l->id, l->mapping_id);
				goto out;
			}
			mapping = mi;
		}
		if (l->n_line > UINT32_MAX) {
			rc = errf(r->err, -EINVAL, "location id %" PRIu64 " has too many lines", l->id);
			goto out;
		}
		int64_t li = prof_new_location(p, l->address, mapping);
		if (li < 0)
			goto nomem;
		p->locs[li].is_folded = l->is_folded;
		if (l->n_line > lines_cap) {
			struct prof_line *nl = realloc(lines, l->n_line * sizeof(*nl));
			if (!nl)
				goto nomem;
			lines = nl;
			lines_cap = l->n_line;
		}
		for (size_t k = 0; k < l->n_line; k++) {
			const PbLine *ln = l->line[k];
			int64_t fi = idmap_get(&fm, ln->function_id);
			if (fi < 0) {
				rc = errf(r->err, -EINVAL, "location id %" PRIu64 " line %zu refers to "
					  "function id %" PRIu64 " which does not exist",
					  l->id, k, ln->function_id);
				goto out;
			}
			lines[k].function = fidx[fi];
			lines[k].line = ln->line;
			lines[k].column = ln->column;
		}
		if (l->n_line && prof_set_lines(p, li, lines, l->n_line))
			goto nomem;
	}

	/* Samples. */
	for (size_t i = 0; i < pb->n_sample; i++) {
		const PbSample *sm = pb->sample[i];
		int64_t v[PT_NTYPES];

		if (sm->n_value != pb->n_sample_type) {
			rc = errf(r->err, -EINVAL, "sample %zu has %zu values, expected %zu (one per "
				  "sample type)", i, sm->n_value, pb->n_sample_type);
			goto out;
		}
		if (sm->n_location_id > UINT32_MAX || sm->n_label > UINT32_MAX) {
			rc = errf(r->err, -EINVAL, "sample %zu is too large", i);
			goto out;
		}
		if (sm->n_location_id > stack_cap) {
			uint32_t *ns = realloc(stack, sm->n_location_id * sizeof(*ns));
			if (!ns)
				goto nomem;
			stack = ns;
			stack_cap = sm->n_location_id;
		}
		for (size_t k = 0; k < sm->n_location_id; k++) {
			int64_t li = idmap_get(&lm, sm->location_id[k]);
			if (li < 0) {
				rc = errf(r->err, -EINVAL, "sample %zu refers to location id %" PRIu64
					  " which does not exist", i, sm->location_id[k]);
				goto out;
			}
			stack[k] = li;
		}
		if (sm->n_label > labels_cap) {
			struct prof_label *nl = realloc(labels, sm->n_label * sizeof(*nl));
			if (!nl)
				goto nomem;
			labels = nl;
			labels_cap = sm->n_label;
		}
		for (size_t k = 0; k < sm->n_label; k++) {
			const PbLabel *pl = sm->label[k];
			struct prof_label *l = &labels[k];
			memset(l, 0, sizeof(*l));
			if ((rc = rd_str(r, pl->key, &l->key, "sample %zu label %zu key", i, k)) ||
			    (rc = rd_str(r, pl->str, &l->str, "sample %zu label %zu str", i, k)) ||
			    (rc = rd_str(r, pl->num_unit, &l->num_unit, "sample %zu label %zu num_unit", i, k)))
				goto out;
			/* pprof: a label with a string value is a string label. */
			if (pl->str) {
				l->num_unit = NULL;
			} else {
				l->str = NULL;
				l->num = pl->num;
				if (!pl->num_unit)
					l->num_unit = NULL;
			}
		}
		for (int t = 0; t < PT_NTYPES; t++)
			v[t] = col[t] >= 0 ? sm->value[col[t]] : 0;
		if (prof_add_sample(p, stack, sm->n_location_id, v, labels, sm->n_label) < 0)
			goto nomem;
	}
	rc = 0;
	goto out;
nomem:
	rc = errf(r->err, -ENOMEM, "out of memory");
out:
	free(mm.sorted);
	free(lm.sorted);
	free(fm.sorted);
	free(fidx);
	free(stack);
	free(lines);
	free(labels);
	return rc;
}

int pprof_read(const void *buf, size_t len, struct profile **out, char err[FMT_ERRLEN])
{
	const unsigned char *b = buf;
	unsigned char *raw = NULL;
	size_t rawlen = len;
	PbProfile *pb;
	struct rd r = { .err = err };
	int rc;

	*out = NULL;
	err[0] = '\0';
	if (len >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
		if ((rc = gunzip(b, len, &raw, &rawlen, err)))
			return rc;
		b = raw;
	}
	pb = perftools__profiles__profile__unpack(NULL, rawlen, b);
	free(raw);
	if (!pb)
		return errf(err, -EINVAL, "not a protobuf message (or a corrupt one)");
	r.pb = pb;
	r.p = prof_new();
	r.interned = calloc(pb->n_string_table ? pb->n_string_table : 1, sizeof(*r.interned));
	if (!r.p || !r.interned) {
		rc = errf(err, -ENOMEM, "out of memory");
	} else {
		rc = convert(&r);
	}
	free(r.interned);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	if (rc) {
		prof_free(r.p);
		return rc;
	}
	*out = r.p;
	return 0;
}
