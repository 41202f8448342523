/* probe.h - stall probes shared by the bench workloads: per-thread max loop gap, phase reports as JSON lines. */
#ifndef BENCH_PROBE_H
#define BENCH_PROBE_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PROBE_MAX_THREADS 16
#define PROBE_SLEEP_NS 1000000 /* the main thread's probe loop period */

struct probe_thread {
	uint64_t ops;
	uint64_t max_gap_ns;
	int tid;
	clockid_t cpu_clock;      /* the thread's CPU-time clock */
	int have_clock;
	char pad[64];
};

static struct probe_thread probe_t[PROBE_MAX_THREADS];
static int probe_nthreads;
static volatile sig_atomic_t probe_phase_req, probe_stop_req;
static int probe_stop; /* __atomic_* builtins: C and C++ alike */

static inline uint64_t probe_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Called by a worker every few operations: records the gap since *last. */
static inline void probe_tick(struct probe_thread *t, uint64_t *last, uint64_t nops)
{
	uint64_t now = probe_now(), gap = now - *last;
	*last = now;
	if (gap > __atomic_load_n(&t->max_gap_ns, __ATOMIC_RELAXED))
		__atomic_store_n(&t->max_gap_ns, gap, __ATOMIC_RELAXED);
	__atomic_store_n(&t->ops, nops, __ATOMIC_RELAXED);
}

/* Called by each worker first: its tid and CPU clock for the reports. */
static inline int probe_gettid(void)
{
	return (int)syscall(SYS_gettid);
}

static inline void probe_thread_init(struct probe_thread *t)
{
	t->tid = probe_gettid();
	t->have_clock = pthread_getcpuclockid(pthread_self(), &t->cpu_clock) == 0;
}

static inline double probe_cpu(const struct probe_thread *t)
{
	struct timespec ts;

	if (!t->have_clock || clock_gettime(t->cpu_clock, &ts))
		return 0;
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline int probe_stopping(void)
{
	return __atomic_load_n(&probe_stop, __ATOMIC_RELAXED);
}

static inline void probe_on_signal(int sig)
{
	if (sig == SIGUSR1)
		probe_phase_req = 1;
	else
		probe_stop_req = 1;
}

static inline void probe_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = probe_on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/*
 * The main thread's loop: sleeps PROBE_SLEEP_NS at a time and records its
 * own longest gap; on SIGUSR1 prints one JSON line for the phase since the
 * last one ({"phase":...}), on SIGUSR2/SIGTERM or after max_secs stops the
 * workers (returns; the caller joins them and calls probe_report(-1...)).
 */
static uint64_t probe_phase_t0, probe_main_max, probe_ops0[PROBE_MAX_THREADS];
static double probe_cpu0[PROBE_MAX_THREADS];
static int probe_phase_no;

static inline void probe_report(const char *name)
{
	uint64_t now = probe_now(), total = 0, ops[PROBE_MAX_THREADS];
	double secs = (now - probe_phase_t0) / 1e9, cpu[PROBE_MAX_THREADS], cpu_total = 0;

	for (int i = 0; i < probe_nthreads; i++) {
		ops[i] = __atomic_load_n(&probe_t[i].ops, __ATOMIC_RELAXED);
		total += ops[i] - probe_ops0[i];
		cpu[i] = probe_cpu(&probe_t[i]);
		cpu_total += cpu[i] - probe_cpu0[i];
		probe_cpu0[i] = cpu[i];
	}
	printf("{\"phase\":%d,\"name\":\"%s\",\"pid\":%d,\"secs\":%.6f,\"ops\":%llu,\"ops_per_s\":%.1f,"
	       "\"worker_cpu_s\":%.6f,\"ops_per_cpu_s\":%.1f,\"main_tid\":%d,\"main_max_gap_us\":%.1f,\"threads\":[",
	       probe_phase_no++, name, (int)getpid(), secs, (unsigned long long)total, total / secs,
	       cpu_total, cpu_total > 0 ? total / cpu_total : 0.0,
	       (int)getpid(), probe_main_max / 1e3);
	for (int i = 0; i < probe_nthreads; i++) {
		uint64_t g = __atomic_exchange_n(&probe_t[i].max_gap_ns, 0, __ATOMIC_RELAXED);
		printf("%s{\"tid\":%d,\"ops\":%llu,\"max_gap_us\":%.1f}", i ? "," : "", probe_t[i].tid,
		       (unsigned long long)(ops[i] - probe_ops0[i]), g / 1e3);
		probe_ops0[i] = ops[i];
	}
	printf("]}\n");
	fflush(stdout);
	probe_main_max = 0;
	probe_phase_t0 = probe_now();
}

static inline void probe_main_loop(double max_secs)
{
	uint64_t t_end = probe_now() + (uint64_t)(max_secs * 1e9), last = probe_now();
	struct timespec ts = { 0, PROBE_SLEEP_NS };

	probe_phase_t0 = last;
	while (!probe_stop_req && probe_now() < t_end) {
		nanosleep(&ts, NULL);
		uint64_t now = probe_now();
		if (now - last > probe_main_max)
			probe_main_max = now - last;
		last = now;
		if (probe_phase_req) {
			probe_phase_req = 0;
			probe_report("phase");
			last = probe_now();
		}
	}
	__atomic_store_n(&probe_stop, 1, __ATOMIC_RELEASE);
}

/*
 * The whole life of a signal-driven workload: starts n workers (each gets
 * its struct probe_thread), says {"ready":PID}, runs the main probe loop,
 * prints the final line and joins them.  Returns main's exit code.
 */
static inline int probe_run(int n, void *(*worker)(void *), double max_secs)
{
	pthread_t th[PROBE_MAX_THREADS];

	probe_signals();
	probe_nthreads = n;
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, &probe_t[i]);
	printf("{\"ready\":%d}\n", (int)getpid());
	fflush(stdout);
	probe_main_loop(max_secs);
	probe_report("end");
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}

#endif
