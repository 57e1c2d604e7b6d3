/*
 * mail.h: what gschedd mails a job's user about, pure: given a job whose state changed
 * (from the state its last decision saw) or whose run has passed a share of its time limit,
 * which messages are due under its mail types (sbatch --mail-type, common/jobspec_mail.h)
 * and their subjects, in Slurm's words. The elements of an array are mailed about as one
 * job (BEGIN when the first starts, END or FAIL when the last ends) unless it asks for
 * ARRAY_TASKS. sched_mail.c sends them.
 */
#ifndef SCHED_MAIL_H
#define SCHED_MAIL_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "scheduler/jobs.h"

enum sched_mail_event {
    SCHED_MAIL_BEGAN,
    SCHED_MAIL_ENDED,
    SCHED_MAIL_FAILED,
    SCHED_MAIL_REQUEUED,
    SCHED_MAIL_TIME_LIMIT,     /* ended by its time limit */
    SCHED_MAIL_TIME_SHARE,     /* has run 50, 80 or 90 % of it */
    SCHED_MAIL_INVALID_DEPEND, /* waits for a dependency that can never be met, or was
                                * cancelled for it (kill_invalid_depend) */
};

struct sched_mail_msg {
    enum sched_mail_event event;
    uint32_t pct;       /* SCHED_MAIL_TIME_SHARE's */
    bool array_summary; /* about a whole array (its elements' states and exit codes) */
};

#define SCHED_MAIL_MAX 3 /* messages one change can make due */

/*
 * The messages due now that job went from before to its state (before == its state: none),
 * into out; how many. jobs finds an array's other elements.
 */
size_t sched_mail_due(const struct sched_jobs *jobs, const struct sched_job *job,
                      enum sched_job_state before, struct sched_mail_msg out[SCHED_MAIL_MAX]);
/*
 * For a running job at now_ms: the highest of the 50/80/90 % shares of its time limit it
 * asked about and has reached but not been mailed about (its bit into *ret_bit, for
 * job->mail_sent: the lower ones count as sent with it); 0 for none.
 */
uint32_t sched_mail_time_share(const struct sched_job *job, uint64_t now_ms, uint32_t *ret_bit);
/* Whether a pending job waits for a dependency that can never be met and asked to hear
 * of it (INVALID_DEPEND) and has not yet; its bit is then to go into job->mail_sent. */
bool sched_mail_invalid_depend(const struct sched_job *job);
/* msg's subject ("Slurm Job_id=42 Name=train Ended, Run time 00:10:02, COMPLETED,
 * ExitCode 0") and the word for SLURM_JOB_MAIL_TYPE ("Ended") into subject and type. */
void sched_mail_subject(const struct sched_jobs *jobs, const struct sched_job *job,
                        const struct sched_mail_msg *msg, uint64_t now_ms, struct gs_buf *subject,
                        const char **ret_type);

#endif
