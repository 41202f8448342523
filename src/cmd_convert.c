/* cmd_convert.c - `heapsnap convert FILE -o OUT`: read any profile format, symbolize, write another. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "cmd_report.h"
#include "format.h"
#include "hs.h"
#include "json.h"

struct summary {
	const char *in, *out;
	enum fmt f;
	const struct profile *p;
};

static int fill_summary(FILE *f, void *ctx)
{
	const struct summary *s = ctx;
	struct json j;
	size_t unsym = 0;

	for (size_t i = 0; i < s->p->nlocs; i++)
		unsym += s->p->locs[i].nlines == 0;
	json_begin(&j, f);
	json_obj_open(&j);
	json_kv_str(&j, "input", s->in);
	json_kv_str(&j, "output", s->out);
	json_kv_str(&j, "format", fmt_name(s->f));
	json_kv_uint(&j, "samples", s->p->nsamples);
	json_kv_uint(&j, "locations", s->p->nlocs);
	json_kv_uint(&j, "unsymbolized_locations", unsym);
	json_kv_int(&j, "inuse_space", prof_total(s->p, PT_INUSE_SPACE));
	json_obj_close(&j);
	return json_end(&j);
}

int do_convert(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "sample-index", required_argument, NULL, OPT_SAMPLE_INDEX },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL;
	enum fmt f = FMT_UNKNOWN;
	enum prof_type type = PT_INUSE_SPACE;
	char err[FMT_ERRLEN];
	int opt, rc;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":jo:", opts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			opt_json = true;
			break;
		case 'o':
			out = optarg;
			break;
		case OPT_FORMAT:
			f = fmt_parse(optarg);
			if (f == FMT_UNKNOWN)
				return hs_usage_err("convert", "unknown format '%s' (valid: pprof, jeprof, "
						    "gperf, collapsed, speedscope, svg)", optarg);
			break;
		case OPT_SAMPLE_INDEX:
			rc = prof_type_parse(optarg);
			if (rc < 0)
				return hs_usage_err("convert", "unknown sample index '%s' (valid: inuse_space, "
						    "inuse_objects, alloc_space, alloc_objects)", optarg);
			type = rc;
			break;
		default:
			return cmd_report_bad_option("convert", opt, argv);
		}
	}
	if (argc - optind != 1)
		return hs_usage_err("convert", argc - optind ? "too many operands" : "no profile file given");
	if (!out)
		return hs_usage_err("convert", "no output file given (-o OUT)");
	if (f == FMT_UNKNOWN)
		f = fmt_from_filename(out);
	if (f == FMT_UNKNOWN)
		f = FMT_PPROF;

	struct profile *p = cmd_report_load(argv[optind]);
	if (!p)
		return HS_FAIL;
	if (type != PT_INUSE_SPACE && type != PT_INUSE_OBJECTS && !p->has_alloc) {
		hs_err("no %s values in '%s' (it has inuse_space and inuse_objects only)",
		       prof_type_name(type), argv[optind]);
		prof_free(p);
		return HS_FAIL;
	}
	/* Tell pprof which frames are the allocator's, so `go tool pprof`
	 * on the output drops what heapsnap's reports drop. */
	if (!p->drop_frames || !*p->drop_frames) {
		const char *re = rep_drop_frames_regex();
		if (re && !(p->drop_frames = prof_intern(p, re))) {
			hs_err("out of memory");
			prof_free(p);
			return HS_FAIL;
		}
	}
	rc = fmt_write_file(p, out, f, type, err);
	if (rc) {
		hs_err("cannot write '%s': %s", out, err[0] ? err : strerror(-rc));
		prof_free(p);
		return HS_FAIL;
	}
	hs_debug("wrote '%s' (%s, %zu samples)", out, fmt_name(f), p->nsamples);
	if (opt_json) {
		struct summary s = { argv[optind], out, f, p };
		rc = cmd_report_emit(fill_summary, &s);
		if (rc) {
			hs_err("cannot write the summary: %s", strerror(-rc));
			prof_free(p);
			return HS_FAIL;
		}
	}
	prof_free(p);
	return HS_OK;
}
