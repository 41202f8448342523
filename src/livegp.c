/* livegp.c - the gperftools backend: start, dump and stop tcmalloc's heap profiler in the target through the payload. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi.h"
#include "astats.h"
#include "format.h"
#include "live.h"
#include "livegp.h"

bool livegp_maybe(int pid)
{
	return livectl_lib_mapped(pid, "libtcmalloc", "minimal");
}

/* heapsnap's directory for the profiler it started in pid, if any. */
static bool our_dir(int pid, char *out, size_t len)
{
	char path[64], want[48];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/root/tmp", pid);
	snprintf(want, sizeof(want), "heapsnap-gp.%d.", pid);
	d = opendir(path);
	if (!d)
		return false;
	while (!found && (de = readdir(d)))
		if (!strncmp(de->d_name, want, strlen(want))) {
			found = true;
			snprintf(out, len, "%s/%s", path, de->d_name);
		}
	closedir(d);
	return found;
}

bool livegp_ours(int pid)
{
	char dir[512];
	return our_dir(pid, dir, sizeof(dir));
}

int livegp_probe(int pid, int timeout_ms, bool *running, bool *ours, bool *left_loaded,
		 char reason[LIVECTL_REASONLEN])
{
	struct astats a;
	uint64_t v = 0;
	char dir[512];
	int ret = astats_ask(pid, HSP_SYM_GPERF, HSP_GP_INFO, 0, timeout_ms, &a, left_loaded, reason);

	if (ret)
		return ret;
	*running = astats_num(&a, "gperf.running", &v) && v;
	*ours = *running && our_dir(pid, dir, sizeof(dir));
	astats_free(&a);
	return 0;
}

int livegp_start(int pid, int timeout_ms, bool *started, bool *left_loaded,
		 char reason[LIVECTL_REASONLEN])
{
	struct astats a;
	int ret = astats_ask(pid, HSP_SYM_GPERF, HSP_GP_START, 0, timeout_ms, &a, left_loaded, reason);

	if (ret)
		return ret;
	*started = astats_get(&a, "gperf.started") != NULL;
	astats_free(&a);
	return 0;
}

int livegp_stop_ours(int pid, int timeout_ms, bool *stopped, bool *left_loaded,
		     char reason[LIVECTL_REASONLEN])
{
	struct astats a;
	char dir[512], file[1024];
	struct dirent *de;
	int ret;

	*stopped = false;
	if (!our_dir(pid, dir, sizeof(dir)))
		return 0;
	ret = astats_ask(pid, HSP_SYM_GPERF, HSP_GP_STOP, 0, timeout_ms, &a, left_loaded, reason);
	if (ret)
		return ret;
	astats_free(&a);
	*stopped = true;
	/* The profiler may have dumped there on its own (every GB allocated). */
	DIR *d = opendir(dir);
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(file, sizeof(file), "%s/%s", dir, de->d_name);
			unlink(file);
		}
	if (d)
		closedir(d);
	rmdir(dir);
	return 0;
}

/* Zeroes and drops the samples with a frame in the payload [lo, hi): the
 * profile text GetHeapProfile() was building while it looked. */
static void drop_own(struct profile *p, uint64_t lo, uint64_t hi)
{
	bool any = false;

	for (size_t i = 0; i < p->nsamples && hi > lo; i++) {
		struct prof_sample *s = &p->samples[i];
		for (uint32_t k = 0; k < s->nlocs; k++) {
			uint64_t a = p->locs[s->locs[k]].address;
			if (a >= lo && a < hi) {
				memset(s->v, 0, sizeof(s->v));
				any = true;
				break;
			}
		}
	}
	if (any)
		prof_compact(p);
}

int livegp_dump(int pid, int timeout_ms, bool before_us, struct profile **out, bool *left_loaded,
		char reason[LIVECTL_REASONLEN])
{
	struct astats a;
	char err[FMT_ERRLEN], *buf = NULL;
	size_t len = 0;
	int ret = astats_ask(pid, HSP_SYM_GPERF, HSP_GP_DUMP, 0, timeout_ms, &a, left_loaded, reason);

	if (ret)
		return ret;
	uint64_t lo = 0, hi = 0;
	const char *range = astats_get(&a, "payload.range");
	if (!range || sscanf(range, "%" SCNu64 " %" SCNu64, &lo, &hi) != 2)
		lo = hi = 0;
	ret = livectl_fetch(pid, astats_get(&a, "gperf.dump"), "/tmp/heapsnap-gp.", &buf, &len, reason);
	astats_free(&a);
	if (ret)
		return ret;
	ret = fmt_read_buf(FMT_GPERF, buf, len, out, err);
	free(buf);
	if (ret) {
		snprintf(reason, LIVECTL_REASONLEN, "cannot read the heap profile: %.200s", err);
		return ret;
	}
	struct profile *p = *out;
	drop_own(p, lo, hi);
	ret = live_proc_comments(p, pid, "gperftools");
	if (!ret)
		ret = prof_add_comment(p, before_us ?
				       "gperftools: the heap profiler ran before heapsnap came (HEAPPROFILE): "
				       "the profile covers allocations since it started" :
				       "gperftools: heap profiler started by heapsnap: allocations since then only");
	if (ret) {
		prof_free(p);
		*out = NULL;
		snprintf(reason, LIVECTL_REASONLEN, "out of memory");
	}
	return ret;
}
