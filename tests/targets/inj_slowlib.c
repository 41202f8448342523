/* inj_slowlib.c - not a program: a library (inj.mk links it with -shared) whose
 * function sleeps inside the library, so that an unload which does not wait
 * for calls still running in it unmaps code a thread will return to
 * (tests/inject/unload-busy.sh). */
#include <errno.h>
#include <time.h>

/* Sleeps ms milliseconds in this library's own code, returns ms + 1. */
long hsp_test_slow(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	return ms + 1;
}
