/*
 * main.c: the gsched command's entry point. Parses the global options and dispatches to a
 * subcommand. The cluster subcommands (submit, queue, nodes, ...) arrive with the scheduler;
 * until then the command answers --version and --help and names what it does not know.
 * Exit codes: 0 success, 1 failure of the requested action, 2 bad usage.
 */
#include <stdio.h>
#include <string.h>

#include "gsched_config.h"

static const char usage_text[] =
    "usage: gsched [--version] [--help] <command> [args]\n"
    "\n"
    "gsched schedules jobs onto the GPUs of a cluster by hardware topology and launches them.\n"
    "\n"
    "options:\n"
    "  -V, --version   print the version and the optional parts this build has\n"
    "  -h, --help      print this help\n";

static void print_version(void)
{
    printf("gsched %s (cuda=%s nccl=%s mpi=%s)\n", GSCHED_VERSION, GSCHED_HAVE_CUDA ? "yes" : "no",
           GSCHED_HAVE_NCCL ? "yes" : "no", GSCHED_HAVE_MPI ? "yes" : "no");
}

int main(int argc, char **argv)
{
    const char *arg;

    if (argc < 2) {
        fputs(usage_text, stderr);
        return 2;
    }
    arg = argv[1];
    if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0 || strcmp(arg, "version") == 0) {
        print_version();
        return 0;
    }
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0 || strcmp(arg, "help") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (arg[0] == '-')
        fprintf(stderr, "gsched: unknown option '%s' (see gsched --help)\n", arg);
    else
        fprintf(stderr, "gsched: unknown command '%s' (see gsched --help)\n", arg);
    return 2;
}
