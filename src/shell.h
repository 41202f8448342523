/* shell.h - the interactive heapsnap shell (attach and shell commands): snapshots, reports and live control at a readline prompt. */
#ifndef HEAPSNAP_SHELL_H
#define HEAPSNAP_SHELL_H

#include <stdint.h>

struct shell_opts {
	int pid;                /* live target, 0 for an offline shell */
	uint64_t rate;          /* rate for a `start` that has to load again */
	int timeout_ms;         /* per injector step */
	char **files;           /* profiles to load first */
	int nfiles;
};

/*
 * Runs the shell until quit, detach or end of input.  On a terminal it reads
 * with readline (prompt "(heapsnap) ", history, completion); otherwise it
 * reads lines silently, for scripts.  End of input does what `quit` does.
 * Returns an hs_exit: that of quit's unload, or HS_FAIL when commands read
 * from a non-terminal failed.
 */
int shell_run(const struct shell_opts *o);

#endif
