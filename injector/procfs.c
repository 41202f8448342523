/* procfs.c - what /proc tells about the target without stopping it: maps, status, threads, mapped files. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "internal.h"

/* Reads a whole /proc file (they have no size) into a NUL-terminated buffer. */
static char *slurp(const char *path, int *err)
{
	size_t cap = 8192, len = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf) {
		*err = fd < 0 ? (errno == ENOENT ? -ESRCH : -errno) : -ENOMEM;
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	for (;;) {
		if (len + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				*err = -ENOMEM;
				free(buf);
				close(fd);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			*err = errno == ESRCH ? -ESRCH : -errno;
			free(buf);
			close(fd);
			return NULL;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = 0;
	return buf;
}

int proc_maps_read(pid_t pid, struct proc_maps *m)
{
	char path[64], *buf, *line, *save = NULL;
	int err = 0, cap = 0;

	memset(m, 0, sizeof(*m));
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	buf = slurp(path, &err);
	if (!buf)
		return err;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long s, e, off, ino;
		unsigned maj, min;
		char perms[8];
		int pos = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &s, &e, perms, &off, &maj, &min,
			   &ino, &pos) < 7)
			continue;
		if (m->n == cap) {
			int nc = cap ? cap * 2 : 256;
			struct proc_map *nv = realloc(m->v, nc * sizeof(*nv));
			if (!nv) {
				err = -ENOMEM;
				break;
			}
			m->v = nv;
			cap = nc;
		}
		struct proc_map *mp = &m->v[m->n];
		mp->start = s;
		mp->end = e;
		mp->offset = off;
		mp->dev = makedev(maj, min);
		mp->ino = ino;
		memcpy(mp->perms, perms, 4);
		mp->perms[4] = 0;
		mp->path = strdup(pos ? line + pos : "");
		if (!mp->path) {
			err = -ENOMEM;
			break;
		}
		m->n++;
	}
	free(buf);
	if (err)
		proc_maps_free(m);
	return err;
}

void proc_maps_free(struct proc_maps *m)
{
	for (int i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

const struct proc_map *proc_maps_find(const struct proc_maps *m, uint64_t addr)
{
	int lo = 0, hi = m->n - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (addr < m->v[mid].start)
			hi = mid - 1;
		else if (addr >= m->v[mid].end)
			lo = mid + 1;
		else
			return &m->v[mid];
	}
	return NULL;
}

int proc_status_read(const char *path, struct proc_status *st)
{
	char *buf, *line, *save = NULL;
	int err = 0;

	memset(st, 0, sizeof(*st));
	st->seccomp = -1;
	buf = slurp(path, &err);
	if (!buf)
		return err;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *v = strchr(line, ':');
		if (!v)
			continue;
		*v++ = 0;
		while (*v == ' ' || *v == '\t')
			v++;
		if (!strcmp(line, "Name"))
			snprintf(st->name, sizeof(st->name), "%s", v);
		else if (!strcmp(line, "State"))
			st->state = *v;
		else if (!strcmp(line, "Tgid"))
			st->tgid = atoi(v);
		else if (!strcmp(line, "PPid"))
			st->ppid = atoi(v);
		else if (!strcmp(line, "TracerPid"))
			st->tracer_pid = atoi(v);
		else if (!strcmp(line, "Uid"))
			sscanf(v, "%u %u %u %u", &st->uid[0], &st->uid[1], &st->uid[2], &st->uid[3]);
		else if (!strcmp(line, "Gid"))
			sscanf(v, "%u %u %u %u", &st->gid[0], &st->gid[1], &st->gid[2], &st->gid[3]);
		else if (!strcmp(line, "Seccomp"))
			st->seccomp = atoi(v);
		else if (!strcmp(line, "Threads"))
			st->threads = atoi(v);
		else if (!strcmp(line, "CapEff"))
			st->cap_eff = strtoull(v, NULL, 16);
	}
	free(buf);
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return x < y ? -1 : x > y;
}

int proc_tasks(pid_t pid, pid_t **tids)
{
	char path[64];
	struct dirent *de;
	int n = 0, cap = 0;
	pid_t *v = NULL;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (n == cap) {
			int nc = cap ? cap * 2 : 64;
			pid_t *nv = realloc(v, nc * sizeof(*nv));
			if (!nv) {
				closedir(d);
				free(v);
				return -ENOMEM;
			}
			v = nv;
			cap = nc;
		}
		v[n++] = atoi(de->d_name);
	}
	closedir(d);
	qsort(v, n, sizeof(*v), cmp_pid);
	*tids = v;
	return n;
}

const char *inj_task_stat(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[80], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	/* comm may hold spaces and parentheses: the state follows the last ')'. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] ? p + 2 : NULL;
}

char proc_task_state(pid_t pid, pid_t tid)
{
	char buf[1024];
	const char *f = inj_task_stat(pid, tid, buf, sizeof(buf));

	return f ? f[0] : 0;
}

int proc_task_cpu(pid_t pid, pid_t tid)
{
	char buf[1024];
	const char *f = inj_task_stat(pid, tid, buf, sizeof(buf));

	/* f is field 3 (state); "processor" is field 39. */
	for (int i = 3; f && i < 39; i++) {
		f = strchr(f, ' ');
		if (f)
			f++;
	}
	return f && *f >= '0' && *f <= '9' ? atoi(f) : -1;
}


int proc_open_mapped(pid_t pid, const struct proc_map *mp)
{
	char path[PATH_MAX + 64];
	struct stat st;
	int fd;

	if (!mp->path[0] || mp->path[0] != '/')
		return -ENOENT;
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)mp->start, (unsigned long long)mp->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/* map_files needs CAP_SYS_ADMIN on some kernels: go through the
		 * target's root (its mount namespace), then check identity. */
		snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, mp->path);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return errno == ENOENT ? -ENOENT : -errno;
	}
	if (fstat(fd, &st) < 0 || st.st_dev != mp->dev || st.st_ino != mp->ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static long task_syscall(pid_t pid, pid_t tid, uint64_t *arg0, uint64_t *spp, uint64_t *pc);

long proc_task_syscall(pid_t pid, pid_t tid)
{
	uint64_t a0, sp, pc;
	return task_syscall(pid, tid, &a0, &sp, &pc);
}

long proc_task_syscall_full(pid_t pid, pid_t tid, uint64_t *arg0, uint64_t *pc)
{
	uint64_t sp;
	return task_syscall(pid, tid, arg0, &sp, pc);
}

long proc_task_syscall_regs(pid_t pid, pid_t tid, uint64_t *sp, uint64_t *pc)
{
	uint64_t a0;
	return task_syscall(pid, tid, &a0, sp, pc);
}

static long task_syscall(pid_t pid, pid_t tid, uint64_t *arg0, uint64_t *spp, uint64_t *pc)
{
	char path[80], buf[256];
	unsigned long long a[6], sp, ip;
	long nr;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -2;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -2;
	buf[n] = 0;
	if (sscanf(buf, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &nr, &a[0], &a[1], &a[2], &a[3],
		   &a[4], &a[5], &sp, &ip) != 9)
		return !strncmp(buf, "running", 7) ? -1 : -2;
	*arg0 = a[0];
	*spp = sp;
	*pc = ip;
	return nr;
}

void proc_read_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	buf[0] = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		n = 0;
	buf[n] = 0;
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
}
