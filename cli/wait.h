/*
 * wait.h: waiting for jobs to start or end, for `gsched wait` and `gsched submit --wait`.
 * gschedd answers a WaitRequest when the jobs got there or its timeout_ms ran out; the CLI
 * asks again and again with short timeouts (its socket gives up after CLI_TIMEOUT_MS) and
 * keeps the overall deadline itself. While waiting, a single job's status is shown on a
 * terminal stderr as one line rewritten in place ("job 42 RUNNING 00:00:03 n1,n2");
 * elsewhere stderr gets a line per state change. Single-threaded.
 */
#ifndef GS_CLI_WAIT_H
#define GS_CLI_WAIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/gsched.pb-c.h"

struct cli_wait_opts {
    const char *cmd;     /* "wait" or "submit", for messages */
    Gs__WaitFor until;   /* WAIT_FOR_END or WAIT_FOR_START */
    uint64_t timeout_ms; /* overall; 0 waits for ever */
    uint32_t poll_ms;    /* longest single WaitRequest (at most 1 s while a line is live) */
    bool json;           /* print {"jobs":[...],"timed_out":...} on stdout at the end */
    FILE *lines;         /* where each job's end line goes when not json */
};

/*
 * Waits for jobs ids[0..n-1] (n >= 1) and prints each one's end line as it gets there
 * ("job 42 COMPLETED exit=0 elapsed=00:00:03"; for WAIT_FOR_START a running job's status
 * line). Returns the process exit status: one job: cli_job_exit_status() of its end (0
 * when it was only waited on to start and is running); several: 0 when all COMPLETED (or
 * started), else 1; 1 on timeout (after saying which jobs are not there yet) or when
 * gschedd could not be asked.
 */
int cli_wait_jobs(const char *socket_path, const uint64_t *ids, size_t n,
                  const struct cli_wait_opts *opts);

#endif
