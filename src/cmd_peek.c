/* cmd_peek.c - placeholder until the command lands; replaced by its owner. */
#include "cmd.h"
#include "hs.h"

int do_peek(int argc, char **argv)
{
	hs_err("peek: not implemented yet");
	return HS_FAIL;
}
