/*
 * test_worker.c: gsched-workerd's core against a fake scheduler on loopback TCP, on a
 * private loop: it registers its topology, heartbeats, runs the tasks it is given with the
 * right environment and files, reports exits (and launch failures) until acknowledged (an
 * unacknowledged one, from its exits file, by the next worker too: suite worker_ledger),
 * refuses launches with no user or as root unless allowed (suite worker_no_root),
 * survives losing the scheduler with its tasks still running, obeys SignalTasks and
 * JobLimitUpdate (a running job's new time limit, from its start; another attempt's is
 * ignored), and answers log reads under their request ids, each read on a thread of its own
 * (suite worker_log_reads, reads held at a gate as a hung filesystem would hold them:
 * heartbeats, libuv's pool and later reads go on while reads hang, up to 64 of them; an
 * answer goes only to the link it was asked on; a hung read does not hold the worker's
 * stop, and one in flight then is freed). Binding: on a fake topology (suite
 * worker) tasks run unbound with one warning per worker; on this machine's own topology with
 * synthetic GPUs (suite worker_on_this_machine) each task runs on its cores' PUs, prefers
 * their NUMA node and is pointed at its GPU's NIC, as the show_binding helper reads back.
 * Slurm (suite worker): a batch script runs as itself under its own "#!" line (or /bin/sh)
 * from a private file that goes with the task, with its arguments and the batch shell's
 * environment; srun steps run next to it under the same ranks, their output arriving as
 * StepOutput chunks whose end comes before the TaskExit, and with srun's output window
 * the output srun has not acknowledged kept, also while the worker has no scheduler and
 * after the step's tasks ended until their exits are acknowledged, and sent again from
 * where StepOutputResume (or an acknowledgement asking for it) says;
 * SignalTasks picks steps, all
 * steps or the batch shell alone; the --signal warning reaches the batch shell or the
 * steps as sbatch's B: says. Telemetry (suite worker_telemetry, the fake NVML scripted as
 * in test_telemetry.c): heartbeats carry every GPU's figures and the running task's CPU time.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "proto/conn.h"
#include "refuse_mempolicy.h"
#include "telemetry_helpers.h"
#include "sharding/cache.h"
#include "tests/loop_wait.h"
#include "tests/sharding/dataset.h"
#include "worker/worker.h"

#define MAX_EXITS 8

static uv_loop_t loop;
static uv_tcp_t server;
static struct gs_proto_conn *sched_conn;
static struct wrk_ctx *worker;
static struct gs_topo *topo;
static char dir[64];
static bool ack_exits, stopped;
static int registers, heartbeats, replies, nexits, last_running_reported, last_unacked_reported;
static Gs__TaskExit exits[MAX_EXITS];
static char exit_errors[MAX_EXITS][256], exit_nodes[MAX_EXITS][64];
static int32_t last_result_code;
static int log_replies, errors;
static uint64_t last_request_id;
static Gs__LogsReply last_logs; /* scalars only; its strings are copied below */
static char last_logs_data[64], last_logs_node[64], last_error[256];
static int32_t last_error_code;
static int log_fd = -1;
static uint64_t telemetry_ms;          /* the worker's sampling; 0: none */
static bool with_data;                 /* the worker keeps a shard cache in DIR/cache, */
static uint64_t data_rate;             /* copying at this many bytes a second (0: no limit) */
static uint32_t data_stall_s;          /* worker.data_stall (0: the default) */
static void (*copy_gate)(void *data);  /* wrk_opts.data_copy_gate */
static Gs__JobLaunchData *launch_data; /* the next launches' dataset part; NULL: none */
static char last_result_message[512];
static char data_dir[160];
static int telemetry_beats; /* heartbeats with GPU 2's scripted figures and task CPU time */
/* StepOutput by rank and stream: the bytes, the eofs, and the eofs seen by each exit. */
static char step_out[4][2][512];
static size_t step_out_len[4][2];
static uint64_t step_last_end; /* the latest StepOutput.end */
static bool hold_registration; /* a NodeRegister is not answered */
static int step_eofs[4][2], step_outputs, eofs_before_exit[MAX_EXITS];

static void send_env(Gs__Envelope *env)
{
    cr_assert_not_null(sched_conn, "worker not connected");
    cr_assert_eq(gs_proto_conn_send(sched_conn, env), 0);
}

static void reply_register(void)
{
    Gs__NodeRegisterReply reply = GS__NODE_REGISTER_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    reply.accepted = true;
    reply.heartbeat_interval_ms = 30;
    env.body_case = GS__ENVELOPE__BODY_NODE_REGISTER_REPLY;
    env.node_register_reply = &reply;
    send_env(&env);
}

static void ack(const Gs__TaskExit *ex)
{
    Gs__TaskRef ref = GS__TASK_REF__INIT, *refs[] = {&ref};
    Gs__TaskExitAck msg = GS__TASK_EXIT_ACK__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    ref.job_id = ex->job_id;
    ref.step = ex->step;
    ref.rank = ex->rank;
    ref.attempt = ex->attempt;
    msg.n_tasks = 1;
    msg.tasks = refs;
    env.body_case = GS__ENVELOPE__BODY_TASK_EXIT_ACK;
    env.task_exit_ack = &msg;
    send_env(&env);
}

/* GPU 2's figures as the worker_telemetry suite scripts them, and CPU time of its task. */
static bool has_telemetry(const Gs__Heartbeat *hb)
{
    const Gs__GpuStats *g = hb->n_gpus == 4 ? hb->gpus[2] : NULL;

    if (telemetry_ms == 0) {
        cr_assert_not(hb->nvml);
        cr_assert_eq(hb->n_gpus, 0);
        cr_assert_eq(hb->memory_total_mib, 0, "no figures without telemetry");
        return false;
    }
    return hb->nvml && hb->memory_total_mib > 0 && g != NULL && g->index == 2 && g->samples > 0 &&
           g->utilization_pct == 66 && g->memory_total_mib == 1000 && hb->n_running == 1 &&
           hb->running[0]->cpu_time_ms > 0;
}

static void on_sched_message(struct gs_proto_conn *c, const Gs__Envelope *env, void *data)
{
    (void)c;
    (void)data;
    switch (env->body_case) {
    case GS__ENVELOPE__BODY_NODE_REGISTER:
        registers++;
        cr_assert_str_eq(env->node_register->topology->node_name, "node1");
        cr_assert_eq(env->node_register->topology->n_gpus, (size_t)gs_topo_ngpus(topo));
        last_running_reported = (int)env->node_register->n_running;
        last_unacked_reported = (int)env->node_register->n_unacked_exits;
        if (!hold_registration) /* else the test answers it itself */
            reply_register();
        break;
    case GS__ENVELOPE__BODY_HEARTBEAT:
        heartbeats++;
        if (has_telemetry(env->heartbeat))
            telemetry_beats++;
        break;
    case GS__ENVELOPE__BODY_LAUNCH_TASKS_REPLY:
        replies++;
        last_result_code = env->launch_tasks_reply->results[0]->code;
        snprintf(last_result_message, sizeof(last_result_message), "%s",
                 env->launch_tasks_reply->results[0]->message);
        break;
    case GS__ENVELOPE__BODY_TASK_EXIT:
        cr_assert_lt(nexits, MAX_EXITS);
        exits[nexits] = *env->task_exit;
        /* The envelope is freed after this callback: keep copies of its strings. */
        snprintf(exit_errors[nexits], sizeof(exit_errors[0]), "%s", env->task_exit->launch_error);
        snprintf(exit_nodes[nexits], sizeof(exit_nodes[0]), "%s", env->task_exit->node_name);
        exits[nexits].launch_error = exits[nexits].node_name = NULL;
        if (env->task_exit->rank < 4)
            eofs_before_exit[nexits] =
                step_eofs[env->task_exit->rank][0] + step_eofs[env->task_exit->rank][1];
        if (ack_exits)
            ack(env->task_exit);
        nexits++;
        break;
    case GS__ENVELOPE__BODY_LOGS_REPLY:
        log_replies++;
        last_request_id = env->request_id;
        last_logs = *env->logs_reply;
        snprintf(last_logs_data, sizeof(last_logs_data), "%.*s", (int)env->logs_reply->data.len,
                 (const char *)env->logs_reply->data.data);
        snprintf(last_logs_node, sizeof(last_logs_node), "%s", env->logs_reply->node_name);
        break;
    case GS__ENVELOPE__BODY_ERROR:
        errors++;
        last_request_id = env->request_id;
        last_error_code = env->error->code;
        snprintf(last_error, sizeof(last_error), "%s", env->error->message);
        break;
    case GS__ENVELOPE__BODY_STEP_OUTPUT: {
        const Gs__StepOutput *o = env->step_output;
        size_t *have;

        cr_assert_lt(o->rank, 4);
        cr_assert_lt((int)o->stream, 2);
        cr_assert_leq(o->data.len, 64 * 1024, "chunks are at most 64 KiB");
        cr_assert_geq(o->step, 1, "only steps' output is relayed");
        step_outputs++;
        if (o->eof) {
            step_eofs[o->rank][o->stream]++;
            break;
        }
        step_last_end = o->end;
        have = &step_out_len[o->rank][o->stream];
        cr_assert_lt(*have + o->data.len, sizeof(step_out[0][0]));
        memcpy(step_out[o->rank][o->stream] + *have, o->data.data, o->data.len);
        *have += o->data.len;
        break;
    }
    case GS__ENVELOPE__BODY_DATA_HOLDINGS:
        cr_assert(with_data, "holdings from a worker without a cache");
        break;
    default:
        cr_assert_fail("unexpected %s", gs_proto_body_name(env->body_case));
    }
}

static void on_sched_close(struct gs_proto_conn *c, int status, void *data)
{
    (void)status;
    (void)data;
    if (sched_conn == c)
        sched_conn = NULL;
}

static void on_worker_connection(uv_stream_t *srv, int status)
{
    struct gs_proto_conn_opts opts = {
        .role = GS__ROLE__ROLE_SCHEDULER,
        .name = "fake-gschedd",
        .accept_roles = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_WORKER),
        .on_message = on_sched_message,
        .on_close = on_sched_close,
    };

    cr_assert_eq(status, 0);
    sched_conn = gs_proto_conn_new(&loop, GS_PROTO_TCP, &opts);
    cr_assert_not_null(sched_conn);
    cr_assert_eq(uv_accept(srv, gs_proto_conn_stream(sched_conn)), 0);
    cr_assert_eq(gs_proto_conn_start(sched_conn), 0);
}

static bool allow_root = true; /* worker.allow_root_jobs of the worker under test */
static bool use_ledger;        /* the worker keeps DIR/node1.ledger (and its .exits) */
static char ledger_path[128];
static struct wrk_opts wopts;         /* what the worker under test was made with, for a restart */
static void (*read_gate)(void *data); /* wrk_opts.log_read_gate of the worker under test */
static char cg_parent[64];

/* Starts a worker on topts's topology, its warnings going to worker.log in the test's dir. */
static struct sockaddr_storage sched_addr; /* the fake scheduler's, which wopts points at */

static void start_worker(const struct gs_topo_opts *topts)
{
    struct sockaddr_storage *addr = &sched_addr;
    int len = sizeof(*addr);
    struct wrk_opts opts = {.node_name = "node1",
                            .address = "127.0.0.1",
                            .grace_ms = 200,
                            .telemetry_ms = telemetry_ms,
                            .synthetic_gpus = true,
                            .allow_root_jobs = allow_root, /* CI runs the tests as root */
                            .log_read_gate = read_gate};
    struct gs_error err;
    struct sockaddr_in bind_addr;
    char log_path[128];

    signal(SIGPIPE, SIG_IGN);
    snprintf(dir, sizeof(dir), "/tmp/gsched-worker-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(log_path, sizeof(log_path), "%s/worker.log", dir);
    log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    cr_assert_geq(log_fd, 0);
    gs_log_setup("test_worker", GS_LOG_WARN, log_fd);
    cr_assert_eq(uv_loop_init(&loop), 0);
    cr_assert_eq(gs_topo_load(topts, &topo, &err), 0, "%s", err.msg);
    uv_ip4_addr("127.0.0.1", 0, &bind_addr);
    cr_assert_eq(uv_tcp_init(&loop, &server), 0);
    cr_assert_eq(uv_tcp_bind(&server, (const struct sockaddr *)&bind_addr, 0), 0);
    cr_assert_eq(uv_listen((uv_stream_t *)&server, 8, on_worker_connection), 0);
    cr_assert_eq(uv_tcp_getsockname(&server, (struct sockaddr *)addr, &len), 0);
    opts.scheduler = (const struct sockaddr *)addr;
    opts.topo = topo;
    opts.script_dir = dir;
    snprintf(cg_parent, sizeof(cg_parent), "gsched-test/%s", strrchr(dir, '/') + 1);
    opts.cgroup_parent = cg_parent; /* apart from the other tests' node1 */
    if (use_ledger) {
        snprintf(ledger_path, sizeof(ledger_path), "%s/node1.ledger", dir);
        opts.ledger_path = ledger_path;
    }
    if (with_data) {
        snprintf(data_dir, sizeof(data_dir), "%s/cache", dir);
        opts.data_dir = data_dir;
        opts.data_rate_bytes = data_rate;
        opts.data_stall_s = data_stall_s;
        opts.data_copy_gate = copy_gate;
    }
    wopts = opts;
    memset(step_out, 0, sizeof(step_out));
    memset(step_out_len, 0, sizeof(step_out_len));
    memset(step_eofs, 0, sizeof(step_eofs));
    step_outputs = 0;
    worker = wrk_new(&loop, &opts, &err);
    cr_assert_not_null(worker, "%s", err.msg);
    cr_assert_eq(wrk_start(worker), 0);
    registers = heartbeats = replies = nexits = log_replies = errors = telemetry_beats = 0;
    ack_exits = true;
    stopped = false;
}

/* A fake 4-GPU node: its cores and NIC are another machine's, so nothing is bound. */
static void setup(void)
{
    struct gs_topo_opts topts = {.xml_path = GSCHED_TOPOLOGIES "/cpu-only.xml", .fake_gpus = 4};

    start_worker(&topts);
}

/* The fake node, refusing jobs of uid 0. */
static void setup_no_root(void)
{
    allow_root = false;
    setup();
}

/* This machine with two synthetic GPUs: its cores and NICs are real, so tasks are bound. */
static void setup_this_machine(void)
{
    struct gs_topo_opts topts = {.fake_gpus = 2};

    start_worker(&topts);
}

/* The fake node sampled every 10 ms, the fake NVML answering for its GPU 2 only. */
static void setup_telemetry(void)
{
    struct gs_topo_opts topts = {.xml_path = GSCHED_TOPOLOGIES "/cpu-only.xml", .fake_gpus = 4};

    script_create("count 4\ngpu 2 util=66 mem_used_mib=10 mem_total_mib=1000\n");
    telemetry_ms = 10;
    start_worker(&topts);
}

static void on_stopped(void *data)
{
    (void)data;
    stopped = true;
}

static void teardown(void)
{
    char cmd[128];

    if (!stopped) /* a test may have stopped it (and so freed it) already */
        wrk_stop(worker, on_stopped, NULL);
    if (sched_conn != NULL)
        gs_proto_conn_close(sched_conn);
    uv_close((uv_handle_t *)&server, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    /* Expectations, not assertions: the directory is still removed when one fails. A failure
     * here fails the test (tests/fini_guard.c). */
    cr_expect(stopped, "teardown: the worker never said it had stopped (something still held it)");
    cr_expect_eq(uv_loop_close(&loop), 0, "teardown: handles leaked");
    gs_topo_free(topo);
    gs_log_setup("test_worker", GS_LOG_WARN, 2);
    close(log_fd);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0, "teardown: the test's directory could not be removed");
}

TestSuite(worker, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(worker_on_this_machine, .init = setup_this_machine, .fini = teardown, .timeout = 60);
TestSuite(worker_no_root, .init = setup_no_root, .fini = teardown, .timeout = 60);

/* The fake node with its task ledger and exits file on disk. */
static void setup_ledger(void)
{
    use_ledger = true;
    setup();
}

TestSuite(worker_ledger, .init = setup_ledger, .fini = teardown, .timeout = 60);

static void teardown_telemetry(void)
{
    teardown();
    telemetry_ms = 0;
    script_remove();
}

TestSuite(worker_telemetry, .init = setup_telemetry, .fini = teardown_telemetry, .timeout = 60);

static void on_deadline(uv_timer_t *t)
{
    *(bool *)t->data = true;
}

/* Runs the loop until *counter >= want; fails after 10 s. */
static void run_until(int *counter, int want, const char *what)
{
    uv_timer_t deadline;
    bool expired = false;

    uv_timer_init(&loop, &deadline);
    deadline.data = &expired;
    uv_timer_start(&deadline, on_deadline, 10000, 0);
    while (*counter < want && !expired)
        uv_run(&loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&deadline, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    cr_assert_geq(*counter, want, "timed out waiting for %s", what);
}

/* Runs the loop until the worker has no unacknowledged exit; fails after 10 s. */
static void run_until_acked(void)
{
    uv_timer_t deadline;
    bool expired = false;

    uv_timer_init(&loop, &deadline);
    deadline.data = &expired;
    uv_timer_start(&deadline, on_deadline, 10000, 0);
    while (wrk_unacked_exits(worker) > 0 && !expired)
        uv_run(&loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&deadline, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    cr_assert_eq(wrk_unacked_exits(worker), 0, "acknowledged exits are forgotten");
}

/* Where launch_laid_out() puts task i: GPUs gpus[i] (ngpus of them) and, when ncores > 0,
 * cores i * ncores up to (i + 1) * ncores - 1. */
struct layout {
    uint32_t gpus[4][2];
    size_t ngpus;
    size_t ncores;
};

/* The user launch_laid_out names: this process's, unless a test says otherwise (no_user:
 * none at all). */
static uint32_t launch_uid;
static bool launch_uid_set, no_user;
static uint32_t launch_attempt = 1; /* the attempt launch_laid_out sends */

/* Sends a LaunchTasks for job_id with ntasks tasks on node1, laid out as given. */
static void launch_laid_out(uint64_t job_id, int ntasks, char **argv, size_t argc,
                            const char *script, const struct layout *layout)
{
    Gs__LaunchTasks msg = GS__LAUNCH_TASKS__INIT;
    Gs__UserIdentity user = GS__USER_IDENTITY__INIT;
    Gs__RunSpec run = GS__RUN_SPEC__INIT;
    Gs__NodeAllocation alloc = GS__NODE_ALLOCATION__INIT, *allocs[] = {&alloc};
    Gs__TaskAssignment tasks[4], *task_ptrs[4];
    Gs__LaunchTasks__EnvEntry e = GS__LAUNCH_TASKS__ENV_ENTRY__INIT, *envs[] = {&e};
    Gs__Envelope env = GS__ENVELOPE__INIT;
    struct layout l = *layout;
    uint32_t cores[4][4];

    cr_assert_leq(ntasks, 4);
    cr_assert_leq(l.ncores, 4);
    alloc.node_name = "node1";
    for (int i = 0; i < ntasks; i++) {
        gs__task_assignment__init(&tasks[i]);
        tasks[i].rank = (uint32_t)i;
        tasks[i].local_rank = (uint32_t)i;
        tasks[i].n_gpus = l.ngpus;
        tasks[i].gpus = l.gpus[i];
        for (size_t c = 0; c < l.ncores; c++)
            cores[i][c] = (uint32_t)(i * l.ncores + c);
        tasks[i].n_cores = l.ncores;
        tasks[i].cores = cores[i];
        task_ptrs[i] = &tasks[i];
    }
    run.n_argv = argc;
    run.argv = argv;
    run.script = (char *)(script != NULL ? script : "");
    run.workdir = dir;
    run.stdout_pattern = "out-%j-%t.txt";
    e.key = "FROM_JOB";
    e.value = "yes";
    msg.job_id = job_id;
    msg.job_name = "test";
    msg.attempt = launch_attempt;
    msg.n_allocation = 1;
    msg.allocation = allocs;
    msg.n_tasks = (size_t)ntasks;
    msg.tasks = task_ptrs;
    msg.world_size = (uint32_t)ntasks;
    msg.master_addr = "127.0.0.1";
    msg.master_port = 29500;
    msg.run = &run;
    msg.n_env = 1;
    msg.env = envs;
    msg.data = launch_data;
    if (launch_data != NULL) /* the shard plan's ranks by node */
        alloc.ntasks = (uint32_t)ntasks;
    user.uid = launch_uid_set ? launch_uid : (uint32_t)getuid();
    user.gid = (uint32_t)getgid();
    msg.user = no_user ? NULL : &user;
    env.request_id = job_id;
    env.body_case = GS__ENVELOPE__BODY_LAUNCH_TASKS;
    env.launch_tasks = &msg;
    send_env(&env);
}

/* Sends a LaunchTasks for job_id with ntasks tasks on node1, two fake GPUs each, no cores. */
static void launch(uint64_t job_id, int ntasks, char **argv, size_t argc, const char *script)
{
    static const struct layout two_gpus_each = {{{0, 1}, {2, 3}, {0, 1}, {2, 3}}, 2, 0};

    launch_laid_out(job_id, ntasks, argv, argc, script, &two_gpus_each);
}

static void slurp(const char *name, char *out, size_t size)
{
    char path[160];
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "r");
    cr_assert_not_null(f, "no %s", path);
    n = fread(out, 1, size - 1, f);
    out[n] = '\0';
    fclose(f);
}

Test(worker, registers_heartbeats_and_runs_tasks_with_their_environment)
{
    char out[256];

    run_until(&registers, 1, "registration");
    launch(5, 2, NULL, 0,
           "echo rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK gpus=$CUDA_VISIBLE_DEVICES "
           "master=$MASTER_ADDR:$MASTER_PORT job=$GSCHED_JOB_ID from_job=$FROM_JOB; exit $RANK");
    run_until(&nexits, 2, "two task exits");
    cr_assert_eq(replies, 1);
    cr_assert_eq(last_result_code, 0);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(exits[i].job_id, 5);
        cr_assert_eq(exits[i].attempt, 1);
        cr_assert_not(exits[i].signaled);
        cr_assert_eq(exits[i].exit_code, (int)exits[i].rank);
        cr_assert_str_eq(exit_nodes[i], "node1");
    }
    slurp("out-5-1.txt", out, sizeof(out));
    cr_assert_str_eq(out, "rank=1 world=2 local=1 gpus=2,3 master=127.0.0.1:29500 job=5 "
                          "from_job=yes\n");
    run_until(&heartbeats, 1, "a heartbeat");
    run_until_acked();
    cr_assert_eq(wrk_jobs_known(worker), 0, "a finished job is not kept");
}

Test(worker, launch_failure_is_reported_with_its_reason)
{
    char *argv[] = {"/no/such/program"};

    run_until(&registers, 1, "registration");
    launch(6, 1, argv, 1, NULL);
    run_until(&nexits, 1, "the failed task's exit");
    cr_assert_eq(replies, 1);
    /* Forked, so the reply says started; the exec failed in the child, which the exit says. */
    cr_assert_eq(last_result_code, 0);
    cr_assert_eq(exits[0].end_reason, GS__END_REASON__END_REASON_LAUNCH_FAILED);
    cr_assert_not_null(strstr(exit_errors[0], "/no/such/program"), "%s", exit_errors[0]);
    cr_assert_eq(wrk_jobs_known(worker), 0, "a job none of whose tasks started is not kept");
}

/* A worker runs nobody's tasks as root, nor tasks of nobody in particular. */
static void refused_launch(uint64_t job_id, const char *why)
{
    char *argv[] = {"/bin/true"};

    launch(job_id, 1, argv, 1, NULL);
    run_until(&nexits, 1, "the refused task's exit");
    cr_assert_eq(replies, 1);
    cr_assert_eq(last_result_code, -EPERM);
    cr_assert_eq(exits[0].end_reason, GS__END_REASON__END_REASON_LAUNCH_FAILED);
    cr_assert_not_null(strstr(exit_errors[0], why), "%s", exit_errors[0]);
}

Test(worker, a_launch_without_a_user_is_refused)
{
    run_until(&registers, 1, "registration");
    no_user = true;
    refused_launch(8, "names no user");
}

Test(worker_no_root, root_jobs_are_refused_unless_allowed)
{
    run_until(&registers, 1, "registration");
    launch_uid = 0;
    launch_uid_set = true;
    refused_launch(9, "does not run jobs as root (worker.allow_root_jobs is false)");
}

Test(worker, tasks_survive_losing_the_scheduler_and_exits_are_resent)
{
    char go[128];
    FILE *f;

    run_until(&registers, 1, "registration");
    ack_exits = false;
    launch(7, 1, NULL, 0,
           "i=0; while [ ! -f go ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done");
    run_until(&replies, 1, "the launch reply");
    gs_proto_conn_close(sched_conn); /* the scheduler goes away */
    run_until(&registers, 2, "re-registration");
    cr_assert_eq(last_running_reported, 1, "the new registration lists the running task");
    cr_assert_eq(wrk_running(worker), 1);
    snprintf(go, sizeof(go), "%s/go", dir);
    f = fopen(go, "w");
    cr_assert_not_null(f);
    fclose(f);
    run_until(&nexits, 1, "the exit after reconnecting");
    cr_assert_eq(exits[0].job_id, 7);
    cr_assert_eq(exits[0].exit_code, 0);
    cr_assert_eq(wrk_unacked_exits(worker), 1, "kept until acknowledged");
    cr_assert_geq(wrk_registrations(worker), 2);
}

Test(worker, signal_tasks_cancels_a_job)
{
    Gs__SignalTasks msg = GS__SIGNAL_TASKS__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    run_until(&registers, 1, "registration");
    launch(8, 2, NULL, 0, "sleep 100");
    run_until(&replies, 1, "the launch reply");
    msg.job_id = 8;
    msg.signal = 0;
    msg.reason = "cancelled by test";
    msg.end_reason = GS__END_REASON__END_REASON_CANCELLED;
    env.body_case = GS__ENVELOPE__BODY_SIGNAL_TASKS;
    env.signal_tasks = &msg;
    send_env(&env);
    run_until(&nexits, 2, "both cancelled tasks");
    for (int i = 0; i < 2; i++) {
        cr_assert(exits[i].signaled);
        cr_assert_eq(exits[i].end_reason, GS__END_REASON__END_REASON_CANCELLED);
    }
}

/* Runs the loop for ms milliseconds. */
static void run_for(uint64_t ms)
{
    uv_timer_t until;
    bool expired = false;

    uv_timer_init(&loop, &until);
    until.data = &expired;
    uv_update_time(&loop);
    uv_timer_start(&until, on_deadline, ms, 0);
    while (!expired)
        uv_run(&loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&until, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
}

static void send_limit(uint64_t job_id, uint64_t limit_s, uint64_t elapsed_ms, uint32_t attempt)
{
    Gs__JobLimitUpdate msg = GS__JOB_LIMIT_UPDATE__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    msg.job_id = job_id;
    msg.time_limit_s = limit_s;
    msg.elapsed_ms = elapsed_ms;
    msg.attempt = attempt;
    env.body_case = GS__ENVELOPE__BODY_JOB_LIMIT_UPDATE;
    env.job_limit_update = &msg;
    send_env(&env);
}

/* The job has run 5 s by the scheduler's clock: a 2 s limit has passed, its tasks end now
 * as timed out; the same for another attempt changes nothing. */
Test(worker, job_limit_update_ends_a_job_past_its_new_limit)
{
    uint64_t t0;

    run_until(&registers, 1, "registration");
    launch(9, 2, NULL, 0, "sleep 100");
    run_until(&replies, 1, "the launch reply");
    send_limit(9, 2, 5000, 2);
    run_for(300);
    cr_assert_eq(nexits, 0, "another attempt's limit ended the tasks");
    t0 = gs_clock_mono_ms();
    send_limit(9, 2, 5000, 1);
    run_until(&nexits, 2, "both timed-out tasks");
    cr_assert_lt(gs_clock_mono_ms() - t0, 2000, "the passed limit waited");
    for (int i = 0; i < 2; i++) {
        cr_assert(exits[i].signaled);
        cr_assert_eq(exits[i].end_reason, GS__END_REASON__END_REASON_TIMEOUT);
    }
}

/* A next attempt's launch arriving while the last attempt's task still runs here (its
 * SIGTERM ignored) waits for that task to end: the new task never sees it alive. */
Test(worker, a_next_attempts_launch_waits_for_the_last_attempts_tasks)
{
    Gs__SignalTasks msg = GS__SIGNAL_TASKS__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    char first[512], second[512], seen[64];

    snprintf(first, sizeof(first), "trap '' TERM; echo $$ > %s/first.pid; sleep 100 & wait", dir);
    snprintf(second, sizeof(second),
             "if kill -0 \"$(cat %s/first.pid)\" 2>/dev/null; then echo clash; else echo "
             "after; fi > %s/second.txt",
             dir, dir);
    run_until(&registers, 1, "registration");
    launch(12, 1, NULL, 0, first);
    run_until(&replies, 1, "the first attempt's launch reply");
    launch_attempt = 2;
    launch(12, 1, NULL, 0, second);
    launch_attempt = 1;
    msg.job_id = 12;
    msg.reason = "requeued by test";
    msg.end_reason = GS__END_REASON__END_REASON_REQUEUED;
    env.body_case = GS__ENVELOPE__BODY_SIGNAL_TASKS;
    env.signal_tasks = &msg;
    send_env(&env); /* SIGTERM, ignored; SIGKILL after the worker's kill grace */
    run_until(&nexits, 2, "both attempts' exits");
    cr_assert_eq(exits[0].attempt, 1);
    cr_assert(exits[0].signaled, "the first attempt's task was killed");
    cr_assert_eq(exits[1].attempt, 2);
    cr_assert_eq(exits[1].exit_code, 0);
    slurp("second.txt", seen, sizeof(seen));
    cr_assert_str_eq(seen, "after\n", "the second attempt ran beside the first");
}

static void request_logs(uint64_t request_id, const char *log_path, uint64_t offset)
{
    Gs__LogsRequest msg = GS__LOGS_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    msg.job_id = 9;
    msg.node_name = "node1";
    msg.path = (char *)log_path;
    msg.offset = offset;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_LOGS_REQUEST;
    env.logs_request = &msg;
    send_env(&env);
}

/* Once the worker has registered: DIR/log.txt holding text, its path in path. */
static void registered_with_log(const char *text, char *path, size_t size)
{
    FILE *f;

    run_until(&registers, 1, "registration");
    snprintf(path, size, "%s/log.txt", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

Test(worker, serves_log_reads_under_the_request_id)
{
    char log_path[160], missing[160], want[256];

    registered_with_log("hello\nworld\n", log_path, sizeof(log_path));
    request_logs(41, log_path, 6);
    run_until(&log_replies, 1, "the log chunk");
    cr_assert_eq(last_request_id, 41);
    cr_assert_str_eq(last_logs_data, "world\n");
    cr_assert_eq(last_logs.offset, 6);
    cr_assert_eq(last_logs.size, 12);
    cr_assert(last_logs.eof);
    cr_assert_not(last_logs.finished, "the scheduler decides that");
    cr_assert_str_eq(last_logs_node, "node1");

    snprintf(missing, sizeof(missing), "%s/nothing.out", dir);
    request_logs(42, missing, 0);
    run_until(&errors, 1, "the error reply");
    cr_assert_eq(last_request_id, 42);
    cr_assert_eq(last_error_code, -ENOENT);
    snprintf(want, sizeof(want), "node1: %s: No such file or directory", missing);
    cr_assert_str_eq(last_error, want);
}

/* Log reads held at a gate, as reads on a filesystem that hangs would be: each read's
 * thread takes a byte from the gate before it reads (wrk_opts.log_read_gate). libuv's pool
 * is cut to one thread, so a read that used it would hold it. */
static int gate[2] = {-1, -1};

static void log_read_gate(void *data)
{
    char c;

    (void)data;
    while (read(gate[0], &c, 1) < 0 && errno == EINTR)
        ;
}

/* Lets n held reads go on. */
static void open_the_gate(int n)
{
    for (int i = 0; i < n; i++)
        cr_assert_eq(write(gate[1], "x", 1), 1);
}

/* Runs the loop until the worker has no log read in flight; fails after 10 s. */
static void run_until_no_log_read(void)
{
    uint64_t until = gs_clock_mono_ms() + 10000;

    while (wrk_log_reads(worker) > 0 && gs_clock_mono_ms() < until)
        uv_run(&loop, UV_RUN_NOWAIT);
    cr_assert_eq(wrk_log_reads(worker), 0, "timed out waiting for the log reads to end");
}

/* Every frame sent before has been taken by the worker: it handles them in order, and a
 * launch naming no user it answers at once, refused. */
static void worker_took_what_was_sent(void)
{
    char *argv[] = {"/bin/true"};
    int want = replies + 1;

    no_user = true;
    launch(90, 1, argv, 1, NULL);
    no_user = false;
    run_until(&replies, want, "the refused launch's reply, sent after the rest");
}

static void setup_gated_reads(void)
{
    struct gs_topo_opts topts = {.xml_path = GSCHED_TOPOLOGIES "/cpu-only.xml", .fake_gpus = 4};

    setenv("UV_THREADPOOL_SIZE", "1", 1); /* read once, at the pool's first use */
    cr_assert_eq(pipe(gate), 0);
    read_gate = log_read_gate;
    start_worker(&topts);
}

static void teardown_gated_reads(void)
{
    teardown();
    read_gate = NULL;
    for (int i = 0; i < 2; i++) { /* the end of the gate lets reads still held go on */
        if (gate[i] >= 0)
            close(gate[i]);
        gate[i] = -1;
    }
}

TestSuite(worker_log_reads, .init = setup_gated_reads, .fini = teardown_gated_reads, .timeout = 60);

Test(worker_log_reads, heartbeats_go_on_while_a_log_read_hangs_and_its_answer_follows)
{
    char log_path[160];
    int beats;

    registered_with_log("hello\n", log_path, sizeof(log_path));
    request_logs(43, log_path, 0);
    beats = heartbeats;
    run_until(&heartbeats, beats + 3, "heartbeats while the read hangs");
    cr_assert_eq(log_replies + errors, 0, "the read cannot have finished yet");
    cr_assert_eq(wrk_log_reads(worker), 1);
    open_the_gate(1);
    run_until(&log_replies, 1, "the log chunk");
    cr_assert_eq(last_request_id, 43);
    cr_assert_str_eq(last_logs_data, "hello\n");
}

static void pool_work(uv_work_t *req)
{
    (void)req;
}

static void pool_done(uv_work_t *req, int status)
{
    cr_assert_eq(status, 0);
    (*(int *)req->data)++;
}

/* Hung reads hold neither libuv's pool (which shard copies and telemetry samples use) nor
 * the reads after them, up to the limit; past it a request is refused at once. */
Test(worker_log_reads, hung_reads_hold_neither_the_pool_nor_later_reads)
{
    char log_path[160], want[256];
    uv_work_t req;
    int pool_ran = 0;

    registered_with_log("x", log_path, sizeof(log_path));
    for (uint64_t id = 100; id < 164; id++)
        request_logs(id, log_path, 0);
    worker_took_what_was_sent();
    cr_assert_eq(wrk_log_reads(worker), 64);
    req.data = &pool_ran;
    cr_assert_eq(uv_queue_work(&loop, &req, pool_work, pool_done), 0);
    run_until(&pool_ran, 1, "work in the pool's one thread");
    request_logs(200, log_path, 0);
    run_until(&errors, 1, "the refusal past 64 reads");
    cr_assert_eq(last_request_id, 200);
    cr_assert_eq(last_error_code, -EBUSY);
    snprintf(want, sizeof(want),
             "node1: %s: too many log reads in flight on this node (a filesystem may hang); "
             "try again later",
             log_path);
    cr_assert_str_eq(last_error, want);
    open_the_gate(65);
    run_until(&log_replies, 64, "the 64 held reads' chunks");
    request_logs(201, log_path, 0);
    run_until(&log_replies, 65, "a read once there is room again");
    cr_assert_eq(last_request_id, 201);
}

Test(worker_log_reads, a_read_asked_on_a_link_since_lost_is_not_answered_on_the_next)
{
    char log_path[160];

    registered_with_log("", log_path, sizeof(log_path));
    request_logs(44, log_path, 0);
    worker_took_what_was_sent(); /* 44 is held at the gate */
    gs_proto_conn_close(sched_conn);
    run_until(&registers, 2, "the worker's next registration");
    open_the_gate(2);
    run_until_no_log_read(); /* 44 came back to the loop, on the new link */
    request_logs(45, log_path, 0);
    run_until(&log_replies, 1, "the second read's chunk");
    cr_assert_eq(last_request_id, 45);
    cr_assert_eq(log_replies + errors, 1, "44 belonged to the lost link's gschedd");
}

/* The stop does not wait for a hung read: teardown's stop completes with 46 still held (it
 * goes on, and is dropped, once teardown closes the gate). */
Test(worker_log_reads, a_read_that_hangs_when_the_worker_stops_does_not_hold_the_stop)
{
    char log_path[160];

    registered_with_log("", log_path, sizeof(log_path));
    request_logs(46, log_path, 0);
    worker_took_what_was_sent();
    cr_assert_eq(wrk_log_reads(worker), 1);
}

/* A read that came back to the worker as it stopped is dropped, not answered. */
Test(worker_log_reads, a_read_in_flight_when_the_worker_stops_is_dropped_and_freed)
{
    char log_path[160];

    registered_with_log("", log_path, sizeof(log_path));
    request_logs(47, log_path, 0);
    worker_took_what_was_sent();
    open_the_gate(1); /* it may come back before or after teardown's stop */
}

/* How many lines of the worker's log contain needle. */
static int log_lines_with(const char *needle)
{
    char line[1024];
    int n = 0;
    FILE *f;

    snprintf(line, sizeof(line), "%s/worker.log", dir);
    f = fopen(line, "r");
    cr_assert_not_null(f);
    while (fgets(line, sizeof(line), f) != NULL)
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

/* The show_binding line, then what the task was told about its cores and NIC. */
#define BINDING_SCRIPT                                                                             \
    "'" SHOW_BINDING "'; echo gsched_cpus=$GSCHED_CPUS nic=${GSCHED_NIC-unset} "                   \
    "ifname=${NCCL_SOCKET_IFNAME-unset} hca=${NCCL_IB_HCA-unset}"

static const char *or_unset(const char *s)
{
    return s != NULL && s[0] != '\0' ? s : "unset";
}

/* The NIC a task on gpu is pointed at, as BINDING_SCRIPT prints it. */
static void nic_line(int gpu, bool hinted, char *out, size_t size)
{
    const struct gs_topo_nic *nic = gs_topo_nic(topo, gs_topo_gpu_nearest_nic(topo, gpu));
    const char *name = nic != NULL ? nic->name : NULL, *ib = nic != NULL ? nic->ib_device : NULL;

    char ifname[80] = "unset", hca[80] = "unset";

    if (hinted && name != NULL && name[0] != '\0')
        snprintf(ifname, sizeof(ifname), "=%s", name);
    if (hinted && ib != NULL && ib[0] != '\0')
        snprintf(hca, sizeof(hca), "=%s", ib);
    snprintf(out, size, "nic=%s ifname=%s hca=%s",
             or_unset(name != NULL && name[0] != '\0' ? name : ib), ifname, hca);
}

/* This process's Cpus_allowed_list: where an unbound task may run too. */
static void own_cpus(char *out, size_t size)
{
    char line[4096];
    FILE *f = fopen("/proc/self/status", "r");

    cr_assert_not_null(f);
    out[0] = '\0';
    while (out[0] == '\0' && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "Cpus_allowed_list:\t", 19) == 0)
            snprintf(out, size, "%.*s", (int)strcspn(line + 19, "\n"), line + 19);
    }
    fclose(f);
    cr_assert_neq(out[0], '\0');
}

Test(worker, fake_topology_leaves_tasks_unbound_and_says_so_once)
{
    static const struct layout two_cores_each = {{{0, 1}, {2, 3}, {0, 1}, {2, 3}}, 2, 2};
    char out[512], want[1024], cpus[256], nic[256];

    run_until(&registers, 1, "registration");
    launch_laid_out(10, 2, NULL, 0, BINDING_SCRIPT, &two_cores_each);
    run_until(&nexits, 2, "the first job's tasks");
    launch_laid_out(11, 2, NULL, 0, BINDING_SCRIPT, &two_cores_each);
    run_until(&nexits, 4, "the second job's tasks");
    cr_assert_eq(log_lines_with("does not describe this machine"), 1,
                 "one warning per worker, not per task or job");
    own_cpus(cpus, sizeof(cpus));
    nic_line(2, false, nic, sizeof(nic));
    snprintf(want, sizeof(want), "cpus=%s mempolicy=default nodes=\ngsched_cpus=2-3 %s\n", cpus,
             nic);
    slurp("out-11-1.txt", out, sizeof(out));
    cr_assert_str_eq(out, want, "unbound, the placement still shown, NCCL left alone");
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* "0-1,4": a core's PUs (OS indices) as the kernel lists CPUs. */
static void format_pus(const struct gs_topo_core *core, char *out, size_t size)
{
    int pus[64], n = core->npus < 64 ? core->npus : 64;
    size_t off = 0;

    memcpy(pus, core->pus, (size_t)n * sizeof(int));
    qsort(pus, (size_t)n, sizeof(int), cmp_int);
    out[0] = '\0';
    for (int i = 0; i < n && off < size; i++) {
        int j = i;

        while (j + 1 < n && pus[j + 1] == pus[j] + 1)
            j++;
        off += (size_t)snprintf(out + off, size - off, "%s%d", i > 0 ? "," : "", pus[i]);
        if (j > i && off < size)
            off += (size_t)snprintf(out + off, size - off, "-%d", pus[j]);
        i = j;
    }
}

Test(worker_on_this_machine, binds_each_task_next_to_its_gpu)
{
    /* One task per GPU, each seeing both, as the scheduler sends them; one core each. */
    static const struct layout per_gpu = {{{0, 1}, {0, 1}}, 2, 1};
    int ntasks = gs_topo_ncores(topo) >= 2 ? 2 : 1;
    bool refused;

    run_until(&registers, 1, "registration");
    launch_laid_out(12, ntasks, NULL, 0, BINDING_SCRIPT, &per_gpu);
    run_until(&nexits, ntasks, "the tasks");
    cr_assert_eq(log_lines_with("does not describe this machine"), 0);
    /* EPERM (a seccomp profile) or ENOSYS: tasks still start, with one warning. */
    refused = log_lines_with("without its memory policy") == 1;
    for (int i = 0; i < ntasks; i++) {
        const struct gs_topo_core *core = gs_topo_core(topo, i);
        char name[32], out[512], want[1024], pus[256], nic[256], policy[32];

        format_pus(core, pus, sizeof(pus));
        /* With one task, it does not own a GPU: its first stands for its set. */
        nic_line(ntasks == 2 ? i : 0, true, nic, sizeof(nic));
        if (refused || core->numa_node < 0)
            snprintf(policy, sizeof(policy), "default nodes=");
        else
            snprintf(policy, sizeof(policy), "preferred nodes=%d", core->numa_node);
        snprintf(want, sizeof(want), "cpus=%s mempolicy=%s\ngsched_cpus=%d %s\n", pus, policy, i,
                 nic);
        snprintf(name, sizeof(name), "out-12-%d.txt", i);
        slurp(name, out, sizeof(out));
        cr_assert_str_eq(out, want, "task %d", i);
    }
}

Test(worker_on_this_machine, refused_memory_policy_is_warned_once_and_tasks_run)
{
    static const struct layout per_gpu = {{{0, 1}, {0, 1}}, 2, 1};
    int ntasks = gs_topo_ncores(topo) >= 2 ? 2 : 1;

    test_refuse_set_mempolicy();
    run_until(&registers, 1, "registration");
    launch_laid_out(13, ntasks, NULL, 0, "exit 0", &per_gpu);
    run_until(&nexits, ntasks, "the first job's tasks");
    launch_laid_out(14, ntasks, NULL, 0, "exit 0", &per_gpu);
    run_until(&nexits, 2 * ntasks, "the second job's tasks");
    for (int i = 0; i < 2 * ntasks; i++) {
        cr_assert_eq(exits[i].end_reason, GS__END_REASON__END_REASON_NONE, "task %d", i);
        cr_assert_eq(exits[i].exit_code, 0);
    }
    cr_assert_eq(log_lines_with("error=\"set_mempolicy: Operation not permitted\" task started "
                                "without its memory policy"),
                 1, "one warning per worker");
}

/* ---- Slurm batch jobs and steps ---------------------------------------------------------- */

struct slurm_launch {
    uint64_t job_id;
    uint32_t step;      /* 0: the batch shell, on node1 (first node) with 4 GPUs and 8 cores */
    const char *script; /* the batch script */
    char **argv;        /* the batch script's arguments, or a step's command */
    size_t argc;
    uint64_t time_limit_s;
    uint32_t warn_signal, warn_before_s;
    bool warn_batch_only;
    uint32_t output_window; /* srun's (LaunchTasks.step_output_window); 0: none */
};

/*
 * Sends a Slurm LaunchTasks as the scheduler does: the batch step to the first node with
 * all of its resources, or step tasks ranks 2 and 3 of a step on node0 (ranks 0-1) and
 * node1 (2-3), two GPUs each.
 */
static void launch_slurm(const struct slurm_launch *sl)
{
    static uint32_t all_gpus[] = {0, 1, 2, 3}, cores[] = {0, 1, 2, 3, 4, 5, 6, 7};
    static uint32_t step_gpus[2][2] = {{0, 1}, {2, 3}};
    Gs__LaunchTasks msg = GS__LAUNCH_TASKS__INIT;
    Gs__RunSpec run = GS__RUN_SPEC__INIT;
    Gs__TaskLimits limits = GS__TASK_LIMITS__INIT;
    Gs__NodeAllocation other = GS__NODE_ALLOCATION__INIT, here = GS__NODE_ALLOCATION__INIT;
    Gs__NodeAllocation *batch_alloc[] = {&here}, *step_alloc[] = {&other, &here};
    Gs__TaskAssignment tasks[2], *task_ptrs[2] = {&tasks[0], &tasks[1]};
    Gs__LaunchTasks__EnvEntry e = GS__LAUNCH_TASKS__ENV_ENTRY__INIT, *envs[] = {&e};
    Gs__UserIdentity user = GS__USER_IDENTITY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    char job_id[24];

    user.uid = (uint32_t)getuid();
    user.gid = (uint32_t)getgid();
    msg.user = &user;
    other.node_name = "node0";
    other.ntasks = 2;
    here.node_name = "node1";
    here.gpus = all_gpus;
    here.n_gpus = 4;
    here.cores = cores;
    here.n_cores = 8;
    for (int i = 0; i < 2; i++) {
        gs__task_assignment__init(&tasks[i]);
        tasks[i].rank = sl->step == 0 ? 0 : (uint32_t)(2 + i);
        tasks[i].local_rank = (uint32_t)i;
        tasks[i].gpus = sl->step == 0 ? all_gpus : step_gpus[i];
        tasks[i].n_gpus = sl->step == 0 ? 4 : 2;
    }
    if (sl->step == 0) {
        here.ntasks = 1;
        msg.allocation = batch_alloc;
        msg.n_allocation = 1;
        msg.n_tasks = 1;
        run.batch = true;
        run.script = (char *)sl->script;
    } else {
        here.ntasks = 2;
        here.first_rank = 2;
        msg.allocation = step_alloc;
        msg.n_allocation = 2;
        msg.n_tasks = 2;
        run.script = "";
    }
    run.slurm = true;
    run.argv = sl->argv;
    run.n_argv = sl->argc;
    run.workdir = dir;
    run.stdout_pattern = "";
    run.stderr_pattern = "";
    run.warn_signal = sl->warn_signal;
    run.warn_before_s = sl->warn_before_s;
    run.warn_batch_only = sl->warn_batch_only;
    limits.time_limit_s = sl->time_limit_s;
    snprintf(job_id, sizeof(job_id), "%llu", (unsigned long long)sl->job_id);
    e.key = "SLURM_JOB_ID";
    e.value = job_id;
    msg.job_id = sl->job_id;
    msg.job_name = "slurm-test";
    msg.attempt = 1;
    msg.step = sl->step;
    msg.step_output_window = sl->output_window;
    msg.tasks = task_ptrs;
    msg.world_size = sl->step == 0 ? 1 : 4;
    msg.master_addr = "127.0.0.1";
    msg.master_port = 29500;
    msg.run = &run;
    msg.limits = &limits;
    msg.n_env = 1;
    msg.env = envs;
    env.request_id = sl->job_id * 10 + sl->step;
    env.body_case = GS__ENVELOPE__BODY_LAUNCH_TASKS;
    env.launch_tasks = &msg;
    send_env(&env);
}

/* Files in the test's dir whose name starts with prefix. */
static int files_named(const char *prefix)
{
    char cmd[256], line[64] = "";
    FILE *p;

    snprintf(cmd, sizeof(cmd), "ls '%s' | grep -c '^%s' || true", dir, prefix);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    if (fgets(line, sizeof(line), p) == NULL)
        line[0] = '\0';
    pclose(p);
    return atoi(line);
}

static void touch(const char *name)
{
    char path[160];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fclose(f);
}

Test(worker, batch_script_runs_as_itself_with_its_arguments)
{
    char *args[] = {"first arg", "second"};
    struct slurm_launch sl = {.job_id = 30,
                              .script = "#!/bin/sh\n"
                                        "echo \"0=${0##*/} 1=$1 2=$2 mode=$(stat -c %a \"$0\")\"\n"
                                        "echo rank=${RANK-unset} world=${WORLD_SIZE-unset} "
                                        "procid=$SLURM_PROCID nodeid=$SLURM_NODEID "
                                        "node=$SLURMD_NODENAME gpus=$CUDA_VISIBLE_DEVICES "
                                        "job_gpus=$SLURM_JOB_GPUS cpus=$SLURM_CPUS_ON_NODE "
                                        "step=${SLURM_STEP_ID-unset} job=$SLURM_JOB_ID\n"
                                        "[ \"$SLURM_TASK_PID\" = \"$$\" ] && echo task_pid=ok\n"
                                        "exit 3\n",
                              .argv = args,
                              .argc = 2};
    char out[1024];

    run_until(&registers, 1, "registration");
    launch_slurm(&sl);
    run_until(&nexits, 1, "the batch shell's exit");
    cr_assert_eq(last_result_code, 0);
    cr_assert_eq(exits[0].step, 0);
    cr_assert_eq(exits[0].exit_code, 3);
    slurp("slurm-30.out", out, sizeof(out));
    cr_assert_not_null(strstr(out, " 1=first arg 2=second mode=700\n"), "%s", out);
    cr_assert_eq(strncmp(out, "0=gsched-batch-30-", 18), 0, "$0 is the script's path: %s", out);
    cr_assert_not_null(strstr(out, "rank=unset world=unset procid=0 nodeid=0 node=node1 "
                                   "gpus=0,1,2,3 job_gpus=0,1,2,3 cpus=8 step=unset job=30\n"),
                       "%s", out);
    cr_assert_not_null(strstr(out, "task_pid=ok\n"), "SLURM_TASK_PID is the shell's pid: %s", out);
    cr_assert_eq(files_named("gsched-batch-"), 0, "the script's copy went with the task");
    run_until_acked();
}

Test(worker, batch_script_shebang_picks_the_interpreter)
{
    static const char script[] = "#!/bin/cat\nthis is printed, not run\n";
    struct slurm_launch sl = {.job_id = 31, .script = script};
    char out[256];

    run_until(&registers, 1, "registration");
    launch_slurm(&sl);
    run_until(&nexits, 1, "the batch shell's exit");
    cr_assert_eq(exits[0].exit_code, 0);
    slurp("slurm-31.out", out, sizeof(out));
    cr_assert_str_eq(out, script, "cat was the interpreter, given the script's path");
}

Test(worker, batch_script_without_shebang_runs_under_sh)
{
    struct slurm_launch sl = {.job_id = 32, .script = "echo plain \"$1\"; exit 0\n"};
    char *args[] = {"x"};
    char out[256];

    sl.argv = args;
    sl.argc = 1;
    run_until(&registers, 1, "registration");
    launch_slurm(&sl);
    run_until(&nexits, 1, "the batch shell's exit");
    cr_assert_eq(exits[0].exit_code, 0);
    slurp("slurm-32.out", out, sizeof(out));
    cr_assert_str_eq(out, "plain x\n");
}

Test(worker, step_output_arrives_in_chunks_and_ends_before_the_exit)
{
    char *argv[] = {"/bin/sh", "-c",
                    "echo out-$SLURM_PROCID-$SLURM_LOCALID-$SLURM_NODEID-$SLURM_STEP_ID "
                    "$SLURM_STEP_NODELIST $SLURM_STEP_TASKS_PER_NODE $SLURM_STEP_NUM_TASKS "
                    "gpus=$CUDA_VISIBLE_DEVICES; echo err-$RANK >&2; exit $SLURM_LOCALID"};
    struct slurm_launch
        batch =
            {.job_id = 33,
             .script =
                 "#!/bin/sh\n"
                 "i=0; while [ ! -f go ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done\n"},
        step = {.job_id = 33, .step = 1, .argv = argv, .argc = 3};

    run_until(&registers, 1, "registration");
    launch_slurm(&batch);
    run_until(&replies, 1, "the batch launch reply");
    launch_slurm(&step);
    run_until(&nexits, 2, "both step tasks");
    cr_assert_eq(wrk_running(worker), 1, "the batch shell runs on");
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(exits[i].step, 1);
        cr_assert_eq(exits[i].exit_code, (int)exits[i].rank - 2);
        cr_assert_eq(eofs_before_exit[i], 2, "both streams ended before rank %u's exit",
                     exits[i].rank);
    }
    cr_assert_str_eq(step_out[2][0], "out-2-0-1-0 node[0-1] 2(x2) 4 gpus=0,1\n");
    cr_assert_str_eq(step_out[3][0], "out-3-1-1-0 node[0-1] 2(x2) 4 gpus=2,3\n");
    cr_assert_str_eq(step_out[3][1], "err-3\n");
    run_until_acked(); /* acks name the step: the exits are forgotten */
    touch("go");
    run_until(&nexits, 3, "the batch shell");
    {
        char out[64];

        slurp("slurm-33.out", out, sizeof(out));
        cr_assert_str_eq(out, "", "the steps' output went to srun, not to the job's file");
    }
    cr_assert_eq(exits[2].step, 0);
    cr_assert_eq(exits[2].rank, 0);
}

/* Runs until rank's stdout holds want bytes, a frame at a time. */
static void run_until_stdout(uint32_t rank, size_t want, const char *what)
{
    while (step_out_len[rank][0] < want)
        run_until(&step_outputs, step_outputs + 1, what);
}

/*
 * With srun's window the output srun has not acknowledged is kept: what a task prints while
 * the worker has no scheduler is not lost, and StepOutputResume (after srun reattached to a
 * restarted gschedd), or srun's acknowledgement asking for it after a gap, has it sent again
 * from where srun got to, each chunk saying where it ends in the node's output of the step.
 */
Test(worker, step_output_is_kept_until_srun_has_it_and_sent_again)
{
    char *argv[] = {"/bin/sh", "-c",
                    ("[ $SLURM_PROCID = 2 ] || exit 0; echo a; i=0; while [ ! -f go ] && "
                     "[ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done; echo bb; touch printed; "
                     "while [ ! -f end ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i+1)); done")};
    struct slurm_launch step = {
        .job_id = 34, .step = 1, .argv = argv, .argc = 3, .output_window = 1024 * 1024};
    Gs__StepOutputResume resume = GS__STEP_OUTPUT_RESUME__INIT;
    Gs__StepOutputAck ack = GS__STEP_OUTPUT_ACK__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    char printed[160];

    snprintf(printed, sizeof(printed), "%s/printed", dir);
    run_until(&registers, 1, "registration");
    launch_slurm(&step);
    run_until(&nexits, 1, "rank 3, which prints nothing");
    run_until_stdout(2, 2, "rank 2's first line");
    cr_assert_eq(step_last_end, 2, "\"a\\n\" ends at byte 2 of the node's output");
    hold_registration = true;
    gs_proto_conn_close(sched_conn); /* gschedd goes away */
    run_until(&registers, 2, "the worker back, not registered yet");
    touch("go"); /* rank 2 prints its second line meanwhile */
    for (int i = 0; i < 500 && access(printed, F_OK) != 0; i++)
        run_for(20);
    cr_assert_eq(access(printed, F_OK), 0, "rank 2 did not print its second line");
    run_for(200); /* the worker's loop reads the pipe as soon as it runs */
    hold_registration = false;
    reply_register();
    run_until(&heartbeats, heartbeats + 1, "a heartbeat, registered");
    cr_assert_eq(step_out_len[2][0], 2, "nothing is sent before gschedd asks");
    resume.job_id = 34;
    resume.step = 1;
    resume.offset = 2; /* srun has the first line */
    env.body_case = GS__ENVELOPE__BODY_STEP_OUTPUT_RESUME;
    env.step_output_resume = &resume;
    send_env(&env);
    run_until_stdout(2, 5, "the second line, sent again");
    cr_assert_eq(memcmp(step_out[2][0], "a\nbb\n", 5), 0);
    cr_assert_eq(step_last_end, 5);
    ack.job_id = 34; /* srun saw a gap: once more from inside a chunk, its rest alone */
    ack.step = 1;
    ack.offset = 3;
    ack.resend = true;
    env.body_case = GS__ENVELOPE__BODY_STEP_OUTPUT_ACK;
    env.step_output_ack = &ack;
    send_env(&env);
    run_until_stdout(2, 7, "the second line's rest");
    cr_assert_eq(memcmp(step_out[2][0] + 5, "b\n", 2), 0);
    cr_assert_eq(step_last_end, 5);
    touch("end");
    run_until(&nexits, 2, "rank 2");
}

/* A step's last task here ended while the worker had no scheduler: its output is still sent
 * again on StepOutputResume, until gschedd has acknowledged the step's exits here. */
Test(worker, an_ended_steps_output_is_kept_until_its_exits_are_acknowledged)
{
    char *argv[] = {"/bin/sh", "-c",
                    ("[ $SLURM_PROCID = 2 ] || exit 0; echo a; i=0; while [ ! -f go ] && "
                     "[ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done; echo bb")};
    struct slurm_launch step = {
        .job_id = 35, .step = 1, .argv = argv, .argc = 3, .output_window = 1024 * 1024};
    Gs__StepOutputResume resume = GS__STEP_OUTPUT_RESUME__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    ack_exits = false;
    run_until(&registers, 1, "registration");
    launch_slurm(&step);
    run_until(&nexits, 1, "rank 3, which prints nothing");
    run_until_stdout(2, 2, "rank 2's first line");
    hold_registration = true;
    gs_proto_conn_close(sched_conn); /* gschedd goes away */
    run_until(&registers, 2, "the worker back, not registered yet");
    touch("go"); /* rank 2 prints its second line and ends meanwhile */
    for (int i = 0; i < 500 && wrk_running(worker) > 0; i++)
        run_for(20);
    cr_assert_eq(wrk_running(worker), 0, "rank 2 did not end");
    hold_registration = false;
    reply_register();
    run_until(&heartbeats, heartbeats + 1, "a heartbeat, registered");
    cr_assert_eq(wrk_unacked_exits(worker), 2, "both exits wait for gschedd");
    resume.job_id = 35;
    resume.step = 1;
    resume.offset = 2;
    env.body_case = GS__ENVELOPE__BODY_STEP_OUTPUT_RESUME;
    env.step_output_resume = &resume;
    send_env(&env);
    run_until_stdout(2, 5, "the second line, after the task ended");
    cr_assert_eq(memcmp(step_out[2][0], "a\nbb\n", 5), 0);
    for (uint32_t rank = 2; rank < 4; rank++) {
        Gs__TaskExit ex = GS__TASK_EXIT__INIT;

        ex.job_id = 35;
        ex.step = 1;
        ex.rank = rank;
        ex.attempt = 1;
        ack(&ex);
    }
    run_until_acked();
    send_env(&env); /* the flow is gone with the acknowledged exits: nothing comes */
    run_until(&heartbeats, heartbeats + 2, "two heartbeats");
    cr_assert_eq(step_out_len[2][0], 5, "output sent after its step's exits were stored");
}

static void signal_tasks(uint64_t job_id, uint32_t sig, uint32_t step, bool all_steps,
                         bool batch_only)
{
    Gs__SignalTasks msg = GS__SIGNAL_TASKS__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    msg.job_id = job_id;
    msg.signal = sig;
    msg.step = step;
    msg.all_steps = all_steps;
    msg.batch_only = batch_only;
    msg.reason = "test";
    msg.end_reason = GS__END_REASON__END_REASON_CANCELLED;
    env.body_case = GS__ENVELOPE__BODY_SIGNAL_TASKS;
    env.signal_tasks = &msg;
    send_env(&env);
}

Test(worker, signals_pick_a_step_all_steps_or_the_batch_shell)
{
    /* The batch shell's child would say it got the signal; the shell itself exits 5. */
    struct slurm_launch batch = {
        .job_id = 34,
        .script = "#!/bin/sh\n"
                  "sh -c \"trap 'touch child-got-usr1' USR1; touch child-up; "
                  "while :; do sleep 0.02; done\" &\n"
                  "trap 'sleep 0.2; exit 5' USR1\n"
                  "while [ ! -f child-up ]; do sleep 0.02; done; touch batch-up\n"
                  "while :; do sleep 0.02; done\n"};
    char *argv[] = {"/bin/sh", "-c", "sleep 100"};
    struct slurm_launch step1 = {.job_id = 34, .step = 1, .argv = argv, .argc = 3},
                        step2 = {.job_id = 34, .step = 2, .argv = argv, .argc = 3};
    char path[160];

    run_until(&registers, 1, "registration");
    launch_slurm(&batch);
    launch_slurm(&step1);
    launch_slurm(&step2);
    run_until(&replies, 3, "three launch replies");
    cr_assert_eq(wrk_running(worker), 5);
    signal_tasks(34, 0, 2, false, false); /* end step 2 (Slurm step 1) only */
    run_until(&nexits, 2, "step 2's tasks");
    cr_assert_eq(exits[0].step, 2);
    cr_assert_eq(exits[1].step, 2);
    cr_assert_eq(wrk_running(worker), 3);
    snprintf(path, sizeof(path), "%s/batch-up", dir);
    while (access(path, F_OK) != 0) /* the loop runs inside run_until only: poll it here */
        run_until(&heartbeats, heartbeats + 1, "a heartbeat while the batch shell starts");
    signal_tasks(34, SIGUSR1, 0, false, true); /* scancel --batch: the shell, not its group */
    run_until(&nexits, 3, "the batch shell");
    cr_assert_eq(exits[2].step, 0);
    cr_assert_eq(exits[2].exit_code, 5);
    snprintf(path, sizeof(path), "%s/child-got-usr1", dir);
    cr_assert_neq(access(path, F_OK), 0, "batch_only reached the shell's children");
    signal_tasks(34, 0, 0, true, false); /* the job's end: every step */
    run_until(&nexits, 5, "step 1's tasks");
    cr_assert_eq(exits[3].step, 1);
    cr_assert_eq(wrk_running(worker), 0);
}

Test(worker, warning_signal_goes_to_the_batch_shell_with_b)
{
    struct slurm_launch batch = {.job_id = 35,
                                 .script = "#!/bin/sh\ntrap 'echo warned; exit 0' USR1\n"
                                           "while :; do sleep 0.02; done\n",
                                 .time_limit_s = 2,
                                 .warn_signal = SIGUSR1,
                                 .warn_before_s = 1,
                                 .warn_batch_only = true};
    char *argv[] = {"/bin/sh", "-c", "trap 'echo warned' USR1; sleep 1.5 & wait; echo done"};
    struct slurm_launch step = batch;
    char out[64];

    step.step = 1;
    step.argv = argv;
    step.argc = 3;
    run_until(&registers, 1, "registration");
    launch_slurm(&step);
    launch_slurm(&batch);
    run_until(&nexits, 3, "the batch shell and the step");
    slurp("slurm-35.out", out, sizeof(out));
    cr_assert_str_eq(out, "warned\n");
    cr_assert_str_eq(step_out[2][0], "done\n", "B: spares the steps");
    cr_assert_str_eq(step_out[3][0], "done\n");
}

Test(worker, warning_signal_goes_to_the_steps_without_b)
{
    struct slurm_launch batch = {
        .job_id = 36,
        .script = "#!/bin/sh\ntrap 'echo warned' USR1\n"
                  "i=0; while [ ! -f go ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done\n",
        .time_limit_s = 2,
        .warn_signal = SIGUSR1,
        .warn_before_s = 1};
    char *argv[] = {"/bin/sh", "-c", "trap 'echo warned; exit 0' USR1; sleep 30 & wait"};
    struct slurm_launch step = batch;
    uint64_t t0 = gs_clock_mono_ms();
    char out[64];

    step.step = 1;
    step.argv = argv;
    step.argc = 3;
    run_until(&registers, 1, "registration");
    launch_slurm(&batch);
    launch_slurm(&step);
    run_until(&nexits, 2, "the warned step tasks");
    cr_assert_geq(gs_clock_mono_ms() - t0, 900, "the warning came a second before the limit");
    cr_assert_eq(exits[0].step, 1);
    cr_assert_eq(exits[0].end_reason, GS__END_REASON__END_REASON_NONE);
    cr_assert_str_eq(step_out[2][0], "warned\n");
    cr_assert_str_eq(step_out[3][0], "warned\n");
    touch("go");
    run_until(&nexits, 3, "the batch shell");
    slurp("slurm-36.out", out, sizeof(out));
    cr_assert_str_eq(out, "", "without B: the batch shell is not warned");
}

Test(worker_telemetry, heartbeats_carry_gpu_figures_and_task_cpu_time)
{
    run_until(&registers, 1, "registration");
    launch(9, 1, NULL, 0, "i=0; while [ $i -lt 100000000 ]; do i=$((i+1)); done");
    run_until(&telemetry_beats, 1, "a heartbeat with GPU figures and the task's CPU time");
}

/* An exit nobody acknowledged outlives its worker: the next worker of the node (a restart
 * after a crash, here a stop) reports it in its registration (worker/exits_file.h). */
Test(worker_ledger, an_unacknowledged_exit_outlives_a_worker_restart)
{
    char *argv[] = {"/bin/true"}, exits_file[160];
    struct gs_error err;
    struct stat st;
    uint64_t deadline = gs_clock_mono_ms() + 5000;

    run_until(&registers, 1, "registration");
    cr_assert_eq(last_unacked_reported, 0);
    ack_exits = false;
    launch(11, 1, argv, 1, NULL);
    run_until(&nexits, 1, "the task's exit");
    snprintf(exits_file, sizeof(exits_file), "%s.exits", ledger_path);
    cr_assert_eq(stat(exits_file, &st), 0);
    cr_assert_gt(st.st_size, 8, "the exit is on disk (past the header) before it is acknowledged");
    wrk_stop(worker, on_stopped, NULL);
    while (!stopped) {
        cr_assert_lt(gs_clock_mono_ms(), deadline, "the worker did not stop");
        uv_run(&loop, UV_RUN_ONCE);
    }
    stopped = false;
    worker = wrk_new(&loop, &wopts, &err);
    cr_assert_not_null(worker, "%s", err.msg);
    cr_assert_eq(wrk_start(worker), 0);
    run_until(&registers, 2, "the new worker's registration");
    cr_assert_eq(last_unacked_reported, 1, "the old exit is reported again");
}

/* ---- shard copies and the stop (suite worker_data) ---- */

/* The fake node with a shard cache whose copies run at 64 KiB/s: a 1 MiB shard takes 16 s
 * (each of the two copies at once gets half the node's rate). */
static void setup_slow_data(void)
{
    with_data = true;
    data_rate = 128 * 1024;
    setup();
}

TestSuite(worker_data, .init = setup_slow_data, .fini = teardown, .timeout = 60);

/* The bytes of the .part files under the cache's dataset directories, and how many. */
static uint64_t part_bytes(int *nparts)
{
    char cmd[512], line[64];
    uint64_t sum = 0;
    FILE *f;

    *nparts = 0;
    snprintf(cmd, sizeof(cmd), "find '%s' -name '*.part' -printf '%%s\\n' 2>/dev/null", data_dir);
    f = popen(cmd, "r");
    cr_assert_not_null(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        sum += strtoull(line, NULL, 10);
        (*nparts)++;
    }
    pclose(f);
    return sum;
}

/* The stop tells copies in flight to end and does not wait for them: it would take 16 s for
 * these to finish; their .part files stay for the next worker to resume. */
Test(worker_data, the_stop_does_not_wait_for_copies_in_flight)
{
    Gs__DataCommand cmd = GS__DATA_COMMAND__INIT;
    Gs__UserIdentity user = GS__USER_IDENTITY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    char src[200], id[SHARD_DATASET_ID_SIZE];
    struct gs_error err;
    uint64_t until, bytes = 0, at_stop;
    int nparts = 0;

    run_until(&registers, 1, "registration");
    snprintf(src, sizeof(src), "%s/src", dir);
    cr_assert_eq(mkdir(src, 0755), 0);
    ds_make(src, 1, 1, 256 * 1024); /* two shards of 1 MiB (u32 tokens) */
    cr_assert_eq(shard_dataset_id(src, id, &err), 0, "%s", err.msg);
    cmd.op = GS__DATA_OP__DATA_OP_WARM;
    cmd.dataset = id;
    cmd.source = src;
    user.uid = getuid();
    user.gid = getgid();
    user.username = "root";
    cmd.user = &user;
    env.body_case = GS__ENVELOPE__BODY_DATA_COMMAND;
    env.data_command = &cmd;
    send_env(&env);
    until = gs_clock_mono_ms() + 10000;
    while ((nparts < 2 || bytes == 0) && gs_clock_mono_ms() < until) {
        uv_run(&loop, UV_RUN_NOWAIT);
        bytes = part_bytes(&nparts);
    }
    cr_assert_eq(nparts, 2, "both copies under way (%d .part files, %llu bytes)", nparts,
                 (unsigned long long)bytes);
    wrk_stop(worker, on_stopped, NULL);
    GS_TEST_RUN_UNTIL(&loop, stopped, 5000); /* the copies would take 16 s */
    at_stop = part_bytes(&nparts);
    cr_assert_eq(nparts, 2, "the .part files are kept");
    cr_assert_lt(at_stop, 2u * 1024 * 1024, "the copies had not finished");
}

/* ---- a shard copy stuck in the kernel (suite worker_data_stall) ---- */

/*
 * Copies held at a gate, as copies reading a source on a filesystem that hangs would be:
 * the first two copies' threads block until the gate's write end closes (teardown), the
 * rest go through. worker.data_stall is 1 s, libuv's pool untouched.
 */
static int stall_gate[2] = {-1, -1};
static atomic_int stall_gate_calls;

static void stuck_copies_gate(void *data)
{
    char c;

    (void)data;
    if (atomic_fetch_add(&stall_gate_calls, 1) >= 2)
        return;
    while (read(stall_gate[0], &c, 1) < 0 && errno == EINTR)
        ;
}

static void setup_stuck_copies(void)
{
    cr_assert_eq(pipe(stall_gate), 0);
    atomic_store(&stall_gate_calls, 0);
    with_data = true;
    data_rate = 0;
    data_stall_s = 1;
    copy_gate = stuck_copies_gate;
    setup();
}

static void teardown_stuck_copies(void)
{
    teardown();
    copy_gate = NULL;
    data_stall_s = 0;
    launch_data = NULL;
    for (int i = 0; i < 2; i++) { /* the gate's end lets the stuck threads return */
        if (stall_gate[i] >= 0)
            close(stall_gate[i]);
        stall_gate[i] = -1;
    }
}

TestSuite(worker_data_stall, .init = setup_stuck_copies, .fini = teardown_stuck_copies,
          .timeout = 60);

/* A file of the cache's dataset directory: whether it is there. */
static bool cached(const char *id, const char *file)
{
    char path[400];

    snprintf(path, sizeof(path), "%s/%s/%s", data_dir, id, file);
    return access(path, F_OK) == 0;
}

/*
 * A job's launch stages three shards: two copies hang (worker.data_copies is 2), and past
 * worker.data_stall they are given up, so the third starts and lands while the two are
 * still stuck; the launch then fails naming the stall, not waiting for the hung threads.
 */
Test(worker_data_stall, stuck_copies_give_up_their_places_and_fail_the_launch)
{
    Gs__JobLaunchData ld = GS__JOB_LAUNCH_DATA__INIT;
    Gs__JobData jd = GS__JOB_DATA__INIT;
    Gs__DatasetHolding h = GS__DATASET_HOLDING__INIT, *hp = &h;
    uint32_t port = 0;
    char src[200], id[SHARD_DATASET_ID_SIZE], *argv[] = {"/bin/true"};
    struct shard_manifest *man;
    struct gs_error err;
    uint64_t started;

    run_until(&registers, 1, "registration");
    snprintf(src, sizeof(src), "%s/src", dir);
    cr_assert_eq(mkdir(src, 0755), 0);
    ds_make(src, 2, 1, 1024); /* two train shards and one val, 4 KiB each */
    cr_assert_eq(shard_dataset_id(src, id, &err), 0, "%s", err.msg);
    man = ds_load(src);
    jd.dataset = id;
    jd.source = src;
    jd.shards = (uint32_t)man->nshards;
    jd.tolerance = 0.05;
    jd.seed = 1;
    h.dataset = id;
    h.shards = jd.shards; /* node1 holds none */
    ld.data = &jd;
    ld.n_holdings = 1;
    ld.holdings = &hp;
    ld.n_peer_ports = 1;
    ld.peer_ports = &port;
    launch_data = &ld;
    started = gs_clock_mono_ms();
    launch(71, 1, argv, 1, NULL);
    run_until(&replies, 1, "the launch's answer");
    cr_assert_geq(gs_clock_mono_ms() - started, 1000, "not before worker.data_stall: %s",
                  last_result_message);
    cr_assert_lt(last_result_code, 0, "the launch fails");
    cr_assert_not_null(strstr(last_result_message, "no progress in 1 s (worker.data_stall)"), "%s",
                       last_result_message);
    cr_assert_eq(atomic_load(&stall_gate_calls), 3, "the third copy started");
    int held = 0;
    for (size_t i = 0; i < man->nshards; i++)
        held += cached(id, man->shards[i].file);
    cr_assert_eq(held, 1, "the third copy landed, the two stuck ones did not (%d held)", held);
    shard_manifest_free(man);
}
