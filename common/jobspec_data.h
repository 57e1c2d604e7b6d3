/*
 * jobspec_data.h: the [data] section of a job file (struct gs_jobdata in jobspec.h), for
 * jobspec.c and proto/jobspec.c; kept apart so that the job-file reader stays one file per
 * concern.
 */
#ifndef GS_JOBSPEC_DATA_H
#define GS_JOBSPEC_DATA_H

#include "common/error.h"
#include "common/jobspec.h"
#include "common/schema.h"

/* The keys of [data]; the target of the schema context is the struct gs_jobspec. */
extern const struct gs_schema_key gs_jobspec_data_keys[];

/* Checks what a spec from elsewhere (the wire) says of its dataset. 0 or -EINVAL. */
int gs_jobdata_check(const struct gs_jobdata *d, struct gs_error *err);

#endif
