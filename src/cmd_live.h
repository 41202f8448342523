/* cmd_live.h - what the live commands (start, status, dump, stop) share: options, loading, unloading, messages. */
#ifndef HEAPSNAP_CMD_LIVE_H
#define HEAPSNAP_CMD_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "format.h"

/* A live command line being parsed. */
struct cmd_live {
	const char *cmd;        /* "start", for messages */
	int pid;
	uint64_t rate;          /* --rate, default HSP_DEFAULT_RATE */
	bool rate_given;
	int timeout_ms;         /* --timeout, per injector step */
	double duration;        /* dump --duration, seconds */
	bool keep;              /* dump --keep */
	const char *out;        /* dump -o */
	enum fmt format;        /* dump --format, FMT_UNKNOWN: from the file name */
};

/* Which options a command takes (beyond -j and --timeout). */
enum {
	CMD_LIVE_RATE = 1 << 0,     /* --rate BYTES */
	CMD_LIVE_BACKEND = 1 << 1,  /* --backend B */
	CMD_LIVE_DUMP = 1 << 2,     /* -o FILE, --duration, --format, --keep */
};

/* Parses the options and the PID operand (optind ends after it).  Returns
 * 0, or HS_USAGE after printing the usage error. */
int cmd_live_parse(struct cmd_live *o, const char *cmd, int argc, char **argv, unsigned which);

/* Prints why talking to the payload of pid failed; returns the exit status. */
int cmd_live_conn_error(const struct cmd_live *o, int err);

/* Loads the payload and starts sampling at o->rate (messages and hints
 * printed on failure).  *already is set when it was sampling already.
 * Returns an hs_exit. */
int cmd_live_load_start(const struct cmd_live *o, bool *already);

/* Stops sampling and unloads (messages and hints printed on failure);
 * *was_loaded tells whether there was anything to unload.  Returns an
 * hs_exit. */
int cmd_live_unload(const struct cmd_live *o, bool *was_loaded);

#endif
