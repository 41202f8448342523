/* cmd_list.c - placeholder until the command lands; replaced by its owner. */
#include "cmd.h"
#include "hs.h"

int do_list(int argc, char **argv)
{
	hs_err("list: not implemented yet");
	return HS_FAIL;
}
