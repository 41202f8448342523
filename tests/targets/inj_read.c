/* inj_read.c - single thread blocked in read() on a FIFO, with or without a
 * SIGUSR1 handler: it must read every message written later, never see EINTR.
 * Usage: inj_read FIFO [plain|restart|norestart]; messages are lines
 * "msg N" (N = 1, 2, ... in order), "quit" ends it with status 0. */
#include "inj_common.h"

static volatile sig_atomic_t usr1_count;

static void on_usr1(int sig)
{
	usr1_count++;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "plain";
	char buf[4096], *line, *nl;
	long expect = 1, reads = 0;
	size_t len = 0;
	ssize_t n;
	int fd;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: inj_read FIFO [plain|restart|norestart]\n");
		return 64;
	}
	inj_init();
	/* O_RDWR: we hold a writer ourselves, so read() never returns EOF when
	 * the test's writer closes, and open() does not wait for one. */
	fd = open(argv[1], O_RDWR | O_CLOEXEC);
	if (fd < 0)
		inj_fail("cannot open %s: %s", argv[1], strerror(errno));
	if (strcmp(mode, "plain") != 0) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_usr1;
		sigemptyset(&sa.sa_mask);
		if (strcmp(mode, "restart") == 0)
			sa.sa_flags = SA_RESTART;
		else if (strcmp(mode, "norestart") != 0) {
			fprintf(stderr, "inj_read: unknown mode '%s'\n", mode);
			return 64;
		}
		sigaction(SIGUSR1, &sa, NULL);
	}
	/* No SA_RESTART: SIGTERM is the one signal allowed to end read(). */
	inj_on_term(0);
	printf("inj_read: blocked in read() on %s, SIGUSR1 handler: %s\n", argv[1],
	       strcmp(mode, "plain") == 0 ? "none" :
	       strcmp(mode, "restart") == 0 ? "SA_RESTART" : "without SA_RESTART");
	inj_ready();

	for (;;) {
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0) {
			if (errno == EINTR && inj_stop)
				break;
			if (errno == EINTR)
				inj_fail("EINTR from read (after %ld messages, %d SIGUSR1 handled)",
					 expect - 1, (int)usr1_count);
			inj_fail("read: %s", strerror(errno));
		}
		if (n == 0)
			inj_fail("EOF from read although we hold a writer");
		reads++;
		len += n;
		buf[len] = 0;
		line = buf;
		while ((nl = strchr(line, '\n'))) {
			long k;

			*nl = 0;
			if (strcmp(line, "quit") == 0)
				goto done;
			if (sscanf(line, "msg %ld", &k) != 1)
				inj_fail("unexpected data '%s'", line);
			if (k != expect)
				inj_fail("got msg %ld, expected msg %ld (data lost or repeated)", k, expect);
			printf("got msg %ld\n", k);
			expect++;
			inj_progress_add(1);
			line = nl + 1;
		}
		len = strlen(line);
		memmove(buf, line, len);
		if (len == sizeof(buf) - 1)
			inj_fail("line too long");
	}
done:
	printf("read ok: %ld messages in %ld reads, %d SIGUSR1 handled, no EINTR\n",
	       expect - 1, reads, (int)usr1_count);
	return 0;
}
