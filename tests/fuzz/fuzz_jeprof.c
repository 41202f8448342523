/* fuzz_jeprof.c - libFuzzer harness of jeprof_read: any input must give a valid profile or a located error. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[FMT_ERRLEN] = "";
	struct profile *p = NULL;
	int rc = jeprof_read(data, size, &p, err);

	fuzz_check(rc, p, err);
	return 0;
}
