/* sh_leaky.c - a target for the shell tests: holds a known heap, leaks 4 MiB more in leak_on_signal() each SIGUSR1, prints "grew N" after each. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (64 << 10)
#define CHUNKS 64

static volatile sig_atomic_t grow;
static void *volatile sink;

static void on_usr1(int sig)
{
	(void)sig;
	grow = 1;
}

__attribute__((noinline)) static void *baseline_keeper(size_t n)
{
	void *p = malloc(n);
	memset(p, 1, n);
	return p;
}

/* Each call leaks CHUNKS * CHUNK bytes, kept reachable in a list. */
__attribute__((noinline)) static void leak_on_signal(void)
{
	static void **held;
	static size_t nheld;

	held = realloc(held, (nheld + CHUNKS) * sizeof(*held));
	for (int i = 0; i < CHUNKS; i++) {
		held[nheld] = malloc(CHUNK);
		memset(held[nheld], 2, CHUNK);
		nheld++;
	}
}

int main(void)
{
	int grown = 0;

	signal(SIGUSR1, on_usr1);
	for (int i = 0; i < 16; i++)
		sink = baseline_keeper(256 << 10);
	printf("ready %d\n", getpid());
	fflush(stdout);
	for (;;) {
		/* churn: allocations come and go, so the hooks stay busy */
		free(malloc(128));
		if (grow) {
			grow = 0;
			leak_on_signal();
			printf("grew %d\n", ++grown);
			fflush(stdout);
		}
		usleep(1000);
	}
}
