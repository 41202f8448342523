/* test_report.c - unit tests of the report engine (src/report*.c) and the JSON writer, on profiles built by hand. */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "profile.h"
#include "report.h"
#include "check.h"

/* ---- building profiles ------------------------------------------------- */

/* A frame: "name" or "name@file:line" or "inner+outer" for an inlined call
 * (inner inlined into outer, both at one address). */
static uint32_t loc_for(struct profile *p, const char *spec)
{
	struct prof_line lines[4];
	uint32_t n = 0;
	char buf[256];
	static uint64_t next_addr = 0x1000;

	snprintf(buf, sizeof(buf), "%s", spec);
	/* one location per distinct spec: look it up by its first function */
	for (size_t i = 0; i < p->nlocs; i++) {
		const struct prof_location *l = &p->locs[i];
		char have[256] = "";
		for (uint32_t k = 0; k < l->nlines; k++) {
			const struct prof_function *f = &p->funcs[l->lines[k].function];
			char part[128];
			if (l->lines[k].line)
				snprintf(part, sizeof(part), "%s%s@%s:%lld", k ? "+" : "", f->name,
					 f->filename, (long long)l->lines[k].line);
			else
				snprintf(part, sizeof(part), "%s%s", k ? "+" : "", f->name);
			strncat(have, part, sizeof(have) - strlen(have) - 1);
		}
		if (!strcmp(have, spec))
			return (uint32_t)i;
	}
	for (char *tok = strtok(buf, "+"); tok && n < 4; tok = strtok(NULL, "+")) {
		char *at = strchr(tok, '@');
		const char *file = "";
		int64_t line = 0;
		if (at) {
			*at = 0;
			file = at + 1;
			char *colon = strchr(at + 1, ':');
			if (colon) {
				*colon = 0;
				line = atoll(colon + 1);
			}
		}
		int64_t f = prof_add_function(p, tok, "", file, 0);
		lines[n].function = (uint32_t)f;
		lines[n].line = line;
		lines[n].column = 0;
		n++;
	}
	int64_t l = prof_new_location(p, next_addr, PROF_NONE);
	next_addr += 0x10;
	prof_set_lines(p, (uint32_t)l, lines, n);
	return (uint32_t)l;
}

/* Adds a sample: frames leaf first, separated by ';'; inuse_space =
 * bytes, inuse_objects = objs, alloc_* twice that. */
static void add(struct profile *p, const char *stack, int64_t bytes, int64_t objs)
{
	uint32_t locs[32];
	uint32_t n = 0;
	char buf[512];

	snprintf(buf, sizeof(buf), "%s", stack);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ";", &save); tok && n < 32; tok = strtok_r(NULL, ";", &save))
		locs[n++] = loc_for(p, tok);
	int64_t v[PT_NTYPES] = { 0 };
	v[PT_INUSE_SPACE] = bytes;
	v[PT_INUSE_OBJECTS] = objs;
	v[PT_ALLOC_SPACE] = 2 * bytes;
	v[PT_ALLOC_OBJECTS] = 2 * objs;
	CHECK(prof_add_sample(p, locs, n, v, NULL, 0) >= 0);
}

static struct profile *new_profile(bool alloc)
{
	struct profile *p = prof_new();
	CHECK(p != NULL);
	p->has_alloc = alloc;
	return p;
}

static struct rep_view *build(const struct profile *p, const struct rep_opts *o)
{
	char err[REP_ERRLEN];
	struct rep_view *v = NULL;
	int rc = rep_build(p, o, &v, err);
	if (rc) {
		fprintf(stderr, "rep_build: %d %s\n", rc, err);
		failures++;
	}
	return v;
}

/* The row named `name`, or NULL. */
static const struct rep_row *row(const struct rep_view *v, const char *name)
{
	for (size_t i = 0; i < rep_nrows(v); i++)
		if (!strcmp(rep_row(v, i)->name, name))
			return rep_row(v, i);
	return NULL;
}

static int64_t flat_of(const struct rep_view *v, const char *name)
{
	const struct rep_row *r = row(v, name);
	return r ? r->flat : -1;
}

static int64_t cum_of(const struct rep_view *v, const char *name)
{
	const struct rep_row *r = row(v, name);
	return r ? r->cum : -1;
}

/* Prints v into a string (plain or JSON); free() it. */
static char *render(const struct rep_view *v, bool json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK(f != NULL);
	CHECK_EQ(json ? rep_print_json(v, f) : rep_print(v, f), 0);
	fclose(f);
	return buf;
}

/* ---- tests -------------------------------------------------------------- */

static void test_two_sites(void)
{
	struct profile *p = new_profile(true);
	add(p, "site_b;main", 3000, 3);
	add(p, "site_a;main", 1000, 10);
	add(p, "site_b;main", 1000, 1);

	struct rep_opts o;
	rep_opts_init(&o, REP_TOP);
	struct rep_view *v = build(p, &o);
	CHECK_EQ(rep_total(v), 5000);
	CHECK_EQ(rep_nrows(v), 3);
	CHECK_STR(rep_row(v, 0)->name, "site_b");
	CHECK_EQ(rep_row(v, 0)->flat, 4000);
	CHECK_STR(rep_row(v, 1)->name, "site_a");
	CHECK_EQ(rep_row(v, 1)->flat, 1000);
	CHECK_STR(rep_row(v, 2)->name, "main");
	CHECK_EQ(rep_row(v, 2)->flat, 0);
	CHECK_EQ(rep_row(v, 2)->cum, 5000);

	char *s = render(v, false);
	CHECK_HAS(s, "Type: inuse_space\n");
	CHECK_HAS(s, "Showing nodes accounting for 5000B, 100% of 5000B total\n");
	CHECK_HAS(s, "      flat  flat%   sum%        cum   cum%\n");
	CHECK_HAS(s, "     4000B 80.00% 80.00%      4000B 80.00%  site_b\n");
	CHECK_HAS(s, "     1000B 20.00%   100%      1000B 20.00%  site_a\n");
	CHECK_HAS(s, "         0     0%   100%      5000B   100%  main\n");
	free(s);
	rep_free(v);

	/* --cum puts main first; -n 1 keeps one row */
	o.cum_sort = true;
	o.nodecount = 1;
	v = build(p, &o);
	CHECK_EQ(rep_nrows(v), 1);
	CHECK_STR(rep_row(v, 0)->name, "main");
	s = render(v, false);
	CHECK_HAS(s, "Showing top 1 nodes out of 3\n");
	CHECK_HAS(s, "Showing nodes accounting for 0, 0% of 4.88kB total\n");
	free(s);
	rep_free(v);

	/* objects: counts, no unit */
	rep_opts_init(&o, REP_TOP);
	o.type = PT_INUSE_OBJECTS;
	v = build(p, &o);
	CHECK_EQ(rep_total(v), 14);
	CHECK_STR(rep_row(v, 0)->name, "site_a");
	CHECK_EQ(rep_row(v, 0)->flat, 10);
	s = render(v, false);
	CHECK_HAS(s, "        10 71.43% 71.43%         10 71.43%  site_a\n");
	free(s);
	rep_free(v);
	prof_free(p);
}

static void test_recursion(void)
{
	struct profile *p = new_profile(false);
	add(p, "rec;rec;rec;rec;main", 400, 4);
	add(p, "rec;main", 100, 1);
	add(p, "leaf;rec;rec;main", 500, 5);

	struct rep_opts o;
	rep_opts_init(&o, REP_TOP);
	o.nodecount = 0;
	struct rep_view *v = build(p, &o);
	CHECK_EQ(flat_of(v, "rec"), 500);
	/* once per sample although rec appears up to four times in one */
	CHECK_EQ(cum_of(v, "rec"), 1000);
	CHECK_EQ(cum_of(v, "main"), 1000);
	CHECK_EQ(flat_of(v, "leaf"), 500);
	rep_free(v);

	/* the tree has no rec -> rec self edge */
	rep_opts_init(&o, REP_PEEK);
	o.symbol = "^rec$";
	v = build(p, &o);
	char *s = render(v, false);
	CHECK(strstr(s, "|   rec\n") == NULL);
	CHECK_HAS(s, "                                             1000B   100% |   main\n");
	CHECK_HAS(s, "                                              500B 50.00% |   leaf\n");
	free(s);
	rep_free(v);
	prof_free(p);
}

static void test_inline(void)
{
	struct profile *p = new_profile(false);
	/* helper inlined into caller, called normally by other */
	add(p, "malloc;helper+caller;main", 600, 6);
	add(p, "malloc;helper;other;main", 200, 2);

	struct rep_opts o;
	rep_opts_init(&o, REP_TOP);
	struct rep_view *v = build(p, &o);
	CHECK_EQ(flat_of(v, "helper"), 800);
	CHECK_EQ(flat_of(v, "caller"), 0);
	CHECK_EQ(cum_of(v, "caller"), 600);
	CHECK_STR(row(v, "helper")->inline_label, "(partial-inline)");
	CHECK_STR(row(v, "caller")->inline_label, "");
	CHECK(row(v, "malloc") == NULL);
	rep_free(v);
	prof_free(p);

	p = new_profile(false);
	add(p, "helper+caller;main", 600, 6);
	v = build(p, &o);
	CHECK_STR(row(v, "helper")->inline_label, "(inline)");
	char *s = render(v, false);
	CHECK_HAS(s, "  helper (inline)\n");
	free(s);
	rep_free(v);
	prof_free(p);
}

static void test_untrusted_drop_frames(void)
{
	regex_t rx;

	CHECK(rep_compile_drop_frames("malloc|operator new.*", &rx));
	CHECK(regexec(&rx, "operator new(unsigned long)", 0, NULL, 0) == 0);
	CHECK(regexec(&rx, "xmalloc", 0, NULL, 0) != 0);
	regfree(&rx);
	/* Refused: glibc would take unbounded memory or time on these. */
	CHECK(!rep_compile_drop_frames("(a{999}){999}", &rx));
	CHECK(!rep_compile_drop_frames("(a*)*\\1", &rx));
	CHECK(!rep_compile_drop_frames("(", &rx));
	CHECK(!rep_compile_drop_frames("", &rx));
}

static void test_alloc_frames(void)
{
	CHECK(rep_is_alloc_frame("malloc"));
	CHECK(rep_is_alloc_frame("operator new(unsigned long)"));
	CHECK(rep_is_alloc_frame("operator new[](unsigned long, std::nothrow_t const&)"));
	CHECK(rep_is_alloc_frame("_Znwm"));
	CHECK(rep_is_alloc_frame("_ZnamRKSt9nothrow_t"));
	CHECK(rep_is_alloc_frame("je_prof_backtrace"));
	CHECK(rep_is_alloc_frame("tcmalloc::ThreadCache::Allocate(unsigned long)"));
	CHECK(rep_is_alloc_frame("hsp_start"));
	CHECK(rep_is_alloc_frame("__libc_malloc"));
	CHECK(rep_is_alloc_frame("_int_malloc"));
	CHECK(rep_is_alloc_frame("libjemalloc.so.2+0xa2630"));
	CHECK(!rep_is_alloc_frame("__libc_start_main"));
	CHECK(!rep_is_alloc_frame("my_malloc"));
	CHECK(!rep_is_alloc_frame("ns::malloc(int)"));
	CHECK(!rep_is_alloc_frame("main"));
	CHECK(!rep_is_alloc_frame(""));
	CHECK(!rep_is_alloc_frame(NULL));
	CHECK(rep_is_alloc_module("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"));
	CHECK(rep_is_alloc_module("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4.5.10"));
	CHECK(rep_is_alloc_module("/opt/heapsnap/lib/libheapsnap-payload.so"));
	CHECK(!rep_is_alloc_module("/usr/lib/x86_64-linux-gnu/libc.so.6"));
	const char *re = rep_drop_frames_regex();
	CHECK(re && strstr(re, "malloc"));
	CHECK(re && !strstr(re, "prof_"));

	struct profile *p = new_profile(false);
	add(p, "je_prof_backtrace;prof_backtrace_impl+je_malloc_default;malloc;site_a;main", 100, 1);
	add(p, "_Znwm;site_b;main", 200, 1);
	add(p, "operator new(unsigned long);std::vector<int>::reserve(unsigned long);site_c;main", 300, 1);
	/* a program's own prof_* function calling malloc keeps its frame */
	add(p, "malloc;prof_record;main", 400, 1);
	/* only allocator frames: nothing to drop to */
	add(p, "malloc;calloc", 50, 1);

	struct rep_opts o;
	rep_opts_init(&o, REP_TOP);
	o.nodecount = 0;
	struct rep_view *v = build(p, &o);
	CHECK_EQ(flat_of(v, "site_a"), 100);
	CHECK_EQ(flat_of(v, "site_b"), 200);
	CHECK_EQ(flat_of(v, "std::vector<int>::reserve(unsigned long)"), 300);
	CHECK_EQ(cum_of(v, "site_c"), 300);
	CHECK_EQ(flat_of(v, "prof_record"), 400);
	CHECK_EQ(flat_of(v, "malloc"), 50);
	CHECK_EQ(cum_of(v, "calloc"), 50);
	CHECK(row(v, "je_prof_backtrace") == NULL);
	CHECK(row(v, "_Znwm") == NULL);
	rep_free(v);

	/* the profile's drop_frames, applied as pprof does (from the root) */
	p->drop_frames = prof_intern(p, "site_.*");
	v = build(p, &o);
	CHECK_EQ(flat_of(v, "main"), 600);
	CHECK(row(v, "site_a") == NULL);
	CHECK_EQ(flat_of(v, "prof_record"), 400);
	rep_free(v);
	prof_free(p);
}

static void test_focus_ignore(void)
{
	struct profile *p = new_profile(false);
	add(p, "a@x.c:3;mid@x.c:10;main@m.c:5", 100, 1);
	add(p, "b@y.c:7;mid@x.c:11;main@m.c:5", 300, 1);
	add(p, "c@y.c:9;main@m.c:6", 600, 1);

	struct rep_opts o;
	rep_opts_init(&o, REP_TOP);
	o.focus = "^mid$";
	struct rep_view *v = build(p, &o);
	CHECK_EQ(rep_total(v), 1000);  /* percentages stay of the whole */
	CHECK_EQ(flat_of(v, "a"), 100);
	CHECK_EQ(flat_of(v, "b"), 300);
	CHECK(row(v, "c") == NULL);
	CHECK_EQ(cum_of(v, "main"), 400);
	char *s = render(v, false);
	CHECK_HAS(s, "Active filters:\n   focus=^mid$\n");
	CHECK_HAS(s, "Showing nodes accounting for 400B, 40.00% of 1000B total\n");
	free(s);
	rep_free(v);

	o.ignore = "^b$";  /* ignore wins */
	v = build(p, &o);
	CHECK_EQ(flat_of(v, "a"), 100);
	CHECK(row(v, "b") == NULL);
	CHECK_EQ(cum_of(v, "main"), 100);
	rep_free(v);

	/* focus also matches file names */
	o.focus = "y\\.c";
	o.ignore = NULL;
	v = build(p, &o);
	CHECK_EQ(cum_of(v, "main"), 900);
	rep_free(v);

	char err[REP_ERRLEN];
	o.focus = "a(";
	CHECK_EQ(rep_build(p, &o, &v, err), -EINVAL);
	CHECK(v == NULL);
	CHECK_HAS(err, "bad --focus regex 'a('");
	prof_free(p);
}

static void test_granularity(void)
{
	struct profile *p = new_profile(false);
	add(p, "a@src/x.c:3;main@m.c:5", 100, 1);
	add(p, "a@src/x.c:4;main@m.c:5", 300, 1);
	add(p, "b@src/./x.c:9;main@m.c:6", 600, 1);

	struct rep_opts o;
	rep_opts_init(&o, REP_TOP);
	o.gran = REP_GRAN_LINES;
	struct rep_view *v = build(p, &o);
	CHECK_EQ(flat_of(v, "a src/x.c:3"), 100);
	CHECK_EQ(flat_of(v, "a src/x.c:4"), 300);
	CHECK_EQ(flat_of(v, "b src/x.c:9"), 600);  /* path cleaned like pprof */
	CHECK_EQ(cum_of(v, "main m.c:5"), 400);
	rep_free(v);

	o.gran = REP_GRAN_FILES;
	v = build(p, &o);
	CHECK_EQ(flat_of(v, "src/x.c"), 1000);
	CHECK_EQ(cum_of(v, "m.c"), 1000);
	rep_free(v);

	o.gran = REP_GRAN_ADDRESSES;
	v = build(p, &o);
	CHECK_EQ(rep_nrows(v), 5);
	CHECK(strstr(rep_row(v, 0)->name, " b src/x.c:9") != NULL);
	rep_free(v);
	prof_free(p);
}

static void test_unsymbolized(void)
{
	struct profile *p = new_profile(false);
	int64_t m = prof_add_mapping(p, 0x400000, 0x500000, 0x1000, "/opt/app/bin/server", "");
	CHECK(m >= 0);
	uint32_t l1 = (uint32_t)prof_add_location(p, 0x401234, PROF_NONE);
	uint32_t l2 = (uint32_t)prof_add_location(p, 0x7f0000001000, PROF_NONE);
	int64_t v[PT_NTYPES] = { 0, 0, 1, 64 };
	uint32_t stack[2] = { l1, l2 };
	prof_add_sample(p, stack, 2, v, NULL, 0);

	struct rep_opts o;
	rep_opts_init(&o, REP_TOP);
	struct rep_view *rv = build(p, &o);
	CHECK_EQ(flat_of(rv, "server+0x2234"), 64);
	CHECK_EQ(cum_of(rv, "0x7f0000001000"), 64);
	rep_free(rv);
	prof_free(p);
}

static void test_diff_and_base(void)
{
	struct profile *base = new_profile(true), *cur = new_profile(true);
	add(base, "a;main", 100, 1);
	add(base, "b;main", 200, 2);
	add(cur, "a;main", 150, 1);
	add(cur, "c;main", 50, 1);

	struct rep_opts o;
	rep_opts_init(&o, REP_DIFF);
	o.base = base;
	o.name = "new.pb.gz";
	o.base_name = "old.pb.gz";
	struct rep_view *v = build(cur, &o);
	CHECK_EQ(rep_total(v), 300);   /* percentages of the base */
	CHECK_STR(rep_row(v, 0)->name, "b");
	CHECK_EQ(rep_row(v, 0)->flat, -200);
	CHECK_EQ(flat_of(v, "a"), 50);
	CHECK_EQ(flat_of(v, "c"), 50);
	CHECK_EQ(cum_of(v, "main"), -100);
	char *s = render(v, false);
	CHECK_HAS(s, "Base: old.pb.gz, inuse_space total 300B\n");
	CHECK_HAS(s, "New:  new.pb.gz, inuse_space total 200B\n");
	CHECK_HAS(s, "Delta: -100B (-33.33% of base)\n");
	CHECK_HAS(s, "     -200B  -66.67%  -66.67%      -200B  -66.67%  b\n");
	CHECK_HAS(s, "      +50B  +16.67%  -50.00%       +50B  +16.67%  a\n");
	free(s);
	s = render(v, true);
	CHECK_HAS(s, "\"base\":{\"file\":\"old.pb.gz\",\"total\":300}");
	CHECK_HAS(s, "{\"name\":\"b\",\"flat\":-200,\"flat_pct\":-66.67,");
	free(s);
	rep_free(v);

	/* --base: the same values, percentages of the net stacks */
	rep_opts_init(&o, REP_TOP);
	o.base = base;
	v = build(cur, &o);
	CHECK_EQ(rep_total(v), 50 + 200 + 50);
	CHECK_EQ(flat_of(v, "b"), -200);
	CHECK_EQ(flat_of(v, "a"), 50);
	rep_free(v);

	/* no alloc values in the base */
	base->has_alloc = false;
	rep_opts_init(&o, REP_DIFF);
	o.base = base;
	o.type = PT_ALLOC_SPACE;
	char err[REP_ERRLEN];
	CHECK_EQ(rep_build(cur, &o, &v, err), -ENODATA);
	prof_free(base);
	prof_free(cur);
}

static void test_trim(void)
{
	struct profile *p = new_profile(false);
	add(p, "big;main", 100000, 1);
	add(p, "tiny;main", 400, 1);      /* < 0.5% of the total */
	add(p, "small;main", 1000, 1);

	struct rep_opts o;
	rep_opts_init(&o, REP_TOP);
	struct rep_view *v = build(p, &o);
	CHECK(row(v, "tiny") == NULL);
	CHECK_EQ(flat_of(v, "small"), 1000);
	char *s = render(v, false);
	CHECK_HAS(s, "Dropped 1 node (cum <= 0.50kB)\n");
	free(s);
	rep_free(v);
	prof_free(p);
}

static void test_peek_list(void)
{
	char path[] = "/tmp/test_report_srcXXXXXX.c";
	int fd = mkstemps(path, 2);
	CHECK(fd >= 0);
	FILE *f = fdopen(fd, "w");
	for (int i = 1; i <= 30; i++)
		fprintf(f, "line %d\n", i);
	fclose(f);

	struct profile *p = new_profile(false);
	char a[300], b[300];
	snprintf(a, sizeof(a), "work@%s:12;main@%s:25", path, path);
	snprintf(b, sizeof(b), "work@%s:14;main@%s:25", path, path);
	add(p, a, 2048, 1);
	add(p, b, 1024, 1);

	struct rep_opts o;
	rep_opts_init(&o, REP_LIST);
	o.symbol = "^work$";
	struct rep_view *v = build(p, &o);
	char *s = render(v, false);
	CHECK_HAS(s, "Total: 3kB\n");
	char want[400];
	snprintf(want, sizeof(want), "ROUTINE ======================== work in %s\n", path);
	CHECK_HAS(s, want);
	CHECK_HAS(s, "       3kB        3kB (flat, cum)   100% of Total\n");
	CHECK_HAS(s, "         .          .      7:line 7\n");
	CHECK_HAS(s, "       2kB        2kB     12:line 12\n");
	CHECK_HAS(s, "       1kB        1kB     14:line 14\n");
	CHECK_HAS(s, "         .          .     19:line 19\n");
	CHECK(strstr(s, " 6:line 6") == NULL && strstr(s, "20:line 20") == NULL);
	free(s);
	rep_free(v);

	/* main's call line carries its callees' cum */
	o.symbol = "^main$";
	v = build(p, &o);
	s = render(v, false);
	CHECK_HAS(s, "         .        3kB     25:line 25\n");
	CHECK(strstr(s, "30:line 30") != NULL);
	free(s);
	rep_free(v);

	unlink(path);
	/* the source is gone: only sampled lines */
	o.symbol = "work";
	v = build(p, &o);
	s = render(v, false);
	CHECK_HAS(s, "(source not found");
	CHECK_HAS(s, "       2kB        2kB     12:\n");
	CHECK(strstr(s, " 13:") == NULL);
	free(s);
	rep_free(v);

	char err[REP_ERRLEN];
	o.symbol = "nosuchfn";
	CHECK_EQ(rep_build(p, &o, &v, err), -ENOENT);
	CHECK_HAS(err, "no matches found for regexp: nosuchfn");

	rep_opts_init(&o, REP_PEEK);
	o.symbol = "work";
	v = build(p, &o);
	s = render(v, false);
	CHECK_HAS(s, "----------------------------------------------------------+-------------\n"
			  "      flat  flat%   sum%        cum   cum%   calls calls% + context \t \t \n");
	CHECK_HAS(s, "                                               3kB   100% |   main\n"
			  "       3kB   100%   100%        3kB   100%                | work\n");
	free(s);
	s = render(v, true);
	CHECK_HAS(s, "\"callers\":[{\"name\":\"main\",\"value\":3072,\"pct\":100,\"inline\":false}]");
	free(s);
	rep_free(v);
	prof_free(p);
}

static void test_units(void)
{
	char b[64], pct[16];
	CHECK_STR(rep_fmt_value(b, sizeof(b), 0, "bytes", REP_UNIT_AUTO), "0");
	CHECK_STR(rep_fmt_value(b, sizeof(b), 1023, "bytes", REP_UNIT_AUTO), "1023B");
	CHECK_STR(rep_fmt_value(b, sizeof(b), 1024, "bytes", REP_UNIT_AUTO), "1kB");
	CHECK_STR(rep_fmt_value(b, sizeof(b), 1536, "bytes", REP_UNIT_AUTO), "1.50kB");
	CHECK_STR(rep_fmt_value(b, sizeof(b), 3 << 20, "bytes", REP_UNIT_AUTO), "3MB");
	CHECK_STR(rep_fmt_value(b, sizeof(b), -(3 << 19), "bytes", REP_UNIT_AUTO), "-1.50MB");
	CHECK_STR(rep_fmt_value(b, sizeof(b), 5LL << 30, "bytes", REP_UNIT_AUTO), "5GB");
	CHECK_STR(rep_fmt_value(b, sizeof(b), 512, "bytes", REP_UNIT_MB), "0");
	CHECK_STR(rep_fmt_value(b, sizeof(b), 10486, "bytes", REP_UNIT_MB), "0.01MB");
	CHECK_STR(rep_fmt_value(b, sizeof(b), 1, "bytes", REP_UNIT_MB), "0");
	CHECK_STR(rep_fmt_value(b, sizeof(b), 20480, "bytes", REP_UNIT_MB), "0.02MB");
	CHECK_STR(rep_fmt_value(b, sizeof(b), 1000, "bytes", REP_UNIT_B), "1000B");
	CHECK_STR(rep_fmt_value(b, sizeof(b), 1234, "count", REP_UNIT_AUTO), "1234");
	CHECK_EQ(rep_minimum_unit(20480, 3 << 20), REP_UNIT_MB);
	CHECK_EQ(rep_minimum_unit(20480, 1 << 20), REP_UNIT_KB);
	CHECK_EQ(rep_minimum_unit(100, 100), REP_UNIT_B);
	CHECK_EQ(rep_minimum_unit(0, 5 << 20), REP_UNIT_MB);
	CHECK_STR(rep_fmt_pct(pct, 1, 1), "  100%");
	CHECK_STR(rep_fmt_pct(pct, 1, 3), "33.33%");
	CHECK_STR(rep_fmt_pct(pct, 1, 200), "  0.5%");
	CHECK_STR(rep_fmt_pct(pct, 0, 200), "    0%");
	CHECK_STR(rep_fmt_pct(pct, -50, 200), "25.00%");
	CHECK_STR(rep_fmt_pct(pct, 5, 0), "    0%");
	CHECK_EQ(rep_parse_unit("kb"), REP_UNIT_KB);
	CHECK_EQ(rep_parse_unit("parsecs"), -1);
	CHECK_EQ(rep_parse_gran("lines"), REP_GRAN_LINES);
	CHECK_EQ(rep_parse_gran("bogus"), -1);
}

static void test_json(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json j;

	json_begin(&j, f);
	json_obj_open(&j);
	json_kv_str(&j, "q", "a\"b\\c\n\t\x01\x7f");
	json_kv_str(&j, "utf8", "caf\xc3\xa9 \xe2\x82\xac");
	json_kv_str(&j, "bad", "x\xff\xc3(y\xed\xa0\x80");
	json_kv_int(&j, "neg", -5);
	json_kv_double(&j, "d", 12.5, 2);
	json_kv_double(&j, "third", 1.0 / 3, 4);
	json_kv_double(&j, "nan", 0.0 / 0.0, 2);
	json_key(&j, "arr");
	json_arr_open(&j);
	json_int(&j, 1);
	json_bool(&j, true);
	json_null(&j);
	json_arr_close(&j);
	json_obj_close(&j);
	CHECK_EQ(json_end(&j), 0);
	fclose(f);
	CHECK_STR(buf, "{\"q\":\"a\\\"b\\\\c\\n\\t\\u0001\\u007f\",\"utf8\":\"caf\xc3\xa9 \xe2\x82\xac\","
		  "\"bad\":\"x\\ufffd\\ufffd(y\\ufffd\\ufffd\\ufffd\",\"neg\":-5,\"d\":12.5,"
		  "\"third\":0.3333,\"nan\":null,\"arr\":[1,true,null]}\n");
	free(buf);

	/* misuse is reported, not fatal */
	f = open_memstream(&buf, &len);
	json_begin(&j, f);
	json_obj_open(&j);
	json_int(&j, 3);        /* value without a key */
	json_obj_close(&j);
	CHECK_EQ(json_end(&j), -EINVAL);
	fclose(f);
	free(buf);

	f = open_memstream(&buf, &len);
	json_begin(&j, f);
	json_arr_open(&j);
	CHECK_EQ(json_end(&j), -EINVAL);  /* unclosed */
	fclose(f);
	free(buf);
}

int main(void)
{
	test_two_sites();
	test_recursion();
	test_inline();
	test_alloc_frames();
	test_untrusted_drop_frames();
	test_focus_ignore();
	test_granularity();
	test_unsymbolized();
	test_diff_and_base();
	test_trim();
	test_peek_list();
	test_units();
	test_json();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test_report: all checks passed\n");
	return 0;
}
