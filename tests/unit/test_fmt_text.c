/* test_fmt_text.c - unit tests of the text formats: jemalloc heap_v2, gperftools heap profile, folded stacks, speedscope, SVG. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "profile.h"
#include "check.h"

static struct profile *read_text_n(enum fmt f, const char *text, size_t len, int *rc,
				   char err[FMT_ERRLEN])
{
	struct profile *p = NULL;

	err[0] = '\0';
	*rc = f == FMT_JEPROF ? jeprof_read(text, len, &p, err) : gperf_read(text, len, &p, err);
	if (*rc == 0 && prof_validate(p) != 0) {
		fprintf(stderr, "%s:%d: prof_validate failed\n", __FILE__, __LINE__);
		failures++;
	}
	return p;
}

static struct profile *read_text(enum fmt f, const char *text, int *rc, char err[FMT_ERRLEN])
{
	return read_text_n(f, text, strlen(text), rc, err);
}

static struct profile *must_read(enum fmt f, const char *text)
{
	char err[FMT_ERRLEN];
	int rc;
	struct profile *p = read_text(f, text, &rc, err);

	if (rc != 0 || !p) {
		fprintf(stderr, "unexpected read error %d: %s\n", rc, err);
		failures++;
		exit(1);
	}
	return p;
}

/* Writes p in format f (type for the single-valued ones) into a string. */
static char *write_str(const struct profile *p, enum fmt f, enum prof_type type, int *rc,
		       char err[FMT_ERRLEN])
{
	char *s = NULL;
	size_t n = 0;
	FILE *out = open_memstream(&s, &n);

	err[0] = '\0';
	*rc = fmt_write(p, out, f, type, err);
	fclose(out);
	return s;
}

static char *must_write(const struct profile *p, enum fmt f, enum prof_type type)
{
	char err[FMT_ERRLEN];
	int rc;
	char *s = write_str(p, f, type, &rc, err);

	if (rc != 0) {
		fprintf(stderr, "unexpected write error %d: %s\n", rc, err);
		failures++;
	}
	return s;
}

static uint64_t loc_addr(const struct profile *p, size_t s, uint32_t i)
{
	return p->locs[p->samples[s].locs[i]].address;
}

static int64_t label_bytes(const struct profile *p, size_t s)
{
	int64_t v;

	return prof_get_num_label(p, s, "bytes", &v) == 0 ? v : -1;
}

/* ---- jemalloc heap_v2 ---------------------------------------------------- */

static const char je_exact[] =
	"heap_v2/1\n"
	"  t*: 3: 300 [5: 500]\n"
	"  t0: 3: 300 [5: 500]\n"
	"@ 0x1000 0x2000 0x3000\n"
	"  t*: 2: 200 [3: 300]\n"
	"  t0: 2: 200 [3: 300]\n"
	"@ 0x1100 0x2000\n"
	"  t*: 1: 100 [2: 200]\n"
	"  t5: 1: 100 [2: 200]\n"
	"\n"
	"MAPPED_LIBRARIES:\n"
	"00001000-00004000 r-xp 00000000 08:01 1234                       /nonexistent/prog\n"
	"7f0000000000-7f0000010000 r-xp 00001000 08:01 99 /nonexistent/libfoo.so.1\n";

static void test_jeprof_exact(void)
{
	struct profile *p = must_read(FMT_JEPROF, je_exact);

	CHECK_EQ(p->period, 1);
	CHECK(p->has_alloc);
	CHECK_EQ(p->nsamples, 2);
	CHECK_EQ(p->samples[0].v[PT_INUSE_OBJECTS], 2);
	CHECK_EQ(p->samples[0].v[PT_INUSE_SPACE], 200);
	CHECK_EQ(p->samples[0].v[PT_ALLOC_OBJECTS], 3);
	CHECK_EQ(p->samples[0].v[PT_ALLOC_SPACE], 300);
	CHECK_EQ(p->samples[1].v[PT_INUSE_SPACE], 100);
	CHECK_EQ(prof_total(p, PT_INUSE_SPACE), 300);
	CHECK_EQ(prof_total(p, PT_ALLOC_OBJECTS), 5);
	/* Leaf as is, callers are return addresses: -1. */
	CHECK_EQ(p->samples[0].nlocs, 3);
	CHECK_EQ(loc_addr(p, 0, 0), 0x1000);
	CHECK_EQ(loc_addr(p, 0, 1), 0x1fff);
	CHECK_EQ(loc_addr(p, 0, 2), 0x2fff);
	CHECK_EQ(loc_addr(p, 1, 0), 0x1100);
	CHECK_EQ(loc_addr(p, 1, 1), 0x1fff);
	/* Same pc, same location. */
	CHECK_EQ(p->samples[0].locs[1], p->samples[1].locs[1]);
	/* The object size both pairs agree on. */
	CHECK_EQ(label_bytes(p, 0), 100);
	CHECK_EQ(label_bytes(p, 1), 100);
	/* MAPPED_LIBRARIES: mappings, the main program first, text kept. */
	CHECK_EQ(p->nmaps, 2);
	CHECK_STR(p->maps[0].file, "/nonexistent/prog");
	CHECK_STR(p->maps[1].file, "/nonexistent/libfoo.so.1");
	CHECK_EQ(p->locs[p->samples[0].locs[0]].mapping, 0);
	CHECK(p->maps_text && strstr(p->maps_text, "libfoo.so.1"));
	CHECK(p->drop_frames && strstr(p->drop_frames, "malloc"));
	prof_free(p);

	/* prof_accum off: all cumulative counts zero, no alloc_* values. */
	p = must_read(FMT_JEPROF, "heap_v2/1\n  t*: 1: 64 [0: 0]\n@ 0x10\n  t*: 1: 64 [0: 0]\n");
	CHECK(!p->has_alloc);
	CHECK_EQ(prof_total(p, PT_INUSE_SPACE), 64);
	CHECK_EQ(p->nmaps, 0);
	prof_free(p);

	/* Blank lines, CRLF, tabs, no maps section, all-zero blocks skipped. */
	p = must_read(FMT_JEPROF, "\n  \nheap_v2/1\r\n\r\n\tt*:\t1:\t64\t[\t1:\t64\t]\r\n"
		      "@\t0x10\t0x20\r\n\tt*: 1: 64 [1: 64]\r\n@ 0x30\n  t*: 0: 0 [0: 0]\n");
	CHECK_EQ(p->nsamples, 1);
	CHECK_EQ(loc_addr(p, 0, 1), 0x1f);
	prof_free(p);
}

/* The average-size correction, against numbers computed by hand:
 * p(s) = 1 - exp(-s/524288); p(4096) = 0.0077820617397565,
 * 1/p = 128.50065104, 4096/p = 526338.6667. */
static const char je_sampled[] =
	"heap_v2/524288\n"
	"  t*: 6: 2105472 [6: 16512]\n"
	"@ 0x1000 0x2000\n"
	"  t*: 1: 4096 [3: 12288]\n"
	"@ 0x1100 0x2000\n"
	"  t*: 2: 2097152 [0: 0]\n"
	"@ 0x1200 0x2000\n"
	"  t*: 2: 4160 [2: 4160]\n"
	"@ 0x1300 0x2000\n"
	"  t*: 1: 64 [1: 64]\n";

static void test_jeprof_unbias(void)
{
	struct profile *p = must_read(FMT_JEPROF, je_sampled);

	CHECK_EQ(p->period, 524288);
	CHECK_EQ(p->nsamples, 4);
	/* 1 x 4 KiB: 128.50 objects, 526338.67 bytes; 3 x 4 KiB: 385.50, 1579016.0 */
	CHECK_EQ(p->samples[0].v[PT_INUSE_OBJECTS], 129);
	CHECK_EQ(p->samples[0].v[PT_INUSE_SPACE], 526339);
	CHECK_EQ(p->samples[0].v[PT_ALLOC_OBJECTS], 386);
	CHECK_EQ(p->samples[0].v[PT_ALLOC_SPACE], 1579016);
	CHECK_EQ(label_bytes(p, 0), 4096);
	/* 2 x 1 MiB: p = 0.86466471676, 2.31303528550 objects, 2425393.29 bytes */
	CHECK_EQ(p->samples[1].v[PT_INUSE_OBJECTS], 2);
	CHECK_EQ(p->samples[1].v[PT_INUSE_SPACE], 2425393);
	CHECK_EQ(p->samples[1].v[PT_ALLOC_OBJECTS], 0);
	CHECK_EQ(label_bytes(p, 1), 1048576);
	/* Mixed sizes (4096 + 64): by the average 2080 as jeprof does,
	 * p = 0.0039594258772633, 505.12 objects, 1050657.0 bytes.  The file
	 * cannot tell it from 2 x 2080 B, so the label is the average. */
	CHECK_EQ(p->samples[2].v[PT_INUSE_OBJECTS], 505);
	CHECK_EQ(p->samples[2].v[PT_INUSE_SPACE], 1050657);
	CHECK_EQ(label_bytes(p, 2), 2080);
	/* 1 x 64 B: 8192.5 objects (1/p = 8192.500010), 524320.0 bytes */
	CHECK_EQ(p->samples[3].v[PT_INUSE_OBJECTS], 8193);
	CHECK_EQ(p->samples[3].v[PT_INUSE_SPACE], 524320);

	/* Writing gives the raw sampled counts back, block for block. */
	char *s = must_write(p, FMT_JEPROF, PT_INUSE_SPACE);
	CHECK_HAS(s, "heap_v2/524288\n  t*: 6: 2105472 [6: 16512]\n");
	CHECK_HAS(s, "@ 0x1000 0x2000\n  t*: 1: 4096 [3: 12288]\n");
	CHECK_HAS(s, "@ 0x1100 0x2000\n  t*: 2: 2097152 [0: 0]\n");
	CHECK_HAS(s, "@ 0x1200 0x2000\n  t*: 2: 4160 [2: 4160]\n");
	CHECK_HAS(s, "@ 0x1300 0x2000\n  t*: 1: 64 [1: 64]\n");
	CHECK_HAS(s, "\nMAPPED_LIBRARIES:\n");
	struct profile *q = must_read(FMT_JEPROF, s);
	for (int t = 0; t < PT_NTYPES; t++)
		CHECK_EQ(prof_total(q, t), prof_total(p, t));
	prof_free(q);
	free(s);
	prof_free(p);

	/* Live and cumulative pairs of different sizes: two samples on one
	 * stack, each labelled with its own size, written back as two blocks. */
	p = must_read(FMT_JEPROF, "heap_v2/524288\n@ 0x10 0x20\n  t*: 1: 4096 [3: 196608]\n");
	CHECK_EQ(p->nsamples, 2);
	CHECK_EQ(p->samples[0].locs[0], p->samples[1].locs[0]);
	CHECK_EQ(p->samples[0].v[PT_INUSE_SPACE], 526339);
	CHECK_EQ(p->samples[0].v[PT_ALLOC_SPACE], 0);
	CHECK_EQ(label_bytes(p, 0), 4096);
	CHECK_EQ(p->samples[1].v[PT_INUSE_SPACE], 0);
	CHECK_EQ(label_bytes(p, 1), 65536);
	/* 3 x 64 KiB: p = 0.117503097415405, 25.53 objects, 1673215.47 bytes */
	CHECK_EQ(p->samples[1].v[PT_ALLOC_OBJECTS], 26);
	CHECK_EQ(p->samples[1].v[PT_ALLOC_SPACE], 1673215);
	s = must_write(p, FMT_JEPROF, PT_INUSE_SPACE);
	CHECK_HAS(s, "@ 0x10 0x20\n  t*: 1: 4096 [0: 0]\n@ 0x10 0x20\n  t*: 0: 0 [3: 196608]\n");
	free(s);
	prof_free(p);

	/* What jemalloc 5.3 writes with prof_unbias: counts whose average is
	 * not a whole size.  The writer still finds raw counts that read back
	 * as the same estimates (9: 9517674 and 9: 9517675 both do). */
	p = must_read(FMT_JEPROF, "heap_v2/524288\n@ 0x10\n  t*: 9: 9517675 [0: 0]\n"
		      "@ 0x20\n  t*: 3: 200 [0: 0]\n@ 0x30\n  t*: 7: 1000 [0: 0]\n");
	CHECK_EQ(label_bytes(p, 0), 1057519);
	CHECK_EQ(label_bytes(p, 1), 67);
	s = must_write(p, FMT_JEPROF, PT_INUSE_SPACE);
	CHECK_HAS(s, "@ 0x20\n  t*: 3: 200 [0: 0]\n@ 0x30\n  t*: 7: 1000 [0: 0]\n");
	q = must_read(FMT_JEPROF, s);
	CHECK_EQ(q->nsamples, 3);
	for (size_t i = 0; i < 3 && i < q->nsamples; i++)
		for (int t = 0; t < PT_NTYPES; t++)
			CHECK_EQ(q->samples[i].v[t], p->samples[i].v[t]);
	prof_free(q);
	free(s);
	prof_free(p);

	/* Estimates past int64 are an error, not a wrap. */
	char err[FMT_ERRLEN];
	int rc;
	p = read_text(FMT_JEPROF, "heap_v2/9223372036854775807\n@ 0x1\n  t*: 1000: 1000 [0: 0]\n",
		      &rc, err);
	CHECK_EQ(rc, -EINVAL);
	CHECK_STR(err, "line 3: counts out of range after unbiasing");
	CHECK(p == NULL);
}

static void test_jeprof_write(void)
{
	struct profile *p = must_read(FMT_JEPROF, je_exact);
	char *s = must_write(p, FMT_JEPROF, PT_INUSE_SPACE);

	/* Exact: period 1, callers +1 again, maps verbatim. */
	CHECK_HAS(s, "heap_v2/1\n  t*: 3: 300 [5: 500]\n@ 0x1000 0x2000 0x3000\n  t*: 2: 200 [3: 300]\n");
	CHECK_HAS(s, "@ 0x1100 0x2000\n  t*: 1: 100 [2: 200]\n");
	CHECK_HAS(s, "\nMAPPED_LIBRARIES:\n00001000-00004000 r-xp 00000000 08:01 1234 ");
	free(s);

	/* Maps synthesized from the mappings when there is no maps text. */
	p->maps_text = NULL;
	s = must_write(p, FMT_JEPROF, PT_INUSE_SPACE);
	CHECK_HAS(s, "MAPPED_LIBRARIES:\n00001000-00004000 r-xp 00000000 00:00 0 ");
	CHECK_HAS(s, " /nonexistent/prog\n");
	CHECK_HAS(s, "7f0000000000-7f0000010000 r-xp 00001000 00:00 0 ");
	struct profile *q = must_read(FMT_JEPROF, s);
	CHECK_EQ(q->nmaps, 2);
	CHECK_STR(q->maps[0].file, "/nonexistent/prog");
	CHECK_EQ(q->maps[1].offset, 0x1000);
	prof_free(q);
	free(s);

	/* A newline in a path is written the kernel's way, so the section
	 * still parses. */
	prof_add_mapping(p, 0x7f1000000000, 0x7f1000001000, 0, "/tmp/odd\nname.so", "");
	s = must_write(p, FMT_JEPROF, PT_INUSE_SPACE);
	CHECK_HAS(s, " /tmp/odd\\012name.so\n");
	q = must_read(FMT_JEPROF, s);
	CHECK_EQ(q->nmaps, 3);
	prof_free(q);
	free(s);

	/* Without alloc values the cumulative columns are zero. */
	p->has_alloc = false;
	s = must_write(p, FMT_JEPROF, PT_INUSE_SPACE);
	CHECK_HAS(s, "  t*: 3: 300 [0: 0]\n");
	free(s);
	prof_free(p);
}

/* ---- gperftools heap profile -------------------------------------------- */

/* What gperftools 2.10 writes (HEAPPROFILE), abridged. */
static const char gp_exact[] =
	"heap profile:   1110: 10899456 [  1160: 11309056] @ heapprofile\n"
	"    10: 10485760 [    10: 10485760] @ 0x5576f3f1a59e 0x5576f3f1a120 0x7f89eda4524a\n"
	"   100:   409600 [   100:   409600] @ 0x5576f3f1a54e 0x5576f3f1a11b 0x7f89eda4524a\n"
	"  1000:     4096 [  1000:     4096] @ 0x5576f3f1a5e6\n"
	"     0:        0 [    50:   409600] @ 0x5576f3f1a62a 0x5576f3f1a12a\n"
	"\n"
	"MAPPED_LIBRARIES:\n"
	"5576f3f19000-5576f3f1a000 r--p 00000000 00:00 10953033    /nonexistent/fmt_sites\n"
	"5576f3f1a000-5576f3f1b000 r-xp 00001000 00:00 10953033    /nonexistent/fmt_sites\n"
	"557701b7f000-557702e80000 rw-p 00000000 00:00 0           [heap]\n";

static void test_gperf_read(void)
{
	struct profile *p = must_read(FMT_GPERF, gp_exact);

	CHECK_EQ(p->period, 1);
	CHECK(p->has_alloc);
	CHECK_EQ(p->nsamples, 4);
	CHECK_EQ(prof_total(p, PT_INUSE_SPACE), 10485760 + 409600 + 4096);
	CHECK_EQ(prof_total(p, PT_INUSE_OBJECTS), 1110);
	CHECK_EQ(prof_total(p, PT_ALLOC_SPACE), 10485760 + 409600 + 4096 + 409600);
	CHECK_EQ(p->samples[3].v[PT_INUSE_SPACE], 0);
	CHECK_EQ(p->samples[3].v[PT_ALLOC_OBJECTS], 50);
	/* Every address is a return address, the leaf too. */
	CHECK_EQ(loc_addr(p, 0, 0), 0x5576f3f1a59d);
	CHECK_EQ(loc_addr(p, 0, 1), 0x5576f3f1a11f);
	CHECK_EQ(loc_addr(p, 2, 0), 0x5576f3f1a5e5);
	CHECK_EQ(p->nmaps, 1);
	CHECK_STR(p->maps[0].file, "/nonexistent/fmt_sites");
	CHECK_EQ(p->locs[p->samples[0].locs[0]].mapping, 0);
	CHECK_EQ(label_bytes(p, 1), 4096);
	CHECK_EQ(label_bytes(p, 2), 4);   /* 4.096 B on average, rounded */
	prof_free(p);

	/* heap_v2/N: sampled, same correction as jeprof. */
	p = must_read(FMT_GPERF, "heap profile: 1: 4096 [3: 12288] @ heap_v2/524288\n"
		      "1: 4096 [3: 12288] @ 0x1001\n");
	CHECK_EQ(p->period, 524288);
	CHECK_EQ(p->samples[0].v[PT_INUSE_OBJECTS], 129);
	CHECK_EQ(p->samples[0].v[PT_INUSE_SPACE], 526339);
	CHECK_EQ(p->samples[0].v[PT_ALLOC_SPACE], 1579016);
	CHECK_EQ(loc_addr(p, 0, 0), 0x1000);
	prof_free(p);

	/* heap/N: the old sampler, taken as v2 with N/2 like Go pprof. */
	p = must_read(FMT_GPERF, "heap profile: 1: 4096 [0: 0] @ heap/1048576\n"
		      "1: 4096 [0: 0] @ 0x1001\n");
	CHECK_EQ(p->period, 524288);
	CHECK_EQ(p->samples[0].v[PT_INUSE_SPACE], 526339);
	CHECK(!p->has_alloc);
	prof_free(p);
}

static void test_gperf_write(void)
{
	struct profile *p = must_read(FMT_GPERF, gp_exact);
	char *s = must_write(p, FMT_GPERF, PT_INUSE_SPACE);

	CHECK_HAS(s, "heap profile:   1110: 10899456 [  1160: 11309056] @ heapprofile\n");
	CHECK_HAS(s, "    10: 10485760 [    10: 10485760] @ 0x00005576f3f1a59e 0x00005576f3f1a120 0x00007f89eda4524a\n");
	CHECK_HAS(s, "     0:        0 [    50:   409600] @ 0x00005576f3f1a62a 0x00005576f3f1a12a\n");
	CHECK_HAS(s, "\nMAPPED_LIBRARIES:\n5576f3f19000-5576f3f1a000 r--p");
	struct profile *q = must_read(FMT_GPERF, s);
	CHECK_EQ(q->nsamples, p->nsamples);
	for (size_t i = 0; i < p->nsamples && i < q->nsamples; i++) {
		CHECK_EQ(q->samples[i].nlocs, p->samples[i].nlocs);
		for (uint32_t k = 0; k < p->samples[i].nlocs && k < q->samples[i].nlocs; k++)
			CHECK_EQ(loc_addr(q, i, k), loc_addr(p, i, k));
		for (int t = 0; t < PT_NTYPES; t++)
			CHECK_EQ(q->samples[i].v[t], p->samples[i].v[t]);
	}
	prof_free(q);
	free(s);
	prof_free(p);

	/* jeprof -> gperf -> jeprof keeps the lookup pcs: the leaf from a jemalloc
	 * dump is a pc (written +1 for gperf), callers return addresses. */
	p = must_read(FMT_JEPROF, je_sampled);
	s = must_write(p, FMT_GPERF, PT_INUSE_SPACE);
	CHECK_HAS(s, "@ heap_v2/524288\n");
	CHECK_HAS(s, "     1:     4096 [     3:    12288] @ 0x0000000000001001 0x0000000000002000\n");
	q = must_read(FMT_GPERF, s);
	CHECK_EQ(loc_addr(q, 0, 0), 0x1000);
	CHECK_EQ(loc_addr(q, 0, 1), 0x1fff);
	for (int t = 0; t < PT_NTYPES; t++)
		CHECK_EQ(prof_total(q, t), prof_total(p, t));
	char *s2 = must_write(q, FMT_JEPROF, PT_INUSE_SPACE);
	char *s1 = must_write(p, FMT_JEPROF, PT_INUSE_SPACE);
	CHECK_STR(s2, s1);
	free(s1);
	free(s2);
	prof_free(q);
	free(s);
	prof_free(p);
}

/* gperftools' stacks start at malloc's caller: a jemalloc dump's leading
 * allocator frames (by library, or by name) are left out when writing it. */
static void test_gperf_write_trims(void)
{
	struct profile *p = must_read(FMT_JEPROF,
		"heap_v2/1\n"
		"@ 0x7f0000001000 0x7f0000002000 0x401000 0x402000\n  t*: 1: 64 [1: 64]\n"
		"@ 0x7f0000001000 0x7f0000002000\n  t*: 1: 32 [1: 32]\n"
		"@ 0x403000 0x401000\n  t*: 1: 16 [1: 16]\n"
		"MAPPED_LIBRARIES:\n"
		"00400000-00404000 r-xp 00000000 08:01 1 /nonexistent/prog\n"
		"7f0000000000-7f0000100000 r-xp 00000000 08:01 2 /nonexistent/libjemalloc.so.2\n");
	int64_t f = prof_add_function(p, "malloc", "", "", 0);
	struct prof_line l = { (uint32_t)f, 0, 0 };

	/* 0x403000 is symbolized as malloc. */
	prof_set_lines(p, p->samples[2].locs[0], &l, 1);
	char *s = must_write(p, FMT_GPERF, PT_INUSE_SPACE);
	CHECK_HAS(s, "     1:       64 [     1:       64] @ 0x0000000000401000 0x0000000000402000\n");
	/* Nothing but allocator frames: kept as they are. */
	CHECK_HAS(s, "     1:       32 [     1:       32] @ 0x00007f0000001001 0x00007f0000002000\n");
	CHECK_HAS(s, "     1:       16 [     1:       16] @ 0x0000000000401000\n");
	free(s);
	/* heap_v2 keeps jemalloc's own frames, as jemalloc writes them. */
	s = must_write(p, FMT_JEPROF, PT_INUSE_SPACE);
	CHECK_HAS(s, "@ 0x7f0000001000 0x7f0000002000 0x401000 0x402000\n");
	free(s);
	prof_free(p);
}

/* ---- a hand-built symbolized profile --------------------------------------- */

/* main -> handler (inlines "a;b") -> leaf "c\nd"; main -> 0xdead (no mapping);
 * main -> libfoo.so+0x1500; plus a dropped allocator frame. */
static struct profile *build_symbolized(void)
{
	struct profile *p = prof_new();
	int64_t fmain = prof_add_function(p, "main", "", "/src/main.c", 10);
	int64_t fhandler = prof_add_function(p, "handler", "", "/src/h.c", 20);
	int64_t fab = prof_add_function(p, "a;b", "", "/src/h.c", 30);
	int64_t fcd = prof_add_function(p, "c\nd", "", "", 0);
	int64_t fmalloc = prof_add_function(p, "malloc", "", "", 0);
	int64_t fweird = prof_add_function(p, "x<y>&\"z\" \xff\x01", "", "", 0);
	int64_t mfoo = prof_add_mapping(p, 0x10000, 0x20000, 0x1000, "/usr/lib/libfoo.so", "");
	int64_t lmain = prof_add_location(p, 0x400100, PROF_NONE);
	int64_t lhandler = prof_add_location(p, 0x400200, PROF_NONE);
	int64_t lcd = prof_add_location(p, 0x400300, PROF_NONE);
	int64_t lmalloc = prof_add_location(p, 0x400400, PROF_NONE);
	int64_t ldead = prof_add_location(p, 0xdead, PROF_NONE);
	int64_t lfoo = prof_add_location(p, 0x10500, (uint32_t)mfoo);
	int64_t lweird = prof_add_location(p, 0x400500, PROF_NONE);
	struct prof_line l1 = { (uint32_t)fmain, 11, 0 };
	struct prof_line l2[2] = { { (uint32_t)fab, 31, 0 }, { (uint32_t)fhandler, 21, 0 } };
	struct prof_line l3 = { (uint32_t)fcd, 0, 0 };
	struct prof_line l4 = { (uint32_t)fmalloc, 0, 0 };
	struct prof_line l5 = { (uint32_t)fweird, 0, 0 };

	prof_set_lines(p, (uint32_t)lmain, &l1, 1);
	prof_set_lines(p, (uint32_t)lhandler, l2, 2);
	prof_set_lines(p, (uint32_t)lcd, &l3, 1);
	prof_set_lines(p, (uint32_t)lmalloc, &l4, 1);
	prof_set_lines(p, (uint32_t)lweird, &l5, 1);

	uint32_t s1[] = { (uint32_t)lmalloc, (uint32_t)lcd, (uint32_t)lhandler, (uint32_t)lmain };
	uint32_t s2[] = { (uint32_t)lcd, (uint32_t)lhandler, (uint32_t)lmain };
	uint32_t s3[] = { (uint32_t)ldead, (uint32_t)lmain };
	uint32_t s4[] = { (uint32_t)lfoo, (uint32_t)lmain };
	uint32_t s5[] = { (uint32_t)lweird, (uint32_t)lmain };
	int64_t v1[PT_NTYPES] = { 3, 300, 1, 100 };
	int64_t v2[PT_NTYPES] = { 1, 50, 1, 50 };
	int64_t v3[PT_NTYPES] = { 1, 7, 0, 0 };
	int64_t v4[PT_NTYPES] = { 2, 20, 2, 20 };
	int64_t v5[PT_NTYPES] = { 1, 1, 1, 1 };
	prof_add_sample(p, s1, 4, v1, NULL, 0);
	prof_add_sample(p, s2, 3, v2, NULL, 0);
	prof_add_sample(p, s3, 2, v3, NULL, 0);
	prof_add_sample(p, s4, 2, v4, NULL, 0);
	prof_add_sample(p, s5, 2, v5, NULL, 0);
	p->has_alloc = true;
	p->period = 1;
	p->drop_frames = prof_intern(p, "malloc|calloc");
	CHECK_EQ(prof_validate(p), 0);
	return p;
}

static void test_collapsed(void)
{
	struct profile *p = build_symbolized();
	char *s = must_write(p, FMT_COLLAPSED, PT_INUSE_SPACE);

	/* Root first, inlined frames outermost first, ';' and '\n' escaped,
	 * the dropped malloc frame gone so both handler stacks merge, zero
	 * values left out, lines sorted. */
	CHECK_STR(s, "main;handler;a%3Bb;c%0Ad 150\n"
		  "main;libfoo.so+0x1500 20\n"
		  "main;x<y>&\"z\" \xff\x01 1\n");
	free(s);
	s = must_write(p, FMT_COLLAPSED, PT_ALLOC_SPACE);
	CHECK_HAS(s, "main;handler;a%3Bb;c%0Ad 350\n");
	CHECK_HAS(s, "main;0xdead 7\n");
	CHECK_HAS(s, "main;libfoo.so+0x1500 20\n");
	free(s);
	s = must_write(p, FMT_COLLAPSED, PT_INUSE_OBJECTS);
	CHECK_HAS(s, "main;handler;a%3Bb;c%0Ad 2\n");
	free(s);

	/* No drop_frames: malloc stays in the stack, but as an allocator
	 * frame at the leaf end it is still trimmed, like heapsnap top does. */
	p->drop_frames = NULL;
	s = must_write(p, FMT_COLLAPSED, PT_INUSE_SPACE);
	CHECK_HAS(s, "main;handler;a%3Bb;c%0Ad 150\n");
	free(s);

	/* alloc_* of a profile without them is refused by fmt_write. */
	p->has_alloc = false;
	char err[FMT_ERRLEN];
	int rc;
	s = write_str(p, FMT_COLLAPSED, PT_ALLOC_SPACE, &rc, err);
	CHECK_EQ(rc, -EINVAL);
	free(s);
	prof_free(p);
}

static void test_speedscope(void)
{
	struct profile *p = build_symbolized();
	char *s = must_write(p, FMT_SPEEDSCOPE, PT_INUSE_SPACE);

	CHECK_HAS(s, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\"");
	CHECK_HAS(s, "\"shared\":{\"frames\":[{\"name\":\"main\",\"file\":\"/src/main.c\",\"line\":10},"
		  "{\"name\":\"handler\",\"file\":\"/src/h.c\",\"line\":20},"
		  "{\"name\":\"a;b\",\"file\":\"/src/h.c\",\"line\":30},"
		  "{\"name\":\"c\\nd\"},{\"name\":\"libfoo.so+0x1500\"},"
		  "{\"name\":\"x<y>&\\\"z\\\" \\ufffd\\u0001\"}]}");
	CHECK_HAS(s, "\"profiles\":[{\"type\":\"sampled\",\"name\":\"inuse_space\",\"unit\":\"bytes\","
		  "\"startValue\":0,\"endValue\":171,"
		  "\"samples\":[[0,1,2,3],[0,1,2,3],[0,4],[0,5]],\"weights\":[100,50,20,1]}]");
	CHECK_HAS(s, "\"exporter\":\"heapsnap\"}\n");
	free(s);
	s = must_write(p, FMT_SPEEDSCOPE, PT_ALLOC_OBJECTS);
	CHECK_HAS(s, "\"name\":\"alloc_objects\",\"unit\":\"none\"");
	CHECK_HAS(s, "{\"name\":\"0xdead\"}");
	CHECK_HAS(s, "\"weights\":[3,1,1,2,1]");
	free(s);
	prof_free(p);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *q = hay; (q = strstr(q, needle)); q++)
		n++;
	return n;
}

static void test_svg(void)
{
	struct profile *p = build_symbolized();
	char *s = must_write(p, FMT_SVG, PT_INUSE_SPACE);

	CHECK(strncmp(s, "<?xml version=\"1.0\" encoding=\"UTF-8\"", 36) == 0);
	CHECK_HAS(s, "</svg>\n");
	/* Nodes: all, main, handler, a;b, c\nd, libfoo.so+0x1500, x<y>..: 7
	 * frames, plus the background. */
	CHECK_EQ(count(s, "<rect"), 8);
	CHECK_EQ(count(s, "<title>"), 7);
	CHECK_HAS(s, "<title>all (171 bytes, 100.00%)</title>");
	CHECK_HAS(s, "<title>main (171 bytes, 100.00%)</title>");
	CHECK_HAS(s, "<title>handler (150 bytes, 87.72%)</title>");
	CHECK_HAS(s, "<title>c?d (150 bytes, 87.72%)</title>");
	CHECK_HAS(s, "<title>x&lt;y&gt;&amp;&quot;z&quot; ?? (1 bytes, 0.58%)</title>");
	/* Full width for the root: 1180 px from x = 10. */
	CHECK_HAS(s, "x=\"10.00\" y=\"");
	CHECK_HAS(s, "width=\"1180.00\"");
	/* Deterministic. */
	char *s2 = must_write(p, FMT_SVG, PT_INUSE_SPACE);
	CHECK_STR(s2, s);
	free(s2);
	free(s);
	prof_free(p);

	/* Empty profile: a valid, empty picture. */
	p = prof_new();
	s = must_write(p, FMT_SVG, PT_INUSE_SPACE);
	CHECK_HAS(s, "</svg>\n");
	CHECK_EQ(count(s, "<title>"), 0);
	free(s);
	prof_free(p);
}

static void test_negative(void)
{
	struct profile *p = build_symbolized();
	char err[FMT_ERRLEN];
	int rc;
	char *s;

	p->samples[1].v[PT_INUSE_SPACE] = -50;
	s = write_str(p, FMT_JEPROF, PT_INUSE_SPACE, &rc, err);
	CHECK_EQ(rc, -EINVAL);
	CHECK_STR(err, "jeprof format cannot hold negative values (a diff): inuse_space is -50 in sample 2");
	free(s);
	s = write_str(p, FMT_GPERF, PT_INUSE_SPACE, &rc, err);
	CHECK_EQ(rc, -EINVAL);
	CHECK_HAS(err, "gperf format cannot hold negative values");
	free(s);
	for (enum fmt f = FMT_COLLAPSED; f <= FMT_SVG; f++) {
		s = write_str(p, f, PT_INUSE_SPACE, &rc, err);
		CHECK_EQ(rc, -EINVAL);
		CHECK_HAS(err, "cannot show negative values (a diff)");
		free(s);
		/* Other value types are fine. */
		s = write_str(p, f, PT_ALLOC_SPACE, &rc, err);
		CHECK_EQ(rc, 0);
		free(s);
	}
	prof_free(p);
}

/* ---- errors -------------------------------------------------------------- */

static void expect_err_n(enum fmt f, const char *text, size_t len, const char *msg)
{
	char err[FMT_ERRLEN];
	int rc;
	struct profile *p = read_text_n(f, text, len, &rc, err);

	if (rc != -EINVAL || p != NULL || strcmp(err, msg) != 0) {
		fprintf(stderr, "input:\n%s\n-> rc %d, err \"%s\"; expected -EINVAL, \"%s\"\n",
			text, rc, err, msg);
		failures++;
	}
	prof_free(p);
}

static void expect_err(enum fmt f, const char *text, const char *msg)
{
	expect_err_n(f, text, strlen(text), msg);
}

static void test_errors(void)
{
	expect_err(FMT_JEPROF, "", "empty file");
	expect_err(FMT_JEPROF, "\n", "line 1: expected 'heap_v2/<sampling period>' header");
	expect_err(FMT_JEPROF, "\r\n\nheap_v2/1 x\n",
		   "line 3: bad sampling period in 'heap_v2/<period>' header");
	expect_err(FMT_JEPROF, "heap profile: 1: 2 [3: 4] @ heapprofile\n",
		   "line 1: expected 'heap_v2/<sampling period>' header");
	expect_err(FMT_JEPROF, "heap_v2/x\n", "line 1: bad sampling period in 'heap_v2/<period>' header");
	expect_err(FMT_JEPROF, "heap_v2/0\n", "line 1: bad sampling period in 'heap_v2/<period>' header");
	expect_err(FMT_JEPROF, "heap_v2/1\n  t*: 1: 2 [0: 0]\nbogus\n",
		   "line 3: expected '@' before stack addresses");
	expect_err(FMT_JEPROF, "heap_v2/1\n@ 0x1 0x2\n  t*: 1: 2 [0: 0]\n  what\n",
		   "line 4: expected '@' and stack addresses or a 't<thread>:' count line");
	expect_err(FMT_JEPROF, "heap_v2/1\n@ 0x1 0x2\n",
		   "line 2: stack without a 't*:' count line (truncated file?)");
	expect_err(FMT_JEPROF, "heap_v2/1\n@ 0x1\n@ 0x2\n  t*: 1: 1 [0: 0]\n",
		   "line 2: stack without a 't*:' count line");
	expect_err(FMT_JEPROF, "heap_v2/1\n@ 0x1\n  t*: 1: 2 [0: 0\n",
		   "line 3: expected ']' after the cumulative counts");
	expect_err(FMT_JEPROF, "heap_v2/1\n@ 0x1\n  t*: 1: 2 0: 0]\n",
		   "line 3: expected '[' before the cumulative counts");
	expect_err(FMT_JEPROF, "heap_v2/1\n@ 0x1\n  t*: 1 2 [0: 0]\n",
		   "line 3: expected ':' after the object count");
	expect_err(FMT_JEPROF, "heap_v2/1\n@ 0x1\n  t*: -1: 2 [0: 0]\n",
		   "line 3: negative object count");
	expect_err(FMT_JEPROF, "heap_v2/1\n@ 0x1\n  t*: 1: 99999999999999999999 [0: 0]\n",
		   "line 3: byte count out of range");
	expect_err(FMT_JEPROF, "heap_v2/1\n@ 0x1\n  t*: 1: 9223372036854775808 [0: 0]\n",
		   "line 3: byte count out of range");
	expect_err(FMT_JEPROF, "heap_v2/1\n@ 0x1\n  t*: 1: 2 [0: 0] extra\n",
		   "line 3: unexpected text after ']'");
	expect_err(FMT_JEPROF, "heap_v2/1\n@ 0xzz\n", "line 2: expected a hex address, got '0xzz'");
	expect_err(FMT_JEPROF, "heap_v2/1\n@ 0x12345678901234567\n",
		   "line 2: address out of range: '0x12345678901234567'");
	expect_err(FMT_JEPROF, "heap_v2/1\n@\n", "line 2: no addresses after '@'");
	expect_err(FMT_JEPROF, "heap_v2/1\n@ 0x1\n  tx: 1: 1 [0: 0]\n",
		   "line 3: expected '@' and stack addresses or a 't<thread>:' count line");
	expect_err(FMT_JEPROF, "heap_v2/1\n@ 0x1\n  t*: 1: 1 [0: 0]\n\nMAPPED_LIBRARIES:\n"
		   "00400000-00401000 r-xp 00000000 08:01 1 /bin/x\nnot a maps line\n",
		   "line 7: malformed memory map line");

	static const char nul[] = "heap profile: 1: 2 [3: 4] @ heapprofile\nMAPPED_LIBRARIES:\n\n"
		"00400000-00401000 r-xp 00000000 08:01 1 /bin/x\0y\n";
	expect_err_n(FMT_GPERF, nul, sizeof(nul) - 1, "line 4: NUL byte in the memory map");
	expect_err(FMT_GPERF, "", "empty file");
	expect_err(FMT_GPERF, "\n\n \n", "line 3: expected 'heap profile:' header");
	expect_err(FMT_GPERF, "\n\nheap profile: 1: 2 [3: 4] @ heap_v2/x\n",
		   "line 3: bad sampling period in the header");
	expect_err(FMT_GPERF, "heap_v2/1\n", "line 1: expected 'heap profile:' header");
	expect_err(FMT_GPERF, "heap profile: 1: 2 [3: 4] @ cpu\n",
		   "line 1: expected 'heapprofile', 'heap_v2/N' or 'heap/N' after '@'");
	expect_err(FMT_GPERF, "heap profile: 1: 2 [3: 4]\n",
		   "line 1: expected '@' and the sampling type after the totals");
	expect_err(FMT_GPERF, "heap profile: 1: 2 [3: 4] @ heap_v2/\n",
		   "line 1: bad sampling period in the header");
	expect_err(FMT_GPERF, "heap profile: 1: 2 [3: 4] @ heapprofile\n 1: 2 [3: 4] 0x1\n",
		   "line 2: expected '@' before stack addresses");
	expect_err(FMT_GPERF, "heap profile: 1: 2 [3: 4] @ heapprofile\n 1: 2 [3: 4] @\n",
		   "line 2: no addresses after '@'");
	expect_err(FMT_GPERF, "heap profile: 1: 2 [3: 4] @ heapprofile\n 1: 2 [3:",
		   "line 2: expected cumulative byte count");
}

/* Every prefix of a real-looking file either parses or fails cleanly with a
 * located message; nothing crashes (the fuzz harnesses go further). */
static void test_truncated(void)
{
	const char *texts[2] = { je_exact, gp_exact };
	enum fmt fmts[2] = { FMT_JEPROF, FMT_GPERF };

	for (int k = 0; k < 2; k++) {
		size_t len = strlen(texts[k]);

		for (size_t n = 0; n < len; n++) {
			char *buf = malloc(n ? n : 1), err[FMT_ERRLEN] = "";
			struct profile *p = NULL;
			int rc;

			memcpy(buf, texts[k], n);
			rc = fmts[k] == FMT_JEPROF ? jeprof_read(buf, n, &p, err)
						   : gperf_read(buf, n, &p, err);
			if (rc == 0) {
				CHECK(p != NULL && prof_validate(p) == 0);
			} else if (rc != -EINVAL || p != NULL ||
				   (strncmp(err, "line ", 5) != 0 && strcmp(err, "empty file") != 0)) {
				fprintf(stderr, "%s prefix %zu: rc %d err \"%s\"\n",
					fmt_name(fmts[k]), n, rc, err);
				failures++;
			}
			prof_free(p);
			free(buf);
		}
	}
}

int main(void)
{
	test_jeprof_exact();
	test_jeprof_unbias();
	test_jeprof_write();
	test_gperf_read();
	test_gperf_write();
	test_gperf_write_trims();
	test_collapsed();
	test_speedscope();
	test_svg();
	test_negative();
	test_errors();
	test_truncated();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("all fmt text tests passed\n");
	return 0;
}
