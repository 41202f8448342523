/* hs.h - what every command shares: exit codes, user messages, option helpers. */
#ifndef HEAPSNAP_HS_H
#define HEAPSNAP_HS_H

#include <stdbool.h>
#include <stdint.h>

/* Exit statuses (DESIGN.md section 4; documented in man/heapsnap.1). */
enum hs_exit {
	HS_OK = 0,          /* done */
	HS_FAIL = 1,        /* failed; the target is untouched or fully restored */
	HS_FAIL_LOADED = 2, /* failed after load; the payload may still be in the target */
	HS_USAGE = 64,      /* bad command line */
};

/* Global options, set by main before a command runs. */
extern bool opt_json;    /* -j/--json: stdout holds one JSON document or nothing */
extern int opt_verbose;  /* -v (repeatable) */
extern bool opt_quiet;   /* -q */

/* One line on stderr: "heapsnap: <msg>".  hs_hint adds "heapsnap: hint: <msg>".
 * hs_debug prints only with -v. */
void hs_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hs_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hs_hint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hs_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "heapsnap: <msg>" plus the command's usage line; returns HS_USAGE. */
int hs_usage_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses a non-negative integer with optional K/M/G (1024-based) suffix. */
int hs_parse_size(const char *s, int64_t *out);
/* Parses a PID (positive decimal). */
int hs_parse_pid(const char *s, int *out);

#endif
