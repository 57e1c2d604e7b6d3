/*
 * usage_print.h: a job's use of its allocation (gs.JobUsage, from gschedd's telemetry) for
 * people and scripts: the "Usage:" line of `gsched show`, the "usage" object of every
 * --json job, and `gsched seff`'s efficiency report.
 */
#ifndef GS_CLI_USAGE_PRINT_H
#define GS_CLI_USAGE_PRINT_H

#include "common/buf.h"
#include "common/json.h"
#include "proto/gsched.pb-c.h"

/*
 * One line (and the idle GPUs on a second) for `gsched show`, nothing when u is NULL or
 * no telemetry came:
 *   Usage: GPUs=2 Used=1 GPUUtil=41.0% GPUUtilMax=97% GPUIdle=50% GPUHours=0.12 ...
 */
int cli_usage_show(struct gs_buf *out, const Gs__JobUsage *u);
/* "usage": {...} with every field, or null when u is NULL. */
void cli_usage_json(struct gs_json *j, const Gs__JobUsage *u);
/* CPU efficiency in % of cores x wall time, or -1 when unknown. */
double cli_usage_cpu_eff(const Gs__JobUsage *u);

#endif
