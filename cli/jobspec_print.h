/*
 * jobspec_print.h: a job spec as the CLI shows it: JSON (for --json) or aligned key=value
 * lines. Shared by `gsched check` and, later, `gsched show`.
 */
#ifndef GS_CLI_JOBSPEC_PRINT_H
#define GS_CLI_JOBSPEC_PRINT_H

#include "common/buf.h"
#include "common/jobspec.h"
#include "common/json.h"

/* Writes spec as one JSON object value into j (keys as in the job file). */
void cli_jobspec_json(struct gs_json *j, const struct gs_jobspec *spec);
/* Appends "key = value" lines, one per set field. Returns 0 or -ENOMEM. */
int cli_jobspec_text(struct gs_buf *out, const struct gs_jobspec *spec);

#endif
