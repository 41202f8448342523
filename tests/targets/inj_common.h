/* inj_common.h - shared by the injector robustness targets (tests/targets/inj_*.c):
 * failure reports, the progress counter, per-thread stall log, SIGTERM flag. */
#ifndef INJ_COMMON_H
#define INJ_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Set by the SIGTERM/SIGINT handler of inj_on_term(). */
static volatile sig_atomic_t inj_stop;

/* The progress counter lives in a shared mapping of the file named by
 * $INJ_PROGRESS (its first 8 bytes, native endian) so the test reads it with od
 * without talking to the target; without the variable it is private. */
static _Atomic uint64_t inj_progress_private;
static _Atomic uint64_t *inj_progress = &inj_progress_private;

static inline uint64_t inj_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* Writes "FAIL: <msg>" to stdout with one write(2) (no stdio lock, no
 * malloc: usable from any thread, also while the allocator is wedged) and
 * ends the process with status 1. */
static void __attribute__((noreturn, format(printf, 1, 2), unused)) inj_fail(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	memcpy(buf, "FAIL: ", 6);
	va_start(ap, fmt);
	n = vsnprintf(buf + 6, sizeof(buf) - 7, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	n += 6;
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	buf[n++] = '\n';
	if (write(1, buf, n) < 0)
		_exit(1);
	_exit(1);
}

/* Writes a string with one write(2): usable from signal handlers. */
static inline void inj_write_str(const char *s)
{
	if (write(1, s, strlen(s)) < 0)
		_exit(1);
}

static void __attribute__((unused)) inj_progress_init(void)
{
	const char *path = getenv("INJ_PROGRESS");
	void *p;
	int fd;

	if (!path || !*path)
		return;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		inj_fail("cannot create progress file %s: %s", path, strerror(errno));
	if (ftruncate(fd, 4096) < 0)
		inj_fail("cannot size progress file %s: %s", path, strerror(errno));
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		inj_fail("cannot map progress file %s: %s", path, strerror(errno));
	/* Closed at once: the fd count must not include our own bookkeeping. */
	close(fd);
	inj_progress = p;
}

static inline void inj_progress_add(uint64_t n)
{
	atomic_fetch_add_explicit(inj_progress, n, memory_order_relaxed);
}

/* Stall log.  Each measured thread ticks once per loop iteration; a gap
 * between two ticks longer than $INJ_GAP_US (default 200) is logged with
 * its real-time start so the test can match it with the time window of an
 * injection.  At exit the log goes to $INJ_GAPLOG as "tid start_us gap_us". */
struct inj_gap {
	uint64_t last_ns;
	uint64_t max_ns;
	uint64_t ticks;
	int tid;
	const char *role;
};

struct inj_gap_rec {
	int tid;
	uint64_t start_us;
	uint64_t gap_us;
};

#define INJ_GAP_RING (1u << 18)
static struct inj_gap_rec inj_gap_log[INJ_GAP_RING];
static _Atomic unsigned inj_gap_n;
static uint64_t inj_gap_min_ns = 200000;
static int64_t inj_real_minus_mono_ns;

/* Trackers live here, not on thread stacks: the exit report reads them
 * after their threads are gone. */
#define INJ_MAX_GAPS 512
static struct inj_gap inj_gaps[INJ_MAX_GAPS];
static struct inj_gap inj_gap_spare;
static _Atomic int inj_ngaps;

static void __attribute__((unused)) inj_gap_init(void)
{
	const char *s = getenv("INJ_GAP_US");
	struct timespec r, m;

	if (s && *s)
		inj_gap_min_ns = strtoull(s, NULL, 10) * 1000;
	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	inj_real_minus_mono_ns = ((int64_t)r.tv_sec - m.tv_sec) * 1000000000 + (r.tv_nsec - m.tv_nsec);
}

/* Returns a tracker for the calling thread, kept for the exit summary
 * (past INJ_MAX_GAPS threads, a shared spare that is not reported). */
static __attribute__((unused)) struct inj_gap *inj_gap_new(const char *role)
{
	int i = atomic_fetch_add(&inj_ngaps, 1);
	struct inj_gap *g = i < INJ_MAX_GAPS ? &inj_gaps[i] : &inj_gap_spare;

	g->tid = gettid();
	g->role = role;
	return g;
}

static inline void inj_gap_tick(struct inj_gap *g)
{
	uint64_t now = inj_mono_ns(), d;
	unsigned i;

	if (g->last_ns) {
		d = now - g->last_ns;
		if (d > g->max_ns)
			g->max_ns = d;
		if (d >= inj_gap_min_ns) {
			i = atomic_fetch_add_explicit(&inj_gap_n, 1, memory_order_relaxed);
			if (i < INJ_GAP_RING) {
				inj_gap_log[i].tid = g->tid;
				inj_gap_log[i].start_us = (g->last_ns + inj_real_minus_mono_ns) / 1000;
				inj_gap_log[i].gap_us = d / 1000;
			}
		}
	}
	g->last_ns = now;
	g->ticks++;
}

/* Prints one "stall: tid N (role): max X us over K iterations" line per
 * tracker and writes $INJ_GAPLOG.  Call after the measured threads ended. */
static void __attribute__((unused)) inj_gap_report(void)
{
	const char *path = getenv("INJ_GAPLOG");
	unsigned n = atomic_load(&inj_gap_n), i;
	int k, ng = atomic_load(&inj_ngaps);
	FILE *f;

	if (ng > INJ_MAX_GAPS)
		ng = INJ_MAX_GAPS;
	for (k = 0; k < ng; k++)
		printf("stall: tid %d (%s): max %llu us over %llu iterations\n",
		       inj_gaps[k].tid, inj_gaps[k].role,
		       (unsigned long long)(inj_gaps[k].max_ns / 1000),
		       (unsigned long long)inj_gaps[k].ticks);
	if (n > INJ_GAP_RING) {
		printf("stall: log full, %u gaps not recorded\n", n - INJ_GAP_RING);
		n = INJ_GAP_RING;
	}
	if (!path || !*path)
		return;
	f = fopen(path, "w");
	if (!f) {
		printf("stall: cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	for (i = 0; i < n; i++)
		fprintf(f, "%d %llu %llu\n", inj_gap_log[i].tid,
			(unsigned long long)inj_gap_log[i].start_us,
			(unsigned long long)inj_gap_log[i].gap_us);
	fclose(f);
}

static void __attribute__((unused)) inj_term_handler(int sig)
{
	inj_stop = 1;
}

/* SIGTERM and SIGINT set inj_stop; flags are the sigaction flags (0 makes
 * blocking calls return EINTR so a blocked thread notices the request). */
static void __attribute__((unused)) inj_on_term(int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = inj_term_handler;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

/* Common start: line-buffered stdout (the test reads it while we run),
 * progress file, stall log. */
static void __attribute__((unused)) inj_init(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	inj_progress_init();
	inj_gap_init();
}

static void __attribute__((unused)) inj_ready(void)
{
	printf("pid %d\nready\n", getpid());
	fflush(stdout);
}

/* Sleeps ns nanoseconds, resuming after signals (the time still counts). */
static void __attribute__((unused)) inj_nap(uint64_t ns)
{
	struct timespec ts = { ns / 1000000000u, ns % 1000000000u };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !inj_stop)
		;
}

#endif
