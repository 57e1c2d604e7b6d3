/*
 * license.c: cluster-wide licenses at submit and in the planning pass (see license.h).
 *
 * Licenses are counted per pass from the running jobs rather than kept as a tally, so a
 * restart, a requeue or a configuration that lowers a count can never leave a tally wrong.
 * The pass itself (who waits, who holds a reservation, who may take some now) is plan.c's,
 * over the needs made here.
 */
#include "scheduler/license.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sched_license_use_init(struct sched_license_use *u, const struct gs_config *cfg)
{
    *u = (struct sched_license_use){.cfg = cfg};
    if (cfg->nlicenses == 0)
        return 0;
    u->used = calloc(cfg->nlicenses, sizeof(*u->used));
    return u->used != NULL ? 0 : -ENOMEM;
}

void sched_license_use_release(struct sched_license_use *u)
{
    free(u->used);
    u->used = NULL;
}

/* The index of the license named in cfg->licenses, or -1. */
static long find(const struct gs_config *cfg, const char *name)
{
    const struct gs_config_license *l = gs_config_license(cfg, name);

    return l != NULL ? (long)(l - cfg->licenses) : -1;
}

void sched_license_take(struct sched_license_use *u, const struct gs_jobspec *spec)
{
    for (size_t i = 0; u->used != NULL && i < spec->nlicenses; i++) {
        long k = find(u->cfg, spec->licenses[i].name);
        uint32_t total;

        if (k < 0)
            continue;
        total = u->cfg->licenses[k].count;
        u->used[k] = spec->licenses[i].count >= total - u->used[k]
                         ? total
                         : u->used[k] + spec->licenses[i].count;
    }
}

uint32_t *sched_license_totals(const struct gs_config *cfg)
{
    uint32_t *total = cfg->nlicenses > 0 ? malloc(cfg->nlicenses * sizeof(*total)) : NULL;

    for (size_t i = 0; total != NULL && i < cfg->nlicenses; i++)
        total[i] = cfg->licenses[i].count;
    return total;
}

long sched_license_index(const struct gs_config *cfg, const char *name)
{
    return find(cfg, name);
}

void sched_license_needs(const struct gs_config *cfg, const struct gs_jobspec *spec,
                         struct sched_license_need *need)
{
    for (size_t i = 0; i < spec->nlicenses; i++) {
        long k = find(cfg, spec->licenses[i].name);

        need[i] = (struct sched_license_need){k >= 0 ? (uint32_t)k : (uint32_t)cfg->nlicenses,
                                              spec->licenses[i].count};
    }
}

/* "a, b, c" (the configured names) into out, cut to fit size. */
static void names(const struct gs_config *cfg, char *out, size_t size)
{
    size_t len = 0;

    out[0] = '\0';
    for (size_t i = 0; i < cfg->nlicenses && len < size; i++) {
        int n = snprintf(out + len, size - len, "%s%s", i > 0 ? ", " : "", cfg->licenses[i].name);

        if (n < 0)
            break;
        len += (size_t)n;
    }
}

int sched_license_admit(const struct gs_config *cfg, const struct gs_jobspec *spec, char *why,
                        size_t size)
{
    char known[120];

    for (size_t i = 0; i < spec->nlicenses; i++) {
        const struct gs_job_license *want = &spec->licenses[i];
        const struct gs_config_license *l = gs_config_license(cfg, want->name);

        if (l == NULL) {
            names(cfg, known, sizeof(known));
            if (cfg->nlicenses == 0)
                snprintf(why, size, "resources.licenses: this cluster has no licenses (no '%s')",
                         want->name);
            else
                snprintf(why, size, "resources.licenses: no license '%s' (this cluster has %s)",
                         want->name, known);
            return -EINVAL;
        }
        if (want->count > l->count) {
            snprintf(why, size, "resources.licenses: %u of '%s' asked for, the cluster has %u",
                     want->count, l->name, l->count);
            return -EINVAL;
        }
    }
    return 0;
}
