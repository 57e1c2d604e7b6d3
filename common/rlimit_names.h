/*
 * rlimit_names.h: the resource limits sbatch --propagate names (Slurm's: AS, CORE, CPU,
 * DATA, FSIZE, MEMLOCK, NOFILE, NPROC, RSS, STACK) and their setrlimit(2) resources. The
 * CLI reads the submitting shell's soft limits by these names; the worker sets them on the
 * job's tasks. Pure; any thread.
 */
#ifndef GS_COMMON_RLIMIT_NAMES_H
#define GS_COMMON_RLIMIT_NAMES_H

#include <stddef.h>

#define GS_RLIMIT_COUNT 10

/* The i-th name (i < GS_RLIMIT_COUNT), in Slurm's order. */
const char *gs_rlimit_name(size_t i);
/* The RLIMIT_ resource of name (any case), or -1 when it names none. */
int gs_rlimit_resource(const char *name);

#endif
