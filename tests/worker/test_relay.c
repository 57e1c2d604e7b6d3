/*
 * test_relay.c: the worker's CLI socket (worker/relay.h) and its session table
 * (worker/sessions.h). Suite sessions: numbers start at 1 and are never reused. Suite
 * relay, on a private loop with CLI clients connecting to a socket in a temporary
 * directory and a fake gschedd that records what the relay sends it: a request goes up as
 * a CliRelay with the caller's kernel uid and gid, its answer and end come back down; a
 * CLI that hangs up is reported; while not registered a request is answered -ENOTCONN; a
 * malformed frame ends its session alone; losing gschedd ends every session it knew of (not
 * one that has relayed nothing yet); a socket another relay listens on is refused, a stale
 * one replaced; closing leaves nothing on the loop.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "proto/conn.h"
#include "worker/relay.h"
#include "worker/sessions.h"

/* ---- the session table ---- */

Test(sessions, numbers_sessions_from_one_up_in_the_order_they_first_send)
{
    struct wrk_sessions t;
    int a = 0, b = 0;

    wrk_sessions_init(&t);
    struct wrk_session *s1 = wrk_sessions_open(&t, &a, 1000, 100);
    struct wrk_session *s2 = wrk_sessions_open(&t, &b, 1001, 101);
    cr_assert(s1 != NULL && s2 != NULL);
    cr_assert_eq(s1->id, 0, "numbered by its first frame, not by its connection");
    cr_assert_null(wrk_sessions_find(&t, 0));
    cr_assert_eq(wrk_sessions_number(&t, s2), 1, "the first to send gets 1");
    cr_assert_eq(wrk_sessions_number(&t, s1), 2);
    cr_assert_eq(wrk_sessions_number(&t, s2), 1, "a number is given once");
    cr_assert_eq(s1->id, 2);
    cr_assert_eq(s2->id, 1);
    cr_assert_eq(s1->uid, 1000);
    cr_assert_eq(s2->gid, 101);
    cr_assert_eq(s1->conn, &a);
    cr_assert(!s1->relayed && !s1->ended_there && !s1->closing);
    cr_assert_eq(wrk_sessions_count(&t), 2);
    cr_assert_eq(wrk_sessions_find(&t, 1), s2);
    wrk_sessions_remove(&t, s2);
    cr_assert_null(wrk_sessions_find(&t, 1));
    cr_assert_eq(wrk_sessions_find(&t, 2), s1);
    cr_assert_eq(wrk_sessions_count(&t), 1);
    struct wrk_session *s3 = wrk_sessions_open(&t, &b, 0, 0);
    cr_assert_eq(wrk_sessions_number(&t, s3), 3, "a removed number is not given again");
    cr_assert_null(wrk_sessions_find(&t, 0));
    cr_assert_null(wrk_sessions_find(&t, 4));
    wrk_sessions_release(&t);
    cr_assert_eq(wrk_sessions_count(&t), 0);
}

Test(sessions, removes_from_the_middle_and_the_ends)
{
    struct wrk_sessions t;
    struct wrk_session *s[4];

    wrk_sessions_init(&t);
    for (int i = 0; i < 4; i++) {
        s[i] = wrk_sessions_open(&t, NULL, 0, 0);
        wrk_sessions_number(&t, s[i]);
    }
    wrk_sessions_remove(&t, s[1]);
    wrk_sessions_remove(&t, s[3]);
    wrk_sessions_remove(&t, s[0]);
    cr_assert_eq(wrk_sessions_count(&t), 1);
    cr_assert_eq(wrk_sessions_find(&t, 3), s[2]);
    wrk_sessions_remove(&t, s[2]);
    cr_assert_null(t.head);
    wrk_sessions_release(&t);
}

/* ---- the relay ---- */

#define MAX_UP 16
#define MAX_CLIENTS 2

/* What the relay sent "gschedd". */
struct up_frame {
    uint64_t session;
    uint32_t uid, gid;
    bool close;
    Gs__Envelope *inner; /* decoded frame, NULL with close */
};

/* A CLI connected to the relay. */
struct client {
    struct gs_proto_conn *conn; /* NULL once closed */
    bool closed;
    int nreplies;
    Gs__Envelope__BodyCase last_body;
    uint64_t last_request_id;
    int32_t last_error_code;
};

static uv_loop_t loop;
static uv_timer_t tick; /* keeps uv_run(ONCE) from blocking for ever */
static char dir[64], path[128];
static struct wrk_relay *relay;
static struct up_frame up[MAX_UP];
static int nup, send_rc;
static struct client clients[MAX_CLIENTS];
static bool relay_closed;

static void on_tick(uv_timer_t *t)
{
    (void)t;
}

static int fake_send(const Gs__Envelope *env, void *data)
{
    const Gs__CliRelay *m = env->cli_relay;
    struct up_frame *f = &up[nup];

    (void)data;
    cr_assert_eq(env->body_case, GS__ENVELOPE__BODY_CLI_RELAY);
    cr_assert_lt(nup, MAX_UP);
    if (send_rc < 0)
        return send_rc;
    f->session = m->session;
    f->uid = m->uid;
    f->gid = m->gid;
    f->close = m->close;
    f->inner = NULL;
    if (!m->close)
        cr_assert_eq(gs_proto_decode(m->frame.data, m->frame.len, &f->inner), 0);
    nup++;
    return 0;
}

static void on_closed(void *data)
{
    (void)data;
    relay_closed = true;
}

static struct wrk_relay *new_relay(struct gs_error *err)
{
    struct wrk_relay_opts opts = {
        .path = path, .node_name = "node7", .send = fake_send, .data = NULL};

    return wrk_relay_new(&loop, &opts, err);
}

static void setup(void)
{
    struct gs_error err;

    signal(SIGPIPE, SIG_IGN); /* as the daemons: a vanished peer is an error, not a death */
    snprintf(dir, sizeof(dir), "/tmp/gs-relay-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/w.sock", dir);
    cr_assert_eq(uv_loop_init(&loop), 0);
    uv_timer_init(&loop, &tick);
    uv_timer_start(&tick, on_tick, 1, 1);
    memset(up, 0, sizeof(up));
    memset(clients, 0, sizeof(clients));
    nup = send_rc = 0;
    relay_closed = false;
    relay = new_relay(&err);
    cr_assert_not_null(relay, "%s", err.msg);
}

static void run_until(bool (*cond)(void), const char *what)
{
    uint64_t deadline = gs_clock_mono_ms() + 5000;

    while (!cond()) {
        cr_assert_lt(gs_clock_mono_ms(), deadline, "timed out waiting for %s", what);
        uv_run(&loop, UV_RUN_ONCE);
    }
}

static bool is_relay_closed(void)
{
    return relay_closed;
}

static bool clients_closed(void)
{
    for (int i = 0; i < MAX_CLIENTS; i++) {
        if (clients[i].conn != NULL)
            return false;
    }
    return true;
}

static void teardown(void)
{
    for (int i = 0; i < MAX_CLIENTS; i++) {
        if (clients[i].conn != NULL)
            gs_proto_conn_close(clients[i].conn);
    }
    run_until(clients_closed, "the clients to close");
    wrk_relay_close(relay, on_closed, NULL);
    run_until(is_relay_closed, "the relay to close");
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&loop), 0, "handles left on the loop");
    cr_assert_neq(access(path, F_OK), 0, "the socket file is removed");
    for (int i = 0; i < nup; i++)
        gs_proto_envelope_free(up[i].inner);
    rmdir(dir);
}

static void on_client_message(struct gs_proto_conn *conn, const Gs__Envelope *env, void *data)
{
    struct client *c = data;

    (void)conn;
    c->nreplies++;
    c->last_body = env->body_case;
    c->last_request_id = env->request_id;
    if (env->body_case == GS__ENVELOPE__BODY_ERROR)
        c->last_error_code = env->error->code;
}

static void on_client_close(struct gs_proto_conn *conn, int status, void *data)
{
    struct client *c = data;

    (void)conn;
    (void)status;
    c->conn = NULL;
    c->closed = true;
}

static void on_client_connected(uv_connect_t *req, int status)
{
    struct client *c = req->data;

    free(req);
    cr_assert_eq(status, 0, "connect: %s", uv_strerror(status));
    cr_assert_eq(gs_proto_conn_start(c->conn), 0);
}

/* Connects client i; returns once the handshake is done. */
static void client_connect(int i)
{
    struct client *c = &clients[i];
    struct gs_proto_conn_opts opts = {
        .role = GS__ROLE__ROLE_CLI,
        .name = "gsched",
        .accept_roles = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_SCHEDULER),
        .on_message = on_client_message,
        .on_close = on_client_close,
        .data = c,
    };
    uv_connect_t *req = malloc(sizeof(*req));
    uint64_t deadline = gs_clock_mono_ms() + 5000;

    c->conn = gs_proto_conn_new(&loop, GS_PROTO_PIPE, &opts);
    cr_assert(c->conn != NULL && req != NULL);
    req->data = c;
    uv_pipe_connect(req, (uv_pipe_t *)gs_proto_conn_stream(c->conn), path, on_client_connected);
    while (!gs_proto_conn_is_ready(c->conn)) {
        cr_assert_lt(gs_clock_mono_ms(), deadline, "client %d handshake", i);
        uv_run(&loop, UV_RUN_ONCE);
    }
}

/* Client i sends a QueueRequest under request_id. */
static void client_send(int i, uint64_t request_id)
{
    Gs__QueueRequest q = GS__QUEUE_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    q.include_finished = true;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_QUEUE_REQUEST;
    env.queue_request = &q;
    cr_assert_eq(gs_proto_conn_send(clients[i].conn, &env), 0);
}

static void client_request(int i, uint64_t request_id)
{
    client_connect(i);
    client_send(i, request_id);
}

static int want_up;
static bool enough_up(void)
{
    return nup >= want_up;
}

static void wait_up(int n)
{
    want_up = n;
    run_until(enough_up, "frames to gschedd");
}

static int waited_client;
static bool client_has_reply(void)
{
    return clients[waited_client].nreplies > 0;
}

static bool client_closed(void)
{
    return clients[waited_client].closed;
}

static bool no_sessions(void)
{
    return wrk_relay_sessions(relay) == 0;
}

static void wait_client(int i, bool (*cond)(void), const char *what)
{
    waited_client = i;
    run_until(cond, what);
}

/* A CliRelay from "gschedd": a QueueReply under request_id, or the end marker. */
static void down(uint64_t session, uint64_t request_id, bool close)
{
    Gs__QueueReply qr = GS__QUEUE_REPLY__INIT;
    Gs__Envelope inner = GS__ENVELOPE__INIT;
    Gs__CliRelay m = GS__CLI_RELAY__INIT;
    struct gs_buf packed = GS_BUF_INIT;

    inner.request_id = request_id;
    inner.body_case = GS__ENVELOPE__BODY_QUEUE_REPLY;
    inner.queue_reply = &qr;
    m.session = session;
    m.close = close;
    if (!close) {
        cr_assert_eq(gs_proto_encode(&inner, &packed), 0);
        m.frame.data = (uint8_t *)packed.data + GS_PROTO_HEADER_SIZE;
        m.frame.len = packed.len - GS_PROTO_HEADER_SIZE;
    }
    wrk_relay_from_scheduler(relay, &m);
    gs_buf_release(&packed);
}

TestSuite(relay, .init = setup, .fini = teardown);

Test(relay, relays_a_request_with_the_kernels_uid_and_brings_back_its_answer_and_end)
{
    wrk_relay_set_connected(relay, true);
    client_request(0, 7);
    wait_up(1);
    cr_assert_eq(up[0].session, 1);
    cr_assert_eq(up[0].uid, (uint32_t)getuid());
    cr_assert_eq(up[0].gid, (uint32_t)getgid());
    cr_assert(!up[0].close);
    cr_assert_eq(up[0].inner->body_case, GS__ENVELOPE__BODY_QUEUE_REQUEST);
    cr_assert_eq(up[0].inner->request_id, 7);
    cr_assert(up[0].inner->queue_request->include_finished);
    cr_assert_eq(wrk_relay_sessions(relay), 1);

    down(1, 7, false);
    down(1, 0, true); /* the end right behind the answer: the answer still arrives */
    wait_client(0, client_closed, "the session's end");
    cr_assert_eq(clients[0].nreplies, 1);
    cr_assert_eq(clients[0].last_body, GS__ENVELOPE__BODY_QUEUE_REPLY);
    cr_assert_eq(clients[0].last_request_id, 7);
    cr_assert_eq(nup, 1, "an end that came from gschedd is not echoed back");
    /* The session hears its client out (what it sends after the end is dropped) and goes
     * once the client has closed its side too. */
    run_until(no_sessions, "the session to go once its client has closed");
    cr_assert_eq(nup, 1);
}

Test(relay, numbers_sessions_in_the_order_their_first_frames_leave)
{
    wrk_relay_set_connected(relay, true);
    client_connect(0);
    client_connect(1);
    client_send(1, 21); /* the later connection speaks first */
    wait_up(1);
    client_send(0, 20);
    wait_up(2);
    cr_assert_eq(up[0].session, 1);
    cr_assert_eq(up[0].inner->request_id, 21);
    cr_assert_eq(up[1].session, 2);
    cr_assert_eq(up[1].inner->request_id, 20);
    down(1, 21, false);
    wait_client(1, client_has_reply, "the answer to the first numbered");
    cr_assert_eq(clients[0].nreplies, 0);
}

Test(relay, tells_gschedd_when_the_cli_hangs_up)
{
    wrk_relay_set_connected(relay, true);
    client_request(0, 1);
    wait_up(1);
    gs_proto_conn_close(clients[0].conn);
    wait_up(2);
    cr_assert_eq(up[1].session, 1);
    cr_assert(up[1].close);
    cr_assert_eq(wrk_relay_sessions(relay), 0);
    down(1, 1, false); /* late answer to a session that ended: dropped */
    cr_assert_eq(nup, 2);
}

Test(relay, answers_enotconn_while_not_registered)
{
    client_request(0, 5);
    wait_client(0, client_closed, "the refusal");
    cr_assert_eq(clients[0].last_body, GS__ENVELOPE__BODY_ERROR);
    cr_assert_eq(clients[0].last_request_id, 5);
    cr_assert_eq(clients[0].last_error_code, -ENOTCONN);
    cr_assert_eq(nup, 0, "nothing went to gschedd, not even an end");
}

Test(relay, answers_an_error_when_gschedd_refuses_the_frame)
{
    wrk_relay_set_connected(relay, true);
    send_rc = -ENOBUFS;
    client_request(0, 9);
    wait_client(0, client_closed, "the refusal");
    cr_assert_eq(clients[0].last_body, GS__ENVELOPE__BODY_ERROR);
    cr_assert_eq(clients[0].last_error_code, -ENOBUFS);
}

Test(relay, a_malformed_frame_ends_its_session_alone)
{
    Gs__CliRelay bad = GS__CLI_RELAY__INIT;
    uint8_t garbage[] = {0xff, 0xff, 0xff};

    wrk_relay_set_connected(relay, true);
    client_request(0, 1);
    client_request(1, 2);
    wait_up(2);
    bad.session = up[0].session;
    bad.frame.data = garbage;
    bad.frame.len = sizeof(garbage);
    wrk_relay_from_scheduler(relay, &bad);
    wrk_relay_from_scheduler(relay, &bad); /* again: dropped, the session is closing */
    wait_client(0, client_closed, "the bad session to close");
    wait_up(3);
    cr_assert(up[2].close, "gschedd is told the session ended");
    cr_assert_eq(up[2].session, up[0].session);
    cr_assert_eq(clients[0].nreplies, 0);
    cr_assert_not(clients[1].closed, "the other session goes on");
    cr_assert_eq(wrk_relay_sessions(relay), 1);
    down(up[1].session, 2, false);
    wait_client(1, client_has_reply, "the other session's answer");
    cr_assert_eq(clients[1].last_request_id, 2);
}

Test(relay, frames_for_sessions_never_opened_are_dropped)
{
    wrk_relay_set_connected(relay, true);
    down(99, 1, false);
    down(98, 0, true);
    cr_assert_eq(nup, 0);
    cr_assert_eq(wrk_relay_sessions(relay), 0);
}

Test(relay, losing_gschedd_ends_every_session)
{
    wrk_relay_set_connected(relay, true);
    client_request(0, 1);
    client_request(1, 2);
    wait_up(2);
    wrk_relay_set_connected(relay, false);
    run_until(clients_closed, "every session to end");
    cr_assert_eq(nup, 2, "no end is sent to a gschedd that is gone");
    cr_assert_eq(wrk_relay_sessions(relay), 0);
}

Test(relay, losing_gschedd_leaves_a_session_that_relayed_nothing_yet)
{
    wrk_relay_set_connected(relay, true);
    client_request(0, 1);
    client_connect(1); /* connected, nothing sent */
    wait_up(1);
    wrk_relay_set_connected(relay, false);
    wait_client(0, client_closed, "the relayed session to end");
    cr_assert_not(clients[1].closed, "a session gschedd never saw stays open");
    cr_assert_eq(wrk_relay_sessions(relay), 1);

    wrk_relay_set_connected(relay, true);
    client_send(1, 4); /* its first request goes up once the link is back */
    wait_up(2);
    cr_assert_eq(up[1].inner->request_id, 4);
    down(up[1].session, 4, false);
    wait_client(1, client_has_reply, "its answer");
    cr_assert_eq(clients[1].last_request_id, 4);
}

Test(relay, refuses_a_socket_another_relay_listens_on)
{
    struct gs_error err;
    struct wrk_relay *second = new_relay(&err);

    cr_assert_null(second);
    cr_assert_eq(err.code, -EADDRINUSE);
    cr_assert(strstr(err.msg, path) != NULL, "%s", err.msg);
    uv_run(&loop, UV_RUN_NOWAIT); /* its listener closes */
    client_request(0, 1);         /* the first one still serves */
}

Test(relay, replaces_a_stale_socket_file)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    struct gs_error err;
    int fd;

    wrk_relay_close(relay, on_closed, NULL);
    run_until(is_relay_closed, "the relay to close");
    relay_closed = false;
    /* A socket file nobody listens on, as a killed worker leaves. */
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    memcpy(sun.sun_path, path, strlen(path) + 1);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    close(fd);
    relay = new_relay(&err);
    cr_assert_not_null(relay, "%s", err.msg);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0666, "anyone may connect");
}

Test(relay, refuses_a_path_too_long_for_a_unix_socket)
{
    char longpath[200];
    struct wrk_relay_opts opts = {.path = longpath, .node_name = "n", .send = fake_send};
    struct gs_error err;

    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[0] = '/';
    longpath[sizeof(longpath) - 1] = '\0';
    cr_assert_null(wrk_relay_new(&loop, &opts, &err));
    cr_assert_eq(err.code, -ENAMETOOLONG);
}
