/* shell.c - the interactive heapsnap shell: snapshots, reports and live control at a readline prompt (the only user of readline). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "abi.h"
#include "cmd.h"
#include "cmd_live.h"
#include "cmd_report.h"
#include "format.h"
#include "hs.h"
#include "injector.h"
#include "live.h"
#include "report.h"
#include "shell.h"

#define SH_PROMPT "(heapsnap) "
#define SH_MAXARGS 32
#define SH_HISTORY_MAX 1000

struct snap {
	char *name;
	char *origin;           /* "pid 42 at 12:00:01Z" or the file path */
	struct profile *p;
};

struct sh {
	struct cmd_live live;   /* pid 0: offline */
	bool alive;             /* the target was alive when last looked at */
	bool tty;
	struct snap *snaps;
	size_t nsnaps;
	size_t cur;             /* current snapshot (reports), valid if nsnaps */
	unsigned next_seq;      /* for default names s1, s2, ... */
	/* report settings */
	int type;               /* enum prof_type */
	char *focus, *ignore;
	int unit;               /* enum rep_unit */
	int gran;               /* enum rep_gran */
	char *history;          /* history file or NULL */
	int exit_rc;            /* of quit's unload */
};

/* What a command's return means to the loop. */
enum { SH_OK = 0, SH_ERR = -1, SH_EXIT = 100 };

static volatile sig_atomic_t sh_sigint, sh_sigterm;

static void on_signal(int sig)
{
	if (sig == SIGINT)
		sh_sigint = 1;
	else
		sh_sigterm = 1;
}

/* ---- snapshots ---- */

static struct snap *snap_find(struct sh *s, const char *name)
{
	for (size_t i = 0; i < s->nsnaps; i++)
		if (!strcmp(s->snaps[i].name, name))
			return &s->snaps[i];
	return NULL;
}

static bool name_ok(const char *n)
{
	if (!*n || strlen(n) > 64)
		return false;
	for (; *n; n++)
		if (!(isalnum((unsigned char)*n) || *n == '_' || *n == '-' || *n == '.'))
			return false;
	return true;
}

/* The next free default name s<N>. */
static void default_name(struct sh *s, char *buf, size_t len)
{
	do
		snprintf(buf, len, "s%u", ++s->next_seq);
	while (snap_find(s, buf));
}

/* Takes ownership of p. */
static struct snap *snap_add(struct sh *s, const char *name, const char *origin, struct profile *p)
{
	struct snap *n = realloc(s->snaps, (s->nsnaps + 1) * sizeof(*n));

	if (!n) {
		prof_free(p);
		return NULL;
	}
	s->snaps = n;
	n = &s->snaps[s->nsnaps];
	n->name = strdup(name);
	n->origin = strdup(origin);
	n->p = p;
	if (!n->name || !n->origin) {
		free(n->name);
		free(n->origin);
		prof_free(p);
		return NULL;
	}
	s->cur = s->nsnaps++;
	return n;
}

static void fmt_bytes(char *buf, size_t len, int64_t v)
{
	rep_fmt_value(buf, len, v, "bytes", REP_UNIT_AUTO);
}

static void print_snap_line(const struct snap *sn)
{
	char b[32];

	fmt_bytes(b, sizeof(b), prof_total(sn->p, PT_INUSE_SPACE));
	printf("%s: %zu stacks, %s in use (estimated), %s\n", sn->name, sn->p->nsamples, b, sn->origin);
}

/* ---- the target ---- */

/* Has the target gone (exited, or a zombie nobody reaped)? */
static bool pid_gone(int pid)
{
	char buf[1024];

	if (kill(pid, 0) && errno == ESRCH)
		return true;
	const char *st = inj_task_stat(pid, pid, buf, sizeof(buf));
	return !st || *st == 'Z' || *st == 'X';
}

/* Says once that the target went away; the shell goes on offline. */
static void check_target(struct sh *s)
{
	if (s->live.pid && s->alive && pid_gone(s->live.pid)) {
		s->alive = false;
		hs_err("target pid %d exited; snapshots kept for analysis", s->live.pid);
	}
}

static bool need_live(struct sh *s)
{
	if (!s->live.pid) {
		hs_err("no live process: this shell works on files (heapsnap attach PID for one)");
		return false;
	}
	check_target(s);
	if (!s->alive) {
		hs_err("target pid %d has exited; only the snapshots are left", s->live.pid);
		return false;
	}
	return true;
}

static bool need_snaps(struct sh *s, size_t n)
{
	if (s->nsnaps >= n)
		return true;
	if (n == 1)
		hs_err("no snapshot yet (%s)", s->live.pid ? "take one with 'snapshot'" : "load one with 'load FILE'");
	else
		hs_err("diff needs two snapshots (have %zu); or name them: diff A B", s->nsnaps);
	return false;
}

/* Runs a CLI command's entry point (start, status, stats, stop) for the
 * target, with --rate RATE when rate is not NULL. */
static int run_cli(struct sh *s, int (*fn)(int, char **), const char *name, const char *rate)
{
	char pid[16];
	char *argv[] = { (char *)name, pid, "--rate", (char *)rate, NULL };

	snprintf(pid, sizeof(pid), "%d", s->live.pid);
	optind = 0;
	int rc = fn(rate ? 4 : 2, argv);
	fflush(stdout);
	return rc;
}

/* ---- reports ---- */

static int fill_view(FILE *f, void *ctx)
{
	const struct rep_view *v = ctx;
	return opt_json ? rep_print_json(v, f) : rep_print(v, f);
}

/* Builds and prints a view of sn under the shell's settings (o's kind and
 * per-command fields already set). */
static int show(struct sh *s, const struct snap *sn, struct rep_opts *o)
{
	struct rep_view *v = NULL;
	char err[REP_ERRLEN];
	int rc;

	o->type = s->type;
	if (!o->focus)
		o->focus = s->focus;
	o->ignore = s->ignore;
	o->unit = s->unit;
	if (o->kind != REP_LIST)
		o->gran = s->gran;
	o->name = sn->name;
	rc = rep_build(sn->p, o, &v, err);
	if (rc == -ENODATA) {
		hs_err("no %s values in %s (it has inuse_space and inuse_objects only)",
		       prof_type_name(s->type), sn->p->has_alloc ? o->base_name : sn->name);
		return SH_ERR;
	}
	if (rc) {
		hs_err("%s", err);
		return SH_ERR;
	}
	if (sh_sigint) {
		rep_free(v);
		return SH_ERR;
	}
	rc = cmd_report_emit(fill_view, v);
	rep_free(v);
	if (rc) {
		hs_err("cannot write the report: %s", strerror(-rc));
		return SH_ERR;
	}
	return SH_OK;
}

static bool parse_count(const char *a, int *n)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(a, &end, 10);
	if (errno || *end || end == a || v < 0 || v > 1000000)
		return false;
	*n = (int)v;
	return true;
}

/* ---- commands ---- */

static int c_snapshot(struct sh *s, int argc, char **argv)
{
	char name[80], origin[64];
	struct profile *p = NULL;
	struct tm tm;
	time_t now;

	if (argc > 2)
		return hs_err("usage: snapshot [NAME]"), SH_ERR;
	if (argc == 2 && (!name_ok(argv[1]) || snap_find(s, argv[1]))) {
		hs_err(snap_find(s, argv[1]) ? "a snapshot named '%s' exists already"
		       : "bad snapshot name '%s' (letters, digits, '_', '-', '.')", argv[1]);
		return SH_ERR;
	}
	if (!need_live(s))
		return SH_ERR;
	int ret = cmd_live_take(s->live.pid, &p);
	if (ret) {
		check_target(s);
		if (ret == -EINTR || sh_sigint)
			return SH_ERR;
		if (ret == -ENOENT)
			hs_err("pid %d is not sampling: heapsnap is not loaded (run 'start')", s->live.pid);
		else
			cmd_live_conn_error(&s->live, ret);
		return SH_ERR;
	}
	if (sh_sigint) {
		prof_free(p);
		return SH_ERR;
	}
	if (argc == 2)
		snprintf(name, sizeof(name), "%s", argv[1]);
	else
		default_name(s, name, sizeof(name));
	now = time(NULL);
	gmtime_r(&now, &tm);
	snprintf(origin, sizeof(origin), "pid %d at %02d:%02d:%02dZ", s->live.pid, tm.tm_hour,
		 tm.tm_min, tm.tm_sec);
	struct snap *sn = snap_add(s, name, origin, p);
	if (!sn)
		return hs_err("out of memory"), SH_ERR;
	print_snap_line(sn);
	return SH_OK;
}

static int c_snapshots(struct sh *s, int argc, char **argv)
{
	(void)argc; (void)argv;
	if (!s->nsnaps) {
		printf("no snapshots\n");
		return SH_OK;
	}
	printf("  %-12s %8s %10s  %s\n", "NAME", "STACKS", "INUSE", "FROM");
	for (size_t i = 0; i < s->nsnaps; i++) {
		char b[32];
		fmt_bytes(b, sizeof(b), prof_total(s->snaps[i].p, PT_INUSE_SPACE));
		printf("%c %-12s %8zu %10s  %s\n", i == s->cur ? '*' : ' ', s->snaps[i].name,
		       s->snaps[i].p->nsamples, b, s->snaps[i].origin);
	}
	return SH_OK;
}

static int c_use(struct sh *s, int argc, char **argv)
{
	struct snap *sn;

	if (argc != 2)
		return hs_err("usage: use NAME"), SH_ERR;
	if (!(sn = snap_find(s, argv[1])))
		return hs_err("no snapshot named '%s' (see 'snapshots')", argv[1]), SH_ERR;
	s->cur = (size_t)(sn - s->snaps);
	print_snap_line(sn);
	return SH_OK;
}

/* top and tree: [N] [-cum] [REGEX] */
static int c_top_tree(struct sh *s, int argc, char **argv, enum rep_kind kind)
{
	struct rep_opts o;

	rep_opts_init(&o, kind);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-cum") || !strcmp(argv[i], "--cum"))
			o.cum_sort = true;
		else if (parse_count(argv[i], &o.nodecount))
			;
		else if (!o.focus && argv[i][0] != '-')
			o.focus = argv[i];
		else
			return hs_err("usage: %s [N] [-cum] [REGEX]", argv[0]), SH_ERR;
	}
	if (!need_snaps(s, 1))
		return SH_ERR;
	return show(s, &s->snaps[s->cur], &o);
}

static int c_top(struct sh *s, int argc, char **argv)
{
	return c_top_tree(s, argc, argv, REP_TOP);
}

static int c_tree(struct sh *s, int argc, char **argv)
{
	return c_top_tree(s, argc, argv, REP_TREE);
}

static int c_symbol(struct sh *s, int argc, char **argv, enum rep_kind kind)
{
	struct rep_opts o;

	if (argc != 2)
		return hs_err("usage: %s REGEX", argv[0]), SH_ERR;
	if (!need_snaps(s, 1))
		return SH_ERR;
	rep_opts_init(&o, kind);
	o.symbol = argv[1];
	return show(s, &s->snaps[s->cur], &o);
}

static int c_list(struct sh *s, int argc, char **argv)
{
	return c_symbol(s, argc, argv, REP_LIST);
}

static int c_peek(struct sh *s, int argc, char **argv)
{
	return c_symbol(s, argc, argv, REP_PEEK);
}

static int c_diff(struct sh *s, int argc, char **argv)
{
	struct snap *a, *b;
	struct rep_opts o;

	if (argc != 1 && argc != 3)
		return hs_err("usage: diff [BASE NEW]"), SH_ERR;
	if (argc == 1) {
		if (!need_snaps(s, 2))
			return SH_ERR;
		a = &s->snaps[s->nsnaps - 2];
		b = &s->snaps[s->nsnaps - 1];
	} else {
		a = snap_find(s, argv[1]);
		b = snap_find(s, argv[2]);
		if (!a || !b)
			return hs_err("no snapshot named '%s' (see 'snapshots')", argv[a ? 2 : 1]), SH_ERR;
	}
	rep_opts_init(&o, REP_DIFF);
	o.base = a->p;
	o.base_name = a->name;
	return show(s, b, &o);
}

/* focus/ignore: set, or clear without an argument. */
static int c_filter(int argc, char **argv, char **slot)
{
	if (argc > 2)
		return hs_err("usage: %s [REGEX]", argv[0]), SH_ERR;
	char *v = argc == 2 ? strdup(argv[1]) : NULL;
	if (argc == 2 && !v)
		return hs_err("out of memory"), SH_ERR;
	free(*slot);
	*slot = v;
	if (v)
		printf("%s: %s\n", argv[0], v);
	else
		printf("%s cleared\n", argv[0]);
	return SH_OK;
}

static int c_focus(struct sh *s, int argc, char **argv)
{
	return c_filter(argc, argv, &s->focus);
}

static int c_ignore(struct sh *s, int argc, char **argv)
{
	return c_filter(argc, argv, &s->ignore);
}

/* sample_index, unit, granularity: set *slot from argv[1] through parse
 * (valid lists the values for the message); no argument just shows it. */
static int c_setting(int argc, char **argv, int *slot, int (*parse)(const char *), const char *valid)
{
	if (argc > 2)
		return hs_err("usage: %s [VALUE]", argv[0]), SH_ERR;
	if (argc == 2) {
		int v = parse(argv[1]);
		if (v < 0)
			return hs_err("unknown %s '%s' (valid: %s)", argv[0], argv[1], valid), SH_ERR;
		*slot = v;
	}
	return SH_OK;
}

static int c_sample_index(struct sh *s, int argc, char **argv)
{
	int rc = c_setting(argc, argv, &s->type, prof_type_parse,
			   "inuse_space, inuse_objects, alloc_space, alloc_objects");
	if (!rc)
		printf("sample_index: %s\n", prof_type_name(s->type));
	return rc;
}

static int c_unit(struct sh *s, int argc, char **argv)
{
	int rc = c_setting(argc, argv, &s->unit, rep_parse_unit, "minimum, auto, B, kB, MB, GB");
	if (!rc)
		printf("unit: %s\n", rep_unit_name(s->unit));
	return rc;
}

static int c_granularity(struct sh *s, int argc, char **argv)
{
	int rc = c_setting(argc, argv, &s->gran, rep_parse_gran, "functions, lines, files, addresses");
	if (!rc)
		printf("granularity: %s\n", rep_gran_name(s->gran));
	return rc;
}

static int c_status(struct sh *s, int argc, char **argv)
{
	(void)argc; (void)argv;
	if (!need_live(s))
		return SH_ERR;
	return run_cli(s, do_status, "status", NULL) ? SH_ERR : SH_OK;
}

/* `heapsnap stats PID` for a live target, then the current snapshot's
 * totals. */
static int c_stats(struct sh *s, int argc, char **argv)
{
	int rc = SH_OK;

	(void)argc; (void)argv;
	check_target(s);
	if (s->live.pid && s->alive && run_cli(s, do_stats, "stats", NULL))
		rc = SH_ERR;
	if (s->nsnaps) {
		const struct snap *sn = &s->snaps[s->cur];
		printf("%s (%s):\n", sn->name, sn->origin);
		for (int t = PT_NTYPES - 1; t >= 0; t--) {
			if ((t == PT_ALLOC_SPACE || t == PT_ALLOC_OBJECTS) && !sn->p->has_alloc)
				continue;
			char b[32];
			rep_fmt_value(b, sizeof(b), prof_total(sn->p, t), prof_type_unit(t), REP_UNIT_AUTO);
			printf("  %-16s %s\n", prof_type_name(t), b);
		}
		printf("  %-16s %zu\n", "stacks", sn->p->nsamples);
		if (sn->p->period)
			printf("  %-16s %lld bytes\n", "rate", (long long)sn->p->period);
	} else if (!s->live.pid || !s->alive) {
		printf("no snapshots\n");
	}
	return rc;
}

/* Connects to the payload; prints why not.  NULL on failure, *err set. */
static struct live_conn *conn(struct sh *s, int *err)
{
	struct live_conn *c = NULL;

	*err = live_connect(s->live.pid, &c);
	if (*err && *err != -ENOENT)
		cmd_live_conn_error(&s->live, *err);
	return *err ? NULL : c;
}

/* need_live, then conn; says so when heapsnap is not running. */
static struct live_conn *payload_conn(struct sh *s)
{
	struct live_conn *c;
	int err;

	if (!need_live(s))
		return NULL;
	c = conn(s, &err);
	if (!c && err == -ENOENT)
		hs_err("pid %d is not sampling: heapsnap is not loaded (run 'start')", s->live.pid);
	return c;
}

/* `heapsnap start PID --rate R`: resumes a paused payload, says "already
 * sampling", or loads heapsnap again (after a `heapsnap stop` elsewhere). */
static int c_start(struct sh *s, int argc, char **argv)
{
	char rate[32];

	(void)argc; (void)argv;
	if (!need_live(s))
		return SH_ERR;
	snprintf(rate, sizeof(rate), "%llu", (unsigned long long)s->live.rate);
	return run_cli(s, do_start, "start", rate) ? SH_ERR : SH_OK;
}

static int c_stop(struct sh *s, int argc, char **argv)
{
	struct live_conn *c;
	int err;

	(void)argc; (void)argv;
	if (!need_live(s))
		return SH_ERR;
	c = conn(s, &err);
	if (!c) {
		if (err == -ENOENT)
			printf("pid %d: heapsnap is not running there\n", s->live.pid);
		return err == -ENOENT ? SH_OK : SH_ERR;
	}
	err = live_stop(c);
	live_close(c);
	if (err == -EALREADY || err == -ESRCH) {
		printf("pid %d: already stopped\n", s->live.pid);
		return SH_OK;
	}
	if (err) {
		hs_err("cannot stop sampling in pid %d: %s", s->live.pid, strerror(-err));
		return SH_ERR;
	}
	printf("pid %d: sampling paused (heapsnap stays loaded; 'quit' unloads it)\n", s->live.pid);
	return SH_OK;
}

static int c_rate(struct sh *s, int argc, char **argv)
{
	struct live_conn *c;
	struct hsp_status st;
	int64_t v = 0;
	int err = 0;

	if (argc > 2 || (argc == 2 && (hs_parse_size(argv[1], &v) || v < 1 ||
				       v > ((int64_t)1 << 40) - 1)))
		return hs_err("usage: rate [BYTES] (1 = every allocation, suffixes K M G)"), SH_ERR;
	if (!(c = payload_conn(s)))
		return SH_ERR;
	if (argc == 2) {
		err = live_set_rate(c, (uint64_t)v);
		s->live.rate = (uint64_t)v;
	}
	if (!err)
		err = live_status(c, &st);
	live_close(c);
	if (err)
		return hs_err("cannot set the rate in pid %d: %s", s->live.pid, strerror(-err)), SH_ERR;
	printf("pid %d: every %llu bytes on average\n", s->live.pid, (unsigned long long)st.rate);
	return SH_OK;
}

static int c_reset(struct sh *s, int argc, char **argv)
{
	struct live_conn *c;
	int err;

	(void)argc; (void)argv;
	if (!(c = payload_conn(s)))
		return SH_ERR;
	err = live_reset(c);
	live_close(c);
	if (err)
		return hs_err("cannot reset pid %d: %s", s->live.pid, strerror(-err)), SH_ERR;
	printf("pid %d: allocation totals cleared\n", s->live.pid);
	return SH_OK;
}

static int write_snap(struct sh *s, const struct snap *sn, const char *path, enum fmt f)
{
	char err[FMT_ERRLEN];
	int rc = fmt_write_file(sn->p, path, f, s->type, err);

	if (rc)
		return hs_err("cannot write '%s': %s", path, err[0] ? err : strerror(-rc)), SH_ERR;
	printf("wrote %s (%s, %s)\n", path, sn->name, fmt_name(f));
	return SH_OK;
}

static int c_save(struct sh *s, int argc, char **argv)
{
	struct snap *sn;

	if (argc != 3)
		return hs_err("usage: save NAME FILE"), SH_ERR;
	if (!(sn = snap_find(s, argv[1])))
		return hs_err("no snapshot named '%s' (see 'snapshots')", argv[1]), SH_ERR;
	enum fmt f = fmt_from_filename(argv[2]);
	if (f == FMT_UNKNOWN)
		f = FMT_PPROF;
	if (!fmt_can_read(f))
		return hs_err("save writes profiles heapsnap can load again (pprof, jeprof, gperf); "
			      "use 'export %s %s' for %s", argv[1], argv[2], fmt_name(f)), SH_ERR;
	return write_snap(s, sn, argv[2], f);
}

static int c_export(struct sh *s, int argc, char **argv)
{
	enum fmt f = FMT_UNKNOWN;
	const char *ops[2];
	int n = 0;
	struct snap *sn;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--format") || !strcmp(argv[i], "-f")) {
			if (++i >= argc || (f = fmt_parse(argv[i])) == FMT_UNKNOWN)
				return hs_err("unknown format '%s' (valid: pprof, jeprof, gperf, collapsed, "
					      "speedscope, svg)", i < argc ? argv[i] : ""), SH_ERR;
		} else if (!strncmp(argv[i], "--format=", 9)) {
			if ((f = fmt_parse(argv[i] + 9)) == FMT_UNKNOWN)
				return hs_err("unknown format '%s' (valid: pprof, jeprof, gperf, collapsed, "
					      "speedscope, svg)", argv[i] + 9), SH_ERR;
		} else if (n < 2) {
			ops[n++] = argv[i];
		} else {
			n = 3;
		}
	}
	if (n != 2)
		return hs_err("usage: export NAME FILE [--format F]"), SH_ERR;
	if (!(sn = snap_find(s, ops[0])))
		return hs_err("no snapshot named '%s' (see 'snapshots')", ops[0]), SH_ERR;
	if (f == FMT_UNKNOWN)
		f = fmt_from_filename(ops[1]);
	if (f == FMT_UNKNOWN)
		f = FMT_PPROF;
	return write_snap(s, sn, ops[1], f);
}

/* A file's snapshot name: its base name up to the first dot, if free. */
static void file_name(struct sh *s, const char *path, char *buf, size_t len)
{
	const char *b = strrchr(path, '/');

	snprintf(buf, len, "%s", b ? b + 1 : path);
	buf[strcspn(buf, ".")] = 0;
	if (!name_ok(buf) || snap_find(s, buf))
		default_name(s, buf, len);
}

static int load_file(struct sh *s, const char *path)
{
	char name[80];
	struct profile *p = cmd_report_load(path);
	struct snap *sn;

	if (!p)
		return SH_ERR;
	file_name(s, path, name, sizeof(name));
	if (!(sn = snap_add(s, name, path, p)))
		return hs_err("out of memory"), SH_ERR;
	print_snap_line(sn);
	return SH_OK;
}

static int c_load(struct sh *s, int argc, char **argv)
{
	if (argc != 2)
		return hs_err("usage: load FILE"), SH_ERR;
	return load_file(s, argv[1]);
}

static int c_sleep(struct sh *s, int argc, char **argv)
{
	char *end;
	double secs = argc == 2 ? strtod(argv[1], &end) : -1;
	struct timespec t0, now;

	(void)s;
	if (argc != 2 || end == argv[1] || *end || !(secs >= 0) || secs > 86400)
		return hs_err("usage: sleep SECS"), SH_ERR;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		double left = secs - ((now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9);
		if (left <= 0 || sh_sigint || sh_sigterm)
			break;
		if (left > 0.2)
			left = 0.2;
		struct timespec ts = { 0, (long)(left * 1e9) };
		nanosleep(&ts, NULL);
	}
	return sh_sigint ? SH_ERR : SH_OK;
}

static int c_detach(struct sh *s, int argc, char **argv)
{
	(void)argc; (void)argv;
	if (s->live.pid && s->alive)
		printf("pid %d: detached, heapsnap left sampling ('heapsnap stop %d' unloads it)\n",
		       s->live.pid, s->live.pid);
	return SH_EXIT;
}

/* quit is `heapsnap stop PID`, then the end of the shell. */
static int c_quit(struct sh *s, int argc, char **argv)
{
	(void)argc; (void)argv;
	check_target(s);
	if (s->live.pid && s->alive)
		s->exit_rc = run_cli(s, do_stop, "stop", NULL);
	return SH_EXIT;
}

static int c_help(struct sh *s, int argc, char **argv);

/* The one table of shell commands: dispatch, help and completion. */
struct sh_cmd {
	const char *name;
	int (*fn)(struct sh *s, int argc, char **argv);
	int maxargs;            /* operands at most (checked for every command), -1 any */
	/* operand kinds for completion, one letter per operand, the last one
	 * repeating: S snapshot, F function, X file, I sample index, U unit,
	 * G granularity, C command, - none */
	const char *args;
	const char *usage;
	const char *summary;
};

static const struct sh_cmd sh_cmds[] = {
	{ "snapshot", c_snapshot, 1, "-", "snapshot [NAME]", "take a snapshot of the live heap (names s1, s2, ...)" },
	{ "snapshots", c_snapshots, 0, "-", "snapshots", "list the snapshots; * marks the current one" },
	{ "use", c_use, 1, "S", "use NAME", "make NAME the current snapshot" },
	{ "top", c_top, -1, "F", "top [N] [-cum] [REGEX]", "sites holding the most memory (REGEX: only stacks through it)" },
	{ "list", c_list, 1, "F", "list REGEX", "per-source-line memory of matching functions" },
	{ "peek", c_peek, 1, "F", "peek REGEX", "callers and callees of matching functions" },
	{ "tree", c_tree, -1, "F", "tree [N] [-cum] [REGEX]", "every site with its callers and callees" },
	{ "diff", c_diff, 2, "S", "diff [BASE NEW]", "what grew from BASE to NEW (default: the last two snapshots)" },
	{ "focus", c_focus, 1, "F", "focus [REGEX]", "only stacks with a frame matching REGEX (none: clear)" },
	{ "ignore", c_ignore, 1, "F", "ignore [REGEX]", "drop stacks with a frame matching REGEX (none: clear)" },
	{ "sample_index", c_sample_index, 1, "I", "sample_index [NAME]",
	  "inuse_space, inuse_objects, alloc_space or alloc_objects" },
	{ "unit", c_unit, 1, "U", "unit [U]", "minimum, auto, B, kB, MB or GB" },
	{ "granularity", c_granularity, 1, "G", "granularity [G]", "functions, lines, files or addresses" },
	{ "stats", c_stats, 0, "-", "stats", "allocator and RSS figures, the current snapshot's totals" },
	{ "status", c_status, 0, "-", "status", "is heapsnap sampling, at what rate and cost" },
	{ "start", c_start, 0, "-", "start", "start (or resume) sampling" },
	{ "stop", c_stop, 0, "-", "stop", "pause sampling (heapsnap stays loaded)" },
	{ "rate", c_rate, 1, "-", "rate [BYTES]", "show or set the mean bytes between samples" },
	{ "reset", c_reset, 0, "-", "reset", "clear the allocation (alloc_*) totals" },
	{ "save", c_save, 2, "SX", "save NAME FILE", "write a snapshot to FILE (pprof, or jeprof/gperf by suffix)" },
	{ "load", c_load, 1, "X", "load FILE", "load a profile file as a snapshot" },
	{ "export", c_export, -1, "SX", "export NAME FILE [--format F]",
	  "write a snapshot in any format (pprof jeprof gperf collapsed speedscope svg)" },
	{ "sleep", c_sleep, 1, "-", "sleep SECS", "let the target run for SECS seconds (Ctrl-C cuts it short)" },
	{ "help", c_help, 1, "C", "help [CMD]", "this list, or one command" },
	{ "detach", c_detach, 0, "-", "detach", "leave, heapsnap keeps sampling in the target" },
	{ "quit", c_quit, 0, "-", "quit", "stop sampling, unload heapsnap, leave (also Ctrl-D, end of input)" },
	{ NULL, NULL, 0, NULL, NULL, NULL },
};

static const struct sh_cmd *sh_find(const char *name)
{
	for (const struct sh_cmd *c = sh_cmds; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static int c_help(struct sh *s, int argc, char **argv)
{
	(void)s;
	if (argc == 2) {
		const struct sh_cmd *c = sh_find(argv[1]);
		if (!c)
			return hs_err("unknown command '%s' (try 'help')", argv[1]), SH_ERR;
		printf("%s\n  %s\n", c->usage, c->summary);
		return SH_OK;
	}
	for (const struct sh_cmd *c = sh_cmds; c->name; c++)
		printf("  %-30s %s\n", c->usage, c->summary);
	printf("Several commands on a line: separate them with ';'.  Reports use the current\n"
	       "snapshot and the focus/ignore/sample_index/unit/granularity settings.\n"
	       "Ctrl-C cancels the running command; Ctrl-D or the end of piped input quits.\n");
	return SH_OK;
}

/* ---- the command line ---- */

/* Splits line into commands (at ';') and words (at blanks; '...' and "..."
 * quote, backslash escapes), runs each.  Returns the worst result. */
static int run_line(struct sh *s, const char *line, bool *failed)
{
	size_t len = strlen(line);
	char *buf = malloc(len + 1), *w = buf;
	char *argv[SH_MAXARGS + 1];
	int argc = 0, ret = SH_OK;
	bool inword = false, toomany = false;

	if (!buf)
		return hs_err("out of memory"), SH_ERR;
	for (size_t i = 0; ; i++) {
		char ch = line[i];
		if (ch == '#' && !inword)
			ch = 0;
		if (ch == 0 || ch == ';' || ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
			if (inword) {
				*w++ = 0;
				inword = false;
			}
			if (ch != 0 && ch != ';')
				continue;
			argv[argc] = NULL;
			if (toomany) {
				hs_err("too many words in one command");
				*failed = true;
			} else if (argc) {
				const struct sh_cmd *c = sh_find(argv[0]);
				int r;
				/* A Ctrl-C that came after Enter cancels this
				 * command too, so sh_sigint is cleared after
				 * the commands only. */
				if (!c) {
					hs_err("unknown command '%s' (try 'help')", argv[0]);
					r = SH_ERR;
				} else if (c->maxargs >= 0 && argc - 1 > c->maxargs) {
					hs_err("too many operands; usage: %s", c->usage);
					r = SH_ERR;
				} else {
					r = c->fn(s, argc, argv);
				}
				fflush(stdout);
				if (sh_sigint) {
					/* the rest of the line goes with it; on a
					 * terminal, off the line the ^C echo is on */
					if (s->tty)
						fputc('\n', stderr);
					hs_err("interrupted");
					sh_sigint = 0;
					*failed = true;
					break;
				}
				if (r == SH_ERR)
					*failed = true;
				if (r == SH_EXIT) {
					ret = r;
					break;
				}
				if (sh_sigterm)
					break;
				check_target(s);
			}
			argc = 0;
			toomany = false;
			w = buf;
			if (ch == 0)
				break;
			continue;
		}
		if (!inword) {
			inword = true;
			if (argc < SH_MAXARGS)
				argv[argc++] = w;
			else
				toomany = true;
		}
		if (ch == '\'' || ch == '"') {
			char q = ch;
			while (line[i + 1] && line[i + 1] != q)
				*w++ = line[++i];
			if (line[i + 1])
				i++;
		} else if (ch == '\\' && line[i + 1]) {
			*w++ = line[++i];
		} else {
			*w++ = ch;
		}
	}
	free(buf);
	return ret;
}

/* ---- readline: history, completion, signals ---- */

static struct sh *rl_sh;        /* the shell completion looks at */

static char *history_path(void)
{
	const char *x = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char *path = NULL;

	if (x && *x == '/') {
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s/heapsnap", x);
		mkdir(x, 0700);
		if (mkdir(dir, 0700) && errno != EEXIST)
			return NULL;
		if (asprintf(&path, "%s/history", dir) < 0)
			return NULL;
	} else if (home && *home) {
		if (asprintf(&path, "%s/.heapsnap_history", home) < 0)
			return NULL;
	} else {
		return NULL;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0) {
		hs_debug("no history: cannot open '%s': %s", path, strerror(errno));
		free(path);
		return NULL;
	}
	close(fd);
	return path;
}

static const char **cand;       /* candidates of the completion under way */
static size_t ncand, candcap;

static void cand_add(const char *c)
{
	if (ncand == candcap) {
		size_t n = candcap ? candcap * 2 : 64;
		const char **m = realloc(cand, n * sizeof(*m));
		if (!m)
			return;
		cand = m;
		candcap = n;
	}
	cand[ncand++] = c;
}

static char *cand_gen(const char *text, int state)
{
	static size_t i;
	size_t len = strlen(text);

	if (!state)
		i = 0;
	while (i < ncand) {
		const char *c = cand[i++];
		if (!strncmp(c, text, len)) {
			/* skip duplicates (same function in several files) */
			bool dup = false;
			for (size_t j = 0; j + 1 < i && !dup; j++)
				dup = !strcmp(cand[j], c) && !strncmp(cand[j], text, len);
			if (!dup)
				return strdup(c);
		}
	}
	return NULL;
}

static char **sh_complete(const char *text, int start, int end)
{
	struct sh *s = rl_sh;
	char words[4][128];
	int nw = 0;
	const char *p = rl_line_buffer, *seg = p;

	(void)end;
	for (const char *q = p; q < p + start; q++)
		if (*q == ';')
			seg = q + 1;
	/* the words before the one being completed (which starts at start) */
	for (const char *q = seg; q < p + start && nw < 4;) {
		while (q < p + start && (*q == ' ' || *q == '\t'))
			q++;
		const char *b = q;
		while (q < p + start && *q != ' ' && *q != '\t')
			q++;
		if (q > b)
			snprintf(words[nw++], sizeof(words[0]), "%.*s", (int)(q - b), b);
	}
	ncand = 0;
	rl_attempted_completion_over = 1;
	if (nw == 0) {
		for (const struct sh_cmd *c = sh_cmds; c->name; c++)
			cand_add(c->name);
	} else {
		const struct sh_cmd *c = sh_find(words[0]);
		if (!c)
			return NULL;
		size_t na = strlen(c->args);
		char kind = c->args[(size_t)(nw - 1) < na ? (size_t)(nw - 1) : na - 1];
		if (!strcmp(words[nw - 1], "--format")) {
			for (int f = 0; f < FMT_NFORMATS; f++)
				cand_add(fmt_name(f));
		} else {
			switch (kind) {
			case 'S':
				for (size_t i = 0; i < s->nsnaps; i++)
					cand_add(s->snaps[i].name);
				break;
			case 'F':
				if (s->nsnaps)
					for (size_t i = 0; i < s->snaps[s->cur].p->nfuncs; i++)
						cand_add(s->snaps[s->cur].p->funcs[i].name);
				break;
			case 'X':
				rl_attempted_completion_over = 0;
				return NULL;
			case 'I':
				for (int t = 0; t < PT_NTYPES; t++)
					cand_add(prof_type_name(t));
				break;
			case 'U':
				for (int u = REP_UNIT_MINIMUM; u <= REP_UNIT_GB; u++)
					cand_add(rep_unit_name(u));
				break;
			case 'G':
				for (int g = REP_GRAN_FUNCTIONS; g <= REP_GRAN_ADDRESSES; g++)
					cand_add(rep_gran_name(g));
				break;
			case 'C':
				for (const struct sh_cmd *k = sh_cmds; k->name; k++)
					cand_add(k->name);
				break;
			default:
				return NULL;
			}
		}
	}
	return rl_completion_matches(text, cand_gen);
}

/* Called by readline when a read is interrupted: Ctrl-C at the prompt
 * drops the line being typed; SIGTERM/SIGHUP end the session (as quit). */
static int rl_on_signal(void)
{
	if (sh_sigterm) {
		rl_replace_line("", 0);
		rl_done = 1;
	} else if (sh_sigint) {
		sh_sigint = 0;
		rl_replace_line("", 0);
		rl_crlf();
		rl_on_new_line();
		rl_redisplay();
	}
	return 0;
}

/* One line of input (malloc'd), NULL at the end of input. */
static char *read_line(struct sh *s)
{
	if (s->tty) {
		/* a Ctrl-C pressed between commands is spent */
		sh_sigint = 0;
		return readline(SH_PROMPT);
	}
	char *line = NULL;
	size_t cap = 0;
	for (;;) {
		errno = 0;
		if (getline(&line, &cap, stdin) >= 0)
			return line;
		if (errno != EINTR || sh_sigterm)
			break;
		clearerr(stdin);
		sh_sigint = 0;
	}
	free(line);
	return NULL;
}

static void remember(struct sh *s, const char *line)
{
	HIST_ENTRY *last;

	if (!*line || line[strspn(line, " \t")] == 0)
		return;
	last = history_length ? history_get(history_base + history_length - 1) : NULL;
	if (last && !strcmp(last->line, line))
		return;
	add_history(line);
	if (s->history)
		append_history(1, s->history);
}

int shell_run(const struct shell_opts *o)
{
	struct sh s = { 0 };
	struct sigaction sa = { 0 }, old_int, old_term, old_hup;
	bool failed = false;
	int ret = SH_OK;

	s.live.cmd = "attach";
	s.live.pid = o->pid;
	s.live.rate = o->rate;
	s.live.timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 5000;
	s.alive = o->pid != 0;
	s.tty = isatty(STDIN_FILENO);
	s.type = PT_INUSE_SPACE;
	s.unit = REP_UNIT_MINIMUM;
	s.gran = REP_GRAN_FUNCTIONS;
	for (int i = 0; i < o->nfiles; i++)
		if (load_file(&s, o->files[i]))
			failed = true;
	fflush(stdout);

	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;        /* no SA_RESTART: a signal cuts a wait short */
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);

	if (s.tty) {
		rl_sh = &s;
		rl_readline_name = "heapsnap";
		rl_catch_signals = 0;
		rl_signal_event_hook = rl_on_signal;
		rl_attempted_completion_function = sh_complete;
		rl_completer_word_break_characters = " \t;";
		using_history();
		stifle_history(SH_HISTORY_MAX);
		s.history = history_path();
		if (s.history)
			read_history(s.history);
		if (o->pid)
			printf("'help' lists the commands; 'quit' or Ctrl-D unloads heapsnap, "
			       "'detach' leaves it sampling\n");
		else if (!o->nfiles)
			printf("no profiles yet: 'load FILE', or 'help' for the commands\n");
	}
	for (;;) {
		char *line;
		if (sh_sigterm)
			break;
		line = read_line(&s);
		if (!line) {
			if (s.tty)
				putchar('\n');
			break;
		}
		if (sh_sigterm) {
			free(line);
			break;
		}
		if (s.tty)
			remember(&s, line);
		ret = run_line(&s, line, &failed);
		free(line);
		if (ret == SH_EXIT)
			break;
	}
	/* End of input and signals do what quit does. */
	if (ret != SH_EXIT)
		ret = c_quit(&s, 1, (char *[]){ "quit", NULL });
	if (s.history) {
		history_truncate_file(s.history, SH_HISTORY_MAX);
		free(s.history);
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	for (size_t i = 0; i < s.nsnaps; i++) {
		free(s.snaps[i].name);
		free(s.snaps[i].origin);
		prof_free(s.snaps[i].p);
	}
	free(s.snaps);
	free(s.focus);
	free(s.ignore);
	free(cand);
	cand = NULL;
	ncand = candcap = 0;
	fflush(stdout);
	if (s.exit_rc)
		return s.exit_rc;
	return failed && !s.tty ? HS_FAIL : HS_OK;
}
