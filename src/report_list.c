/* report_list.c - the list view: per-source-line values of matching functions, with their source text. */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_int.h"

#define MARGIN 5            /* context lines around sampled lines (pprof) */
#define MAX_BLOCK 1000      /* longer ranges shrink to windows around samples */

struct srcfile {
	char *buf;
	const char **line;      /* line[i] = start of line i + 1 (NUL-terminated) */
	size_t nlines;
};

static int read_source(const char *path, struct srcfile *sf)
{
	FILE *f = fopen(path, "r");
	size_t cap = 0, len = 0;

	memset(sf, 0, sizeof(*sf));
	if (!f)
		return -errno;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			size_t nc = cap ? cap * 2 : 65536;
			char *nb = realloc(sf->buf, nc);
			if (!nb) {
				fclose(f);
				return -ENOMEM;
			}
			sf->buf = nb;
			cap = nc;
		}
		size_t n = fread(sf->buf + len, 1, cap - len - 1, f);
		len += n;
		if (n == 0)
			break;
	}
	bool bad = ferror(f);
	fclose(f);
	if (bad)
		return -EIO;
	sf->buf[len] = 0;
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += sf->buf[i] == '\n';
	sf->line = malloc((n + 2) * sizeof(*sf->line));
	if (!sf->line)
		return -ENOMEM;
	char *s = sf->buf;
	while (s < sf->buf + len) {
		char *e = strchr(s, '\n');
		sf->line[sf->nlines++] = s;
		if (!e)
			break;
		*e = 0;
		s = e + 1;
	}
	return 0;
}

static void free_source(struct srcfile *sf)
{
	free(sf->buf);
	free(sf->line);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* Appends the row of line ln to r: sums of the nodes on that line and the
 * source text when known. */
static int add_row(struct rep_view *v, struct rroutine *r, size_t *cap, const struct srcfile *sf,
		   int64_t ln, const uint32_t *nodes, size_t nn)
{
	if (r->nlines == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct rline *nl = realloc(r->lines, nc * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		r->lines = nl;
		*cap = nc;
	}
	struct rline *rl = &r->lines[r->nlines++];
	memset(rl, 0, sizeof(*rl));
	rl->line = ln;
	for (size_t i = 0; i < nn; i++) {
		const struct rnode *n = &v->nodes[nodes[i]];
		if (n->line == ln) {
			rl->flat += n->flat;
			rl->cum += n->cum;
		}
	}
	if (r->found && ln >= 1 && (uint64_t)ln <= sf->nlines &&
	    !(rl->text = prof_intern(v->strs, sf->line[ln - 1])))
		return -ENOMEM;
	return 0;
}

static int add_routine(struct rep_view *v, const char *name, const char *file,
		       const uint32_t *nodes, size_t nn)
{
	struct rroutine *r;
	struct rroutine *nr = realloc(v->routines, (v->nroutines + 1) * sizeof(*nr));
	struct srcfile sf;
	int64_t *lines = NULL, (*iv)[2] = NULL;
	size_t nl = 0, niv = 0, cap = 0;
	int64_t start_line = 0;
	int rc;

	if (!nr)
		return -ENOMEM;
	v->routines = nr;
	r = &v->routines[v->nroutines++];
	memset(r, 0, sizeof(*r));
	r->name = name;
	r->file = file;
	if (!file)
		return 0;

	memset(&sf, 0, sizeof(sf));
	lines = malloc((nn + 1) * sizeof(*lines));
	iv = malloc((nn + 1) * sizeof(*iv));
	if (!lines || !iv) {
		rc = -ENOMEM;
		goto out;
	}
	/* sampled lines, sorted and unique */
	for (size_t i = 0; i < nn; i++) {
		const struct rnode *n = &v->nodes[nodes[i]];
		r->flat += n->flat;
		r->cum += n->cum;
		lines[nl++] = n->line;
		if (n->start_line > 0 && (start_line == 0 || n->start_line < start_line))
			start_line = n->start_line;
	}
	qsort(lines, nl, sizeof(*lines), cmp_i64);
	size_t u = 0;
	for (size_t i = 0; i < nl; i++)
		if (u == 0 || lines[u - 1] != lines[i])
			lines[u++] = lines[i];
	nl = u;

	rc = read_source(file, &sf);
	if (rc == -ENOMEM)
		goto out;
	r->found = rc == 0;

	/* What to show: pprof's one block from the function's first line
	 * (else the first sample - 5) to the last sample + 5.  Without the
	 * source only the sampled lines; a huge block (a bad start line)
	 * becomes windows of +-5 lines around the samples. */
	int64_t lo = nl ? lines[0] - MARGIN : 1, hi = nl ? lines[nl - 1] + MARGIN : 0;
	if (start_line > 0)
		lo = nl && start_line > lines[0] ? lines[0] : start_line;
	if (lo < 1)
		lo = 1;
	if (r->found && hi - lo <= MAX_BLOCK) {
		iv[niv][0] = lo;
		iv[niv++][1] = hi;
	} else {
		int64_t m = r->found ? MARGIN : 0;
		for (size_t i = 0; i < nl; i++) {
			int64_t a = lines[i] - m < 1 ? 1 : lines[i] - m, b = lines[i] + m;
			if (niv && a <= iv[niv - 1][1] + 1) {
				iv[niv - 1][1] = b;
			} else {
				iv[niv][0] = a;
				iv[niv++][1] = b;
			}
		}
	}

	rc = 0;
	size_t si = 0;  /* next sampled line */
	for (size_t k = 0; k < niv && !rc; k++) {
		for (int64_t ln = iv[k][0]; ln <= iv[k][1] && !rc; ln++) {
			while (si < nl && lines[si] < ln)
				si++;
			bool sampled = si < nl && lines[si] == ln;
			/* past the end of the file only sampled lines (the
			 * source changed since the build) */
			if (r->found && (uint64_t)ln > sf.nlines && !sampled)
				continue;
			rc = add_row(v, r, &cap, &sf, ln, nodes, nn);
		}
	}
out:
	free(iv);
	free(lines);
	free_source(&sf);
	return rc;
}

int rep_build_list(struct rep_view *v, const regex_t *symbol)
{
	const char **names = malloc((v->norder + 1) * sizeof(*names));
	uint32_t *sel = malloc((v->norder + 1) * sizeof(*sel));
	const char **files = malloc((v->norder + 1) * sizeof(*files));
	size_t nnames = 0;
	int rc = 0;

	if (!names || !sel || !files) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < v->norder; i++) {
		const struct rnode *n = &v->nodes[v->order[i]];
		if (n->name && regexec(symbol, n->name, 0, NULL, 0) == 0)
			names[nnames++] = n->name;
	}
	qsort(names, nnames, sizeof(*names), cmp_str);
	for (size_t i = 0; i < nnames && !rc; i++) {
		if (i && names[i] == names[i - 1])
			continue;
		const char *name = names[i];
		size_t nfiles = 0;
		for (size_t j = 0; j < v->norder; j++) {
			const struct rnode *n = &v->nodes[v->order[j]];
			if (n->name == name && n->file)
				files[nfiles++] = n->file;
		}
		if (!nfiles) {
			rc = add_routine(v, name, NULL, NULL, 0);
			continue;
		}
		qsort(files, nfiles, sizeof(*files), cmp_str);
		for (size_t f = 0; f < nfiles && !rc; f++) {
			if (f && files[f] == files[f - 1])
				continue;
			size_t ns = 0;
			for (size_t j = 0; j < v->norder; j++) {
				const struct rnode *n = &v->nodes[v->order[j]];
				if (n->name == name && n->file == files[f])
					sel[ns++] = v->order[j];
			}
			rc = add_routine(v, name, files[f], sel, ns);
		}
	}
out:
	free(names);
	free(sel);
	free(files);
	return rc;
}
