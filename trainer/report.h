/*
 * report.h: progress reports from a training run to the gsched scheduler, so that
 * `gsched show JOB` can say how far the job has got (proto/gsched.proto, JobProgressReport).
 *
 * Only inside a gsched job: GSCHED_JOB_ID names the job and GSCHED_SOCKET the CLI socket its
 * tasks reach gschedd by (their node's worker relays it). Rank 0 alone reports, every
 * log_every steps as the human metrics line, after each evaluation, at the last step and
 * when the run stops early. A report is one short blocking exchange bounded by
 * TRN_REPORT_TIMEOUT_MS: training never waits longer than that for one, and a report that
 * fails is dropped. The first failure is one warning line; gschedd refusing a report, or
 * TRN_REPORT_MAX_FAILURES failures in a row, turns reports off for the rest of the run.
 * Not thread-safe: the training loop's thread only.
 */
#ifndef TRN_REPORT_H
#define TRN_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/gsched.pb-c.h"
#include "trainer/metrics.h"

#define TRN_REPORT_TIMEOUT_MS 200
#define TRN_REPORT_MAX_FAILURES 5

struct trn_report;

/*
 * Reports for the job the environment names, every `every` steps (0 counts as 1), warnings
 * to warn (NULL: none). *ret is NULL, and 0 returned, when the process is not in a gsched
 * job (GSCHED_JOB_ID or GSCHED_SOCKET unset or unusable). Returns 0 or -ENOMEM.
 */
int trn_report_open(uint32_t every, FILE *warn, struct trn_report **ret);
void trn_report_free(struct trn_report *r); /* NULL is allowed */

/* An evaluation after `step` steps done: its loss goes with the next report, which is due. */
void trn_report_eval(struct trn_report *r, uint64_t step, double loss);
/* The latest checkpoint was on disk at wall_ms: gschedd counts a preemption's lost work
 * from there (scheduler/preempt.h). */
void trn_report_checkpoint(struct trn_report *r, uint64_t wall_ms);
/*
 * The step just recorded: sends a report when one is due (see above) or force is set (the
 * run stops). Failures are handled here; r may be NULL (nothing happens).
 */
void trn_report_step(struct trn_report *r, const struct trn_step_record *rec, bool force);

/*
 * One report to the gschedd (or worker relay) at socket_path, the whole exchange within
 * timeout_ms. Returns 0 when it was taken; when it was refused, the ErrorReply's code with
 * its message in why and *ret_refused (may be NULL) set; else -errno or a GS_PROTO_ERR_*
 * with what failed in why.
 */
int trn_report_send(const char *socket_path, const Gs__JobProgressReport *msg, int timeout_ms,
                    bool *ret_refused, char *why, size_t size);

#endif
