/* inj_basic.c - a plain target for tests/inject/basic.sh: prints "ready", then reads stdin line by
 * line (echoing "got N bytes") while a second thread sleeps in nanosleep.  Exits 0 at EOF or SIGTERM,
 * 1 if a read or a sleep fails (an injection must never cause EINTR here: SA_RESTART handler). */
#include <errno.h>
#include <pthread.h>
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

static void *sleeper(void *arg)
{
	while (!stop) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		if (nanosleep(&ts, NULL) < 0 && errno != EINTR) {
			printf("FAIL: nanosleep: %s\n", strerror(errno));
			_exit(1);
		}
	}
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	pthread_t t;
	char buf[4096];

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pthread_create(&t, NULL, sleeper, NULL))
		return 1;
	printf("pid %d\nready\n", getpid());
	for (;;) {
		ssize_t n = read(0, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR && stop)
				break;
			printf("FAIL: read: %s\n", strerror(errno));
			return 1;
		}
		if (n == 0 || stop)
			break;
		printf("got %zd bytes\n", n);
	}
	stop = 1;
	pthread_join(t, NULL);
	printf("bye\n");
	return 0;
}
