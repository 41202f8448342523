/* inj_epoll.c - main thread in epoll_wait(-1) on a FIFO, a second thread in an
 * epoll_wait(100 ms) loop.  Every message written to the FIFO must arrive in
 * order, no timeout may end early; EINTR is counted, not failed: epoll_wait
 * returns EINTR after a ptrace stop, documented kernel behaviour.
 * Usage: inj_epoll FIFO; lines "msg N" (N = 1, 2, ...), "quit" ends it. */
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include "inj_common.h"

static int wake_fd;
static long eintr_main, eintr_timer, timeouts;

static void on_term(int sig)
{
	uint64_t one = 1;

	inj_stop = 1;
	if (write(wake_fd, &one, sizeof(one)) < 0)
		_exit(1);
}

static void *timer_thread(void *arg)
{
	struct epoll_event ev;
	struct inj_gap *gap;
	int ep, efd;

	gap = inj_gap_new("epoll_wait 100 ms");
	ep = epoll_create1(EPOLL_CLOEXEC);
	efd = eventfd(0, EFD_CLOEXEC);	/* never written: every wait times out */
	ev.events = EPOLLIN;
	ev.data.fd = efd;
	if (ep < 0 || efd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) < 0)
		inj_fail("timer thread setup: %s", strerror(errno));
	while (!inj_stop) {
		uint64_t t0 = inj_mono_ns(), ms;
		int r = epoll_wait(ep, &ev, 1, 100);

		ms = (inj_mono_ns() - t0) / 1000000;
		inj_gap_tick(gap);
		if (r < 0 && errno == EINTR) {
			eintr_timer++;
			continue;
		}
		if (r < 0)
			inj_fail("epoll_wait(100 ms): %s", strerror(errno));
		if (r > 0)
			inj_fail("epoll_wait(100 ms) reported an event on a silent eventfd");
		/* The kernel never ends a timeout early; allow clock rounding. */
		if (ms < 99)
			inj_fail("epoll_wait(100 ms) timed out after %llu ms", (unsigned long long)ms);
		timeouts++;
		inj_progress_add(1);
	}
	close(efd);
	close(ep);
	return NULL;
}

int main(int argc, char **argv)
{
	struct epoll_event ev;
	struct sigaction sa;
	char buf[4096], *line, *nl;
	long expect = 1;
	size_t len = 0;
	pthread_t th;
	int ep, fd;

	if (argc != 2) {
		fprintf(stderr, "usage: inj_epoll FIFO\n");
		return 64;
	}
	inj_init();
	fd = open(argv[1], O_RDWR | O_CLOEXEC | O_NONBLOCK);
	wake_fd = eventfd(0, EFD_CLOEXEC);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (fd < 0 || wake_fd < 0 || ep < 0)
		inj_fail("setup: %s", strerror(errno));
	ev.events = EPOLLIN;
	ev.data.fd = fd;
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	ev.data.fd = wake_fd;
	epoll_ctl(ep, EPOLL_CTL_ADD, wake_fd, &ev);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (pthread_create(&th, NULL, timer_thread, NULL))
		inj_fail("pthread_create failed");
	printf("inj_epoll: main in epoll_wait(-1) on %s, a thread in epoll_wait(100 ms)\n", argv[1]);
	inj_ready();

	while (!inj_stop) {
		int r = epoll_wait(ep, &ev, 1, -1);
		ssize_t n;

		if (r < 0 && errno == EINTR) {
			if (!inj_stop)
				eintr_main++;
			continue;
		}
		if (r < 0)
			inj_fail("epoll_wait(-1): %s", strerror(errno));
		if (r == 0)
			inj_fail("epoll_wait(-1) returned 0");
		if (ev.data.fd == wake_fd)
			break;
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EAGAIN)
			continue;
		if (n <= 0)
			inj_fail("read after EPOLLIN: %s", n ? strerror(errno) : "EOF");
		len += n;
		buf[len] = 0;
		line = buf;
		while ((nl = strchr(line, '\n'))) {
			long k;

			*nl = 0;
			if (strcmp(line, "quit") == 0) {
				inj_stop = 1;
				break;
			}
			if (sscanf(line, "msg %ld", &k) != 1)
				inj_fail("unexpected data '%s'", line);
			if (k != expect)
				inj_fail("got msg %ld, expected msg %ld", k, expect);
			printf("got msg %ld\n", k);
			expect++;
			inj_progress_add(1);
			line = nl + 1;
		}
		len = strlen(line);
		memmove(buf, line, len);
	}
	pthread_join(th, NULL);
	inj_gap_report();
	printf("epoll ok: %ld messages, %ld timeouts of 100 ms, EINTR: main %ld, timer thread %ld "
	       "(counted, not failed)\n", expect - 1, timeouts, eintr_main, eintr_timer);
	return 0;
}
