/* fuzz_common.c - the checks every reader harness runs after the reader (see fuzz_common.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

/* A failed check is a finding: crash so libFuzzer saves the input. */
#define ASSERT(c) do { if (!(c)) { fprintf(stderr, "fuzz check failed: %s\n", #c); abort(); } } while (0)

static void write_and_reread(const struct profile *p, enum fmt f, enum prof_type t)
{
	char err[FMT_ERRLEN] = "", err2[FMT_ERRLEN] = "";
	struct profile *q = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	int rc;

	ASSERT(out);
	rc = fmt_write(p, out, f, t, err);
	fclose(out);
	/* Writers may refuse (negative values, sizes) but must say why. */
	ASSERT(rc == 0 || (rc < 0 && err[0]));
	if (rc == 0 && fmt_can_read(f)) {
		rc = fmt_read_buf(f, buf, len, &q, err2);
		if (rc != 0)
			fprintf(stderr, "cannot read back own %s output: %s\n", fmt_name(f), err2);
		ASSERT(rc == 0);
		ASSERT(prof_validate(q) == 0);
		prof_free(q);
	}
	free(buf);
}

void fuzz_check(int rc, struct profile *p, const char *err)
{
	if (rc != 0) {
		ASSERT(rc < 0);
		ASSERT(p == NULL);
		ASSERT(err[0] != '\0');
		ASSERT(memchr(err, '\0', FMT_ERRLEN) != NULL);
		return;
	}
	ASSERT(p != NULL);
	ASSERT(prof_validate(p) == 0);
	for (enum fmt f = 0; f < FMT_NFORMATS; f++) {
		write_and_reread(p, f, PT_INUSE_SPACE);
		if (f >= FMT_COLLAPSED)
			write_and_reread(p, f, p->has_alloc ? PT_ALLOC_OBJECTS : PT_INUSE_OBJECTS);
	}
	prof_free(p);
}
