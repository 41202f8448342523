/* inj_exit.c - a target that changes under the injector's feet.
 * Usage: inj_exit exit|exec DELAY_US   after SIGUSR2 + DELAY_US: exit(0), or
 *                                      execve("/bin/sleep 1") (status 0 expected)
 *        inj_exit fork                 a thread forks children that _exit(7)
 *                                      at once; each must be reaped with 7
 * Besides main (waiting in sigwaitinfo) a thread computes and one sleeps in
 * nanosleep, so the injector has several threads to pick from. */
#include <pthread.h>
#include <sys/wait.h>
#include "inj_common.h"

static long forks;

static void *spinner(void *arg)
{
	struct inj_gap *gap;
	volatile uint64_t x = 0;
	int i;

	gap = inj_gap_new("compute");
	for (;;) {
		for (i = 0; i < 10000; i++)
			x += i;
		inj_gap_tick(gap);
		inj_progress_add(1);
	}
	return NULL;
}

static void *sleeper(void *arg)
{
	for (;;)
		inj_nap(5000000);
	return NULL;
}

static void *forker(void *arg)
{
	struct inj_gap *gap;

	gap = inj_gap_new("forker");
	while (!inj_stop) {
		int st;
		pid_t c = fork();

		if (c < 0)
			inj_fail("fork: %s", strerror(errno));
		if (c == 0)
			_exit(7);
		if (waitpid(c, &st, 0) != c)
			inj_fail("waitpid %d: %s", c, strerror(errno));
		if (WIFSIGNALED(st))
			inj_fail("child %d killed by signal %d (%s)", c, WTERMSIG(st), strsignal(WTERMSIG(st)));
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 7)
			inj_fail("child %d: wait status 0x%x, expected exit 7", c, st);
		forks++;
		inj_gap_tick(gap);
		inj_nap(2000000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	pthread_t th;
	sigset_t s;
	long delay = 0;

	if (strcmp(mode, "fork") == 0 && argc == 2)
		;
	else if ((strcmp(mode, "exit") == 0 || strcmp(mode, "exec") == 0) && argc == 3)
		delay = atol(argv[2]);
	else {
		fprintf(stderr, "usage: inj_exit exit|exec DELAY_US | inj_exit fork\n");
		return 64;
	}
	inj_init();
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	if (pthread_create(&th, NULL, spinner, NULL) || pthread_create(&th, NULL, sleeper, NULL))
		inj_fail("pthread_create failed");

	if (strcmp(mode, "fork") == 0) {
		inj_on_term(SA_RESTART);
		if (pthread_create(&th, NULL, forker, NULL))
			inj_fail("pthread_create failed");
		printf("inj_exit: a thread forks children that exit 7 at once\n");
		inj_ready();
		while (!inj_stop)
			inj_nap(20000000);
		pthread_join(th, NULL);
		inj_gap_report();
		printf("fork ok: %ld children forked and reaped with status 7\n", forks);
		return 0;
	}
	printf("inj_exit: will %s %ld us after SIGUSR2\n",
	       strcmp(mode, "exit") == 0 ? "exit(0)" : "exec /bin/sleep 1", delay);
	inj_ready();
	while (sigwaitinfo(&s, NULL) < 0)
		;
	inj_nap(delay * 1000);
	if (strcmp(mode, "exit") == 0) {
		printf("exiting\n");
		exit(0);
	}
	printf("exec /bin/sleep 1\n");
	fflush(stdout);
	execl("/bin/sleep", "sleep", "1", (char *)NULL);
	inj_fail("exec /bin/sleep: %s", strerror(errno));
}
