/* cmd_top.c - placeholder until the command lands; replaced by its owner. */
#include "cmd.h"
#include "hs.h"

int do_top(int argc, char **argv)
{
	hs_err("top: not implemented yet");
	return HS_FAIL;
}
