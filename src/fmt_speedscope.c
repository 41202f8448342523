/* fmt_speedscope.c - speedscope JSON writer (https://www.speedscope.app/file-format-schema.json). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_collapsed.h"
#include "json.h"

struct u32s {
	uint32_t *v;
	size_t n, cap;
};

static int u32s_push(struct u32s *a, uint32_t x)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 256;
		uint32_t *v = realloc(a->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = x;
	return 0;
}

/* Frames are keyed by "name\0file": one speedscope frame per function, so
 * its views aggregate a function over all its call sites. */
static int64_t frame_index(struct collapsed_strmap *frames, int64_t **lines,
			   const char *name, const char *file, int64_t line)
{
	size_t nl = strlen(name), fl = strlen(file);
	char *key = malloc(nl + fl + 1);
	int64_t idx;

	if (!key)
		return -ENOMEM;
	memcpy(key, name, nl);
	key[nl] = '\0';
	memcpy(key + nl + 1, file, fl);
	size_t before = frames->n;

	idx = collapsed_strmap_add(frames, key, nl + 1 + fl);
	free(key);
	if (idx >= 0 && frames->n > before) {
		/* New frame: frames->cap only grows, so size lines with it. */
		int64_t *nlines = realloc(*lines, frames->cap * sizeof(**lines));

		if (!nlines)
			return -ENOMEM;
		*lines = nlines;
		(*lines)[idx] = line;
	}
	return idx;
}

int speedscope_write(const struct profile *p, FILE *out, enum prof_type type,
		     char err[FMT_ERRLEN])
{
	struct collapsed_strmap frames = { 0 };
	struct collapsed_stack st;
	struct u32s stacks = { 0 };     /* frame indexes of all samples, root first */
	size_t *ends = NULL;            /* end of each kept sample in stacks */
	int64_t *weights = NULL, *lines = NULL, total = 0;
	size_t nkept = 0;
	struct json j;
	int rc;

	rc = collapsed_check(p, type, "speedscope", err);
	if (rc)
		return rc;
	collapsed_stack_init(&st, p);
	ends = calloc(p->nsamples ? p->nsamples : 1, sizeof(*ends));
	weights = calloc(p->nsamples ? p->nsamples : 1, sizeof(*weights));
	if (!ends || !weights)
		goto nomem;
	for (size_t i = 0; i < p->nsamples; i++) {
		int64_t v = p->samples[i].v[type], idx;
		char name[COLLAPSED_NAMELEN];

		if (v == 0)
			continue;
		if (__builtin_add_overflow(total, v, &total)) {
			snprintf(err, FMT_ERRLEN, "values too large to sum");
			rc = -ERANGE;
			goto out;
		}
		if (collapsed_stack_fill(&st, p, i))
			goto nomem;
		for (size_t k = 0; k < st.n; k++) {
			const struct prof_location *l = &p->locs[st.v[k].loc];
			int64_t line = 0;

			if (st.v[k].line != COLLAPSED_NOLINE)
				line = p->funcs[l->lines[st.v[k].line].function].start_line;
			idx = frame_index(&frames, &lines, collapsed_frame_name(p, st.v[k], name),
					  collapsed_frame_file(p, st.v[k]), line);
			if (idx < 0 || u32s_push(&stacks, (uint32_t)idx))
				goto nomem;
		}
		if (st.n == 0) {
			idx = frame_index(&frames, &lines, "[unknown]", "", 0);
			if (idx < 0 || u32s_push(&stacks, (uint32_t)idx))
				goto nomem;
		}
		ends[nkept] = stacks.n;
		weights[nkept++] = v;
	}

	json_begin(&j, out);
	json_obj_open(&j);
	json_kv_str(&j, "$schema", "https://www.speedscope.app/file-format-schema.json");
	json_key(&j, "shared");
	json_obj_open(&j);
	json_key(&j, "frames");
	json_arr_open(&j);
	for (size_t f = 0; f < frames.n; f++) {
		const char *key = frames.strs[f] + sizeof(size_t);
		const char *file = key + strlen(key) + 1;

		json_obj_open(&j);
		json_kv_str(&j, "name", key);
		if (*file)
			json_kv_str(&j, "file", file);
		if (lines[f] > 0)
			json_kv_int(&j, "line", lines[f]);
		json_obj_close(&j);
	}
	json_arr_close(&j);
	json_obj_close(&j);
	json_key(&j, "profiles");
	json_arr_open(&j);
	json_obj_open(&j);
	json_kv_str(&j, "type", "sampled");
	json_kv_str(&j, "name", prof_type_name(type));
	json_kv_str(&j, "unit", strcmp(prof_type_unit(type), "bytes") == 0 ? "bytes" : "none");
	json_kv_int(&j, "startValue", 0);
	json_kv_int(&j, "endValue", total);
	json_key(&j, "samples");
	json_arr_open(&j);
	for (size_t s = 0, k = 0; s < nkept; s++) {
		json_arr_open(&j);
		for (; k < ends[s]; k++)
			json_uint(&j, stacks.v[k]);
		json_arr_close(&j);
	}
	json_arr_close(&j);
	json_key(&j, "weights");
	json_arr_open(&j);
	for (size_t s = 0; s < nkept; s++)
		json_int(&j, weights[s]);
	json_arr_close(&j);
	json_obj_close(&j);
	json_arr_close(&j);
	json_kv_str(&j, "name", prof_type_name(type));
	json_kv_int(&j, "activeProfileIndex", 0);
	json_kv_str(&j, "exporter", "heapsnap");
	json_obj_close(&j);
	rc = json_end(&j);
	if (rc)
		snprintf(err, FMT_ERRLEN, rc == -EIO ? "write error" : "internal error writing JSON");
	goto out;
nomem:
	snprintf(err, FMT_ERRLEN, "out of memory");
	rc = -ENOMEM;
out:
	collapsed_stack_free(&st);
	collapsed_strmap_free(&frames);
	free(stacks.v);
	free(ends);
	free(weights);
	free(lines);
	return rc;
}
