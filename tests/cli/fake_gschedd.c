/*
 * fake_gschedd.c: a stand-in gschedd for testing the CLI's job commands on their own. It
 * speaks the real wire protocol (proto/frame.h) on a Unix socket, one request per
 * connection like gschedd, and answers from a fixed script of jobs, so job-commands.sh can
 * check what each command sends and prints without a scheduler or workers:
 *
 *     fake_gschedd SOCKET RECORD [MINOR]
 *
 * With MINOR it plays a gschedd of protocol 1.MINOR: its Hello says so, and a request whose
 * body came later is recorded as "unknown BODY" and the connection closed, as such a
 * gschedd does (it takes the frame for a protocol error).
 *
 * Jobs: 42 runs on n1,n2 (two GPUs each) and completes on the second WaitRequest; 44
 * fails with exit code 3; 45 is killed by signal 9; 46 never ends (waits time out); 43
 * is pending for Resources, expected to start 2026-12-05 11:00 UTC; 7 and 99 do not exist. Logs of
 * any job are "hello\nworld\n", served 5 bytes at a time. Each SubmitRequest's workdir, source file
 * and user name are appended to RECORD as "submit workdir=... source=... user=... hold=0|1".
 *
 * For the Slurm views (slurm-views.sh) the queue also holds array 50 ("sweep", partition
 * debug): element 50_0 (job 50) running on n3 for 65 s, 50_1..50_3 and 50_5 (jobs 51-53,
 * 55) pending for JobArrayTaskLimit, 50_4 (job 54) held; and, finished, 47 (failed with
 * exit code 2 on n5) and 48 (cancelled by uid 1000). Queue requests are answered by their
 * selector's ids (a job's own or its array's) and include_finished. Partitions: gpu
 * (default, unlimited: n1 n2 n4-n7) and debug (30 minutes: n3 n5); nodes n1 (half used),
 * n2 (every core used), n3 (a quarter), n4 (drained), n5 and n7 (idle), n6 (down). Cancel,
 * hold, release and requeue requests are appended to RECORD as "cancel ids=42,51 signal=10",
 * "hold ids=...", "requeue ids=... hold=0|1"; requeueing a pending job fails (-EINVAL).
 *
 * Reservations (scontrol.sh): "maint" (n[1-2], user alice, 2026-12-05 10:00 to 11:00 UTC,
 * active) and "future" (n5, accounts physics and bio, from 2026-12-24 08:00 UTC, no end,
 * inactive); any other name is -ENOENT. Creates, updates and deletes are appended to RECORD
 * as "resv create|update|delete name=N set=start,end,... start=MS end=MS nodes=X users=a,b
 * accounts=x,y", then only when given: "flags=BITS" (set), "+users=", "-users=",
 * "+accounts=", "-accounts=", "+flags=BITS", "-flags=BITS" (an update's edits); answered with the
 * reservation sent (a create without a name gets its first user's or account's name + "_1"); Nodes
 * naming gpu9 are refused, as gschedd would.
 *
 * Job 49 ("ckpt", alice, partition gpu, on n1, limit 1 h) is suspended: it started 600 s
 * ago, was suspended 300 s ago and had been suspended 60 s before, so it has run 240 s
 * whatever the clock says now. Queue requests naming states get only jobs in them (the
 * wire's: 49 is RUNNING), as from gschedd. Suspend requests are appended to RECORD as
 * "suspend ids=42,49 resume=0|1" and answered per job, in gschedd's words ("job 43 is not
 * running: ..."): -ENOENT for no job, -EINVAL for one not running (43, 51-55 pending; 41,
 * 44-48 ended), -EALREADY for suspending 49 or resuming 42 or 50, else done.
 *
 * A cancel of job 41 with batch_only set is refused as a gschedd of protocol 1.3 would refuse
 * it, knowing no CancelRequest.batch_only (sched_cli.c's refuse_unknown_field). Single-threaded;
 * exits on SIGTERM (default action).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "proto/frame.h"

#define TIMEOUT_MS 5000
#define LOG_TEXT "hello\nworld\n"
#define LOG_CHUNK 5

struct fake {
    const char *record_path;
    unsigned waits_42; /* WaitRequests seen for job 42: it completes on the second */
    uint64_t started_ms;
    uint32_t minor; /* the protocol minor it plays; 0: this build's */
};

static void send_reply(int fd, Gs__Envelope *env)
{
    env->request_id = 1;
    if (gs_proto_write_fd(fd, env, TIMEOUT_MS) < 0)
        fprintf(stderr, "fake_gschedd: cannot send %s\n", gs_proto_body_name(env->body_case));
}

static void send_error(int fd, int code, const char *msg, const char *detail)
{
    Gs__ErrorReply err = GS__ERROR_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    char *details[] = {(char *)detail};

    err.code = code;
    err.message = (char *)msg;
    err.details = details;
    err.n_details = detail != NULL ? 1 : 0;
    env.body_case = GS__ENVELOPE__BODY_ERROR;
    env.error = &err;
    send_reply(fd, &env);
}

/* What an older gschedd answers a request holding field `field` of body `body` it never knew. */
static void send_unknown_field(int fd, const char *body, const char *field)
{
    const ProtobufCFieldDescriptor *b =
        protobuf_c_message_descriptor_get_field_by_name(&gs__envelope__descriptor, body);
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(
        (const ProtobufCMessageDescriptor *)b->descriptor, field);
    Gs__ErrorReply err = GS__ERROR_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    char path[32], msg[160], *details[] = {path, "protocol=1.3"};

    snprintf(path, sizeof(path), "field=%u.%u", b->id, f->id);
    snprintf(msg, sizeof(msg),
             "this gschedd (gsched 0.0.3, protocol 1.3) does not know field %s.%u", body, f->id);
    err.code = -EPROTONOSUPPORT;
    err.message = msg;
    err.details = details;
    err.n_details = 2;
    env.body_case = GS__ENVELOPE__BODY_ERROR;
    env.error = &err;
    send_reply(fd, &env);
}

static bool job_exists(uint64_t id)
{
    return id >= 41 && id <= 55;
}

static void on_submit(struct fake *f, int fd, const Gs__SubmitRequest *req)
{
    Gs__SubmitReply reply = GS__SUBMIT_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    char *warnings[] = {"no node has the feature 'h100' today"};
    const Gs__JobSpec *s = req->spec;
    FILE *rec = fopen(f->record_path, "a");

    if (rec != NULL) {
        fprintf(rec, "submit workdir=%s source=%s user=%s hold=%d\n",
                s != NULL && s->run != NULL ? s->run->workdir : "?", req->source_file,
                s != NULL && s->user != NULL ? s->user->username : "?",
                s != NULL && s->hold ? 1 : 0);
        fclose(rec);
    }
    if (s == NULL || strcmp(s->name, "rejected") == 0) {
        send_error(fd, -EINVAL, "job rejected", "job.toml:3:1: resources.nodes: only 2 nodes");
        return;
    }
    reply.job_id = 42;
    reply.state = GS__JOB_STATE__JOB_STATE_PENDING;
    reply.warnings = warnings;
    reply.n_warnings = 1;
    env.body_case = GS__ENVELOPE__BODY_SUBMIT_REPLY;
    env.submit_reply = &reply;
    send_reply(fd, &env);
}

/* Job 42 running on n1 and n2 since f->started_ms; the caller's storage. */
struct running_job {
    Gs__JobInfo info;
    Gs__UserIdentity user;
    Gs__Resources res;
    Gs__NodeAllocation alloc[2];
    Gs__NodeAllocation *alloc_ptrs[2];
    uint32_t gpus[2];
};

static void fill_running(struct fake *f, struct running_job *j)
{
    static const char *const names[] = {"n1", "n2"};

    gs__job_info__init(&j->info);
    gs__user_identity__init(&j->user);
    gs__resources__init(&j->res);
    j->gpus[0] = 0;
    j->gpus[1] = 1;
    for (int i = 0; i < 2; i++) {
        gs__node_allocation__init(&j->alloc[i]);
        j->alloc[i].node_name = (char *)names[i];
        j->alloc[i].gpus = j->gpus;
        j->alloc[i].n_gpus = 2;
        j->alloc_ptrs[i] = &j->alloc[i];
    }
    j->user.uid = 1000;
    j->user.username = "alice";
    j->res.nodes = 2;
    j->res.gpus_per_node = 2;
    j->info.job_id = 42;
    j->info.name = "train";
    j->info.user = &j->user;
    j->info.state = GS__JOB_STATE__JOB_STATE_RUNNING;
    j->info.resources = &j->res;
    j->info.submit_time_ms = f->started_ms - 5000;
    j->info.start_time_ms = f->started_ms;
    j->info.allocation = j->alloc_ptrs;
    j->info.n_allocation = 2;
    j->info.partition = "gpu";
    j->info.account = "ml";
    j->info.qos = "normal";
    j->info.ntasks = 2;
    j->info.ncpus = 16;
    j->info.workdir = "/home/alice";
    j->info.stdout_path = "/home/alice/slurm-42.out";
    j->info.comment = "sweep 3";
    j->info.wckey = "ml7";
    j->info.command = "/home/alice/train.sh";
    j->info.nice = 10;
    j->res.cpus_case = GS__RESOURCES__CPUS_CPUS_PER_TASK;
    j->res.cpus_per_task = 8;
}

#define NARRAY 6
#define MAX_JOBS 16

/* Every job the queue holds, in gschedd's order; storage for their parts. */
struct job_table {
    struct running_job run;
    Gs__JobInfo pending, suspended, done, failed, cancelled, array[NARRAY];
    Gs__UserIdentity bob;
    Gs__Resources one, sweep_res, ckpt_res;
    Gs__NodeAllocation n1, n3, n5, *n1_ptr, *n3_ptr, *n5_ptr;
    Gs__JobInfo *all[MAX_JOBS];
    size_t n;
};

/* Job 49, suspended: 240 s run, frozen (see the top of the file). */
static void fill_suspended(struct job_table *t, uint64_t now)
{
    Gs__JobInfo *j = &t->suspended;

    gs__resources__init(&t->ckpt_res);
    gs__node_allocation__init(&t->n1);
    t->n1.node_name = "n1";
    t->n1_ptr = &t->n1;
    t->ckpt_res.nodes = 1;
    t->ckpt_res.gpus_per_node = 1;
    t->ckpt_res.time_limit_s = 3600;
    gs__job_info__init(j);
    j->job_id = 49;
    j->name = "ckpt";
    j->user = t->run.info.user;
    j->state = GS__JOB_STATE__JOB_STATE_RUNNING;
    j->resources = &t->ckpt_res;
    j->partition = "gpu";
    j->account = "ml";
    j->ntasks = 1;
    j->ncpus = 8;
    j->submit_time_ms = now - 700000;
    j->start_time_ms = now - 600000;
    j->suspended = true;
    j->suspend_time_ms = now - 300000;
    j->suspended_ms = 60000;
    j->allocation = &t->n1_ptr;
    j->n_allocation = 1;
}

static void fill_table(struct fake *f, struct job_table *t)
{
    static const uint32_t tasks[NARRAY] = {0, 1, 2, 3, 5, 4};
    static const uint64_t ids[NARRAY] = {50, 51, 52, 53, 55, 54};
    uint64_t now = gs_clock_wall_ms();

    memset(t, 0, sizeof(*t));
    fill_running(f, &t->run);
    gs__user_identity__init(&t->bob);
    gs__resources__init(&t->one);
    gs__resources__init(&t->sweep_res);
    gs__node_allocation__init(&t->n3);
    gs__node_allocation__init(&t->n5);
    t->n3.node_name = "n3";
    t->n5.node_name = "n5";
    t->n3_ptr = &t->n3;
    t->n5_ptr = &t->n5;
    t->bob.uid = 1001;
    t->one.nodes = 1;
    t->one.gpus_per_node = 8;
    gs__job_info__init(&t->pending);
    t->pending.job_id = 43;
    t->pending.name = "a-much-longer-name";
    t->pending.user = &t->bob;
    t->pending.state = GS__JOB_STATE__JOB_STATE_PENDING;
    t->pending.reason = "Resources";
    t->pending.resources = &t->one;
    t->pending.partition = "gpu";
    t->pending.ntasks = 1;
    t->pending.ncpus = 8;
    t->pending.priority = 10;
    t->done = t->pending;
    t->done.job_id = 41;
    t->done.name = "prep";
    t->done.state = GS__JOB_STATE__JOB_STATE_COMPLETED;
    t->done.reason = "";
    t->done.start_time_ms = 1000;
    t->done.end_time_ms = 62000;
    t->done.resume_time_ms = 31000; /* suspended and resumed (no time suspended to count) */
    t->done.priority = 0;
    t->failed = t->done;
    t->failed.job_id = 47;
    t->failed.name = "eval";
    t->failed.user = t->run.info.user;
    t->failed.state = GS__JOB_STATE__JOB_STATE_FAILED;
    t->failed.account = "ml";
    t->failed.exit_code = 2;
    t->failed.reason = "rank 0 exited 2";
    t->failed.submit_time_ms = now - 200000;
    t->failed.start_time_ms = now - 100000;
    t->failed.end_time_ms = now - 30000;
    t->failed.allocation = &t->n5_ptr;
    t->failed.n_allocation = 1;
    t->cancelled = t->failed;
    t->cancelled.job_id = 48;
    t->cancelled.name = "old";
    t->cancelled.state = GS__JOB_STATE__JOB_STATE_CANCELLED;
    t->cancelled.exit_code = 0;
    t->cancelled.signaled = true;
    t->cancelled.term_signal = 15;
    t->cancelled.reason = "cancelled by uid 1000";
    t->pending.expected_start_ms = 1796468400000ull; /* 2026-12-05 11:00 UTC */
    t->done.comment = "prep data";
    t->done.reservation = "maint";
    t->done.wckey = "prep";
    t->sweep_res.nodes = 1;
    t->sweep_res.gpus_per_node = 1;
    t->sweep_res.time_limit_s = 1800;
    for (int i = 0; i < NARRAY; i++) {
        Gs__JobInfo *e = &t->array[i];

        gs__job_info__init(e);
        e->job_id = ids[i];
        e->name = "sweep";
        e->user = t->run.info.user;
        e->resources = &t->sweep_res;
        e->partition = "debug";
        e->account = "ml";
        e->array_job_id = 50;
        e->array_task_id = tasks[i];
        e->ntasks = 1;
        e->ncpus = 4;
        e->submit_time_ms = now - 120000;
        e->state = GS__JOB_STATE__JOB_STATE_PENDING;
        e->reason = "JobArrayTaskLimit";
    }
    t->array[0].state = GS__JOB_STATE__JOB_STATE_RUNNING;
    t->array[0].reason = "";
    t->array[0].start_time_ms = now - 65000;
    t->array[0].allocation = &t->n3_ptr;
    t->array[0].n_allocation = 1;
    t->array[5].held = true;
    t->array[5].reason = "Held";
    fill_suspended(t, now);
    t->all[t->n++] = &t->run.info;
    t->all[t->n++] = &t->pending;
    t->all[t->n++] = &t->suspended;
    for (int i = 0; i < NARRAY; i++)
        t->all[t->n++] = &t->array[i];
    t->all[t->n++] = &t->done;
    t->all[t->n++] = &t->failed;
    t->all[t->n++] = &t->cancelled;
}

static bool finished(const Gs__JobInfo *j)
{
    return j->state != GS__JOB_STATE__JOB_STATE_PENDING &&
           j->state != GS__JOB_STATE__JOB_STATE_RUNNING;
}

/* The selector's states hold the job's (the wire's), as gschedd's do; none: any. */
static bool state_selected(const Gs__JobSelector *sel, const Gs__JobInfo *j)
{
    for (size_t i = 0; sel != NULL && i < sel->n_states; i++) {
        if (sel->states[i] == j->state)
            return true;
    }
    return sel == NULL || sel->n_states == 0;
}

/* The selector's ids match a job's own id or its array's, as gschedd's do. */
static bool selected(const Gs__JobSelector *sel, const Gs__JobInfo *j)
{
    if (!state_selected(sel, j))
        return false;
    if (sel == NULL || sel->n_job_ids == 0)
        return true;
    for (size_t i = 0; i < sel->n_job_ids; i++) {
        if (sel->job_ids[i] == j->job_id ||
            (j->array_job_id != 0 && sel->job_ids[i] == j->array_job_id))
            return true;
    }
    return false;
}

static void on_queue(struct fake *f, int fd, const Gs__QueueRequest *req)
{
    Gs__QueueReply reply = GS__QUEUE_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__JobInfo *jobs[MAX_JOBS];
    struct job_table t;

    fill_table(f, &t);
    for (size_t i = 0; i < t.n; i++) {
        if (selected(req->selector, t.all[i]) && (req->include_finished || !finished(t.all[i])))
            jobs[reply.n_jobs++] = t.all[i];
    }
    reply.jobs = jobs;
    env.body_case = GS__ENVELOPE__BODY_QUEUE_REPLY;
    env.queue_reply = &reply;
    send_reply(fd, &env);
}

static void on_show(struct fake *f, int fd, const Gs__ShowRequest *req)
{
    Gs__ShowReply reply = GS__SHOW_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__JobStateChange submitted = GS__JOB_STATE_CHANGE__INIT, *history[] = {&submitted};
    Gs__TaskExit failed = GS__TASK_EXIT__INIT, *exits[] = {&failed};
    Gs__RunSpec run = GS__RUN_SPEC__INIT;
    Gs__JobSpec spec = GS__JOB_SPEC__INIT;
    char *argv[] = {"python3", "train.py", "--name", "my run"};
    struct running_job job;

    if (req->job_id != 42) {
        struct job_table t;

        fill_table(f, &t);
        for (size_t i = 0; i < t.n; i++) {
            if (t.all[i]->job_id == req->job_id) {
                reply.job = t.all[i];
                env.body_case = GS__ENVELOPE__BODY_SHOW_REPLY;
                env.show_reply = &reply;
                send_reply(fd, &env);
                return;
            }
        }
        send_error(fd, -ENOENT, "job 99: no such job", NULL);
        return;
    }
    fill_running(f, &job);
    run.argv = argv;
    run.n_argv = 4;
    run.workdir = "/home/alice";
    run.stdout_pattern = "gsched-%j-%t.out";
    spec.run = &run;
    job.info.spec = &spec;
    submitted.job_id = 42;
    submitted.state = GS__JOB_STATE__JOB_STATE_PENDING;
    submitted.reason = "submitted";
    submitted.changed_at_ms = f->started_ms - 5000;
    failed.job_id = 42;
    failed.rank = 1;
    failed.node_name = "n2";
    failed.end_reason = GS__END_REASON__END_REASON_LAUNCH_FAILED;
    failed.launch_error = "exec python3: No such file or directory";
    reply.job = &job.info;
    reply.history = history;
    reply.n_history = 1;
    reply.task_exits = exits;
    reply.n_task_exits = 1;
    env.body_case = GS__ENVELOPE__BODY_SHOW_REPLY;
    env.show_reply = &reply;
    send_reply(fd, &env);
}

/* "cancel ids=42,51 signal=10" (the kind, the ids, the request's own fields) to RECORD. */
static void record_action(struct fake *f, const Gs__Envelope *in, const Gs__JobSelector *sel)
{
    FILE *rec = fopen(f->record_path, "a");

    if (rec == NULL)
        return;
    fprintf(rec, "%s ids=",
            in->body_case == GS__ENVELOPE__BODY_CANCEL_REQUEST    ? "cancel"
            : in->body_case == GS__ENVELOPE__BODY_HOLD_REQUEST    ? "hold"
            : in->body_case == GS__ENVELOPE__BODY_RELEASE_REQUEST ? "release"
            : in->body_case == GS__ENVELOPE__BODY_SUSPEND_REQUEST ? "suspend"
                                                                  : "requeue");
    for (size_t i = 0; sel != NULL && i < sel->n_job_ids; i++)
        fprintf(rec, "%s%llu", i > 0 ? "," : "", (unsigned long long)sel->job_ids[i]);
    if (sel != NULL && (sel->user[0] != '\0' || sel->name[0] != '\0' || sel->n_states > 0))
        fprintf(rec, " user=%s name=%s states=%zu", sel->user, sel->name, sel->n_states);
    if (in->body_case == GS__ENVELOPE__BODY_CANCEL_REQUEST)
        fprintf(rec, " signal=%u%s", in->cancel_request->signal,
                in->cancel_request->batch_only ? " batch" : "");
    if (in->body_case == GS__ENVELOPE__BODY_REQUEUE_REQUEST)
        fprintf(rec, " hold=%d", in->requeue_request->hold ? 1 : 0);
    if (in->body_case == GS__ENVELOPE__BODY_SUSPEND_REQUEST)
        fprintf(rec, " resume=%d", in->suspend_request->resume ? 1 : 0);
    fputc('\n', rec);
    fclose(rec);
}

/* A suspend (or, resume, resume) of job id: its result, worded as gschedd's (into msg). */
static void suspend_result(uint64_t id, bool resume, Gs__JobActionResult *r, char *msg, size_t size)
{
    bool running = id == 42 || id == 49 || id == 50;
    unsigned long long n = (unsigned long long)id;

    r->state = running ? GS__JOB_STATE__JOB_STATE_RUNNING : GS__JOB_STATE__JOB_STATE_PENDING;
    r->code = 0;
    msg[0] = '\0';
    if (!job_exists(id)) {
        r->code = -ENOENT;
        snprintf(msg, size, "job %llu: no such job", n);
    } else if (!running) {
        r->code = -EINVAL;
        snprintf(msg, size, "job %llu is not running: only running jobs can be %s", n,
                 resume ? "resumed" : "suspended");
    } else if ((id == 49) != resume) {
        r->code = -EALREADY;
        snprintf(msg, size, "job %llu is %s suspended", n, resume ? "not" : "already");
    }
    r->message = msg;
}

static void on_action(struct fake *f, int fd, const Gs__Envelope *in)
{
    const Gs__JobSelector *sel =
        in->body_case == GS__ENVELOPE__BODY_CANCEL_REQUEST    ? in->cancel_request->selector
        : in->body_case == GS__ENVELOPE__BODY_HOLD_REQUEST    ? in->hold_request->selector
        : in->body_case == GS__ENVELOPE__BODY_RELEASE_REQUEST ? in->release_request->selector
        : in->body_case == GS__ENVELOPE__BODY_SUSPEND_REQUEST ? in->suspend_request->selector
                                                              : in->requeue_request->selector;
    bool requeue = in->body_case == GS__ENVELOPE__BODY_REQUEUE_REQUEST;
    Gs__JobActionReply reply = GS__JOB_ACTION_REPLY__INIT;
    Gs__JobActionResult results[16], *ptrs[16];
    Gs__Envelope env = GS__ENVELOPE__INIT;
    char msgs[16][96];

    if (in->body_case == GS__ENVELOPE__BODY_CANCEL_REQUEST && in->cancel_request->batch_only &&
        sel != NULL && sel->n_job_ids == 1 && sel->job_ids[0] == 41) {
        send_unknown_field(fd, "cancel_request", "batch_only");
        return;
    }
    record_action(f, in, sel);
    for (size_t i = 0; sel != NULL && i < sel->n_job_ids && i < 16; i++) {
        bool pending = sel->job_ids[i] == 43 || (sel->job_ids[i] >= 51 && sel->job_ids[i] <= 55);

        gs__job_action_result__init(&results[i]);
        results[i].job_id = sel->job_ids[i];
        results[i].code = job_exists(sel->job_ids[i]) ? 0 : -ENOENT;
        results[i].message = job_exists(sel->job_ids[i]) ? "" : "no such job";
        if (requeue && pending) {
            results[i].code = -EINVAL;
            results[i].message = "job is pending: nothing to requeue";
        }
        results[i].state = in->body_case == GS__ENVELOPE__BODY_CANCEL_REQUEST
                               ? GS__JOB_STATE__JOB_STATE_CANCELLED
                               : GS__JOB_STATE__JOB_STATE_PENDING;
        if (in->body_case == GS__ENVELOPE__BODY_SUSPEND_REQUEST)
            suspend_result(sel->job_ids[i], in->suspend_request->resume, &results[i], msgs[i],
                           sizeof(msgs[i]));
        ptrs[reply.n_results++] = &results[i];
    }
    reply.results = ptrs;
    env.body_case = in->body_case + 1; /* each *_reply follows its request */
    env.cancel_reply = &reply;         /* the oneof's members share their storage */
    send_reply(fd, &env);
}

/* Where job id stands now; true when it has ended. */
static bool job_state(struct fake *f, uint64_t id, Gs__JobStateChange *c)
{
    c->job_id = id;
    c->start_time_ms = f->started_ms;
    c->state = GS__JOB_STATE__JOB_STATE_RUNNING;
    if ((id == 42 && f->waits_42 < 2) || id == 46)
        return false;
    c->end_time_ms = f->started_ms + 3000;
    c->state = id == 42 ? GS__JOB_STATE__JOB_STATE_COMPLETED : GS__JOB_STATE__JOB_STATE_FAILED;
    c->exit_code = id == 44 ? 3 : 0;
    c->signaled = id == 45;
    c->term_signal = id == 45 ? 9 : 0;
    c->reason = id == 44 ? "rank 0 exited 3" : id == 45 ? "rank 1 killed by signal 9" : "";
    return true;
}

/* srun's request: recorded with whether it holds a launch key (a gschedd before 1.30 must
 * not be sent one), and refused. */
static void on_step_launch(struct fake *f, int fd, const Gs__StepLaunchRequest *req)
{
    FILE *rec = fopen(f->record_path, "a");

    if (rec != NULL) {
        fprintf(rec, "step launch_key=%s\n",
                req->launch_key != NULL && req->launch_key[0] != '\0' ? "set" : "none");
        fclose(rec);
    }
    send_error(fd, -EOPNOTSUPP, "steps are not run by the fake", NULL);
}

static void on_wait(struct fake *f, int fd, const Gs__WaitRequest *req)
{
    Gs__WaitReply reply = GS__WAIT_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__JobStateChange changes[16], *ptrs[16];
    bool all_there = true;

    for (size_t i = 0; i < req->n_job_ids; i++) {
        if (req->job_ids[i] == 42)
            f->waits_42++;
    }
    for (size_t i = 0; i < req->n_job_ids && i < 16; i++) {
        gs__job_state_change__init(&changes[i]);
        all_there &= job_state(f, req->job_ids[i], &changes[i]) ||
                     (req->until == GS__WAIT_FOR__WAIT_FOR_START &&
                      changes[i].state == GS__JOB_STATE__JOB_STATE_RUNNING);
        ptrs[reply.n_jobs++] = &changes[i];
    }
    if (!all_there) {
        struct timespec ts = {.tv_sec = (time_t)(req->timeout_ms / 1000),
                              .tv_nsec = (long)(req->timeout_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
        reply.timed_out = true;
    }
    reply.jobs = ptrs;
    env.body_case = GS__ENVELOPE__BODY_WAIT_REPLY;
    env.wait_reply = &reply;
    send_reply(fd, &env);
}

static void on_logs(int fd, const Gs__LogsRequest *req)
{
    Gs__LogsReply reply = GS__LOGS_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    uint64_t size = strlen(LOG_TEXT), off = req->offset;
    size_t len;

    if (req->job_id == 99) {
        send_error(fd, -ENOENT, "job 99: no such job", NULL);
        return;
    }
    if (req->from_end)
        off = req->offset < size ? size - req->offset : 0;
    if (off > size)
        off = size;
    len = size - off < LOG_CHUNK ? (size_t)(size - off) : LOG_CHUNK;
    reply.data.data = (uint8_t *)LOG_TEXT + off;
    reply.data.len = len;
    reply.offset = off;
    reply.size = size;
    reply.eof = off + len == size;
    reply.finished = reply.eof;
    env.body_case = GS__ENVELOPE__BODY_LOGS_REPLY;
    env.logs_reply = &reply;
    send_reply(fd, &env);
}

static void on_partitions(int fd)
{
    static char *gpu_nodes[] = {"n1", "n2", "n4", "n5", "n6", "n7"};
    static char *debug_nodes[] = {"n3", "n5"};
    Gs__PartitionsReply reply = GS__PARTITIONS_REPLY__INIT;
    Gs__PartitionInfo gpu = GS__PARTITION_INFO__INIT, debug = GS__PARTITION_INFO__INIT;
    Gs__PartitionInfo *parts[] = {&gpu, &debug};
    Gs__Envelope env = GS__ENVELOPE__INIT;

    gpu.name = "gpu";
    gpu.is_default = true;
    gpu.nodes = gpu_nodes;
    gpu.n_nodes = 6;
    gpu.up = true;
    debug.name = "debug";
    debug.nodes = debug_nodes;
    debug.n_nodes = 2;
    debug.max_time_s = 1800;
    debug.up = true;
    reply.partitions = parts;
    reply.n_partitions = 2;
    reply.cluster_name = "fake";
    env.body_case = GS__ENVELOPE__BODY_PARTITIONS_REPLY;
    env.partitions_reply = &reply;
    send_reply(fd, &env);
}

static void on_nodes(int fd)
{
    static const struct {
        const char *name;
        Gs__NodeState state;
        uint32_t cores_free, gpus_free;
        uint64_t job;
        const char *reason;
    } spec[] = {
        {"n1", GS__NODE_STATE__NODE_STATE_UP, 8, 2, 42, ""},
        {"n2", GS__NODE_STATE__NODE_STATE_UP, 0, 2, 42, ""},
        {"n3", GS__NODE_STATE__NODE_STATE_UP, 12, 3, 50, ""},
        {"n4", GS__NODE_STATE__NODE_STATE_DRAINED, 16, 4, 0, "maintenance"},
        {"n5", GS__NODE_STATE__NODE_STATE_UP, 16, 4, 0, ""},
        {"n6", GS__NODE_STATE__NODE_STATE_DOWN, 16, 4, 0, "not heartbeating"},
        {"n7", GS__NODE_STATE__NODE_STATE_UP, 16, 4, 0, ""},
    };
    enum { N = sizeof(spec) / sizeof(spec[0]) };
    static char *features[] = {"h100", "nvlink"};
    Gs__NodesReply reply = GS__NODES_REPLY__INIT;
    Gs__NodeInfo nodes[N], *ptrs[N];
    uint64_t jobs[N];
    Gs__Envelope env = GS__ENVELOPE__INIT;

    for (size_t i = 0; i < N; i++) {
        Gs__NodeInfo *n = &nodes[i];

        gs__node_info__init(n);
        n->name = (char *)spec[i].name;
        n->state = spec[i].state;
        n->reason = (char *)spec[i].reason;
        n->cores_total = 16;
        n->cores_free = spec[i].cores_free;
        n->gpus_total = 4;
        n->gpus_free = spec[i].gpus_free;
        n->memory_total_mib = 65536;
        n->memory_free_mib = 65536 - (16 - spec[i].cores_free) * 2048;
        n->features = features;
        n->n_features = 2;
        jobs[i] = spec[i].job;
        n->running_jobs = &jobs[i];
        n->n_running_jobs = spec[i].job != 0 ? 1 : 0;
        ptrs[i] = n;
    }
    reply.nodes = ptrs;
    reply.n_nodes = N;
    env.body_case = GS__ENVELOPE__BODY_NODES_REPLY;
    env.nodes_reply = &reply;
    send_reply(fd, &env);
}

/* The two canned reservations; the caller's storage. */
struct resv_table {
    Gs__Reservation r[2];
    Gs__Reservation *ptrs[2];
};

static void fill_resv(struct resv_table *t)
{
    static char *users[] = {"alice"};
    static char *accounts[] = {"physics", "bio"};

    gs__reservation__init(&t->r[0]);
    t->r[0].name = "maint";
    t->r[0].start_ms = UINT64_C(1796464800000);
    t->r[0].end_ms = UINT64_C(1796464800000) + 3600 * 1000;
    t->r[0].nodes = "n[1-2]";
    t->r[0].node_count = 2;
    t->r[0].users = users;
    t->r[0].n_users = 1;
    t->r[0].active = true;
    gs__reservation__init(&t->r[1]);
    t->r[1].name = "future";
    t->r[1].start_ms = UINT64_C(1798099200000);
    t->r[1].nodes = "n5";
    t->r[1].node_count = 1;
    t->r[1].accounts = accounts;
    t->r[1].n_accounts = 2;
    t->ptrs[0] = &t->r[0];
    t->ptrs[1] = &t->r[1];
}

static void record_list(FILE *rec, const char *key, char **v, size_t n)
{
    fprintf(rec, " %s=", key);
    for (size_t i = 0; i < n; i++)
        fprintf(rec, "%s%s", i > 0 ? "," : "", v[i]);
}

static void record_resv(struct fake *f, const Gs__ReservationRequest *req)
{
    const Gs__Reservation *r = req->reservation;
    FILE *rec = fopen(f->record_path, "a");

    if (rec == NULL)
        return;
    fprintf(rec, "resv %s name=%s set=%s%s%s%s%s start=%llu end=%llu nodes=%s",
            req->action == GS__RESERVATION_ACTION__RESERVATION_ACTION_CREATE   ? "create"
            : req->action == GS__RESERVATION_ACTION__RESERVATION_ACTION_UPDATE ? "update"
                                                                               : "delete",
            r->name, req->set_start ? "start," : "", req->set_end ? "end," : "",
            req->set_nodes ? "nodes," : "", req->set_users ? "users," : "",
            req->set_accounts ? "accounts," : "", (unsigned long long)r->start_ms,
            (unsigned long long)r->end_ms, r->nodes);
    record_list(rec, "users", r->users, r->n_users);
    record_list(rec, "accounts", r->accounts, r->n_accounts);
    if (req->set_flags)
        fprintf(rec, " flags=%u", r->flags);
    if (req->n_add_users > 0)
        record_list(rec, "+users", req->add_users, req->n_add_users);
    if (req->n_remove_users > 0)
        record_list(rec, "-users", req->remove_users, req->n_remove_users);
    if (req->n_add_accounts > 0)
        record_list(rec, "+accounts", req->add_accounts, req->n_add_accounts);
    if (req->n_remove_accounts > 0)
        record_list(rec, "-accounts", req->remove_accounts, req->n_remove_accounts);
    if (req->add_flags != 0)
        fprintf(rec, " +flags=%u", req->add_flags);
    if (req->remove_flags != 0)
        fprintf(rec, " -flags=%u", req->remove_flags);
    fputc('\n', rec);
    fclose(rec);
}

static void on_reservation(struct fake *f, int fd, const Gs__ReservationRequest *req)
{
    Gs__ReservationReply reply = GS__RESERVATION_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    struct resv_table t;
    Gs__Reservation *one[1] = {NULL}, copy;
    const char *name = req->reservation != NULL ? req->reservation->name : "";
    char made[64], msg[128];

    fill_resv(&t);
    if (req->reservation == NULL) {
        send_error(fd, -EINVAL, "a reservation request names its reservation", NULL);
        return;
    }
    for (size_t i = 0; i < 2; i++)
        one[0] = strcmp(t.r[i].name, name) == 0 ? &t.r[i] : one[0];
    if (req->action == GS__RESERVATION_ACTION__RESERVATION_ACTION_SHOW && name[0] == '\0') {
        reply.reservations = t.ptrs;
        reply.n_reservations = 2;
    } else if (req->action == GS__RESERVATION_ACTION__RESERVATION_ACTION_CREATE) {
        record_resv(f, req);
        if (req->reservation->nodes != NULL && strstr(req->reservation->nodes, "gpu9") != NULL) {
            send_error(fd, -EINVAL, "Nodes: no node gpu9 in the cluster", NULL);
            return;
        }
        copy = *req->reservation;
        if (name[0] == '\0') {
            snprintf(made, sizeof(made), "%s_1",
                     copy.n_users > 0      ? copy.users[0]
                     : copy.n_accounts > 0 ? copy.accounts[0]
                                           : "resv");
            copy.name = made;
        }
        one[0] = &copy;
        reply.reservations = one;
        reply.n_reservations = 1;
    } else if (one[0] == NULL) {
        snprintf(msg, sizeof(msg), "no reservation %s", name);
        send_error(fd, -ENOENT, msg, NULL);
        return;
    } else {
        if (req->action != GS__RESERVATION_ACTION__RESERVATION_ACTION_SHOW)
            record_resv(f, req);
        reply.reservations = one;
        reply.n_reservations = 1;
    }
    env.body_case = GS__ENVELOPE__BODY_RESERVATION_REPLY;
    env.reservation_reply = &reply;
    send_reply(fd, &env);
}

/* The hello both ways, saying protocol minor f->minor (this build's when 0). */
static int handshake(const struct fake *f, int fd)
{
    Gs__Envelope env = GS__ENVELOPE__INIT, *peer = NULL;
    Gs__Hello hello;
    int rc;

    if (f->minor == 0)
        return gs_proto_handshake_fd(fd, GS__ROLE__ROLE_SCHEDULER, "gschedd",
                                     GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_CLI), TIMEOUT_MS, NULL);
    gs_proto_hello_init(&hello, GS__ROLE__ROLE_SCHEDULER, "gschedd");
    hello.protocol_minor = f->minor;
    env.body_case = GS__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    rc = gs_proto_write_fd(fd, &env, TIMEOUT_MS);
    if (rc == 0)
        rc = gs_proto_read_fd(fd, 0, TIMEOUT_MS, &peer);
    if (rc == 0 && peer->body_case != GS__ENVELOPE__BODY_HELLO)
        rc = -EPROTO;
    gs_proto_envelope_free(peer);
    return rc;
}

static void serve(struct fake *f, int fd)
{
    Gs__Envelope *in = NULL;

    if (handshake(f, fd) < 0 || gs_proto_read_fd(fd, 0, TIMEOUT_MS, &in) < 0)
        return;
    if (f->minor != 0 && gs_proto_body_minor(in->body_case) > f->minor) {
        FILE *rec = fopen(f->record_path, "a");

        if (rec != NULL) {
            fprintf(rec, "unknown %s\n", gs_proto_body_name(in->body_case));
            fclose(rec);
        }
        gs_proto_envelope_free(in);
        return;
    }
    switch (in->body_case) {
    case GS__ENVELOPE__BODY_SUBMIT_REQUEST:
        on_submit(f, fd, in->submit_request);
        break;
    case GS__ENVELOPE__BODY_QUEUE_REQUEST:
        on_queue(f, fd, in->queue_request);
        break;
    case GS__ENVELOPE__BODY_SHOW_REQUEST:
        on_show(f, fd, in->show_request);
        break;
    case GS__ENVELOPE__BODY_CANCEL_REQUEST:
    case GS__ENVELOPE__BODY_HOLD_REQUEST:
    case GS__ENVELOPE__BODY_RELEASE_REQUEST:
    case GS__ENVELOPE__BODY_REQUEUE_REQUEST:
    case GS__ENVELOPE__BODY_SUSPEND_REQUEST:
        on_action(f, fd, in);
        break;
    case GS__ENVELOPE__BODY_PARTITIONS_REQUEST:
        on_partitions(fd);
        break;
    case GS__ENVELOPE__BODY_NODES_REQUEST:
        on_nodes(fd);
        break;
    case GS__ENVELOPE__BODY_WAIT_REQUEST:
        on_wait(f, fd, in->wait_request);
        break;
    case GS__ENVELOPE__BODY_LOGS_REQUEST:
        on_logs(fd, in->logs_request);
        break;
    case GS__ENVELOPE__BODY_RESERVATION_REQUEST:
        on_reservation(f, fd, in->reservation_request);
        break;
    case GS__ENVELOPE__BODY_STEP_LAUNCH_REQUEST:
        on_step_launch(f, fd, in->step_launch_request);
        break;
    default:
        send_error(fd, -EOPNOTSUPP, "not served by the fake", NULL);
    }
    gs_proto_envelope_free(in);
}

static int listen_on(const char *path)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    if (fd < 0 || strlen(path) >= sizeof(sun.sun_path))
        return -1;
    memcpy(sun.sun_path, path, strlen(path) + 1);
    unlink(path);
    if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || listen(fd, 8) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int main(int argc, char **argv)
{
    struct fake f = {0};
    int lfd;

    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: fake_gschedd SOCKET RECORD [MINOR]\n");
        return 2;
    }
    f.record_path = argv[2];
    f.minor = argc == 4 ? (uint32_t)strtoul(argv[3], NULL, 10) : 0;
    f.started_ms = gs_clock_wall_ms() - 3000;
    lfd = listen_on(argv[1]);
    if (lfd < 0) {
        perror("fake_gschedd: listen");
        return 1;
    }
    for (;;) {
        int fd = accept(lfd, NULL, NULL);

        if (fd < 0)
            continue;
        serve(&f, fd);
        close(fd);
    }
}
