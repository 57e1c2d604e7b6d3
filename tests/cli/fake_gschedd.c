/*
 * fake_gschedd.c: a stand-in gschedd for testing the CLI's job commands on their own. It
 * speaks the real wire protocol (proto/frame.h) on a Unix socket, one request per
 * connection like gschedd, and answers from a fixed script of jobs, so job-commands.sh can
 * check what each command sends and prints without a scheduler or workers:
 *
 *     fake_gschedd SOCKET RECORD
 *
 * Jobs: 42 runs on n1,n2 (two GPUs each) and completes on the second WaitRequest; 44
 * fails with exit code 3; 45 is killed by signal 9; 46 never ends (waits time out); 43
 * is pending for Resources; 7 and 99 do not exist. Logs of any job are "hello\nworld\n",
 * served 5 bytes at a time. Each SubmitRequest's workdir, source file and user name are
 * appended to RECORD as "submit workdir=... source=... user=... hold=0|1".
 * Single-threaded; exits on SIGTERM (default action).
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

static bool job_exists(uint64_t id)
{
    return id >= 41 && id <= 46;
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
}

static void on_queue(struct fake *f, int fd, const Gs__QueueRequest *req)
{
    Gs__QueueReply reply = GS__QUEUE_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__JobInfo pending = GS__JOB_INFO__INIT, done = GS__JOB_INFO__INIT;
    Gs__UserIdentity bob = GS__USER_IDENTITY__INIT;
    Gs__Resources one = GS__RESOURCES__INIT;
    Gs__JobInfo *jobs[3];
    struct running_job run;

    fill_running(f, &run);
    bob.uid = 1001;
    one.nodes = 1;
    one.gpus_per_node = 8;
    pending.job_id = 43;
    pending.name = "a-much-longer-name";
    pending.user = &bob;
    pending.state = GS__JOB_STATE__JOB_STATE_PENDING;
    pending.reason = "Resources";
    pending.resources = &one;
    done = pending;
    done.job_id = 41;
    done.name = "prep";
    done.state = GS__JOB_STATE__JOB_STATE_COMPLETED;
    done.reason = "";
    done.start_time_ms = 1000;
    done.end_time_ms = 62000;
    jobs[reply.n_jobs++] = &run.info;
    if (req->selector == NULL || req->selector->n_job_ids == 0) {
        jobs[reply.n_jobs++] = &pending;
        if (req->include_finished)
            jobs[reply.n_jobs++] = &done;
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

static void on_action(int fd, const Gs__Envelope *in)
{
    const Gs__JobSelector *sel =
        in->body_case == GS__ENVELOPE__BODY_CANCEL_REQUEST ? in->cancel_request->selector
        : in->body_case == GS__ENVELOPE__BODY_HOLD_REQUEST ? in->hold_request->selector
                                                           : in->release_request->selector;
    Gs__JobActionReply reply = GS__JOB_ACTION_REPLY__INIT;
    Gs__JobActionResult results[16], *ptrs[16];
    Gs__Envelope env = GS__ENVELOPE__INIT;

    for (size_t i = 0; sel != NULL && i < sel->n_job_ids && i < 16; i++) {
        gs__job_action_result__init(&results[i]);
        results[i].job_id = sel->job_ids[i];
        results[i].code = job_exists(sel->job_ids[i]) ? 0 : -ENOENT;
        results[i].message = job_exists(sel->job_ids[i]) ? "" : "no such job";
        results[i].state = in->body_case == GS__ENVELOPE__BODY_CANCEL_REQUEST
                               ? GS__JOB_STATE__JOB_STATE_CANCELLED
                               : GS__JOB_STATE__JOB_STATE_PENDING;
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

static void serve(struct fake *f, int fd)
{
    Gs__Envelope *in = NULL;

    if (gs_proto_handshake_fd(fd, GS__ROLE__ROLE_SCHEDULER, "gschedd",
                              GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_CLI), TIMEOUT_MS, NULL) < 0 ||
        gs_proto_read_fd(fd, 0, TIMEOUT_MS, &in) < 0)
        return;
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
        on_action(fd, in);
        break;
    case GS__ENVELOPE__BODY_WAIT_REQUEST:
        on_wait(f, fd, in->wait_request);
        break;
    case GS__ENVELOPE__BODY_LOGS_REQUEST:
        on_logs(fd, in->logs_request);
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

    if (argc != 3) {
        fprintf(stderr, "usage: fake_gschedd SOCKET RECORD\n");
        return 2;
    }
    f.record_path = argv[2];
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
