/* fuzz_sniff.c - libFuzzer harness of fmt_read_buf with format sniffing, the path `heapsnap top FILE` takes. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[FMT_ERRLEN] = "";
	struct profile *p = NULL;
	int rc = fmt_read_buf(FMT_UNKNOWN, data, size, &p, err);

	fuzz_check(rc, p, err);
	return 0;
}
