/* pl_common.h - the command loop, ground-truth bookkeeping and stand-in injector shared by the pl_known* targets. */
#ifndef PL_COMMON_H
#define PL_COMMON_H

/*
 * A pl_known target allocates known patterns at known sites and tells the
 * test what a profile of it must contain.  Each site is a noinline function
 * in its own section pl_site_<name>, so the linker's __start_/__stop_
 * symbols give its exact address range ("site NAME LO HI").
 *
 * Two ways to run it:
 *   TARGET cmd          commands on stdin, one per line, each answered by
 *                       its output and a line "done CMD":
 *     load RATE [FLAGS] a new thread dlopens $HEAPSNAP_PAYLOAD and calls
 *                       hsp_start(RATE, FLAGS), as the injector would;
 *                       prints "loaded RC"
 *     alloc             runs the patterns (several threads) and prints
 *                       "site", "expect NAME BYTES OBJECTS" (live),
 *                       "expect-alloc NAME BYTES OBJECTS" (allocated since
 *                       load), "sizes NAME S:C ..." and "asizes NAME S:C ..."
 *     dlopen LIB        loads LIB (pl_dynlib) now and allocates through it
 *     fork              forks a child that allocates and frees with the
 *                       payload inherited, checks it is inert, exits;
 *                       prints "forked STATUS"
 *     unload            a new thread calls hsp_prepare_unload() and, if it
 *                       returned 0, dlclose(); prints
 *                       "unloaded RC DLCLOSE_RC MAPPED"
 *     escape            keeps a copy of malloc's address as the program sees
 *                       it now (the hook's, while sampling); "escaped"
 *     call-escaped      allocates and frees through that copy; "called OK"
 *     quit              verifies every live allocation, frees, exits 0
 *   TARGET RATE         load at RATE, alloc, print, "ready"; on SIGTERM
 *                       verify and exit 0 (the injector-free smoke mode).
 * Exit status: 0 when its own heap is intact, 3 when a pattern was damaged.
 */

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PL_SITE(name) __attribute__((noinline, noclone, used, section("pl_site_" #name)))
#define PL_RANGE(name)                                         \
	extern char __start_pl_site_##name[], __stop_pl_site_##name[]
#define PL_MAXSITES 32
#define PL_MAXSIZES 48

struct pl_size {
	uint64_t size, count;
};

struct pl_site {
	const char *name;
	const void *lo, *hi;
	struct pl_size live[PL_MAXSIZES];
	int nlive;
	struct pl_size alloc[PL_MAXSIZES];
	int nalloc;
};

static struct pl_site pl_sites[PL_MAXSITES];
static int pl_nsites;
static pthread_mutex_t pl_lock = PTHREAD_MUTEX_INITIALIZER;
static void *pl_handle;
static int pl_damaged;

static struct pl_site *pl_site(const char *name, const void *lo, const void *hi)
{
	for (int i = 0; i < pl_nsites; i++)
		if (!strcmp(pl_sites[i].name, name))
			return &pl_sites[i];
	struct pl_site *s = &pl_sites[pl_nsites++];
	s->name = name;
	s->lo = lo;
	s->hi = hi;
	return s;
}

static void pl_add(struct pl_size *v, int *n, uint64_t size, int64_t count)
{
	for (int i = 0; i < *n; i++)
		if (v[i].size == size) {
			v[i].count += count;
			return;
		}
	if (*n < PL_MAXSIZES) {
		v[*n].size = size;
		v[*n].count = count;
		(*n)++;
	}
}

/* count objects of size bytes were allocated at s (and are still live). */
static void pl_truth(struct pl_site *s, uint64_t size, int64_t count, int live)
{
	pthread_mutex_lock(&pl_lock);
	pl_add(s->alloc, &s->nalloc, size, count);
	if (live)
		pl_add(s->live, &s->nlive, size, count);
	pthread_mutex_unlock(&pl_lock);
}

/* count objects of size bytes are live at s without counting as allocated
 * (the caller recorded the allocation already). */
static __attribute__((unused)) void pl_live(struct pl_site *s, uint64_t size, int64_t count)
{
	pthread_mutex_lock(&pl_lock);
	pl_add(s->live, &s->nlive, size, count);
	pthread_mutex_unlock(&pl_lock);
}

static void pl_print_sizes(const char *tag, const char *name, const struct pl_size *v, int n)
{
	printf("%s %s", tag, name);
	for (int i = 0; i < n; i++)
		if (v[i].count)
			printf(" %llu:%llu", (unsigned long long)v[i].size,
			       (unsigned long long)v[i].count);
	printf("\n");
}

static void pl_report(void)
{
	for (int i = 0; i < pl_nsites; i++) {
		struct pl_site *s = &pl_sites[i];
		uint64_t lb = 0, lo = 0, ab = 0, ao = 0;
		for (int k = 0; k < s->nlive; k++) {
			lb += s->live[k].size * s->live[k].count;
			lo += s->live[k].count;
		}
		for (int k = 0; k < s->nalloc; k++) {
			ab += s->alloc[k].size * s->alloc[k].count;
			ao += s->alloc[k].count;
		}
		printf("site %s %p %p\n", s->name, s->lo, s->hi);
		printf("expect %s %llu %llu\n", s->name, (unsigned long long)lb, (unsigned long long)lo);
		printf("expect-alloc %s %llu %llu\n", s->name, (unsigned long long)ab, (unsigned long long)ao);
		pl_print_sizes("sizes", s->name, s->live, s->nlive);
		pl_print_sizes("asizes", s->name, s->alloc, s->nalloc);
	}
}

/* A pattern at both ends of each block, checked before exit. */
static void pl_mark(void *p, size_t size, unsigned tag)
{
	if (!p || !size)
		return;
	((unsigned char *)p)[0] = (unsigned char)tag;
	((unsigned char *)p)[size - 1] = (unsigned char)(tag ^ 0x5a);
}

static void pl_check(const void *p, size_t size, unsigned tag)
{
	if (!p || !size)
		return;
	if (((const unsigned char *)p)[0] != (unsigned char)tag ||
	    ((const unsigned char *)p)[size - 1] != (unsigned char)(tag ^ 0x5a))
		pl_damaged = 1;
}

/* ---- the stand-in injector: a worker thread of our own ------------------ */

struct pl_job {
	int what;       /* 0 load, 1 unload */
	long rate, flags;
	long rc, rc2;
};

static void *pl_worker(void *arg)
{
	struct pl_job *j = (struct pl_job *)arg;
	if (j->what == 0) {
		const char *path = getenv("HEAPSNAP_PAYLOAD");
		/* One reference at most, as the injector holds. */
		if (!pl_handle)
			pl_handle = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
		if (!pl_handle) {
			fprintf(stderr, "pl: dlopen: %s\n", path ? dlerror() : "HEAPSNAP_PAYLOAD unset");
			j->rc = -ENOENT;
			return NULL;
		}
		long (*start)(long, long) = (long (*)(long, long))dlsym(pl_handle, "hsp_start");
		j->rc = start ? start(j->rate, j->flags) : -ENOENT;
	} else {
		long (*prep)(void) = pl_handle ? (long (*)(void))dlsym(pl_handle, "hsp_prepare_unload") : NULL;
		j->rc = prep ? prep() : -ENOENT;
		j->rc2 = -1;
		if (j->rc == 0) {
			j->rc2 = dlclose(pl_handle);
			pl_handle = NULL;
		}
	}
	return NULL;
}

static long pl_run_job(struct pl_job *j)
{
	pthread_t t;
	if (pthread_create(&t, NULL, pl_worker, j) != 0)
		return -EAGAIN;
	pthread_join(t, NULL);
	return j->rc;
}

/* Does the allocator behind malloc also define `name`?  (jemalloc has no
 * pvalloc: glibc's would hand out blocks jemalloc's free cannot take.) */
static __attribute__((unused)) int pl_same_allocator(const char *name)
{
	Dl_info a, b;
	void *f = dlsym(RTLD_DEFAULT, name), *m = dlsym(RTLD_DEFAULT, "malloc");
	if (!f || !m || !dladdr(f, &a) || !dladdr(m, &b))
		return 0;
	return a.dli_fbase == b.dli_fbase;
}

/* Is the payload still in our maps? */
static int pl_payload_mapped(void)
{
	const char *path = getenv("HEAPSNAP_PAYLOAD");
	char line[4096];
	int found = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f || !path)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, path))
			found = 1;
	fclose(f);
	return found;
}

/* The child of `fork`: the payload came along, inert; allocate and free a
 * lot through the hooks, check its state, leave. */
static int pl_fork_child(void)
{
	long (*status)(void) = pl_handle ? (long (*)(void))dlsym(pl_handle, "hsp_status") : NULL;
	void *v[1000];
	if (!status || status() != 4 /* HSP_STATE_FORKED */)
		return 1;
	for (int r = 0; r < 20; r++) {
		for (int i = 0; i < 1000; i++) {
			v[i] = malloc(100 + i);
			pl_mark(v[i], 100 + i, 7);
		}
		for (int i = 0; i < 1000; i++) {
			pl_check(v[i], 100 + i, 7);
			free(v[i]);
		}
	}
	return pl_damaged ? 3 : 0;
}

/* A copy of malloc's address, taken from our GOT while it points at the
 * payload's hook (PIE code loads &malloc from its GLOB_DAT slot). */
static void *(*volatile pl_escaped)(size_t);

static __attribute__((noinline)) void pl_take_malloc(void)
{
	pl_escaped = malloc;
}

/* Implemented by each target. */
static void pl_alloc(void);
static void pl_verify_and_free(void);
static void pl_dlopen(const char *lib);

static int pl_main(int argc, char **argv)
{
	char line[4096];

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Resolve our own lazy PLT slots for dlopen/dlclose/pthread_create
	 * now, so a GOT dump before `load` is comparable with one after. */
	dlclose(dlopen(NULL, RTLD_NOW));
	if (argc > 1 && strcmp(argv[1], "cmd")) {
		struct pl_job j = { 0, atol(argv[1]), argc > 2 ? atol(argv[2]) : 0, 0, 0 };
		sigset_t set;
		int sig;
		sigemptyset(&set);
		sigaddset(&set, SIGTERM);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
		if (pl_run_job(&j) != 0) {
			printf("loaded %ld\n", j.rc);
			return 1;
		}
		pl_alloc();
		pl_report();
		printf("ready\n");
		sigwait(&set, &sig);
		pl_verify_and_free();
		return pl_damaged ? 3 : 0;
	}
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		char cmd[64] = "", arg[4000] = "";
		long a = 0, b = 0;
		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%63s %3999s", cmd, arg) < 1)
			continue;
		if (!strcmp(cmd, "load")) {
			sscanf(line, "%*s %ld %ld", &a, &b);
			struct pl_job j = { 0, a, b, 0, 0 };
			pl_run_job(&j);
			printf("loaded %ld\n", j.rc);
		} else if (!strcmp(cmd, "alloc")) {
			pl_alloc();
			pl_report();
		} else if (!strcmp(cmd, "dlopen")) {
			pl_dlopen(arg);
			pl_report();
		} else if (!strcmp(cmd, "fork")) {
			pid_t c = fork();
			if (c == 0)
				_exit(pl_fork_child());
			int st = -1;
			if (c > 0)
				waitpid(c, &st, 0);
			printf("forked %d\n", c > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		} else if (!strcmp(cmd, "unload")) {
			struct pl_job j = { 1, 0, 0, 0, 0 };
			pl_run_job(&j);
			printf("unloaded %ld %ld %d\n", j.rc, j.rc2, pl_payload_mapped());
		} else if (!strcmp(cmd, "escape")) {
			pl_take_malloc();
			printf("escaped\n");
		} else if (!strcmp(cmd, "call-escaped")) {
			void *p = pl_escaped ? pl_escaped(100) : NULL;
			pl_mark(p, 100, 9);
			pl_check(p, 100, 9);
			free(p);
			printf("called %s\n", p && !pl_damaged ? "OK" : "FAILED");
		} else if (!strcmp(cmd, "quit")) {
			pl_verify_and_free();
			printf("done quit\n");
			return pl_damaged ? 3 : 0;
		} else {
			printf("unknown %s\n", cmd);
		}
		printf("done %s\n", cmd);
	}
	pl_verify_and_free();
	return pl_damaged ? 3 : 0;
}

#endif
