/* fmt_stubs.c - placeholders: each owner deletes its functions from here
 * when its fmt_<name>.c lands; delete the file when empty. */
#include <errno.h>
#include <stdio.h>
#include "format.h"

#define NOTYET(what) do { snprintf(err, FMT_ERRLEN, "%s not implemented yet", what); return -ENOSYS; } while (0)

int pprof_read(const void *buf, size_t len, struct profile **out, char err[FMT_ERRLEN]) { NOTYET("pprof reader"); }
int pprof_write(const struct profile *p, FILE *out, char err[FMT_ERRLEN]) { NOTYET("pprof writer"); }
int jeprof_read(const void *buf, size_t len, struct profile **out, char err[FMT_ERRLEN]) { NOTYET("jeprof reader"); }
int jeprof_write(const struct profile *p, FILE *out, char err[FMT_ERRLEN]) { NOTYET("jeprof writer"); }
int gperf_read(const void *buf, size_t len, struct profile **out, char err[FMT_ERRLEN]) { NOTYET("gperf reader"); }
int gperf_write(const struct profile *p, FILE *out, char err[FMT_ERRLEN]) { NOTYET("gperf writer"); }
int collapsed_write(const struct profile *p, FILE *out, enum prof_type type, char err[FMT_ERRLEN]) { NOTYET("collapsed writer"); }
int speedscope_write(const struct profile *p, FILE *out, enum prof_type type, char err[FMT_ERRLEN]) { NOTYET("speedscope writer"); }
int svg_write(const struct profile *p, FILE *out, enum prof_type type, char err[FMT_ERRLEN]) { NOTYET("svg writer"); }
