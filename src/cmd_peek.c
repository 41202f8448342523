/* cmd_peek.c - `heapsnap peek REGEX FILE`: callers and callees of matching functions, pprof's -peek layout. */
#include <getopt.h>

#include "cmd.h"
#include "cmd_report.h"
#include "hs.h"

int do_peek(int argc, char **argv)
{
	static const struct option opts[] = {
		CMD_REPORT_OPTS,
		{ "cum", no_argument, NULL, OPT_CUM },
		{ "base", required_argument, NULL, OPT_BASE },
		{ NULL, 0, NULL, 0 },
	};
	struct cmd_report c;
	int opt, rc;

	cmd_report_init(&c, "peek", REP_PEEK);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":j", opts, NULL)) != -1) {
		if (opt == '?' || opt == ':')
			return cmd_report_bad_option("peek", opt, argv);
		if ((rc = cmd_report_opt(&c, opt, optarg)))
			return HS_USAGE;
	}
	if (argc - optind != 2)
		return hs_usage_err("peek", argc - optind > 2 ? "too many operands" :
				    "expected a regex and a profile file");
	c.o.symbol = argv[optind];
	return cmd_report_run(&c, argv[optind + 1]);
}
