/* main.c — the xpcsfit program (spec/cli.md): the shared dispatch (dispatch.c) in one
 * process. */
#include "cli/commands.h"

int main(int argc, char **argv)
{
	return xf_cli_main(argc, argv);
}
