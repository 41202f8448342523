/* control.c - the control thread: serves the abstract Unix socket "heapsnap.<pid>" to authenticated peers. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "hsp.h"

/*
 * One thread, one client at a time.  It never holds a lock the hooks need
 * while it waits on the socket: snapshots copy the tables in short locked
 * chunks into private memory, then send.  Every socket operation has a
 * timeout, so a stuck client delays other clients, never the target.
 */

static int lfd = -1;
static int wake_fd[2] = { -1, -1 };
static int conn_fd = -1;
static pthread_t thr;
static bool running;
static int exit_req;

#define IO_TIMEOUT_S 10
#define IDLE_TIMEOUT_S 5

static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_resp(int fd, uint16_t cmd, int32_t status, const void *body, uint32_t len)
{
	struct hsp_resp r = { HSP_RESP_MAGIC, HSP_ABI_VERSION, cmd, status, len };
	int ret = send_all(fd, &r, sizeof(r));
	if (!ret && len)
		ret = send_all(fd, body, len);
	return ret;
}

static int send_frame(int fd, uint32_t type, const void *body, size_t len)
{
	struct hsp_frame f = { HSP_FRAME_MAGIC, type, (uint32_t)len, 0 };
	int ret = send_all(fd, &f, sizeof(f));
	if (!ret && len)
		ret = send_all(fd, body, len);
	return ret;
}

static int send_records(int fd, uint32_t type, const void *recs, size_t n, size_t size)
{
	size_t per = HSP_FRAME_MAX / size;
	for (size_t i = 0; i < n; i += per) {
		size_t k = n - i < per ? n - i : per;
		int ret = send_frame(fd, type, (const char *)recs + i * size, k * size);
		if (ret)
			return ret;
	}
	return 0;
}

static int send_snapshot(int fd)
{
	struct hsp_status st;
	struct hsp_snap_begin b;
	struct hsp_snap_end e = { 0 };
	size_t nlive = 0, nalloc = 0, llen = 0, alen = 0;
	struct hsp_live_rec *live = NULL;
	struct hsp_alloc_rec *alloc = NULL;
	char *sbuf = NULL;
	int ret;

	payload_fill_status(&st);
	b = (struct hsp_snap_begin){ st.rate, st.load_ns, st.since_ns, st.sampled_ns,
				     payload_now_ns(), st.pid, st.state };
	ret = send_resp(fd, HSP_CMD_SNAPSHOT, 0, NULL, 0);
	if (!ret)
		ret = send_frame(fd, HSP_FRAME_BEGIN, &b, sizeof(b));
	if (ret)
		return ret;
	live = table_copy_live(&nlive, &llen);
	if (!live && errno == ENOMEM)
		e.status = -ENOMEM;
	alloc = table_copy_alloc(&nalloc, &alen);
	if (!alloc && errno == ENOMEM)
		e.status = -ENOMEM;
	/* Every stack a copied record names was interned before the record
	 * was inserted, so it is below this count. */
	uint32_t nstacks = stack_count();
	ret = send_records(fd, HSP_FRAME_LIVE, live, nlive, sizeof(*live));
	if (!ret)
		ret = send_records(fd, HSP_FRAME_ALLOC, alloc, nalloc, sizeof(*alloc));
	mem_unmap(live, llen);
	mem_unmap(alloc, alen);
	if (ret)
		return ret;
	sbuf = mem_map(HSP_FRAME_MAX);
	if (!sbuf && nstacks) {
		e.status = -ENOMEM;
		nstacks = 0;
	}
	size_t used = 0;
	for (uint32_t id = 0; id < nstacks && !ret; id++) {
		uint32_t depth;
		const uintptr_t *pcs = stack_get(id, &depth);
		if (!pcs)
			depth = 0;
		size_t need = sizeof(struct hsp_stack_rec) + depth * sizeof(uint64_t);
		if (used + need > HSP_FRAME_MAX) {
			ret = send_frame(fd, HSP_FRAME_STACK, sbuf, used);
			used = 0;
		}
		struct hsp_stack_rec r = { id, depth };
		memcpy(sbuf + used, &r, sizeof(r));
		used += sizeof(r);
		for (uint32_t i = 0; i < depth; i++) {
			uint64_t pc = pcs[i];
			memcpy(sbuf + used, &pc, sizeof(pc));
			used += sizeof(pc);
		}
	}
	if (!ret && used)
		ret = send_frame(fd, HSP_FRAME_STACK, sbuf, used);
	mem_unmap(sbuf, HSP_FRAME_MAX);
	if (ret)
		return ret;
	e.nlive = nlive;
	e.nalloc = nalloc;
	e.nstacks = nstacks;
	return send_frame(fd, HSP_FRAME_END, &e, sizeof(e));
}

static bool peer_allowed(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || len != sizeof(cr))
		return false;
	return cr.uid == 0 || cr.uid == getuid() || cr.uid == geteuid();
}

static void set_timeout(int fd, int opt, int secs)
{
	struct timeval tv = { secs, 0 };
	setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv));
}

/* Serves requests on one connection until EOF, error, idle timeout or exit. */
static void serve(int fd)
{
	set_timeout(fd, SO_SNDTIMEO, IO_TIMEOUT_S);
	set_timeout(fd, SO_RCVTIMEO, IDLE_TIMEOUT_S);
	if (!peer_allowed(fd)) {
		send_resp(fd, 0, -EACCES, NULL, 0);
		return;
	}
	while (!LOAD(&exit_req)) {
		struct hsp_req q;
		/* Idle clients must not hold up an unload: wait on the wake
		 * pipe too. */
		struct pollfd p[2] = { { fd, POLLIN, 0 }, { wake_fd[0], POLLIN, 0 } };
		int r = poll(p, 2, IDLE_TIMEOUT_S * 1000);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (p[1].revents & POLLIN) || !(p[0].revents & (POLLIN | POLLHUP)))
			return;
		ssize_t n = recv(fd, &q, sizeof(q), MSG_WAITALL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(q) || q.magic != HSP_REQ_MAGIC)
			return;
		if (q.version != HSP_ABI_VERSION) {
			send_resp(fd, q.cmd, -EPROTO, NULL, 0);
			return;
		}
		int ret = 0;
		switch (q.cmd) {
		case HSP_CMD_STATUS: {
			struct hsp_status st;
			payload_fill_status(&st);
			ret = send_resp(fd, q.cmd, 0, &st, sizeof(st));
			break;
		}
		case HSP_CMD_START:
			ret = send_resp(fd, q.cmd, payload_resume(q.arg), NULL, 0);
			break;
		case HSP_CMD_STOP:
			ret = send_resp(fd, q.cmd, payload_pause(), NULL, 0);
			break;
		case HSP_CMD_SET_RATE: {
			int st = 0;
			uint32_t s = LOAD(&hsp_g.state);
			if (!q.arg || q.arg > HSP_RATE_MAX)
				st = -EINVAL;
			else if (s != HSP_STATE_SAMPLING && s != HSP_STATE_PAUSED)
				st = -ESRCH;
			else
				payload_set_rate(q.arg);
			ret = send_resp(fd, q.cmd, st, NULL, 0);
			break;
		}
		case HSP_CMD_RESET:
			payload_reset();
			ret = send_resp(fd, q.cmd, 0, NULL, 0);
			break;
		case HSP_CMD_SNAPSHOT:
			ret = send_snapshot(fd);
			break;
		case HSP_CMD_PREPARE_UNLOAD: {
			int st = payload_unhook_and_drain();
			/* Our last word: the injector joins this thread next. */
			if (!st)
				STORE(&exit_req, 1);
			ret = send_resp(fd, q.cmd, st, NULL, 0);
			break;
		}
		default:
			ret = send_resp(fd, q.cmd, -EINVAL, NULL, 0);
			break;
		}
		if (ret)
			return;
	}
}

static void tick(void)
{
	uint32_t st = LOAD(&hsp_g.state);

	table_reap(LT_UNMAP_NS);
	/* Modules loaded without our dlopen hook (a caller we could not
	 * patch, libc-internal loads): catch them here. */
	if ((st == HSP_STATE_SAMPLING || st == HSP_STATE_PAUSED) && got_modules_changed())
		got_patch_all();
}

static void *control_main(void *arg)
{
	struct timespec last, now;

	/* Everything this thread allocates (libc internals) is ours. */
	hsp_tls.guard = 1;
	clock_gettime(CLOCK_MONOTONIC, &last);
	while (!LOAD(&exit_req)) {
		struct pollfd p[2] = { { lfd, POLLIN, 0 }, { wake_fd[0], POLLIN, 0 } };
		int r = poll(p, 2, 1000);
		if (LOAD(&exit_req))
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec != last.tv_sec) {
			last = now;
			tick();
		}
		if (r > 0 && (p[0].revents & POLLIN)) {
			int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0) {
				STORE(&conn_fd, c);
				serve(c);
				STORE(&conn_fd, -1);
				close(c);
			}
		}
	}
	return NULL;
}

static void close_fds(void)
{
	if (lfd >= 0)
		close(lfd);
	if (wake_fd[0] >= 0)
		close(wake_fd[0]);
	if (wake_fd[1] >= 0)
		close(wake_fd[1]);
	lfd = wake_fd[0] = wake_fd[1] = -1;
}

int control_start(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	sigset_t all, old;
	pthread_attr_t attr;
	int ret, len;

	if (running)
		return 0;
	exit_req = 0;
	/* Abstract name: nothing on disk to clean up, gone when the socket
	 * closes; scoped to the target's network namespace. */
	len = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, HSP_SOCK_PREFIX "%d", (int)getpid());
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -errno;
	if (bind(lfd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)) != 0 ||
	    listen(lfd, 8) != 0 || pipe2(wake_fd, O_CLOEXEC | O_NONBLOCK) != 0) {
		ret = -errno;
		close_fds();
		return ret;
	}
	/* The thread takes no signal meant for the program. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	ret = -pthread_create(&thr, &attr, control_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		close_fds();
		return ret;
	}
	running = true;
	return 0;
}

static void control_request_exit(void)
{
	STORE(&exit_req, 1);
	if (wake_fd[1] >= 0) {
		ssize_t r = write(wake_fd[1], "x", 1);
		(void)r;
	}
}

int control_stop(void)
{
	struct timespec ts;

	if (!running)
		return 0;
	if (pthread_equal(pthread_self(), thr)) {
		STORE(&exit_req, 1);
		return -EDEADLK;
	}
	control_request_exit();
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += IO_TIMEOUT_S + IDLE_TIMEOUT_S + 2;
	if (pthread_timedjoin_np(thr, NULL, &ts) != 0)
		return -EBUSY; /* still running payload code: not safe to unload */
	running = false;
	close_fds();
	return 0;
}

void control_forget(void)
{
	/* fork child: the thread does not exist here; its fds do. */
	int c = conn_fd;
	if (c >= 0)
		close(c);
	conn_fd = -1;
	close_fds();
	running = false;
	exit_req = 0;
}
