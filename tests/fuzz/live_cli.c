/*
 * live_cli.c: the requests live_fuzz sends as a gsched CLI (live.h): on gschedd's socket and
 * relayed by a fake worker (target sched), and on gsched-workerd's socket (target worker).
 * Each is valid as the CLI would send it (a job file's spec, selectors naming jobs that
 * exist), so that a mutation of it reaches past the first checks: submit (arrays,
 * dependencies, batch scripts, the MPI launcher, client keys), cancel, hold, release,
 * requeue, suspend and resume, queue, nodes, show, wait, partitions, logs, srun steps, progress
 * reports, the jobs' key/value store and advance reservations (root's: create, update, delete,
 * show, with every flag, PURGE_COMP's times, GPU counts and windows around now); now and then any
 * body at all.
 */
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "common/jobspec.h"
#include "proto/jobspec.h"
#include "tests/fuzz/live.h"
#include "slurm/sbatch.h"
#include "slurm/sbatch_spec.h"

static uint64_t some_job(struct lf_run *run, struct lf_rng *r)
{
    if (run->dict.nnums == 0 || lf_chance(r, 10))
        return 1 + lf_below(r, 100);
    return run->dict.nums[lf_below(r, run->dict.nnums)];
}

static Gs__JobSelector *selector(struct lf_run *run, struct lf_rng *r)
{
    Gs__JobSelector *sel = lf_new(&gs__job_selector__descriptor);
    uint64_t id = some_job(run, r);

    if (lf_chance(r, 80))
        LF_PUSH(sel->job_ids, sel->n_job_ids, id);
    else if (lf_chance(r, 50))
        sel->name = lf_strdup("fz-job");
    return sel;
}

/* Job files (TOML) the templates come from; @W@ is the work directory's out/. */
static const char *const job_files[] = {
    ("name = \"fz-job\"\n[resources]\nnodes = 1\ngpus_per_node = 1\ncpus_per_gpu = 1\n"
     "time_limit = \"00:02:00\"\n[run]\ncommand = [\"true\"]\nworkdir = \"@W@\"\n"
     "stdout = \"fz-%j-%t.out\"\n"),
    ("name = \"fz-job\"\npriority = 5\n[resources]\nnodes = 2\ngpus_per_node = 2\n"
     "cpus_per_gpu = 1\nmem_per_node = \"1G\"\ntime_limit = \"2m\"\n[run]\n"
     "command = [\"/bin/sh\", \"-c\", \"echo rank $RANK; exit 0\"]\ntasks_per_node = "
     "\"per-gpu\"\nworkdir = \"@W@\"\nstdout = \"fz-%j-%t.out\"\nenv = { FZ = \"1\" }\n"),
    ("name = \"fz-job\"\n[restart]\nmax_restarts = 1\n[resources]\ncpus_per_task = 2\n"
     "time_limit = 2\n[run]\nscript = \"echo hi >&2; sleep 0.2\"\nworkdir = \"@W@\"\n"
     "stdout = \"fz-%j-%t.out\"\nstderr = \"fz-%j-%t.err\"\n"),
    ("name = \"fz-job\"\n[resources]\ngpus_per_node = 1\ntime_limit = \"90s\"\n[run]\n"
     "command = [\"true\"]\nlauncher = \"mpi\"\nworkdir = \"@W@\"\n"),
};

/* An sbatch script, for a batch job with an array and Slurm's semantics. */
static const char batch_script[] = "#!/bin/sh\n#SBATCH -N 1\n#SBATCH --gpus-per-node=1\n"
                                   "#SBATCH -t 2\n#SBATCH -o fz-%j.out\n#SBATCH --array=0-2%1\n"
                                   "srun true\necho done\n";

static int add_template(struct lf_run *run, const struct gs_jobspec *spec)
{
    struct gs_proto_jobspec_view view;
    int rc = gs_proto_jobspec_view_init(&view, spec);

    if (rc < 0)
        return rc;
    run->job_templates[run->njob_templates++] = lf_copy(&view.spec);
    gs_proto_jobspec_view_release(&view);
    return 0;
}

static int batch_template(struct lf_run *run, const char *workdir, struct gs_buf *errors)
{
    static char *envp[] = {"HOME=/tmp", "PATH=/usr/bin:/bin", NULL};
    struct gs_sbatch_env env = {.cwd = workdir, .hostname = "fz", .user = "root", .envp = envp};
    struct gs_buf warnings = GS_BUF_INIT;
    struct gs_jobspec *spec = NULL;
    struct gs_sbatch *sb = NULL;
    int rc;

    rc = gs_sbatch_parse(batch_script, sizeof(batch_script) - 1, "fz.sh", 0, NULL, &sb, errors,
                         &warnings);
    if (rc == 0)
        rc = gs_sbatch_to_jobspec(sb, batch_script, NULL, &env, &spec, errors, &warnings);
    if (rc == 0)
        rc = add_template(run, spec);
    gs_jobspec_free(spec);
    gs_sbatch_free(sb);
    gs_buf_release(&warnings);
    return rc;
}

int lf_cli_init(struct lf_run *run, const char *workdir)
{
    struct gs_buf errors = GS_BUF_INIT, text = GS_BUF_INIT;
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < sizeof(job_files) / sizeof(job_files[0]); i++) {
        const char *at = strstr(job_files[i], "@W@");
        struct gs_jobspec *spec = NULL;

        gs_buf_reset(&text);
        if (gs_buf_append(&text, job_files[i], (size_t)(at - job_files[i])) < 0 ||
            gs_buf_printf(&text, "%s%s", workdir, at + 3) < 0)
            abort();
        rc = gs_jobspec_parse_toml(text.data, text.len, "fz.toml", &spec, &errors);
        if (rc == 0)
            rc = add_template(run, spec);
        gs_jobspec_free(spec);
    }
    if (rc == 0)
        rc = batch_template(run, workdir, &errors);
    if (rc < 0)
        fprintf(stderr, "live_fuzz: a job template does not parse: %s\n",
                errors.data != NULL ? errors.data : strerror(-rc));
    gs_buf_release(&errors);
    gs_buf_release(&text);
    return rc;
}

void lf_cli_release(struct lf_run *run)
{
    for (unsigned i = 0; i < run->njob_templates; i++)
        lf_free(run->job_templates[i]);
    run->njob_templates = 0;
}

/* A template's spec, a little changed: priority, hold, a dependency, restarts, affinity. */
static Gs__JobSpec *job_spec(struct lf_run *run, struct lf_rng *r)
{
    Gs__JobSpec *s = lf_copy(run->job_templates[lf_below(r, run->njob_templates)]);

    s->priority = (int32_t)lf_below(r, 10);
    s->hold = lf_chance(r, 10);
    s->max_restarts = (uint32_t)lf_below(r, 3);
    s->gpu_affinity = (Gs__GpuAffinity)lf_below(r, 3);
    if (lf_chance(r, 10)) {
        Gs__Dependency *dep = lf_new(&gs__dependency__descriptor);

        dep->type = (Gs__DependencyType)(1 + lf_below(r, 4));
        dep->job_id = some_job(run, r);
        LF_PUSH(s->depends_on, s->n_depends_on, dep);
    }
    return s;
}

static Gs__Envelope *submit(struct lf_run *run, struct lf_rng *r, uint64_t rid)
{
    Gs__SubmitRequest *req = lf_new(&gs__submit_request__descriptor);

    req->spec = job_spec(run, r);
    req->validate_only = lf_chance(r, 10);
    req->source_file = lf_strdup("/tmp/fz.toml");
    if (lf_chance(r, 20))
        req->client_key = lf_strdup(lf_chance(r, 50) ? "fz-key-1" : "fz-key-2");
    run->submits++;
    return lf_envelope(GS__ENVELOPE__BODY_SUBMIT_REQUEST, req, rid);
}

static Gs__Envelope *job_action(struct lf_run *run, struct lf_rng *r, uint64_t rid)
{
    switch (lf_below(r, 5)) {
    case 0: {
        Gs__CancelRequest *req = lf_new(&gs__cancel_request__descriptor);

        req->selector = selector(run, r);
        req->signal = lf_chance(r, 70) ? 0 : 10;
        req->reason = lf_strdup("fz");
        req->batch_only = lf_chance(r, 10);
        return lf_envelope(GS__ENVELOPE__BODY_CANCEL_REQUEST, req, rid);
    }
    case 1: {
        Gs__HoldRequest *req = lf_new(&gs__hold_request__descriptor);

        req->selector = selector(run, r);
        return lf_envelope(GS__ENVELOPE__BODY_HOLD_REQUEST, req, rid);
    }
    case 2: {
        Gs__ReleaseRequest *req = lf_new(&gs__release_request__descriptor);

        req->selector = selector(run, r);
        return lf_envelope(GS__ENVELOPE__BODY_RELEASE_REQUEST, req, rid);
    }
    case 3: { /* scontrol suspend or resume (root's; refused otherwise) */
        Gs__SuspendRequest *req = lf_new(&gs__suspend_request__descriptor);

        req->selector = selector(run, r);
        req->resume = lf_chance(r, 50);
        return lf_envelope(GS__ENVELOPE__BODY_SUSPEND_REQUEST, req, rid);
    }
    default: {
        Gs__RequeueRequest *req = lf_new(&gs__requeue_request__descriptor);

        req->selector = selector(run, r);
        req->hold = lf_chance(r, 20);
        return lf_envelope(GS__ENVELOPE__BODY_REQUEUE_REQUEST, req, rid);
    }
    }
}

static uint64_t wall_ms(void)
{
    struct timespec now;

    clock_gettime(CLOCK_REALTIME, &now);
    return (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
}

static Gs__Envelope *query(struct lf_run *run, struct lf_rng *r, uint64_t rid)
{
    switch (lf_below(r, 9)) {
    case 8:
        return lf_envelope(GS__ENVELOPE__BODY_CONFIG_REQUEST,
                           lf_new(&gs__config_request__descriptor), rid);
    case 7: { /* sdiag, now and then resetting its counters */
        Gs__DiagRequest *req = lf_new(&gs__diag_request__descriptor);

        req->reset = lf_chance(r, 20);
        return lf_envelope(GS__ENVELOPE__BODY_DIAG_REQUEST, req, rid);
    }
    case 6: { /* sreport: a window around now, sometimes empty, reversed or in the future */
        Gs__ReportRequest *req = lf_new(&gs__report_request__descriptor);

        req->start_ms = wall_ms() - lf_below(r, 86400000) + (lf_chance(r, 5) ? 90000000 : 0);
        req->end_ms = req->start_ms + lf_below(r, 172800000) - (lf_chance(r, 10) ? 1000 : 0);
        req->by_user = lf_chance(r, 50);
        return lf_envelope(GS__ENVELOPE__BODY_REPORT_REQUEST, req, rid);
    }
    case 5: { /* the nodes' shard caches, as fuzzed workers reported them */
        Gs__DataRequest *req = lf_new(&gs__data_request__descriptor);

        req->op = lf_chance(r, 50) ? GS__DATA_OP__DATA_OP_LIST : GS__DATA_OP__DATA_OP_STAT;
        req->dataset = lf_strdup(lf_chance(r, 70) ? "000000000000000000000000000da7a0" : "");
        return lf_envelope(GS__ENVELOPE__BODY_DATA_REQUEST, req, rid);
    }
    case 0: {
        Gs__QueueRequest *req = lf_new(&gs__queue_request__descriptor);

        if (lf_chance(r, 30))
            req->selector = selector(run, r);
        req->include_finished = lf_chance(r, 50);
        req->limit = (uint32_t)lf_below(r, 20);
        return lf_envelope(GS__ENVELOPE__BODY_QUEUE_REQUEST, req, rid);
    }
    case 1: {
        Gs__NodesRequest *req = lf_new(&gs__nodes_request__descriptor);

        if (lf_chance(r, 30)) {
            char *name = lf_strdup(lf_chance(r, 50) ? "fz1" : "live0");
            LF_PUSH(req->names, req->n_names, name);
        }
        req->with_topology = lf_chance(r, 30);
        return lf_envelope(GS__ENVELOPE__BODY_NODES_REQUEST, req, rid);
    }
    case 2: {
        Gs__ShowRequest *req = lf_new(&gs__show_request__descriptor);

        req->job_id = some_job(run, r);
        return lf_envelope(GS__ENVELOPE__BODY_SHOW_REQUEST, req, rid);
    }
    case 3: {
        Gs__WaitRequest *req = lf_new(&gs__wait_request__descriptor);
        uint64_t id = some_job(run, r);

        LF_PUSH(req->job_ids, req->n_job_ids, id);
        req->until = (Gs__WaitFor)lf_below(r, 2);
        req->timeout_ms = 1 + lf_below(r, 200);
        return lf_envelope(GS__ENVELOPE__BODY_WAIT_REQUEST, req, rid);
    }
    default:
        return lf_envelope(GS__ENVELOPE__BODY_PARTITIONS_REQUEST,
                           lf_new(&gs__partitions_request__descriptor), rid);
    }
}

static Gs__Envelope *in_job(struct lf_run *run, struct lf_rng *r, uint64_t rid)
{
    uint64_t job = some_job(run, r);

    switch (lf_below(r, 6)) {
    case 0: {
        Gs__LogsRequest *req = lf_new(&gs__logs_request__descriptor);

        req->job_id = job;
        req->stream = (Gs__LogStream)lf_below(r, 2);
        req->max_bytes = (uint32_t)lf_below(r, 4096);
        req->from_end = lf_chance(r, 50);
        return lf_envelope(GS__ENVELOPE__BODY_LOGS_REQUEST, req, rid);
    }
    case 1: {
        Gs__StepLaunchRequest *req = lf_new(&gs__step_launch_request__descriptor);
        char *arg = lf_strdup("true");

        req->job_id = job;
        LF_PUSH(req->argv, req->n_argv, arg);
        req->nodes = (uint32_t)lf_below(r, 2);
        req->ntasks = (uint32_t)lf_below(r, 3);
        req->overlap = lf_chance(r, 30);
        req->gpus_per_task = (uint32_t)lf_below(r, 2);
        return lf_envelope(GS__ENVELOPE__BODY_STEP_LAUNCH_REQUEST, req, rid);
    }
    case 2: {
        Gs__JobProgressReport *rep = lf_new(&gs__job_progress_report__descriptor);

        rep->job_id = job;
        rep->step = lf_below(r, 1000);
        rep->steps = 1000;
        rep->loss = 2.5;
        rep->tokens_per_s = 12345.0;
        rep->ranks = 2;
        rep->comm_ms = 3.0;
        rep->text = lf_strdup("step 10 loss 2.5");
        rep->mfu = 0.3;
        return lf_envelope(GS__ENVELOPE__BODY_JOB_PROGRESS_REPORT, rep, rid);
    }
    case 4: { /* srun back on a step (none is kept here, or a running one's) */
        Gs__StepAttach *at = lf_new(&gs__step_attach__descriptor);
        size_t n = (size_t)lf_below(r, 4);

        at->job_id = job;
        at->step = (uint32_t)lf_below(r, 4);
        for (size_t i = 0; i < n; i++) {
            uint64_t v = lf_chance(r, 30) ? UINT64_MAX : lf_below(r, 1u << 20);

            LF_PUSH(at->output_written, at->n_output_written, v);
        }
        return lf_envelope(GS__ENVELOPE__BODY_STEP_ATTACH, at, rid);
    }
    case 3: {
        Gs__JobKvPut *put = lf_new(&gs__job_kv_put__descriptor);

        put->job_id = job;
        put->key = lf_strdup(lf_chance(r, 50) ? "master" : "rank0");
        lf_set_bytes(&put->value, "127.0.0.1:29500", 15);
        return lf_envelope(GS__ENVELOPE__BODY_JOB_KV_PUT, put, rid);
    }
    default: {
        Gs__JobKvGet *get = lf_new(&gs__job_kv_get__descriptor);

        get->job_id = job;
        get->key = lf_strdup(lf_chance(r, 50) ? "master" : "rank0");
        get->timeout_ms = lf_below(r, 100);
        return lf_envelope(GS__ENVELOPE__BODY_JOB_KV_GET, get, rid);
    }
    }
}

/* A reservation request on the fuzzed nodes: its window starts within a few seconds of now
 * (or has already), so that the planner and the cron's starts, ends and purges see it. */
static Gs__Envelope *reservation(struct lf_rng *r, uint64_t rid)
{
    static const char *const names[] = {"fzr", "fzr2", ""};
    static const char *const nodes[] = {"fz1", "live0", "fz[1-2]", "nosuch"};
    Gs__ReservationRequest *req = lf_new(&gs__reservation_request__descriptor);
    Gs__Reservation *m = lf_new(&gs__reservation__descriptor);
    uint64_t now_ms = wall_ms();
    char *user = lf_strdup("root");

    req->action = (Gs__ReservationAction)lf_below(r, 5);
    req->reservation = m;
    m->name = lf_strdup(names[lf_below(r, 3)]);
    m->nodes = lf_strdup(nodes[lf_below(r, 4)]);
    m->start_ms = now_ms - 2000 + lf_below(r, 6000);
    m->end_ms = lf_chance(r, 10) ? 0 : m->start_ms + 1000 + lf_below(r, 20000);
    m->flags = (uint32_t)lf_below(r, 8192);
    m->purge_comp_s = (uint32_t)lf_below(r, 4);
    m->gpus = lf_chance(r, 30) ? (uint32_t)lf_below(r, 5) : 0;
    LF_PUSH(m->users, m->n_users, user);
    req->set_start = lf_chance(r, 30);
    req->set_end = lf_chance(r, 30);
    req->set_nodes = lf_chance(r, 20);
    req->set_gpus = lf_chance(r, 20);
    req->set_flags = lf_chance(r, 30);
    req->add_flags = lf_chance(r, 30) ? (uint32_t)lf_below(r, 8192) : 0;
    req->remove_flags = lf_chance(r, 20) ? (uint32_t)lf_below(r, 8192) : 0;
    return lf_envelope(GS__ENVELOPE__BODY_RESERVATION_REQUEST, req, rid);
}

Gs__Envelope *lf_cli_request(struct lf_run *run, struct lf_rng *r)
{
    uint64_t rid = 1 + lf_below(r, 4);
    unsigned w = (unsigned)lf_below(r, 100);

    if (w < 20)
        return submit(run, r, rid);
    if (w < 40)
        return job_action(run, r, rid);
    if (w < 65)
        return query(run, r, rid);
    if (w < 92)
        return in_job(run, r, rid);
    if (w < 96)
        return reservation(r, rid);
    return lf_random_envelope(r, &run->dict);
}
