/* cmd_tree.c - `heapsnap tree FILE`: every node with its callers and callees, pprof's -tree layout. */
#include "cmd.h"
#include "cmd_report.h"

int do_tree(int argc, char **argv)
{
	return cmd_report_graph(argc, argv, "tree", REP_TREE);
}
