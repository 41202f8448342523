/* test_format.c - unit tests of format choice and whole-file reading/writing (src/format.c). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "check.h"

static void test_names(void)
{
	for (int f = 0; f < FMT_NFORMATS; f++)
		CHECK_EQ(fmt_parse(fmt_name(f)), f);
	CHECK_STR(fmt_name(FMT_PPROF), "pprof");
	CHECK_STR(fmt_name(FMT_GPERF), "gperf");
	CHECK_EQ(fmt_parse("JEPROF"), FMT_JEPROF);
	CHECK_EQ(fmt_parse("flamegraph"), FMT_UNKNOWN);
	CHECK_EQ(fmt_parse(NULL), FMT_UNKNOWN);
	CHECK(fmt_can_read(FMT_PPROF) && fmt_can_read(FMT_JEPROF) && fmt_can_read(FMT_GPERF));
	CHECK(!fmt_can_read(FMT_SVG) && !fmt_can_read(FMT_COLLAPSED) && !fmt_can_read(FMT_UNKNOWN));

	static const struct { const char *path; enum fmt f; } cases[] = {
		{ "heap.pb.gz", FMT_PPROF }, { "/a/b.pb", FMT_PPROF }, { "x.pprof", FMT_PPROF },
		{ "X.PB.GZ", FMT_PPROF }, { "jemalloc.1.2.heap", FMT_JEPROF }, { "a.jeprof", FMT_JEPROF },
		{ "prof.0001.hprof", FMT_GPERF }, { "a.gperf", FMT_GPERF },
		{ "s.folded", FMT_COLLAPSED }, { "s.collapsed", FMT_COLLAPSED },
		{ "s.txt", FMT_COLLAPSED }, { "a.speedscope.json", FMT_SPEEDSCOPE },
		{ "a.json", FMT_SPEEDSCOPE }, { "flame.svg", FMT_SVG },
		{ "profile", FMT_UNKNOWN }, { "a.gz", FMT_UNKNOWN }, { ".svg", FMT_UNKNOWN },
		{ "pb", FMT_UNKNOWN }, { "", FMT_UNKNOWN },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum fmt f = fmt_from_filename(cases[i].path);
		if (f != cases[i].f)
			fprintf(stderr, "fmt_from_filename(\"%s\") = %d\n", cases[i].path, f);
		CHECK_EQ(f, cases[i].f);
	}
}

static void test_sniff(void)
{
	CHECK_EQ(fmt_sniff("\x1f\x8b\x08\x00", 4), FMT_PPROF);
	CHECK_EQ(fmt_sniff("heap_v2/524288\n", 15), FMT_JEPROF);
	CHECK_EQ(fmt_sniff("\n  heap_v2/1\n", 13), FMT_JEPROF);
	CHECK_EQ(fmt_sniff("heap profile:    1:  2 [ 3: 4] @ heapprofile\n", 45), FMT_GPERF);
	CHECK_EQ(fmt_sniff("heap_v", 6), FMT_UNKNOWN);
	CHECK_EQ(fmt_sniff("hello world", 11), FMT_UNKNOWN);
	CHECK_EQ(fmt_sniff("", 0), FMT_UNKNOWN);
	CHECK_EQ(fmt_sniff("\x1f", 1), FMT_UNKNOWN);
	/* Raw protobuf: sample_type (field 1, length 4), or time_nanos (field 9). */
	CHECK_EQ(fmt_sniff("\x0a\x04\x08\x01\x10\x02", 6), FMT_PPROF);
	CHECK_EQ(fmt_sniff("\x0a\x00\x48\x96\x01", 5), FMT_PPROF);
	CHECK_EQ(fmt_sniff("\x48\x96\x01", 3), FMT_UNKNOWN);         /* time_nanos first: no writer does */
	CHECK_EQ(fmt_sniff("\x0a\x00\x48", 3), FMT_UNKNOWN);         /* second field cut */
	CHECK_EQ(fmt_sniff("\x0a\x40\x08\x01", 4), FMT_UNKNOWN);     /* length past the end */
	CHECK_EQ(fmt_sniff("\x0a\x02\x08\x96", 4), FMT_PPROF);      /* inner bytes are not checked */
	CHECK_EQ(fmt_sniff("\x0a\x00\x50\x96", 4), FMT_UNKNOWN);    /* varint runs off */
	CHECK_EQ(fmt_sniff("\x0b\x01", 2), FMT_UNKNOWN);             /* field 1, wrong wire type */
	CHECK_EQ(fmt_sniff("\x78\x01", 2), FMT_UNKNOWN);             /* field 15 */
	CHECK_EQ(fmt_sniff("\n\n", 2), FMT_UNKNOWN);
}

static struct profile *small_profile(void)
{
	struct profile *p = prof_new();
	uint32_t l = prof_add_location(p, 0x1234, PROF_NONE);
	int64_t f = prof_add_function(p, "leaky", "", "leak.c", 3);

	prof_set_lines(p, l, &(struct prof_line){ f, 7, 0 }, 1);
	prof_add_sample(p, &l, 1, (int64_t[]){ 0, 0, 2, 4096 }, NULL, 0);
	return p;
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

static void test_files(void)
{
	char dir[] = "/tmp/hs-test-format.XXXXXX", path[512], err[FMT_ERRLEN];
	struct profile *p = small_profile(), *q = NULL;
	struct stat st;

	CHECK(mkdtemp(dir) != NULL);

	snprintf(path, sizeof(path), "%s/missing.pb.gz", dir);
	CHECK_EQ(fmt_read_file(path, &q, err), -ENOENT);
	CHECK_STR(err, "No such file or directory");
	CHECK(q == NULL);
	CHECK_EQ(fmt_read_file(dir, &q, err), -EISDIR);
	CHECK_STR(err, "Is a directory");

	snprintf(path, sizeof(path), "%s/empty.heap", dir);
	write_text(path, "");
	CHECK(fmt_read_file(path, &q, err) < 0);
	CHECK_STR(err, "empty file");
	snprintf(path, sizeof(path), "%s/junk.pb.gz", dir);
	write_text(path, "this is not a profile\n");
	CHECK(fmt_read_file(path, &q, err) < 0);
	CHECK_STR(err, "unrecognised format (not pprof, heap_v2 or gperftools heap profile)");
	CHECK(q == NULL);
	CHECK_EQ(fmt_read_buf(FMT_SVG, "x", 1, &q, err), -EINVAL);
	CHECK_STR(err, "svg is a write-only format");

	/* Atomic write, then read back; mode as creat(2) under the umask. */
	mode_t old = umask(022);
	snprintf(path, sizeof(path), "%s/out.pb.gz", dir);
	CHECK_EQ(fmt_write_file(p, path, FMT_UNKNOWN, PT_INUSE_SPACE, err), 0);
	CHECK_EQ(stat(path, &st), 0);
	CHECK_EQ(st.st_mode & 0777, 0644);
	umask(old);
	CHECK_EQ(fmt_read_file(path, &q, err), 0);
	CHECK(q && q->nsamples == 1 && prof_total(q, PT_INUSE_SPACE) == 4096);
	CHECK(q && strcmp(q->funcs[0].name, "leaky") == 0);
	prof_free(q);
	q = NULL;
	/* Overwrite in place; unknown suffixes get pprof. */
	CHECK_EQ(fmt_write_file(p, path, FMT_PPROF, PT_INUSE_SPACE, err), 0);
	snprintf(path, sizeof(path), "%s/noext", dir);
	CHECK_EQ(fmt_write_file(p, path, FMT_UNKNOWN, PT_INUSE_SPACE, err), 0);
	CHECK_EQ(fmt_read_file(path, &q, err), 0);
	prof_free(q);
	q = NULL;
	CHECK_EQ(count_entries(dir), 4);   /* empty.heap junk.pb.gz out.pb.gz noext */

	/* A failing writer leaves neither the target nor a temporary file. */
	struct profile *bad = small_profile();
	bad->samples[0].locs[0] = 99;
	snprintf(path, sizeof(path), "%s/bad.pb.gz", dir);
	CHECK(fmt_write_file(bad, path, FMT_PPROF, PT_INUSE_SPACE, err) < 0);
	CHECK(err[0] != '\0');
	CHECK(access(path, F_OK) != 0);
	CHECK_EQ(count_entries(dir), 4);
	bad->samples[0].locs[0] = 0;
	prof_free(bad);

	snprintf(path, sizeof(path), "%s/no/such/dir.pb.gz", dir);
	CHECK_EQ(fmt_write_file(p, path, FMT_PPROF, PT_INUSE_SPACE, err), -ENOENT);
	CHECK_STR(err, "No such file or directory");

	/* Devices are written in place, and their errors reported.  Through
	 * symlinks, so that a broken fmt_write_file renames over the links,
	 * never over the devices themselves. */
	char null_link[600], full_link[600];
	snprintf(null_link, sizeof(null_link), "%s/null", dir);
	snprintf(full_link, sizeof(full_link), "%s/full", dir);
	CHECK_EQ(symlink("/dev/null", null_link), 0);
	CHECK_EQ(symlink("/dev/full", full_link), 0);
	CHECK_EQ(fmt_write_file(p, null_link, FMT_PPROF, PT_INUSE_SPACE, err), 0);
	CHECK(lstat(null_link, &st) == 0 && S_ISLNK(st.st_mode));
	CHECK_EQ(fmt_write_file(p, full_link, FMT_PPROF, PT_INUSE_SPACE, err), -ENOSPC);
	CHECK(strstr(err, "No space left on device") != NULL);
	CHECK(lstat(full_link, &st) == 0 && S_ISLNK(st.st_mode));

	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	CHECK_EQ(system(path), 0);
	prof_free(p);
}

int main(void)
{
	test_names();
	test_sniff();
	test_files();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test_format: all checks passed\n");
	return 0;
}
