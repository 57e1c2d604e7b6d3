/*
 * cmd_scontrol.c: `gsched scontrol show hostnames [LIST]`, the piece of Slurm's scontrol
 * that job scripts use most: it expands a hostlist (`node[1-3,7]`) into one name per line,
 * the way multi-node torchrun scripts pick their rendezvous host
 * (`head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)`). Without LIST it
 * reads $SLURM_JOB_NODELIST, then $GSCHED_NODELIST. Other scontrol commands are not here yet
 * and say so.
 */
#include "cli/commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hostlist.h"

static int show_hostnames(int argc, char **argv)
{
    const char *list = argc > 0 ? argv[0] : getenv("SLURM_JOB_NODELIST");
    struct gs_error err;
    char **names = NULL;
    size_t n = 0;

    if (argc > 1)
        return cli_usage_error("scontrol", "show hostnames takes one hostlist, not '%s'", argv[1]);
    if (list == NULL)
        list = getenv("GSCHED_NODELIST");
    if (list == NULL) {
        fprintf(stderr, "gsched scontrol: no hostlist given and SLURM_JOB_NODELIST is not set\n");
        return 1;
    }
    gs_error_clear(&err);
    if (gs_hostlist_expand(list, &names, &n, &err) < 0) {
        fprintf(stderr, "gsched scontrol: hostlist '%s', column %d: %s\n", list, err.col, err.msg);
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        printf("%s\n", names[i]);
    gs_hostlist_free(names);
    return fflush(stdout) == 0 ? 0 : 1;
}

int cli_cmd_scontrol(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "show") == 0 &&
        (strcmp(argv[2], "hostnames") == 0 || strcmp(argv[2], "hostname") == 0))
        return show_hostnames(argc - 3, argv + 3);
    if (argc < 2)
        return cli_usage_error("scontrol", "which command? (scontrol show hostnames [LIST])");
    fprintf(stderr, "gsched scontrol: '%s%s%s' is not supported yet; only show hostnames is\n",
            argv[1], argc > 2 ? " " : "", argc > 2 ? argv[2] : "");
    return 2;
}
