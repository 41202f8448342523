/* cmd_diff.c - `heapsnap diff BASE FILE`: what grew or shrank between two profiles, by site, percentages of the base. */
#include <getopt.h>

#include "cmd.h"
#include "cmd_report.h"
#include "hs.h"

int do_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		CMD_REPORT_OPTS,
		{ "nodecount", required_argument, NULL, 'n' },
		{ "cum", no_argument, NULL, OPT_CUM },
		{ NULL, 0, NULL, 0 },
	};
	struct cmd_report c;
	int opt, rc;

	cmd_report_init(&c, "diff", REP_DIFF);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":jn:", opts, NULL)) != -1) {
		if (opt == 'n')
			rc = cmd_report_count(&c, optarg);
		else if (opt == '?' || opt == ':')
			return cmd_report_bad_option("diff", opt, argv);
		else
			rc = cmd_report_opt(&c, opt, optarg);
		if (rc)
			return HS_USAGE;
	}
	if (argc - optind != 2)
		return hs_usage_err("diff", argc - optind > 2 ? "too many operands" :
				    "expected a base profile and a profile");
	c.base_path = argv[optind];
	return cmd_report_run(&c, argv[optind + 1]);
}
