/* livejem.c - the jemalloc backend: drive the target's own jemalloc profiler (mallctl prof.*) through the payload and read its heap_v2 dumps back. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "abi.h"
#include "astats.h"
#include "format.h"
#include "injector.h"
#include "live.h"
#include "livejem.h"

bool livejem_maybe(int pid)
{
	return livectl_lib_mapped(pid, "libjemalloc", NULL);
}

int livejem_lg(uint64_t rate)
{
	int lg = (int)lround(log2((double)(rate ? rate : 1)));
	return lg < 0 ? 0 : lg > 62 ? 62 : lg;
}

static void fill_info(const struct astats *a, struct livejem_info *info)
{
	uint64_t v;
	const char *ver = astats_get(a, "jemalloc.version");

	memset(info, 0, sizeof(*info));
	info->lg_sample = -1;
	info->present = astats_get(a, "jemalloc.stats.allocated") || ver;
	info->config_prof = astats_num(a, "jemalloc.config.prof", &v) && v;
	info->opt_prof = astats_num(a, "jemalloc.opt.prof", &v) && v;
	info->prof_active = astats_num(a, "jemalloc.prof.active", &v) && v;
	if (astats_num(a, "jemalloc.opt.lg_prof_sample", &v) && v < 64)
		info->lg_sample = (int)v;
	if (ver)
		snprintf(info->version, sizeof(info->version), "%s", ver);
}

int livejem_probe(int pid, int timeout_ms, struct livejem_info *info, bool *left_loaded,
		  char reason[LIVECTL_REASONLEN])
{
	struct astats a;
	int ret = astats_ask(pid, HSP_SYM_ALLOC_STATS, HSP_STATS_GET, 0, timeout_ms, &a, left_loaded, reason);

	if (ret)
		return ret;
	fill_info(&a, info);
	astats_free(&a);
	return 0;
}

int livejem_activate(int pid, int timeout_ms, bool on, int lg_sample, bool *left_loaded,
		     char reason[LIVECTL_REASONLEN])
{
	struct astats a;
	uint64_t arg = on && lg_sample >= 0 ? (uint64_t)lg_sample + 1 : 0;
	int ret = astats_ask(pid, HSP_SYM_JEMALLOC, on ? HSP_JE_ACTIVATE : HSP_JE_DEACTIVATE, arg, timeout_ms,
		      &a, left_loaded, reason);

	if (!ret)
		astats_free(&a);
	return ret;
}

/* Field 22 of /proc/PID/stat, the start time in clock ticks; 0 unknown. */
static unsigned long long proc_start_time(int pid)
{
	char buf[1024];
	unsigned long long t = 0;
	const char *f = inj_task_stat(pid, pid, buf, sizeof(buf));

	if (!f || sscanf(f, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
			 "%*d %*d %llu", &t) != 1)
		return 0;
	return t;
}

static void marker_path(int pid, char *path, size_t len)
{
	snprintf(path, len, "/proc/%d/root/tmp/heapsnap-je-active.%d", pid, pid);
}

int livejem_mark(int pid, bool on)
{
	char path[96], buf[32];
	unsigned long long t = proc_start_time(pid);

	marker_path(pid, path, sizeof(path));
	if (!on)
		return unlink(path) == 0 || errno == ENOENT ? 0 : -errno;
	if (!t)
		return -ESRCH;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	int len = snprintf(buf, sizeof(buf), "%llu\n", t);
	int ret = write(fd, buf, (size_t)len) == len ? 0 : -EIO;
	close(fd);
	return ret;
}

bool livejem_marked(int pid)
{
	char path[96], buf[32];
	unsigned long long t = proc_start_time(pid), m = 0;

	marker_path(pid, path, sizeof(path));
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	if (sscanf(buf, "%llu", &m) != 1 || !t || m != t) {
		/* Another process that had this pid: not ours to act on. */
		unlink(path);
		return false;
	}
	return true;
}

int livejem_dump(int pid, int timeout_ms, bool since_start, struct profile **out, bool *left_loaded,
		 char reason[LIVECTL_REASONLEN])
{
	struct astats a;
	char err[FMT_ERRLEN], *buf = NULL;
	size_t len = 0;
	int ret = astats_ask(pid, HSP_SYM_JEMALLOC, HSP_JE_DUMP, 0, timeout_ms, &a, left_loaded, reason);

	if (ret)
		return ret;
	ret = livectl_fetch(pid, astats_get(&a, "jemalloc.dump"), "/tmp/heapsnap-je.", &buf, &len, reason);
	astats_free(&a);
	if (ret)
		return ret;
	ret = fmt_read_buf(FMT_JEPROF, buf, len, out, err);
	free(buf);
	if (ret) {
		snprintf(reason, LIVECTL_REASONLEN, "cannot read jemalloc's dump: %.200s", err);
		return ret;
	}
	struct profile *p = *out;
	ret = live_proc_comments(p, pid, "jemalloc");
	if (!ret)
		ret = prof_add_comment(p, since_start ?
				       "jemalloc: profiling was active before heapsnap came: the profile "
				       "covers allocations made since it was activated (process start when "
				       "started with prof_active:true)" :
				       "jemalloc: profiling activated by heapsnap: allocations since then only");
	if (ret) {
		prof_free(p);
		*out = NULL;
		snprintf(reason, LIVECTL_REASONLEN, "out of memory");
	}
	return ret;
}
