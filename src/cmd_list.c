/* cmd_list.c - `heapsnap list REGEX FILE`: per-source-line memory of matching functions, pprof's -list layout. */
#include <getopt.h>

#include "cmd.h"
#include "cmd_report.h"
#include "hs.h"

int do_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "sample-index", required_argument, NULL, OPT_SAMPLE_INDEX },
		{ "focus", required_argument, NULL, OPT_FOCUS },
		{ "ignore", required_argument, NULL, OPT_IGNORE },
		{ "unit", required_argument, NULL, OPT_UNIT },
		{ "base", required_argument, NULL, OPT_BASE },
		{ NULL, 0, NULL, 0 },
	};
	struct cmd_report c;
	int opt, rc;

	cmd_report_init(&c, "list", REP_LIST);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":j", opts, NULL)) != -1) {
		if (opt == '?' || opt == ':')
			return cmd_report_bad_option("list", opt, argv);
		if ((rc = cmd_report_opt(&c, opt, optarg)))
			return HS_USAGE;
	}
	if (argc - optind != 2)
		return hs_usage_err("list", argc - optind > 2 ? "too many operands" :
				    "expected a regex and a profile file");
	c.o.symbol = argv[optind];
	return cmd_report_run(&c, argv[optind + 1]);
}
