/* inj_signals.c - a signal storm and synchronous fault handlers in use.
 * - a sender thread sends SIGUSR1 to the process and waits until a handler
 *   has counted it before sending the next (standard signals coalesce, so
 *   one in flight at a time makes "handled == sent" exact);
 * - a sender thread sigqueue()s SIGRTMIN+1 in bursts of 16 with a value each
 *   (real-time signals queue): count and sum of values must match;
 * - a fault thread writes to a PROT_NONE page (SIGSEGV handler unprotects it)
 *   and executes int3 (SIGTRAP handler counts), checking each handler ran;
 * - main and one more thread compute and receive the process signals.
 * A signal lost, a handler not run or reset, or SigCgt changed: "FAIL: ...".
 * Runs until SIGTERM. */
#include <pthread.h>
#include <sched.h>
#include "inj_common.h"

static _Atomic long usr1_sent, usr1_handled;
static _Atomic long rt_sent, rt_handled, rt_sum_sent, rt_sum_handled;
static _Atomic long segv_count, trap_count;
static char *guard;

static void on_usr1(int sig)
{
	usr1_handled++;
}

static void on_rt(int sig, siginfo_t *si, void *uc)
{
	rt_handled++;
	rt_sum_handled += si->si_value.sival_int;
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	if ((char *)si->si_addr < guard || (char *)si->si_addr >= guard + 4096) {
		inj_write_str("FAIL: SIGSEGV outside the guard page\n");
		_exit(1);
	}
	mprotect(guard, 4096, PROT_READ | PROT_WRITE);
	segv_count++;
}

static void on_trap(int sig)
{
	trap_count++;
}

static void block_storm(void)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigaddset(&s, SIGRTMIN + 1);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
}

/* Waits until *handled reaches want; a signal that takes 10 s is lost. */
static void await(_Atomic long *handled, long want, const char *what)
{
	uint64_t t0 = inj_mono_ns();
	unsigned spins = 0;

	while (*handled < want) {
		sched_yield();
		if ((++spins & 255) == 0 && inj_mono_ns() - t0 > 10000000000ull)
			inj_fail("%s #%ld lost: %ld handled after 10 s", what, want, (long)*handled);
	}
	if (*handled > want)
		inj_fail("%s: %ld handled, only %ld sent", what, (long)*handled, want);
}

static void *usr1_sender(void *arg)
{
	struct inj_gap *gap;

	block_storm();
	gap = inj_gap_new("SIGUSR1 sender");
	while (!inj_stop) {
		long n = ++usr1_sent;

		kill(getpid(), SIGUSR1);
		await(&usr1_handled, n, "SIGUSR1");
		inj_gap_tick(gap);
	}
	return NULL;
}

static void *rt_sender(void *arg)
{
	struct inj_gap *gap;
	long v = 0;
	int k;

	block_storm();
	gap = inj_gap_new("SIGRTMIN+1 sender");
	while (!inj_stop) {
		for (k = 0; k < 16; k++) {
			union sigval sv = { .sival_int = (int)(++v % 1000003) };

			while (sigqueue(getpid(), SIGRTMIN + 1, sv) < 0) {
				if (errno != EAGAIN)
					inj_fail("sigqueue: %s", strerror(errno));
				sched_yield();
			}
			rt_sent++;
			rt_sum_sent += sv.sival_int;
		}
		await(&rt_handled, rt_sent, "SIGRTMIN+1");
		inj_gap_tick(gap);
		inj_nap(1000000);
	}
	return NULL;
}

static void *faulter(void *arg)
{
	struct sigaction cur;
	struct inj_gap *gap;

	block_storm();
	gap = inj_gap_new("SIGSEGV/SIGTRAP faulter");
	while (!inj_stop) {
		long before;

		if (mprotect(guard, 4096, PROT_NONE) < 0)
			inj_fail("mprotect: %s", strerror(errno));
		before = segv_count;
		*(volatile char *)guard = 1;
		if (segv_count != before + 1)
			inj_fail("SIGSEGV handler did not run (count %ld, expected %ld)", (long)segv_count, before + 1);
		before = trap_count;
		asm volatile("int3");
		if (trap_count != before + 1)
			inj_fail("SIGTRAP handler did not run (count %ld, expected %ld)", (long)trap_count, before + 1);
		sigaction(SIGSEGV, NULL, &cur);
		if (cur.sa_sigaction != on_segv)
			inj_fail("SIGSEGV handler replaced");
		sigaction(SIGTRAP, NULL, &cur);
		if (cur.sa_handler != on_trap)
			inj_fail("SIGTRAP handler replaced");
		inj_gap_tick(gap);
		inj_nap(1000000);
	}
	return NULL;
}

static void *receiver(void *arg)
{
	struct inj_gap *gap;
	volatile uint64_t x = 0;
	int i;

	gap = inj_gap_new("compute, receives signals");
	while (!inj_stop) {
		for (i = 0; i < 10000; i++)
			x += i;
		inj_gap_tick(gap);
		inj_progress_add(1);
	}
	return NULL;
}

static void sigcgt(char *out, size_t len)
{
	char buf[4096], *p;
	ssize_t n;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	p = strstr(buf, "SigCgt:");
	snprintf(out, len, "%.*s", p ? 24 : 1, p ? p : "?");
}

int main(void)
{
	char cgt0[32], cgt1[32];
	struct sigaction sa;
	pthread_t th[4];
	int i;

	inj_init();
	inj_on_term(SA_RESTART);
	guard = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (guard == MAP_FAILED)
		inj_fail("mmap: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_trap;
	sigaction(SIGTRAP, &sa, NULL);
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	sa.sa_sigaction = on_rt;
	sigaction(SIGRTMIN + 1, &sa, NULL);
	sa.sa_sigaction = on_segv;
	sigaction(SIGSEGV, &sa, NULL);

	if (pthread_create(&th[0], NULL, usr1_sender, NULL) ||
	    pthread_create(&th[1], NULL, rt_sender, NULL) ||
	    pthread_create(&th[2], NULL, faulter, NULL) ||
	    pthread_create(&th[3], NULL, receiver, NULL))
		inj_fail("pthread_create failed");
	/* After pthread_create: the first one installs glibc's SIGSETXID handler. */
	sigcgt(cgt0, sizeof(cgt0));
	printf("inj_signals: SIGUSR1 storm (one in flight, acknowledged), SIGRTMIN+1 bursts of 16, "
	       "SIGSEGV and SIGTRAP handlers used every ms, 2 receiving compute threads\n");
	inj_ready();
	receiver(NULL);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	/* Anything still pending is delivered by now or is lost. */
	await(&usr1_handled, usr1_sent, "SIGUSR1");
	await(&rt_handled, rt_sent, "SIGRTMIN+1");
	if (rt_sum_handled != rt_sum_sent)
		inj_fail("SIGRTMIN+1 values: sum handled %ld, sum sent %ld", (long)rt_sum_handled, (long)rt_sum_sent);
	sigcgt(cgt1, sizeof(cgt1));
	if (strcmp(cgt0, cgt1) != 0)
		inj_fail("caught signals changed: '%s' became '%s'", cgt0, cgt1);
	inj_gap_report();
	printf("signals ok: SIGUSR1 %ld sent, %ld handled; SIGRTMIN+1 %ld sent, %ld handled; "
	       "SIGSEGV %ld, SIGTRAP %ld handled\n", (long)usr1_sent, (long)usr1_handled,
	       (long)rt_sent, (long)rt_handled, (long)segv_count, (long)trap_count);
	return 0;
}
