/* cmd_top.c - `heapsnap top FILE`: the call sites holding the most memory, pprof's -top layout. */
#include <getopt.h>

#include "cmd.h"
#include "cmd_report.h"
#include "hs.h"

int do_top(int argc, char **argv)
{
	static const struct option opts[] = {
		CMD_REPORT_OPTS,
		{ "nodecount", required_argument, NULL, 'n' },
		{ "cum", no_argument, NULL, OPT_CUM },
		{ "base", required_argument, NULL, OPT_BASE },
		{ NULL, 0, NULL, 0 },
	};
	struct cmd_report c;
	int opt, rc;

	cmd_report_init(&c, "top", REP_TOP);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":jn:", opts, NULL)) != -1) {
		if (opt == 'n')
			rc = cmd_report_count(&c, optarg);
		else if (opt == '?' || opt == ':')
			return cmd_report_bad_option("top", opt, argv);
		else
			rc = cmd_report_opt(&c, opt, optarg);
		if (rc)
			return HS_USAGE;
	}
	if (argc - optind != 1)
		return hs_usage_err("top", argc - optind ? "too many operands" : "no profile file given");
	return cmd_report_run(&c, argv[optind]);
}
