/* symbench.c - bench helper: symbolizes addresses spread over one mapping of a live process, cold then warm. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "profile.h"
#include "symbolize.h"

/*
 * Usage: symbench [-n COUNT] [-m NAME]... PID
 *
 * For the executable mapping of each NAME (a file whose basename starts with
 * NAME; the process's own executable when no -m is given), COUNT addresses
 * (default 10000, at most one per byte) evenly spread over the mapping are
 * symbolized twice: cold, timing sym_open_pid plus sym_profile on a fresh
 * session, as a first dump pays; then warm, sym_profile on a second profile
 * with the same addresses in the same session (the per-address cache).
 * One JSON line per mapping on stdout.  Exit 0, 1 on failure, 64 usage.
 */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool base_starts(const char *path, const char *name)
{
	const char *b = strrchr(path, '/');

	return strncmp(b ? b + 1 : path, name, strlen(name)) == 0;
}

/* The process's mappings plus one unsymbolized location every *stride bytes
 * of the mapping named name (NULL: the executable) in *mi.  NULL on error,
 * with why printed. */
static struct profile *spread(int pid, const char *name, size_t count, uint32_t *mi, uint64_t *stride)
{
	char exe[PATH_MAX], link[64];
	struct profile *p = prof_new();
	int rc;

	if (!p)
		return NULL;
	if ((rc = prof_load_proc_maps(p, pid)) != 0) {
		fprintf(stderr, "symbench: cannot read the maps of pid %d: %s\n", pid, strerror(-rc));
		goto fail;
	}
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	ssize_t n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	for (*mi = 0; *mi < p->nmaps; (*mi)++)
		if (name ? base_starts(p->maps[*mi].file, name) : strcmp(p->maps[*mi].file, exe) == 0)
			break;
	if (*mi == p->nmaps) {
		fprintf(stderr, "symbench: pid %d maps no executable '%s'\n", pid, name ? name : exe);
		goto fail;
	}
	const struct prof_mapping *m = &p->maps[*mi];
	*stride = (m->limit - m->start) / (count ? count : 1);
	if (*stride == 0)
		*stride = 1;
	for (uint64_t a = m->start; a < m->limit && p->nlocs < count; a += *stride)
		if (prof_new_location(p, a, *mi) < 0)
			goto fail;
	return p;
fail:
	prof_free(p);
	return NULL;
}

static size_t frames(const struct profile *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nlocs; i++)
		n += p->locs[i].nlines;
	return n;
}

/* Locations that got a function name rather than "module+0xoffset". */
static size_t named(const struct profile *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nlocs; i++) {
		const struct prof_location *l = &p->locs[i];
		n += l->nlines > 0 && !strstr(p->funcs[l->lines[l->nlines - 1].function].name, "+0x");
	}
	return n;
}

static int bench_one(int pid, const char *name, size_t count)
{
	struct profile *p[2] = { NULL, NULL };
	struct sym_ctx *c = NULL;
	uint32_t mi;
	uint64_t stride;
	char err[256];
	double t[3];
	int ret = 1, rc;

	for (int r = 0; r < 2; r++)
		if (!(p[r] = spread(pid, name, count, &mi, &stride)))
			goto out;
	t[0] = now();
	if ((rc = sym_open_pid(pid, &c, err)) != 0) {
		fprintf(stderr, "symbench: cannot open a session on pid %d: %s\n", pid, err);
		goto out;
	}
	if ((rc = sym_profile(c, p[0])) != 0)
		goto sym_fail;
	t[1] = now();
	if ((rc = sym_profile(c, p[1])) != 0)
		goto sym_fail;
	t[2] = now();

	size_t nf = frames(p[0]), nl = p[0]->nlocs;
	if (frames(p[1]) != nf) {
		fprintf(stderr, "symbench: warm pass gave %zu frames, cold %zu\n", frames(p[1]), nf);
		goto out;
	}
	const struct prof_mapping *m = &p[0]->maps[mi];
	struct json j;
	json_begin(&j, stdout);
	json_obj_open(&j);
	json_kv_str(&j, "mapping", m->file);
	json_kv_uint(&j, "mapping_bytes", m->limit - m->start);
	json_kv_uint(&j, "stride", stride);
	json_kv_bool(&j, "dwarf_lines", m->has_line_numbers);
	json_kv_bool(&j, "inline_frames", m->has_inline_frames);
	json_kv_uint(&j, "locations", nl);
	json_kv_uint(&j, "named_locations", named(p[0]));
	json_kv_uint(&j, "frames", nf);
	json_kv_double(&j, "cold_s", t[1] - t[0], 6);
	json_kv_double(&j, "warm_s", t[2] - t[1], 6);
	json_kv_double(&j, "cold_frames_per_s", nf / (t[1] - t[0]), 0);
	json_kv_double(&j, "warm_frames_per_s", nf / (t[2] - t[1]), 0);
	json_kv_double(&j, "cold_locations_per_s", nl / (t[1] - t[0]), 0);
	json_kv_double(&j, "warm_locations_per_s", nl / (t[2] - t[1]), 0);
	json_obj_close(&j);
	ret = json_end(&j) == 0 ? 0 : 1;
	fflush(stdout);
	goto out;
sym_fail:
	fprintf(stderr, "symbench: cannot symbolize pid %d: %s\n", pid, strerror(-rc));
out:
	sym_close(c);
	prof_free(p[0]);
	prof_free(p[1]);
	return ret;
}

int main(int argc, char **argv)
{
	const char *names[16];
	size_t nnames = 0, count = 10000;
	char *end;
	int opt;

	while ((opt = getopt(argc, argv, "n:m:")) != -1) {
		switch (opt) {
		case 'n':
			count = strtoul(optarg, &end, 10);
			if (*end || count == 0)
				goto usage;
			break;
		case 'm':
			if (nnames == sizeof(names) / sizeof(names[0]))
				goto usage;
			names[nnames++] = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1)
		goto usage;
	long pid = strtol(argv[optind], &end, 10);
	if (*end || pid <= 0 || pid > INT_MAX)
		goto usage;
	if (nnames == 0)
		names[nnames++] = NULL;
	for (size_t i = 0; i < nnames; i++)
		if (bench_one((int)pid, names[i], count) != 0)
			return 1;
	return 0;
usage:
	fprintf(stderr, "usage: symbench [-n COUNT] [-m NAME]... PID\n");
	return 64;
}
