/* astats.c - allocator and RSS figures of a live process: the payload's "key value" text, /proc/PID/smaps_rollup and status, and what they mean together. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "astats.h"
#include "livectl.h"

int astats_parse(struct astats *a, const char *text)
{
	const char *p = text;
	size_t cap = 0;

	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		const char *sp = memchr(p, ' ', len);
		if (sp && sp > p) {
			if (a->n == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				struct astats_kv *nk = realloc(a->kv, ncap * sizeof(*nk));
				if (!nk)
					goto nomem;
				a->kv = nk;
				cap = ncap;
			}
			char *k = strndup(p, (size_t)(sp - p));
			char *v = strndup(sp + 1, len - (size_t)(sp - p) - 1);
			if (!k || !v) {
				free(k);
				free(v);
				goto nomem;
			}
			a->kv[a->n++] = (struct astats_kv){ k, v };
		}
		p += len + (eol ? 1 : 0);
	}
	return 0;
nomem:
	astats_free(a);
	return -ENOMEM;
}

void astats_free(struct astats *a)
{
	for (size_t i = 0; i < a->n; i++) {
		free(a->kv[i].key);
		free(a->kv[i].val);
	}
	free(a->kv);
	a->kv = NULL;
	a->n = 0;
}

const char *astats_get(const struct astats *a, const char *key)
{
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->kv[i].key, key))
			return a->kv[i].val;
	return NULL;
}

bool astats_num(const struct astats *a, const char *key, uint64_t *v)
{
	const char *s = astats_get(a, key);
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	unsigned long long x = strtoull(s, &end, 10);
	if (*end)
		return false;
	*v = x;
	return true;
}

/* "Name:   1234 kB" lines: the value of `name` in bytes into *out. */
static void kb_field(const char *line, const char *name, uint64_t *out)
{
	size_t n = strlen(name);
	if (strncmp(line, name, n) || line[n] != ':')
		return;
	*out = strtoull(line + n + 1, NULL, 10) * 1024;
}

int astats_read_proc(int pid, struct astats_proc *p)
{
	char path[64], line[512];
	FILE *f;

	memset(p, 0, sizeof(*p));
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		kb_field(line, "VmRSS", &p->rss);
		kb_field(line, "VmHWM", &p->hwm);
		kb_field(line, "VmSize", &p->vm_size);
		kb_field(line, "RssAnon", &p->rss_anon);
		kb_field(line, "RssFile", &p->rss_file);
		kb_field(line, "RssShmem", &p->rss_shmem);
	}
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", pid);
	f = fopen(path, "re");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			kb_field(line, "Pss", &p->pss);
			kb_field(line, "Private_Dirty", &p->private_dirty);
			kb_field(line, "Private_Clean", &p->private_clean);
			kb_field(line, "Shared_Clean", &p->shared_clean);
			kb_field(line, "Shared_Dirty", &p->shared_dirty);
			kb_field(line, "Anonymous", &p->anonymous);
			kb_field(line, "Swap", &p->swap);
		}
		fclose(f);
	}
	/* The brk heap alone: glibc's main arena lives there. */
	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	f = fopen(path, "re");
	if (f) {
		bool in_heap = false;
		while (fgets(line, sizeof(line), f)) {
			size_t len = strlen(line);
			if (len && line[0] >= '0' && strchr(line, '-') && strchr(line, ' ') &&
			    strchr(line, '-') < strchr(line, ' ')) {
				in_heap = len > 7 && strstr(line, " [heap]\n");
				continue;
			}
			if (in_heap)
				kb_field(line, "Rss", &p->heap_rss);
		}
		fclose(f);
	}
	return 0;
}

void astats_summarize(struct astats *a)
{
	struct astats_summary *s = &a->sum;
	const char *mod = astats_get(a, "malloc.module");
	uint64_t v, w;

	memset(s, 0, sizeof(*s));
	s->allocator = "unknown";
	if (astats_num(a, "jemalloc.stats.allocated", &v) && (!mod || !strstr(mod, "libc.so"))) {
		s->allocator = "jemalloc";
		s->have_live = true;
		s->live = v;
		astats_num(a, "jemalloc.stats.resident", &s->held);
		if (astats_num(a, "jemalloc.stats.active", &w) && w > v)
			s->free_inside = w - v;
		/* Dirty and muzzy pages: resident, not active, not metadata. */
		uint64_t act = 0, meta = 0;
		astats_num(a, "jemalloc.stats.active", &act);
		astats_num(a, "jemalloc.stats.metadata", &meta);
		if (s->held > act + meta)
			s->releasable = s->held - act - meta;
		s->free_inside += s->releasable;
	} else if (astats_num(a, "tcmalloc.generic.current_allocated_bytes", &v)) {
		s->allocator = "tcmalloc";
		s->have_live = true;
		s->live = v;
		uint64_t heap = 0, unmapped = 0, pfree = 0, c = 0;
		astats_num(a, "tcmalloc.generic.heap_size", &heap);
		astats_num(a, "tcmalloc.tcmalloc.pageheap_unmapped_bytes", &unmapped);
		s->held = heap > unmapped ? heap - unmapped : heap;
		astats_num(a, "tcmalloc.tcmalloc.pageheap_free_bytes", &pfree);
		s->releasable = pfree;
		s->free_inside = pfree;
		if (astats_num(a, "tcmalloc.tcmalloc.central_cache_free_bytes", &c))
			s->free_inside += c;
		if (astats_num(a, "tcmalloc.tcmalloc.transfer_cache_free_bytes", &c))
			s->free_inside += c;
		if (astats_num(a, "tcmalloc.tcmalloc.thread_cache_free_bytes", &c))
			s->free_inside += c;
	} else if (astats_num(a, "glibc.uordblks", &v)) {
		s->allocator = "glibc";
		s->have_live = true;
		uint64_t hblkhd = 0, arena = 0;
		astats_num(a, "glibc.hblkhd", &hblkhd);
		astats_num(a, "glibc.arena", &arena);
		s->live = v + hblkhd;
		s->held = arena + hblkhd;
		astats_num(a, "glibc.fordblks", &s->free_inside);
		astats_num(a, "glibc.keepcost", &s->releasable);
	} else if (astats_num(a, "mimalloc.current_commit", &v)) {
		s->allocator = "mimalloc";
		s->held = v;
	}
}

int astats_ask(int pid, const char *sym, uint64_t op, uint64_t arg, int timeout_ms, struct astats *a,
	       bool *left_loaded, char reason[256])
{
	uint64_t args[2] = { op, arg };
	char *text = NULL;
	int ret = livectl_ask(pid, sym, args, 2, timeout_ms, &text, left_loaded, reason);

	if (ret)
		return ret;
	memset(a, 0, sizeof(*a));
	ret = astats_parse(a, text);
	free(text);
	if (ret)
		snprintf(reason, LIVECTL_REASONLEN, "out of memory");
	return ret;
}

