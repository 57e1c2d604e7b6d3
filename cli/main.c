/*
 * main.c: the gsched command's entry point: global options, then dispatch to a subcommand
 * (cli/commands.h). The cluster subcommands (submit, queue, nodes, ...) join the table as
 * the scheduler gains them. Exit codes: 0 success, 1 the requested action failed, 2 bad
 * usage.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "gsched_config.h"

static const char usage_text[] =
    "usage: gsched [--version] [--help] <command> [args]\n"
    "\n"
    "gsched schedules jobs onto the GPUs of a cluster by hardware topology and launches them.\n"
    "\n"
    "commands:\n"
    "  check JOB.toml [--json]   check a job file and show the job as gsched reads it\n"
    "  nodes [--json] [NODE...]  the cluster's nodes: state, free GPUs, cores, memory\n"
    "\n"
    "options:\n"
    "  -V, --version   print the version and the optional parts this build has\n"
    "  -h, --help      print this help\n";

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
};

static const struct command commands[] = {
    {"check", cli_cmd_check},
    {"nodes", cli_cmd_nodes},
};

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "gsched %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see gsched --help)\n");
    return 2;
}

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
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(arg, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    }
    if (arg[0] == '-')
        fprintf(stderr, "gsched: unknown option '%s' (see gsched --help)\n", arg);
    else
        fprintf(stderr, "gsched: unknown command '%s' (see gsched --help)\n", arg);
    return 2;
}
