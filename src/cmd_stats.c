/* cmd_stats.c - `heapsnap stats PID` (allocator and RSS figures, no sampling) and `heapsnap trim PID` (give free memory back). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "astats.h"
#include "cmd.h"
#include "cmd_live.h"
#include "cmd_report.h"
#include "hs.h"
#include "json.h"
#include "livectl.h"

struct stats_result {
	int pid;
	struct astats a;
	struct astats_proc before;      /* trim: before */
	bool trim;
};

static double mib(uint64_t v)
{
	return v / 1048576.0;
}

/* Asks the payload (loading it for the moment when needed), then the
 * kernel.  Returns an hs_exit, messages printed. */
static int gather(const struct cmd_live *o, int op, struct stats_result *r)
{
	char reason[LIVECTL_REASONLEN];
	bool left = false;
	int ret = astats_ask(o->pid, HSP_SYM_ALLOC_STATS, (uint64_t)op, 0, o->timeout_ms, &r->a, &left,
			     reason);

	if (ret)
		return cmd_live_step_error(o, "ask the allocator", ret, left, reason);
	ret = astats_read_proc(o->pid, &r->a.proc);
	if (ret) {
		hs_err("cannot read the figures of pid %d: %s", o->pid, strerror(-ret));
		return HS_FAIL;
	}
	astats_summarize(&r->a);
	return HS_OK;
}

static void json_proc(struct json *j, const char *key, const struct astats_proc *p)
{
	json_key(j, key);
	json_obj_open(j);
	json_kv_uint(j, "rss", p->rss);
	json_kv_uint(j, "rss_anon", p->rss_anon);
	json_kv_uint(j, "rss_file", p->rss_file);
	json_kv_uint(j, "rss_shmem", p->rss_shmem);
	json_kv_uint(j, "hwm", p->hwm);
	json_kv_uint(j, "vm_size", p->vm_size);
	json_kv_uint(j, "pss", p->pss);
	json_kv_uint(j, "anonymous", p->anonymous);
	json_kv_uint(j, "private_dirty", p->private_dirty);
	json_kv_uint(j, "private_clean", p->private_clean);
	json_kv_uint(j, "shared_clean", p->shared_clean);
	json_kv_uint(j, "shared_dirty", p->shared_dirty);
	json_kv_uint(j, "swap", p->swap);
	json_kv_uint(j, "heap_rss", p->heap_rss);
	json_obj_close(j);
}

static int fill_json(FILE *f, void *ctx)
{
	const struct stats_result *r = ctx;
	const struct astats *a = &r->a;
	const struct astats_summary *s = &a->sum;
	struct json j;

	json_begin(&j, f);
	json_obj_open(&j);
	json_kv_int(&j, "pid", r->pid);
	if (r->trim) {
		json_proc(&j, "before", &r->before);
		json_proc(&j, "after", &a->proc);
		json_kv_int(&j, "rss_change", (int64_t)a->proc.rss - (int64_t)r->before.rss);
	} else {
		json_proc(&j, "process", &a->proc);
	}
	json_kv_str(&j, "allocator", s->allocator);
	json_kv_str(&j, "malloc_module", astats_get(a, "malloc.module"));
	if (s->have_live) {
		json_kv_uint(&j, "live_bytes", s->live);
		json_kv_int(&j, "rss_minus_live", (int64_t)a->proc.rss - (int64_t)s->live);
	}
	json_kv_uint(&j, "allocator_held", s->held);
	json_kv_uint(&j, "allocator_free", s->free_inside);
	json_kv_uint(&j, "allocator_releasable", s->releasable);
	json_key(&j, "figures");
	json_obj_open(&j);
	for (size_t i = 0; i < a->n; i++) {
		uint64_t v;
		if (!strcmp(a->kv[i].key, "malloc.module"))
			continue;
		if (astats_num(a, a->kv[i].key, &v))
			json_kv_uint(&j, a->kv[i].key, v);
		else
			json_kv_str(&j, a->kv[i].key, a->kv[i].val);
	}
	json_obj_close(&j);
	json_obj_close(&j);
	return json_end(&j);
}

/* One line per figure of one allocator family ("glibc." ...). */
static void print_family(const struct astats *a, const char *prefix, const char *title)
{
	size_t plen = strlen(prefix);
	bool any = false;

	for (size_t i = 0; i < a->n; i++) {
		if (strncmp(a->kv[i].key, prefix, plen))
			continue;
		if (!any)
			printf("%s\n", title);
		any = true;
		uint64_t v;
		const char *k = a->kv[i].key + plen;
		if (astats_num(a, a->kv[i].key, &v) && v >= 4096)
			printf("  %-40s %14llu  (%.1f MiB)\n", k, (unsigned long long)v, mib(v));
		else
			printf("  %-40s %14s\n", k, a->kv[i].val);
	}
}

static void print_stats(const struct stats_result *r)
{
	const struct astats *a = &r->a;
	const struct astats_proc *p = &a->proc;
	const struct astats_summary *s = &a->sum;
	const char *mod = astats_get(a, "malloc.module");

	printf("pid %d: RSS %.1f MiB (peak %.1f MiB): anonymous %.1f MiB, file %.1f MiB, shmem %.1f MiB\n",
	       r->pid, mib(p->rss), mib(p->hwm), mib(p->rss_anon), mib(p->rss_file), mib(p->rss_shmem));
	printf("  private dirty %.1f MiB, brk heap %.1f MiB resident, swap %.1f MiB, PSS %.1f MiB\n",
	       mib(p->private_dirty), mib(p->heap_rss), mib(p->swap), mib(p->pss));
	printf("allocator: %s%s%s%s\n", s->allocator, mod && *mod ? " (malloc from " : "",
	       mod && *mod ? mod : "", mod && *mod ? ")" : "");
	if (s->have_live) {
		printf("  live (allocated, not freed)  %10.1f MiB\n", mib(s->live));
		printf("  held by the allocator        %10.1f MiB\n", mib(s->held));
		printf("  free inside the allocator    %10.1f MiB (fragmentation and caches; %.1f MiB "
		       "returnable now)\n", mib(s->free_inside), mib(s->releasable));
		int64_t gap = (int64_t)p->rss_anon - (int64_t)s->live;
		if (gap > 0) {
			uint64_t other = (uint64_t)gap > s->free_inside ? (uint64_t)gap - s->free_inside : 0;
			printf("gap: anonymous RSS is %.1f MiB more than the live heap: %.1f MiB sit free in "
			       "the allocator (fragmentation, per-thread and page caches), %.1f MiB are other "
			       "anonymous memory (thread stacks, allocator metadata, mmaps outside malloc)%s\n",
			       mib((uint64_t)gap), mib(s->free_inside < (uint64_t)gap ? s->free_inside : (uint64_t)gap),
			       mib(other), s->free_inside >= (1 << 20) ? "; 'heapsnap trim' can return some" : "");
		} else {
			printf("gap: none: the live heap (%.1f MiB) is not smaller than anonymous RSS (%.1f MiB); "
			       "untouched or swapped-out allocations are not resident\n",
			       mib(s->live), mib(p->rss_anon));
		}
	}
	print_family(a, "glibc.", "glibc (mallinfo2, malloc_info):");
	print_family(a, "jemalloc.", "jemalloc (mallctl, after epoch):");
	print_family(a, "tcmalloc.", "tcmalloc (MallocExtension_GetNumericProperty):");
	print_family(a, "mimalloc.", "mimalloc (mi_process_info):");
	print_family(a, "gperftools.", "gperftools:");
}

static int emit(struct stats_result *r)
{
	int ret = cmd_report_emit(fill_json, r);
	if (ret)
		hs_err("cannot write the result: %s", strerror(-ret));
	return ret ? HS_FAIL : HS_OK;
}

int do_stats(int argc, char **argv)
{
	struct cmd_live o;
	struct stats_result r = { 0 };
	int ret = cmd_live_parse(&o, "stats", argc, argv, 0);

	if (ret)
		return ret;
	if (optind != argc)
		return hs_usage_err("stats", "too many operands");
	r.pid = o.pid;
	ret = gather(&o, HSP_STATS_GET, &r);
	if (!ret) {
		if (opt_json)
			ret = emit(&r);
		else
			print_stats(&r);
	}
	astats_free(&r.a);
	return ret;
}

static void print_trim(const struct stats_result *r)
{
	const struct astats *a = &r->a;
	int64_t d = (int64_t)a->proc.rss - (int64_t)r->before.rss;
	static const char *const what[][2] = {
		{ "trim.glibc", "glibc malloc_trim(0)" },
		{ "trim.jemalloc", "jemalloc arena.<all>.purge" },
		{ "trim.tcmalloc", "tcmalloc ReleaseFreeMemory" },
		{ "trim.mimalloc", "mimalloc mi_collect(true)" },
	};

	printf("pid %d: RSS %.1f MiB -> %.1f MiB (%s%.1f MiB), anonymous %.1f MiB -> %.1f MiB\n", r->pid,
	       mib(r->before.rss), mib(a->proc.rss), d <= 0 ? "-" : "+",
	       mib((uint64_t)(d < 0 ? -d : d)), mib(r->before.rss_anon), mib(a->proc.rss_anon));
	bool any = false;
	for (size_t i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
		const char *v = astats_get(a, what[i][0]);
		if (!v)
			continue;
		any = true;
		printf("  asked %s (returned %s)\n", what[i][1], v);
	}
	if (!any)
		printf("  no allocator there knows how to trim (%s)\n", r->a.sum.allocator);
}

int do_trim(int argc, char **argv)
{
	struct cmd_live o;
	struct stats_result r = { .trim = true };
	int ret = cmd_live_parse(&o, "trim", argc, argv, 0);

	if (ret)
		return ret;
	if (optind != argc)
		return hs_usage_err("trim", "too many operands");
	r.pid = o.pid;
	ret = astats_read_proc(o.pid, &r.before);
	if (ret) {
		hs_err("cannot read pid %d: %s", o.pid, ret == -ESRCH ? "no such process" : strerror(-ret));
		return HS_FAIL;
	}
	ret = gather(&o, HSP_STATS_TRIM, &r);
	if (!ret) {
		if (opt_json)
			ret = emit(&r);
		else if (!opt_quiet)
			print_trim(&r);
	}
	astats_free(&r.a);
	return ret;
}
