/* mkprofile.c - test helper: writes a known heap profile, dumps any readable profile canonically, converts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"

/*
 * The known profile ("write"):
 *   main -> make_table -> alloc_site_a: 100 live objects of 4096 B (alloc 200)
 *   main -> alloc_site_b:               3 live objects of 1 MiB (alloc 3)
 *   main -> free_all (--diff only):     negative values, as a diff holds
 * Every location is symbolized (Function/Line, has_* flags), so readers need
 * no binary; addresses sit in a mapping of a binary that does not exist.
 */
static struct profile *known(bool diff)
{
	struct profile *p = prof_new();
	int64_t m = prof_add_mapping(p, 0x400000, 0x500000, 0, "/nonexistent/mkprofile-prog",
				     "00112233445566778899aabbccddeeff00112233");
	p->maps[m].has_functions = p->maps[m].has_filenames = true;
	p->maps[m].has_line_numbers = p->maps[m].has_inline_frames = true;
	p->has_alloc = true;
	p->period = 1;
	p->time_nanos = 1700000000000000000LL;
	p->duration_nanos = 5000000000LL;
	prof_add_comment(p, "generator=mkprofile");

	static const struct { const char *fn; uint64_t addr; int line; } fr[] = {
		{ "main", 0x401000, 10 }, { "make_table", 0x402000, 20 },
		{ "alloc_site_a", 0x403000, 30 }, { "alloc_site_b", 0x404000, 40 },
		{ "free_all", 0x405000, 50 },
	};
	uint32_t loc[5];
	for (int i = 0; i < 5; i++) {
		int64_t f = prof_add_function(p, fr[i].fn, "", "mkprofile-prog.c", fr[i].line - 2);
		loc[i] = prof_add_location(p, fr[i].addr, PROF_NONE);
		prof_set_lines(p, loc[i], &(struct prof_line){ f, fr[i].line, 0 }, 1);
	}
	int64_t s = prof_add_sample(p, (uint32_t[]){ loc[2], loc[1], loc[0] }, 3,
				    (int64_t[]){ 200, 200 * 4096, 100, 100 * 4096 }, NULL, 0);
	prof_add_num_label(p, s, "bytes", 4096, "bytes");
	s = prof_add_sample(p, (uint32_t[]){ loc[3], loc[0] }, 2,
			    (int64_t[]){ 3, 3 << 20, 3, 3 << 20 }, NULL, 0);
	prof_add_num_label(p, s, "bytes", 1 << 20, "bytes");
	if (diff)
		prof_add_sample(p, (uint32_t[]){ loc[4], loc[0] }, 2,
				(int64_t[]){ -7, -7 * 512, -5, -5 * 512 }, NULL, 0);
	return p;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One line per sample, "v0 v1 v2 v3 root;...;leaf", sorted; then totals. */
static void dump(const struct profile *p)
{
	char **lines = calloc(p->nsamples + 1, sizeof(*lines));

	printf("has_alloc %d\nperiod %lld\n", p->has_alloc, (long long)p->period);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		fprintf(f, "%lld %lld %lld %lld ", (long long)s->v[0], (long long)s->v[1],
			(long long)s->v[2], (long long)s->v[3]);
		for (uint32_t k = s->nlocs; k-- > 0;) {
			const struct prof_location *l = &p->locs[s->locs[k]];
			/* Inlined frames outermost first, as a root-to-leaf stack. */
			for (uint32_t j = l->nlines; j-- > 0;)
				fprintf(f, "%s%s", p->funcs[l->lines[j].function].name,
					(k || j) ? ";" : "");
			if (!l->nlines)
				fprintf(f, "0x%llx%s", (unsigned long long)l->address, k ? ";" : "");
		}
		fclose(f);
		lines[i] = buf;
	}
	qsort(lines, p->nsamples, sizeof(*lines), cmp_str);
	for (size_t i = 0; i < p->nsamples; i++) {
		printf("sample %s\n", lines[i]);
		free(lines[i]);
	}
	free(lines);
	for (int t = 0; t < PT_NTYPES; t++)
		printf("total %s %lld\n", prof_type_name(t), (long long)prof_total(p, t));
}

int main(int argc, char **argv)
{
	char err[FMT_ERRLEN];

	if (argc >= 3 && strcmp(argv[1], "write") == 0) {
		enum fmt f = FMT_UNKNOWN;
		bool diff = false;
		for (int i = 3; i < argc; i++) {
			if (strcmp(argv[i], "--diff") == 0)
				diff = true;
			else if (strcmp(argv[i], "--format") == 0 && i + 1 < argc)
				f = fmt_parse(argv[++i]);
		}
		struct profile *p = known(diff);
		int rc = fmt_write_file(p, argv[2], f, PT_INUSE_SPACE, err);
		prof_free(p);
		if (rc) {
			fprintf(stderr, "mkprofile: cannot write '%s': %s\n", argv[2], err);
			return 1;
		}
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "dump") == 0) {
		struct profile *p;
		if (fmt_read_file(argv[2], &p, err)) {
			fprintf(stderr, "mkprofile: cannot read '%s': %s\n", argv[2], err);
			return 1;
		}
		dump(p);
		prof_free(p);
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "convert") == 0) {
		struct profile *p;
		if (fmt_read_file(argv[2], &p, err)) {
			fprintf(stderr, "mkprofile: cannot read '%s': %s\n", argv[2], err);
			return 1;
		}
		int rc = fmt_write_file(p, argv[3], FMT_UNKNOWN, PT_INUSE_SPACE, err);
		prof_free(p);
		if (rc) {
			fprintf(stderr, "mkprofile: cannot write '%s': %s\n", argv[3], err);
			return 1;
		}
		return 0;
	}
	fprintf(stderr, "usage: mkprofile write OUT [--format F] [--diff] | dump FILE | convert IN OUT\n");
	return 64;
}
