/* inj_static.c - linked statically (tests/inject/inject.mk): heapsnap inject must refuse it
 * without stopping it.  Prints "ready", then counts in a loop until SIGTERM; exits 0. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	stop = 1;
}

int main(void)
{
	struct sigaction sa;
	unsigned long n = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("pid %d\nready\n", getpid());
	while (!stop) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		n++;
	}
	printf("bye after %lu naps\n", n);
	return 0;
}
