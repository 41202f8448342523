/* main.c - global options, the command table and dispatch. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "hs.h"

bool opt_json;
int opt_verbose;
bool opt_quiet;

/* The one list of commands: CLI dispatch, `--help`, the man page test and
 * the completion scripts (which call `heapsnap help --commands`) read it. */
const struct cmd hs_cmds[] = {
	{ "top", do_top, CMD_NEEDS_FILE,
	  "top FILE [-n N] [--cum] [--sample-index I] [--focus RE] [--ignore RE] [--base FILE] [--unit U] [--granularity G]",
	  "show the call sites holding the most memory", NULL },
	{ "list", do_list, CMD_NEEDS_FILE, "list REGEX FILE [--sample-index I]",
	  "per-source-line memory of matching functions", NULL },
	{ "peek", do_peek, CMD_NEEDS_FILE, "peek REGEX FILE [--sample-index I]",
	  "callers and callees of matching functions", NULL },
	{ "diff", do_diff, CMD_NEEDS_FILE, "diff BASE FILE [-n N] [--sample-index I]",
	  "what grew (or shrank) from BASE to FILE", NULL },
	{ "convert", do_convert, CMD_NEEDS_FILE, "convert FILE -o OUT [--format F]",
	  "write a profile in another format", NULL },
	{ "inject", do_inject, CMD_NEEDS_PID | CMD_LOWLEVEL, "inject PID LIB [--call SYMBOL]",
	  "load a shared library into a live process (low-level, for debugging)", NULL },
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
	if (*end || v > (INT64_MAX >> shift))
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
