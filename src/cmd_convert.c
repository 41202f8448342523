/* cmd_convert.c - placeholder until the command lands; replaced by its owner. */
#include "cmd.h"
#include "hs.h"

int do_convert(int argc, char **argv)
{
	hs_err("convert: not implemented yet");
	return HS_FAIL;
}
