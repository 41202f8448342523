/* pl_dynlib.c - a library the pl_known targets dlopen after the payload started: its allocations must be sampled too. */
#include <stdlib.h>
#include <string.h>

extern char __start_pl_site_dyn[], __stop_pl_site_dyn[];

__attribute__((noinline, noclone, used, section("pl_site_dyn")))
void pl_dyn_alloc(int n, void **out)
{
	for (int i = 0; i < n; i++) {
		out[i] = malloc(700);
		memset(out[i], 9, 16);
	}
}

void pl_dyn_range(const void **lo, const void **hi)
{
	*lo = __start_pl_site_dyn;
	*hi = __stop_pl_site_dyn;
}
