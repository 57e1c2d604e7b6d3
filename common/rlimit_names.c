/*
 * rlimit_names.c: Slurm's names of the propagated resource limits (see rlimit_names.h).
 */
#include "common/rlimit_names.h"

#include <strings.h>
#include <sys/resource.h>

static const struct {
    const char *name;
    int resource;
} limits[GS_RLIMIT_COUNT] = {
    {"AS", RLIMIT_AS},         {"CORE", RLIMIT_CORE},   {"CPU", RLIMIT_CPU},
    {"DATA", RLIMIT_DATA},     {"FSIZE", RLIMIT_FSIZE}, {"MEMLOCK", RLIMIT_MEMLOCK},
    {"NOFILE", RLIMIT_NOFILE}, {"NPROC", RLIMIT_NPROC}, {"RSS", RLIMIT_RSS},
    {"STACK", RLIMIT_STACK},
};

const char *gs_rlimit_name(size_t i)
{
    return i < GS_RLIMIT_COUNT ? limits[i].name : NULL;
}

int gs_rlimit_resource(const char *name)
{
    for (size_t i = 0; i < GS_RLIMIT_COUNT; i++)
        if (strcasecmp(name, limits[i].name) == 0)
            return limits[i].resource;
    return -1;
}
