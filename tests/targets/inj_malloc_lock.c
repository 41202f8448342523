/* inj_malloc_lock.c - a thread asleep inside glibc's allocator with the main
 * arena mutex held: malloc_stats() writes to stderr while holding each
 * arena's lock, and our stderr is a full pipe, so the "locker" thread blocks
 * in write(2) with the lock taken until SIGTERM drains the pipe.  The main
 * thread waits in pthread_join() on it.  Neither is a safe point; with
 * --no-safe-thread there is no other thread, else one "safe" thread sleeps
 * in nanosleep() from plain application code.  Exit 0 if the locker stayed
 * blocked until SIGTERM and then finished.
 * Usage: inj_malloc_lock [--no-safe-thread] */
#include <malloc.h>
#include <pthread.h>
#include "inj_common.h"

static int drain_fd;
static _Atomic int locker_tid, locker_done, safe_tid;

/* Only write(2) and snprintf once the lock is held: stdio buffers and
 * anything that allocates from the main arena would block forever. */
static void __attribute__((format(printf, 1, 2))) say(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0 && write(1, buf, n < (int)sizeof(buf) ? n : (int)sizeof(buf) - 1) < 0)
		_exit(1);
}

static void on_term(int sig)
{
	char buf[4096];

	inj_stop = 1;
	while (read(drain_fd, buf, sizeof(buf)) > 0)
		;
}

static void *locker(void *arg)
{
	locker_tid = gettid();
	malloc_stats();
	locker_done = 1;
	return NULL;
}

static void *safe_thread(void *arg)
{
	struct inj_gap *gap;

	gap = inj_gap_new("safe sleeper");
	safe_tid = gettid();
	while (!inj_stop) {
		inj_nap(10000000);
		inj_gap_tick(gap);
		inj_progress_add(1);
	}
	return NULL;
}

/* 1 when /proc/self/task/TID/syscall says the thread waits in write(2). */
static int blocked_in_write(int tid)
{
	char path[64], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 2 && buf[0] == '1' && buf[1] == ' ';
}

int main(int argc, char **argv)
{
	int safe = !(argc == 2 && strcmp(argv[1], "--no-safe-thread") == 0);
	pthread_t lt, st;
	struct sigaction sa;
	char junk[4096];
	int p[2], i;

	if (argc > 2 || (argc == 2 && safe)) {
		fprintf(stderr, "usage: inj_malloc_lock [--no-safe-thread]\n");
		return 64;
	}
	inj_init();
	printf("inj_malloc_lock: locker blocked in write(2) inside malloc_stats() holding the "
	       "main arena lock; main in pthread_join; %s\n",
	       safe ? "one safe thread in nanosleep" : "no other thread");
	fflush(stdout);

	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		inj_fail("pipe: %s", strerror(errno));
	fcntl(p[1], F_SETPIPE_SZ, 4096);
	memset(junk, '.', sizeof(junk));
	while (write(p[1], junk, sizeof(junk)) > 0 || write(p[1], junk, 1) > 0)
		;
	fcntl(p[1], F_SETFL, 0);
	if (dup2(p[1], 2) < 0)
		inj_fail("dup2: %s", strerror(errno));
	close(p[1]);
	drain_fd = p[0];

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	if (safe && pthread_create(&st, NULL, safe_thread, NULL))
		inj_fail("pthread_create failed");
	if (pthread_create(&lt, NULL, locker, NULL))
		inj_fail("pthread_create failed");
	for (i = 0; i < 500 && !(locker_tid && blocked_in_write(locker_tid) && (safe_tid || !safe)); i++)
		inj_nap(10000000);
	if (i == 500)
		inj_fail("locker thread did not block in write(2) within 5 s");
	say("main tid %d\nlocker tid %d\n", getpid(), locker_tid);
	if (safe)
		say("safe tid %d\n", safe_tid);
	say("pid %d\nready\n", getpid());

	pthread_join(lt, NULL);
	if (!inj_stop)
		inj_fail("malloc_stats returned before SIGTERM: the locker's write(2) was interrupted");
	if (!locker_done)
		inj_fail("locker thread ended without finishing malloc_stats");
	if (safe)
		pthread_join(st, NULL);
	inj_gap_report();
	printf("malloc_lock ok: the locker held the main arena lock in write(2) until SIGTERM\n");
	return 0;
}
