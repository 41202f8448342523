/* inj_sleep.c - single thread in one nanosleep(SECS): it must return 0 after
 * SECS +/- 0.2 s even when the thread is stopped or hijacked meanwhile.
 * Usage: inj_sleep [SECS] [--handler]  (--handler installs a SIGUSR1 handler,
 * which makes a SIGUSR1 end the sleep early: the target's self-check). */
#include "inj_common.h"

static volatile sig_atomic_t usr1_count;

static void on_usr1(int sig)
{
	usr1_count++;
}

int main(int argc, char **argv)
{
	long secs = 5;
	struct timespec ts;
	uint64_t t0, t1;
	double el;
	int i, r, err;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--handler") == 0) {
			struct sigaction sa;

			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = on_usr1;
			sa.sa_flags = SA_RESTART;
			sigemptyset(&sa.sa_mask);
			sigaction(SIGUSR1, &sa, NULL);
		} else if ((secs = strtol(argv[i], NULL, 10)) <= 0) {
			fprintf(stderr, "usage: inj_sleep [SECS] [--handler]\n");
			return 64;
		}
	}
	inj_init();
	printf("inj_sleep: main thread in nanosleep(%ld s)\n", secs);
	inj_ready();
	ts.tv_sec = secs;
	ts.tv_nsec = 0;
	t0 = inj_mono_ns();
	r = nanosleep(&ts, NULL);
	err = errno;
	t1 = inj_mono_ns();
	inj_progress_add(1);
	el = (t1 - t0) / 1e9;
	if (r < 0)
		inj_fail("nanosleep returned %s (errno %d) after %.3f s, expected 0 after %ld s "
			 "(%d SIGUSR1 handled)", strerrorname_np(err) ? strerrorname_np(err) : "an error",
			 err, el, secs, (int)usr1_count);
	if (el < secs - 0.2 || el > secs + 0.2)
		inj_fail("slept %.3f s, expected %ld +/- 0.2", el, secs);
	printf("sleep ok: slept %.3f s, expected %ld\n", el, secs);
	return 0;
}
