/*
 * worker.c: gsched-workerd's connection to the scheduler, its registration, heartbeats and
 * exit reports (see worker.h). LaunchTasks and SignalTasks are in worker_launch.c,
 * LogsRequest in worker_logs.c, the job records that stamp exits with their attempt in
 * jobs.c.
 *
 * Exits live in a list until acknowledged: sent when they happen, and all of them again in
 * the NodeRegister after every reconnect. The scheduler de-duplicates by (job, step, rank,
 * attempt), so a resend after a lost ack is harmless.
 *
 * Output of srun step tasks goes out as StepOutput frames on the same connection as their
 * TaskExit, and the task table reports the exit only after the output's end, so srun gets
 * every byte before it learns the task is over.
 *
 * CliRelay frames (the CLI sessions of worker/relay.c) also share the connection; the
 * relay may send only while registered, since gschedd closes a connection whose first
 * message is anything but a registration.
 */
#include "worker/worker_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "common/clock.h"
#include "common/log.h"
#include "worker/exits_file.h"
#include "worker/keeper.h"
#include "worker/register.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define CLI_RELAY_MINOR 2u /* the first protocol minor whose gschedd takes CliRelay */

static void connect_now(struct wrk_ctx *w);

int wrk_send(struct wrk_ctx *w, Gs__Envelope *env)
{
    if (w->conn == NULL || !gs_proto_conn_is_ready(w->conn))
        return -ENOTCONN;
    return gs_proto_conn_send(w->conn, env);
}

static void send_exit(struct wrk_ctx *w, struct wrk_exit *e)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;

    env.body_case = GS__ENVELOPE__BODY_TASK_EXIT;
    env.task_exit = &e->msg;
    if (w->registered)
        wrk_send(w, &env);
}

/* Records in the exits file (worker/exits_file.h) that the exits of refs were acknowledged,
 * w->exits holding those left. */
static void forget_exits(struct wrk_ctx *w, Gs__TaskRef *const *refs, size_t nrefs)
{
    size_t n = 0, i = 0;
    Gs__TaskExit **left;
    int rc;

    if (w->exits_file == NULL)
        return;
    for (struct wrk_exit *e = w->exits; e != NULL; e = e->next)
        n++;
    left = calloc(n + 1, sizeof(*left));
    if (left == NULL) {
        GS_LOG(GS_LOG_WARN, "out of memory: acknowledged exits stay in the exits file");
        return;
    }
    for (struct wrk_exit *e = w->exits; e != NULL; e = e->next)
        left[i++] = &e->msg;
    rc = wrk_exits_ack(w->exits_file, refs, nrefs, left, n);
    if (rc < 0) /* they would only be reported again, and taken as repeats */
        GS_LOG(GS_LOG_WARN, "error=\"%s\" acknowledged exits stay in the exits file",
               gs_strerror(rc));
    free(left);
}

/* An exit as kept until acknowledged; NULL when out of memory. */
static struct wrk_exit *new_exit(struct wrk_ctx *w, const char *node_name, const char *error)
{
    struct wrk_exit *e = calloc(1, sizeof(*e));

    if (e == NULL)
        return NULL;
    gs__task_exit__init(&e->msg);
    snprintf(e->node_name, sizeof(e->node_name), "%s",
             node_name != NULL ? node_name : w->node_name);
    snprintf(e->launch_error, sizeof(e->launch_error), "%s", error != NULL ? error : "");
    e->msg.node_name = e->node_name;
    e->msg.launch_error = e->launch_error;
    return e;
}

void wrk_record_exit(struct wrk_ctx *w, const struct wrk_task_id *id, uint32_t attempt,
                     const struct wrk_task_exit *ex, Gs__EndReason reason, const char *error)
{
    struct wrk_exit *e = new_exit(w, NULL, error);
    int rc;

    if (e == NULL) {
        GS_LOG(GS_LOG_ERROR, "job=%llu step=%u rank=%u exit lost: out of memory",
               (unsigned long long)id->job_id, id->step, id->rank);
        return;
    }
    e->msg.job_id = id->job_id;
    e->msg.step = id->step;
    e->msg.rank = id->rank;
    e->msg.attempt = attempt;
    e->msg.end_reason = reason;
    if (ex != NULL) {
        e->msg.signaled = ex->signaled;
        e->msg.exit_code = ex->exit_code;
        e->msg.term_signal = (uint32_t)ex->term_signal;
        e->msg.start_time_ms = ex->start_ms;
        e->msg.end_time_ms = ex->end_ms;
        e->msg.max_rss_kib = ex->max_rss_kib;
        e->msg.cpu_time_ms = ex->cpu_ms;
    }
    e->next = w->exits;
    w->exits = e;
    /* on disk before gschedd can hear of it */
    if (w->exits_file != NULL && (rc = wrk_exits_add(w->exits_file, &e->msg)) < 0)
        GS_LOG(GS_LOG_ERROR, "job=%llu step=%u rank=%u error=\"%s\" exit not saved",
               (unsigned long long)id->job_id, id->step, id->rank, gs_strerror(rc));
    send_exit(w, e);
}

static Gs__EndReason end_reason_of(enum wrk_end_reason r)
{
    switch (r) {
    case WRK_END_CANCELLED:
        return GS__END_REASON__END_REASON_CANCELLED;
    case WRK_END_TIMEOUT:
        return GS__END_REASON__END_REASON_TIMEOUT;
    default:
        return GS__END_REASON__END_REASON_NONE;
    }
}

/* A step's last task here has ended, its job's have not: its cgroup is emptied and goes. */
static void step_ended(struct wrk_ctx *w, uint64_t job_id, uint32_t step)
{
    int killed = wrk_cg_step_end(w->cg, job_id, step);

    if (killed > 0)
        GS_LOG(GS_LOG_INFO,
               "job=%llu step=%u processes=%d left in its cgroup after its tasks, killed",
               (unsigned long long)job_id, step, killed);
    else if (killed < 0)
        GS_LOG(GS_LOG_WARN, "job=%llu step=%u error=\"%s\" cgroup not removed",
               (unsigned long long)job_id, step, gs_strerror(killed));
}

static void on_task_exit(struct wrk_tasks *tasks, const struct wrk_task_exit *ex, void *data)
{
    struct wrk_ctx *w = data;
    struct wrk_job *job = wrk_job_find(w, ex->job_id);
    struct wrk_task_id id = {.job_id = ex->job_id, .step = ex->step, .rank = ex->rank};
    Gs__EndReason reason;
    int step_left;

    (void)tasks;
    if (w->ledger != NULL && wrk_ledger_remove(w->ledger, ex->pid) < 0)
        GS_LOG(GS_LOG_WARN, "pid=%d task ledger not updated", (int)ex->pid);
    GS_LOG(GS_LOG_INFO, "job=%llu step=%u rank=%u code=%d signal=%d task ended",
           (unsigned long long)ex->job_id, ex->step, ex->rank, ex->exit_code, ex->term_signal);
    reason = end_reason_of(ex->reason);
    /* The kernel's OOM killer ended processes in the job's group here: whatever this task's
     * own status, the job ran out of memory (as Slurm says OUT_OF_MEMORY). */
    if (reason == GS__END_REASON__END_REASON_NONE && wrk_cg_job_oom_kills(w->cg, ex->job_id) > 0)
        reason = GS__END_REASON__END_REASON_OOM;
    if (ex->launch_error != NULL) /* as a launch refused before the fork is: no exit status */
        wrk_record_exit(w, &id, job != NULL ? job->attempt : 0, NULL,
                        GS__END_REASON__END_REASON_LAUNCH_FAILED, ex->launch_error);
    else
        wrk_record_exit(w, &id, job != NULL ? job->attempt : 0, ex, reason, NULL);
    /* The exit carries the attempt from here on; a job with no task left here is dropped
     * so that a long-running worker does not accumulate them (its cgroup goes with it). A
     * step with no task left here while the job goes on loses what it left running. */
    step_left = wrk_tasks_count_step(w->tasks, ex->job_id, ex->step);
    if (step_left == 0) {
        wrk_mpi_step_end(w, ex->job_id, ex->step);
        wrk_flow_close(w, ex->job_id, ex->step);
    }
    if (job != NULL && --job->ntasks <= 0)
        wrk_job_idle(w, job);
    else if (job != NULL && step_left == 0)
        step_ended(w, ex->job_id, ex->step);
}

static void handle_ack(struct wrk_ctx *w, const Gs__TaskExitAck *ack)
{
    bool removed = false;

    for (size_t i = 0; i < ack->n_tasks; i++) {
        const Gs__TaskRef *t = ack->tasks[i];

        for (struct wrk_exit **p = &w->exits; *p != NULL; p = &(*p)->next) {
            struct wrk_exit *e = *p;

            if (e->msg.job_id == t->job_id && e->msg.step == t->step && e->msg.rank == t->rank &&
                e->msg.attempt == t->attempt) {
                *p = e->next;
                free(e);
                removed = true;
                break;
            }
        }
    }
    if (removed)
        forget_exits(w, ack->tasks, ack->n_tasks);
    for (size_t i = 0; removed && i < ack->n_tasks; i++) {
        if (ack->tasks[i]->step != 0) /* an ended step's output need not be kept past it */
            wrk_flow_exits_acked(w, ack->tasks[i]->job_id, ack->tasks[i]->step);
    }
}

struct running_ctx {
    struct wrk_ctx *w;
    Gs__NodeRegister *msg;
    int rc;
};

static void add_running(const struct wrk_task_id *id, pid_t pid, uint64_t start_ms, void *data)
{
    struct running_ctx *r = data;
    struct wrk_job *job = wrk_job_find(r->w, id->job_id);

    if (r->rc == 0)
        r->rc = wrk_register_add_running(r->msg, id->job_id, id->step, id->rank, pid, start_ms,
                                         job != NULL ? job->attempt : 0);
}

/* The size of worker.tmp_fs in MiB (Slurm's TmpDisk), measured at each registration so a
 * file system mounted since counts; 0 (said) when it cannot be read. */
static uint64_t tmp_disk_mib(const struct wrk_ctx *w)
{
    struct statvfs st;

    if (statvfs(w->tmp_fs, &st) < 0) {
        GS_LOG(GS_LOG_WARN, "path=%s err=\"%s\" worker.tmp_fs unreadable: TmpDisk=0", w->tmp_fs,
               strerror(errno));
        return 0;
    }
    return (uint64_t)st.f_blocks * st.f_frsize >> 20;
}

/* NodeRegister with the running tasks and every unacknowledged exit. */
static int send_register(struct wrk_ctx *w)
{
    struct wrk_register_info info = {w->topo,     w->node_name, w->address,
                                     w->features, w->start_ms,  tmp_disk_mib(w)};
    Gs__Envelope env = GS__ENVELOPE__INIT;
    struct running_ctx r = {w, NULL, 0};
    Gs__TaskExit **exits = NULL;
    size_t n = 0;
    int rc = wrk_register_build(&info, &r.msg);

    if (rc < 0)
        return rc;
    wrk_tasks_foreach(w->tasks, add_running, &r);
    for (struct wrk_exit *e = w->exits; e != NULL; e = e->next)
        n++;
    exits = calloc(n + 1, sizeof(*exits));
    rc = r.rc < 0 ? r.rc : exits == NULL ? -ENOMEM : 0;
    if (rc == 0) {
        n = 0;
        for (struct wrk_exit *e = w->exits; e != NULL; e = e->next)
            exits[n++] = &e->msg;
        /* Borrowed for the send only: detached again before the message is freed. */
        r.msg->unacked_exits = exits;
        r.msg->n_unacked_exits = n;
        r.msg->data_port = wrk_data_port(w);
        env.body_case = GS__ENVELOPE__BODY_NODE_REGISTER;
        env.node_register = r.msg;
        rc = wrk_send(w, &env);
        r.msg->unacked_exits = NULL;
        r.msg->n_unacked_exits = 0;
    }
    free(exits);
    wrk_register_free(r.msg);
    return rc;
}

/* hb->running has room for every running task (counted just before). */
static void collect_running(const struct wrk_task_id *id, pid_t pid, uint64_t start_ms, void *data)
{
    Gs__Heartbeat *hb = data;
    Gs__TaskRef *t = hb->running[hb->n_running++];

    gs__task_ref__init(t);
    t->job_id = id->job_id;
    t->step = id->step;
    t->rank = id->rank;
    t->pid = pid;
    t->start_time_ms = start_ms;
}

static void on_heartbeat(uv_timer_t *timer)
{
    struct wrk_ctx *w = timer->data;
    int n = wrk_tasks_count(w->tasks, 0);
    Gs__TaskRef *refs = calloc((size_t)n + 1, sizeof(*refs));
    Gs__TaskRef **ptrs = calloc((size_t)n + 1, sizeof(*ptrs));
    Gs__Heartbeat hb = GS__HEARTBEAT__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    if (refs != NULL && ptrs != NULL) {
        for (int i = 0; i < n; i++)
            ptrs[i] = &refs[i];
        hb.node_name = w->node_name;
        hb.seq = ++w->heartbeat_seq;
        hb.sent_at_ms = gs_clock_wall_ms();
        hb.running = ptrs;
        wrk_tasks_foreach(w->tasks, collect_running, &hb);
        if (w->telemetry != NULL)
            wrk_telemetry_fill(w->telemetry, &hb);
        env.body_case = GS__ENVELOPE__BODY_HEARTBEAT;
        env.heartbeat = &hb;
        wrk_send(w, &env);
    }
    free(refs);
    free(ptrs);
}

/*
 * Fencing: a worker that has heard nothing from gschedd (no heartbeat acknowledged, no
 * frame at all) for fence_ms kills every task it runs, since gschedd starts their jobs
 * elsewhere once that time (and a margin) has passed: a job never runs twice at once,
 * whichever side of a cut link each daemon is on. The timer looks every fence_period_ms and
 * fences once the silence is within one period of fence_ms, so the tasks are dead by
 * fence_ms, not up to a period later. The exits go to gschedd when it is heard again; their
 * attempts are old by then.
 */
static uint64_t fence_period_ms(uint64_t fence_ms)
{
    return fence_ms / 4 > 1000 ? 1000 : (fence_ms / 4 > 0 ? fence_ms / 4 : 1);
}

static bool fence_due(const struct wrk_ctx *w)
{
    uint64_t silent = gs_clock_mono_ms() - w->last_heard_ms;

    return w->fence_ms > 0 && silent + fence_period_ms(w->fence_ms) > w->fence_ms;
}

static void fence(struct wrk_ctx *w)
{
    uint64_t silent = gs_clock_mono_ms() - w->last_heard_ms;
    int n = 0;

    w->fenced = true;
    for (struct wrk_job *j = w->jobs; j != NULL; j = j->next) {
        struct wrk_task_match m = {.job_id = j->job_id, .all_steps = true};

        n += wrk_tasks_kill(w->tasks, &m, WRK_END_CANCELLED);
        /* SIGKILL now, not after kill_grace: gschedd moves the job once fence_ms and a
         * heartbeat have passed, and a task that outlives SIGTERM must be dead by then. */
        wrk_tasks_signal(w->tasks, &m, SIGKILL, false);
    }
    GS_LOG(GS_LOG_ERROR,
           "node=%s silent_ms=%llu fence_ms=%llu tasks=%d nothing heard from gschedd: fenced, "
           "tasks killed",
           w->node_name, (unsigned long long)silent, (unsigned long long)w->fence_ms, n);
    /* What still arrives on this connection was sent before gschedd gave up on the node (held
     * behind a cut link, or unread by a stopped worker): a launch in it would start an attempt
     * gschedd has moved elsewhere. Only a new registration makes this worker heard again. */
    if (w->registered)
        gs_proto_conn_close(w->conn);
}

static void on_fence(uv_timer_t *timer)
{
    struct wrk_ctx *w = timer->data;

    if (!w->fenced && fence_due(w))
        fence(w);
}

static void handle_register_reply(struct wrk_ctx *w, const Gs__NodeRegisterReply *reply)
{
    if (!reply->accepted) {
        GS_LOG(GS_LOG_ERROR, "node=%s reason=\"%s\" scheduler refused registration", w->node_name,
               reply->reason != NULL ? reply->reason : "");
        gs_proto_conn_close(w->conn);
        return;
    }
    w->registered = true;
    w->registrations++;
    w->backoff_ms = BACKOFF_MIN_MS;
    w->heartbeat_ms = reply->heartbeat_interval_ms > 0 ? reply->heartbeat_interval_ms : 2000;
    wrk_relay_set_connected(w->relay, true);
    uv_timer_start(&w->heartbeat, on_heartbeat, w->heartbeat_ms, w->heartbeat_ms);
    w->fence_ms = reply->fence_timeout_ms;
    wrk_keeper_set_fence(w->keeper_fd, w->fence_ms);
    w->fenced = false;
    if (w->fence_ms > 0) {
        uint64_t every = fence_period_ms(w->fence_ms);

        uv_timer_start(&w->fence, on_fence, every, every);
    } else {
        uv_timer_stop(&w->fence);
    }
    /* Exactly the tasks named: a restarted scheduler ends the steps whose srun it lost
     * while the batch shell of the same job runs on. */
    for (size_t i = 0; i < reply->n_kill; i++) {
        const Gs__TaskRef *k = reply->kill[i];
        struct wrk_task_match m = {
            .job_id = k->job_id, .step = k->step, .ranks = &k->rank, .nranks = 1};

        GS_LOG(GS_LOG_WARN, "job=%llu step=%u rank=%u no longer assigned here, killing it",
               (unsigned long long)k->job_id, k->step, k->rank);
        wrk_tasks_kill(w->tasks, &m, WRK_END_CANCELLED);
    }
    GS_LOG(GS_LOG_INFO, "node=%s heartbeat_ms=%llu registered", w->node_name,
           (unsigned long long)w->heartbeat_ms);
    wrk_data_registered(w);
    wrk_fences_registered(w);
}

/* A chunk (or the end) of a step task's stdout or stderr, for the srun waiting on it: sent
 * while registered (the scheduler relays output of tasks it knows), kept for srun as its
 * output window says (output_flow.c). */
static void on_task_output(struct wrk_tasks *tasks, const struct wrk_task_id *id,
                           enum wrk_stream stream, const char *bytes, size_t len, bool eof,
                           void *data)
{
    (void)tasks;
    wrk_flow_output(data, id, stream, bytes, len, eof);
}

/*
 * How far a step's input got here, for srun's window (StepInputAck). A gschedd before 1.28
 * would drop the connection over a body it does not know: it hears none.
 */
static void on_task_input(struct wrk_tasks *tasks, uint64_t job_id, uint32_t step, uint64_t offset,
                          void *data)
{
    struct wrk_ctx *w = data;
    const Gs__Hello *peer = w->conn != NULL ? gs_proto_conn_peer_hello(w->conn) : NULL;
    Gs__StepInputAck ack = GS__STEP_INPUT_ACK__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    int rc;

    (void)tasks;
    if (!w->registered || peer == NULL || peer->protocol_minor < GS_PROTO_MINOR_INPUT)
        return;
    ack.job_id = job_id;
    ack.step = step;
    ack.offset = offset;
    env.body_case = GS__ENVELOPE__BODY_STEP_INPUT_ACK;
    env.step_input_ack = &ack;
    rc = wrk_send(w, &env);
    if (rc < 0 && rc != -ENOTCONN)
        GS_LOG(GS_LOG_WARN, "job=%llu step=%u offset=%llu rc=%d step input ack dropped",
               (unsigned long long)job_id, step, (unsigned long long)offset, rc);
}

/* srun's stdin for a step's input tasks (one, or every one here), relayed by the scheduler. */
static void handle_input(struct wrk_ctx *w, const Gs__StepInput *in)
{
    struct wrk_task_id id = {.job_id = in->job_id, .step = in->step, .rank = in->rank};
    int rc;

    if (in->rows > 0 && in->cols > 0 && in->rows <= UINT16_MAX && in->cols <= UINT16_MAX) {
        rc = wrk_tasks_resize(w->tasks, &id, (uint16_t)in->rows, (uint16_t)in->cols);
        if (rc < 0 && rc != -ENOENT)
            GS_LOG(GS_LOG_WARN, "job=%llu step=%u rank=%u rows=%u cols=%u rc=%d pty resize failed",
                   (unsigned long long)in->job_id, in->step, in->rank, in->rows, in->cols, rc);
        if (in->data.len == 0 && !in->eof)
            return;
    }
    if (in->all) {
        int fed;

        rc = wrk_tasks_input_step(w->tasks, in->job_id, in->step, in->data.data, in->data.len,
                                  in->end, in->eof, &fed);
    } else {
        rc = wrk_tasks_input(w->tasks, &id, in->data.data, in->data.len, in->end, in->eof);
    }
    if (rc < 0 && rc != -ENOENT)
        GS_LOG(GS_LOG_WARN, "job=%llu step=%u rank=%u bytes=%zu rc=%d step input dropped",
               (unsigned long long)in->job_id, in->step, in->rank, in->data.len, rc);
}

static void on_message(struct gs_proto_conn *conn, const Gs__Envelope *env, void *data)
{
    struct wrk_ctx *w = data;

    (void)conn;
    /* A frame after the fence's silence is stale: the timer had not looked yet (or the
     * worker was stopped); it is dropped with the connection, as fence() says. */
    if (w->registered && !w->fenced && fence_due(w)) {
        fence(w);
        return;
    }
    w->last_heard_ms = gs_clock_mono_ms();
    switch (env->body_case) {
    case GS__ENVELOPE__BODY_HEARTBEAT_ACK: /* heard: that is all it says */
        break;
    case GS__ENVELOPE__BODY_NODE_REGISTER_REPLY:
        handle_register_reply(w, env->node_register_reply);
        break;
    case GS__ENVELOPE__BODY_LAUNCH_TASKS:
        wrk_handle_launch(w, env->launch_tasks, env->request_id);
        break;
    case GS__ENVELOPE__BODY_SIGNAL_TASKS:
        wrk_handle_signal(w, env->signal_tasks);
        break;
    case GS__ENVELOPE__BODY_JOB_NOTICE:
        wrk_handle_notice(w, env->job_notice);
        break;
    case GS__ENVELOPE__BODY_JOB_LIMIT_UPDATE:
        wrk_handle_limit(w, env->job_limit_update);
        break;
    case GS__ENVELOPE__BODY_DATA_COMMAND:
        wrk_data_command(w, env->data_command);
        break;
    case GS__ENVELOPE__BODY_TASK_EXIT_ACK:
        handle_ack(w, env->task_exit_ack);
        break;
    case GS__ENVELOPE__BODY_LOGS_REQUEST:
        wrk_handle_logs(w, env->logs_request, env->request_id);
        break;
    case GS__ENVELOPE__BODY_CLI_RELAY:
        if (w->relay != NULL)
            wrk_relay_from_scheduler(w->relay, env->cli_relay);
        break;
    case GS__ENVELOPE__BODY_STEP_INPUT:
        handle_input(w, env->step_input);
        break;
    case GS__ENVELOPE__BODY_PMIX_FENCE_DONE:
        wrk_handle_fence_done(w, env->pmix_fence_done);
        break;
    case GS__ENVELOPE__BODY_STEP_OUTPUT_ACK:
        wrk_flow_taken(w, env->step_output_ack);
        break;
    case GS__ENVELOPE__BODY_STEP_OUTPUT_RESUME:
        wrk_flow_resume(w, env->step_output_resume);
        break;
    default:
        GS_LOG(GS_LOG_WARN, "body=%s unexpected from scheduler, ignored",
               gs_proto_body_name(env->body_case));
        break;
    }
}

static void on_ready(struct gs_proto_conn *conn, const Gs__Hello *peer, void *data)
{
    struct wrk_ctx *w = data;
    int rc;

    (void)peer;
    rc = send_register(w);
    if (rc < 0) {
        GS_LOG(GS_LOG_ERROR, "rc=%d cannot send registration", rc);
        gs_proto_conn_close(conn);
    }
}

static void on_reconnect_timer(uv_timer_t *timer)
{
    connect_now(timer->data);
}

static void schedule_reconnect(struct wrk_ctx *w)
{
    if (w->stopping)
        return;
    uv_timer_start(&w->reconnect, on_reconnect_timer, w->backoff_ms, 0);
    w->backoff_ms = w->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : w->backoff_ms * 2;
}

static void release_handle(struct wrk_ctx *w)
{
    if (--w->open_handles > 0 || !w->stopping)
        return;
    if (w->stopped != NULL)
        w->stopped(w->stopped_data);
    wrk_data_free(w);
    wrk_fences_free(w);
    for (struct wrk_exit *e = w->exits, *next; e != NULL; e = next) {
        next = e->next;
        free(e);
    }
    for (struct wrk_job *j = w->jobs, *next; j != NULL; j = next) {
        next = j->next;
        free(j->deferred); /* a launch waiting for the previous attempt's tasks */
        free(j);
    }
    for (size_t i = 0; w->features != NULL && w->features[i] != NULL; i++)
        free(w->features[i]);
    free(w->features);
    wrk_ledger_free(w->ledger);
    wrk_exits_close(w->exits_file);
    gs_proto_auth_key_clear(&w->auth_key);
    wrk_cg_free(w->cg);
    free(w);
}

static void on_conn_close(struct gs_proto_conn *conn, int status, void *data)
{
    struct wrk_ctx *w = data;

    (void)conn;
    w->conn = NULL;
    w->registered = false;
    wrk_relay_set_connected(w->relay, false);
    /* The fences under way wait: their parts go again when the worker registers. */
    uv_timer_stop(&w->heartbeat);
    if (!w->stopping)
        GS_LOG(GS_LOG_WARN, "status=%d reason=%s lost the scheduler, reconnecting", status,
               gs_proto_reason(status));
    schedule_reconnect(w);
    release_handle(w);
}

static void on_connected(uv_connect_t *req, int status)
{
    struct wrk_ctx *w = req->data;

    free(req);
    if (status == 0 && !w->stopping)
        status = gs_proto_conn_start(w->conn);
    if (status < 0) {
        GS_LOG(GS_LOG_DEBUG, "status=%d cannot reach the scheduler", status);
        gs_proto_conn_close(w->conn);
    }
}

static void connect_now(struct wrk_ctx *w)
{
    struct gs_proto_conn_opts opts = {
        .role = GS__ROLE__ROLE_WORKER,
        .name = w->node_name,
        .accept_roles = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_SCHEDULER),
        .on_ready = on_ready,
        .on_message = on_message,
        .on_close = on_conn_close,
        .auth_key = &w->auth_key,
        .data = w,
    };
    uv_connect_t *req;

    if (w->conn != NULL || w->stopping)
        return;
    w->conn = gs_proto_conn_new(w->loop, GS_PROTO_TCP, &opts);
    req = malloc(sizeof(*req));
    if (w->conn == NULL || req == NULL) {
        free(req);
        if (w->conn != NULL)
            gs_proto_conn_close(w->conn);
        else
            schedule_reconnect(w);
        return;
    }
    w->open_handles++; /* the connection, until on_conn_close */
    req->data = w;
    if (uv_tcp_connect(req, (uv_tcp_t *)gs_proto_conn_stream(w->conn),
                       (const struct sockaddr *)&w->scheduler, on_connected) < 0) {
        free(req);
        gs_proto_conn_close(w->conn);
    }
}

static void on_timer_closed(uv_handle_t *handle)
{
    release_handle(handle->data);
}

void wrk_handle_closed(struct wrk_ctx *w)
{
    release_handle(w);
}

static int copy_features(struct wrk_ctx *w, char *const *features)
{
    size_t n = 0;

    while (features != NULL && features[n] != NULL)
        n++;
    w->features = calloc(n + 1, sizeof(char *));
    if (w->features == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        w->features[i] = strdup(features[i]);
        if (w->features[i] == NULL)
            return -ENOMEM;
    }
    return 0;
}

/* The exits a previous worker of this node recorded and never had acknowledged: reported
 * in the next registration like any other. */
static void load_exits(struct wrk_ctx *w, const char *ledger_path)
{
    Gs__TaskExit **saved = NULL;
    size_t n = 0;
    char path[4200];
    int rc;

    snprintf(path, sizeof(path), "%s.exits", ledger_path);
    rc = wrk_exits_open(path, &w->exits_file, &saved, &n);
    if (rc == -EBADMSG) { /* a damaged file of an earlier worker: set aside, a fresh one */
        char aside[4220];

        snprintf(aside, sizeof(aside), "%s.damaged", path);
        GS_LOG(GS_LOG_WARN, "path=%s error=\"%s\" moved_to=%s unacknowledged exits unreadable",
               path, gs_strerror(rc), aside);
        if (rename(path, aside) == 0)
            rc = wrk_exits_open(path, &w->exits_file, &saved, &n);
    }
    if (rc < 0) {
        GS_LOG(GS_LOG_ERROR, "path=%s error=\"%s\" no exits file: exits are not kept on disk", path,
               gs_strerror(rc));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const Gs__TaskExit *x = saved[i];
        struct wrk_exit *e = new_exit(w, x->node_name, x->launch_error);

        if (e == NULL)
            break;
        e->msg.job_id = x->job_id;
        e->msg.step = x->step;
        e->msg.rank = x->rank;
        e->msg.attempt = x->attempt;
        e->msg.end_reason = x->end_reason;
        e->msg.signaled = x->signaled;
        e->msg.exit_code = x->exit_code;
        e->msg.term_signal = x->term_signal;
        e->msg.start_time_ms = x->start_time_ms;
        e->msg.end_time_ms = x->end_time_ms;
        e->msg.max_rss_kib = x->max_rss_kib;
        e->msg.cpu_time_ms = x->cpu_time_ms;
        e->next = w->exits;
        w->exits = e;
    }
    if (n > 0)
        GS_LOG(GS_LOG_INFO, "exits=%zu unacknowledged exits of a previous worker, to report", n);
    for (size_t i = 0; i < n; i++)
        gs__task_exit__free_unpacked(saved[i], NULL);
    free(saved);
}

/*
 * Ends what an earlier worker of this node left running (it died without ending its tasks,
 * and the scheduler, seeing a new worker, requeues those jobs), then starts a fresh ledger.
 */
static void start_ledger(struct wrk_ctx *w, const char *path)
{
    int killed = wrk_ledger_sweep(path);

    if (killed < 0)
        GS_LOG(GS_LOG_WARN, "path=%s error=\"%s\" task ledger unreadable", path,
               gs_strerror(killed));
    else if (killed > 0)
        GS_LOG(GS_LOG_WARN, "tasks=%d leftover tasks of a previous worker ended", killed);
    w->ledger = wrk_ledger_new(path);
    if (w->ledger == NULL)
        GS_LOG(GS_LOG_WARN, "path=%s out of memory: tasks are not recorded", path);
}

/* The relay's way to gschedd: only once registered (see the top of this file). */
static int relay_send(const Gs__Envelope *env, void *data)
{
    struct wrk_ctx *w = data;

    const Gs__Hello *peer;

    if (!w->registered)
        return -ENOTCONN;
    /* An older gschedd would take the unknown body for a broken peer and drop us. */
    peer = gs_proto_conn_peer_hello(w->conn);
    if (peer == NULL || peer->protocol_minor < CLI_RELAY_MINOR)
        return -EPROTONOSUPPORT;
    return wrk_send(w, (Gs__Envelope *)env);
}

/* CLI frames answered here rather than by gschedd: a job's requests for its shards. */
static bool relay_local(struct gs_proto_conn *conn, const Gs__Envelope *env, uint32_t uid,
                        void *data)
{
    return wrk_data_fetch(data, conn, env, uid);
}

static void on_relay_closed(void *data)
{
    release_handle(data);
}

/* The CLI socket, when one is wanted; a failure is fatal unless it is optional. */
static int start_relay(struct wrk_ctx *w, const struct wrk_opts *opts, struct gs_error *err)
{
    struct wrk_relay_opts ro = {.path = opts->cli_socket,
                                .node_name = w->node_name,
                                .send = relay_send,
                                .local = relay_local,
                                .data = w};
    struct gs_error rerr;

    if (opts->cli_socket == NULL)
        return 0;
    w->relay = wrk_relay_new(w->loop, &ro, &rerr);
    if (w->relay != NULL) {
        w->open_handles++; /* until on_relay_closed */
        GS_LOG(GS_LOG_INFO, "path=%s cli socket listening", opts->cli_socket);
        return 0;
    }
    if (!opts->cli_socket_optional) {
        *err = rerr;
        return rerr.code;
    }
    GS_LOG(GS_LOG_WARN,
           "error=\"%s\" no cli socket: gsched inside jobs uses gschedd's own socket, "
           "which only works on gschedd's host",
           rerr.msg);
    return 0;
}

static void on_telemetry_closed(void *data)
{
    release_handle(data);
}

/* GPU, CPU and memory figures for the heartbeats, when sampling is on. NVML finds real GPUs
 * by bus id, synthetic ones by index. Without memory for it, heartbeats carry none. */
static void start_telemetry(struct wrk_ctx *w, const struct wrk_opts *opts)
{
    int ngpus = w->topo != NULL ? gs_topo_ngpus(w->topo) : 0;
    struct wrk_telemetry_opts to = {.interval_ms = opts->telemetry_ms, .ngpus = ngpus};
    const char **bus_ids;

    if (opts->telemetry_ms == 0)
        return;
    bus_ids = calloc((size_t)ngpus + 1, sizeof(*bus_ids));
    for (int i = 0; bus_ids != NULL && i < ngpus; i++)
        bus_ids[i] = opts->synthetic_gpus ? "" : gs_topo_gpu(w->topo, i)->pci_bus_id;
    to.bus_ids = bus_ids;
    w->telemetry = bus_ids != NULL ? wrk_telemetry_new(w->loop, &to) : NULL;
    free(bus_ids);
    if (w->telemetry == NULL) {
        GS_LOG(GS_LOG_WARN, "node=%s out of memory: heartbeats carry no telemetry", w->node_name);
        return;
    }
    w->open_handles++; /* until on_telemetry_closed */
    GS_LOG(GS_LOG_INFO, "node=%s nvml=%s gpus=%d telemetry_ms=%llu telemetry started", w->node_name,
           wrk_telemetry_nvml(w->telemetry) ? "yes" : "no", ngpus,
           (unsigned long long)opts->telemetry_ms);
    if (wrk_telemetry_nvml(w->telemetry) && wrk_telemetry_nvml_gpus(w->telemetry) < ngpus)
        GS_LOG(GS_LOG_WARN,
               "node=%s gpus=%d nvml_gpus=%d nvml does not know every gpu, the "
               "others report no figures",
               w->node_name, ngpus, wrk_telemetry_nvml_gpus(w->telemetry));
}

/* The jobs' cgroups, as worker.cgroups asks; without them jobs run unconfined, said once. */
static int start_cgroups(struct wrk_ctx *w, const struct wrk_opts *opts, struct gs_error *err)
{
    struct gs_buf why = GS_BUF_INIT;
    char node[256];
    int rc;

    snprintf(node, sizeof(node), "%s/%s",
             opts->cgroup_parent != NULL ? opts->cgroup_parent : "gsched", w->node_name);
    rc = wrk_cg_open(opts->cgroups, opts->cgroup_root, node, &w->cg, &why);
    if (rc < 0)
        gs_error_set(err, rc, 0, 0, "worker.cgroups: %s", why.data != NULL ? why.data : "");
    else if (wrk_cg_mode(w->cg) == WRK_CG_NONE)
        GS_LOG(GS_LOG_WARN, "node=%s cgroups=none reason=\"%s\" jobs run without kernel limits",
               w->node_name, why.data != NULL ? why.data : "");
    else if (why.len > 0) /* some limits are missing */
        GS_LOG(GS_LOG_WARN, "node=%s cgroups=\"%s\" reason=\"%s\" jobs get their own cgroups",
               w->node_name, wrk_cg_describe(w->cg), why.data);
    else
        GS_LOG(GS_LOG_INFO, "node=%s cgroups=\"%s\" jobs get their own cgroups", w->node_name,
               wrk_cg_describe(w->cg));
    gs_buf_release(&why);
    return rc;
}

struct wrk_ctx *wrk_new(uv_loop_t *loop, const struct wrk_opts *opts, struct gs_error *err)
{
    struct wrk_ctx *w = calloc(1, sizeof(*w));
    socklen_t len = opts->scheduler->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                           : sizeof(struct sockaddr_in);

    if (w == NULL || copy_features(w, opts->features) < 0) {
        gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
        goto fail;
    }
    w->loop = loop;
    memcpy(&w->scheduler, opts->scheduler, len);
    snprintf(w->node_name, sizeof(w->node_name), "%s", opts->node_name);
    snprintf(w->address, sizeof(w->address), "%s", opts->address);
    snprintf(w->tmp_fs, sizeof(w->tmp_fs), "%s", opts->tmp_fs != NULL ? opts->tmp_fs : "/tmp");
    snprintf(w->script_dir, sizeof(w->script_dir), "%s",
             opts->script_dir != NULL ? opts->script_dir : "/tmp");
    snprintf(w->cli_path, sizeof(w->cli_path), "%s",
             opts->cli_path != NULL ? opts->cli_path : "gsched");
    snprintf(w->slurm_bin, sizeof(w->slurm_bin), "%s",
             opts->slurm_bin != NULL ? opts->slurm_bin : "");
    w->topo = opts->topo;
    w->allow_root_jobs = opts->allow_root_jobs;
    w->job_pids_max = opts->job_pids_max;
    if (opts->auth_key != NULL)
        w->auth_key = *opts->auth_key;
    w->grace_ms = opts->grace_ms > 0 ? opts->grace_ms : 30000;
    w->keeper_fd = opts->keeper ? opts->keeper_fd : -1;
    w->log_read_gate = opts->log_read_gate;
    w->log_read_gate_data = opts->log_read_gate_data;
    w->start_ms = gs_clock_wall_ms();
    w->backoff_ms = BACKOFF_MIN_MS;
    w->tasks = wrk_tasks_new(loop, w->grace_ms, on_task_exit, w);
    if (w->tasks == NULL) {
        gs_error_set(err, -ENOMEM, 0, 0, "cannot watch child processes");
        goto fail;
    }
    wrk_tasks_set_output_cb(w->tasks, on_task_output);
    wrk_tasks_set_input_cb(w->tasks, on_task_input);
    if (opts->ledger_path != NULL) {
        start_ledger(w, opts->ledger_path);
        load_exits(w, opts->ledger_path);
    }
    uv_timer_init(loop, &w->heartbeat);
    uv_timer_init(loop, &w->reconnect);
    uv_timer_init(loop, &w->fence);
    w->heartbeat.data = w->reconnect.data = w->fence.data = w;
    w->open_handles = 3;
    if (start_cgroups(w, opts, err) < 0 || start_relay(w, opts, err) < 0 ||
        wrk_logs_start(w, err) < 0) {
        wrk_stop(w, NULL, NULL); /* freed once its handles are closed */
        return NULL;
    }
    start_telemetry(w, opts);
    if (wrk_data_start(w, opts, err) < 0) {
        wrk_stop(w, NULL, NULL);
        return NULL;
    }
    return w;
fail:
    if (w != NULL) {
        for (size_t i = 0; w->features != NULL && w->features[i] != NULL; i++)
            free(w->features[i]);
        free(w->features);
    }
    free(w);
    return NULL;
}

int wrk_start(struct wrk_ctx *w)
{
    connect_now(w);
    return 0;
}

void wrk_stop(struct wrk_ctx *w, void (*stopped)(void *data), void *data)
{
    if (w->stopping)
        return;
    w->stopping = true;
    w->stopped = stopped;
    w->stopped_data = data;
    wrk_tasks_close(w->tasks);
    w->tasks = NULL;
    wrk_pmix_close(w->pmix);
    w->pmix = NULL;
    wrk_pmi_close(w->pmi);
    w->pmi = NULL;
    wrk_flows_free(w);
    for (struct wrk_job *j = w->jobs; j != NULL; j = j->next)
        (void)wrk_cg_job_end(w->cg, j->job_id); /* its tasks were killed just now */
    wrk_relay_close(w->relay, on_relay_closed, w);
    w->relay = NULL;
    wrk_telemetry_close(w->telemetry, on_telemetry_closed, w);
    w->telemetry = NULL;
    wrk_logs_stop(w);
    wrk_data_stop(w);
    if (w->conn != NULL)
        gs_proto_conn_close(w->conn);
    uv_close((uv_handle_t *)&w->heartbeat, on_timer_closed);
    uv_close((uv_handle_t *)&w->reconnect, on_timer_closed);
    uv_close((uv_handle_t *)&w->fence, on_timer_closed);
}

const char *wrk_cli_socket(const struct wrk_ctx *w)
{
    return w->relay != NULL ? wrk_relay_path(w->relay) : NULL;
}

int wrk_running(const struct wrk_ctx *w)
{
    return w->tasks != NULL ? wrk_tasks_count(w->tasks, 0) : 0;
}

int wrk_unacked_exits(const struct wrk_ctx *w)
{
    int n = 0;

    for (const struct wrk_exit *e = w->exits; e != NULL; e = e->next)
        n++;
    return n;
}

unsigned wrk_registrations(const struct wrk_ctx *w)
{
    return w->registrations;
}

int wrk_jobs_known(const struct wrk_ctx *w)
{
    int n = 0;

    for (const struct wrk_job *j = w->jobs; j != NULL; j = j->next)
        n++;
    return n;
}
