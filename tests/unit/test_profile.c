/* test_profile.c - unit tests of the profile model (src/profile.c). */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile.h"
#include "check.h"

static void test_types(void)
{
	CHECK_STR(prof_type_name(PT_ALLOC_OBJECTS), "alloc_objects");
	CHECK_STR(prof_type_name(PT_INUSE_SPACE), "inuse_space");
	CHECK_STR(prof_type_unit(PT_ALLOC_SPACE), "bytes");
	CHECK_STR(prof_type_unit(PT_INUSE_OBJECTS), "count");
	CHECK_EQ(prof_type_parse("alloc_space"), PT_ALLOC_SPACE);
	CHECK_EQ(prof_type_parse("inuse_objects"), PT_INUSE_OBJECTS);
	CHECK_EQ(prof_type_parse("cpu"), -1);
	CHECK_EQ(prof_type_parse(NULL), -1);
}

static void test_intern(void)
{
	struct profile *p = prof_new();
	char buf[64];

	CHECK(p != NULL);
	const char *a = prof_intern(p, "malloc");
	char copy[] = "malloc";
	CHECK(a != copy);
	CHECK_STR(a, "malloc");
	CHECK(prof_intern(p, copy) == a);
	CHECK(prof_intern_n(p, "mallocXYZ", 6) == a);
	CHECK_STR(prof_intern(p, NULL), "");
	CHECK(prof_intern(p, NULL) == prof_intern(p, ""));
	CHECK(prof_intern(p, "free") != a);

	/* Enough strings to grow the table and fill several arena chunks. */
	const char *first[2000];
	for (int i = 0; i < 50000; i++) {
		snprintf(buf, sizeof(buf), "function_%d", i);
		const char *s = prof_intern(p, buf);
		CHECK(s != NULL);
		if (i < 2000)
			first[i] = s;
	}
	for (int i = 0; i < 2000; i++) {
		snprintf(buf, sizeof(buf), "function_%d", i);
		CHECK(prof_intern(p, buf) == first[i]);
		CHECK_STR(first[i], buf);
	}
	/* A string bigger than an arena chunk. */
	size_t big = 200000;
	char *b = malloc(big + 1);
	memset(b, 'x', big);
	b[big] = '\0';
	const char *bi = prof_intern(p, b);
	CHECK(bi && strlen(bi) == big);
	CHECK(prof_intern(p, b) == bi);
	CHECK(prof_intern(p, "after-big") != NULL);
	CHECK(prof_intern(p, "malloc") == a);
	free(b);
	prof_free(p);
	prof_free(NULL);
}

static void test_dedup(void)
{
	struct profile *p = prof_new();

	int64_t f1 = prof_add_function(p, "foo", "_Z3foov", "a.c", 10);
	int64_t f2 = prof_add_function(p, "foo", "_Z3foov", "a.c", 10);
	int64_t f3 = prof_add_function(p, "foo", "", "a.c", 10);
	int64_t f4 = prof_add_function(p, "foo", "_Z3foov", "a.c", 11);
	int64_t f5 = prof_add_function(p, "bar", NULL, NULL, 0);
	CHECK_EQ(f1, 0);
	CHECK_EQ(f2, f1);
	CHECK(f3 != f1 && f4 != f1 && f4 != f3);
	CHECK_EQ(p->nfuncs, 4);
	CHECK_STR(p->funcs[f5].system_name, "");
	CHECK_STR(p->funcs[f5].filename, "");

	int64_t m0 = prof_add_mapping(p, 0x400000, 0x500000, 0, "/bin/prog", "abcd");
	int64_t m1 = prof_add_mapping(p, 0x7f0000, 0x7f8000, 0x2000, "/lib/libc.so.6", NULL);
	CHECK_EQ(m0, 0);
	CHECK_EQ(m1, 1);
	CHECK_STR(p->maps[1].build_id, "");
	CHECK_EQ(prof_find_mapping(p, 0x400000), 0);
	CHECK_EQ(prof_find_mapping(p, 0x4fffff), 0);
	CHECK_EQ(prof_find_mapping(p, 0x500000), PROF_NONE);
	CHECK_EQ(prof_find_mapping(p, 0x7f1234), 1);

	int64_t l1 = prof_add_location(p, 0x401000, PROF_NONE);
	int64_t l2 = prof_add_location(p, 0x401000, PROF_NONE);
	int64_t l3 = prof_add_location(p, 0x401000, 0);
	int64_t l4 = prof_add_location(p, 0x7f1000, PROF_NONE);
	int64_t l5 = prof_add_location(p, 0x1234, PROF_NONE);
	int64_t l6 = prof_new_location(p, 0x401000, 0);
	CHECK_EQ(l1, 0);
	CHECK_EQ(l2, l1);
	CHECK_EQ(l3, l1);
	CHECK_EQ(p->locs[l1].mapping, 0);
	CHECK_EQ(p->locs[l4].mapping, 1);
	CHECK_EQ(p->locs[l5].mapping, PROF_NONE);
	CHECK(l6 != l1);
	CHECK_EQ(p->nlocs, 4);
	/* A never-deduplicated location does not shadow the first one. */
	CHECK_EQ(prof_add_location(p, 0x401000, 0), l1);

	struct prof_line lines[2] = { { f1, 12, 3 }, { f5, 40, 0 } };
	CHECK_EQ(prof_set_lines(p, l1, lines, 2), 0);
	CHECK_EQ(p->locs[l1].nlines, 2);
	CHECK_EQ(p->locs[l1].lines[1].line, 40);
	CHECK_EQ(prof_set_lines(p, l1, lines, 1), 0);
	CHECK_EQ(p->locs[l1].nlines, 1);
	CHECK_EQ(prof_set_lines(p, 999, lines, 1), -EINVAL);

	/* Many mappings: the sorted index, including an overlapping one. */
	struct profile *q = prof_new();
	for (int i = 0; i < 100; i++)
		prof_add_mapping(q, 0x10000 * (100 - i), 0x10000 * (100 - i) + 0x8000, 0, "/x", "");
	prof_add_mapping(q, 0x10000, 0x300000, 0, "/big", "");
	CHECK_EQ(prof_find_mapping(q, 0x10000 * 50 + 10), 50);
	CHECK_EQ(prof_find_mapping(q, 0x10000 * 20 + 0x8000), 100);
	CHECK_EQ(prof_find_mapping(q, 0x10000 * 20 + 0x10), 80);   /* overlapped: lowest index */
	CHECK_EQ(prof_find_mapping(q, 0x10000 * 60 + 0x9000), PROF_NONE);
	CHECK_EQ(prof_find_mapping(q, 0x10000 * 100 + 0x7fff), 0);
	CHECK_EQ(prof_find_mapping(q, 5), PROF_NONE);
	prof_add_mapping(q, 0x10000 * 60 + 0x9000, 0x10000 * 60 + 0xa000, 0, "/late", "");
	CHECK_EQ(prof_find_mapping(q, 0x10000 * 60 + 0x9000), 101);
	prof_free(q);

	CHECK_EQ(prof_validate(p), 0);
	prof_free(p);
}

static void test_samples_labels_comments(void)
{
	struct profile *p = prof_new();
	uint32_t stack[2];
	int64_t v[PT_NTYPES] = { 1, 100, 1, 100 };
	int64_t num;

	stack[0] = prof_add_location(p, 0x10, PROF_NONE);
	stack[1] = prof_add_location(p, 0x20, PROF_NONE);
	struct prof_label lab[2] = {
		{ .key = "thread", .str = "main" },
		{ .key = "bytes", .num = 100, .num_unit = "bytes" },
	};
	int64_t s = prof_add_sample(p, stack, 2, v, lab, 2);
	CHECK_EQ(s, 0);
	CHECK(p->samples[0].locs != stack);
	CHECK(p->samples[0].labels[0].key == prof_intern(p, "thread"));
	CHECK(p->samples[0].labels[0].str == prof_intern(p, "main"));
	CHECK_EQ(prof_get_num_label(p, 0, "bytes", &num), 0);
	CHECK_EQ(num, 100);
	CHECK_EQ(prof_get_num_label(p, 0, "thread", &num), -ENOENT);
	CHECK_EQ(prof_get_num_label(p, 0, "nope", &num), -ENOENT);
	CHECK_EQ(prof_get_num_label(p, 7, "bytes", &num), -ENOENT);
	CHECK_EQ(prof_add_num_label(p, 0, "align", 16, NULL), 0);
	CHECK_EQ(prof_get_num_label(p, 0, "align", &num), 0);
	CHECK_EQ(num, 16);
	CHECK_EQ(p->samples[0].nlabels, 3);
	CHECK_EQ(prof_add_num_label(p, 5, "x", 1, NULL), -EINVAL);

	CHECK_EQ(prof_add_comment(p, "pid=%d", 4242), 0);
	CHECK_EQ(prof_add_comment(p, "backend=%s", "interpose"), 0);
	char longc[1000];
	memset(longc, 'y', sizeof(longc) - 1);
	longc[sizeof(longc) - 1] = '\0';
	CHECK_EQ(prof_add_comment(p, "long=%s", longc), 0);
	CHECK_STR(prof_get_comment(p, "pid"), "4242");
	CHECK_STR(prof_get_comment(p, "backend"), "interpose");
	CHECK_STR(prof_get_comment(p, "long"), longc);
	CHECK(prof_get_comment(p, "pi") == NULL);
	CHECK(prof_get_comment(p, "nope") == NULL);
	CHECK_EQ(p->ncomments, 3);

	CHECK_EQ(prof_total(p, PT_INUSE_SPACE), 100);
	prof_add_sample(p, stack, 1, (int64_t[]){ 2, 50, -1, -30 }, NULL, 0);
	CHECK_EQ(prof_total(p, PT_INUSE_SPACE), 70);
	CHECK_EQ(prof_total(p, PT_ALLOC_OBJECTS), 3);
	CHECK_EQ(prof_validate(p), 0);
	prof_free(p);
}

/* One process's profile: libfoo's segment at file offset `off` mapped at
 * `base`, stacks a->b, a->c with b, c at file offsets 0x1200, 0x1300. */
static struct profile *build_off(uint64_t base, uint64_t off, int64_t ab, int64_t ac)
{
	struct profile *p = prof_new();

	prof_add_mapping(p, 0x400000, 0x401000, 0, "/bin/prog", "0102");
	prof_add_mapping(p, base, base + 0x10000, off, "/usr/lib/libfoo.so", "beef");
	p->has_alloc = true;
	p->period = 1;
	uint32_t a = prof_add_location(p, 0x400100, PROF_NONE);
	uint32_t b = prof_add_location(p, base + 0x1200 - off, PROF_NONE);
	uint32_t c = prof_add_location(p, base + 0x1300 - off, PROF_NONE);
	int64_t fa = prof_add_function(p, "a", "", "prog.c", 1);
	prof_set_lines(p, a, &(struct prof_line){ fa, 5, 0 }, 1);
	if (ab)
		prof_add_sample(p, (uint32_t[]){ b, a }, 2,
				(int64_t[]){ ab, ab * 8, ab, ab * 8 }, NULL, 0);
	if (ac)
		prof_add_sample(p, (uint32_t[]){ c, a }, 2,
				(int64_t[]){ ac, ac * 16, ac, ac * 16 }, NULL, 0);
	return p;
}

static struct profile *build(uint64_t base, int64_t ab, int64_t ac)
{
	return build_off(base, 0x1000, ab, ac);
}

/* Value t of the sample whose leaf is at file offset `rel` of libfoo. */
static int64_t value_at(const struct profile *p, uint64_t rel, enum prof_type t)
{
	int64_t sum = 0;

	for (size_t i = 0; i < p->nsamples; i++) {
		const struct prof_location *l = &p->locs[p->samples[i].locs[0]];
		const struct prof_mapping *m = &p->maps[l->mapping];
		if (strcmp(m->file, "/usr/lib/libfoo.so") == 0 &&
		    l->address - m->start + m->offset == rel)
			sum += p->samples[i].v[t];
	}
	return sum;
}

static void test_merge_diff(void)
{
	/* Same library at different addresses (ASLR): locations must match. */
	struct profile *a = build(0x7f0000000000, 10, 3);
	struct profile *b = build(0x7e0000000000, 14, 3);
	struct profile *d = prof_clone(b);

	CHECK_EQ(prof_merge(d, a, -1), 0);
	CHECK_EQ(prof_compact(d), 0);
	CHECK_EQ(prof_validate(d), 0);
	CHECK_EQ(d->nsamples, 1);
	CHECK_EQ(prof_total(d, PT_INUSE_SPACE), 4 * 8);
	CHECK_EQ(prof_total(d, PT_INUSE_OBJECTS), 4);
	CHECK_EQ(value_at(d, 0x1200, PT_INUSE_SPACE), 32);
	CHECK_EQ(value_at(d, 0x1300, PT_INUSE_SPACE), 0);
	CHECK_EQ(d->nlocs, b->nlocs);   /* nothing new: every location matched */
	CHECK_EQ(d->nmaps, b->nmaps);
	prof_free(d);

	/* The segment mapped from another file offset (other linker layout of
	 * the same build): still the same locations. */
	struct profile *o = build_off(0x7d0000000000, 0, 10, 0);
	d = prof_clone(b);
	CHECK_EQ(prof_merge(d, o, -1), 0);
	CHECK_EQ(prof_compact(d), 0);
	CHECK_EQ(d->nlocs, b->nlocs);
	CHECK_EQ(value_at(d, 0x1200, PT_INUSE_OBJECTS), 4);
	CHECK_EQ(value_at(d, 0x1300, PT_INUSE_OBJECTS), 3);
	prof_free(d);
	/* A different build of the library does not match. */
	prof_free(o);
	o = build(0x7f0000000000, 10, 3);
	o->maps[1].build_id = prof_intern(o, "cafe");
	d = prof_clone(b);
	CHECK_EQ(prof_merge(d, o, -1), 0);
	CHECK_EQ(d->nlocs, b->nlocs + 2);
	CHECK_EQ(d->nmaps, b->nmaps + 1);
	CHECK_EQ(prof_validate(d), 0);
	prof_free(d);
	prof_free(o);

	/* Merge with scale 1: sums; scale 2.5 rounds; has_alloc ANDs. */
	struct profile *m = prof_clone(a);
	b->has_alloc = false;
	CHECK_EQ(prof_merge(m, b, 1), 0);
	CHECK_EQ(m->has_alloc, false);
	CHECK_EQ(prof_total(m, PT_INUSE_SPACE), prof_total(a, PT_INUSE_SPACE) +
					       prof_total(b, PT_INUSE_SPACE));
	CHECK_EQ(m->nsamples, 4);
	CHECK_EQ(prof_compact(m), 0);
	CHECK_EQ(m->nsamples, 2);
	CHECK_EQ(value_at(m, 0x1200, PT_INUSE_OBJECTS), 24);
	CHECK_EQ(value_at(m, 0x1300, PT_INUSE_SPACE), 96);
	prof_free(m);

	m = prof_new();
	CHECK_EQ(prof_merge(m, a, 2.5), 0);
	CHECK_EQ(value_at(m, 0x1200, PT_INUSE_OBJECTS), 25);
	CHECK_EQ(value_at(m, 0x1300, PT_INUSE_OBJECTS), 8);   /* 7.5 rounds away from 0 */
	CHECK_EQ(m->nmaps, 2);
	CHECK_STR(m->maps[1].build_id, "beef");
	/* Lines and functions came along. */
	const struct prof_location *root = &m->locs[m->samples[0].locs[1]];
	CHECK_EQ(root->nlines, 1);
	CHECK_STR(m->funcs[root->lines[0].function].name, "a");
	prof_free(m);

	/* Self-diff of a profile is empty after compaction; big values exact. */
	struct profile *s = build(0x7f0000000000, (int64_t)1 << 58, 1);
	struct profile *t = prof_clone(s);
	CHECK_EQ(prof_merge(t, s, -1), 0);
	CHECK_EQ(prof_compact(t), 0);
	CHECK_EQ(t->nsamples, 0);
	prof_free(t);
	t = prof_clone(s);
	CHECK_EQ(prof_merge(t, s, 1), 0);
	CHECK_EQ(prof_compact(t), 0);
	CHECK_EQ(prof_total(t, PT_INUSE_OBJECTS), ((int64_t)1 << 59) + 2);
	prof_free(t);
	prof_free(s);

	/* Two locations at one address with different names (a reader kept
	 * them apart): a self-diff still cancels exactly. */
	s = build(0x7f0000000000, 2, 0);
	int64_t fz = prof_add_function(s, "z", "", "", 0);
	int64_t lz = prof_new_location(s, 0x400100, 0);
	prof_set_lines(s, lz, &(struct prof_line){ fz, 1, 0 }, 1);
	prof_add_sample(s, (uint32_t[]){ lz }, 1, (int64_t[]){ 1, 1, 1, 1 }, NULL, 0);
	t = prof_clone(s);
	CHECK_EQ(prof_merge(t, s, -1), 0);
	CHECK_EQ(prof_compact(t), 0);
	CHECK_EQ(t->nsamples, 0);
	CHECK_EQ(t->nlocs, s->nlocs);
	prof_free(t);
	/* An unsymbolized profile merged with a symbolized one gains the names. */
	t = build(0x7f0000000000, 2, 0);
	uint32_t troot = t->samples[0].locs[1];
	prof_set_lines(t, troot, NULL, 0);
	CHECK_EQ(prof_merge(t, s, 1), 0);
	CHECK_EQ(t->locs[troot].nlines, 1);
	CHECK_STR(t->funcs[t->locs[troot].lines[0].function].name, "a");
	CHECK_EQ(t->samples[1].locs[1], troot);
	prof_free(t);
	prof_free(s);

	/* Unmapped, symbolized locations match by names and lines; bare ones by address. */
	struct profile *x = prof_new(), *y = prof_new();
	int64_t fx = prof_add_function(x, "grow", "", "g.c", 1);
	uint32_t lx = prof_add_location(x, 0x1000, PROF_NONE);
	prof_set_lines(x, lx, &(struct prof_line){ fx, 7, 0 }, 1);
	uint32_t bx = prof_add_location(x, 0x5555, PROF_NONE);
	prof_add_sample(x, &lx, 1, (int64_t[]){ 0, 0, 1, 100 }, NULL, 0);
	prof_add_sample(x, &bx, 1, (int64_t[]){ 0, 0, 1, 10 }, NULL, 0);
	prof_add_function(y, "other", "", "", 0);
	int64_t fy = prof_add_function(y, "grow", "", "g.c", 1);
	uint32_t ly = prof_add_location(y, 0x2000, PROF_NONE);   /* other address */
	prof_set_lines(y, ly, &(struct prof_line){ fy, 7, 0 }, 1);
	uint32_t by = prof_add_location(y, 0x5555, PROF_NONE);
	uint32_t cy = prof_add_location(y, 0x6666, PROF_NONE);
	prof_add_sample(y, &ly, 1, (int64_t[]){ 0, 0, 3, 300 }, NULL, 0);
	prof_add_sample(y, &by, 1, (int64_t[]){ 0, 0, 1, 30 }, NULL, 0);
	prof_add_sample(y, &cy, 1, (int64_t[]){ 0, 0, 1, 5 }, NULL, 0);
	CHECK_EQ(prof_merge(y, x, -1), 0);
	CHECK_EQ(prof_compact(y), 0);
	CHECK_EQ(y->nlocs, 3);
	CHECK_EQ(y->nsamples, 3);
	CHECK_EQ(y->samples[0].locs[0], ly);
	CHECK_EQ(y->samples[0].v[PT_INUSE_SPACE], 200);
	CHECK_EQ(y->samples[1].v[PT_INUSE_SPACE], 20);
	CHECK_EQ(y->samples[2].v[PT_INUSE_SPACE], 5);
	prof_free(x);
	prof_free(y);

	prof_free(a);
	prof_free(b);
}

static void test_compact_scale(void)
{
	struct profile *p = prof_new();
	uint32_t l0 = prof_add_location(p, 1, PROF_NONE), l1 = prof_add_location(p, 2, PROF_NONE);
	struct prof_label lab = { .key = "bytes", .num = 8 };
	struct prof_label lab2 = { .key = "bytes", .num = 16 };

	prof_add_sample(p, (uint32_t[]){ l0, l1 }, 2, (int64_t[]){ 1, 8, 1, 8 }, &lab, 1);
	prof_add_sample(p, (uint32_t[]){ l1 }, 1, (int64_t[]){ 0, 0, 0, 0 }, NULL, 0);
	prof_add_sample(p, (uint32_t[]){ l0, l1 }, 2, (int64_t[]){ 2, 16, 2, 16 }, &lab2, 1);
	prof_add_sample(p, (uint32_t[]){ l0, l1 }, 2, (int64_t[]){ 3, 24, 3, 24 }, &lab, 1);
	prof_add_sample(p, (uint32_t[]){ l1, l0 }, 2, (int64_t[]){ 1, 1, 1, 1 }, NULL, 0);
	prof_add_sample(p, (uint32_t[]){ l1, l0 }, 2, (int64_t[]){ -1, -1, -1, -1 }, NULL, 0);
	CHECK_EQ(prof_compact(p), 0);
	CHECK_EQ(p->nsamples, 2);
	CHECK_EQ(p->samples[0].v[PT_INUSE_SPACE], 32);
	CHECK_EQ(p->samples[0].labels[0].num, 8);
	CHECK_EQ(p->samples[1].v[PT_INUSE_SPACE], 16);
	CHECK_EQ(p->samples[1].labels[0].num, 16);
	CHECK_EQ(prof_validate(p), 0);

	prof_scale(p, 0.5);
	CHECK_EQ(p->samples[0].v[PT_INUSE_SPACE], 16);
	CHECK_EQ(p->samples[0].v[PT_INUSE_OBJECTS], 2);   /* 4 * 0.5 */
	prof_scale(p, -1);
	CHECK_EQ(prof_total(p, PT_INUSE_SPACE), -24);
	prof_scale(p, 1e30);
	CHECK_EQ(p->samples[0].v[PT_INUSE_SPACE], INT64_MIN);
	prof_free(p);
}

static void test_clone(void)
{
	struct profile *p = build(0x7f0000000000, 5, 6);
	prof_add_num_label(p, 0, "bytes", 8, "bytes");
	prof_add_comment(p, "pid=1");
	p->drop_frames = prof_intern(p, "malloc|free");
	p->maps_text = prof_intern(p, "00400000-00401000 r-xp 00000000 00:00 0 /bin/prog\n");
	p->time_nanos = 123;
	p->duration_nanos = 456;
	p->maps[1].has_functions = true;
	p->locs[0].is_folded = true;
	prof_new_location(p, 0x400100, 0);   /* a duplicate kept apart */

	struct profile *c = prof_clone(p);
	CHECK(c != NULL);
	CHECK_EQ(prof_validate(c), 0);
	CHECK_EQ(c->nsamples, p->nsamples);
	CHECK_EQ(c->nlocs, p->nlocs);
	CHECK_EQ(c->nfuncs, p->nfuncs);
	CHECK_EQ(c->nmaps, p->nmaps);
	for (size_t i = 0; i < p->nsamples; i++) {
		CHECK_EQ(c->samples[i].nlocs, p->samples[i].nlocs);
		CHECK(memcmp(c->samples[i].locs, p->samples[i].locs,
			     p->samples[i].nlocs * sizeof(uint32_t)) == 0);
		CHECK(memcmp(c->samples[i].v, p->samples[i].v, sizeof(p->samples[i].v)) == 0);
		CHECK_EQ(c->samples[i].nlabels, p->samples[i].nlabels);
	}
	for (size_t i = 0; i < p->nlocs; i++) {
		CHECK_EQ(c->locs[i].address, p->locs[i].address);
		CHECK_EQ(c->locs[i].mapping, p->locs[i].mapping);
		CHECK_EQ(c->locs[i].nlines, p->locs[i].nlines);
		CHECK_EQ(c->locs[i].is_folded, p->locs[i].is_folded);
	}
	CHECK_STR(c->maps[1].file, "/usr/lib/libfoo.so");
	CHECK(c->maps[1].file != p->maps[1].file);   /* owned by the clone */
	CHECK_EQ(c->maps[1].has_functions, true);
	CHECK_STR(c->drop_frames, "malloc|free");
	CHECK_STR(c->maps_text, p->maps_text);
	CHECK_STR(prof_get_comment(c, "pid"), "1");
	CHECK_EQ(c->time_nanos, 123);
	CHECK_EQ(c->duration_nanos, 456);
	CHECK_EQ(c->period, 1);
	CHECK_EQ(c->has_alloc, true);
	CHECK_STR(c->samples[0].labels[0].num_unit, "bytes");
	prof_free(p);
	/* The clone survives its source. */
	CHECK_STR(c->funcs[0].name, "a");
	CHECK_EQ(prof_add_location(c, 0x400100, PROF_NONE), 0);
	prof_free(c);
}

static void test_validate(void)
{
	struct profile *p = build(0x7f0000000000, 1, 1);

	CHECK_EQ(prof_validate(p), 0);
	p->samples[0].locs[1] = p->nlocs;
	CHECK_EQ(prof_validate(p), -EINVAL);
	p->samples[0].locs[1] = 0;
	CHECK_EQ(prof_validate(p), 0);

	p->locs[0].lines[0].function = p->nfuncs;
	CHECK_EQ(prof_validate(p), -EINVAL);
	p->locs[0].lines[0].function = 0;

	p->locs[1].mapping = 9;
	CHECK_EQ(prof_validate(p), -EINVAL);
	p->locs[1].mapping = PROF_NONE;
	CHECK_EQ(prof_validate(p), 0);

	const char *n = p->funcs[0].name;
	p->funcs[0].name = NULL;
	CHECK_EQ(prof_validate(p), -EINVAL);
	p->funcs[0].name = n;

	p->maps[0].file = NULL;
	CHECK_EQ(prof_validate(p), -EINVAL);
	p->maps[0].file = "";

	p->maps[0].limit = p->maps[0].start - 1;
	CHECK_EQ(prof_validate(p), -EINVAL);
	p->maps[0].limit = p->maps[0].start;

	prof_add_num_label(p, 0, "bytes", 1, NULL);
	p->samples[0].labels[0].key = NULL;
	CHECK_EQ(prof_validate(p), -EINVAL);
	p->samples[0].labels[0].key = "bytes";
	CHECK_EQ(prof_validate(p), 0);
	CHECK_EQ(prof_validate(NULL), -EINVAL);
	prof_free(p);
}

static void test_sample_prob(void)
{
	CHECK(prof_sample_prob(100, 1) == 1);
	CHECK(prof_sample_prob(100, 0) == 1);
	CHECK(fabs(prof_sample_prob(4096, 524288) - 0.0077821) < 1e-6);
	CHECK(fabs(prof_sample_prob(1 << 20, 524288) - 0.8646647) < 1e-6);
	CHECK(prof_sample_prob(1e12, 524288) == 1);
	CHECK(prof_sample_prob(1, 1e15) > 0);   /* no underflow to 0 */
}

/* Build-id of a file as readelf prints it, or "" when none. */
static void readelf_build_id(const char *path, char *out, size_t size)
{
	char cmd[4200], line[512];
	FILE *f;

	out[0] = '\0';
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *b = strstr(line, "Build ID: ");
		if (b && sscanf(b + 10, "%255s", out) == 1)
			break;
	}
	pclose(f);
	(void)size;
}

static void test_proc_maps(void)
{
	struct profile *p = prof_new();
	char exe[4096], bid[256];
	ssize_t n;

	CHECK_EQ(prof_load_proc_maps(p, getpid()), 0);
	CHECK(p->nmaps >= 2);
	CHECK(p->maps_text && strstr(p->maps_text, "r-xp") != NULL);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0);
	exe[n > 0 ? n : 0] = '\0';
	CHECK_STR(p->maps[0].file, exe);
	CHECK_EQ(prof_find_mapping(p, (uintptr_t)&test_proc_maps), 0);
	readelf_build_id(exe, bid, sizeof(bid));
	if (!bid[0]) {
		fprintf(stderr, "note: readelf gave no build-id for %s\n", exe);
	} else {
		CHECK_STR(p->maps[0].build_id, bid);
	}
	/* libc: every mapping of a file with a build-id carries it. */
	uint32_t lm = prof_find_mapping(p, (uintptr_t)&getpid);   /* not intercepted by ASan */
	CHECK(lm != PROF_NONE && lm != 0);
	if (lm != PROF_NONE) {
		readelf_build_id(p->maps[lm].file, bid, sizeof(bid));
		if (bid[0])
			CHECK_STR(p->maps[lm].build_id, bid);
		CHECK(strstr(p->maps[lm].file, "libc") != NULL);
	}
	for (size_t i = 0; i < p->nmaps; i++) {
		CHECK(p->maps[i].file[0] == '/');
		CHECK(p->maps[i].start < p->maps[i].limit);
	}
	CHECK_EQ(prof_validate(p), 0);

	/* The same text parsed offline gives the same mappings. */
	struct profile *q = prof_new();
	CHECK_EQ(prof_parse_maps(q, p->maps_text, strlen(p->maps_text)), 0);
	CHECK_EQ(q->nmaps, p->nmaps);
	for (size_t i = 0; i < q->nmaps && i < p->nmaps; i++) {
		CHECK_STR(q->maps[i].file, p->maps[i].file);
		CHECK_STR(q->maps[i].build_id, p->maps[i].build_id);
		CHECK_EQ(q->maps[i].start, p->maps[i].start);
		CHECK_EQ(q->maps[i].offset, p->maps[i].offset);
	}
	prof_free(q);
	prof_free(p);
	p = prof_new();
	CHECK(prof_load_proc_maps(p, -5) < 0);
	prof_free(p);
}

/* A library deleted after loading still yields its build-id (through
 * /proc/self/map_files), and its path loses the " (deleted)" suffix. */
static void test_deleted_library(void)
{
	static const char src[] = "/lib/x86_64-linux-gnu/libz.so.1";
	char dir[] = "/tmp/hs-test-profile.XXXXXX", copy[256], cmd[600], bid[256];

	if (access(src, R_OK) != 0 || !mkdtemp(dir)) {
		fprintf(stderr, "note: %s missing, deleted-library check skipped\n", src);
		return;
	}
	snprintf(copy, sizeof(copy), "%s/libhscopy.so", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", src, copy);
	CHECK_EQ(system(cmd), 0);
	void *h = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
	CHECK(h != NULL);
	unlink(copy);
	rmdir(dir);
	readelf_build_id(src, bid, sizeof(bid));

	struct profile *p = prof_new();
	CHECK_EQ(prof_load_proc_maps(p, getpid()), 0);
	CHECK(strstr(p->maps_text, "libhscopy.so (deleted)") != NULL);
	size_t found = 0;
	for (size_t i = 0; i < p->nmaps; i++) {
		if (strcmp(p->maps[i].file, copy) != 0)
			continue;
		found++;
		if (bid[0])
			CHECK_STR(p->maps[i].build_id, bid);
		CHECK(p->maps[i].build_id[0] != '\0');
	}
	CHECK(found >= 1);
	prof_free(p);
	if (h)
		dlclose(h);
}

static void test_parse_maps(void)
{
	struct profile *p = prof_new();
	size_t bad;
	/* gperftools pads, some lines lack dev/inode, CRLF, deleted files,
	 * the main program's r--p segment first, split r-xp segments. */
	static const char text[] =
		"\n"
		"00400000-00401000 r--p 00000000 08:01 1234        /opt/prog\n"
		"00401000-00452000 r-xp 00001000 08:01 1234        /opt/prog\n"
		"7f0000000000-7f0000010000 r-xp 00002000 fd:00 99 /usr/lib/lib with space.so (deleted)\r\n"
		"7f0000010000-7f0000020000 r-xp 00012000 fd:00 99 /usr/lib/lib with space.so\n"
		"7f1000000000-7f1000001000 rw-p 00000000 00:00 0\n"
		"7f2000000000-7f2000001000 r-xp 00000000 00:00 0                  [vdso]\n"
		"  7f3000000000-7f3000004000 r-xp 00000000 /lib/short.so\n"
		"7f4000000000-7f4000001000 r-xp 00000000 00:00 0 /lib/gap.so\n"
		"7f4000005000-7f4000006000 r-xp 00001000 00:00 0 /lib/gap.so\n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";

	CHECK_EQ(prof_parse_maps_ex(p, text, strlen(text), &bad), 0);
	CHECK_EQ(bad, 0);
	CHECK_EQ(p->nmaps, 5);
	CHECK_STR(p->maps[0].file, "/opt/prog");
	CHECK_EQ(p->maps[0].start, 0x401000);
	CHECK_EQ(p->maps[0].limit, 0x452000);
	CHECK_EQ(p->maps[0].offset, 0x1000);
	CHECK_STR(p->maps[1].file, "/usr/lib/lib with space.so");
	CHECK_EQ(p->maps[1].limit, 0x7f0000020000);   /* adjacent segments joined */
	CHECK_EQ(p->maps[1].offset, 0x2000);
	CHECK_STR(p->maps[2].file, "/lib/short.so");
	CHECK_STR(p->maps[2].build_id, "");
	CHECK_EQ(p->maps[3].limit, 0x7f4000001000);   /* not adjacent: kept apart */
	CHECK_EQ(p->maps[4].offset, 0x1000);
	CHECK_EQ(strlen(p->maps_text), strlen(text));
	prof_free(p);

	static const char *const bad_texts[] = {
		"00400000-00401000 r-xp 00000000 08:01 1 /a\nhello world\n",
		"00400000 r-xp 00000000 08:01 1 /a\n",
		"00401000-00400000 r-xp 00000000 08:01 1 /a\n",
		"00400000-00401000 r-zp 00000000 08:01 1 /a\n",
		"00400000-00401000 r-xp zz 08:01 1 /a\n",
		"00400000-00401000 r-xp 00000000 08:01 x /a\n",
		"00400000-00401000 r-xp 00000000 08:01 1 junk\n",
		"00400000-1000000000000000000 r-xp 0 08:01 1 /a\n",
	};
	for (size_t i = 0; i < sizeof(bad_texts) / sizeof(bad_texts[0]); i++) {
		p = prof_new();
		int rc = prof_parse_maps_ex(p, bad_texts[i], strlen(bad_texts[i]), &bad);
		if (rc != -EINVAL)
			fprintf(stderr, "bad text %zu accepted\n", i);
		CHECK_EQ(rc, -EINVAL);
		CHECK_EQ(bad, i == 0 ? 2 : 1);
		prof_free(p);
	}
	p = prof_new();
	CHECK_EQ(prof_parse_maps(p, "", 0), 0);
	CHECK_EQ(p->nmaps, 0);
	prof_free(p);
}

int main(void)
{
	test_types();
	test_intern();
	test_dedup();
	test_samples_labels_comments();
	test_merge_diff();
	test_compact_scale();
	test_clone();
	test_validate();
	test_sample_prob();
	test_proc_maps();
	test_deleted_library();
	test_parse_maps();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test_profile: all checks passed\n");
	return 0;
}
