/*
 * live_worker.c: live_fuzz's target "worker" (live.h): a real gsched-workerd connected to
 * live_fuzz playing its gschedd, and fake CLIs on the worker's own CLI socket.
 *
 * The worker connects to the port live_fuzz listens on ("the link"). A link sequence sends
 * what a gschedd sends: LaunchTasks (real tasks: short commands and scripts from a small
 * pool, run as nobody in WORK/out, srun steps with their output captured, batch scripts,
 * arrays, the MPI launcher's leader), SignalTasks, TaskExitAck, JobNotice, HeartbeatAck,
 * LogsRequest, CliRelay frames for the worker's relayed CLI sessions, NodeRegisterReply,
 * and any other body, mutated; one link sequence in four also damages bytes and the
 * stream. One link sequence in fifty breaks the handshake instead (a mutated Hello, none
 * with a nonce, a wrong or missing proof, garbage, a HelloReject, a refused registration).
 * Whatever ends the link, the worker reconnects after its backoff (100 ms at least), so
 * these are kept to a few ends of the link a second (fixup_keep_link): in every sequence,
 * they left the worker unconnected for two thirds of the run. While the link is down, the
 * link sequence waits (LF_STEP_WAIT) and the CLI sequences go on. A CLI
 * sequence is one connection to the worker's socket with a CLI request (live_cli.c), which
 * the worker relays to us as CliRelay; whatever the link reads is answered as gschedd
 * would (heartbeats acked, exits acked, relayed requests answered), mutated too.
 *
 * Whatever a mutation did, a launch stays harmless (fixup_launch): at most six tasks, an
 * unprivileged uid (0, which the worker refuses since allow_root_jobs is off, or 60000 up),
 * no privileged groups, and a time limit of a few seconds. The worker runs with cgroups off.
 *
 * The check after each batch: the worker runs, printed no sanitizer report, is connected
 * (within 15 s, its longest backoff being 5 s), answers a LogsRequest and, on its CLI
 * socket, a Hello, each within 10 s; and when it registered with a heartbeat interval of
 * 1 s, it has heartbeated within the last 3 s.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/error.h"
#include "tests/fuzz/live.h"

#define CHECK_TIMEOUT_MS 10000
#define RECONNECT_TIMEOUT_MS 15000
#define HEARTBEAT_MS 1000
#define STALL_MS 3000
#define NODE "fzw"
#define GPUS 4
#define JOBS 32
#define EXITS 64
#define SESSIONS 16
#define MAX_TASKS 6
#define MAX_RUNNING 24
#define SAFE_UID 60000u
#define RESTART_EVERY 100 /* checks */

struct wslot {
    struct lf_rng rng;
    struct lf_conn conn; /* a CLI sequence's */
    bool link;
    bool wire; /* a link sequence that damages bytes and the stream, not only messages */
    unsigned step, length;
    unsigned preauth;
    bool answered;       /* a CLI sequence's request was answered */
    uint64_t wait_until; /* while it waits (LF_STEP_WAIT): the worker's connection, an answer */
};

struct wjob {
    uint64_t job_id;
    uint32_t attempt, step, ranks[MAX_TASKS], nranks;
};

struct wstate {
    int listen_fd;
    char cli_socket[300];
    struct wslot slots[LF_MAX_PARALLEL];
    struct lf_conn link;
    bool link_busy;      /* a link sequence runs */
    bool link_steady;    /* registered with HEARTBEAT_MS and no NodeRegisterReply since */
    uint64_t link_up_ms; /* when it registered */
    bool link_noted;     /* this batch's record says the link is open */
    bool link_awaited;   /* ws->link is closed and initialised, its accept not yet come */
    uint64_t last_beat_ms;
    uint32_t ncores;
    struct lf_rng rng; /* the answers to what the link reads */
    struct wjob jobs[JOBS];
    unsigned njobs, next_job;
    Gs__TaskRef exits[EXITS];
    unsigned nexits, next_exit;
    uint64_t sessions[SESSIONS];
    unsigned nsessions, next_session;
    uint64_t job_ids, request_ids;
    int running; /* tasks started and not yet exited, roughly */
    uint64_t check_rid;
    bool check_answered;
    unsigned checks;
    unsigned next_id;
};

static struct wstate *state(struct lf_run *run)
{
    return run->target_state;
}

/* A step's result from lf_send's: sent, more to come (1); the stream broken, the sequence
 * is over (0); the peer gone (< 0). */
static int more(int sent)
{
    return sent == 0 ? 1 : sent == 1 ? 0 : sent;
}

/* ---- keeping launches harmless ---- */

static void fixup_user(Gs__UserIdentity *u)
{
    if (u->uid != 0 && u->uid < SAFE_UID)
        u->uid = SAFE_UID + u->uid % 5000;
    if (u->gid < SAFE_UID)
        u->gid = u->uid != 0 ? u->uid : SAFE_UID;
    for (size_t i = 0; i < u->n_groups; i++) {
        if (u->groups[i] < SAFE_UID)
            u->groups[i] = SAFE_UID;
    }
}

static void fixup_launch(Gs__Envelope *env)
{
    Gs__LaunchTasks *m =
        env->body_case == GS__ENVELOPE__BODY_LAUNCH_TASKS ? env->launch_tasks : NULL;

    if (m == NULL)
        return;
    while (m->n_tasks > MAX_TASKS)
        lf_free(m->tasks[--m->n_tasks]);
    if (m->user != NULL)
        fixup_user(m->user);
    if (m->limits == NULL)
        m->limits = lf_new(&gs__task_limits__descriptor);
    if (m->limits->time_limit_s == 0 || m->limits->time_limit_s > 5)
        m->limits->time_limit_s = 1 + m->limits->time_limit_s % 5;
    if (m->grace_period_ms > 2000)
        m->grace_period_ms = 2000;
}

/*
 * As fixup_launch, and a mutation that left a handshake body or none (which end the link:
 * second_hello, empty_frame, unknown_message) becomes a HeartbeatAck; a NodeRegisterReply
 * accepts (a refusal ends the link too). Outside the sequences that damage the wire, the
 * link ended about five times a second these ways, and each end leaves the worker
 * unconnected for its backoff (100 ms or more); broken_handshake tests those ends.
 */
static void fixup_keep_link(Gs__Envelope *env)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(
        &gs__envelope__descriptor, (unsigned)env->body_case);
    bool no_body = f == NULL || *(void **)((char *)env + f->offset) == NULL;
    Gs__Envelope *fresh, old;

    fixup_launch(env);
    if (env->body_case == GS__ENVELOPE__BODY_NODE_REGISTER_REPLY && !no_body)
        env->node_register_reply->accepted = true;
    if (!no_body && env->body_case != GS__ENVELOPE__BODY_HELLO &&
        env->body_case != GS__ENVELOPE__BODY_HELLO_REJECT &&
        env->body_case != GS__ENVELOPE__BODY_AUTH_PROOF)
        return;
    fresh = lf_envelope(GS__ENVELOPE__BODY_HEARTBEAT_ACK, lf_new(&gs__heartbeat_ack__descriptor),
                        env->request_id);
    old = *env;
    *env = *fresh;
    *fresh = old;
    lf_free(fresh); /* what env held */
}

static const struct lf_damage link_damage = {
    .mutate = 35, .bytes = 1, .stream = 1, .fixup = fixup_launch};
static const struct lf_damage link_mutation = {.mutate = 35, .fixup = fixup_keep_link};
static const struct lf_damage answer_damage = {.mutate = 15, .fixup = fixup_keep_link};
static const struct lf_damage cli_damage = {.mutate = 40, .bytes = 5, .stream = 3};

/* ---- what the worker says, and our answers ---- */

static void note_exit(struct wstate *ws, const Gs__TaskExit *ex)
{
    Gs__TaskRef *ref = &ws->exits[ws->next_exit];

    gs__task_ref__init(ref);
    ref->job_id = ex->job_id;
    ref->rank = ex->rank;
    ref->attempt = ex->attempt;
    ref->step = ex->step;
    ws->next_exit = (ws->next_exit + 1) % EXITS;
    ws->nexits += ws->nexits < EXITS;
    ws->running -= ws->running > 0;
}

static Gs__TaskRef *copy_ref(const Gs__TaskRef *ref)
{
    Gs__TaskRef *c = lf_new(&gs__task_ref__descriptor);

    c->job_id = ref->job_id;
    c->rank = ref->rank;
    c->attempt = ref->attempt;
    c->step = ref->step;
    return c;
}

static Gs__Envelope *exit_ack(struct wstate *ws, struct lf_rng *r)
{
    Gs__TaskExitAck *ack = lf_new(&gs__task_exit_ack__descriptor);

    for (unsigned i = 0, n = (unsigned)lf_below(r, 4); i < n && ws->nexits > 0; i++) {
        Gs__TaskRef *ref = copy_ref(&ws->exits[lf_below(r, ws->nexits)]);
        LF_PUSH(ack->tasks, ack->n_tasks, ref);
    }
    return lf_envelope(GS__ENVELOPE__BODY_TASK_EXIT_ACK, ack, 0);
}

/* A reply the CLI could get from gschedd, for a relayed session. */
static Gs__Envelope *cli_answer(struct lf_run *run, struct lf_rng *r, uint64_t rid)
{
    switch (lf_below(r, 4)) {
    case 0: {
        Gs__ErrorReply *e = lf_new(&gs__error_reply__descriptor);

        e->code = -EPERM;
        e->message = lf_strdup("not yours");
        return lf_envelope(GS__ENVELOPE__BODY_ERROR, e, rid);
    }
    case 1:
        return lf_envelope(GS__ENVELOPE__BODY_QUEUE_REPLY, lf_new(&gs__queue_reply__descriptor),
                           rid);
    case 2: {
        Gs__JobKvValue *v = lf_new(&gs__job_kv_value__descriptor);

        v->job_id = 1;
        v->key = lf_strdup("master");
        lf_set_bytes(&v->value, "127.0.0.1:29500", 15);
        return lf_envelope(GS__ENVELOPE__BODY_JOB_KV_VALUE, v, rid);
    }
    default:
        return lf_random_envelope(r, &run->dict);
    }
}

static Gs__Envelope *relay_down(struct lf_run *run, struct lf_rng *r, uint64_t session,
                                uint64_t rid)
{
    Gs__CliRelay *relay = lf_new(&gs__cli_relay__descriptor);

    relay->session = session;
    if (lf_chance(r, 15)) {
        relay->close = true;
    } else {
        Gs__Envelope *inner = cli_answer(run, r, rid);
        struct gs_buf frame = GS_BUF_INIT;

        lf_pack_frame(inner, &frame);
        lf_set_bytes(&relay->frame, frame.data + GS_PROTO_HEADER_SIZE,
                     frame.len - GS_PROTO_HEADER_SIZE);
        gs_buf_release(&frame);
        lf_free(inner);
    }
    return lf_envelope(GS__ENVELOPE__BODY_CLI_RELAY, relay, 0);
}

static uint64_t inner_request_id(const Gs__CliRelay *relay)
{
    Gs__Envelope *inner = NULL;
    uint64_t rid = 0;

    if (gs_proto_decode(relay->frame.data, relay->frame.len, &inner) == 0)
        rid = inner->request_id;
    gs_proto_envelope_free(inner);
    return rid;
}

static void answer(struct lf_run *run, struct lf_conn *c, Gs__Envelope *env)
{
    (void)lf_send(run, &state(run)->rng, c, env, &answer_damage);
}

static void on_link_heard(struct lf_conn *c, const Gs__Envelope *env, void *data)
{
    struct lf_run *run = data;
    struct wstate *ws = state(run);
    struct lf_rng *r = &ws->rng;

    lf_count_heard(run, env);
    switch (env->body_case) {
    case GS__ENVELOPE__BODY_HEARTBEAT: {
        Gs__HeartbeatAck *ack = lf_new(&gs__heartbeat_ack__descriptor);

        ws->last_beat_ms = gs_clock_mono_ms();
        ack->seq = env->heartbeat->seq;
        answer(run, c, lf_envelope(GS__ENVELOPE__BODY_HEARTBEAT_ACK, ack, 0));
        break;
    }
    case GS__ENVELOPE__BODY_TASK_EXIT:
        note_exit(ws, env->task_exit);
        if (lf_chance(r, 60))
            answer(run, c, exit_ack(ws, r));
        break;
    case GS__ENVELOPE__BODY_LAUNCH_TASKS_REPLY:
        for (size_t i = 0; i < env->launch_tasks_reply->n_results; i++)
            ws->running += env->launch_tasks_reply->results[i]->code == 0;
        break;
    case GS__ENVELOPE__BODY_CLI_RELAY:
        if (env->cli_relay->close)
            break;
        ws->sessions[ws->next_session] = env->cli_relay->session;
        ws->next_session = (ws->next_session + 1) % SESSIONS;
        ws->nsessions += ws->nsessions < SESSIONS;
        answer(run, c,
               relay_down(run, r, env->cli_relay->session, inner_request_id(env->cli_relay)));
        break;
    case GS__ENVELOPE__BODY_LOGS_REPLY:
    case GS__ENVELOPE__BODY_ERROR:
        if (env->request_id == ws->check_rid && ws->check_rid != 0)
            ws->check_answered = true;
        break;
    default:
        break;
    }
}

static void on_cli_heard(struct lf_conn *c, const Gs__Envelope *env, void *data)
{
    struct lf_run *run = data;
    struct wstate *ws = state(run);

    lf_count_heard(run, env);
    for (unsigned i = 0; ws != NULL && i < LF_MAX_PARALLEL; i++) {
        if (&ws->slots[i].conn == c && env->body_case != GS__ENVELOPE__BODY_HELLO)
            ws->slots[i].answered = true;
    }
}

/* ---- the link: accepting the worker, and the handshake ---- */

static int accept_worker(struct lf_run *run, struct lf_conn *c, int timeout_ms)
{
    struct pollfd pfd = {.fd = state(run)->listen_fd, .events = POLLIN};
    int fd;

    if (poll(&pfd, 1, timeout_ms) <= 0)
        return -ETIMEDOUT;
    fd = accept(pfd.fd, NULL, NULL);
    if (fd < 0)
        return -errno;
    lf_conn_adopt(c, fd);
    return 0;
}

static bool is_hello(const Gs__Envelope *env, uint64_t arg)
{
    (void)arg;
    return env->body_case == GS__ENVELOPE__BODY_HELLO;
}

static bool is_register(const Gs__Envelope *env, uint64_t arg)
{
    (void)arg;
    return env->body_case == GS__ENVELOPE__BODY_NODE_REGISTER;
}

static void on_register(struct lf_conn *c, const Gs__Envelope *env, void *data)
{
    struct lf_run *run = data;

    if (env->body_case == GS__ENVELOPE__BODY_NODE_REGISTER && env->node_register->topology != NULL)
        state(run)->ncores = env->node_register->topology->cores;
    on_link_heard(c, env, data);
}

static Gs__Envelope *register_reply(bool accepted)
{
    Gs__NodeRegisterReply *rep = lf_new(&gs__node_register_reply__descriptor);

    rep->accepted = accepted;
    rep->reason = lf_strdup(accepted ? "" : "live_fuzz refuses");
    rep->heartbeat_interval_ms = HEARTBEAT_MS;
    rep->cluster_name = lf_strdup("gsched");
    return lf_envelope(GS__ENVELOPE__BODY_NODE_REGISTER_REPLY, rep, 0);
}

/* Accepted within timeout_ms (-ETIMEDOUT after, c untouched), Hellos and proofs
 * exchanged, the registration taken and accepted; -EPIPE when the connection ended on the
 * way. */
static int handshake(struct lf_run *run, struct lf_conn *c, int timeout_ms)
{
    Gs__Envelope *reply;
    int rc = accept_worker(run, c, timeout_ms);

    if (rc == -ETIMEDOUT)
        return rc;
    if (rc == 0 && lf_conn_wait(c, CHECK_TIMEOUT_MS, is_hello, 0, on_link_heard, run) == 0)
        rc = -ETIMEDOUT;
    if (rc == 0)
        rc = lf_conn_hello(c, GS__ROLE__ROLE_SCHEDULER, "gschedd", true);
    if (rc == 0)
        rc = lf_conn_proof(c, &run->key, CHECK_TIMEOUT_MS, on_link_heard, run);
    if (rc == 0 && lf_conn_wait(c, CHECK_TIMEOUT_MS, is_register, 0, on_register, run) == 0)
        rc = -ETIMEDOUT;
    if (rc == 0) {
        reply = register_reply(true);
        rc = lf_conn_send(c, reply);
        lf_free(reply);
    }
    return rc < 0 && c->eof ? -EPIPE : rc;
}

/* c closed and made new, as it was before its accept: same id, kind and role. */
static void reinit(struct lf_conn *c)
{
    Gs__Role role = c->role;

    lf_conn_close(c);
    lf_conn_init(c, c->id, c->kind, c->rec);
    c->role = role;
}

/*
 * A worker connection made ready (handshake()), within timeout_ms; on failure c is closed
 * and initialised, ready for the next accept. Recorded as one "open ID link" line.
 *
 * A connection that ends before it registers is taken for one the worker no longer holds
 * and the next one is tried. Such a connection waits in our queue when a busy worker
 * reconnected between our closing the link and its taking the SIGTERM of a restart (the
 * next worker's link_up accepted it and the restart failed before that worker had logged
 * a line; reproduced by queueing a connection and closing it), or when a worker gave up
 * on a handshake we were slow to take (its limit is 10 s). A worker that itself ends
 * every connection before registering still fails, at the deadline.
 */
static int link_up(struct lf_run *run, struct lf_conn *c, int timeout_ms)
{
    struct wstate *ws = state(run);
    uint64_t deadline = gs_clock_mono_ms() + (uint64_t)timeout_ms, now;
    bool was_on = run->rec.on;
    int rc;

    run->rec.on = false;
    while ((rc = handshake(run, c, timeout_ms)) == -EPIPE &&
           (now = gs_clock_mono_ms()) < deadline) {
        reinit(c);
        timeout_ms = (int)(deadline - now);
    }
    run->rec.on = was_on;
    if (rc < 0 && c->fd >= 0)
        reinit(c);
    if (rc < 0)
        return rc == -EPIPE ? -ETIMEDOUT : rc;
    if (run->rec.on)
        lf_record_line(&run->rec, "open %u link", c->id);
    ws->link_noted = run->rec.on;
    ws->link_steady = true;
    ws->link_up_ms = ws->last_beat_ms = gs_clock_mono_ms();
    return 0;
}

/* The link open and registered, the worker given timeout_ms to connect (-ETIMEDOUT). */
static int ensure_link(struct lf_run *run, int timeout_ms)
{
    struct wstate *ws = state(run);
    int rc;

    if (ws->link.fd >= 0 && !ws->link.eof) {
        if (!ws->link_noted && run->rec.on) /* opened before this batch began */
            lf_record_line(&run->rec, "open %u link", ws->link.id);
        ws->link_noted = ws->link_noted || run->rec.on;
        return 0;
    }
    if (!ws->link_awaited) {
        lf_conn_close(&ws->link);
        lf_conn_init(&ws->link, ++ws->next_id, LF_KIND_SCHED, &run->rec);
    }
    rc = link_up(run, &ws->link, timeout_ms);
    ws->link_awaited = rc == -ETIMEDOUT;
    return rc;
}

/*
 * A step that found nothing to do yet: LF_STEP_WAIT until timeout_ms after the first such
 * step, then -ETIMEDOUT. The worker reconnects after a backoff of 100 ms or more, and a
 * relayed answer takes a round trip through the link: the other slots' sequences go on
 * meanwhile, where blocking here stopped them all (about half of the run's time).
 */
static int wait_step(struct wslot *sl, int timeout_ms)
{
    uint64_t now = gs_clock_mono_ms();

    if (sl->wait_until == 0)
        sl->wait_until = now + (uint64_t)timeout_ms;
    return now < sl->wait_until ? LF_STEP_WAIT : -ETIMEDOUT;
}

/* A handshake broken one way or another (preauth 1..7), on a fresh link: the first step
 * closes the link, the next ones wait for the worker to come back (LF_STEP_WAIT), the last
 * breaks the handshake. */
static int broken_handshake(struct lf_run *run, struct wslot *sl)
{
    struct wstate *ws = state(run);
    struct lf_rng *r = &sl->rng;
    static const struct lf_damage hello_damage = {.mutate = 100, .bytes = 20};
    static const struct lf_damage garbage = {.stream = 100};
    struct lf_conn *c = &ws->link;
    int rc;

    if (sl->step++ == 0) {
        lf_conn_close(c);
        lf_conn_init(c, ++ws->next_id, LF_KIND_SCHED, &run->rec);
        ws->link_awaited = true;
        ws->link_steady = false;
    }
    rc = accept_worker(run, c, 0);
    if (rc == -ETIMEDOUT)
        return wait_step(sl, RECONNECT_TIMEOUT_MS);
    if (rc < 0)
        return rc;
    ws->link_awaited = false;
    (void)lf_conn_wait(c, 2000, is_hello, 0, on_link_heard, run);
    switch (sl->preauth) {
    case 1: {
        Gs__Hello *h = lf_new(&gs__hello__descriptor);

        gs_proto_hello_init(h, GS__ROLE__ROLE_SCHEDULER, "gschedd");
        h->name = lf_strdup("gschedd");
        h->software_version = lf_strdup("live_fuzz");
        (void)lf_send(run, r, c, lf_envelope(GS__ENVELOPE__BODY_HELLO, h, 0), &hello_damage);
        break;
    }
    case 2: /* no nonce */
        run->stats.messages++;
        (void)lf_conn_hello(c, GS__ROLE__ROLE_SCHEDULER, "gschedd", false);
        break;
    case 3: { /* a HelloReject */
        Gs__HelloReject *rej = lf_new(&gs__hello_reject__descriptor);

        rej->reason = (Gs__RejectReason)lf_below(r, 9);
        rej->message = lf_strdup("go away");
        (void)lf_send(run, r, c, lf_envelope(GS__ENVELOPE__BODY_HELLO_REJECT, rej, 0), NULL);
        break;
    }
    case 4: /* garbage */
        (void)lf_send(run, r, c, register_reply(true), &garbage);
        break;
    default: /* a valid Hello, then a wrong proof, none, or a refused registration */
        run->stats.messages++;
        (void)lf_conn_hello(c, GS__ROLE__ROLE_SCHEDULER, "gschedd", true);
        if (sl->preauth == 5) {
            Gs__AuthProof *p = lf_new(&gs__auth_proof__descriptor);
            uint8_t mac[32];

            for (size_t i = 0; i < sizeof(mac); i++)
                mac[i] = (uint8_t)lf_rand(r);
            lf_set_bytes(&p->mac, mac, sizeof(mac));
            (void)lf_send(run, r, c, lf_envelope(GS__ENVELOPE__BODY_AUTH_PROOF, p, 0), NULL);
        } else if (sl->preauth == 6) {
            (void)lf_send(run, r, c, register_reply(true), NULL);
        } else {
            run->stats.messages++;
            (void)lf_conn_proof(c, &run->key, 2000, on_link_heard, run);
            (void)lf_conn_wait(c, 2000, is_register, 0, on_link_heard, run);
            (void)lf_send(run, r, c, register_reply(false), NULL);
        }
        break;
    }
    (void)lf_conn_poll(c, 50, on_link_heard, run);
    lf_conn_close(c);
    ws->link_steady = false;
    return 0;
}

/* ---- what a gschedd sends ---- */

static const char *const commands[][4] = {
    {"true", NULL},
    {"/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL},
    {"sleep", "0.3", NULL},
    {"/nonexistent/program", NULL},
    {"/bin/echo", "%j", "$HOME", NULL},
    {"/bin/sh", "-c", "kill -9 $$", NULL},
    {"env", NULL},
};

static const char *const scripts[] = {
    "echo hi",
    "exit 7",
    "sleep 0.2; echo done",
    "#!/bin/sh\necho batch $SLURM_JOB_ID\nsleep 0.1\n",
};

static Gs__NodeAllocation *allocation(struct lf_rng *r, const char *node, uint32_t first,
                                      uint32_t ntasks, uint32_t ncores)
{
    Gs__NodeAllocation *a = lf_new(&gs__node_allocation__descriptor);

    a->node_name = lf_strdup(node);
    a->address = lf_strdup("127.0.0.1");
    for (uint32_t g = 0; g < ntasks && g < GPUS; g++)
        LF_PUSH(a->gpus, a->n_gpus, g);
    for (uint32_t c = 0; c < ntasks && c < ncores; c++)
        LF_PUSH(a->cores, a->n_cores, c);
    a->mem_mib = lf_chance(r, 50) ? 1024 : 0;
    a->first_rank = first;
    a->ntasks = ntasks;
    a->gpu_link = lf_strdup(ntasks > 1 ? "NV18" : "");
    return a;
}

static Gs__RunSpec *run_spec(struct lf_run *run, struct lf_rng *r, bool *ret_batch)
{
    Gs__RunSpec *rs = lf_new(&gs__run_spec__descriptor);
    char out[300];

    *ret_batch = lf_chance(r, 15);
    if (*ret_batch || lf_chance(r, 25)) {
        rs->script = lf_strdup(scripts[lf_below(r, sizeof(scripts) / sizeof(scripts[0]))]);
        rs->batch = *ret_batch;
        rs->slurm = *ret_batch || lf_chance(r, 20);
    } else {
        const char *const *cmd = commands[lf_below(r, sizeof(commands) / sizeof(commands[0]))];

        for (size_t i = 0; cmd[i] != NULL; i++) {
            char *arg = lf_strdup(cmd[i]);
            LF_PUSH(rs->argv, rs->n_argv, arg);
        }
        rs->slurm = lf_chance(r, 20);
    }
    snprintf(out, sizeof(out), "%s/out", run->work);
    rs->workdir = lf_strdup(out);
    rs->stdout_pattern = lf_strdup(rs->slurm ? "fz-%j-%t.out" : "fz-%j-%t-%n.out");
    if (lf_chance(r, 30))
        rs->stderr_pattern = lf_strdup("fz-%j-%t.err");
    if (lf_chance(r, 5))
        rs->launcher = GS__LAUNCHER__LAUNCHER_MPI;
    if (lf_chance(r, 10)) {
        rs->warn_signal = 10;
        rs->warn_before_s = 1;
        rs->warn_batch_only = lf_chance(r, 50);
    }
    return rs;
}

static Gs__LaunchTasks__EnvEntry *env_entry(const char *key, const char *value)
{
    Gs__LaunchTasks__EnvEntry *e = lf_new(&gs__launch_tasks__env_entry__descriptor);

    e->key = lf_strdup(key);
    e->value = lf_strdup(value);
    return e;
}

static struct wjob *some_job(struct wstate *ws, struct lf_rng *r)
{
    return ws->njobs > 0 ? &ws->jobs[lf_below(r, ws->njobs)] : NULL;
}

static void remember(struct wstate *ws, const Gs__LaunchTasks *m)
{
    struct wjob *j = &ws->jobs[ws->next_job];

    j->job_id = m->job_id;
    j->attempt = m->attempt;
    j->step = m->step;
    j->nranks = 0;
    for (size_t i = 0; i < m->n_tasks && j->nranks < MAX_TASKS; i++)
        j->ranks[j->nranks++] = m->tasks[i]->rank;
    ws->next_job = (ws->next_job + 1) % JOBS;
    ws->njobs += ws->njobs < JOBS;
}

static Gs__Envelope *launch(struct lf_run *run, struct lf_rng *r)
{
    struct wstate *ws = state(run);
    Gs__LaunchTasks *m = lf_new(&gs__launch_tasks__descriptor);
    struct wjob *old = lf_chance(r, 25) ? some_job(ws, r) : NULL;
    uint32_t ntasks = 1 + (uint32_t)lf_below(r, 3), remote = lf_chance(r, 20) ? 2 : 0;
    uint32_t ncores = ws->ncores > 0 ? ws->ncores : 1;
    bool batch;

    m->job_id = old != NULL ? old->job_id : ++ws->job_ids;
    m->job_name = lf_strdup("fz-job");
    m->attempt = old != NULL ? old->attempt + (uint32_t)lf_chance(r, 50) : 0;
    m->user = lf_new(&gs__user_identity__descriptor);
    m->user->uid = lf_chance(r, 10) ? 0 : 65534;
    m->user->gid = 65534;
    m->user->username = lf_strdup(m->user->uid == 0 ? "root" : "nobody");
    Gs__NodeAllocation *here = allocation(r, NODE, 0, ntasks, ncores);
    LF_PUSH(m->allocation, m->n_allocation, here);
    if (remote > 0) {
        Gs__NodeAllocation *there = allocation(r, "fzx", ntasks, remote, ncores);
        LF_PUSH(m->allocation, m->n_allocation, there);
    }
    for (uint32_t i = 0; i < ntasks; i++) {
        Gs__TaskAssignment *t = lf_new(&gs__task_assignment__descriptor);

        t->rank = t->local_rank = i;
        if (i < GPUS)
            LF_PUSH(t->gpus, t->n_gpus, i);
        if (i < ncores)
            LF_PUSH(t->cores, t->n_cores, i);
        LF_PUSH(m->tasks, m->n_tasks, t);
    }
    m->world_size = ntasks + remote;
    m->master_addr = lf_strdup("127.0.0.1");
    m->master_port = 29500 + (uint32_t)(m->job_id % 10000);
    m->run = run_spec(run, r, &batch);
    m->step = batch || lf_chance(r, 70) ? 0 : 1 + (uint32_t)lf_below(r, 3);
    Gs__LaunchTasks__EnvEntry *e = env_entry("FZ", "1");
    LF_PUSH(m->env, m->n_env, e);
    m->limits = lf_new(&gs__task_limits__descriptor);
    m->limits->time_limit_s = 1 + lf_below(r, 5);
    m->limits->max_open_files = lf_chance(r, 20) ? 256 : 0;
    m->grace_period_ms = 100 + (uint32_t)lf_below(r, 900);
    m->cluster_name = lf_strdup("gsched");
    if (lf_chance(r, 10)) {
        m->array_job_id = m->job_id;
        m->array_task_id = (uint32_t)lf_below(r, 4);
    }
    remember(ws, m);
    lf_dict_num(&run->dict, m->job_id);
    return lf_envelope(GS__ENVELOPE__BODY_LAUNCH_TASKS, m, ++ws->request_ids);
}

static Gs__Envelope *signal_tasks(struct lf_run *run, struct lf_rng *r)
{
    struct wjob *j = some_job(state(run), r);
    Gs__SignalTasks *m = lf_new(&gs__signal_tasks__descriptor);
    static const uint32_t signals[] = {0, 0, 15, 9, 10, 12, 2, 19, 18};

    m->job_id = j != NULL ? j->job_id : lf_below(r, 10);
    m->signal = signals[lf_below(r, sizeof(signals) / sizeof(signals[0]))];
    m->reason = lf_strdup("live_fuzz");
    m->end_reason = (Gs__EndReason)lf_below(r, 8);
    if (j != NULL && j->nranks > 0 && lf_chance(r, 40))
        LF_PUSH(m->ranks, m->n_ranks, j->ranks[0]);
    m->step = j != NULL ? j->step : 0;
    m->all_steps = lf_chance(r, 30);
    m->batch_only = lf_chance(r, 10);
    return lf_envelope(GS__ENVELOPE__BODY_SIGNAL_TASKS, m, 0);
}

static Gs__Envelope *logs_request(struct lf_run *run, struct lf_rng *r, uint64_t rid)
{
    struct wjob *j = some_job(state(run), r);
    Gs__LogsRequest *m = lf_new(&gs__logs_request__descriptor);
    char path[400];

    m->job_id = j != NULL ? j->job_id : 1;
    m->rank = j != NULL && j->nranks > 0 ? j->ranks[0] : 0;
    m->stream = (Gs__LogStream)lf_below(r, 2);
    m->offset = lf_below(r, 64);
    m->max_bytes = (uint32_t)lf_below(r, 100000);
    m->from_end = lf_chance(r, 40);
    m->node_name = lf_strdup(NODE);
    snprintf(path, sizeof(path), "%s/out/fz-%llu-%u.out", run->work, (unsigned long long)m->job_id,
             m->rank);
    m->path = lf_strdup(lf_chance(r, 80) ? path : "/etc/hostname");
    m->owner_uid = m->owner_gid = lf_chance(r, 90) ? 65534 : SAFE_UID;
    return lf_envelope(GS__ENVELOPE__BODY_LOGS_REQUEST, m, rid);
}

static Gs__Envelope *notice(struct lf_run *run, struct lf_rng *r)
{
    struct wjob *j = some_job(state(run), r);
    Gs__JobNotice *m = lf_new(&gs__job_notice__descriptor);

    m->job_id = j != NULL ? j->job_id : lf_below(r, 10);
    m->text = lf_strdup("GPU 0 idle for 60 s");
    return lf_envelope(GS__ENVELOPE__BODY_JOB_NOTICE, m, 0);
}

/* Any body, a handshake one seldom: those end the link, which broken_handshake covers. */
static Gs__Envelope *any_body(struct lf_run *run, struct lf_rng *r)
{
    Gs__Envelope *env = lf_random_envelope(r, &run->dict);

    while ((env->body_case == GS__ENVELOPE__BODY_HELLO ||
            env->body_case == GS__ENVELOPE__BODY_HELLO_REJECT ||
            env->body_case == GS__ENVELOPE__BODY_AUTH_PROOF) &&
           lf_chance(r, 95)) {
        lf_free(env);
        env = lf_random_envelope(r, &run->dict);
    }
    return env;
}

static Gs__Envelope *link_message(struct lf_run *run, struct lf_rng *r)
{
    struct wstate *ws = state(run);
    unsigned w = (unsigned)lf_below(r, 100);

    /* Launches fork and exec under ASan, the worker's costliest message: one in ten. */
    if (w < 10 && ws->running < MAX_RUNNING)
        return launch(run, r);
    if (w < 24)
        return signal_tasks(run, r);
    if (w < 36)
        return exit_ack(ws, r);
    if (w < 44)
        return notice(run, r);
    if (w < 50) {
        Gs__HeartbeatAck *ack = lf_new(&gs__heartbeat_ack__descriptor);

        ack->seq = lf_below(r, 100);
        return lf_envelope(GS__ENVELOPE__BODY_HEARTBEAT_ACK, ack, 0);
    }
    if (w < 62)
        return logs_request(run, r, ++ws->request_ids);
    if (w < 76) {
        uint64_t session = ws->nsessions > 0 && lf_chance(r, 80)
                               ? ws->sessions[lf_below(r, ws->nsessions)]
                               : lf_below(r, 20);

        return relay_down(run, r, session, 1 + lf_below(r, 4));
    }
    if (w < 78) {
        ws->link_steady = false; /* its heartbeat interval may change */
        return register_reply(lf_chance(r, 90));
    }
    if (w < 92)
        return any_body(run, r);
    return signal_tasks(run, r);
}

/* ---- sequences ---- */

static void worker_tick(struct lf_run *run);

static int worker_sequence(struct lf_run *run, unsigned slot, uint64_t index)
{
    struct wstate *ws = state(run);
    struct wslot *sl = &ws->slots[slot];
    uint64_t seed = run->seed * 0x100000001b3ull + index;

    memset(sl, 0, sizeof(*sl));
    lf_rng_seed(&sl->rng, seed);
    sl->link = !ws->link_busy && lf_chance(&sl->rng, 70);
    if (sl->link) {
        ws->link_busy = true;
        sl->length = 1 + (unsigned)(lf_chance(&sl->rng, 10) ? 100 + lf_below(&sl->rng, 200)
                                                            : lf_below(&sl->rng, 40));
        sl->wire = lf_chance(&sl->rng, 25);
        if (lf_chance(&sl->rng, 2))
            sl->preauth = 1 + (unsigned)lf_below(&sl->rng, 7);
    }
    lf_conn_init(&sl->conn, ++ws->next_id, LF_KIND_WCLI, &run->rec);
    lf_record_line(&run->rec, "# sequence %llu (seed %llu): %s", (unsigned long long)index,
                   (unsigned long long)seed, sl->link ? "link" : "cli");
    return 0;
}

static int cli_step(struct lf_run *run, struct wslot *sl)
{
    struct lf_rng *r = &sl->rng;
    int rc = 1;

    switch (sl->step++) {
    case 0:
        if (lf_conn_unix(&sl->conn, state(run)->cli_socket) < 0)
            return -EPIPE;
        run->stats.messages++;
        return lf_conn_hello(&sl->conn, GS__ROLE__ROLE_CLI, "gsched", false) < 0 ? -EPIPE : 1;
    case 1:
        rc = lf_send(run, r, &sl->conn, lf_cli_request(run, r), &cli_damage);
        break;
    case 2:
        if (lf_chance(r, 20))
            rc = lf_send(run, r, &sl->conn, lf_cli_request(run, r), &cli_damage);
        break;
    default: /* the answer comes through the link: read it meanwhile, for up to 30 ms */
        worker_tick(run);
        if (lf_conn_poll(&sl->conn, 0, on_cli_heard, run) < 0 || sl->answered || sl->conn.eof)
            return 0;
        return wait_step(sl, 30) == LF_STEP_WAIT ? LF_STEP_WAIT : 0;
    }
    return more(rc);
}

static int link_step(struct lf_run *run, struct wslot *sl)
{
    struct wstate *ws = state(run);
    int rc;

    if (sl->preauth != 0) {
        rc = broken_handshake(run, sl);
        return rc == LF_STEP_WAIT ? rc : rc < 0 ? -EPIPE : 0;
    }
    if (sl->step == 0) {
        rc = ensure_link(run, 0);
        if (rc == -ETIMEDOUT)
            rc = wait_step(sl, RECONNECT_TIMEOUT_MS);
        if (rc == LF_STEP_WAIT)
            return rc;
        sl->step++;
        return rc < 0 ? -EPIPE : 1;
    }
    sl->step++;
    rc = lf_send(run, &sl->rng, &ws->link, link_message(run, &sl->rng),
                 sl->wire ? &link_damage : &link_mutation);
    if (rc == 1) /* the stream is broken: the end of it, as a scheduler that went away */
        lf_conn_close(&ws->link);
    if (rc == 0 && lf_conn_poll(&ws->link, 0, on_link_heard, run) < 0)
        rc = -EPIPE;
    if (rc != 0 || sl->step > sl->length)
        return 0;
    return 1;
}

static int worker_step(struct lf_run *run, unsigned slot)
{
    struct wslot *sl = &state(run)->slots[slot];
    int rc;

    if (sl->link)
        return link_step(run, sl);
    rc = cli_step(run, sl);
    if (rc > 0 && lf_conn_poll(&sl->conn, 0, on_cli_heard, run) < 0)
        rc = 0;
    return rc;
}

static void worker_end(struct lf_run *run, unsigned slot)
{
    struct wstate *ws = state(run);
    struct wslot *sl = &ws->slots[slot];

    if (sl->link) {
        (void)lf_flush_held(&ws->link);
        ws->link_busy = false;
        if (ws->link.eof) {
            run->stats.closed_by_peer++;
            lf_conn_close(&ws->link);
        }
    }
    lf_conn_close(&sl->conn);
}

/* What the link has to say, read between steps. */
static void worker_tick(struct lf_run *run)
{
    struct wstate *ws = state(run);

    if (ws->link.fd < 0)
        return;
    if (!ws->link_noted && run->rec.on) { /* opened before this batch began */
        lf_record_line(&run->rec, "open %u link", ws->link.id);
        ws->link_noted = true;
    }
    (void)lf_conn_poll(&ws->link, 0, on_link_heard, run);
}

/* ---- the check ---- */

static int alive(struct lf_run *run, char *why, size_t size)
{
    char line[160];

    if (!lf_daemon_alive(&run->daemon)) {
        lf_daemon_describe(&run->daemon, line, sizeof(line));
        snprintf(why, size, "%s", line);
        return -ESRCH;
    }
    if (atomic_load(&run->daemon.sanitizer)) {
        snprintf(why, size, "gsched-workerd printed a sanitizer report");
        return -EFAULT;
    }
    return 0;
}

static bool is_check_answer(const Gs__Envelope *env, uint64_t rid)
{
    return (env->body_case == GS__ENVELOPE__BODY_LOGS_REPLY ||
            env->body_case == GS__ENVELOPE__BODY_ERROR) &&
           env->request_id == rid;
}

static int check_logs(struct lf_run *run, char *why, size_t size)
{
    struct wstate *ws = state(run);
    Gs__LogsRequest *m = lf_new(&gs__logs_request__descriptor);
    Gs__Envelope *env;
    int rc;

    m->job_id = 999999;
    m->node_name = lf_strdup(NODE);
    m->path = lf_strdup("/nonexistent/live_fuzz.out");
    m->owner_uid = m->owner_gid = 65534;
    ws->check_rid = ++ws->request_ids;
    ws->check_answered = false;
    env = lf_envelope(GS__ENVELOPE__BODY_LOGS_REQUEST, m, ws->check_rid);
    rc = lf_conn_send(&ws->link, env);
    lf_free(env);
    if (rc == 0 && !ws->check_answered &&
        lf_conn_wait(&ws->link, CHECK_TIMEOUT_MS, is_check_answer, ws->check_rid, on_link_heard,
                     run) == 0)
        rc = -ETIMEDOUT;
    if (rc < 0)
        snprintf(why, size, "gsched-workerd did not answer a LogsRequest in %d ms: %s",
                 CHECK_TIMEOUT_MS, strerror(-rc));
    return rc;
}

static int check_cli(struct lf_run *run, char *why, size_t size)
{
    struct lf_conn c;
    int rc;

    lf_conn_init(&c, 0, LF_KIND_WCLI, NULL);
    rc = lf_conn_unix(&c, state(run)->cli_socket);
    if (rc == 0)
        rc = lf_conn_hello(&c, GS__ROLE__ROLE_CLI, "gsched", false);
    if (rc == 0 && lf_conn_wait(&c, CHECK_TIMEOUT_MS, is_hello, 0, on_cli_heard, run) == 0)
        rc = -ETIMEDOUT;
    lf_conn_close(&c);
    if (rc < 0)
        snprintf(why, size, "gsched-workerd's CLI socket did not answer a Hello in %d ms: %s",
                 CHECK_TIMEOUT_MS, strerror(-rc));
    return rc;
}

static int restart(struct lf_run *run, char *why, size_t size);

static int worker_check(struct lf_run *run, char *why, size_t size)
{
    struct wstate *ws = state(run);
    bool was_on = run->rec.on;
    uint64_t now = gs_clock_mono_ms();
    int rc = alive(run, why, size);

    run->rec.on = false;
    if (rc == 0 && ws->link.fd >= 0 && ws->link_steady && now - ws->link_up_ms > STALL_MS &&
        now - ws->last_beat_ms > STALL_MS) {
        snprintf(why, size,
                 "gsched-workerd has not heartbeated for %llu ms (every %d ms expected): its "
                 "loop stalled",
                 (unsigned long long)(now - ws->last_beat_ms), HEARTBEAT_MS);
        rc = -ETIMEDOUT;
    }
    if (rc == 0 && ensure_link(run, RECONNECT_TIMEOUT_MS) < 0) {
        snprintf(why, size, "gsched-workerd did not connect and register in %d ms",
                 RECONNECT_TIMEOUT_MS);
        rc = -ETIMEDOUT;
    }
    if (rc == 0 && check_logs(run, why, size) < 0 && ws->link.eof) {
        /* it closed the link just before (a refused registration): once more */
        rc = ensure_link(run, RECONNECT_TIMEOUT_MS) < 0 ? -ETIMEDOUT : check_logs(run, why, size);
    }
    if (rc == 0)
        rc = check_cli(run, why, size);
    if (rc == 0)
        rc = alive(run, why, size);
    if (rc == 0 && ws->link.bad_frame) {
        snprintf(why, size, "gsched-workerd sent a frame that does not decode");
        rc = -EBADMSG;
    }
    if (rc == 0 && ++ws->checks % RESTART_EVERY == 0)
        rc = restart(run, why, size);
    run->rec.on = was_on;
    ws->link_noted = false;
    return rc != 0 ? 1 : 0;
}

/* ---- start and stop ---- */

static int listen_port(struct lf_run *run)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    if (fd < 0)
        return -errno;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 16) < 0 ||
        getsockname(fd, (struct sockaddr *)&sin, &len) < 0) {
        close(fd);
        return -errno;
    }
    state(run)->listen_fd = fd;
    run->port = ntohs(sin.sin_port);
    return 0;
}

static int write_config(struct lf_run *run)
{
    char text[1024];

    snprintf(text, sizeof(text),
             "[scheduler]\nlog_level = \"%s\"\n[worker]\nallow_root_jobs = false\n"
             "cgroups = \"off\"\n",
             run->log_level);
    snprintf(run->config_path, sizeof(run->config_path), "%s/gsched.toml", run->work);
    return lf_write_file(run, "gsched.toml", text);
}

static int start_workerd(struct lf_run *run)
{
    struct wstate *ws = state(run);
    char exe[512], log[512], sched[64], logdir[400], gpus[8];
    char *argv[] = {exe,          "--config",    run->config_path, "--scheduler",  sched,
                    "--auth-key", run->key_path, "--name",         NODE,           "--gpus",
                    gpus,         "--log-dir",   logdir,           "--cli-socket", ws->cli_socket,
                    NULL};
    int rc;

    snprintf(logdir, sizeof(logdir), "%s/worker", run->work);
    snprintf(gpus, sizeof(gpus), "%d", GPUS);
    snprintf(sched, sizeof(sched), "127.0.0.1:%u", run->port);
    snprintf(exe, sizeof(exe), "%s/gsched-workerd", run->bin_dir);
    snprintf(log, sizeof(log), "%s/gsched-workerd.log", run->work);
    ws->running = 0;
    rc = lf_daemon_start(&run->daemon, "gsched-workerd", argv, log);
    if (rc == 0)
        rc = ensure_link(run, RECONNECT_TIMEOUT_MS);
    return rc;
}

static int worker_stop(struct lf_run *run, char *why, size_t size)
{
    struct wstate *ws = state(run);
    bool by_itself;

    for (unsigned i = 0; i < LF_MAX_PARALLEL; i++)
        lf_conn_close(&ws->slots[i].conn);
    lf_conn_close(&ws->link);
    by_itself = lf_daemon_stop(&run->daemon, 20000);
    return lf_daemon_stopped_well(&run->daemon, by_itself, why, size);
}

/* Now and then a new worker on the same log directory: it takes over what the last one
 * left (the exits not acknowledged, the ledger of tasks that may still run), which is
 * written from fuzzed launches. The stop is checked as at the end (leaks, a hang). */
static int restart(struct lf_run *run, char *why, size_t size)
{
    int rc = worker_stop(run, why, size);
    char state_now[160];

    if (rc == 0 && (rc = start_workerd(run)) < 0) {
        lf_daemon_describe(&run->daemon, state_now, sizeof(state_now));
        snprintf(why, size, "gsched-workerd did not come back after a restart: %s (%s)",
                 rc == -ETIMEDOUT ? "no registration in time" : gs_strerror(rc), state_now);
        rc = -1;
    }
    if (rc == 0)
        fprintf(stderr, "live_fuzz: gsched-workerd restarted\n");
    return rc;
}

static int worker_start(struct lf_run *run)
{
    struct wstate *ws = calloc(1, sizeof(*ws));
    char logdir[400];
    int rc;

    if (ws == NULL)
        return -ENOMEM;
    run->target_state = ws;
    ws->listen_fd = -1;
    lf_rng_seed(&ws->rng, run->seed ^ 0x5eed);
    lf_conn_init(&ws->link, 0, LF_KIND_SCHED, &run->rec);
    ws->link.eof = true;
    snprintf(ws->cli_socket, sizeof(ws->cli_socket), "%s/worker.sock", run->work);
    snprintf(logdir, sizeof(logdir), "%s/worker", run->work);
    if (mkdir(logdir, 0755) < 0)
        return -errno;
    rc = listen_port(run);
    if (rc == 0)
        rc = write_config(run);
    if (rc == 0)
        rc = start_workerd(run);
    return rc;
}

static int worker_replay_open(struct lf_run *run, struct lf_conn *c, const char *kind)
{
    struct wstate *ws = state(run);

    if (strcmp(kind, "wcli") == 0) {
        c->kind = LF_KIND_WCLI;
        return lf_conn_unix(c, ws->cli_socket);
    }
    lf_conn_close(&ws->link); /* the worker comes back to the replay's connection */
    c->kind = LF_KIND_SCHED;
    c->role = GS__ROLE__ROLE_SCHEDULER;
    if (strcmp(kind, "link") == 0)
        return link_up(run, c, RECONNECT_TIMEOUT_MS);
    return accept_worker(run, c, RECONNECT_TIMEOUT_MS);
}

static int worker_end_run(struct lf_run *run, char *why, size_t size)
{
    struct wstate *ws = state(run);
    int rc;

    if (ws == NULL)
        return 0;
    rc = worker_stop(run, why, size);
    if (ws->listen_fd >= 0)
        close(ws->listen_fd);
    free(ws);
    run->target_state = NULL;
    return rc;
}

const struct lf_target_ops lf_target_worker = {
    .name = "worker",
    .start = worker_start,
    .sequence = worker_sequence,
    .step = worker_step,
    .end = worker_end,
    .check = worker_check,
    .replay_open = worker_replay_open,
    .tick = worker_tick,
    .restart = restart,
    .stop = worker_end_run,
};
