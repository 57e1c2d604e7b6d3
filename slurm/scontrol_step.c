/*
 * scontrol_step.c: `scontrol show step [JOBID[.STEP]]`, Slurm's record of each running job
 * step: the batch shell ("42.batch") and each srun ("42.0"), from gschedd's step records
 * (StepInfo, as squeue -s and sacct read them):
 *
 *     StepId=42.0 UserId=1000 StartTime=2026-12-07T18:00:00 TimeLimit=UNLIMITED
 *        State=RUNNING Partition=gpu NodeList=node[1-2]
 *        Nodes=2 CPUs=8 Tasks=4 Name=python3
 *        TRES=cpu=8,node=2,gres/gpu=2
 *
 * TimeLimit is srun -t's (UNLIMITED without: the job's limit still ends it); CPUs and TRES
 * what the step was given, its cores and GPUs over its nodes (left out when gschedd is older
 * than 1.29 and does not say). A running step of a suspended job shows SUSPENDED, as sacct
 * shows it. No argument: every running step of every running job; JOBID: that job's;
 * JOBID.STEP: that step ("Job step 42.7 not found" otherwise). -o puts each record on one
 * line. Slurm's fields gschedd does not keep per step (the step's memory in TRES, Network,
 * ResvPorts, CPUFreqReq, Dist, SrunHost:Pid) are left out rather than guessed.
 */
#include "slurm/scontrol_step.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/clock.h"
#include "slurm/slurm_cmd.h"
#include "slurm/step_fmt.h"

#define CMD "scontrol"

/* One step's record into out (its failure kept there: gs_buf_error). */
static void put_step(struct gs_buf *out, bool oneliner, const Gs__JobInfo *job,
                     const Gs__StepInfo *st)
{
    const char *sep = oneliner ? " " : "\n   ";
    char id[48], step[16], start[32], limit[32];

    gs_buf_printf(out, "StepId=%s.%s UserId=%u StartTime=%s TimeLimit=%s",
                  slurm_job_id(job, id, sizeof(id)), slurm_step_id(st->step, step, sizeof(step)),
                  job->user != NULL ? job->user->uid : 0,
                  slurm_fmt_date(st->start_time_ms, "Unknown", start, sizeof(start)),
                  slurm_fmt_limit(st->time_limit_s, true, "UNLIMITED", limit, sizeof(limit)));
    gs_buf_printf(out, "%sState=%s Partition=%s NodeList=%s", sep, slurm_step_state_name(job, st),
                  job->partition != NULL && job->partition[0] != '\0' ? job->partition : "(null)",
                  st->nodelist != NULL && st->nodelist[0] != '\0' ? st->nodelist : "(null)");
    gs_buf_printf(out, "%sNodes=%u", sep, st->nnodes);
    if (st->cpus > 0)
        gs_buf_printf(out, " CPUs=%u", st->cpus);
    gs_buf_printf(out, " Tasks=%u Name=%s", st->ntasks, st->name != NULL ? st->name : "");
    if (st->cpus > 0) {
        gs_buf_printf(out, "%sTRES=", sep);
        slurm_step_tres(out, st);
    }
    gs_buf_append_str(out, oneliner ? "\n" : "\n\n");
}

int scontrol_show_steps(const char *socket_opt, bool oneliner, int argc, char **argv)
{
    struct slurm_job_ref refs[1];
    uint32_t steps[1] = {SLURM_STEP_ANY};
    size_t nlisted = 0, shown = 0;
    struct gs_buf out = GS_BUF_INIT;
    Gs__Envelope *reply = NULL;
    char bad[64];
    int status;

    if (argc > 1)
        return slurm_error(CMD, "show step takes one step id, not '%s'", argv[1]);
    if (argc == 1 && slurm_step_list_parse(argv[0], refs, steps, 1, &nlisted, bad, sizeof(bad)) < 0)
        return slurm_error(CMD, "Invalid job step id specified: %s", argv[0]);
    status = slurm_fetch_steps(socket_opt, refs, nlisted, false, &reply);
    if (status != 0)
        return status;
    for (size_t i = 0; i < reply->queue_reply->n_jobs; i++) {
        const Gs__JobInfo *job = reply->queue_reply->jobs[i];

        if (job->state != GS__JOB_STATE__JOB_STATE_RUNNING)
            continue;
        for (size_t k = 0; k < job->n_steps; k++) {
            const Gs__StepInfo *st = job->steps[k];

            if (st->state != GS__JOB_STATE__JOB_STATE_RUNNING || st->end_time_ms != 0 ||
                !slurm_step_selected(refs, steps, nlisted, job, NULL, st->step))
                continue;
            put_step(&out, oneliner, job, st);
            shown++;
        }
    }
    if (shown == 0 && nlisted > 0 && steps[0] != SLURM_STEP_ANY)
        status = slurm_error(CMD, "Job step %s not found", argv[0]);
    else if (shown == 0)
        status = printf("No job steps in the system\n") < 0;
    else
        status = slurm_print(CMD, 0, &out);
    gs_buf_release(&out);
    gs_proto_envelope_free(reply);
    return status;
}
