/*
 * jobspec_data.c: the [data] section of a job file: which dataset the job reads and how
 * its shards reach the nodes (docs/data.md). The file names the dataset's directory; the
 * CLI resolves it at submit (the id, the absolute source, shard count and bytes), so what
 * gschedd gets is checked here again as a client may send anything.
 *
 *     [data]
 *     manifest = "/data/owt"      # a `gsched shard build` directory, or its manifest.toml
 *     stage = "before"            # or "stream" (recorded; staged as before for now)
 *     tolerance = 0.05            # the shard planner's balance band
 *     seed = 0                    # the planner's tie-break seed
 */
#include "common/jobspec_data.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SPEC(c) ((struct gs_jobspec *)(c)->target)
#define REPORT_AT GS_SCHEMA_REPORT_AT

static const char *const stage_names[] = {
    [GS_DATA_STAGE_BEFORE] = "before",
    [GS_DATA_STAGE_STREAM] = "stream",
};

const char *gs_data_stage_name(enum gs_data_stage stage)
{
    return (unsigned)stage <= GS_DATA_STAGE_STREAM ? stage_names[stage] : "unknown";
}

int gs_data_stage_parse(const char *name, enum gs_data_stage *ret)
{
    for (int i = GS_DATA_STAGE_BEFORE; i <= GS_DATA_STAGE_STREAM; i++) {
        if (strcmp(name, stage_names[i]) == 0) {
            *ret = (enum gs_data_stage)i;
            return 0;
        }
    }
    return -EINVAL;
}

bool gs_data_id_valid(const char *s)
{
    size_t n = 0;

    for (; s[n] != '\0'; n++) {
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return false;
    }
    return n == GS_DATA_ID_SIZE - 1;
}

void gs_jobdata_init(struct gs_jobdata *d)
{
    memset(d, 0, sizeof(*d));
    d->tolerance = GS_DATA_TOLERANCE_DEFAULT;
}

void gs_jobdata_release(struct gs_jobdata *d)
{
    free(d->manifest);
    free(d->source);
    d->manifest = NULL;
    d->source = NULL;
}

static void rd_manifest(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *path = NULL;

    if (gs_schema_string(c, v, "data.manifest", &path) < 0 || path == NULL)
        return;
    if (path[0] == '\0') {
        REPORT_AT(c, v, "data.manifest must name a dataset directory");
        free(path);
        return;
    }
    free(SPEC(c)->data.manifest);
    SPEC(c)->data.manifest = path;
}

static void rd_stage(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *name = NULL;

    if (gs_schema_string(c, v, "data.stage", &name) < 0 || name == NULL)
        return;
    if (gs_data_stage_parse(name, &SPEC(c)->data.stage) < 0)
        REPORT_AT(c, v, "data.stage must be \"before\" or \"stream\", not \"%s\"", name);
    free(name);
}

static void rd_tolerance(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_double(c, v, "data.tolerance", 0.0, 1.0, &SPEC(c)->data.tolerance);
}

static void rd_locality_wait(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    uint64_t s;

    if (gs_schema_duration(c, v, "data.locality_wait", 1, true, &s) < 0)
        return;
    if (s > GS_DATA_LOCALITY_WAIT_MAX) {
        REPORT_AT(c, v, "data.locality_wait must be at most a day (86400 s)");
        return;
    }
    SPEC(c)->data.locality_wait_s = (uint32_t)s;
    SPEC(c)->data.locality_wait_set = true;
}

static void rd_seed(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    uint32_t seed = 0;

    if (gs_schema_uint(c, v, "data.seed", 0, UINT32_MAX, &seed) == 0)
        SPEC(c)->data.seed = seed;
}

const struct gs_schema_key gs_jobspec_data_keys[] = {
    {"manifest", rd_manifest},           {"stage", rd_stage},
    {"tolerance", rd_tolerance},         {"seed", rd_seed},
    {"locality_wait", rd_locality_wait}, {NULL, NULL},
};

int gs_jobdata_check(const struct gs_jobdata *d, struct gs_error *err)
{
    if (d->id[0] == '\0')
        return 0;
    if (!gs_data_id_valid(d->id))
        return gs_error_set(err, -EINVAL, 0, 0, "data.dataset must be 32 lowercase hex digits");
    if (d->source == NULL || d->source[0] != '/')
        return gs_error_set(err, -EINVAL, 0, 0, "data.source must be an absolute directory");
    if (d->shards == 0)
        return gs_error_set(err, -EINVAL, 0, 0, "data.shards must be at least 1");
    if ((unsigned)d->stage > GS_DATA_STAGE_STREAM)
        return gs_error_set(err, -EINVAL, 0, 0, "data.stage is not a known value");
    if (!(d->tolerance >= 0.0 && d->tolerance <= 1.0))
        return gs_error_set(err, -EINVAL, 0, 0, "data.tolerance must be within 0 .. 1");
    if (d->locality_wait_s > GS_DATA_LOCALITY_WAIT_MAX)
        return gs_error_set(err, -EINVAL, 0, 0, "data.locality_wait must be at most a day");
    return 0;
}
