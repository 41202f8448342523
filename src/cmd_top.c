/* cmd_top.c - `heapsnap top FILE`: the call sites holding the most memory, pprof's -top layout. */
#include "cmd.h"
#include "cmd_report.h"

int do_top(int argc, char **argv)
{
	return cmd_report_graph(argc, argv, "top", REP_TOP);
}
