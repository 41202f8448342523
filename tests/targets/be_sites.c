/* be_sites.c - known allocation sites before and after heapsnap attaches, for the native backends (jemalloc prof.*, gperftools heap profiler). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Live for good: site_early before "ready", site_late after SIGUSR1
 * ("late done").  Sizes are jemalloc size classes, so usable = requested; exact byte counts printed as "expect FUNC BYTES OBJECTS". */
#define N_EARLY 200
#define S_EARLY 4096
#define N_BIG 30
#define S_BIG 131072
#define N_LATE 300
#define S_LATE 3072

static void *keep_early[N_EARLY], *keep_big[N_BIG], *keep_late[N_LATE];
static volatile sig_atomic_t late;

__attribute__((noinline)) static void site_early(void)
{
	for (int i = 0; i < N_EARLY; i++) {
		keep_early[i] = malloc(S_EARLY);
		memset(keep_early[i], 1, S_EARLY);
	}
}

__attribute__((noinline)) static void site_big(void)
{
	for (int i = 0; i < N_BIG; i++) {
		keep_big[i] = malloc(S_BIG);
		memset(keep_big[i], 2, S_BIG);
	}
}

__attribute__((noinline)) static void site_late(void)
{
	for (int i = 0; i < N_LATE; i++) {
		keep_late[i] = malloc(S_LATE);
		memset(keep_late[i], 3, S_LATE);
	}
}

static void on_usr1(int sig)
{
	(void)sig;
	late = 1;
}

int main(void)
{
	signal(SIGUSR1, on_usr1);
	site_early();
	site_big();
	printf("expect site_early %d %d\nexpect site_big %d %d\n", N_EARLY * S_EARLY, N_EARLY,
	       N_BIG * S_BIG, N_BIG);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		pause();
		if (late == 1) {
			late = 2;
			site_late();
			printf("expect site_late %d %d\nlate done\n", N_LATE * S_LATE, N_LATE);
			fflush(stdout);
		}
	}
}
