/*
 * config_license.c: [[license]] in gsched.toml (common/config.h): the cluster-wide
 * counters Slurm calls licenses (slurm.conf's Licenses=matlab:10), each a name and how
 * many the cluster has. A job names the counts it needs (sbatch -L, a job file's
 * resources.licenses) and holds them while it runs; gschedd refuses a job naming one
 * that is not configured or more than there are, and starts one only while its counts
 * are free (scheduler/license.c).
 */
#include "common/config_internal.h"

#include <stdlib.h>
#include <string.h>

#include "common/jobspec.h"

#define CFG(c) ((struct gs_config *)(c)->target)

static struct gs_config_license *current(struct gs_schema_ctx *c)
{
    return &CFG(c)->licenses[CFG(c)->nlicenses - 1];
}

static void rd_name(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *name = NULL;

    if (gs_schema_string(c, v, "license.name", &name) < 0 || name == NULL)
        return;
    if (!gs_jobspec_word_ok(name)) {
        GS_SCHEMA_REPORT_AT(c, v,
                            "license.name must be one word of 1 to %d letters, digits, '_', '.' "
                            "or '-'",
                            GS_JOBSPEC_NAME_MAX);
        goto out;
    }
    for (size_t i = 0; i + 1 < CFG(c)->nlicenses; i++) {
        if (CFG(c)->licenses[i].name != NULL && strcmp(CFG(c)->licenses[i].name, name) == 0) {
            GS_SCHEMA_REPORT_AT(c, v, "license '%s' is defined twice", name);
            goto out;
        }
    }
    free(current(c)->name);
    current(c)->name = name;
    name = NULL;
out:
    free(name);
}

static void rd_count(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "license.count", 1, GS_LICENSE_COUNT_MAX, &current(c)->count);
}

const struct gs_schema_key gs_config_license_keys[] = {
    {"name", rd_name},
    {"count", rd_count},
    {NULL, NULL},
};

void gs_config_licenses_free(struct gs_config *cfg)
{
    for (size_t i = 0; i < cfg->nlicenses; i++)
        free(cfg->licenses[i].name);
    free(cfg->licenses);
    cfg->licenses = NULL;
    cfg->nlicenses = 0;
}

static bool add(struct gs_schema_ctx *c)
{
    static const struct gs_config_license none;
    struct gs_config_license *l =
        gs_config_append(c, CFG(c)->licenses, &CFG(c)->nlicenses, sizeof(*l), &none);

    if (l != NULL)
        CFG(c)->licenses = l;
    return l != NULL;
}

/* A name or count given but refused has been reported where it stands. */
static void after(struct gs_schema_ctx *c, const struct gs_toml_value *t)
{
    if (gs_toml_get(t, "name") == NULL)
        GS_SCHEMA_REPORT_AT(c, t, "license needs a name");
    if (gs_toml_get(t, "count") == NULL)
        GS_SCHEMA_REPORT_AT(c, t, "license needs a count (1 to %u)", GS_LICENSE_COUNT_MAX);
}

void gs_config_read_licenses(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_config_read_tables(c, v, "license", CFG(c)->nlicenses, GS_CONFIG_MAX_LICENSES, add, after);
}

const struct gs_config_license *gs_config_license(const struct gs_config *cfg, const char *name)
{
    for (size_t i = 0; name != NULL && i < cfg->nlicenses; i++) {
        if (cfg->licenses[i].name != NULL && strcmp(cfg->licenses[i].name, name) == 0)
            return &cfg->licenses[i];
    }
    return NULL;
}
