/* cmd_inject.c - placeholder until the command lands; replaced by its owner. */
#include "cmd.h"
#include "hs.h"

int do_inject(int argc, char **argv)
{
	hs_err("inject: not implemented yet");
	return HS_FAIL;
}
