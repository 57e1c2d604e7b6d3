/*
 * tel_load.c: fake workers for bench/telemetry.sh and bench/sched_scale.sh. One process, one
 * libuv loop, N TCP connections to gschedd, each playing a worker node (sim0001 .. simN) with
 * G GPUs: a Hello as ROLE_WORKER, a NodeRegister with a synthetic topology (2 sockets, 64
 * cores, 2 TiB, G H100-like GPUs all NVLinked), then one Heartbeat per node every interval,
 * the N of them spread evenly over it (node k's at offset k * interval / N), as N workers
 * started at unrelated times send them.
 *
 * Two kinds of heartbeat, switched per phase:
 *   with     what a worker with telemetry on sends (worker/telemetry.h): G GpuStats of one
 *            sample each (utilisation, memory, power, temperature, clock, and the task's
 *            process on an allocated GPU), nvml = true, the node's CPU and memory figures,
 *            and each running task's CPU time and resident memory;
 *   without  what a worker with telemetry off sends: name, seq, time and the running tasks,
 *            without CPU time or memory. The baseline.
 * The figures come from one xorshift generator per node, seeded from --seed and the node's
 * index: two runs send the same numbers.
 *
 * Jobs: a LaunchTasks is answered as a worker would (a LaunchTasksReply, every rank started
 * with a made-up pid), and its tasks then run until the end: listed in their node's
 * heartbeats, their GPUs busy with one process of the job, so that gschedd's per-job usage
 * path runs. No TaskExit is ever sent; a SignalTasks is counted and otherwise ignored.
 * With --exit-at-once (bench/sched_scale.sh) every task instead ends as soon as it started:
 * right after the LaunchTasksReply, one TaskExit per rank (exit code 0, start and end times),
 * as a worker reports a task that exited by itself; gschedd's TaskExitAck for each is
 * counted (exits and exit_acks in the last line). Such tasks never appear in heartbeats.
 *
 * Sequence: connect and register every node (at most MAX_CONNECTING handshakes at once) and
 * print nodes_registered; heartbeat in the first phase's mode and wait for --launches
 * LaunchTasks (the caller submits its jobs when it reads nodes_registered); then for each
 * phase settle for --settle-ms in its mode, print "phase=I mode=M begin", send for its
 * seconds and print "phase=I mode=M end heartbeats_sent=.. elapsed_s=.. errors=..". The
 * caller samples gschedd's CPU time when it reads begin and end. Output is key=value lines,
 * flushed one by one; exit status 0 only when every node registered and nothing failed.
 *
 * usage: tel_load [--host IPV4] --port P [-n NODES] [-g GPUS] [--interval-ms MS]
 *                 [--phases MODE[:S],...] [--seconds S] [--with-gpus | --without-gpus]
 *                 [--settle-ms MS] [--launches K] [--ramp-timeout-s S] [--seed N]
 *                 [--key FILE] [--exit-at-once]
 * --key: the cluster key (scheduler.auth_key) each simulated worker proves it holds.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/clock.h"
#include "common/log.h"
#include "proto/conn.h"
#include "proto/frame.h"

#define MAX_NODES 99999 /* named sim0001 .. sim99999 */
#define MAX_GPUS 64     /* gschedd's limit per node (SCHED_MAX_GPUS) */
#define MAX_TASKS 16    /* tasks one simulated node runs at once */
#define MAX_PHASES 16
#define MAX_CONNECTING 64 /* handshakes in flight during the ramp-up */
#define NODE_CORES 64
#define NODE_MEMORY_MIB (2048u * 1024u)
#define GPU_MEMORY_MIB 81559u

struct task {
    uint64_t job_id;
    uint32_t rank, attempt, step, pid;
    uint64_t start_ms, cpu_time_ms;
};

struct node {
    struct load *l;
    uint32_t index;
    char name[16];
    struct gs_proto_conn *conn;
    uv_connect_t connect;
    bool registered;
    uint64_t seq;
    uint32_t rng;
    uint64_t gpu_job[MAX_GPUS]; /* the job whose task holds the GPU, 0 none */
    uint32_t gpu_pid[MAX_GPUS];
    struct task tasks[MAX_TASKS];
    uint32_t ntasks;
};

struct phase {
    bool with_gpus;
    uint32_t seconds;
};

enum stage { STAGE_RAMP, STAGE_LAUNCHES, STAGE_SETTLE, STAGE_MEASURE, STAGE_DONE };

/* Scratch messages for one heartbeat: packed by the send, so reused for every node. */
struct hb_scratch {
    Gs__GpuStats stats[MAX_GPUS];
    Gs__GpuStats *stat_ptrs[MAX_GPUS];
    Gs__GpuProcess procs[MAX_GPUS];
    Gs__GpuProcess *proc_ptrs[MAX_GPUS];
    Gs__TaskRef refs[MAX_TASKS];
    Gs__TaskRef *ref_ptrs[MAX_TASKS];
};

struct load {
    uv_loop_t loop;
    struct sockaddr_in addr;
    uint32_t nnodes, ngpus, interval_ms, settle_ms, launches_wanted, ramp_timeout_s, seed;
    struct phase phases[MAX_PHASES];
    uint32_t nphases, phase;
    enum stage stage;
    bool with_gpus; /* the mode heartbeats are sent in now */
    struct node *nodes;
    uint32_t next_connect, connecting, registered, launches, signals;
    bool exit_at_once;         /* tasks end as soon as they start */
    uint64_t exits, exit_acks; /* TaskExits sent, and acknowledged by gschedd */
    uint64_t heartbeats_sent, errors, next_pid;
    uint64_t hb_start_ms, hb_issued; /* heartbeat k is due at start + k * interval / N */
    uint64_t t0_ms, begin_ms, begin_heartbeats, begin_errors;
    uv_timer_t hb_timer, stage_timer;
    uv_signal_t sigint, sigterm;
    struct hb_scratch hb;
    struct gs_proto_auth_key key; /* len 0: connections without the cluster key */
    int rc;
};

static uint32_t xorshift(uint32_t *state)
{
    uint32_t x = *state;

    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return x;
}

static double seconds_since(uint64_t from_ms)
{
    return (double)(gs_clock_mono_ms() - from_ms) / 1000.0;
}

static void stop(struct load *l, int rc);
static void connect_more(struct load *l);
static void start_phase(struct load *l);
static void on_hb_timer(uv_timer_t *timer);

/* --- registration ----------------------------------------------------------------------- */

/*
 * Everything a NodeRegister points to, on the sender's stack (packed before it returns)
 * except the link pairs, which grow with G squared.
 */
struct reg_scratch {
    Gs__Gpu gpus[MAX_GPUS];
    Gs__Gpu *gpu_ptrs[MAX_GPUS];
    char uuid[MAX_GPUS][48];
    char bus_id[MAX_GPUS][16];
    Gs__NumaNode numa[2];
    Gs__NumaNode *numa_ptrs[2];
    uint32_t cores[NODE_CORES];
    char *features[2];
    Gs__GpuLink *links;
    Gs__GpuLink **link_ptrs;
};

static void fill_gpu(const struct load *l, const struct node *n, uint32_t g, struct reg_scratch *r)
{
    Gs__Gpu *gpu = &r->gpus[g];

    gs__gpu__init(gpu);
    snprintf(r->uuid[g], sizeof(r->uuid[g]), "GPU-%08x-0000-4000-8000-%012x", n->index, g);
    snprintf(r->bus_id[g], sizeof(r->bus_id[g]), "0000:%02x:00.0", (g + 1) * 0x10 % 0x100);
    gpu->index = g;
    gpu->uuid = r->uuid[g];
    gpu->model = "NVIDIA H100 80GB HBM3";
    gpu->pci_bus_id = r->bus_id[g];
    gpu->numa_node = (int32_t)(g * 2 / l->ngpus);
    gpu->socket = gpu->numa_node;
    gpu->memory_mib = GPU_MEMORY_MIB;
    gpu->nearest_nic = -1;
    r->gpu_ptrs[g] = gpu;
}

/* GPU pairs, a < b, all NVLink (an NVSwitch system): G * (G - 1) / 2 of them. */
static size_t fill_links(uint32_t ngpus, struct reg_scratch *r)
{
    size_t k = 0;

    for (uint32_t a = 0; a < ngpus; a++) {
        for (uint32_t b = a + 1; b < ngpus; b++, k++) {
            gs__gpu_link__init(&r->links[k]);
            r->links[k].gpu_a = a;
            r->links[k].gpu_b = b;
            r->links[k].type = GS__LINK_TYPE__LINK_TYPE_NVLINK;
            r->links[k].nvlink_count = 18;
            r->link_ptrs[k] = &r->links[k];
        }
    }
    return k;
}

/* Two sockets, one NUMA node each, half the cores and memory in each. */
static void fill_numa(struct reg_scratch *r)
{
    for (uint32_t c = 0; c < NODE_CORES; c++)
        r->cores[c] = c;
    for (uint32_t i = 0; i < 2; i++) {
        gs__numa_node__init(&r->numa[i]);
        r->numa[i].os_index = i;
        r->numa[i].socket = i;
        r->numa[i].memory_mib = NODE_MEMORY_MIB / 2;
        r->numa[i].cores = &r->cores[i * NODE_CORES / 2];
        r->numa[i].n_cores = NODE_CORES / 2;
        r->numa_ptrs[i] = &r->numa[i];
    }
}

static void fill_topology(const struct load *l, const struct node *n, struct reg_scratch *r,
                          Gs__NodeTopology *topo)
{
    for (uint32_t g = 0; g < l->ngpus; g++)
        fill_gpu(l, n, g, r);
    fill_numa(r);
    r->features[0] = "h100";
    r->features[1] = "nvlink";
    topo->node_name = topo->hostname = (char *)n->name;
    topo->address = "127.0.0.1";
    topo->sockets = 2;
    topo->cores = NODE_CORES;
    topo->threads = 2 * NODE_CORES;
    topo->memory_mib = NODE_MEMORY_MIB;
    topo->n_numa_nodes = 2;
    topo->numa_nodes = r->numa_ptrs;
    topo->n_features = 2;
    topo->features = r->features;
    topo->n_gpus = l->ngpus;
    topo->gpus = r->gpu_ptrs;
    topo->n_gpu_links = fill_links(l->ngpus, r);
    topo->gpu_links = r->link_ptrs;
}

static int send_register(struct node *n)
{
    size_t npairs = (size_t)n->l->ngpus * n->l->ngpus / 2 + 1;
    struct reg_scratch r = {.links = calloc(npairs, sizeof(*r.links)),
                            .link_ptrs = calloc(npairs, sizeof(*r.link_ptrs))};
    Gs__NodeTopology topo = GS__NODE_TOPOLOGY__INIT;
    Gs__NodeRegister reg = GS__NODE_REGISTER__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    int rc = -ENOMEM;

    if (r.links == NULL || r.link_ptrs == NULL)
        goto out;
    fill_topology(n->l, n, &r, &topo);
    reg.topology = &topo;
    reg.worker_start_ms = gs_clock_wall_ms();
    env.body_case = GS__ENVELOPE__BODY_NODE_REGISTER;
    env.node_register = &reg;
    rc = gs_proto_conn_send(n->conn, &env);
out:
    free(r.links);
    free(r.link_ptrs);
    return rc;
}

static void on_registered(struct node *n, const Gs__NodeRegisterReply *reply)
{
    struct load *l = n->l;

    if (n->registered)
        return;
    if (!reply->accepted) { /* on_close counts it and connects the next */
        fprintf(stderr, "tel_load: %s refused: %s\n", n->name, reply->reason);
        gs_proto_conn_close(n->conn);
        return;
    }
    l->connecting--;
    n->registered = true;
    if (++l->registered < l->nnodes) {
        connect_more(l);
        return;
    }
    printf("nodes_registered=%u ramp_s=%.3f\n", l->registered, seconds_since(l->t0_ms));
    l->stage = STAGE_LAUNCHES;
    l->with_gpus = l->phases[0].with_gpus;
    l->hb_start_ms = gs_clock_mono_ms();
    uv_timer_start(&l->hb_timer, on_hb_timer, 0, 0);
    if (l->launches >= l->launches_wanted)
        start_phase(l);
}

/* --- jobs --------------------------------------------------------------------------------- */

static int add_task(struct node *n, const Gs__LaunchTasks *lt, const Gs__TaskAssignment *a,
                    uint32_t pid)
{
    struct task *t;

    if (n->ntasks == MAX_TASKS)
        return -ENOSPC;
    t = &n->tasks[n->ntasks++];
    *t = (struct task){.job_id = lt->job_id,
                       .rank = a->rank,
                       .attempt = lt->attempt,
                       .step = lt->step,
                       .pid = pid,
                       .start_ms = gs_clock_wall_ms()};
    for (size_t i = 0; i < a->n_gpus; i++) {
        if (a->gpus[i] < n->l->ngpus) {
            n->gpu_job[a->gpus[i]] = lt->job_id;
            n->gpu_pid[a->gpus[i]] = pid;
        }
    }
    return 0;
}

/* The task ended by itself with exit code 0, as a worker reports it (worker/worker.c). */
static void send_exit(struct node *n, const Gs__LaunchTasks *lt, const Gs__TaskAssignment *a,
                      uint64_t start_ms)
{
    Gs__TaskExit ex = GS__TASK_EXIT__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    ex.job_id = lt->job_id;
    ex.rank = a->rank;
    ex.node_name = n->name;
    ex.exit_code = 0;
    ex.end_reason = GS__END_REASON__END_REASON_NONE;
    ex.start_time_ms = start_ms;
    ex.end_time_ms = gs_clock_wall_ms();
    ex.attempt = lt->attempt;
    ex.step = lt->step;
    env.body_case = GS__ENVELOPE__BODY_TASK_EXIT;
    env.task_exit = &ex;
    if (gs_proto_conn_send(n->conn, &env) < 0)
        n->l->errors++;
    else
        n->l->exits++;
}

/* gschedd has stored these exits: a worker forgets them now; here they are only counted. */
static void on_exit_ack(struct node *n, const Gs__TaskExitAck *ack)
{
    n->l->exit_acks += ack->n_tasks;
}

/* Every rank started, as a worker whose fork and exec went well answers. */
static void on_launch(struct node *n, const Gs__LaunchTasks *lt, uint64_t request_id)
{
    struct load *l = n->l;
    Gs__TaskLaunchResult *res = calloc(lt->n_tasks + 1, sizeof(*res));
    Gs__TaskLaunchResult **ptrs = calloc(lt->n_tasks + 1, sizeof(*ptrs));
    Gs__LaunchTasksReply reply = GS__LAUNCH_TASKS_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    uint64_t start_ms = gs_clock_wall_ms();

    if (res == NULL || ptrs == NULL)
        goto out;
    for (size_t i = 0; i < lt->n_tasks; i++) {
        gs__task_launch_result__init(&res[i]);
        res[i].rank = lt->tasks[i]->rank;
        res[i].pid = (int32_t)(l->next_pid++);
        if (!l->exit_at_once && add_task(n, lt, lt->tasks[i], (uint32_t)res[i].pid) < 0)
            res[i].code = -EAGAIN;
        ptrs[i] = &res[i];
    }
    reply.job_id = lt->job_id;
    reply.attempt = lt->attempt;
    reply.n_results = lt->n_tasks;
    reply.results = ptrs;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_LAUNCH_TASKS_REPLY;
    env.launch_tasks_reply = &reply;
    if (gs_proto_conn_send(n->conn, &env) < 0)
        l->errors++;
    for (size_t i = 0; l->exit_at_once && i < lt->n_tasks; i++)
        send_exit(n, lt, lt->tasks[i], start_ms);
    if (++l->launches == l->launches_wanted && l->stage == STAGE_LAUNCHES)
        start_phase(l);
out:
    free(res);
    free(ptrs);
}

/* --- the connection ----------------------------------------------------------------------- */

static void on_message(struct gs_proto_conn *conn, const Gs__Envelope *env, void *data)
{
    struct node *n = data;

    (void)conn;
    switch (env->body_case) {
    case GS__ENVELOPE__BODY_NODE_REGISTER_REPLY:
        on_registered(n, env->node_register_reply);
        break;
    case GS__ENVELOPE__BODY_LAUNCH_TASKS:
        on_launch(n, env->launch_tasks, env->request_id);
        break;
    case GS__ENVELOPE__BODY_SIGNAL_TASKS:
        n->l->signals++;
        break;
    case GS__ENVELOPE__BODY_TASK_EXIT_ACK:
        on_exit_ack(n, env->task_exit_ack);
        break;
    default:
        break;
    }
}

static void on_ready(struct gs_proto_conn *conn, const Gs__Hello *peer, void *data)
{
    struct node *n = data;

    (void)peer;
    if (send_register(n) < 0) {
        n->l->errors++;
        gs_proto_conn_close(conn);
    }
}

static void on_close(struct gs_proto_conn *conn, int status, void *data)
{
    struct node *n = data;
    struct load *l = n->l;

    (void)conn;
    n->conn = NULL;
    if (l->stage == STAGE_DONE)
        return;
    fprintf(stderr, "tel_load: %s closed: %s\n", n->name, gs_proto_reason(status));
    l->errors++;
    if (!n->registered) {
        l->connecting--;
        connect_more(l);
    }
    n->registered = false;
}

static void on_connect(uv_connect_t *req, int status)
{
    struct node *n = req->data;

    if (status < 0 || gs_proto_conn_start(n->conn) < 0)
        gs_proto_conn_close(n->conn);
}

static void start_node(struct load *l, struct node *n)
{
    struct gs_proto_conn_opts opts = {.role = GS__ROLE__ROLE_WORKER,
                                      .name = n->name,
                                      .accept_roles = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_SCHEDULER),
                                      .handshake_timeout_ms = 60000,
                                      .close_timeout_ms = 1000,
                                      .on_ready = on_ready,
                                      .on_message = on_message,
                                      .on_close = on_close,
                                      .auth_key = &l->key,
                                      .data = n};

    l->connecting++;
    n->conn = gs_proto_conn_new(&l->loop, GS_PROTO_TCP, &opts);
    if (n->conn == NULL) {
        l->connecting--;
        l->errors++;
        return;
    }
    n->connect.data = n;
    if (uv_tcp_connect(&n->connect, (uv_tcp_t *)gs_proto_conn_stream(n->conn),
                       (const struct sockaddr *)&l->addr, on_connect) < 0)
        gs_proto_conn_close(n->conn);
}

static void connect_more(struct load *l)
{
    while (l->stage == STAGE_RAMP && l->next_connect < l->nnodes && l->connecting < MAX_CONNECTING)
        start_node(l, &l->nodes[l->next_connect++]);
    if (l->stage == STAGE_RAMP && l->next_connect == l->nnodes && l->connecting == 0 &&
        l->registered < l->nnodes)
        stop(l, 1); /* some never registered: nothing left to wait for */
}

/* --- heartbeats --------------------------------------------------------------------------- */

/* One sample of a GPU: busy when a task holds it, else idle at the clock's floor. */
static void fill_stats(struct node *n, uint32_t g, Gs__GpuStats *st, Gs__GpuProcess *proc,
                       Gs__GpuProcess **proc_ptr)
{
    uint32_t r = xorshift(&n->rng);
    bool busy = n->gpu_job[g] != 0;
    uint32_t util = busy ? 35 + r % 66 : 0;

    gs__gpu_stats__init(st);
    st->index = g;
    st->samples = 1;
    st->utilization_pct = util;
    st->utilization_max_pct = busy ? util + (r >> 8) % (101 - util) : 0;
    st->memory_util_pct = util * 2 / 3;
    st->memory_total_mib = GPU_MEMORY_MIB;
    st->memory_used_mib = busy ? 20000 + (r >> 12) % 60000 : (r >> 12) % 600;
    st->memory_used_max_mib = st->memory_used_mib + (r >> 20) % 512;
    st->power_w = 70 + util * 6 + (r >> 4) % 40;
    st->temperature_c = (int32_t)(30 + util / 2 + (r >> 16) % 8);
    st->sm_clock_mhz = busy ? 1980 : 345;
    if (!busy)
        return;
    gs__gpu_process__init(proc);
    proc->pid = n->gpu_pid[g];
    proc->memory_mib = st->memory_used_mib - 512;
    proc->job_id = n->gpu_job[g];
    *proc_ptr = proc;
    st->processes = proc_ptr;
    st->n_processes = 1;
}

static void fill_tasks(struct node *n, Gs__Heartbeat *hb, struct hb_scratch *s, bool with)
{
    for (uint32_t i = 0; i < n->ntasks; i++) {
        struct task *t = &n->tasks[i];
        Gs__TaskRef *ref = &s->refs[i];

        gs__task_ref__init(ref);
        ref->job_id = t->job_id;
        ref->rank = t->rank;
        ref->pid = (int32_t)t->pid;
        ref->start_time_ms = t->start_ms;
        ref->attempt = t->attempt;
        ref->step = t->step;
        if (with) {
            t->cpu_time_ms += n->l->interval_ms * (2 + xorshift(&n->rng) % 6);
            ref->cpu_time_ms = t->cpu_time_ms;
            ref->rss_mib = 8000 + xorshift(&n->rng) % 8000;
        }
        s->ref_ptrs[i] = ref;
    }
    hb->running = s->ref_ptrs;
    hb->n_running = n->ntasks;
}

static void fill_node_figures(struct node *n, Gs__Heartbeat *hb, struct hb_scratch *s)
{
    uint32_t r = xorshift(&n->rng);

    hb->nvml = true;
    hb->cpu_util_pct = 5 + r % 90;
    hb->memory_total_mib = NODE_MEMORY_MIB;
    hb->memory_used_mib = 64 * 1024 + (r >> 8) % (512 * 1024);
    hb->load_avg_x100 = (r >> 4) % (NODE_CORES * 100);
    for (uint32_t g = 0; g < n->l->ngpus; g++) {
        fill_stats(n, g, &s->stats[g], &s->procs[g], &s->proc_ptrs[g]);
        s->stat_ptrs[g] = &s->stats[g];
    }
    hb->gpus = s->stat_ptrs;
    hb->n_gpus = n->l->ngpus;
}

static void send_heartbeat(struct load *l, struct node *n)
{
    Gs__Heartbeat hb = GS__HEARTBEAT__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    if (!n->registered)
        return;
    hb.node_name = n->name;
    hb.seq = ++n->seq;
    hb.sent_at_ms = gs_clock_wall_ms();
    fill_tasks(n, &hb, &l->hb, l->with_gpus);
    if (l->with_gpus)
        fill_node_figures(n, &hb, &l->hb);
    env.body_case = GS__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    if (gs_proto_conn_send(n->conn, &env) < 0)
        l->errors++;
    else
        l->heartbeats_sent++;
}

static uint64_t due_ms(const struct load *l, uint64_t k)
{
    return l->hb_start_ms + k * l->interval_ms / l->nnodes;
}

/* Sends every heartbeat whose time has come, then sleeps until the next one's. */
static void on_hb_timer(uv_timer_t *timer)
{
    struct load *l = timer->data;
    uint64_t now = gs_clock_mono_ms();

    while (due_ms(l, l->hb_issued) <= now) {
        send_heartbeat(l, &l->nodes[l->hb_issued % l->nnodes]);
        l->hb_issued++;
    }
    uv_timer_start(timer, on_hb_timer, due_ms(l, l->hb_issued) - now, 0);
}

/* --- phases ------------------------------------------------------------------------------- */

static const char *mode_name(bool with_gpus)
{
    return with_gpus ? "with" : "without";
}

static void on_phase_end(uv_timer_t *timer)
{
    struct load *l = timer->data;

    printf("phase=%u mode=%s end heartbeats_sent=%llu elapsed_s=%.3f errors=%llu\n", l->phase + 1,
           mode_name(l->with_gpus), (unsigned long long)(l->heartbeats_sent - l->begin_heartbeats),
           seconds_since(l->begin_ms), (unsigned long long)(l->errors - l->begin_errors));
    if (++l->phase == l->nphases)
        stop(l, l->errors > 0);
    else
        start_phase(l);
}

static void on_settled(uv_timer_t *timer)
{
    struct load *l = timer->data;

    l->stage = STAGE_MEASURE;
    printf("phase=%u mode=%s begin\n", l->phase + 1, mode_name(l->with_gpus));
    l->begin_ms = gs_clock_mono_ms();
    l->begin_heartbeats = l->heartbeats_sent;
    l->begin_errors = l->errors;
    uv_timer_start(&l->stage_timer, on_phase_end, l->phases[l->phase].seconds * 1000ull, 0);
}

static void start_phase(struct load *l)
{
    if (l->phase == 0)
        printf("launches=%u\n", l->launches);
    l->stage = STAGE_SETTLE;
    l->with_gpus = l->phases[l->phase].with_gpus;
    uv_timer_start(&l->stage_timer, on_settled, l->settle_ms, 0);
}

static void on_ramp_timeout(uv_timer_t *timer)
{
    struct load *l = timer->data;

    fprintf(stderr, "tel_load: ramp-up timed out: %u of %u nodes registered, %u of %u launches\n",
            l->registered, l->nnodes, l->launches, l->launches_wanted);
    stop(l, 1);
}

static void on_signal(uv_signal_t *sig, int signum)
{
    (void)signum;
    stop(sig->data, 1);
}

static void stop(struct load *l, int rc)
{
    if (l->stage == STAGE_DONE)
        return;
    l->stage = STAGE_DONE;
    l->rc = rc;
    for (uint32_t i = 0; i < l->nnodes; i++) {
        if (l->nodes[i].conn != NULL)
            gs_proto_conn_close(l->nodes[i].conn);
    }
    uv_close((uv_handle_t *)&l->hb_timer, NULL);
    uv_close((uv_handle_t *)&l->stage_timer, NULL);
    uv_close((uv_handle_t *)&l->sigint, NULL);
    uv_close((uv_handle_t *)&l->sigterm, NULL);
}

/* --- options ------------------------------------------------------------------------------ */

/* "without:25,with:25,..."; a phase without ":S" lasts default_s. */
static int parse_phases(struct load *l, const char *text, uint32_t default_s)
{
    char copy[512], *save = NULL;

    if (strlen(text) >= sizeof(copy))
        return -EINVAL;
    strcpy(copy, text);
    l->nphases = 0;
    for (char *p = strtok_r(copy, ",", &save); p != NULL; p = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(p, ':');
        struct phase *ph = &l->phases[l->nphases];

        if (l->nphases == MAX_PHASES)
            return -EINVAL;
        ph->seconds = colon != NULL ? (uint32_t)strtoul(colon + 1, NULL, 10) : default_s;
        if (colon != NULL)
            *colon = '\0';
        if (strcmp(p, "with") != 0 && strcmp(p, "without") != 0)
            return -EINVAL;
        ph->with_gpus = strcmp(p, "with") == 0;
        l->nphases++;
    }
    return l->nphases > 0 ? 0 : -EINVAL;
}

static int parse_args(struct load *l, int argc, char **argv)
{
    const char *host = "127.0.0.1", *phases = "with", *key = NULL;
    uint32_t port = 0, seconds = 20;
    const struct {
        const char *name;
        uint32_t *value;
    } numbers[] = {{"--port", &port},
                   {"-n", &l->nnodes},
                   {"-g", &l->ngpus},
                   {"--seconds", &seconds},
                   {"--interval-ms", &l->interval_ms},
                   {"--settle-ms", &l->settle_ms},
                   {"--launches", &l->launches_wanted},
                   {"--ramp-timeout-s", &l->ramp_timeout_s},
                   {"--seed", &l->seed}};

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t k = 0;

        if (strcmp(a, "--with-gpus") == 0 || strcmp(a, "--without-gpus") == 0) {
            phases = strcmp(a, "--with-gpus") == 0 ? "with" : "without";
            continue;
        }
        if (strcmp(a, "--exit-at-once") == 0) {
            l->exit_at_once = true;
            continue;
        }
        if (v == NULL)
            return -EINVAL;
        i++;
        if (strcmp(a, "--host") == 0 || strcmp(a, "--phases") == 0 || strcmp(a, "--key") == 0) {
            *(strcmp(a, "--host") == 0 ? &host : strcmp(a, "--key") == 0 ? &key : &phases) = v;
            continue;
        }
        while (k < sizeof(numbers) / sizeof(numbers[0]) && strcmp(a, numbers[k].name) != 0)
            k++;
        if (k == sizeof(numbers) / sizeof(numbers[0]))
            return -EINVAL;
        *numbers[k].value = (uint32_t)strtoul(v, NULL, 10);
    }
    if (port == 0 || port > 65535 || l->nnodes == 0 || l->nnodes > MAX_NODES || l->ngpus == 0 ||
        l->ngpus > MAX_GPUS || l->interval_ms == 0 || uv_ip4_addr(host, (int)port, &l->addr) < 0)
        return -EINVAL;
    if (key != NULL) {
        struct gs_buf why = GS_BUF_INIT;
        int rc = gs_proto_auth_key_load(key, &l->key, &why);

        if (rc < 0)
            fprintf(stderr, "tel_load: --key %s\n", why.data != NULL ? why.data : "");
        gs_buf_release(&why);
        if (rc < 0)
            return rc;
    }
    return parse_phases(l, phases, seconds);
}

static const char usage[] =
    "usage: tel_load [--host IPV4] --port P [-n NODES] [-g GPUS] [--interval-ms MS]\n"
    "                [--phases MODE[:S],...] [--seconds S] [--with-gpus | --without-gpus]\n"
    "                [--settle-ms MS] [--launches K] [--ramp-timeout-s S] [--seed N]\n"
    "                [--key FILE] [--exit-at-once]\n"
    "  MODE is with (GPU telemetry in every heartbeat) or without (none)\n"
    "  --exit-at-once: every task ends (exit code 0) as soon as it starts\n";

static int init_nodes(struct load *l)
{
    l->nodes = calloc(l->nnodes, sizeof(*l->nodes));
    if (l->nodes == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < l->nnodes; i++) {
        struct node *n = &l->nodes[i];

        n->l = l;
        n->index = i;
        n->rng = (l->seed * 2654435761u) ^ (i + 1) * 40503u;
        if (n->rng == 0)
            n->rng = 1;
        snprintf(n->name, sizeof(n->name), "sim%04u", i + 1);
    }
    return 0;
}

static void init_loop(struct load *l)
{
    uv_loop_init(&l->loop);
    uv_timer_init(&l->loop, &l->hb_timer);
    uv_timer_init(&l->loop, &l->stage_timer);
    uv_signal_init(&l->loop, &l->sigint);
    uv_signal_init(&l->loop, &l->sigterm);
    l->hb_timer.data = l->stage_timer.data = l->sigint.data = l->sigterm.data = l;
    uv_signal_start(&l->sigint, on_signal, SIGINT);
    uv_signal_start(&l->sigterm, on_signal, SIGTERM);
    uv_timer_start(&l->stage_timer, on_ramp_timeout, l->ramp_timeout_s * 1000ull, 0);
}

int main(int argc, char **argv)
{
    struct load l = {.nnodes = 1000,
                     .ngpus = 8,
                     .interval_ms = 1000,
                     .settle_ms = 3000,
                     .ramp_timeout_s = 300,
                     .seed = 1,
                     .next_pid = 100000};

    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    gs_log_setup("tel_load", GS_LOG_ERROR, 2);
    if (parse_args(&l, argc, argv) < 0) {
        fputs(usage, stderr);
        return 2;
    }
    if (init_nodes(&l) < 0)
        return 1;
    init_loop(&l);
    l.t0_ms = gs_clock_mono_ms();
    connect_more(&l);
    uv_run(&l.loop, UV_RUN_DEFAULT);
    printf("nodes_registered=%u heartbeats_sent=%llu elapsed_s=%.3f errors=%llu launches=%u "
           "signals=%u exits=%llu exit_acks=%llu\n",
           l.registered, (unsigned long long)l.heartbeats_sent, seconds_since(l.t0_ms),
           (unsigned long long)l.errors, l.launches, l.signals, (unsigned long long)l.exits,
           (unsigned long long)l.exit_acks);
    if (uv_loop_close(&l.loop) != 0)
        l.rc = 1;
    free(l.nodes);
    return l.registered == l.nnodes ? l.rc : 1;
}
