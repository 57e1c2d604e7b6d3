/*
 * config_qos.c: [[qos]] in gsched.toml (common/config.h): the qualities of service a job
 * may ask for (sbatch -q, a job file's qos): a priority for the multifactor QOS factor, a
 * preemption tier, limits on what one user or account runs in it at once, and the longest
 * time limit a job of it may have. config.c registers the reader; gschedd applies them
 * (scheduler/qos.c, docs/policy.md). A job naming no QOS is "normal": limits apply to it
 * only when a [[qos]] of that name is configured.
 */
#include "common/config_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/jobspec.h"
#include "common/units.h"

#define CFG(c) ((struct gs_config *)(c)->target)
#define LIMIT_MAX 1000000
#define TIER_MAX 100

static struct gs_config_qos *current(struct gs_schema_ctx *c)
{
    return &CFG(c)->qos[CFG(c)->nqos - 1];
}

static void rd_name(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *name = NULL;

    if (gs_schema_string(c, v, "qos.name", &name) < 0 || name == NULL)
        return;
    if (!gs_jobspec_name_ok(name) || strpbrk(name, " ,") != NULL) {
        GS_SCHEMA_REPORT_AT(c, v, "qos.name must be one word without ',' or '/'");
        goto out;
    }
    for (size_t i = 0; i + 1 < CFG(c)->nqos; i++) {
        if (CFG(c)->qos[i].name != NULL && strcmp(CFG(c)->qos[i].name, name) == 0) {
            GS_SCHEMA_REPORT_AT(c, v, "qos '%s' is defined twice", name);
            goto out;
        }
    }
    free(current(c)->name);
    current(c)->name = name;
    name = NULL;
out:
    free(name);
}

static void rd_priority(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "qos.priority", 0, LIMIT_MAX, &current(c)->priority);
}

static void rd_tier(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "qos.tier", 0, TIER_MAX, &current(c)->tier);
}

static void rd_max_gpus_per_user(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "qos.max_gpus_per_user", 0, LIMIT_MAX, &current(c)->max_gpus_per_user);
}

static void rd_max_jobs_per_user(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "qos.max_jobs_per_user", 0, LIMIT_MAX, &current(c)->max_jobs_per_user);
}

static void rd_max_gpus_per_account(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "qos.max_gpus_per_account", 0, LIMIT_MAX,
                   &current(c)->max_gpus_per_account);
}

static void rd_max_jobs_per_account(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "qos.max_jobs_per_account", 0, LIMIT_MAX,
                   &current(c)->max_jobs_per_account);
}

static void rd_max_wall(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_duration(c, v, "qos.max_wall", 60, false, &current(c)->max_wall_s);
}

const struct gs_schema_key gs_config_qos_keys[] = {
    {"name", rd_name},
    {"priority", rd_priority},
    {"tier", rd_tier},
    {"max_gpus_per_user", rd_max_gpus_per_user},
    {"max_jobs_per_user", rd_max_jobs_per_user},
    {"max_gpus_per_account", rd_max_gpus_per_account},
    {"max_jobs_per_account", rd_max_jobs_per_account},
    {"max_wall", rd_max_wall},
    {NULL, NULL},
};

void gs_config_qos_free(struct gs_config *cfg)
{
    for (size_t i = 0; i < cfg->nqos; i++)
        free(cfg->qos[i].name);
    free(cfg->qos);
    cfg->qos = NULL;
    cfg->nqos = 0;
}

void gs_config_read_qos(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    struct gs_config *cfg = CFG(c);
    size_t n = gs_toml_count(v);

    if (gs_toml_type(v) != GS_TOML_ARRAY || n > GS_CONFIG_MAX_QOS - cfg->nqos) {
        GS_SCHEMA_REPORT_AT(c, v, "qos must be an array of tables ([[qos]]), at most %d",
                            GS_CONFIG_MAX_QOS);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct gs_toml_value *t = gs_toml_at(v, i);
        struct gs_config_qos *q;

        if (gs_toml_type(t) != GS_TOML_TABLE) {
            GS_SCHEMA_REPORT_AT(c, t, "qos must be an array of tables ([[qos]])");
            continue;
        }
        q = realloc(cfg->qos, (cfg->nqos + 1) * sizeof(*q));
        if (q == NULL) {
            c->enomem = true;
            return;
        }
        cfg->qos = q;
        cfg->qos[cfg->nqos++] = (struct gs_config_qos){.max_wall_s = GS_DURATION_INFINITE};
        gs_schema_read_section(c, t, "qos");
        if (current(c)->name == NULL)
            GS_SCHEMA_REPORT_AT(c, t, "qos needs a name");
    }
}

const struct gs_config_qos *gs_config_qos(const struct gs_config *cfg, const char *name)
{
    if (name == NULL || name[0] == '\0')
        name = GS_CONFIG_DEFAULT_QOS;
    for (size_t i = 0; i < cfg->nqos; i++) {
        if (cfg->qos[i].name != NULL && strcmp(cfg->qos[i].name, name) == 0)
            return &cfg->qos[i];
    }
    return NULL;
}
