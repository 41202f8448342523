/* main.c - global options, the command table and dispatch. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cmd_report.h"
#include "hs.h"

bool opt_json;
int opt_verbose;
bool opt_quiet;

/* The one list of commands: CLI dispatch, `--help`, the man page test and
 * the completion scripts (which call `heapsnap help --commands`) read it. */
const struct cmd hs_cmds[] = {
	{ "start", do_start, CMD_NEEDS_PID,
	  "start PID [--rate BYTES] [--backend B] [--unwinder U] [--timeout SECS]",
	  "load heapsnap into a process and start sampling, return at once",
	  "Says so when the process is sampling already (and resumes it when paused).\n"
	  "  --rate BYTES     mean bytes between samples (default 512K; 1 = every allocation)\n"
	  "  --backend B      auto, interpose, jemalloc or gperftools (default auto:\n"
	  "                   jemalloc's profiler when the process started with\n"
	  "                   MALLOC_CONF=prof:true, else interpose)\n"
	  "  --unwinder U     how interpose captures stacks: auto (libunwind, loaded\n"
	  "                   into the process if it lacks it and left there after\n"
	  "                   stop; else libgcc), libunwind, or libgcc (adds no\n"
	  "                   library; several times slower per sample)\n"
	  "  --timeout SECS   deadline for each step of loading (default 5)\n"
	  "  -j, --json       print the result as JSON\n" },
	{ "status", do_status, CMD_NEEDS_PID, "status PID",
	  "is heapsnap loaded, sampling, at what rate and cost",
	  "Asks the payload over its control socket (no ptrace).\n"
	  "  -j, --json       print the status as JSON\n" },
	{ "dump", do_dump, CMD_NEEDS_PID,
	  "dump PID -o FILE [--duration SECS] [--format F] [--rate BYTES] [--backend B] [--keep] [--timeout SECS]",
	  "write a profile of a live process's heap",
	  "Snapshots at once when the process is sampling; otherwise loads heapsnap,\n"
	  "samples for --duration, snapshots, and unloads it again (unless --keep).\n"
	  "The file is symbolized and carries the mappings with build-ids.\n"
	  "  -o, --output FILE  file to write (atomically)\n"
	  "  --duration SECS    how long to sample when not sampling yet (default 10)\n"
	  "  --format F         pprof, jeprof, gperf, collapsed, speedscope, svg\n"
	  "                     (default: from FILE's suffix, else pprof)\n"
	  "  --rate BYTES       sampling rate when dump starts sampling (default 512K;\n"
	  "                     jemalloc: lg_prof_sample = round(log2(BYTES)))\n"
	  "  --backend B        auto, interpose, jemalloc (the process's own jemalloc\n"
	  "                     profiler: covers allocations made before heapsnap came\n"
	  "                     when it was active), gperftools (tcmalloc's heap\n"
	  "                     profiler: reused when running, else started and\n"
	  "                     stopped again).  auto: a native profiler that is on\n"
	  "                     already, else interpose\n"
	  "  --keep             leave heapsnap loaded and sampling afterwards\n"
	  "  --timeout SECS     deadline for each step of loading (default 5)\n"
	  "  -j, --json         print a JSON summary of what was written\n" },
	{ "stop", do_stop, CMD_NEEDS_PID, "stop PID [--timeout SECS]",
	  "stop sampling, unload heapsnap, leave the process as found",
	  "Says so when heapsnap is not loaded.  If the process still needs a hook\n"
	  "(it kept a copy of one's address), heapsnap stays in, inert, and exits 2.\n"	  "A gperftools heap profiler that heapsnap started is stopped too (never one\n"
	  "the program started itself).  jemalloc's profiler is left as it is.\n"
	  "  --timeout SECS   deadline for each step (default 5)\n"
	  "  -j, --json       print the result as JSON\n" },
	{ "stats", do_stats, CMD_NEEDS_PID, "stats PID [--timeout SECS]",
	  "allocator and RSS figures of a live process (no sampling)",
	  "RSS from /proc/PID/status and smaps_rollup next to the allocator's own\n"
	  "figures (glibc mallinfo2/malloc_info, jemalloc stats.*, tcmalloc and\n"
	  "mimalloc properties), and the gap between RSS and the live heap.\n"
	  "Loads heapsnap for the moment when it is not loaded (no hooks, no sampling).\n"
	  "  --timeout SECS   deadline for each step of loading (default 5)\n"
	  "  -j, --json       print the figures as JSON\n" },
	{ "trim", do_trim, CMD_NEEDS_PID, "trim PID [--timeout SECS]",
	  "ask the allocator to return free memory to the OS, show RSS before/after",
	  "glibc malloc_trim(0), jemalloc arena.<all>.purge, tcmalloc\n"
	  "ReleaseFreeMemory, mimalloc mi_collect(true): whichever the process has.\n"
	  "  --timeout SECS   deadline for each step of loading (default 5)\n"
	  "  -j, --json       print the result as JSON\n" },
	{ "attach", do_attach, CMD_NEEDS_PID, "attach PID [--rate BYTES] [--backend B] [--timeout SECS]",
	  "interactive shell on a live process (starts sampling if needed)",
	  "Starts sampling like `start`, then reads shell commands (`help` lists them):\n"
	  "snapshot, top, diff, ... at the prompt \"(heapsnap) \", with history and Tab\n"
	  "completion.  Commands can also be piped in, one or more per line separated\n"
	  "by ';'.  quit, Ctrl-D and the end of piped input stop sampling and unload\n"
	  "heapsnap (as `heapsnap stop`); detach leaves it sampling.\n"
	  "  --rate BYTES     mean bytes between samples (default 512K; 1 = every allocation)\n"
	  "  --backend B      auto or interpose (default auto: interpose)\n"
	  "  --timeout SECS   deadline for each step of loading (default 5)\n" },
	{ "shell", do_shell, CMD_NEEDS_FILE, "shell [FILE...]",
	  "the interactive shell, offline on profile files",
	  "Loads each FILE as a snapshot named after it; `load FILE` adds more.\n"
	  "  -j, --json       reports as JSON documents\n" },
	{ "watch", do_watch, CMD_NEEDS_PID,
	  "watch PID -o DIR [--interval SECS] [--on-growth BYTES] [--on-peak] [--count N] [--rate BYTES] [--keep] [--timeout SECS]",
	  "write snapshots of a live process periodically, on growth or on a new peak",
	  "Files are DIR/heapsnap.PID.YYYYmmddTHHMMSSZ.SEQ.pb.gz (UTC); the first snapshot\n"
	  "is always written, later ones every interval, or only as the options say.\n"
	  "One line per written file on stdout (with -j, one JSON object per line).\n"
	  "Ctrl-C or SIGTERM stops; what watch loaded it unloads.\n"
	  "  -o, --output DIR    directory for the files (created if missing)\n"
	  "  --interval SECS     time between snapshots (default 10)\n"
	  "  --on-growth BYTES   write only when in-use bytes grew by more than BYTES\n"
	  "                      since the last written file\n"
	  "  --on-peak           write only on a new high-water mark of in-use bytes\n"
	  "  --count N           stop after N files\n"
	  "  --rate BYTES        sampling rate when watch starts sampling (default 512K)\n"
	  "  --keep              leave heapsnap loaded and sampling afterwards\n"
	  "  --timeout SECS      deadline for each step of loading (default 5)\n"
	  "  -j, --json          JSON lines on stdout\n" },
	{ "top", do_top, CMD_NEEDS_FILE,
	  "top FILE [-n N] [--cum] [--sample-index I] [--focus RE] [--ignore RE] [--base FILE] [--unit U] [--granularity G]",
	  "show the call sites holding the most memory",
	  "Columns and header as `go tool pprof -top`; allocator frames are dropped.\n"
	  "  -n, --nodecount N      rows to show (default 20, 0 for all)\n"
	  "      --cum              sort by cumulative value\n"
	  "      --base FILE        subtract FILE first (percentages of the net total)\n"
	  CMD_REPORT_HELP },
	{ "list", do_list, CMD_NEEDS_FILE,
	  "list REGEX FILE [--sample-index I] [--focus RE] [--ignore RE] [--base FILE] [--unit U]",
	  "per-source-line memory of matching functions",
	  "Sources are read from the paths in the debug info.\n"
	  "  -j, --json             one JSON document on stdout\n"
	  "      --sample-index I   inuse_space (default), inuse_objects, alloc_space, alloc_objects\n"
	  "      --focus RE         only stacks with a frame matching RE\n"
	  "      --ignore RE        drop stacks with a frame matching RE\n"
	  "      --base FILE        subtract FILE first\n"
	  "      --unit U           auto (default), B, kB, MB, GB\n" },
	{ "peek", do_peek, CMD_NEEDS_FILE,
	  "peek REGEX FILE [--cum] [--sample-index I] [--focus RE] [--ignore RE] [--base FILE] [--unit U] [--granularity G]",
	  "callers and callees of matching functions",
	  "REGEX matches node names (pprof -peek).\n"
	  "      --cum              order nodes by cumulative value\n"
	  "      --base FILE        subtract FILE first\n"
	  CMD_REPORT_HELP },
	{ "tree", do_tree, CMD_NEEDS_FILE,
	  "tree FILE [-n N] [--cum] [--sample-index I] [--focus RE] [--ignore RE] [--base FILE] [--unit U] [--granularity G]",
	  "every call site with its callers and callees",
	  "Layout of `go tool pprof -tree`.\n"
	  "  -n, --nodecount N      nodes to show (default 80, 0 for all)\n"
	  "      --cum              sort by cumulative value\n"
	  "      --base FILE        subtract FILE first\n"
	  CMD_REPORT_HELP },
	{ "diff", do_diff, CMD_NEEDS_FILE,
	  "diff BASE FILE [-n N] [--cum] [--sample-index I] [--focus RE] [--ignore RE] [--unit U] [--granularity G]",
	  "what grew (or shrank) from BASE to FILE",
	  "Signed changes by site, largest first; percentages of BASE's total\n"
	  "(`go tool pprof -diff_base BASE FILE`).\n"
	  "  -n, --nodecount N      rows to show (default 20, 0 for all)\n"
	  "      --cum              sort by cumulative change\n"
	  CMD_REPORT_HELP },
	{ "convert", do_convert, CMD_NEEDS_FILE, "convert FILE -o OUT [--format F] [--sample-index I]",
	  "write a profile in another format",
	  "Reads pprof, jeprof or gperf files; symbolizes what it can from the saved\n"
	  "mappings so OUT is self-contained.\n"
	  "  -o, --output OUT       file to write (atomically)\n"
	  "      --format F         pprof, jeprof, gperf, collapsed, speedscope, svg\n"
	  "                         (default: from OUT's suffix, else pprof)\n"
	  "      --sample-index I   value for collapsed, speedscope, svg (default inuse_space)\n"
	  "  -j, --json             print a JSON summary of what was written\n" },
	{ "inject", do_inject, CMD_NEEDS_PID | CMD_LOWLEVEL,
	  "inject PID LIB [--call SYMBOL [--arg N]...] [--unload] [--timeout SECS]",
	  "load a shared library into a live process (low-level, for debugging)",
	  "  --call SYMBOL   call long SYMBOL(long, ...) of LIB in a helper thread\n"
	  "  --arg N         an integer argument for --call (up to 6)\n"
	  "  --unload        drop heapsnap's reference to LIB so it leaves the process\n"
	  "  --timeout SECS  deadline for a safe point and for each step (default 5)\n" },
	{ NULL, NULL, 0, NULL, NULL, NULL },
};

static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, "heapsnap: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void hs_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void hs_warn(const char *fmt, ...)
{
	va_list ap;
	if (opt_quiet)
		return;
	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

void hs_hint(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("hint: ", fmt, ap);
	va_end(ap);
}

void hs_debug(const char *fmt, ...)
{
	va_list ap;
	if (!opt_verbose)
		return;
	va_start(ap, fmt);
	vmsg("debug: ", fmt, ap);
	va_end(ap);
}

const struct cmd *cmd_find(const char *name)
{
	for (const struct cmd *c = hs_cmds; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

void cmd_print_help(const struct cmd *c)
{
	printf("usage: heapsnap %s\n\n%s\n", c->usage, c->summary);
	if (c->help)
		printf("\n%s", c->help);
}

int hs_usage_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	const struct cmd *c = cmd ? cmd_find(cmd) : NULL;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
	if (c)
		fprintf(stderr, "usage: heapsnap %s\n", c->usage);
	else
		fprintf(stderr, "usage: heapsnap [-j] [-q] [-v] COMMAND [ARGS...]; see heapsnap --help\n");
	return HS_USAGE;
}

int hs_parse_size(const char *s, int64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if ((*end == 'i' || *end == 'I') && shift)
		end++;
	if ((*end == 'b' || *end == 'B'))
		end++;
	if (*end || v > (unsigned long long)(INT64_MAX >> shift))
		return -EINVAL;
	*out = (int64_t)(v << shift);
	return 0;
}

int hs_parse_pid(const char *s, int *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v <= 0 || v > 0x3fffffff)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

static void print_main_help(void)
{
	printf("usage: heapsnap [-j] [-q] [-v] COMMAND [ARGS...]\n\n"
	       "Attach-on-demand heap inspector for running Linux processes.\n\n"
	       "Commands:\n");
	for (const struct cmd *c = hs_cmds; c->name; c++)
		if (!(c->flags & CMD_LOWLEVEL))
			printf("  %-10s %s\n", c->name, c->summary);
	printf("\nLow-level commands:\n");
	for (const struct cmd *c = hs_cmds; c->name; c++)
		if (c->flags & CMD_LOWLEVEL)
			printf("  %-10s %s\n", c->name, c->summary);
	printf("\nGlobal options:\n"
	       "  -j, --json     write one JSON document on stdout\n"
	       "  -q, --quiet    no warnings or progress\n"
	       "  -v, --verbose  debug messages on stderr\n"
	       "  -h, --help     this help; heapsnap COMMAND --help for a command\n"
	       "      --version  print the version\n\n"
	       "Exit status: 0 done, 1 failed (target untouched or restored),\n"
	       "2 failed after load (payload may remain), 64 usage error.\n");
}

/* `help --options CMD`: the options CMD's help lists, one per line ("-n",
 * "--nodecount"), so the completions and the surface test have one source. */
static void print_cmd_options(const struct cmd *c)
{
	const char *p = c->help;

	while (p && *p) {
		const char *eol = strchrnul(p, '\n');
		const char *s = p;

		while (s < eol && *s == ' ')
			s++;
		/* option lines look like "  -o, --output FILE  text" */
		while (s < eol && *s == '-') {
			const char *e = s;
			while (e < eol && *e != ' ' && *e != ',' && *e != '=')
				e++;
			printf("%.*s\n", (int)(e - s), s);
			if (e >= eol || *e != ',')
				break;
			for (s = e + 1; s < eol && *s == ' '; s++)
				;
		}
		p = *eol ? eol + 1 : eol;
	}
}

int main(int argc, char **argv)
{
	int i;

	/* Global options come before the command name. */
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-j") || !strcmp(a, "--json"))
			opt_json = true;
		else if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
			opt_quiet = true;
		else if (!strcmp(a, "-v") || !strcmp(a, "--verbose"))
			opt_verbose++;
		else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			print_main_help();
			return HS_OK;
		} else if (!strcmp(a, "--version")) {
			printf("heapsnap %s\n", HEAPSNAP_VERSION);
			return HS_OK;
		} else
			return hs_usage_err(NULL, "unknown option '%s'", a);
	}
	if (i >= argc)
		return hs_usage_err(NULL, "no command given");

	const char *name = argv[i];
	if (!strcmp(name, "help")) {
		if (i + 1 < argc && !strcmp(argv[i + 1], "--commands")) {
			for (const struct cmd *c = hs_cmds; c->name; c++)
				printf("%s\n", c->name);
			return HS_OK;
		}
		if (i + 1 < argc && !strcmp(argv[i + 1], "--options")) {
			const struct cmd *c = i + 2 < argc ? cmd_find(argv[i + 2]) : NULL;
			if (!c)
				return hs_usage_err(NULL, "help --options needs a command name");
			print_cmd_options(c);
			return HS_OK;
		}
		if (i + 1 < argc) {
			const struct cmd *c = cmd_find(argv[i + 1]);
			if (!c)
				return hs_usage_err(NULL, "unknown command '%s'", argv[i + 1]);
			cmd_print_help(c);
			return HS_OK;
		}
		print_main_help();
		return HS_OK;
	}
	const struct cmd *c = cmd_find(name);
	if (!c)
		return hs_usage_err(NULL, "unknown command '%s'", name);
	for (int j = i + 1; j < argc; j++) {
		if (!strcmp(argv[j], "--"))
			break;
		if (!strcmp(argv[j], "-h") || !strcmp(argv[j], "--help")) {
			cmd_print_help(c);
			return HS_OK;
		}
	}
	optind = 0; /* reset getopt for the command (0 also resets GNU state) */
	return c->fn(argc - i, argv + i);
}
