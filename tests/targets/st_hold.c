/* st_hold.c - holds a known number of live heap bytes (and frees a known part) for `heapsnap stats` and `trim`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* argv[1]: objects of 4000 bytes to allocate (touched); argv[2]: 1 to free
 * every other run of 64 of them again (256 KB holes in the middle of the
 * heap: free memory an allocator keeps until trimmed).  Prints
 * "ready live=BYTES" and sleeps until killed. */
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000;
	int holes = argc > 2 && atoi(argv[2]) == 1;
	long live = n;
	const size_t sz = 4000;
	char **p = malloc((size_t)n * sizeof(*p));

	if (!p)
		return 1;
	for (long i = 0; i < n; i++) {
		p[i] = malloc(sz);
		if (!p[i])
			return 1;
		memset(p[i], (int)(i & 0xff) | 1, sz);
	}
	/* The last run stays: the holes are not at the top of the heap. */
	for (long i = 0; holes && i < n - 64; i++)
		if ((i / 64) % 2) {
			free(p[i]);
			live--;
		}
	printf("ready live=%lu\n", (unsigned long)(live * sz));
	fflush(stdout);
	for (;;)
		pause();
}
