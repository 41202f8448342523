/* cmd_live.h - what the live commands (start, status, dump, stop) share: options, loading, unloading, messages. */
#ifndef HEAPSNAP_CMD_LIVE_H
#define HEAPSNAP_CMD_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "format.h"

/* --backend: which profiler a live command drives (DESIGN.md section 3). */
enum cmd_backend {
	CMD_BACKEND_AUTO = 0,   /* a native profiler already active, else interpose */
	CMD_BACKEND_INTERPOSE,
	CMD_BACKEND_JEMALLOC,
	CMD_BACKEND_GPERFTOOLS,
};

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
	enum cmd_backend backend; /* --backend */
	unsigned unwinder;      /* --unwinder: enum hsp_unwinder, HSP_UNW_AUTO by default */
};

/* Which options a command takes (beyond -j and --timeout). */
enum {
	CMD_LIVE_RATE = 1 << 0,     /* --rate BYTES */
	CMD_LIVE_BACKEND = 1 << 1,  /* --backend B */
	CMD_LIVE_DUMP = 1 << 2,     /* -o FILE, --duration, --format, --keep */
	CMD_LIVE_UNWINDER = 1 << 3, /* --unwinder U */
};

/* Parses the options and the PID operand (optind ends after it).  Returns
 * 0, or HS_USAGE after printing the usage error. */
int cmd_live_parse(struct cmd_live *o, const char *cmd, int argc, char **argv, unsigned which);

/* Prints why talking to the payload of pid failed; returns the exit status. */
int cmd_live_conn_error(const struct cmd_live *o, int err);

/* Loads the payload and starts sampling at o->rate (messages and hints
 * printed on failure).  *already is set when it was sampling already;
 * *stats (if not NULL) gets the injector's figures.
 * Returns an hs_exit. */
struct inj_stats;
int cmd_live_load_start(const struct cmd_live *o, bool *already, struct inj_stats *stats);

struct profile;
/* Takes a snapshot of pid (whose payload must be listening), symbolizes it
 * from the live process (a warning when it cannot: raw addresses stay) and
 * sets heapsnap's drop_frames.  Returns 0 and *out, or -errno (nothing
 * printed). */
int cmd_live_take(int pid, struct profile **out);
/* The symbolization and drop_frames part of cmd_live_take, for profiles
 * that come from elsewhere (the jemalloc backend's dumps). */
void cmd_live_symbolize(int pid, struct profile *p);

/* Stops sampling and unloads (messages and hints printed on failure);
 * *was_loaded tells whether there was anything to unload.  Returns an
 * hs_exit. */
int cmd_live_unload(const struct cmd_live *o, bool *was_loaded);

struct livejem_info;

/* Should this command drive the target's jemalloc profiler?  Decides from
 * o->backend: interpose never; auto when a jemalloc library is mapped and
 * it was started with opt.prof; jemalloc when opt.prof is true, else it
 * says plainly that jemalloc's profiler is off and falls back.  Sets *use
 * and fills *info.  Returns an hs_exit (messages printed). */
int cmd_live_pick_jemalloc(const struct cmd_live *o, bool *use, struct livejem_info *info);

/* Should this command drive gperftools' heap profiler?  --backend
 * gperftools: yes when the process has it (else an error); auto: when it
 * is running already.  *running: it runs now; *ours: heapsnap started it.
 * Returns an hs_exit (messages printed). */
int cmd_live_pick_gperf(const struct cmd_live *o, bool *use, bool *running, bool *ours);

/* Prints "cannot WHAT in pid N: REASON" and the hint that helps (the
 * payload left loaded, attach problems); returns the exit status. */
int cmd_live_step_error(const struct cmd_live *o, const char *what, int err, bool left,
		       const char *reason);

#endif
