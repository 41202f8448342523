/* inj_cond.c - a pthread_cond_wait waiter and its signaller (every signal
 * acknowledged, so none may be lost), two threads contending for a mutex,
 * and a main thread in sigsuspend() with a temporary signal mask.
 * Invariants: every signal acknowledged, the mutex-protected counter equals
 * the sum of the increments, sigsuspend returns only for SIGTERM and the
 * mask afterwards is the thread's own.  Runs until SIGTERM. */
#include <pthread.h>
#include "inj_common.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c_go = PTHREAD_COND_INITIALIZER;
static pthread_cond_t c_ack;
static long seq, ack, spurious;

static pthread_mutex_t m2 = PTHREAD_MUTEX_INITIALIZER;
static long shared_count;
static long mine[2];

static void *waiter(void *arg)
{
	struct inj_gap *gap;

	gap = inj_gap_new("cond waiter");
	pthread_mutex_lock(&m);
	while (!inj_stop) {
		long seen = ack;

		while (seq == seen && !inj_stop) {
			pthread_cond_wait(&c_go, &m);
			if (seq == seen && !inj_stop)
				spurious++;
		}
		if (inj_stop)
			break;
		if (seq != seen + 1)
			inj_fail("waiter saw seq %ld after %ld", seq, seen);
		ack = seq;
		pthread_cond_signal(&c_ack);
		inj_gap_tick(gap);
		inj_progress_add(1);
	}
	pthread_mutex_unlock(&m);
	return NULL;
}

static void *signaller(void *arg)
{
	struct inj_gap *gap;
	struct timespec dl;

	gap = inj_gap_new("cond signaller");
	pthread_mutex_lock(&m);
	while (!inj_stop) {
		seq++;
		pthread_cond_signal(&c_go);
		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_sec += 10;
		while (ack != seq && !inj_stop)
			if (pthread_cond_timedwait(&c_ack, &m, &dl) == ETIMEDOUT && ack != seq)
				inj_fail("waiter did not acknowledge signal %ld within 10 s", seq);
		pthread_mutex_unlock(&m);
		inj_gap_tick(gap);
		inj_nap(2000000);
		pthread_mutex_lock(&m);
	}
	pthread_mutex_unlock(&m);
	return NULL;
}

static void *contender(void *arg)
{
	long i = (long)arg;
	struct inj_gap *gap;

	gap = inj_gap_new("mutex contender");
	while (!inj_stop) {
		pthread_mutex_lock(&m2);
		shared_count++;
		pthread_mutex_unlock(&m2);
		if ((++mine[i] & 1023) == 0)
			inj_progress_add(1);
		inj_gap_tick(gap);
	}
	return NULL;
}

int main(void)
{
	sigset_t all, own, temp, now;
	pthread_condattr_t ca;
	pthread_t th[4];
	int i;

	inj_init();
	inj_on_term(0);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c_ack, &ca);
	/* Workers block SIGTERM so that it reaches main's sigsuspend. */
	sigemptyset(&all);
	sigaddset(&all, SIGTERM);
	sigaddset(&all, SIGINT);
	sigaddset(&all, SIGUSR2);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	if (pthread_create(&th[0], NULL, waiter, NULL) ||
	    pthread_create(&th[1], NULL, signaller, NULL) ||
	    pthread_create(&th[2], NULL, contender, (void *)0L) ||
	    pthread_create(&th[3], NULL, contender, (void *)1L))
		inj_fail("pthread_create failed");
	/* Main's own mask blocks SIGUSR2; while in sigsuspend it is SIGWINCH. */
	sigemptyset(&own);
	sigaddset(&own, SIGUSR2);
	pthread_sigmask(SIG_SETMASK, &own, NULL);
	sigemptyset(&temp);
	sigaddset(&temp, SIGWINCH);
	printf("inj_cond: waiter, signaller, 2 mutex contenders; main in sigsuspend "
	       "(own mask SIGUSR2, temporary mask SIGWINCH)\n");
	inj_ready();

	while (!inj_stop) {
		sigsuspend(&temp);
		if (!inj_stop)
			inj_fail("sigsuspend returned without a signal handler having run");
	}
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	if (!sigismember(&now, SIGUSR2) || sigismember(&now, SIGWINCH))
		inj_fail("mask after sigsuspend is not the thread's own (SIGUSR2 %s, SIGWINCH %s)",
			 sigismember(&now, SIGUSR2) ? "blocked" : "unblocked",
			 sigismember(&now, SIGWINCH) ? "blocked" : "unblocked");
	pthread_mutex_lock(&m);
	pthread_cond_broadcast(&c_go);
	pthread_cond_broadcast(&c_ack);
	pthread_mutex_unlock(&m);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	if (shared_count != mine[0] + mine[1])
		inj_fail("mutex-protected counter %ld, increments %ld + %ld", shared_count, mine[0], mine[1]);
	if (ack != seq && ack != seq - 1)
		inj_fail("signals %ld, acknowledged %ld", seq, ack);
	inj_gap_report();
	printf("cond ok: %ld signals acknowledged, %ld spurious wakeups, mutex counter %ld = %ld + %ld\n",
	       ack, spurious, shared_count, mine[0], mine[1]);
	return 0;
}
