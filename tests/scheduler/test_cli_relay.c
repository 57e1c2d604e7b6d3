/*
 * test_cli_relay.c: gschedd serving CLI sessions a worker relays (CliRelay, sched_cli.c),
 * in process on a private loop, with a fake worker on loopback TCP that registers a node
 * and then speaks for CLIs of its node (this process's uid has a job on it, submitted on
 * gschedd's socket). A relayed request is answered inside CliRelay frames and its session
 * ended with the close marker; the uid the worker vouches for is the submitter's; a uid
 * with no job on the node is refused; a malformed frame, or one from another uid, ends that session
 * alone; a frame for a session already ended is answered with its end and an end for one never
 * opened is dropped; a CliRelay inside a relayed session, or from a CLI's own connection,
 * is refused; a session held by a wait ends when its worker goes, or when gschedd stops,
 * which leaves nothing on the loop, and closes a worker connection that never registered.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/config.h"
#include "proto/conn.h"
#include "scheduler/sched.h"

#define MAX_DOWN 32

/* A CliRelay gschedd sent the worker. */
struct down_frame {
    uint64_t session;
    bool close;
    Gs__Envelope *inner;
};

static uv_loop_t loop;
static uv_timer_t tick;
static char dir[64], sock[128];
static struct gs_config cfg;
static struct sched_ctx *sched;
static struct gs_proto_conn *worker, *cli;
static struct gs_proto_conn *idle; /* a worker connection that never registers */
static bool registered, worker_closed, sched_stopped, cli_closed;
static bool expect_refusal, refused;
static struct down_frame down[MAX_DOWN];
static int ndown;
static Gs__Envelope__BodyCase cli_body;
static int32_t cli_error;
static uint64_t cli_job;
static uint32_t me; /* this process's uid: the one with a job on n1 (own_job_on_n1) */

static void on_tick(uv_timer_t *t)
{
    (void)t;
}

static void run_until(bool (*cond)(void), const char *what)
{
    uint64_t deadline = gs_clock_mono_ms() + 5000;

    while (!cond()) {
        cr_assert_lt(gs_clock_mono_ms(), deadline, "timed out waiting for %s", what);
        uv_run(&loop, UV_RUN_ONCE);
    }
}

/* Registers node name (8 cores, 1 GiB, no GPUs) on conn. */
static void send_register(struct gs_proto_conn *conn, const char *name)
{
    Gs__NodeTopology topo = GS__NODE_TOPOLOGY__INIT;
    Gs__NodeRegister reg = GS__NODE_REGISTER__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    topo.node_name = (char *)name;
    topo.address = "127.0.0.1";
    topo.cores = 8;
    topo.memory_mib = 1024;
    reg.topology = &topo;
    env.body_case = GS__ENVELOPE__BODY_NODE_REGISTER;
    env.node_register = &reg;
    cr_assert_eq(gs_proto_conn_send(conn, &env), 0);
}

static void on_worker_ready(struct gs_proto_conn *conn, const Gs__Hello *peer, void *data)
{
    (void)peer;
    (void)data;
    send_register(conn, "n1");
}

static bool launched; /* a LaunchTasks came: the job it starts is running on n1 */

static void on_worker_message(struct gs_proto_conn *conn, const Gs__Envelope *env, void *data)
{
    struct down_frame *f = &down[ndown];

    (void)conn;
    (void)data;
    if (env->body_case == GS__ENVELOPE__BODY_NODE_REGISTER_REPLY) {
        if (expect_refusal && !env->node_register_reply->accepted) {
            refused = true;
            return;
        }
        cr_assert(env->node_register_reply->accepted, "%s", env->node_register_reply->reason);
        registered = true;
        return;
    }
    if (env->body_case == GS__ENVELOPE__BODY_LAUNCH_TASKS) {
        launched = true; /* the own job started; this worker runs nothing */
        return;
    }
    if (env->body_case != GS__ENVELOPE__BODY_CLI_RELAY)
        return;
    cr_assert_lt(ndown, MAX_DOWN);
    f->session = env->cli_relay->session;
    f->close = env->cli_relay->close;
    f->inner = NULL;
    if (!f->close)
        cr_assert_eq(
            gs_proto_decode(env->cli_relay->frame.data, env->cli_relay->frame.len, &f->inner), 0);
    ndown++;
}

static void on_worker_close(struct gs_proto_conn *conn, int status, void *data)
{
    (void)conn;
    (void)status;
    (void)data;
    worker = NULL;
    worker_closed = true;
}

static void on_connected(uv_connect_t *req, int status)
{
    struct gs_proto_conn *conn = req->data;

    free(req);
    cr_assert_eq(status, 0, "connect: %s", uv_strerror(status));
    cr_assert_eq(gs_proto_conn_start(conn), 0);
}

/* A worker connection with opts to gschedd's worker port, started once connected. */
static struct gs_proto_conn *dial_worker(const struct gs_proto_conn_opts *opts)
{
    struct gs_proto_conn *conn = gs_proto_conn_new(&loop, GS_PROTO_TCP, opts);
    uv_connect_t *req = malloc(sizeof(*req));
    struct sockaddr_in addr;

    cr_assert(conn != NULL && req != NULL);
    req->data = conn;
    uv_ip4_addr("127.0.0.1", sched_worker_port(sched), &addr);
    cr_assert_eq(uv_tcp_connect(req, (uv_tcp_t *)gs_proto_conn_stream(conn),
                                (const struct sockaddr *)&addr, on_connected),
                 0);
    return conn;
}

static bool is_registered(void)
{
    return registered;
}

/* A fake worker for n1 on loopback TCP, registered when the loop has run until it is. */
static void connect_worker(void)
{
    struct gs_proto_conn_opts opts = {
        .role = GS__ROLE__ROLE_WORKER,
        .name = "n1",
        .accept_roles = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_SCHEDULER),
        .on_ready = on_worker_ready,
        .on_message = on_worker_message,
        .on_close = on_worker_close,
    };

    registered = worker_closed = false;
    worker = dial_worker(&opts);
    run_until(is_registered, "the registration");
}

static void own_job_on_n1(void);

static void setup(void)
{
    struct gs_error err;

    signal(SIGPIPE, SIG_IGN);
    snprintf(dir, sizeof(dir), "/tmp/gs-cli-relay-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(sock, sizeof(sock), "%s/g.sock", dir);
    cr_assert_eq(gs_config_init(&cfg), 0);
    cfg.port = 0;
    free(cfg.socket_path);
    free(cfg.state_dir);
    free(cfg.http_listen);
    cfg.http_listen = NULL;
    free(cfg.auth_key); /* the workers here are bare connections (tests/proto tests keys) */
    cfg.auth_key = NULL;
    cfg.socket_path = strdup(sock);
    cfg.state_dir = strdup(dir);
    cfg.log_level = GS_LOG_ERROR;
    cr_assert_eq(uv_loop_init(&loop), 0);
    uv_timer_init(&loop, &tick);
    uv_timer_start(&tick, on_tick, 1, 1);
    memset(down, 0, sizeof(down));
    ndown = 0;
    registered = worker_closed = sched_stopped = cli_closed = false;
    expect_refusal = refused = false;
    sched = sched_new(&loop, &cfg, &err);
    cr_assert_not_null(sched, "%s", err.msg);
    connect_worker();
    me = (uint32_t)getuid();
    own_job_on_n1();
}

static bool is_stopped(void)
{
    return sched_stopped && worker == NULL && cli == NULL && idle == NULL;
}

static void on_stopped(void *data)
{
    (void)data;
    sched_stopped = true;
}

static void teardown(void)
{
    if (worker != NULL)
        gs_proto_conn_close(worker);
    sched_stop(sched, on_stopped, NULL);
    run_until(is_stopped, "gschedd to stop");
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&loop), 0, "handles left on the loop");
    for (int i = 0; i < ndown; i++)
        gs_proto_envelope_free(down[i].inner);
    gs_config_release(&cfg);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* A CliRelay from the worker: inner packed into its frame (NULL: the close marker). */
static void relay_raw(uint64_t session, uint32_t uid, const void *frame, size_t len, bool close)
{
    Gs__CliRelay m = GS__CLI_RELAY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    m.session = session;
    m.uid = uid;
    m.gid = uid;
    m.frame.data = (uint8_t *)frame;
    m.frame.len = len;
    m.close = close;
    env.body_case = GS__ENVELOPE__BODY_CLI_RELAY;
    env.cli_relay = &m;
    cr_assert_eq(gs_proto_conn_send(worker, &env), 0);
}

static void relay(uint64_t session, uint32_t uid, const Gs__Envelope *inner)
{
    struct gs_buf packed = GS_BUF_INIT;

    cr_assert_eq(gs_proto_encode(inner, &packed), 0);
    relay_raw(session, uid, packed.data + GS_PROTO_HEADER_SIZE, packed.len - GS_PROTO_HEADER_SIZE,
              false);
    gs_buf_release(&packed);
}

static int want_down;
static bool enough_down(void)
{
    return ndown >= want_down;
}

static void wait_down(int n)
{
    want_down = n;
    run_until(enough_down, "frames from gschedd");
}

/* Lets gschedd handle everything sent so far, with no answer expected. */
static void settle(void)
{
    uint64_t until = gs_clock_mono_ms() + 100;

    while (gs_clock_mono_ms() < until)
        uv_run(&loop, UV_RUN_ONCE);
}

static void nodes_request(Gs__Envelope *env, Gs__NodesRequest *req, uint64_t request_id)
{
    gs__nodes_request__init(req);
    env->request_id = request_id;
    env->body_case = GS__ENVELOPE__BODY_NODES_REQUEST;
    env->nodes_request = req;
}

/* A SubmitRequest for a one-node job running `true`, built in p (which env points into). */
struct submit_parts {
    Gs__Resources res;
    Gs__RunSpec run;
    Gs__JobSpec spec;
    Gs__SubmitRequest sub;
    char *argv[1];
};

static void submit_envelope(Gs__Envelope *env, struct submit_parts *p, char *name,
                            uint64_t request_id)
{
    gs__resources__init(&p->res);
    gs__run_spec__init(&p->run);
    gs__job_spec__init(&p->spec);
    gs__submit_request__init(&p->sub);
    gs__envelope__init(env);
    p->argv[0] = "true";
    p->res.nodes = 1;
    p->run.n_argv = 1;
    p->run.argv = p->argv;
    p->run.tasks_per_node = 1;
    p->run.workdir = "/";
    p->run.stdout_pattern = "/dev/null";
    p->spec.name = name;
    p->spec.resources = &p->res;
    p->spec.run = &p->run;
    p->sub.spec = &p->spec;
    env->request_id = request_id;
    env->body_case = GS__ENVELOPE__BODY_SUBMIT_REQUEST;
    env->submit_request = &p->sub;
}

/* Submits a one-node job in relayed session `session` as uid; returns its id. */
static uint64_t submit_job(uint64_t session, uint32_t uid)
{
    struct submit_parts p;
    Gs__Envelope env;
    int first = ndown;

    submit_envelope(&env, &p, "relayed", 4);
    relay(session, uid, &env);
    wait_down(first + 2);
    cr_assert_eq(down[first].inner->body_case, GS__ENVELOPE__BODY_SUBMIT_REPLY, "%s",
                 down[first].inner->body_case == GS__ENVELOPE__BODY_ERROR
                     ? down[first].inner->error->message
                     : "");
    cr_assert(down[first + 1].close);
    return down[first].inner->submit_reply->job_id;
}

TestSuite(cli_relay, .init = setup, .fini = teardown);

Test(cli_relay, answers_a_relayed_request_then_ends_its_session)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__NodesRequest req;

    nodes_request(&env, &req, 3);
    relay(1, me, &env);
    wait_down(2);
    cr_assert_eq(down[0].session, 1);
    cr_assert_eq(down[0].inner->body_case, GS__ENVELOPE__BODY_NODES_REPLY);
    cr_assert_eq(down[0].inner->request_id, 3);
    cr_assert_eq(down[0].inner->nodes_reply->n_nodes, 1);
    cr_assert_str_eq(down[0].inner->nodes_reply->nodes[0]->name, "n1");
    cr_assert_eq(down[1].session, 1);
    cr_assert(down[1].close, "one request per session: then its end");
    relay_raw(1, me, NULL, 0, true); /* the worker's end crossing gschedd's: dropped */
    settle();
    cr_assert_eq(ndown, 2);
}

Test(cli_relay, a_submission_belongs_to_the_uid_the_worker_vouches_for)
{
    Gs__ShowRequest show = GS__SHOW_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    show.job_id = submit_job(1, me);
    env.request_id = 5;
    env.body_case = GS__ENVELOPE__BODY_SHOW_REQUEST;
    env.show_request = &show;
    relay(2, me, &env);
    wait_down(4);
    cr_assert_eq(down[2].session, 2);
    cr_assert_eq(down[2].inner->body_case, GS__ENVELOPE__BODY_SHOW_REPLY);
    cr_assert_eq(down[2].inner->show_reply->job->user->uid, me);
}

/* A worker speaks only for the users whose jobs run on its node. */
Test(cli_relay, a_uid_without_a_job_on_the_node_is_refused)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__NodesRequest req;

    nodes_request(&env, &req, 4);
    relay(1, me + 1, &env);
    wait_down(2);
    cr_assert_eq(down[0].inner->body_case, GS__ENVELOPE__BODY_ERROR);
    cr_assert_eq(down[0].inner->request_id, 4);
    cr_assert_eq(down[0].inner->error->code, -EPERM);
    cr_assert(strstr(down[0].inner->error->message, "has no running job on n1") != NULL, "%s",
              down[0].inner->error->message);
    cr_assert(down[1].close);
    relay(2, me, &env); /* the same worker, for a user whose job runs there */
    wait_down(4);
    cr_assert_eq(down[2].inner->body_case, GS__ENVELOPE__BODY_NODES_REPLY);
}

/* A newer CLI's field gschedd does not know is an option it would ignore: refused, named. */
Test(cli_relay, a_request_holding_a_field_gschedd_does_not_know_is_refused)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__NodesRequest req;
    uint8_t one = 1;
    ProtobufCMessageUnknownField extra = {
        .tag = 4000, .wire_type = PROTOBUF_C_WIRE_TYPE_VARINT, .len = 1, .data = &one};
    char want[32];
    const Gs__ErrorReply *err;

    nodes_request(&env, &req, 7);
    req.base.n_unknown_fields = 1;
    req.base.unknown_fields = &extra;
    relay(1, me, &env);
    wait_down(2);
    cr_assert_eq(down[0].inner->body_case, GS__ENVELOPE__BODY_ERROR);
    err = down[0].inner->error;
    cr_assert_eq(down[0].inner->request_id, 7);
    cr_assert_eq(err->code, -EPROTONOSUPPORT);
    cr_assert(strstr(err->message, "does not know field nodes_request.4000 of the request") != NULL,
              "%s", err->message);
    cr_assert_eq(err->n_details, 2);
    snprintf(want, sizeof(want), "field=%u.4000", (unsigned)GS__ENVELOPE__BODY_NODES_REQUEST);
    cr_assert_str_eq(err->details[0], want);
    snprintf(want, sizeof(want), "protocol=%u.%u", GS_PROTO_VERSION_MAJOR, GS_PROTO_VERSION_MINOR);
    cr_assert_str_eq(err->details[1], want);
    cr_assert(down[1].close);
}

/* scheduler.max_submit_jobs: a user's jobs pending or running at once (root's too). */
Test(cli_relay, submissions_past_the_users_limit_are_refused)
{
    struct submit_parts p;
    Gs__Envelope env;

    cfg.max_submit_jobs = 2; /* the own job and one more */
    submit_job(1, me);
    submit_envelope(&env, &p, "third", 6);
    relay(2, me, &env);
    wait_down(4);
    cr_assert_eq(down[2].inner->body_case, GS__ENVELOPE__BODY_ERROR);
    cr_assert_eq(down[2].inner->error->code, -EDQUOT);
    cr_assert(strstr(down[2].inner->error->message, "has 2 jobs pending or running") != NULL, "%s",
              down[2].inner->error->message);
}

Test(cli_relay, a_malformed_frame_ends_that_session_alone)
{
    uint8_t garbage[] = {0xff, 0xff, 0xff};
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__NodesRequest req;

    relay_raw(1, me, garbage, sizeof(garbage), false);
    wait_down(1);
    cr_assert_eq(down[0].session, 1);
    cr_assert(down[0].close);
    nodes_request(&env, &req, 6);
    relay(1, me, &env);              /* an ended session's number: only its end again */
    relay_raw(9, me, NULL, 0, true); /* the end of one never opened: nothing */
    relay(2, me, &env);              /* the next session is served */
    wait_down(4);
    cr_assert_eq(down[1].session, 1);
    cr_assert(down[1].close);
    cr_assert_eq(down[2].session, 2);
    cr_assert_eq(down[2].inner->body_case, GS__ENVELOPE__BODY_NODES_REPLY);
    cr_assert_eq(down[3].session, 2);
    cr_assert(down[3].close);
    settle();
    cr_assert_eq(ndown, 4, "nothing else for the dropped frames");
    cr_assert_not(worker_closed, "the worker's connection stays");
}

Test(cli_relay, a_session_whose_uid_changes_is_ended)
{
    Gs__WaitRequest wait = GS__WAIT_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    uint64_t job = submit_job(1, me);

    wait.n_job_ids = 1;
    wait.job_ids = &job;
    env.request_id = 8;
    env.body_case = GS__ENVELOPE__BODY_WAIT_REQUEST;
    env.wait_request = &wait;
    relay(2, me, &env); /* held: the job runs on a worker that runs nothing */
    settle();
    cr_assert_eq(ndown, 2);
    relay(2, me + 1, &env); /* the same session, another uid */
    wait_down(3);
    cr_assert_eq(down[2].session, 2);
    cr_assert(down[2].close);
    settle();
    cr_assert_eq(ndown, 3);
}

Test(cli_relay, refuses_a_cli_relay_inside_a_relayed_session)
{
    Gs__CliRelay nested = GS__CLI_RELAY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    nested.session = 1;
    nested.uid = 0;
    env.request_id = 2;
    env.body_case = GS__ENVELOPE__BODY_CLI_RELAY;
    env.cli_relay = &nested;
    relay(1, me, &env);
    wait_down(2);
    cr_assert_eq(down[0].inner->body_case, GS__ENVELOPE__BODY_ERROR);
    cr_assert_eq(down[0].inner->error->code, -EPERM);
    cr_assert(down[1].close);
}

static void on_cli_ready(struct gs_proto_conn *conn, const Gs__Hello *peer, void *data)
{
    Gs__CliRelay m = GS__CLI_RELAY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    (void)peer;
    (void)data;
    m.session = 1;
    m.uid = 0;
    env.request_id = 11;
    env.body_case = GS__ENVELOPE__BODY_CLI_RELAY;
    env.cli_relay = &m;
    cr_assert_eq(gs_proto_conn_send(conn, &env), 0);
}

static void on_cli_message(struct gs_proto_conn *conn, const Gs__Envelope *env, void *data)
{
    (void)conn;
    (void)data;
    cli_body = env->body_case;
    if (env->body_case == GS__ENVELOPE__BODY_ERROR)
        cli_error = env->error->code;
    if (env->body_case == GS__ENVELOPE__BODY_SUBMIT_REPLY)
        cli_job = env->submit_reply->job_id;
}

static void on_cli_close(struct gs_proto_conn *conn, int status, void *data)
{
    (void)conn;
    (void)status;
    (void)data;
    cli = NULL;
    cli_closed = true;
}

static bool is_cli_closed(void)
{
    return cli_closed;
}

static void on_cli_conn_connected(uv_connect_t *req, int status)
{
    struct gs_proto_conn *conn = req->data;

    free(req);
    cr_assert_eq(status, 0);
    cr_assert_eq(gs_proto_conn_start(conn), 0);
}

/* A CLI connection to gschedd's socket, started once connected. */
static struct gs_proto_conn *cli_conn(gs_proto_ready_cb on_ready, gs_proto_close_cb on_close)
{
    struct gs_proto_conn_opts opts = {
        .role = GS__ROLE__ROLE_CLI,
        .name = "gsched",
        .accept_roles = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_SCHEDULER),
        .on_ready = on_ready,
        .on_message = on_cli_message,
        .on_close = on_close,
    };
    uv_connect_t *req = malloc(sizeof(*req));
    struct gs_proto_conn *conn = gs_proto_conn_new(&loop, GS_PROTO_PIPE, &opts);

    cr_assert(conn != NULL && req != NULL);
    req->data = conn;
    uv_pipe_connect(req, (uv_pipe_t *)gs_proto_conn_stream(conn), sock, on_cli_conn_connected);
    return conn;
}

/* A job's submission, from this process on gschedd's own socket. */
static void on_own_ready(struct gs_proto_conn *conn, const Gs__Hello *peer, void *data)
{
    struct submit_parts p;
    Gs__Envelope env;

    (void)peer;
    (void)data;
    submit_envelope(&env, &p, "own", 1);
    cr_assert_eq(gs_proto_conn_send(conn, &env), 0);
}

/* A job of this process's uid (me) running on n1, submitted on gschedd's socket: n1 relays
 * only for users whose jobs run there. The fake worker runs nothing, so it stays RUNNING. */
static bool is_launched(void)
{
    return launched;
}

/* Waits for the job to start, not only for its submission: a relay that came between the
 * two was refused (no job of the user on the node), as the planning pass may run later. */
static void own_job_on_n1(void)
{
    cli_closed = false;
    cli_job = 0;
    launched = false;
    cli = cli_conn(on_own_ready, on_cli_close);
    run_until(is_cli_closed, "the own job's submission");
    cr_assert_eq(cli_body, GS__ENVELOPE__BODY_SUBMIT_REPLY, "error %d", cli_error);
    run_until(is_launched, "the own job's start on n1");
    cli_closed = false;
}

Test(cli_relay, refuses_a_cli_relay_from_a_cli_connection)
{
    cli = cli_conn(on_cli_ready, on_cli_close);
    run_until(is_cli_closed, "the refusal");
    cr_assert_eq(cli_body, GS__ENVELOPE__BODY_ERROR);
    cr_assert_eq(cli_error, -EPERM);
}

static bool is_worker_closed(void)
{
    return worker_closed;
}

Test(cli_relay, sessions_end_with_their_workers_connection)
{
    Gs__WaitRequest wait = GS__WAIT_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    uint64_t job = submit_job(1, me);

    /* A wait held until the job ends, which it cannot: this worker runs nothing. */
    wait.n_job_ids = 1;
    wait.job_ids = &job;
    env.request_id = 2;
    env.body_case = GS__ENVELOPE__BODY_WAIT_REQUEST;
    env.wait_request = &wait;
    relay(2, me, &env);
    settle();
    cr_assert_eq(ndown, 2, "the wait is held");
    gs_proto_conn_close(worker);
    run_until(is_worker_closed, "the worker to go");
    settle(); /* gschedd ends the held session; teardown checks nothing is left */
}

Test(cli_relay, stops_with_a_relayed_session_still_held)
{
    Gs__WaitRequest wait = GS__WAIT_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    uint64_t job = submit_job(1, me);

    wait.n_job_ids = 1;
    wait.job_ids = &job;
    env.request_id = 3;
    env.body_case = GS__ENVELOPE__BODY_WAIT_REQUEST;
    env.wait_request = &wait;
    relay(2, me, &env);
    settle();
    cr_assert_eq(ndown, 2, "the wait is held");
    /* teardown stops gschedd now: the session ends with it, nothing is left on the loop */
}

static bool is_refused_and_closed(void)
{
    return refused && worker_closed;
}

Test(cli_relay, a_second_node_name_on_one_connection_is_refused_and_frees_the_first)
{
    expect_refusal = true;
    send_register(worker, "n2");
    run_until(is_refused_and_closed, "the refusal and the close");
    /* n1 no longer points at the closed connection: a new worker registers it at once. */
    expect_refusal = false;
    connect_worker();
}

static void on_quiet_ready(struct gs_proto_conn *conn, const Gs__Hello *peer, void *data)
{
    (void)conn;
    (void)peer;
    (void)data;
}

static int quiet_closed;

static void on_quiet_close(struct gs_proto_conn *conn, int status, void *data)
{
    (void)conn;
    (void)status;
    (void)data;
    quiet_closed++;
}

/* A CLI connection that says Hello and then nothing. */
static struct gs_proto_conn *quiet_cli(void)
{
    return cli_conn(on_quiet_ready, on_quiet_close);
}

static bool one_quiet_closed(void)
{
    return quiet_closed >= 1;
}

static bool two_quiet_closed(void)
{
    return quiet_closed >= 2;
}

Test(cli_relay, a_cli_connection_that_asks_nothing_is_closed_after_the_request_timeout)
{
    uint64_t start = gs_clock_mono_ms();

    quiet_closed = 0;
    cfg.request_timeout_ms = 1000; /* gschedd reads its configuration where it uses it */
    quiet_cli();
    run_until(one_quiet_closed, "the silent connection to be closed");
    cr_assert_geq(gs_clock_mono_ms() - start, 1000, "not before the timeout");
}

Test(cli_relay, connections_beyond_the_per_user_limit_are_refused)
{
    struct gs_proto_conn *first;

    quiet_closed = 0;
    cfg.max_connections_per_user = 1;
    first = quiet_cli();
    quiet_cli();
    run_until(one_quiet_closed, "the second connection to be refused");
    cr_assert_eq(quiet_closed, 1);
    gs_proto_conn_close(first);
    run_until(two_quiet_closed, "the first to close");
}

static void on_quiet_tcp_connected(uv_connect_t *req, int status)
{
    struct gs_proto_conn *conn = req->data;

    free(req);
    cr_assert_eq(status, 0);
    cr_assert_eq(gs_proto_conn_start(conn), 0);
}

Test(cli_relay, a_worker_connection_that_never_registers_is_closed)
{
    struct gs_proto_conn_opts opts = {
        .role = GS__ROLE__ROLE_WORKER,
        .name = "silent",
        .accept_roles = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_SCHEDULER),
        .on_ready = on_quiet_ready,
        .on_close = on_quiet_close,
    };
    struct gs_proto_conn *conn = gs_proto_conn_new(&loop, GS_PROTO_TCP, &opts);
    uv_connect_t *req = malloc(sizeof(*req));
    struct sockaddr_in addr;

    cr_assert(conn != NULL && req != NULL);
    quiet_closed = 0;
    cfg.request_timeout_ms = 1000;
    req->data = conn;
    uv_ip4_addr("127.0.0.1", sched_worker_port(sched), &addr);
    cr_assert_eq(uv_tcp_connect(req, (uv_tcp_t *)gs_proto_conn_stream(conn),
                                (const struct sockaddr *)&addr, on_quiet_tcp_connected),
                 0);
    run_until(one_quiet_closed, "the unregistered worker connection to be closed");
    cr_assert(registered && !worker_closed, "the registered worker stays");
}

static bool idle_ready; /* its handshake is done */

static void on_idle_ready(struct gs_proto_conn *conn, const Gs__Hello *peer, void *data)
{
    (void)conn;
    (void)peer;
    (void)data;
    idle_ready = true;
}

static void on_idle_close(struct gs_proto_conn *conn, int status, void *data)
{
    (void)conn;
    (void)status;
    (void)data;
    idle = NULL;
}

static bool is_idle_ready(void)
{
    return idle_ready;
}

/* gschedd's stop closes a worker connection that never registered instead of waiting for
 * its peer to (live_fuzz found gschedd hanging on SIGTERM behind one). */
Test(cli_relay, stop_closes_a_worker_connection_that_never_registered)
{
    struct gs_proto_conn_opts opts = {
        .role = GS__ROLE__ROLE_WORKER,
        .name = "n9",
        .accept_roles = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_SCHEDULER),
        .on_ready = on_idle_ready,
        .on_close = on_idle_close,
    };

    idle_ready = false;
    idle = dial_worker(&opts);
    run_until(is_idle_ready, "the idle worker's handshake");
    /* teardown stops gschedd now: it must close this connection too, or it never stops */
}
