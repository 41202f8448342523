/* cmd_diff.c - placeholder until the command lands; replaced by its owner. */
#include "cmd.h"
#include "hs.h"

int do_diff(int argc, char **argv)
{
	hs_err("diff: not implemented yet");
	return HS_FAIL;
}
