/* test_pprof.c - unit tests of the pprof reader and writer (src/fmt_pprof.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "format.h"
#include "profile.pb-c.h"
#include "check.h"

/* A profile using every field the model has. */
static struct profile *build_full(bool has_alloc)
{
	struct profile *p = prof_new();

	p->has_alloc = has_alloc;
	p->period = 524288;
	p->time_nanos = 1700000000123456789LL;
	p->duration_nanos = 10000000000LL;
	prof_add_comment(p, "pid=4242");
	prof_add_comment(p, "backend=interpose");
	p->drop_frames = prof_intern(p, "^(malloc|calloc|hsp_.*)$");
	int64_t m0 = prof_add_mapping(p, 0x555555554000, 0x555555600000, 0x1000,
				      "/usr/bin/server", "0123456789abcdef0123456789abcdef01234567");
	int64_t m1 = prof_add_mapping(p, 0x7ffff7800000, 0x7ffff7990000, 0x28000,
				      "/lib/x86_64-linux-gnu/libc.so.6", "");
	p->maps[m0].has_functions = p->maps[m0].has_filenames = true;
	p->maps[m0].has_line_numbers = p->maps[m0].has_inline_frames = true;
	p->maps[m1].has_functions = true;

	int64_t fmain = prof_add_function(p, "main", "", "server.c", 10);
	int64_t fh = prof_add_function(p, "ns::Handler::run(int)", "_ZN2ns7Handler3runEi",
				       "/src/handler.cc", 42);
	int64_t finl = prof_add_function(p, "std::vector<int>::push_back", "", "vector", 0);
	int64_t fmalloc = prof_add_function(p, "malloc", "", "", 0);

	uint32_t lmalloc = prof_add_location(p, 0x7ffff7812345, PROF_NONE);
	uint32_t lh = prof_add_location(p, 0x555555556789, PROF_NONE);
	uint32_t lmain = prof_add_location(p, 0x5555555561ff, PROF_NONE);
	uint32_t lanon = prof_add_location(p, 0x1000, PROF_NONE);   /* no mapping */
	prof_set_lines(p, lmalloc, &(struct prof_line){ fmalloc, 0, 0 }, 1);
	struct prof_line inl[2] = { { finl, 1187, 9 }, { fh, 57, 3 } };
	prof_set_lines(p, lh, inl, 2);
	prof_set_lines(p, lmain, &(struct prof_line){ fmain, 20, 0 }, 1);
	p->locs[lanon].is_folded = true;

	struct prof_label lab[3] = {
		{ .key = "bytes", .num = 4096, .num_unit = "bytes" },
		{ .key = "thread", .str = "worker-1" },
		{ .key = "object", .num = 7 },
	};
	int64_t s0 = prof_add_sample(p, (uint32_t[]){ lmalloc, lh, lmain }, 3,
				     (int64_t[]){ 134, 548864, 67, 274432 }, lab, 3);
	int64_t s1 = prof_add_sample(p, (uint32_t[]){ lanon, lmain }, 2,
				     (int64_t[]){ 1, 1 << 20, 1, 1 << 20 }, NULL, 0);
	/* Diff-style negative values, including the extremes. */
	int64_t s2 = prof_add_sample(p, (uint32_t[]){ lh }, 1,
				     (int64_t[]){ -3, INT64_MIN, -1, INT64_MAX }, NULL, 0);
	int64_t s3 = prof_add_sample(p, NULL, 0, (int64_t[]){ 0, 0, 0, 0 }, NULL, 0);
	CHECK(s0 == 0 && s1 == 1 && s2 == 2 && s3 == 3);
	if (!has_alloc)
		for (size_t i = 0; i < p->nsamples; i++)
			p->samples[i].v[PT_ALLOC_OBJECTS] = p->samples[i].v[PT_ALLOC_SPACE] = 0;
	CHECK_EQ(prof_validate(p), 0);
	return p;
}

static const char *s_or(const char *s)
{
	return s ? s : "(null)";
}

/* Compares two profiles field by field; reports the first difference. */
static bool same_profile(const struct profile *a, const struct profile *b)
{
#define DIFF(cond, ...) do { if (cond) { fprintf(stderr, "profiles differ: " __VA_ARGS__); fputc('\n', stderr); return false; } } while (0)
	DIFF(a->has_alloc != b->has_alloc, "has_alloc");
	DIFF(a->period != b->period, "period");
	DIFF(a->time_nanos != b->time_nanos, "time_nanos");
	DIFF(a->duration_nanos != b->duration_nanos, "duration_nanos");
	DIFF(strcmp(s_or(a->drop_frames), s_or(b->drop_frames)), "drop_frames");
	DIFF(a->ncomments != b->ncomments, "ncomments");
	for (size_t i = 0; i < a->ncomments; i++)
		DIFF(strcmp(a->comments[i], b->comments[i]), "comment %zu", i);
	DIFF(a->nmaps != b->nmaps, "nmaps %zu %zu", a->nmaps, b->nmaps);
	for (size_t i = 0; i < a->nmaps; i++) {
		const struct prof_mapping *x = &a->maps[i], *y = &b->maps[i];
		DIFF(x->start != y->start || x->limit != y->limit || x->offset != y->offset ||
		     strcmp(x->file, y->file) || strcmp(x->build_id, y->build_id) ||
		     x->has_functions != y->has_functions || x->has_filenames != y->has_filenames ||
		     x->has_line_numbers != y->has_line_numbers ||
		     x->has_inline_frames != y->has_inline_frames, "mapping %zu", i);
	}
	DIFF(a->nfuncs != b->nfuncs, "nfuncs");
	for (size_t i = 0; i < a->nfuncs; i++) {
		const struct prof_function *x = &a->funcs[i], *y = &b->funcs[i];
		DIFF(strcmp(x->name, y->name) || strcmp(x->system_name, y->system_name) ||
		     strcmp(x->filename, y->filename) || x->start_line != y->start_line,
		     "function %zu", i);
	}
	DIFF(a->nlocs != b->nlocs, "nlocs");
	for (size_t i = 0; i < a->nlocs; i++) {
		const struct prof_location *x = &a->locs[i], *y = &b->locs[i];
		DIFF(x->address != y->address || x->mapping != y->mapping ||
		     x->nlines != y->nlines || x->is_folded != y->is_folded, "location %zu", i);
		for (uint32_t k = 0; k < x->nlines; k++)
			DIFF(x->lines[k].function != y->lines[k].function ||
			     x->lines[k].line != y->lines[k].line ||
			     x->lines[k].column != y->lines[k].column, "location %zu line %u", i, k);
	}
	DIFF(a->nsamples != b->nsamples, "nsamples");
	for (size_t i = 0; i < a->nsamples; i++) {
		const struct prof_sample *x = &a->samples[i], *y = &b->samples[i];
		DIFF(x->nlocs != y->nlocs || x->nlabels != y->nlabels, "sample %zu shape", i);
		for (uint32_t k = 0; k < x->nlocs; k++)
			DIFF(x->locs[k] != y->locs[k], "sample %zu loc %u", i, k);
		for (int t = 0; t < PT_NTYPES; t++)
			DIFF(x->v[t] != y->v[t], "sample %zu value %d: %" PRId64 " vs %" PRId64,
			     i, t, x->v[t], y->v[t]);
		for (uint32_t k = 0; k < x->nlabels; k++) {
			const struct prof_label *l = &x->labels[k], *m = &y->labels[k];
			DIFF(strcmp(l->key, m->key) || strcmp(s_or(l->str), s_or(m->str)) ||
			     l->num != m->num || strcmp(s_or(l->num_unit), s_or(m->num_unit)),
			     "sample %zu label %u", i, k);
		}
	}
	return true;
#undef DIFF
}

/* Writes p with pprof_write into memory. */
static unsigned char *write_mem(const struct profile *p, size_t *len)
{
	char err[FMT_ERRLEN], *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	CHECK(f != NULL);
	int rc = pprof_write(p, f, err);
	if (rc)
		fprintf(stderr, "pprof_write: %s\n", err);
	CHECK_EQ(rc, 0);
	fclose(f);
	return (unsigned char *)buf;
}

static unsigned char *gunzip_all(const unsigned char *gz, size_t len, size_t *outlen)
{
	size_t cap = 1 << 20;
	unsigned char *out = malloc(cap);
	z_stream z = { 0 };

	inflateInit2(&z, 31);
	z.next_in = (Bytef *)gz;
	z.avail_in = len;
	z.next_out = out;
	z.avail_out = cap;
	CHECK_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
	*outlen = z.total_out;
	inflateEnd(&z);
	return out;
}

static void test_round_trip(bool has_alloc)
{
	struct profile *p = build_full(has_alloc), *q = NULL, *r = NULL;
	char err[FMT_ERRLEN];
	size_t n1, n2, rawlen;

	unsigned char *b1 = write_mem(p, &n1);
	CHECK(n1 > 20 && b1[0] == 0x1f && b1[1] == 0x8b);
	int rc = pprof_read(b1, n1, &q, err);
	if (rc)
		fprintf(stderr, "pprof_read: %s\n", err);
	CHECK_EQ(rc, 0);
	if (q) {
		CHECK_EQ(prof_validate(q), 0);
		CHECK(same_profile(p, q));
		CHECK_STR(prof_get_comment(q, "pid"), "4242");
		/* write -> read -> write gives the same bytes. */
		unsigned char *b2 = write_mem(q, &n2);
		CHECK_EQ(n2, n1);
		CHECK(n1 == n2 && memcmp(b1, b2, n1) == 0);
		free(b2);
	}

	/* The same message without gzip is read too. */
	unsigned char *raw = gunzip_all(b1, n1, &rawlen);
	CHECK_EQ(fmt_sniff(raw, rawlen), FMT_PPROF);
	CHECK_EQ(pprof_read(raw, rawlen, &r, err), 0);
	CHECK(r && same_profile(p, r));

	/* What is on the wire: sample types in pprof's order, default inuse_space. */
	Perftools__Profiles__Profile *pb = perftools__profiles__profile__unpack(NULL, rawlen, raw);
	CHECK(pb != NULL);
	if (pb) {
		static const char *const want4[] = {
			"alloc_objects", "count", "alloc_space", "bytes",
			"inuse_objects", "count", "inuse_space", "bytes",
		};
		const char *const *want = has_alloc ? want4 : want4 + 4;
		CHECK_EQ(pb->n_sample_type, has_alloc ? 4 : 2);
		CHECK_STR(pb->string_table[0], "");
		for (size_t i = 0; i < pb->n_sample_type; i++) {
			CHECK_STR(pb->string_table[pb->sample_type[i]->type], want[2 * i]);
			CHECK_STR(pb->string_table[pb->sample_type[i]->unit], want[2 * i + 1]);
		}
		CHECK_STR(pb->string_table[pb->default_sample_type], "inuse_space");
		CHECK_STR(pb->string_table[pb->period_type->type], "space");
		CHECK_STR(pb->string_table[pb->period_type->unit], "bytes");
		CHECK_EQ(pb->period, 524288);
		CHECK_EQ(pb->n_mapping, 2);
		CHECK_EQ(pb->mapping[0]->id, 1);
		CHECK_STR(pb->string_table[pb->mapping[0]->build_id],
			  "0123456789abcdef0123456789abcdef01234567");
		CHECK(pb->mapping[0]->has_inline_frames);
		CHECK_EQ(pb->location[3]->mapping_id, 0);
		CHECK_EQ(pb->location[1]->mapping_id, 1);
		CHECK_EQ(pb->sample[0]->location_id[0], 1);
		CHECK_EQ(pb->sample[0]->value[pb->n_sample_type - 1], 274432);
		CHECK_EQ(pb->sample[2]->value[pb->n_sample_type - 1], INT64_MAX);
		CHECK_EQ(pb->sample[0]->n_label, 3);
		CHECK_STR(pb->string_table[pb->sample[0]->label[0]->key], "bytes");
		CHECK_EQ(pb->sample[0]->label[0]->num, 4096);
		for (size_t i = 0; i < pb->n_function; i++)
			CHECK_EQ(pb->function[i]->id, i + 1);
		perftools__profiles__profile__free_unpacked(pb, NULL);
	}
	free(raw);
	free(b1);
	prof_free(p);
	prof_free(q);
	prof_free(r);
}

/* Reading never crashes and either fails with a message or yields a valid profile. */
static int read_robust(const unsigned char *buf, size_t len, char err[FMT_ERRLEN])
{
	struct profile *p = (struct profile *)0x1;
	int rc = pprof_read(buf, len, &p, err);

	if (rc) {
		CHECK(p == NULL);
		CHECK(err[0] != '\0');
	} else {
		CHECK(p != NULL && prof_validate(p) == 0);
		prof_free(p);
	}
	return rc;
}

static void test_truncated_corrupt(void)
{
	struct profile *p = build_full(true);
	char err[FMT_ERRLEN];
	size_t n, rawlen;
	unsigned char *gz = write_mem(p, &n);
	unsigned char *raw = gunzip_all(gz, n, &rawlen);
	unsigned char *tmp = malloc(n > rawlen ? n : rawlen);

	/* Every truncation of the gzip stream is an error. */
	for (size_t len = 1; len < n; len++) {
		int rc = read_robust(gz, len, err);
		CHECK(rc != 0);
		if (len > 20 && rc && !strstr(err, "truncated gzip stream"))
			fprintf(stderr, "truncated at %zu: %s\n", len, err);
		if (len > 20)
			CHECK(strstr(err, "truncated gzip stream") != NULL);
	}
	/* Every single-byte corruption of the gzip stream: error or valid. */
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		memcpy(tmp, gz, n);
		tmp[i] ^= 0x5a;
		bad += read_robust(tmp, n, err) != 0;
	}
	CHECK(bad > (int)n / 2);   /* the CRC catches payload damage */
	/* Trailing garbage. */
	memcpy(tmp, gz, n);
	CHECK(read_robust(gz, n, err) == 0);
	unsigned char *g2 = malloc(n + 3);
	memcpy(g2, gz, n);
	memcpy(g2 + n, "xyz", 3);
	CHECK(read_robust(g2, n + 3, err) != 0);
	CHECK(strstr(err, "garbage after the gzip stream") != NULL);
	/* Two gzip members, as `cat a.gz b.gz` makes: the bytes are one message. */
	free(g2);

	/* Raw protobuf: truncations and corruptions. */
	for (size_t len = 1; len < rawlen; len++)
		read_robust(raw, len, err);
	for (size_t i = 0; i < rawlen; i++) {
		for (int bit = 0; bit < 8; bit += 3) {
			memcpy(tmp, raw, rawlen);
			tmp[i] ^= 1 << bit;
			read_robust(tmp, rawlen, err);
		}
	}
	CHECK(read_robust((const unsigned char *)"hello, world\n", 13, err) != 0);
	CHECK(strstr(err, "not a protobuf message") != NULL);

	free(tmp);
	free(raw);
	free(gz);
	prof_free(p);
}

/* ---- hand-made messages ---------------------------------------------------- */

struct mk {
	Perftools__Profiles__Profile pb;
	Perftools__Profiles__ValueType vt[4], *vtp[4];
	Perftools__Profiles__Sample s[2], *sp[2];
	uint64_t locids[2][2];
	int64_t vals[2][4];
	Perftools__Profiles__Location l[2], *lp[2];
	Perftools__Profiles__Line ln[2], *lnp[2];
	Perftools__Profiles__Function f[1], *fp[1];
	Perftools__Profiles__Mapping m[1], *mp[1];
	char *strs[16];
};

/* A small valid Go-style heap message: inuse_space listed first, ids not 1..n. */
static void mk_init(struct mk *k)
{
	static const char *const strs[] = {
		"", "inuse_space", "bytes", "inuse_objects", "count", "main.leak",
		"leak.go", "/tmp/leak", "space", "cpu", "nanoseconds", "samples",
	};
	memset(k, 0, sizeof(*k));
	k->pb = (Perftools__Profiles__Profile)PERFTOOLS__PROFILES__PROFILE__INIT;
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		k->strs[i] = (char *)strs[i];
	k->pb.string_table = k->strs;
	k->pb.n_string_table = sizeof(strs) / sizeof(strs[0]);
	for (int i = 0; i < 2; i++) {
		k->vt[i] = (Perftools__Profiles__ValueType)PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
		k->vtp[i] = &k->vt[i];
	}
	k->vt[0].type = 1, k->vt[0].unit = 2;   /* inuse_space/bytes */
	k->vt[1].type = 3, k->vt[1].unit = 4;   /* inuse_objects/count */
	k->pb.sample_type = k->vtp;
	k->pb.n_sample_type = 2;
	k->pb.default_sample_type = 1;

	k->m[0] = (Perftools__Profiles__Mapping)PERFTOOLS__PROFILES__MAPPING__INIT;
	k->m[0].id = 7;
	k->m[0].memory_start = 0x400000;
	k->m[0].memory_limit = 0x500000;
	k->m[0].filename = 7;
	k->mp[0] = &k->m[0];
	k->pb.mapping = k->mp;
	k->pb.n_mapping = 1;

	k->f[0] = (Perftools__Profiles__Function)PERFTOOLS__PROFILES__FUNCTION__INIT;
	k->f[0].id = 30;
	k->f[0].name = 5;
	k->f[0].filename = 6;
	k->fp[0] = &k->f[0];
	k->pb.function = k->fp;
	k->pb.n_function = 1;

	for (int i = 0; i < 2; i++) {
		k->ln[i] = (Perftools__Profiles__Line)PERFTOOLS__PROFILES__LINE__INIT;
		k->ln[i].function_id = 30;
		k->ln[i].line = 10 + i;
		k->lnp[i] = &k->ln[i];
		k->l[i] = (Perftools__Profiles__Location)PERFTOOLS__PROFILES__LOCATION__INIT;
		k->l[i].id = 20 - i;
		k->l[i].mapping_id = 7;
		k->l[i].address = 0x401000 + i;
		k->l[i].line = &k->lnp[i];
		k->l[i].n_line = 1;
		k->lp[i] = &k->l[i];
	}
	k->pb.location = k->lp;
	k->pb.n_location = 2;

	for (int i = 0; i < 2; i++) {
		k->s[i] = (Perftools__Profiles__Sample)PERFTOOLS__PROFILES__SAMPLE__INIT;
		k->locids[i][0] = 20 - i;
		k->locids[i][1] = 19 + i;
		k->s[i].location_id = k->locids[i];
		k->s[i].n_location_id = 2;
		k->vals[i][0] = 1000 * (i + 1);
		k->vals[i][1] = i + 1;
		k->s[i].value = k->vals[i];
		k->s[i].n_value = 2;
		k->sp[i] = &k->s[i];
	}
	k->pb.sample = k->sp;
	k->pb.n_sample = 2;
}

/* Packs k and reads it; returns pprof_read's result, *out on success. */
static int mk_read(struct mk *k, struct profile **out, char err[FMT_ERRLEN])
{
	size_t n = perftools__profiles__profile__get_packed_size(&k->pb);
	unsigned char *buf = malloc(n ? n : 1);
	struct profile *p = NULL;

	perftools__profiles__profile__pack(&k->pb, buf);
	int rc = pprof_read(buf, n, &p, err);
	free(buf);
	if (out)
		*out = p;
	else
		prof_free(p);
	return rc;
}

#define EXPECT_ERR(k, msg) do { \
	char _e[FMT_ERRLEN]; \
	int _rc = mk_read((k), NULL, _e); \
	CHECK(_rc < 0); \
	if (_rc < 0 && strcmp(_e, (msg)) != 0) { \
		fprintf(stderr, "%s:%d: error \"%s\", expected \"%s\"\n", __FILE__, __LINE__, _e, (msg)); \
		failures++; \
	} \
} while (0)

static void test_handmade(void)
{
	struct mk k;
	struct profile *p;
	char err[FMT_ERRLEN];

	mk_init(&k);
	int rc = mk_read(&k, &p, err);
	if (rc)
		fprintf(stderr, "handmade: %s\n", err);
	CHECK_EQ(rc, 0);
	if (p) {
		CHECK_EQ(p->has_alloc, false);
		CHECK_EQ(p->nsamples, 2);
		CHECK_EQ(p->samples[1].v[PT_INUSE_SPACE], 2000);
		CHECK_EQ(p->samples[1].v[PT_INUSE_OBJECTS], 2);
		CHECK_EQ(p->samples[1].v[PT_ALLOC_SPACE], 0);
		CHECK_EQ(prof_total(p, PT_INUSE_SPACE), 3000);
		/* location id 19 is the second location in the file. */
		CHECK_EQ(p->samples[0].locs[1], 1);
		CHECK_EQ(p->locs[p->samples[0].locs[0]].address, 0x401000);
		CHECK_STR(p->funcs[p->locs[0].lines[0].function].name, "main.leak");
		CHECK_STR(p->maps[0].file, "/tmp/leak");
		CHECK_EQ(p->locs[0].mapping, 0);
		CHECK(p->drop_frames == NULL);
		prof_free(p);
	}

	mk_init(&k);
	k.locids[1][1] = 99;
	EXPECT_ERR(&k, "sample 1 refers to location id 99 which does not exist");
	mk_init(&k);
	k.locids[0][0] = 0;
	EXPECT_ERR(&k, "sample 0 refers to location id 0 which does not exist");
	mk_init(&k);
	k.s[1].n_value = 1;
	EXPECT_ERR(&k, "sample 1 has 1 values, expected 2 (one per sample type)");
	mk_init(&k);
	k.f[0].name = 12;
	EXPECT_ERR(&k, "function id 30 name: string index 12 out of range (string table has 12 entries)");
	mk_init(&k);
	k.f[0].filename = -1;
	EXPECT_ERR(&k, "function id 30 filename: string index -1 out of range (string table has 12 entries)");
	mk_init(&k);
	k.ln[1].function_id = 31;
	EXPECT_ERR(&k, "location id 19 line 0 refers to function id 31 which does not exist");
	mk_init(&k);
	k.l[0].mapping_id = 8;
	EXPECT_ERR(&k, "location id 20 refers to mapping id 8 which does not exist");
	mk_init(&k);
	k.l[1].id = 20;
	EXPECT_ERR(&k, "location id 20 appears twice");
	mk_init(&k);
	k.m[0].id = 0;
	EXPECT_ERR(&k, "mapping 0 has id 0");
	mk_init(&k);
	k.m[0].memory_limit = 0x300000;
	EXPECT_ERR(&k, "mapping id 7: memory_limit 0x300000 is below memory_start 0x400000");
	mk_init(&k);
	k.strs[0] = "x";
	EXPECT_ERR(&k, "string table entry 0 is not empty");
	mk_init(&k);
	k.pb.n_string_table = 0;
	EXPECT_ERR(&k, "string table is empty");
	mk_init(&k);
	k.pb.period = -1;
	EXPECT_ERR(&k, "negative period -1");
	mk_init(&k);
	k.pb.comment = (int64_t[]){ 5, 40 };
	k.pb.n_comment = 2;
	EXPECT_ERR(&k, "comment 1: string index 40 out of range (string table has 12 entries)");
	mk_init(&k);
	k.vt[1] = k.vt[0];
	EXPECT_ERR(&k, "sample type inuse_space appears twice");

	/* A cpu profile is refused with its types named. */
	mk_init(&k);
	k.vt[0].type = 11, k.vt[0].unit = 4;   /* samples/count */
	k.vt[1].type = 9, k.vt[1].unit = 10;   /* cpu/nanoseconds */
	EXPECT_ERR(&k, "not a heap profile (sample types: samples/count, cpu/nanoseconds)");
	mk_init(&k);
	k.pb.n_sample_type = 0;
	k.s[0].n_value = k.s[1].n_value = 0;
	EXPECT_ERR(&k, "not a heap profile (no sample types)");

	/* Labels: string and numeric, unit optional. */
	mk_init(&k);
	Perftools__Profiles__Label lab[2] = {
		PERFTOOLS__PROFILES__LABEL__INIT, PERFTOOLS__PROFILES__LABEL__INIT,
	};
	Perftools__Profiles__Label *labp[2] = { &lab[0], &lab[1] };
	lab[0].key = 2, lab[0].num = 512, lab[0].num_unit = 2;   /* bytes=512 bytes */
	lab[1].key = 5, lab[1].str = 6;                          /* main.leak=leak.go */
	k.s[0].label = labp;
	k.s[0].n_label = 2;
	CHECK_EQ(mk_read(&k, &p, err), 0);
	if (p) {
		int64_t num = 0;
		CHECK_EQ(prof_get_num_label(p, 0, "bytes", &num), 0);
		CHECK_EQ(num, 512);
		CHECK_STR(p->samples[0].labels[0].num_unit, "bytes");
		CHECK_STR(p->samples[0].labels[1].str, "leak.go");
		CHECK(p->samples[0].labels[1].num_unit == NULL);
		prof_free(p);
	}
	lab[1].num_unit = 40;
	EXPECT_ERR(&k, "sample 0 label 1 num_unit: string index 40 out of range (string table has 12 entries)");
}

/* Values that need all 10 varint bytes, through the writer and reader. */
static void test_negative(void)
{
	struct profile *p = prof_new(), *q = NULL;
	char err[FMT_ERRLEN];
	size_t n;

	p->has_alloc = true;
	uint32_t l = prof_add_location(p, 0x10, PROF_NONE);
	for (int64_t v = -1; v > -(1LL << 60); v *= 3)
		prof_add_sample(p, &l, 1, (int64_t[]){ v, v - 1, -v, v }, NULL, 0);
	unsigned char *b = write_mem(p, &n);
	CHECK_EQ(pprof_read(b, n, &q, err), 0);
	CHECK(q && same_profile(p, q));
	CHECK(q && prof_total(q, PT_INUSE_SPACE) == prof_total(p, PT_INUSE_SPACE));
	free(b);
	prof_free(p);
	prof_free(q);
}

/* A big profile, to exercise the streaming writer and growing buffers. */
static void test_big(void)
{
	struct profile *p = prof_new(), *q = NULL;
	char err[FMT_ERRLEN], name[64];
	size_t n;

	p->has_alloc = true;
	prof_add_mapping(p, 0x400000, 0x40000000, 0, "/bin/big", "ff");
	for (int i = 0; i < 20000; i++) {
		uint32_t stack[8];
		for (int k = 0; k < 8; k++) {
			stack[k] = prof_add_location(p, 0x400000 + 16 * ((i * 7 + k * 131) % 50000), PROF_NONE);
			snprintf(name, sizeof(name), "fn_%d", (i + k) % 3000);
			int64_t f = prof_add_function(p, name, "", "big.c", k);
			if (!p->locs[stack[k]].nlines)
				prof_set_lines(p, stack[k], &(struct prof_line){ f, k, 0 }, 1);
		}
		prof_add_sample(p, stack, 8, (int64_t[]){ i, i * 16, i, i * 16 }, NULL, 0);
	}
	unsigned char *b = write_mem(p, &n);
	CHECK_EQ(pprof_read(b, n, &q, err), 0);
	CHECK(q && same_profile(p, q));
	free(b);
	prof_free(p);
	prof_free(q);
}

/* A decompression bomb is refused at 1 GiB (HEAPSNAP_LONG: it takes seconds). */
static void test_bomb(void)
{
	z_stream z = { 0 };
	size_t cap = 4 << 20, total = 0;
	unsigned char *out = malloc(cap), *zeros = calloc(1, 1 << 20);
	char err[FMT_ERRLEN];
	struct profile *p;

	deflateInit2(&z, 9, Z_DEFLATED, 31, 9, Z_DEFAULT_STRATEGY);
	z.next_out = out;
	z.avail_out = cap;
	for (int i = 0; i <= 1024; i++) {
		z.next_in = zeros;
		z.avail_in = 1 << 20;
		deflate(&z, i == 1024 ? Z_FINISH : Z_NO_FLUSH);
	}
	total = cap - z.avail_out;
	deflateEnd(&z);
	CHECK_EQ(pprof_read(out, total, &p, err), -EFBIG);
	CHECK_STR(err, "decompressed size exceeds 1 GiB");
	free(out);
	free(zeros);
}

int main(int argc, char **argv)
{
	test_round_trip(true);
	test_round_trip(false);
	test_negative();
	test_handmade();
	test_truncated_corrupt();
	test_big();
	if (getenv("HEAPSNAP_LONG"))
		test_bomb();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test_pprof: all checks passed\n");
	return 0;
}
