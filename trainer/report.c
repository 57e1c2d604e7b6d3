/*
 * report.c: progress reports to gschedd (see report.h). Each report is its own connection,
 * as every gsched CLI request is: hello, one JobProgressReport, one reply, through
 * trn_gschedd_call (gschedd.h), which bounds the whole exchange by one deadline.
 */
#define _POSIX_C_SOURCE 200809L

#include "trainer/report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/gschedd.h"

struct trn_report {
    char socket_path[TRN_GSCHEDD_PATH_MAX];
    uint64_t job_id;
    uint32_t every;
    FILE *warn;
    bool warned;       /* the one warning line is out */
    bool off;          /* refused, or failing too often: no more reports */
    unsigned failures; /* in a row */
    bool eval_due;     /* an evaluation since the last report */
    double eval_loss;  /* 0: none yet, as on the wire */
    uint64_t eval_step;
    uint64_t checkpoint_ms; /* the latest checkpoint's wall time on disk, 0 none */
};

int trn_report_open(uint32_t every, FILE *warn, struct trn_report **ret)
{
    char sock[TRN_GSCHEDD_PATH_MAX];
    struct trn_report *r;
    uint64_t job_id;

    *ret = NULL;
    if (trn_gschedd_job(&job_id, sock, sizeof(sock)) < 0)
        return 0; /* not in a job: nothing to report to */
    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return -ENOMEM;
    memcpy(r->socket_path, sock, sizeof(sock));
    r->job_id = job_id;
    r->every = every > 0 ? every : 1;
    r->warn = warn;
    *ret = r;
    return 0;
}

void trn_report_free(struct trn_report *r)
{
    free(r);
}

void trn_report_eval(struct trn_report *r, uint64_t step, double loss)
{
    if (r == NULL)
        return;
    r->eval_due = true;
    r->eval_loss = loss;
    r->eval_step = step;
}

int trn_report_send(const char *socket_path, const Gs__JobProgressReport *msg, int timeout_ms,
                    bool *ret_refused, char *why, size_t size)
{
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    int rc;

    env.body_case = GS__ENVELOPE__BODY_JOB_PROGRESS_REPORT;
    env.job_progress_report = (Gs__JobProgressReport *)msg;
    rc = trn_gschedd_call(socket_path, &env, GS__ENVELOPE__BODY_JOB_PROGRESS_REPLY, 0, timeout_ms,
                          &reply, ret_refused, why, size);
    gs_proto_envelope_free(reply);
    return rc;
}

/* 1 - exposed / total, within [0, 1], as the metrics line has it. */
static double overlap_of(const struct trn_step_record *rec)
{
    double o = rec->comm_ms > 0 ? 1.0 - rec->exposed_ms / rec->comm_ms : 1.0;

    return o < 0 ? 0 : o;
}

static void fill(const struct trn_report *r, const struct trn_step_record *rec,
                 Gs__JobProgressReport *m)
{
    double secs = rec->step_ms / 1000.0;

    gs__job_progress_report__init(m);
    m->job_id = r->job_id;
    m->step = rec->step + 1; /* steps done: the last report of a full run says steps/steps */
    m->steps = rec->steps;
    m->loss = rec->loss;
    m->tokens_per_s = secs > 0 ? (double)rec->tokens / secs : 0;
    /* As the metrics line's MFU: this rank's FLOPs against its device's peak. */
    m->mfu = secs > 0 && rec->peak_flops > 0 ? rec->flops / secs / rec->peak_flops : 0;
    m->ranks = rec->ranks;
    if (rec->data_parallel) {
        m->comm_ms = rec->comm_ms;
        m->comm_exposed_ms = rec->exposed_ms;
        m->overlap = overlap_of(rec);
    }
    m->eval_loss = r->eval_loss;
    m->eval_step = r->eval_step;
    m->checkpoint_ms = r->checkpoint_ms;
    m->lr = rec->lr;
    m->data_ms = rec->data_ms;
}

void trn_report_checkpoint(struct trn_report *r, uint64_t wall_ms)
{
    if (r != NULL)
        r->checkpoint_ms = wall_ms;
}

void trn_report_step(struct trn_report *r, const struct trn_step_record *rec, bool force)
{
    Gs__JobProgressReport msg;
    bool refused;
    char why[160];
    int rc;

    if (r == NULL || r->off)
        return;
    if (!force && !r->eval_due && rec->step % r->every != 0 && rec->step + 1 != rec->steps)
        return;
    fill(r, rec, &msg);
    rc = trn_report_send(r->socket_path, &msg, TRN_REPORT_TIMEOUT_MS, &refused, why, sizeof(why));
    if (rc == 0) {
        r->failures = 0;
        r->eval_due = false;
        return;
    }
    /* A refusal is gschedd's considered answer (not the owner, job not running, a gschedd
     * too old to know the message): asking again will not change it. A transport failure
     * may pass (a worker reconnecting), but not forever: each costs up to the timeout. */
    r->failures++;
    if (refused || r->failures >= TRN_REPORT_MAX_FAILURES)
        r->off = true;
    if (r->warn != NULL && !r->warned) {
        fprintf(r->warn,
                "gsched-train: warning: progress report for job %llu to %s failed: %s "
                "(rc=%d); training goes on%s\n",
                (unsigned long long)r->job_id, r->socket_path, why, rc,
                r->off ? ", reports are off" : ", further failures are not shown");
        fflush(r->warn);
        r->warned = true;
    }
}
