/* cmd_attach.c - `heapsnap attach PID` and `heapsnap shell [FILE...]`: the interactive shell, on a live process or on files. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "cmd_live.h"
#include "hs.h"
#include "shell.h"

int do_attach(int argc, char **argv)
{
	struct cmd_live o;
	struct shell_opts so = { 0 };
	int ret = cmd_live_parse(&o, "attach", argc, argv, CMD_LIVE_RATE | CMD_LIVE_BACKEND);

	if (ret)
		return ret;
	if (optind != argc)
		return hs_usage_err("attach", "too many operands");
	/* Loading and starting is exactly `heapsnap start` (which says
	 * "already sampling" or resumes a paused payload). */
	optind = 0;
	ret = do_start(argc, argv);
	if (ret)
		return ret;
	fflush(stdout);
	so.pid = o.pid;
	so.rate = o.rate;
	so.timeout_ms = o.timeout_ms;
	return shell_run(&so);
}

int do_shell(int argc, char **argv)
{
	struct shell_opts so = { 0 };
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))  {
			i++;
			break;
		}
		if (argv[i][0] != '-' || !argv[i][1])
			break;
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json"))
			opt_json = true;
		else
			return hs_usage_err("shell", "unknown option '%s'", argv[i]);
	}
	so.files = argv + i;
	so.nfiles = argc - i;
	return shell_run(&so);
}
