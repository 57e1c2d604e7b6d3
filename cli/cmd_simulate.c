/*
 * cmd_simulate.c: `gsched simulate ...`, the trace simulator (sim/, docs/simulator.md),
 * reached as a subcommand. The simulator runs gschedd's own planning code, which the CLI
 * may not link (cli/README.md), so this execs the gsched-simulate of the same build or
 * installation with the same arguments: what it prints and its exit status are its own.
 */
#include "cli/commands.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/local.h"

int cli_cmd_simulate(int argc, char **argv)
{
    char path[PATH_MAX];

    (void)argc;
    if (cli_find_program("simulate", "gsched-simulate", path, sizeof(path)) < 0)
        return 1;
    argv[0] = "gsched-simulate";
    execv(path, argv);
    fprintf(stderr, "gsched simulate: cannot run %s: %s\n", path, strerror(errno));
    return 1;
}
