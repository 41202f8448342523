/* demo_service.c - the `make demo` victim: a toy request server that leaks in cache_insert and churns elsewhere. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* Usage: demo_service [SECONDS]  (default 60; it exits by itself after that)
 *
 * Each "request" (about 500 a second) parses a query, renders a response in
 * a temporary buffer, appends a latency sample to a realloc-grown vector
 * that is flushed every 4096 samples, and caches the response in a cache
 * that never evicts: the leak, about 150 KB a second, all from
 * cache_insert().  Everything else is freed again (churn). */

#define NOINLINE __attribute__((noinline))

struct cache_entry {
	struct cache_entry *next;
	char *key;
	size_t len;
	char body[];
};

static struct cache_entry *cache;       /* grows forever: nobody evicts */
static size_t cache_entries;
static double *latencies;               /* realloc-grown, flushed now and then */
static size_t nlat, caplat;
static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* The leak: every response is kept, keyed by its query. */
static NOINLINE void cache_insert(const char *key, const char *body, size_t len)
{
	struct cache_entry *e = malloc(sizeof(*e) + len);
	size_t klen = strlen(key) + 1;

	if (!e)
		return;
	if ((e->key = malloc(klen)))
		memcpy(e->key, key, klen);
	e->len = len;
	memcpy(e->body, body, len);
	e->next = cache;
	cache = e;
	cache_entries++;
}

/* Churn: tokens allocated and freed within the request. */
static NOINLINE unsigned parse_request(const char *query)
{
	char *copy = strdup(query), *save = NULL, *tok;
	char **toks = calloc(16, sizeof(*toks));
	unsigned n = 0, h = 0;

	for (tok = strtok_r(copy, "&", &save); tok && n < 16; tok = strtok_r(NULL, "&", &save))
		toks[n++] = strdup(tok);
	for (unsigned i = 0; i < n; i++) {
		h = h * 31 + (unsigned char)toks[i][0];
		free(toks[i]);
	}
	free(toks);
	free(copy);
	return h;
}

/* Churn: a big temporary buffer per response (4-64 KiB), freed at once. */
static NOINLINE size_t render_response(unsigned h, char *out, size_t outlen)
{
	size_t sz = 4096u << (h % 5);
	char *buf = malloc(sz);
	size_t n;

	if (!buf)
		return 0;
	memset(buf, 'a' + h % 26, sz);
	n = (size_t)snprintf(out, outlen, "<html>%u %.200s</html>", h, buf);
	free(buf);
	return n < outlen ? n : outlen - 1;
}

/* Churn: a vector that doubles with realloc, emptied every 4096 samples. */
static NOINLINE void record_latency(double ms)
{
	if (nlat == caplat) {
		size_t ncap = caplat ? caplat * 2 : 64;
		double *nv = realloc(latencies, ncap * sizeof(*nv));
		if (!nv)
			return;
		latencies = nv;
		caplat = ncap;
	}
	latencies[nlat++] = ms;
	if (nlat == 4096) {
		free(latencies);
		latencies = NULL;
		nlat = caplat = 0;
	}
}

static NOINLINE void handle_request(unsigned long id)
{
	char query[96], body[256];
	unsigned h;
	size_t n;

	snprintf(query, sizeof(query), "user=%lu&page=%lu&lang=en&sort=%lu", id % 977, id, id % 7);
	h = parse_request(query);
	n = render_response(h, body, sizeof(body));
	cache_insert(query, body, n + 1);
	record_latency((double)(h % 1000) / 10.0);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 60;
	struct timespec start, now, nap = { 0, 2000000 }; /* 2 ms between requests */
	unsigned long id = 0;

	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	/* Let a non-root heapsnap that is not our parent attach under Yama
	 * ptrace_scope 1 (`make demo` starts us beside heapsnap). */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid %d, serving for %.0f s\n", (int)getpid(), secs);
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!stop) {
		handle_request(id++);
		nanosleep(&nap, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 >= secs)
			break;
	}
	printf("served %lu requests, %zu cached entries\n", id, cache_entries);
	return 0;
}
