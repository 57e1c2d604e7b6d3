/*
 * live_sched.c: live_fuzz's target "sched" (live.h): a real gschedd, fed by fake workers
 * on its TCP port and fake CLIs on its Unix socket.
 *
 * A worker sequence is one connection: Hello with a nonce, AuthProof (the cluster key is
 * live_fuzz's, so it gets past the handshake), NodeRegister with a plausible topology
 * (node names fz0..fz7, each with its own shape, so sequences running at once also fight
 * over names), then heartbeats, task exits, launch replies, step output, log replies and
 * relayed CLI sessions, all built from what gschedd sent this run (the LaunchTasks it
 * placed on our fake nodes, its LogsRequests) and then mutated. One worker sequence in
 * six fuzzes the handshake instead: a mutated Hello, none with a nonce, a wrong or missing
 * proof, something else first, two Hellos, garbage. A CLI sequence is one request (submit,
 * queue, nodes, show, cancel, hold, release, requeue, wait, logs, partitions, srun steps,
 * progress, key/value), sometimes a second one on the same connection, then the reply.
 *
 * The check after each batch: gschedd runs, has printed no sanitizer report, acknowledges
 * a heartbeat of node live0 (our own well-behaved worker, which also answers what is
 * launched on it) and answers a NodesRequest on its CLI socket, each within 10 s. Every
 * 200 submissions the check also cancels every job, so the queue stays small.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "tests/fuzz/live.h"

#define CHECK_TIMEOUT_MS 10000
#define NAMES 8
#define LAUNCHES 64
#define LOGS 16
#define CLEAN_EVERY 200
#define RESTART_AFTER_JOBS 2000
#define GOOD_BEAT_MS 300  /* live0's heartbeats, between every step */
#define STALL_LIMIT "3 s" /* heartbeat_interval x heartbeat_misses in the configuration */
#define SLOW_MS 3000      /* the check's heartbeat must be acknowledged sooner */

struct slot {
    struct lf_rng rng;
    struct lf_conn conn;
    bool cli;
    unsigned step, length;
    unsigned preauth; /* 0: a valid handshake; else which way it is broken */
    char node[64];
    uint32_t ngpus, ncores;
    uint64_t hb_seq;
    uint64_t session; /* the last relayed CLI session opened */
    bool answered;    /* a CLI sequence's request was answered */
};

/* A LaunchTasks gschedd sent to one of our nodes. */
struct launch {
    uint64_t job_id, request_id;
    uint32_t attempt, step, ranks[4], nranks;
    char node[64];
};

/* A LogsRequest gschedd forwarded to one of our nodes. */
struct logs {
    uint64_t request_id;
    char node[64];
};

struct sched {
    char socket[300];
    struct slot slots[LF_MAX_PARALLEL];
    struct lf_conn good; /* live0 */
    uint64_t good_seq;
    uint64_t good_beat_ms; /* when live0 last heartbeated */
    bool good_dropped;     /* gschedd closed live0's connection */
    struct launch launches[LAUNCHES];
    unsigned nlaunches, next_launch;
    struct logs logs[LOGS];
    unsigned nlogs, next_logs;
    unsigned next_id;
    uint64_t max_job_id; /* the highest job id heard of, since gschedd started */
};

static const struct lf_damage worker_damage = {.mutate = 40, .bytes = 5, .stream = 4};
static const struct lf_damage cli_damage = {.mutate = 45, .bytes = 5, .stream = 3};

static struct sched *state(struct lf_run *run)
{
    return run->target_state;
}

/* A step's result from lf_send's: sent, more to come (1); the stream broken, the sequence
 * is over (0); the peer gone (< 0). */
static int more(int sent)
{
    return sent == 0 ? 1 : sent == 1 ? 0 : sent;
}

/* ---- what gschedd says ---- */

static struct slot *slot_of(struct sched *st, const struct lf_conn *c)
{
    for (unsigned i = 0; i < LF_MAX_PARALLEL; i++) {
        if (&st->slots[i].conn == c)
            return &st->slots[i];
    }
    return NULL;
}

static void note_job(struct lf_run *run, uint64_t job_id)
{
    struct sched *st = state(run);

    lf_dict_num(&run->dict, job_id);
    if (job_id > st->max_job_id)
        st->max_job_id = job_id;
}

static void note_launch(struct lf_run *run, const char *node, const Gs__Envelope *env)
{
    struct sched *st = state(run);
    const Gs__LaunchTasks *m = env->launch_tasks;
    struct launch *l = &st->launches[st->next_launch];

    memset(l, 0, sizeof(*l));
    l->job_id = m->job_id;
    l->request_id = env->request_id;
    l->attempt = m->attempt;
    l->step = m->step;
    for (size_t i = 0; i < m->n_tasks && l->nranks < 4; i++)
        l->ranks[l->nranks++] = m->tasks[i]->rank;
    snprintf(l->node, sizeof(l->node), "%s", node);
    st->next_launch = (st->next_launch + 1) % LAUNCHES;
    if (st->nlaunches < LAUNCHES)
        st->nlaunches++;
    note_job(run, m->job_id);
}

static void learn(struct lf_run *run, const char *node, const Gs__Envelope *env)
{
    struct sched *st = state(run);

    switch (env->body_case) {
    case GS__ENVELOPE__BODY_LAUNCH_TASKS:
        note_launch(run, node, env);
        break;
    case GS__ENVELOPE__BODY_LOGS_REQUEST:
        st->logs[st->next_logs].request_id = env->request_id;
        snprintf(st->logs[st->next_logs].node, sizeof(st->logs[0].node), "%s", node);
        st->next_logs = (st->next_logs + 1) % LOGS;
        st->nlogs += st->nlogs < LOGS;
        break;
    case GS__ENVELOPE__BODY_SUBMIT_REPLY:
        note_job(run, env->submit_reply->job_id);
        break;
    case GS__ENVELOPE__BODY_ERROR:
        if (run->verbose)
            fprintf(stderr, "live_fuzz: error reply %d: %s\n", env->error->code,
                    env->error->message);
        break;
    case GS__ENVELOPE__BODY_QUEUE_REPLY:
        for (size_t i = 0; i < env->queue_reply->n_jobs && i < 4; i++)
            lf_dict_num(&run->dict, env->queue_reply->jobs[i]->job_id);
        break;
    default:
        break;
    }
}

static void on_heard(struct lf_conn *c, const Gs__Envelope *env, void *data)
{
    struct lf_run *run = data;
    struct slot *sl = slot_of(state(run), c);

    lf_count_heard(run, env);
    if (sl != NULL && env->body_case != GS__ENVELOPE__BODY_HELLO)
        sl->answered = true;
    learn(run, sl != NULL ? sl->node : "live0", env);
}

/* ---- messages a worker sends ---- */

static Gs__NodeTopology *topology(struct lf_rng *r, const char *name, uint32_t ngpus,
                                  uint32_t ncores)
{
    Gs__NodeTopology *t = lf_new(&gs__node_topology__descriptor);
    uint32_t sockets = ncores >= 16 ? 2 : 1;
    char text[64];

    t->node_name = lf_strdup(name);
    t->hostname = lf_strdup(name);
    t->address = lf_strdup("127.0.0.1");
    t->sockets = sockets;
    t->cores = ncores;
    t->threads = ncores * 2;
    t->memory_mib = 65536;
    for (uint32_t s = 0; s < sockets; s++) {
        Gs__NumaNode *nn = lf_new(&gs__numa_node__descriptor);

        nn->os_index = nn->socket = s;
        nn->memory_mib = 65536 / sockets;
        for (uint32_t c = s * ncores / sockets; c < (s + 1) * ncores / sockets; c++)
            LF_PUSH(nn->cores, nn->n_cores, c);
        LF_PUSH(t->numa_nodes, t->n_numa_nodes, nn);
    }
    char *feature = lf_strdup(lf_chance(r, 50) ? "h100" : "fz");
    LF_PUSH(t->features, t->n_features, feature);
    for (uint32_t g = 0; g < ngpus; g++) {
        Gs__Gpu *gpu = lf_new(&gs__gpu__descriptor);

        gpu->index = g;
        snprintf(text, sizeof(text), "GPU-%.40s-%u", name, g);
        gpu->uuid = lf_strdup(text);
        gpu->model = lf_strdup("NVIDIA H100 80GB HBM3");
        snprintf(text, sizeof(text), "0000:%02x:00.0", 0x17 + g);
        gpu->pci_bus_id = lf_strdup(text);
        gpu->numa_node = gpu->socket = (int32_t)(g * sockets / ngpus);
        gpu->memory_mib = 81920;
        gpu->nearest_nic = lf_chance(r, 50) ? 0 : -1;
        LF_PUSH(t->gpus, t->n_gpus, gpu);
    }
    for (uint32_t a = 0; a < ngpus; a++) {
        for (uint32_t b = a + 1; b < ngpus; b++) {
            Gs__GpuLink *l = lf_new(&gs__gpu_link__descriptor);

            l->gpu_a = a;
            l->gpu_b = b;
            l->type = (Gs__LinkType)(1 + lf_below(r, 6));
            l->nvlink_count = l->type == GS__LINK_TYPE__LINK_TYPE_NVLINK ? 18 : 0;
            LF_PUSH(t->gpu_links, t->n_gpu_links, l);
        }
    }
    Gs__Nic *nic = lf_new(&gs__nic__descriptor);
    nic->name = lf_strdup("ibp27s0");
    nic->ib_device = lf_strdup("mlx5_0");
    nic->pci_bus_id = lf_strdup("0000:1b:00.0");
    for (uint32_t g = 0; g < ngpus; g++) {
        Gs__LinkType type = (Gs__LinkType)(2 + lf_below(r, 4));
        LF_PUSH(nic->gpu_links, nic->n_gpu_links, type);
    }
    LF_PUSH(t->nics, t->n_nics, nic);
    return t;
}

static Gs__TaskRef *task_ref(const struct launch *l, uint32_t rank)
{
    Gs__TaskRef *ref = lf_new(&gs__task_ref__descriptor);

    ref->job_id = l->job_id;
    ref->rank = rank;
    ref->pid = 4242;
    ref->start_time_ms = gs_clock_wall_ms() - 1000;
    ref->attempt = l->attempt;
    ref->step = l->step;
    ref->cpu_time_ms = 10;
    ref->rss_mib = 100;
    return ref;
}

/* A launch on node (most of the time), or any, or NULL when none is known. */
static const struct launch *some_launch(struct sched *st, struct lf_rng *r, const char *node)
{
    const struct launch *any = NULL;

    if (st->nlaunches == 0)
        return NULL;
    for (unsigned tries = 0; tries < 8; tries++) {
        const struct launch *l = &st->launches[lf_below(r, st->nlaunches)];

        if (strcmp(l->node, node) == 0)
            return l;
        any = l;
    }
    return lf_chance(r, 30) ? any : NULL;
}

static Gs__TaskExit *task_exit(struct lf_rng *r, const struct launch *l, const char *node)
{
    Gs__TaskExit *ex = lf_new(&gs__task_exit__descriptor);

    ex->job_id = l != NULL ? l->job_id : 1 + lf_below(r, 50);
    ex->rank = l != NULL && l->nranks > 0 ? l->ranks[lf_below(r, l->nranks)] : 0;
    ex->node_name = lf_strdup(node);
    ex->signaled = lf_chance(r, 15);
    ex->exit_code = ex->signaled ? 0 : (int32_t)lf_below(r, 3);
    ex->term_signal = ex->signaled ? 9 : 0;
    ex->end_reason = (Gs__EndReason)lf_below(r, 8);
    ex->start_time_ms = gs_clock_wall_ms() - 2000;
    ex->end_time_ms = gs_clock_wall_ms();
    ex->attempt = l != NULL ? l->attempt : 0;
    ex->step = l != NULL ? l->step : 0;
    if (ex->end_reason == GS__END_REASON__END_REASON_LAUNCH_FAILED)
        ex->launch_error = lf_strdup("exec true: No such file or directory");
    return ex;
}

static Gs__Envelope *node_register(struct lf_run *run, struct slot *sl)
{
    struct sched *st = state(run);
    Gs__NodeRegister *reg = lf_new(&gs__node_register__descriptor);
    const struct launch *l = some_launch(st, &sl->rng, sl->node);

    reg->topology = topology(&sl->rng, sl->node, sl->ngpus, sl->ncores);
    reg->worker_start_ms = gs_clock_wall_ms() - 5000;
    if (l != NULL && lf_chance(&sl->rng, 50)) {
        for (uint32_t i = 0; i < l->nranks; i++) {
            Gs__TaskRef *ref = task_ref(l, l->ranks[i]);
            LF_PUSH(reg->running, reg->n_running, ref);
        }
    }
    if (l != NULL && lf_chance(&sl->rng, 30)) {
        Gs__TaskExit *ex = task_exit(&sl->rng, l, sl->node);
        LF_PUSH(reg->unacked_exits, reg->n_unacked_exits, ex);
    }
    return lf_envelope(GS__ENVELOPE__BODY_NODE_REGISTER, reg, 0);
}

static Gs__Envelope *heartbeat(struct lf_run *run, struct slot *sl)
{
    Gs__Heartbeat *hb = lf_new(&gs__heartbeat__descriptor);
    struct lf_rng *r = &sl->rng;
    const struct launch *l = some_launch(state(run), r, sl->node);

    hb->node_name = lf_strdup(sl->node);
    hb->seq = ++sl->hb_seq;
    hb->sent_at_ms = gs_clock_wall_ms();
    hb->nvml = lf_chance(r, 80);
    for (uint32_t g = 0; hb->nvml && g < sl->ngpus; g++) {
        Gs__GpuStats *gs = lf_new(&gs__gpu_stats__descriptor);

        gs->index = g;
        gs->utilization_pct = (uint32_t)lf_below(r, 101);
        gs->utilization_max_pct = gs->utilization_pct;
        gs->memory_used_mib = lf_below(r, 81920);
        gs->memory_total_mib = 81920;
        gs->temperature_c = 40 + (int32_t)lf_below(r, 40);
        gs->power_w = (uint32_t)lf_below(r, 700);
        gs->samples = (uint32_t)lf_below(r, 3);
        if (l != NULL && lf_chance(r, 50)) {
            Gs__GpuProcess *p = lf_new(&gs__gpu_process__descriptor);

            p->pid = 4242;
            p->memory_mib = 1024;
            p->job_id = l->job_id;
            LF_PUSH(gs->processes, gs->n_processes, p);
        }
        LF_PUSH(hb->gpus, hb->n_gpus, gs);
    }
    for (uint32_t i = 0; l != NULL && i < l->nranks; i++) {
        Gs__TaskRef *ref = task_ref(l, l->ranks[i]);
        LF_PUSH(hb->running, hb->n_running, ref);
    }
    hb->memory_used_mib = 1000 + lf_below(r, 60000);
    hb->memory_total_mib = 65536;
    hb->load_avg_x100 = (uint32_t)lf_below(r, 3200);
    hb->cpu_util_pct = (uint32_t)lf_below(r, 101);
    return lf_envelope(GS__ENVELOPE__BODY_HEARTBEAT, hb, 0);
}

static Gs__Envelope *launch_reply(struct lf_rng *r, const struct launch *l)
{
    Gs__LaunchTasksReply *rep = lf_new(&gs__launch_tasks_reply__descriptor);

    rep->job_id = l != NULL ? l->job_id : lf_below(r, 50);
    rep->attempt = l != NULL ? l->attempt : 0;
    for (uint32_t i = 0; l != NULL && i < l->nranks; i++) {
        Gs__TaskLaunchResult *res = lf_new(&gs__task_launch_result__descriptor);

        res->rank = l->ranks[i];
        res->code = lf_chance(r, 80) ? 0 : -ENOENT;
        res->pid = 4242 + (int32_t)i;
        res->message = lf_strdup(res->code == 0 ? "" : "exec: No such file or directory");
        LF_PUSH(rep->results, rep->n_results, res);
    }
    return lf_envelope(GS__ENVELOPE__BODY_LAUNCH_TASKS_REPLY, rep,
                       l != NULL ? l->request_id : lf_below(r, 100));
}

static Gs__Envelope *step_output(struct lf_rng *r, const struct launch *l)
{
    Gs__StepOutput *out = lf_new(&gs__step_output__descriptor);
    static const char line[] = "step output line\n";

    out->job_id = l != NULL ? l->job_id : lf_below(r, 50);
    out->step = l != NULL && l->step > 0 ? l->step : 1 + (uint32_t)lf_below(r, 3);
    out->rank = l != NULL && l->nranks > 0 ? l->ranks[0] : 0;
    out->stream = (Gs__LogStream)lf_below(r, 2);
    lf_set_bytes(&out->data, line, sizeof(line) - 1);
    out->eof = lf_chance(r, 30);
    return lf_envelope(GS__ENVELOPE__BODY_STEP_OUTPUT, out, 0);
}

static Gs__Envelope *logs_answer(struct lf_run *run, struct slot *sl)
{
    struct sched *st = state(run);
    struct lf_rng *r = &sl->rng;
    uint64_t rid = st->nlogs > 0 ? st->logs[lf_below(r, st->nlogs)].request_id : lf_below(r, 9);
    static const char data[] = "log data\n";

    if (lf_chance(r, 25)) {
        Gs__ErrorReply *e = lf_new(&gs__error_reply__descriptor);

        e->code = -ENOENT;
        e->message = lf_strdup("no such file");
        return lf_envelope(GS__ENVELOPE__BODY_ERROR, e, rid);
    }
    Gs__LogsReply *rep = lf_new(&gs__logs_reply__descriptor);
    lf_set_bytes(&rep->data, data, sizeof(data) - 1);
    rep->offset = 0;
    rep->size = sizeof(data) - 1;
    rep->eof = true;
    rep->finished = lf_chance(r, 50);
    rep->node_name = lf_strdup(sl->node);
    rep->path = lf_strdup("/tmp/fz.out");
    return lf_envelope(GS__ENVELOPE__BODY_LOGS_REPLY, rep, rid);
}

static Gs__Envelope *cli_relay(struct lf_run *run, struct slot *sl)
{
    struct lf_rng *r = &sl->rng;
    Gs__CliRelay *relay = lf_new(&gs__cli_relay__descriptor);

    if (sl->session == 0 || lf_chance(r, 40))
        sl->session++;
    relay->session = sl->session;
    relay->uid = lf_chance(r, 80) ? 0 : (uint32_t)lf_below(r, 70000);
    relay->gid = relay->uid;
    if (lf_chance(r, 10)) {
        relay->close = true;
    } else {
        Gs__Envelope *inner = lf_cli_request(run, r);
        struct gs_buf frame = GS_BUF_INIT;

        if (lf_chance(r, 30))
            lf_mutate(r, &run->dict, &inner->base);
        lf_pack_frame(inner, &frame);
        lf_set_bytes(&relay->frame, frame.data + GS_PROTO_HEADER_SIZE,
                     frame.len - GS_PROTO_HEADER_SIZE);
        gs_buf_release(&frame);
        lf_free(inner);
    }
    return lf_envelope(GS__ENVELOPE__BODY_CLI_RELAY, relay, 0);
}

/*
 * A report of the worker's shard cache: a few datasets (ids from a small set, so reports
 * replace each other), each's shards as a bitmap or as runs (proto/held.h), now and then
 * one that does not read: a bitmap of the wrong size, runs past the end or an odd count.
 */
static Gs__Envelope *data_holdings(struct lf_rng *r)
{
    Gs__DataHoldings *m = lf_new(&gs__data_holdings__descriptor);
    size_t n = (size_t)lf_below(r, 4);

    m->full = lf_chance(r, 30);
    for (size_t k = 0; k < n; k++) {
        Gs__DatasetHolding *h = lf_new(&gs__dataset_holding__descriptor);
        char id[33];

        snprintf(id, sizeof(id), "%032x", 0xda7a0u + (unsigned)lf_below(r, 4));
        h->dataset = lf_strdup(id);
        h->shards = lf_chance(r, 3) ? (uint32_t)lf_rand(r) : (uint32_t)lf_below(r, 5000);
        h->bytes_held = lf_below(r, 1u << 30);
        h->bytes_total = h->bytes_held + lf_below(r, 1u << 30);
        h->source = lf_strdup(lf_chance(r, 50) ? "/data/set" : "");
        if (lf_chance(r, 50) && h->shards <= 5000) {
            uint8_t bits[5000 / 8 + 2];
            size_t len = (h->shards + 7) / 8 + (lf_chance(r, 5) ? 1 : 0);

            for (size_t i = 0; i < len; i++)
                bits[i] = (uint8_t)lf_rand(r);
            if (h->shards % 8 != 0 && len == (h->shards + 7) / 8 && lf_chance(r, 90))
                bits[len - 1] &= (uint8_t)((1u << (h->shards % 8)) - 1);
            lf_set_bytes(&h->held, bits, len);
        } else {
            size_t nruns = 2 * (size_t)lf_below(r, 40) + (lf_chance(r, 5) ? 1 : 0);

            for (size_t i = 0; i < nruns; i++) {
                /* Most fit: the runs share the shards out. */
                uint32_t v = (uint32_t)lf_below(r, 1 + h->shards / (nruns + 1)) + (i % 2);

                if (lf_chance(r, 2))
                    v = (uint32_t)lf_rand(r);
                LF_PUSH(h->held_runs, h->n_held_runs, v);
            }
        }
        LF_PUSH(m->datasets, m->n_datasets, h);
    }
    if (lf_chance(r, 20)) {
        char *gone = lf_strdup("000000000000000000000000000da7a1");

        LF_PUSH(m->removed, m->n_removed, gone);
    }
    m->used_bytes = lf_below(r, 1ull << 40);
    m->cap_bytes = lf_chance(r, 50) ? 0 : lf_below(r, 1ull << 40);
    return lf_envelope(GS__ENVELOPE__BODY_DATA_HOLDINGS, m, 0);
}

/* One message of a registered worker's life, built from what gschedd said. */
static Gs__Envelope *worker_message(struct lf_run *run, struct slot *sl)
{
    struct lf_rng *r = &sl->rng;
    const struct launch *l = some_launch(state(run), r, sl->node);
    unsigned w = (unsigned)lf_below(r, 100);

    if (w < 25)
        return heartbeat(run, sl);
    if (w < 40)
        return lf_envelope(GS__ENVELOPE__BODY_TASK_EXIT, task_exit(r, l, sl->node), 0);
    if (w < 48)
        return launch_reply(r, l);
    if (w < 54)
        return step_output(r, l);
    if (w < 68)
        return cli_relay(run, sl);
    if (w < 73)
        return logs_answer(run, sl);
    if (w < 76)
        return node_register(run, sl);
    if (w < 84)
        return lf_random_envelope(r, &run->dict);
    if (w < 90)
        return lf_cli_request(run, r);
    if (w < 95)
        return data_holdings(r);
    return heartbeat(run, sl);
}

/* ---- sequences ---- */

static void pick_node(struct slot *sl)
{
    unsigned i = (unsigned)lf_below(&sl->rng, NAMES);

    snprintf(sl->node, sizeof(sl->node), "fz%u", i);
    sl->ngpus = (i % 5) * 2;
    sl->ncores = 8 + 8 * (i % 3);
    if (lf_chance(&sl->rng, 2)) { /* a node that comes back with another shape */
        sl->ngpus = (uint32_t)lf_below(&sl->rng, 9);
        sl->ncores = 1 + (uint32_t)lf_below(&sl->rng, 64);
    }
}

static int sched_sequence(struct lf_run *run, unsigned slot, uint64_t index)
{
    struct sched *st = state(run);
    struct slot *sl = &st->slots[slot];
    uint64_t seed = run->seed * 0x100000001b3ull + index;

    memset(sl, 0, sizeof(*sl));
    lf_rng_seed(&sl->rng, seed);
    sl->cli = lf_chance(&sl->rng, 25);
    lf_conn_init(&sl->conn, ++st->next_id, sl->cli ? LF_KIND_CLI : LF_KIND_WORKER, &run->rec);
    sl->length = 3 + (unsigned)(lf_chance(&sl->rng, 10) ? 100 + lf_below(&sl->rng, 300)
                                                        : lf_below(&sl->rng, 40));
    if (!sl->cli && lf_chance(&sl->rng, 16))
        sl->preauth = 1 + (unsigned)lf_below(&sl->rng, 7);
    pick_node(sl);
    lf_record_line(&run->rec, "# sequence %llu (seed %llu): %s on connection %u",
                   (unsigned long long)index, (unsigned long long)seed, sl->cli ? "cli" : "worker",
                   sl->conn.id);
    return 0;
}

/* Steps 0 and 1 of a worker sequence: the handshake, broken as sl->preauth says. */
static int worker_handshake(struct lf_run *run, struct slot *sl)
{
    struct lf_rng *r = &sl->rng;
    Gs__Envelope *hello;

    if (sl->step == 0) {
        if (lf_conn_tcp(&sl->conn, run->port) < 0)
            return -EPIPE;
        if (sl->preauth == 3) /* something else first */
            (void)lf_send(run, r, &sl->conn, lf_random_envelope(r, &run->dict), NULL);
        if (sl->preauth == 5) { /* no Hello at all: garbage */
            static const struct lf_damage garbage = {.stream = 100};

            return lf_send(run, r, &sl->conn, node_register(run, sl), &garbage) == 1 ? 0 : 1;
        }
        if (sl->preauth == 1) { /* a mutated Hello, nonce and all */
            static const struct lf_damage hello_damage = {.mutate = 100, .bytes = 20};
            Gs__Hello *h = lf_new(&gs__hello__descriptor);

            gs_proto_hello_init(h, GS__ROLE__ROLE_WORKER, "fz0");
            h->name = lf_strdup(sl->node);
            h->software_version = lf_strdup("live_fuzz");
            lf_set_bytes(&h->auth_nonce, sl->conn.nonce, sizeof(sl->conn.nonce));
            hello = lf_envelope(GS__ENVELOPE__BODY_HELLO, h, 0);
            return lf_send(run, r, &sl->conn, hello, &hello_damage) < 0 ? -EPIPE : 1;
        }
        run->stats.messages++;
        if (lf_conn_hello(&sl->conn, GS__ROLE__ROLE_WORKER, sl->node, sl->preauth != 2) < 0)
            return -EPIPE;
        if (sl->preauth == 4) { /* twice */
            run->stats.messages++;
            return lf_conn_hello(&sl->conn, GS__ROLE__ROLE_WORKER, sl->node, true) < 0 ? -EPIPE : 1;
        }
        return 1;
    }
    if (sl->preauth == 6) { /* a proof that is not the right one */
        Gs__AuthProof *p = lf_new(&gs__auth_proof__descriptor);
        uint8_t mac[64];

        for (size_t i = 0; i < sizeof(mac); i++)
            mac[i] = (uint8_t)lf_rand(r);
        lf_set_bytes(&p->mac, mac, lf_chance(r, 70) ? 32 : lf_below(r, sizeof(mac)));
        return lf_send(run, r, &sl->conn, lf_envelope(GS__ENVELOPE__BODY_AUTH_PROOF, p, 0), NULL) <
                       0
                   ? -EPIPE
                   : 1;
    }
    if (sl->preauth == 7) /* no proof: the registration right away */
        return 1;
    run->stats.messages++;
    return lf_conn_proof(&sl->conn, &run->key, 2000, on_heard, run) < 0 ? -EPIPE : 1;
}

static bool is_register_reply(const Gs__Envelope *env, uint64_t arg)
{
    (void)arg;
    return env->body_case == GS__ENVELOPE__BODY_NODE_REGISTER_REPLY;
}

static int worker_step(struct lf_run *run, struct slot *sl)
{
    int rc;

    if (sl->step < 2) {
        rc = worker_handshake(run, sl);
    } else if (sl->step == 2) {
        bool mutated = lf_chance(&sl->rng, 25);
        static const struct lf_damage reg_damage = {.mutate = 100, .bytes = 10, .stream = 5};

        rc =
            lf_send(run, &sl->rng, &sl->conn, node_register(run, sl), mutated ? &reg_damage : NULL);
        if (rc == 0 && !mutated && sl->preauth == 0)
            (void)lf_conn_wait(&sl->conn, 1000, is_register_reply, 0, on_heard, run);
        rc = more(rc);
    } else {
        rc = lf_send(run, &sl->rng, &sl->conn, worker_message(run, sl), &worker_damage);
        rc = more(rc);
    }
    sl->step++;
    return rc;
}

static bool is_answer(const Gs__Envelope *env, uint64_t arg)
{
    (void)arg;
    return env->body_case != GS__ENVELOPE__BODY_HELLO;
}

static int cli_step(struct lf_run *run, struct slot *sl)
{
    struct lf_rng *r = &sl->rng;
    static const struct lf_damage hello_damage = {.mutate = 100, .bytes = 10};
    int rc = 1;

    switch (sl->step++) {
    case 0:
        if (lf_conn_unix(&sl->conn, state(run)->socket) < 0)
            return -EPIPE;
        if (lf_chance(r, 5)) {
            Gs__Hello *h = lf_new(&gs__hello__descriptor);

            gs_proto_hello_init(h, GS__ROLE__ROLE_CLI, "gsched");
            h->name = lf_strdup("gsched");
            h->software_version = lf_strdup("live_fuzz");
            return lf_send(run, r, &sl->conn, lf_envelope(GS__ENVELOPE__BODY_HELLO, h, 0),
                           &hello_damage) < 0
                       ? -EPIPE
                       : 1;
        }
        run->stats.messages++;
        return lf_conn_hello(&sl->conn, GS__ROLE__ROLE_CLI, "gsched", false) < 0 ? -EPIPE : 1;
    case 1:
        rc = lf_send(run, r, &sl->conn, lf_cli_request(run, r), &cli_damage);
        break;
    case 2:
        if (lf_chance(r, 20)) /* one request per connection: a second one */
            rc = lf_send(run, r, &sl->conn, lf_cli_request(run, r), &cli_damage);
        break;
    default:
        if (!sl->answered)
            (void)lf_conn_wait(&sl->conn, 300, is_answer, 0, on_heard, run);
        return 0;
    }
    return more(rc);
}

static int sched_step(struct lf_run *run, unsigned slot)
{
    struct slot *sl = &state(run)->slots[slot];
    int rc;

    rc = sl->cli ? cli_step(run, sl) : worker_step(run, sl);
    if (rc > 0 && lf_conn_poll(&sl->conn, 0, on_heard, run) < 0)
        rc = 0; /* gschedd closed it */
    if (rc > 0 && !sl->cli && sl->step >= sl->length)
        rc = 0;
    if (rc <= 0 && sl->conn.eof)
        run->stats.closed_by_peer++;
    return rc;
}

static void sched_end(struct lf_run *run, unsigned slot)
{
    struct slot *sl = &state(run)->slots[slot];

    (void)lf_flush_held(&sl->conn);
    lf_conn_close(&sl->conn);
}

/* ---- live0 and the check ---- */

/* live0 answers what gschedd launches on it: started, and at once exited 0. */
static void on_good(struct lf_conn *c, const Gs__Envelope *env, void *data)
{
    struct lf_run *run = data;
    struct launch l = {0};
    Gs__Envelope *out;

    lf_count_heard(run, env);
    if (env->body_case != GS__ENVELOPE__BODY_LAUNCH_TASKS)
        return;
    l.job_id = env->launch_tasks->job_id;
    l.attempt = env->launch_tasks->attempt;
    l.step = env->launch_tasks->step;
    l.request_id = env->request_id;
    for (size_t i = 0; i < env->launch_tasks->n_tasks && l.nranks < 4; i++)
        l.ranks[l.nranks++] = env->launch_tasks->tasks[i]->rank;
    out = launch_reply(&run->rng, &l);
    for (size_t i = 0; i < out->launch_tasks_reply->n_results; i++)
        out->launch_tasks_reply->results[i]->code = 0;
    (void)lf_conn_send(c, out);
    lf_free(out);
    for (uint32_t i = 0; i < l.nranks; i++) {
        Gs__TaskExit *ex = task_exit(&run->rng, &l, "live0");

        ex->rank = l.ranks[i];
        ex->signaled = false;
        ex->exit_code = 0;
        ex->term_signal = 0;
        ex->end_reason = GS__END_REASON__END_REASON_NONE;
        out = lf_envelope(GS__ENVELOPE__BODY_TASK_EXIT, ex, 0);
        (void)lf_conn_send(c, out);
        lf_free(out);
    }
}

static bool is_ack(const Gs__Envelope *env, uint64_t seq)
{
    return env->body_case == GS__ENVELOPE__BODY_HEARTBEAT_ACK && env->heartbeat_ack->seq == seq;
}

static int good_connect(struct lf_run *run, char *why, size_t size)
{
    struct sched *st = state(run);
    struct lf_rng r;
    Gs__NodeRegister *reg = lf_new(&gs__node_register__descriptor);
    Gs__Envelope *env;
    int rc;

    lf_rng_seed(&r, 7);
    lf_conn_close(&st->good);
    lf_conn_init(&st->good, 0, LF_KIND_WORKER, NULL);
    reg->topology = topology(&r, "live0", 0, 1);
    env = lf_envelope(GS__ENVELOPE__BODY_NODE_REGISTER, reg, 0);
    rc = lf_conn_tcp(&st->good, run->port);
    if (rc == 0)
        rc = lf_conn_hello(&st->good, GS__ROLE__ROLE_WORKER, "live0", true);
    if (rc == 0)
        rc = lf_conn_proof(&st->good, &run->key, CHECK_TIMEOUT_MS, on_good, run);
    if (rc == 0)
        rc = lf_conn_send(&st->good, env);
    lf_free(env);
    if (rc == 0 &&
        lf_conn_wait(&st->good, CHECK_TIMEOUT_MS, is_register_reply, 0, on_good, run) == 0)
        rc = -ETIMEDOUT;
    if (rc < 0)
        snprintf(why, size,
                 "gschedd did not take live0's registration (connect, handshake, "
                 "NodeRegisterReply in %d ms): %s",
                 CHECK_TIMEOUT_MS, strerror(-rc));
    return rc;
}

static int good_heartbeat(struct lf_run *run, char *why, size_t size)
{
    struct sched *st = state(run);
    Gs__Heartbeat *hb = lf_new(&gs__heartbeat__descriptor);
    Gs__Envelope *env;
    uint64_t start;
    int rc;

    hb->node_name = lf_strdup("live0");
    hb->seq = ++st->good_seq;
    hb->sent_at_ms = gs_clock_wall_ms();
    env = lf_envelope(GS__ENVELOPE__BODY_HEARTBEAT, hb, 0);
    start = gs_clock_mono_ms();
    rc = lf_conn_send(&st->good, env);
    lf_free(env);
    if (rc == 0 &&
        lf_conn_wait(&st->good, CHECK_TIMEOUT_MS, is_ack, st->good_seq, on_good, run) == 0)
        rc = st->good.eof ? -EPIPE : -ETIMEDOUT;
    if (rc < 0) {
        snprintf(why, size, "gschedd did not acknowledge live0's heartbeat in %d ms: %s",
                 CHECK_TIMEOUT_MS, strerror(-rc));
    } else if (gs_clock_mono_ms() - start > SLOW_MS) {
        snprintf(why, size, "gschedd took %llu ms to acknowledge live0's heartbeat: it stalled",
                 (unsigned long long)(gs_clock_mono_ms() - start));
        rc = -ETIMEDOUT;
    }
    return rc;
}

static bool is_nodes_reply(const Gs__Envelope *env, uint64_t arg)
{
    return env->body_case == GS__ENVELOPE__BODY_NODES_REPLY && env->request_id == arg;
}

static bool is_reply(const Gs__Envelope *env, uint64_t arg)
{
    return env->body_case != GS__ENVELOPE__BODY_HELLO && env->request_id == arg;
}

/* One request on a fresh CLI connection, waiting for its reply; 0, or -errno. */
static int cli_ask(struct lf_run *run, Gs__Envelope *env, lf_want want)
{
    struct lf_conn c;
    int rc;

    lf_conn_init(&c, 0, LF_KIND_CLI, NULL);
    rc = lf_conn_unix(&c, state(run)->socket);
    if (rc == 0)
        rc = lf_conn_hello(&c, GS__ROLE__ROLE_CLI, "gsched", false);
    if (rc == 0)
        rc = lf_conn_send(&c, env);
    if (rc == 0 && lf_conn_wait(&c, CHECK_TIMEOUT_MS, want, env->request_id, on_heard, run) == 0)
        rc = -ETIMEDOUT;
    lf_conn_close(&c);
    lf_free(env);
    return rc;
}

/* Every job pending, running or held, cancelled: the queue stays small. */
static void clean_up(struct lf_run *run)
{
    Gs__CancelRequest *req = lf_new(&gs__cancel_request__descriptor);
    static const Gs__JobState states[] = {GS__JOB_STATE__JOB_STATE_PENDING,
                                          GS__JOB_STATE__JOB_STATE_RUNNING};

    req->selector = lf_new(&gs__job_selector__descriptor);
    for (size_t i = 0; i < 2; i++)
        LF_PUSH(req->selector->states, req->selector->n_states, states[i]);
    req->reason = lf_strdup("live_fuzz clean-up");
    (void)cli_ask(run, lf_envelope(GS__ENVELOPE__BODY_CANCEL_REQUEST, req, 77), is_reply);
    run->submits = 0;
}

static int alive(struct lf_run *run, char *why, size_t size)
{
    char state_line[160];

    if (!lf_daemon_alive(&run->daemon)) {
        lf_daemon_describe(&run->daemon, state_line, sizeof(state_line));
        snprintf(why, size, "%s", state_line);
        return -ESRCH;
    }
    if (atomic_load(&run->daemon.sanitizer)) {
        snprintf(why, size, "gschedd printed a sanitizer report");
        return -EFAULT;
    }
    return 0;
}

static int restart(struct lf_run *run, char *why, size_t size);

static int sched_check(struct lf_run *run, char *why, size_t size)
{
    struct sched *st = state(run);
    Gs__NodesRequest *req;
    int rc = alive(run, why, size);

    if (rc == 0 && st->good_dropped) {
        snprintf(why, size,
                 "gschedd closed live0's connection for missed heartbeats although live0 "
                 "heartbeats every %d ms: its loop stalled for over " STALL_LIMIT,
                 GOOD_BEAT_MS);
        rc = -ETIMEDOUT;
    }
    st->good_dropped = false;
    if (rc == 0 && (st->good.fd < 0 || st->good.eof))
        rc = good_connect(run, why, size);
    if (rc == 0)
        (void)lf_conn_poll(&st->good, 0, on_good, run);
    if (rc == 0 && (st->good.eof || st->good.bad_frame))
        rc = good_connect(run, why, size);
    if (rc == 0)
        rc = good_heartbeat(run, why, size);
    if (rc == 0) {
        req = lf_new(&gs__nodes_request__descriptor);
        rc = cli_ask(run, lf_envelope(GS__ENVELOPE__BODY_NODES_REQUEST, req, 99), is_nodes_reply);
        if (rc < 0)
            snprintf(why, size,
                     "gschedd did not answer a NodesRequest on its CLI socket in %d "
                     "ms: %s",
                     CHECK_TIMEOUT_MS, strerror(-rc));
    }
    if (rc == 0 && run->submits >= CLEAN_EVERY)
        clean_up(run);
    if (rc == 0 && st->max_job_id >= RESTART_AFTER_JOBS)
        rc = restart(run, why, size);
    if (rc == 0)
        rc = alive(run, why, size);
    for (unsigned i = 0; rc == 0 && i < LF_MAX_PARALLEL; i++) {
        if (st->slots[i].conn.bad_frame) {
            snprintf(why, size, "gschedd sent a frame that does not decode (connection %u)",
                     st->slots[i].conn.id);
            rc = -EBADMSG;
        }
        st->slots[i].conn.bad_frame = false;
    }
    return rc != 0 ? 1 : 0;
}

/* live0 heartbeats every GOOD_BEAT_MS while the fuzzing goes on: gschedd closing its
 * connection for missed heartbeats means its loop stalled for STALL_LIMIT. */
static void sched_tick(struct lf_run *run)
{
    struct sched *st = state(run);
    uint64_t now = gs_clock_mono_ms();
    Gs__Heartbeat *hb;
    Gs__Envelope *env;

    if (st->good.fd < 0 || now - st->good_beat_ms < GOOD_BEAT_MS)
        return;
    st->good_beat_ms = now;
    hb = lf_new(&gs__heartbeat__descriptor);
    hb->node_name = lf_strdup("live0");
    hb->seq = ++st->good_seq;
    hb->sent_at_ms = gs_clock_wall_ms();
    env = lf_envelope(GS__ENVELOPE__BODY_HEARTBEAT, hb, 0);
    (void)lf_conn_send(&st->good, env);
    lf_free(env);
    if (lf_conn_poll(&st->good, 0, on_good, run) < 0 || st->good.eof) {
        st->good_dropped = true;
        lf_conn_close(&st->good);
    }
}

/* ---- start and stop ---- */

static int write_config(struct lf_run *run)
{
    struct sched *st = state(run);
    char text[2048];

    snprintf(text, sizeof(text),
             "[scheduler]\nhost = \"127.0.0.1\"\nport = %u\nsocket = \"%s\"\n"
             "state_dir = \"%s/state\"\nauth_key = \"%s\"\nhttp = \"\"\nlog_level = \"%s\"\n"
             "heartbeat_interval = \"1s\"\nheartbeat_misses = 3\nkill_grace = \"1s\"\n",
             run->port, st->socket, run->work, run->key_path, run->log_level);
    snprintf(run->config_path, sizeof(run->config_path), "%s/gsched.toml", run->work);
    return lf_write_file(run, "gsched.toml", text);
}

static bool socket_ready(struct lf_run *run)
{
    struct lf_conn c;
    bool ok;

    lf_conn_init(&c, 0, LF_KIND_CLI, NULL);
    ok = lf_conn_unix(&c, state(run)->socket) == 0;
    lf_conn_close(&c);
    return ok;
}

/* gschedd started on a fresh state directory, listening, with live0 registered. */
static int start_gschedd(struct lf_run *run, char *why, size_t size)
{
    char exe[512], log[512], state_dir[512];
    char *argv[] = {exe, "--config", run->config_path, NULL};
    uint64_t deadline = gs_clock_mono_ms() + 30000;
    struct timespec pause = {0, 20000000};
    int rc;

    snprintf(exe, sizeof(exe), "%s/gschedd", run->bin_dir);
    snprintf(log, sizeof(log), "%s/gschedd.log", run->work);
    snprintf(state_dir, sizeof(state_dir), "%s/state", run->work);
    lf_remove_tree(state_dir);
    state(run)->max_job_id = 0;
    rc = lf_daemon_start(&run->daemon, "gschedd", argv, log);
    while (rc == 0 && !socket_ready(run)) {
        if (!lf_daemon_alive(&run->daemon) || gs_clock_mono_ms() > deadline) {
            snprintf(why, size, "gschedd did not start listening");
            return -ECHILD;
        }
        nanosleep(&pause, NULL);
    }
    if (rc == 0)
        rc = good_connect(run, why, size);
    return rc;
}

static int sched_stop(struct lf_run *run, char *why, size_t size)
{
    struct sched *st = state(run);
    bool by_itself;

    for (unsigned i = 0; i < LF_MAX_PARALLEL; i++)
        lf_conn_close(&st->slots[i].conn);
    lf_conn_close(&st->good);
    by_itself = lf_daemon_stop(&run->daemon, 20000);
    return lf_daemon_stopped_well(&run->daemon, by_itself, why, size);
}

/* A fresh gschedd once the job table has grown (the fuzzing submits without end): requests
 * over every job would otherwise slow down for no fault of the daemon. The stop is checked
 * as at the end (leaks, a hang). */
static int restart(struct lf_run *run, char *why, size_t size)
{
    int rc = sched_stop(run, why, size);

    if (rc == 0)
        rc = start_gschedd(run, why, size);
    if (rc == 0)
        fprintf(stderr, "live_fuzz: gschedd restarted on a fresh state directory\n");
    return rc;
}

static int sched_start(struct lf_run *run)
{
    struct sched *st = calloc(1, sizeof(*st));
    char why[512];
    int rc;

    if (st == NULL)
        return -ENOMEM;
    run->target_state = st;
    lf_conn_init(&st->good, 0, LF_KIND_WORKER, NULL);
    snprintf(st->socket, sizeof(st->socket), "%s/gschedd.sock", run->work);
    run->port = lf_free_port();
    rc = write_config(run);
    if (rc == 0 && start_gschedd(run, why, sizeof(why)) < 0) {
        fprintf(stderr, "live_fuzz: %s\n", why);
        rc = -EIO;
    }
    return rc;
}

static int sched_replay_open(struct lf_run *run, struct lf_conn *c, const char *kind)
{
    if (strcmp(kind, "cli") == 0) {
        c->kind = LF_KIND_CLI;
        return lf_conn_unix(c, state(run)->socket);
    }
    c->kind = LF_KIND_WORKER;
    c->role = GS__ROLE__ROLE_WORKER;
    return lf_conn_tcp(c, run->port);
}

static int sched_end_run(struct lf_run *run, char *why, size_t size)
{
    int rc;

    if (state(run) == NULL)
        return 0;
    rc = sched_stop(run, why, size);
    free(run->target_state);
    run->target_state = NULL;
    return rc;
}

const struct lf_target_ops lf_target_sched = {
    .name = "sched",
    .start = sched_start,
    .sequence = sched_sequence,
    .step = sched_step,
    .end = sched_end,
    .check = sched_check,
    .replay_open = sched_replay_open,
    .tick = sched_tick,
    .restart = restart,
    .stop = sched_end_run,
};
