/* cmd.h - the command table: one entry per command, shared by the CLI, help and the shell. */
#ifndef HEAPSNAP_CMD_H
#define HEAPSNAP_CMD_H

/* Preconditions a command declares, checked once by the dispatcher. */
enum cmd_flags {
	CMD_NEEDS_PID = 1 << 0,     /* first operand is a live PID */
	CMD_NEEDS_FILE = 1 << 1,    /* operates on profile files */
	CMD_LOWLEVEL = 1 << 2,      /* listed under "low-level commands" */
};

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv); /* argv[0] is the command name; returns an hs_exit */
	unsigned flags;
	const char *usage;   /* "top FILE [-n N] [--cum] ..." */
	const char *summary; /* one line for `heapsnap --help` */
	const char *help;    /* options, one per line, for `heapsnap CMD --help` */
};

extern const struct cmd hs_cmds[];
const struct cmd *cmd_find(const char *name);
/* Prints "usage: heapsnap <usage>" and the option lines to stdout. */
void cmd_print_help(const struct cmd *c);

/* Command entry points, one file each: src/cmd_<name>.c */
int do_top(int argc, char **argv);
int do_list(int argc, char **argv);
int do_peek(int argc, char **argv);
int do_tree(int argc, char **argv);
int do_diff(int argc, char **argv);
int do_convert(int argc, char **argv);
int do_inject(int argc, char **argv);
int do_start(int argc, char **argv);
int do_status(int argc, char **argv);
int do_dump(int argc, char **argv);
int do_stop(int argc, char **argv);
int do_attach(int argc, char **argv);
int do_shell(int argc, char **argv);
int do_watch(int argc, char **argv);
int do_stats(int argc, char **argv);
int do_trim(int argc, char **argv);

#endif
