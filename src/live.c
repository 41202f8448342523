/* live.c - the client side of the payload's control socket: connect, authenticate, command, snapshot -> profile. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "live.h"

#define RECV_TIMEOUT_S 60 /* prepare-unload may drain and scan for seconds */

struct live_conn {
	int fd;
	int pid;
};

const char *live_state_name(uint32_t state)
{
	switch (state) {
	case HSP_STATE_IDLE: return "idle";
	case HSP_STATE_SAMPLING: return "sampling";
	case HSP_STATE_PAUSED: return "paused";
	case HSP_STATE_UNLOADED: return "unloaded";
	case HSP_STATE_FORKED: return "forked";
	}
	return "unknown";
}

int live_pid(const struct live_conn *c)
{
	return c->pid;
}

/* The pid the target sees for itself: last field of NSpid. */
static int target_nspid(int pid, int *nspid)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	*nspid = pid;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6))
			continue;
		char *p = line + 6, *end;
		for (;;) {
			long v = strtol(p, &end, 10);
			if (end == p)
				break;
			*nspid = (int)v;
			p = end;
		}
		break;
	}
	fclose(f);
	return 0;
}

/* A socket created in the target's network namespace (abstract names are
 * per network namespace).  Entering another one needs CAP_SYS_ADMIN. */
static int socket_in_netns(int pid)
{
	char path[64];
	struct stat a, b;
	int fd, self_ns, tgt_ns, ret;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	if (stat("/proc/self/ns/net", &a) != 0 || stat(path, &b) != 0 ||
	    (a.st_dev == b.st_dev && a.st_ino == b.st_ino)) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	self_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	tgt_ns = open(path, O_RDONLY | O_CLOEXEC);
	if (self_ns < 0 || tgt_ns < 0) {
		ret = -EPERM;
		goto out;
	}
	if (setns(tgt_ns, CLONE_NEWNET) != 0) {
		ret = -EPERM;
		goto out;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ret = fd < 0 ? -errno : fd;
	if (setns(self_ns, CLONE_NEWNET) != 0) {
		/* Cannot go back: better fail than carry on in the wrong namespace. */
		if (fd >= 0)
			close(fd);
		ret = -EPERM;
	}
out:
	if (self_ns >= 0)
		close(self_ns);
	if (tgt_ns >= 0)
		close(tgt_ns);
	return ret;
}

static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int recv_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One request; a fixed body of exactly blen bytes is expected on success. */
static int request(struct live_conn *c, uint16_t cmd, uint64_t arg, void *body, size_t blen)
{
	struct hsp_req q = { HSP_REQ_MAGIC, HSP_ABI_VERSION, cmd, arg };
	struct hsp_resp r;
	int ret;

	/* A refusing payload answers before reading: send errors are
	 * resolved by the reply that may already be waiting. */
	send_all(c->fd, &q, sizeof(q));
	ret = recv_all(c->fd, &r, sizeof(r));
	if (ret)
		return ret;
	if (r.magic != HSP_RESP_MAGIC)
		return -EPROTO;
	if (r.status)
		return r.status < 0 ? r.status : -EPROTO;
	if (r.version != HSP_ABI_VERSION || r.cmd != cmd || r.len != blen)
		return -EPROTO;
	return blen ? recv_all(c->fd, body, blen) : 0;
}

int live_connect(int pid, struct live_conn **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	struct hsp_status st;
	int nspid = pid, fd, ret, len;

	if (pid <= 0)
		return -EINVAL;
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return -ESRCH;
	ret = target_nspid(pid, &nspid);
	if (ret)
		return ret;
	fd = socket_in_netns(pid);
	if (fd < 0)
		return fd;
	len = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, HSP_SOCK_PREFIX "%d", nspid);
	if (connect(fd, (struct sockaddr *)&sa,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)) != 0) {
		ret = errno == ECONNREFUSED || errno == ENOENT ? -ENOENT : -errno;
		goto fail;
	}
	/* The name is first come, first served: make sure it is the target's. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) != 0 || cr.pid != pid) {
		ret = -EPROTO;
		goto fail;
	}
	struct timeval tv = { RECV_TIMEOUT_S, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	struct live_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		ret = -ENOMEM;
		goto fail;
	}
	c->fd = fd;
	c->pid = pid;
	ret = live_status(c, &st);
	if (ret) {
		live_close(c);
		return ret;
	}
	*out = c;
	return 0;
fail:
	close(fd);
	return ret;
}

void live_close(struct live_conn *c)
{
	if (!c)
		return;
	close(c->fd);
	free(c);
}

int live_status(struct live_conn *c, struct hsp_status *st)
{
	int ret = request(c, HSP_CMD_STATUS, 0, st, sizeof(*st));
	if (!ret && st->abi_version != HSP_ABI_VERSION)
		return -EPROTO;
	if (!ret)
		st->backend[sizeof(st->backend) - 1] = 0;
	return ret;
}

int live_start(struct live_conn *c, uint64_t rate)
{
	return request(c, HSP_CMD_START, rate, NULL, 0);
}

int live_stop(struct live_conn *c)
{
	return request(c, HSP_CMD_STOP, 0, NULL, 0);
}

int live_set_rate(struct live_conn *c, uint64_t rate)
{
	if (!rate)
		return -EINVAL;
	return request(c, HSP_CMD_SET_RATE, rate, NULL, 0);
}

int live_reset(struct live_conn *c)
{
	return request(c, HSP_CMD_RESET, 0, NULL, 0);
}

int live_prepare_unload(struct live_conn *c)
{
	return request(c, HSP_CMD_PREPARE_UNLOAD, 0, NULL, 0);
}

/* ---- snapshot ------------------------------------------------------------ */

struct raw_stack {
	uint32_t depth;
	bool present;
	uint64_t *pcs;
	uint32_t *locs;         /* profile location indexes, filled once */
};

struct snap {
	struct hsp_snap_begin begin;
	struct hsp_live_rec *live;
	size_t nlive, live_cap;
	struct hsp_alloc_rec *alloc;
	size_t nalloc, alloc_cap;
	struct raw_stack *stacks;
	size_t nstacks;         /* array length (max id + 1) */
	size_t nstacks_seen;
};

static void snap_free(struct snap *s)
{
	free(s->live);
	free(s->alloc);
	for (size_t i = 0; i < s->nstacks; i++) {
		free(s->stacks[i].pcs);
		free(s->stacks[i].locs);
	}
	free(s->stacks);
}

/* Appends a frame of whole records of `elem` bytes (len bytes at src) to a
 * growing array; -EPROTO when len is not a whole number of records. */
static int append_recs(void **arr, size_t *n, size_t *cap, size_t elem, const void *src,
		       size_t len)
{
	size_t k = len / elem;

	if (len % elem)
		return -EPROTO;
	if (*n + k > *cap) {
		size_t ncap = *cap ? *cap : 1024;
		while (ncap < *n + k)
			ncap *= 2;
		void *na = realloc(*arr, ncap * elem);
		if (!na)
			return -ENOMEM;
		*arr = na;
		*cap = ncap;
	}
	memcpy((char *)*arr + *n * elem, src, k * elem);
	*n += k;
	return 0;
}

static int parse_stacks(struct snap *s, const char *buf, size_t len)
{
	size_t off = 0;

	while (off < len) {
		struct hsp_stack_rec r;
		if (len - off < sizeof(r))
			return -EPROTO;
		memcpy(&r, buf + off, sizeof(r));
		off += sizeof(r);
		if (r.depth > HSP_MAX_DEPTH || len - off < r.depth * sizeof(uint64_t) ||
		    r.id > (1u << 24))
			return -EPROTO;
		if (r.id >= s->nstacks) {
			size_t n = s->nstacks ? s->nstacks : 256;
			while (n <= r.id)
				n *= 2;
			struct raw_stack *ns = realloc(s->stacks, n * sizeof(*ns));
			if (!ns)
				return -ENOMEM;
			memset(ns + s->nstacks, 0, (n - s->nstacks) * sizeof(*ns));
			s->stacks = ns;
			s->nstacks = n;
		}
		struct raw_stack *st = &s->stacks[r.id];
		if (st->present)
			return -EPROTO;
		st->present = true;
		st->depth = r.depth;
		if (r.depth) {
			st->pcs = malloc(r.depth * sizeof(uint64_t));
			if (!st->pcs)
				return -ENOMEM;
			memcpy(st->pcs, buf + off, r.depth * sizeof(uint64_t));
		}
		off += r.depth * sizeof(uint64_t);
		s->nstacks_seen++;
	}
	return 0;
}

/* Reads the frames up to HSP_FRAME_END; maps are read as soon as the
 * payload has started its copy. */
static int read_snapshot(struct live_conn *c, struct snap *s, struct profile *p)
{
	char *buf = malloc(HSP_FRAME_MAX);
	bool begun = false;
	int ret;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		struct hsp_frame f;
		ret = recv_all(c->fd, &f, sizeof(f));
		if (ret)
			break;
		if (f.magic != HSP_FRAME_MAGIC || f.len > HSP_FRAME_MAX) {
			ret = -EPROTO;
			break;
		}
		ret = recv_all(c->fd, buf, f.len);
		if (ret)
			break;
		if (!begun && f.type != HSP_FRAME_BEGIN) {
			ret = -EPROTO;
			break;
		}
		switch (f.type) {
		case HSP_FRAME_BEGIN:
			if (begun || f.len != sizeof(s->begin)) {
				ret = -EPROTO;
				break;
			}
			memcpy(&s->begin, buf, sizeof(s->begin));
			begun = true;
			ret = prof_load_proc_maps(p, c->pid);
			break;
		case HSP_FRAME_LIVE:
			ret = append_recs((void **)&s->live, &s->nlive, &s->live_cap,
					  sizeof(struct hsp_live_rec), buf, f.len);
			break;
		case HSP_FRAME_ALLOC:
			ret = append_recs((void **)&s->alloc, &s->nalloc, &s->alloc_cap,
					  sizeof(struct hsp_alloc_rec), buf, f.len);
			break;
		case HSP_FRAME_STACK:
			ret = parse_stacks(s, buf, f.len);
			break;
		case HSP_FRAME_END: {
			struct hsp_snap_end e;
			if (f.len != sizeof(e)) {
				ret = -EPROTO;
				break;
			}
			memcpy(&e, buf, sizeof(e));
			if (e.status)
				ret = e.status < 0 ? e.status : -EPROTO;
			else if (e.nlive != s->nlive || e.nalloc != s->nalloc ||
				 e.nstacks != s->nstacks_seen)
				ret = -EPROTO;
			free(buf);
			return ret;
		}
		default:
			ret = -EPROTO;
		}
		if (ret)
			break;
	}
	free(buf);
	return ret;
}

/* Per (stack, size): the unbiased sums. */
struct agg {
	uint32_t stack;
	uint64_t size;
	double v[PT_NTYPES];
	bool used;
};

struct aggtab {
	struct agg *e;
	size_t cap, n;
};

static struct agg *agg_get(struct aggtab *t, uint32_t stack, uint64_t size)
{
	if ((t->n + 1) * 2 > t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 1024;
		struct agg *ne = calloc(ncap, sizeof(*ne));
		if (!ne)
			return NULL;
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->e[i].used)
				continue;
			uint64_t h = (t->e[i].stack * 0x9e3779b97f4a7c15ull) ^ (t->e[i].size * 0xc2b2ae3d27d4eb4full);
			size_t j = (size_t)(h ^ (h >> 29)) & (ncap - 1);
			while (ne[j].used)
				j = (j + 1) & (ncap - 1);
			ne[j] = t->e[i];
		}
		free(t->e);
		t->e = ne;
		t->cap = ncap;
	}
	uint64_t h = (stack * 0x9e3779b97f4a7c15ull) ^ (size * 0xc2b2ae3d27d4eb4full);
	size_t j = (size_t)(h ^ (h >> 29)) & (t->cap - 1);
	for (;;) {
		struct agg *a = &t->e[j];
		if (!a->used) {
			a->used = true;
			a->stack = stack;
			a->size = size;
			t->n++;
			return a;
		}
		if (a->stack == stack && a->size == size)
			return a;
		j = (j + 1) & (t->cap - 1);
	}
}

/* 1/p for one sampled allocation (FORMATS.md section 6). */
static double inv_prob(uint64_t size, uint64_t rate)
{
	double pr = prof_sample_prob((double)size, (double)rate);
	return pr > 0 ? 1.0 / pr : 1.0;
}

int live_proc_comments(struct profile *p, int pid, const char *backend)
{
	char path[64], buf[4096];
	ssize_t n;
	int fd, ret;

	ret = prof_add_comment(p, "pid=%d", pid);
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (!ret && n > 0) {
		buf[n] = 0;
		ret = prof_add_comment(p, "exe=%s", buf);
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!ret && fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		if (n > 0) {
			while (n > 0 && buf[n - 1] == 0)
				n--;
			for (ssize_t i = 0; i < n; i++)
				if (!buf[i])
					buf[i] = ' ';
			buf[n] = 0;
			ret = prof_add_comment(p, "cmdline=%s", buf);
		}
	}
	if (fd >= 0)
		close(fd);
	if (!ret)
		ret = prof_add_comment(p, "backend=%s", backend);
	return ret;
}

static int add_comments(struct profile *p, int pid, const struct hsp_snap_begin *b)
{
	int ret = live_proc_comments(p, pid, "interpose");

	if (!ret)
		ret = prof_add_comment(p, "rate=%llu", (unsigned long long)b->rate);
	if (!ret)
		ret = prof_add_comment(p, "duration=%.3fs", b->sampled_ns / 1e9);
	return ret;
}

/* Location indexes of a stack, created on first use. */
static int stack_locs(struct profile *p, struct raw_stack *st)
{
	if (st->locs || !st->depth)
		return 0;
	st->locs = malloc(st->depth * sizeof(*st->locs));
	if (!st->locs)
		return -ENOMEM;
	for (uint32_t i = 0; i < st->depth; i++) {
		/* Every captured pc is a return address: look up the call. */
		int64_t l = prof_add_location(p, st->pcs[i] - 1, PROF_NONE);
		if (l < 0)
			return (int)l;
		st->locs[i] = (uint32_t)l;
	}
	return 0;
}

static int build_profile(struct profile *p, struct snap *s, int pid)
{
	struct aggtab t = { 0 };
	int ret = 0;

	for (size_t i = 0; i < s->nlive && !ret; i++) {
		const struct hsp_live_rec *r = &s->live[i];
		if (r->stack >= s->nstacks || !s->stacks[r->stack].present) {
			ret = -EPROTO;
			break;
		}
		struct agg *a = agg_get(&t, r->stack, r->size);
		if (!a) {
			ret = -ENOMEM;
			break;
		}
		double k = inv_prob(r->size, r->rate);
		a->v[PT_INUSE_OBJECTS] += k;
		a->v[PT_INUSE_SPACE] += k * (double)r->size;
	}
	for (size_t i = 0; i < s->nalloc && !ret; i++) {
		const struct hsp_alloc_rec *r = &s->alloc[i];
		if (r->stack >= s->nstacks || !s->stacks[r->stack].present) {
			ret = -EPROTO;
			break;
		}
		if (!(r->objects >= 0) || !(r->bytes >= 0)) {
			ret = -EPROTO;
			break;
		}
		/* The payload keeps one unbiased total per stack: its "bytes"
		 * label is the mean size, as in Go's heap profiles. */
		uint64_t size = r->objects > 0 ? (uint64_t)llround(r->bytes / r->objects) : 0;
		struct agg *a = agg_get(&t, r->stack, size);
		if (!a) {
			ret = -ENOMEM;
			break;
		}
		a->v[PT_ALLOC_OBJECTS] += r->objects;
		a->v[PT_ALLOC_SPACE] += r->bytes;
	}
	const char *bytes = ret ? NULL : prof_intern(p, "bytes");
	if (!ret && !bytes)
		ret = -ENOMEM;
	for (size_t i = 0; i < t.cap && !ret; i++) {
		struct agg *a = &t.e[i];
		if (!a->used)
			continue;
		struct raw_stack *st = &s->stacks[a->stack];
		ret = stack_locs(p, st);
		if (ret)
			break;
		int64_t v[PT_NTYPES];
		for (int k = 0; k < PT_NTYPES; k++)
			v[k] = llround(a->v[k]);
		struct prof_label l = { .key = bytes, .num = (int64_t)a->size };
		int64_t idx = prof_add_sample(p, st->locs, st->depth, v, &l, 1);
		if (idx < 0)
			ret = (int)idx;
	}
	free(t.e);
	if (ret)
		return ret;
	p->has_alloc = true;
	p->period = (int64_t)s->begin.rate;
	p->time_nanos = (int64_t)s->begin.now_ns;
	p->duration_nanos = (int64_t)s->begin.sampled_ns;
	return add_comments(p, pid, &s->begin);
}

int live_snapshot(struct live_conn *c, struct profile **out)
{
	struct snap s = { 0 };
	struct profile *p;
	int ret;

	p = prof_new();
	if (!p)
		return -ENOMEM;
	ret = request(c, HSP_CMD_SNAPSHOT, 0, NULL, 0);
	if (!ret)
		ret = read_snapshot(c, &s, p);
	if (!ret)
		ret = build_profile(p, &s, c->pid);
	snap_free(&s);
	if (ret) {
		prof_free(p);
		return ret;
	}
	*out = p;
	return 0;
}
