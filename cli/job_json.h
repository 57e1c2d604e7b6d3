/*
 * job_json.h: the job messages of proto/gsched.proto as the CLI's --json output. Keys are
 * the proto's field names; enums are their value names without the type prefix ("state":
 * "PENDING", "end_reason": "LAUNCH_FAILED", "type": "AFTEROK"); times stay ms since the
 * epoch and durations their proto units, so a program reads exactly what gschedd sent: a
 * suspended job is "state": "RUNNING" with "suspended": true, where the text views say
 * SUSPENDED. Absent submessages are null. Each writer emits one value into j (after a key,
 * in an array, or at the top); errors are j's sticky error. Thread-safe.
 */
#ifndef GS_CLI_JOB_JSON_H
#define GS_CLI_JOB_JSON_H

#include <stdio.h>

#include "common/json.h"
#include "proto/gsched.pb-c.h"

void cli_json_job_info(struct gs_json *j, const Gs__JobInfo *job);
void cli_json_job_spec(struct gs_json *j, const Gs__JobSpec *spec);
void cli_json_state_change(struct gs_json *j, const Gs__JobStateChange *c);
void cli_json_task_exit(struct gs_json *j, const Gs__TaskExit *t);
void cli_json_action_result(struct gs_json *j, const Gs__JobActionResult *r);

/*
 * Finishes j (initialised on out) and writes out plus a newline to f, then empties out.
 * Returns 0, j's error, or -EIO.
 */
int cli_json_write(struct gs_json *j, struct gs_buf *out, FILE *f);

#endif
