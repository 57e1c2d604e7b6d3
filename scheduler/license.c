/*
 * license.c: cluster-wide licenses at submit and in the planning pass (see license.h).
 *
 * A job waiting for licenses holds no backfill reservation, as a job held back by a QOS
 * limit holds none (both are the planner's gate, plan.h). Instead the licenses it names
 * are claimed for the rest of the pass: the jobs behind it that need none of them start,
 * those that need some wait behind it even where enough are free, so that it starts as
 * soon as the running jobs give back what it needs. Licenses are counted per pass from the
 * running jobs rather than kept as a tally, so a restart, a requeue or a configuration
 * that lowers a count can never leave a tally wrong.
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
    u->claimed = calloc(cfg->nlicenses, sizeof(*u->claimed));
    if (u->used == NULL || u->claimed == NULL) {
        sched_license_use_release(u);
        return -ENOMEM;
    }
    return 0;
}

void sched_license_use_release(struct sched_license_use *u)
{
    free(u->used);
    free(u->claimed);
    u->used = NULL;
    u->claimed = NULL;
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

bool sched_license_free_for(const struct sched_license_use *u, const struct gs_jobspec *spec)
{
    for (size_t i = 0; i < spec->nlicenses; i++) {
        long k = u->used != NULL ? find(u->cfg, spec->licenses[i].name) : -1;

        if (k < 0 || spec->licenses[i].count > u->cfg->licenses[k].count - u->used[k])
            return false;
    }
    return true;
}

bool sched_license_gate(struct sched_license_use *u, const struct gs_jobspec *spec)
{
    bool ok = sched_license_free_for(u, spec), ever = u->claimed != NULL;

    for (size_t i = 0; ok && i < spec->nlicenses; i++)
        ok = !u->claimed[find(u->cfg, spec->licenses[i].name)]; /* free_for found each */
    /* One that can never have its counts (a license since taken out of the configuration,
     * or lowered below them) claims nothing: it would keep the others waiting for good. */
    for (size_t i = 0; !ok && ever && i < spec->nlicenses; i++) {
        long k = find(u->cfg, spec->licenses[i].name);

        ever = k >= 0 && spec->licenses[i].count <= u->cfg->licenses[k].count;
    }
    for (size_t i = 0; !ok && ever && i < spec->nlicenses; i++)
        u->claimed[find(u->cfg, spec->licenses[i].name)] = true;
    return ok;
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
