/* cmd_report.h - what the report commands (top, tree, peek, list, diff, convert) share: loading files, common options, output. */
#ifndef HEAPSNAP_CMD_REPORT_H
#define HEAPSNAP_CMD_REPORT_H

#include <getopt.h>
#include <stdbool.h>

#include "profile.h"
#include "report.h"

/* getopt_long codes of the shared options */
enum {
	OPT_CUM = 0x100,
	OPT_SAMPLE_INDEX,
	OPT_FOCUS,
	OPT_IGNORE,
	OPT_BASE,
	OPT_UNIT,
	OPT_GRAN,
	OPT_FORMAT,
};

#define CMD_REPORT_OPTS                                                        \
	{ "json", no_argument, NULL, 'j' },                                    \
	{ "sample-index", required_argument, NULL, OPT_SAMPLE_INDEX },         \
	{ "focus", required_argument, NULL, OPT_FOCUS },                       \
	{ "ignore", required_argument, NULL, OPT_IGNORE },                     \
	{ "unit", required_argument, NULL, OPT_UNIT },                         \
	{ "granularity", required_argument, NULL, OPT_GRAN }

/* Option lines for the help of the commands that take CMD_REPORT_OPTS. */
#define CMD_REPORT_HELP                                                                        \
	"  -j, --json             one JSON document on stdout\n"                                 \
	"      --sample-index I   inuse_space (default), inuse_objects, alloc_space, alloc_objects\n" \
	"      --focus RE         only stacks with a frame matching RE (function, file or module)\n" \
	"      --ignore RE        drop stacks with a frame matching RE (wins over --focus)\n"      \
	"      --unit U           minimum (default, one unit like pprof), auto, B, kB, MB, GB\n"   \
	"      --granularity G    functions (default), lines, files, addresses\n"

/* A report command line being parsed. */
struct cmd_report {
	const char *cmd;            /* "top", for messages */
	struct rep_opts o;
	const char *base_path;      /* --base FILE */
};

/* Starts parsing: defaults of the report kind. */
void cmd_report_init(struct cmd_report *c, const char *cmd, enum rep_kind kind);

/* Handles a shared option (opt from getopt_long, value in optarg).
 * Returns 0 when handled, HS_USAGE after printing a usage error, -1 when
 * opt is not a shared option. */
int cmd_report_opt(struct cmd_report *c, int opt, const char *arg);

/* After getopt_long returned '?' or ':' (optstring starts with ':'):
 * prints the usage error naming the option; returns HS_USAGE. */
int cmd_report_bad_option(const char *cmd, int opt, char **argv);

/* Parses the value of -n.  0 or HS_USAGE (message printed). */
int cmd_report_count(struct cmd_report *c, const char *arg);

/* Reads a profile file in any readable format and symbolizes its
 * unsymbolized locations from the saved mappings (best effort).  Prints
 * "heapsnap: cannot read 'FILE': <why>" and returns NULL on failure. */
struct profile *cmd_report_load(const char *path);

/* Loads `path` (and --base), builds the view and writes it, plain or JSON,
 * to stdout all at once (nothing on error).  Returns an hs_exit. */
int cmd_report_run(struct cmd_report *c, const char *path);

/* The whole of a graph report command (`top`, `tree`): parses
 * CMD_REPORT_OPTS plus -n/--nodecount, --cum and --base, then runs the
 * report of `kind` on the one FILE operand.  Returns an hs_exit. */
int cmd_report_graph(int argc, char **argv, const char *name, enum rep_kind kind);

/* Writes what fill() prints into a buffer, then to stdout in one go, so a
 * failure leaves stdout empty.  Returns 0 or -errno. */
int cmd_report_emit(int (*fill)(FILE *f, void *ctx), void *ctx);

#endif
