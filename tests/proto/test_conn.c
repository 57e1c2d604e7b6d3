/*
 * test_conn.c: protocol connections on a private libuv loop, over socketpairs and loopback
 * TCP. Two connections handshake and exchange requests; a reply sent right before closing
 * still arrives; a peer of another protocol major, a garbage-sending peer, a peer that
 * vanishes mid-frame, sends no Hello, a second Hello, an unknown body or the wrong role is
 * closed with the right reason (and told why) while other connections on the loop carry
 * on. With a cluster key, peers holding it become ready and others (another key, no key, no
 * proof, a reflected proof, an echoed nonce) never do. "Raw" peers are plain blocking
 * sockets driven with the fd helpers.
 *
 * No sleeps: the loop runs until a condition holds, bounded by a timer that fails the test.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "proto/conn.h"
#include "proto/seal.h"
#include "tests/loop_wait.h"

#define DEADLINE_MS 5000
#define MAX_SEEN 16

struct side {
    struct gs_proto_conn *conn;
    int readies;
    int closes;
    int status;
    int messages;
    Gs__Envelope__BodyCase bodies[MAX_SEEN];
    uint64_t request_ids[MAX_SEEN];
    uint64_t last_job_id;
    char peer_name[64];    /* the name in the peer's Hello */
    bool echo;             /* answer a SubmitRequest with a SubmitReply of the same id */
    bool close_on_message; /* close (after echoing) on the first message */
};

static uv_loop_t loop;
/* Runs the loop until cond holds; fails the test when DEADLINE_MS pass first. */
#define RUN_UNTIL(cond) GS_TEST_RUN_UNTIL(&loop, cond, DEADLINE_MS)

static void count_leftover(uv_handle_t *handle, void *arg)
{
    if (!uv_is_closing(handle)) {
        (*(int *)arg)++;
        uv_close(handle, NULL);
    }
}

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    cr_assert_eq(uv_loop_init(&loop), 0);
}

static void teardown(void)
{
    int leftover = 0;

    uv_walk(&loop, count_leftover, &leftover);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(leftover, 0, "handles left open");
    cr_assert_eq(uv_loop_close(&loop), 0, "handles leaked");
}

TestSuite(conn, .init = setup, .fini = teardown, .timeout = 30);

/* ---- connection callbacks, recording into a struct side ---- */

static void send_request(struct gs_proto_conn *conn, uint64_t request_id)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__SubmitRequest submit = GS__SUBMIT_REQUEST__INIT;
    Gs__JobSpec spec = GS__JOB_SPEC__INIT;

    spec.name = "train";
    submit.spec = &spec;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_SUBMIT_REQUEST;
    env.submit_request = &submit;
    cr_assert_eq(gs_proto_conn_send(conn, &env), 0);
}

static void send_reply(struct gs_proto_conn *conn, uint64_t request_id)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__SubmitReply reply = GS__SUBMIT_REPLY__INIT;

    reply.job_id = request_id * 10;
    reply.state = GS__JOB_STATE__JOB_STATE_PENDING;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_SUBMIT_REPLY;
    env.submit_reply = &reply;
    cr_assert_eq(gs_proto_conn_send(conn, &env), 0);
}

static void on_ready(struct gs_proto_conn *conn, const Gs__Hello *peer, void *data)
{
    struct side *s = data;

    cr_assert(gs_proto_conn_is_ready(conn));
    cr_assert_eq(gs_proto_conn_peer_hello(conn), peer);
    snprintf(s->peer_name, sizeof(s->peer_name), "%s", peer->name);
    s->readies++;
}

static void on_message(struct gs_proto_conn *conn, const Gs__Envelope *env, void *data)
{
    struct side *s = data;

    cr_assert_lt(s->messages, MAX_SEEN);
    s->bodies[s->messages] = env->body_case;
    s->request_ids[s->messages] = env->request_id;
    s->messages++;
    if (env->body_case == GS__ENVELOPE__BODY_SUBMIT_REPLY)
        s->last_job_id = env->submit_reply->job_id;
    if (s->echo && env->body_case == GS__ENVELOPE__BODY_SUBMIT_REQUEST)
        send_reply(conn, env->request_id);
    if (s->close_on_message)
        gs_proto_conn_close(conn);
}

static void on_close(struct gs_proto_conn *conn, int status, void *data)
{
    struct side *s = data;

    cr_assert_eq(s->conn, conn);
    s->closes++;
    s->status = status;
    s->conn = NULL;
}

static struct gs_proto_conn_opts side_opts(struct side *s, Gs__Role role, const char *name)
{
    struct gs_proto_conn_opts opts = {0};

    opts.role = role;
    opts.name = name;
    opts.on_ready = on_ready;
    opts.on_message = on_message;
    opts.on_close = on_close;
    opts.data = s;
    return opts;
}

/* A started connection over fd (which it takes). */
static void open_conn(int fd, struct side *s, const struct gs_proto_conn_opts *opts)
{
    s->conn = gs_proto_conn_new(&loop, GS_PROTO_PIPE, opts);
    cr_assert_not_null(s->conn);
    cr_assert_eq(uv_pipe_open((uv_pipe_t *)gs_proto_conn_stream(s->conn), fd), 0);
    cr_assert_eq(gs_proto_conn_start(s->conn), 0);
}

/* A scheduler-side connection a and a worker-side connection b, joined by a socketpair. */
static void conn_pair(struct side *a, struct side *b)
{
    struct gs_proto_conn_opts oa = side_opts(a, GS__ROLE__ROLE_SCHEDULER, "gschedd");
    struct gs_proto_conn_opts ob = side_opts(b, GS__ROLE__ROLE_WORKER, "n1");
    int sv[2];

    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    open_conn(sv[0], a, &oa);
    open_conn(sv[1], b, &ob);
}

/* A connection under test (opts may be NULL) and the raw socket of its peer, returned. */
static int raw_pair(struct side *s, const struct gs_proto_conn_opts *opts)
{
    struct gs_proto_conn_opts o = side_opts(s, GS__ROLE__ROLE_SCHEDULER, "gschedd");
    int sv[2];

    if (opts != NULL) {
        o = *opts;
        o.on_ready = on_ready;
        o.on_message = on_message;
        o.on_close = on_close;
        o.data = s;
    }
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    open_conn(sv[0], s, &o);
    return sv[1];
}

static void raw_send_hello(int fd, uint32_t major, Gs__Role role)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__Hello hello;

    gs_proto_hello_init(&hello, role, "raw");
    hello.protocol_major = major;
    env.body_case = GS__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    cr_assert_eq(gs_proto_write_fd(fd, &env, 1000), 0);
}

static void heartbeat_frame(struct gs_buf *out, uint64_t seq)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__Heartbeat hb = GS__HEARTBEAT__INIT;

    hb.node_name = "n7";
    hb.seq = seq;
    env.body_case = GS__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    cr_assert_eq(gs_proto_encode(&env, out), 0);
}

static void raw_write(int fd, const void *data, size_t len)
{
    cr_assert_eq(write(fd, data, len), (ssize_t)len);
}

/* Reads the next frame the connection sent, which must have the given body. */
static Gs__Envelope *raw_expect(int fd, Gs__Envelope__BodyCase body)
{
    Gs__Envelope *env = NULL;

    cr_assert_eq(gs_proto_read_fd(fd, 0, 1000, &env), 0);
    cr_assert_eq(env->body_case, body, "got %s", gs_proto_body_name(env->body_case));
    return env;
}

/* Reads the connection's Hello, then a HelloReject with reason, then end of stream. */
static void raw_expect_reject(int fd, Gs__RejectReason reason)
{
    Gs__Envelope *env;

    gs_proto_envelope_free(raw_expect(fd, GS__ENVELOPE__BODY_HELLO));
    env = raw_expect(fd, GS__ENVELOPE__BODY_HELLO_REJECT);
    cr_assert_eq(env->hello_reject->reason, reason);
    cr_assert_eq(env->hello_reject->protocol_major, GS_PROTO_VERSION_MAJOR);
    gs_proto_envelope_free(env);
    env = NULL;
    cr_assert_eq(gs_proto_read_fd(fd, 0, 1000, &env), GS_PROTO_ERR_PEER_CLOSED);
}

/* ---- connections that work ---- */

Test(conn, handshakes_and_exchanges_request_and_reply)
{
    struct side a = {0}, b = {.echo = true};

    conn_pair(&a, &b);
    RUN_UNTIL(a.readies == 1 && b.readies == 1);
    cr_assert_str_eq(a.peer_name, "n1");
    cr_assert_str_eq(b.peer_name, "gschedd");
    cr_assert_eq(gs_proto_conn_peer_hello(a.conn)->role, GS__ROLE__ROLE_WORKER);
    cr_assert_str_eq(gs_proto_conn_peer(a.conn), "local");

    send_request(a.conn, 7);
    send_request(a.conn, 8);
    RUN_UNTIL(a.messages == 2);
    cr_assert_eq(a.bodies[0], GS__ENVELOPE__BODY_SUBMIT_REPLY);
    cr_assert_eq(a.request_ids[0], 7);
    cr_assert_eq(a.request_ids[1], 8);
    cr_assert_eq(a.last_job_id, 80);
    cr_assert_eq(b.messages, 2);

    gs_proto_conn_close(a.conn);
    RUN_UNTIL(a.closes == 1 && b.closes == 1);
    cr_assert_eq(a.status, 0);
    cr_assert_eq(b.status, GS_PROTO_ERR_PEER_CLOSED);
}

Test(conn, delivers_reply_sent_just_before_close_to_pipelined_request)
{
    struct side a = {0}, b = {.echo = true, .close_on_message = true};

    conn_pair(&a, &b);
    send_request(a.conn, 5); /* before either side has seen the other's Hello */
    RUN_UNTIL(a.closes == 1 && b.closes == 1);
    cr_assert_eq(a.messages, 1);
    cr_assert_eq(a.request_ids[0], 5);
    cr_assert_eq(a.last_job_id, 50);
    cr_assert_eq(a.status, GS_PROTO_ERR_PEER_CLOSED);
    cr_assert_eq(b.status, 0);
}

/* A lingering close: what it sent arrives, what the peer sends meanwhile is dropped
 * unread, and it ends only once the peer has ended too. */
Test(conn, a_lingering_close_hears_the_peer_out)
{
    struct side a = {0}, b = {0};

    conn_pair(&a, &b);
    RUN_UNTIL(a.readies == 1 && b.readies == 1);
    send_reply(b.conn, 3);
    gs_proto_conn_close_linger(b.conn);
    send_request(a.conn, 4); /* a has not heard b's end yet: b drops these unread, */
    send_request(a.conn, 5); /* which would otherwise reset a's side of the socket */
    RUN_UNTIL(a.closes == 1 && b.closes == 1);
    cr_assert_eq(a.status, GS_PROTO_ERR_PEER_CLOSED, "a clean end, no reset");
    cr_assert_eq(b.status, 0);
    cr_assert_eq(b.messages, 0, "nothing is delivered once closing");
    cr_assert_eq(a.request_ids[0], 3);
}

static void on_connection(uv_stream_t *server, int status)
{
    struct side *s = server->data;
    struct gs_proto_conn_opts opts = side_opts(s, GS__ROLE__ROLE_SCHEDULER, "gschedd");

    cr_assert_eq(status, 0);
    opts.accept_roles = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_WORKER);
    s->conn = gs_proto_conn_new(&loop, GS_PROTO_TCP, &opts);
    cr_assert_not_null(s->conn);
    cr_assert_eq(uv_accept(server, gs_proto_conn_stream(s->conn)), 0);
    cr_assert_eq(gs_proto_conn_start(s->conn), 0);
}

static void on_connect(uv_connect_t *req, int status)
{
    struct side *s = req->data;

    cr_assert_eq(status, 0);
    cr_assert_eq(gs_proto_conn_start(s->conn), 0);
}

Test(conn, handshakes_over_loopback_tcp)
{
    struct side server_side = {.echo = true}, client = {0};
    struct gs_proto_conn_opts opts = side_opts(&client, GS__ROLE__ROLE_WORKER, "n2");
    struct sockaddr_storage addr;
    int addr_len = sizeof(addr);
    uv_connect_t connect_req;
    uv_tcp_t server;

    cr_assert_eq(uv_tcp_init(&loop, &server), 0);
    server.data = &server_side;
    cr_assert_eq(uv_ip4_addr("127.0.0.1", 0, (struct sockaddr_in *)&addr), 0);
    cr_assert_eq(uv_tcp_bind(&server, (struct sockaddr *)&addr, 0), 0);
    cr_assert_eq(uv_listen((uv_stream_t *)&server, 8, on_connection), 0);
    cr_assert_eq(uv_tcp_getsockname(&server, (struct sockaddr *)&addr, &addr_len), 0);

    client.conn = gs_proto_conn_new(&loop, GS_PROTO_TCP, &opts);
    cr_assert_not_null(client.conn);
    connect_req.data = &client;
    cr_assert_eq(uv_tcp_connect(&connect_req, (uv_tcp_t *)gs_proto_conn_stream(client.conn),
                                (struct sockaddr *)&addr, on_connect),
                 0);
    RUN_UNTIL(server_side.readies == 1 && client.readies == 1);
    cr_assert_str_eq(server_side.peer_name, "n2");
    cr_assert(strncmp(gs_proto_conn_peer(server_side.conn), "127.0.0.1:", 10) == 0, "%s",
              gs_proto_conn_peer(server_side.conn));

    send_request(client.conn, 11);
    RUN_UNTIL(client.messages == 1);
    cr_assert_eq(client.last_job_id, 110);
    gs_proto_conn_close(client.conn);
    RUN_UNTIL(client.closes == 1 && server_side.closes == 1);
    cr_assert_eq(server_side.status, GS_PROTO_ERR_PEER_CLOSED);
    uv_close((uv_handle_t *)&server, NULL);
    uv_run(&loop, UV_RUN_NOWAIT); /* the handle lives on this stack: finish closing it */
}

/* ---- peers that get closed ---- */

Test(conn, closes_peer_with_other_protocol_major_and_tells_it_why)
{
    struct side s = {0};
    int fd = raw_pair(&s, NULL);

    raw_send_hello(fd, GS_PROTO_VERSION_MAJOR + 1, GS__ROLE__ROLE_WORKER);
    RUN_UNTIL(s.closes == 1);
    cr_assert_eq(s.status, GS_PROTO_ERR_VERSION);
    cr_assert_eq(s.readies, 0);
    raw_expect_reject(fd, GS__REJECT_REASON__REJECT_REASON_VERSION);
    close(fd);
}

static bool file_contains(const char *path, const char *needle)
{
    char text[8192];
    size_t n;
    FILE *f = fopen(path, "r");

    cr_assert_not_null(f);
    n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    return strstr(text, needle) != NULL;
}

Test(conn, closes_garbage_peer_while_other_connection_keeps_working)
{
    const char *http = "GET / HTTP/1.1\r\nHost: gschedd\r\n\r\n";
    struct side g = {0}, a = {0}, b = {.echo = true};
    struct gs_proto_conn_opts opts = side_opts(&g, GS__ROLE__ROLE_SCHEDULER, "gschedd");
    char log_path[] = "/tmp/gsched-proto-log-XXXXXX";
    int log_fd = mkstemp(log_path);
    int fd;

    cr_assert_geq(log_fd, 0);
    gs_log_setup("test_conn", GS_LOG_INFO, log_fd);
    opts.peer_name = "10.0.0.66:4242";
    fd = raw_pair(&g, &opts);
    conn_pair(&a, &b);
    raw_write(fd, http, strlen(http));
    RUN_UNTIL(g.closes == 1 && a.readies == 1 && b.readies == 1);
    cr_assert_eq(g.status, GS_PROTO_ERR_OVERSIZED);

    send_request(a.conn, 3);
    RUN_UNTIL(a.messages == 1);
    cr_assert_eq(a.last_job_id, 30);
    gs_proto_conn_close(b.conn);
    RUN_UNTIL(a.closes == 1 && b.closes == 1);

    gs_log_setup("test_conn", GS_LOG_INFO, 2);
    cr_assert(file_contains(log_path, "peer=10.0.0.66:4242 reason=oversized_frame "
                                      "len=1195725856 max=16777216 closing"));
    close(log_fd);
    unlink(log_path);
    close(fd);
}

Test(conn, closes_peer_sending_payload_that_is_not_protobuf)
{
    const uint8_t garbage[] = {0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    struct side s = {0};
    int fd = raw_pair(&s, NULL);

    raw_send_hello(fd, GS_PROTO_VERSION_MAJOR, GS__ROLE__ROLE_WORKER);
    raw_write(fd, garbage, sizeof(garbage));
    RUN_UNTIL(s.closes == 1);
    cr_assert_eq(s.readies, 1);
    cr_assert_eq(s.messages, 0);
    cr_assert_eq(s.status, GS_PROTO_ERR_MALFORMED);
    close(fd);
}

Test(conn, closes_peer_that_vanishes_mid_frame)
{
    struct gs_buf frame = GS_BUF_INIT;
    struct side s = {0};
    int fd = raw_pair(&s, NULL);

    raw_send_hello(fd, GS_PROTO_VERSION_MAJOR, GS__ROLE__ROLE_WORKER);
    heartbeat_frame(&frame, 1);
    heartbeat_frame(&frame, 2);
    raw_write(fd, frame.data, frame.len - 3);
    close(fd);
    RUN_UNTIL(s.closes == 1);
    cr_assert_eq(s.readies, 1);
    cr_assert_eq(s.messages, 1, "the whole frame before the cut was delivered");
    cr_assert_eq(s.status, GS_PROTO_ERR_TRUNCATED);
    gs_buf_release(&frame);
}

Test(conn, closes_peer_whose_first_frame_is_not_a_hello)
{
    struct gs_buf frame = GS_BUF_INIT;
    struct side s = {0};
    int fd = raw_pair(&s, NULL);

    heartbeat_frame(&frame, 1);
    raw_write(fd, frame.data, frame.len);
    RUN_UNTIL(s.closes == 1);
    cr_assert_eq(s.status, GS_PROTO_ERR_HANDSHAKE);
    cr_assert_eq(s.messages, 0);
    raw_expect_reject(fd, GS__REJECT_REASON__REJECT_REASON_NOT_HELLO);
    gs_buf_release(&frame);
    close(fd);
}

Test(conn, closes_peer_that_sends_unknown_body_after_hello)
{
    const uint8_t newer[] = {0, 0, 0, 3, 0xc2, 0x3e, 0x00}; /* field 1000, empty */
    struct side s = {0};
    int fd = raw_pair(&s, NULL);

    raw_send_hello(fd, GS_PROTO_VERSION_MAJOR, GS__ROLE__ROLE_WORKER);
    raw_write(fd, newer, sizeof(newer));
    RUN_UNTIL(s.closes == 1);
    cr_assert_eq(s.readies, 1);
    cr_assert_eq(s.status, GS_PROTO_ERR_UNKNOWN);
    close(fd);
}

Test(conn, closes_peer_that_says_hello_twice)
{
    struct side s = {0};
    int fd = raw_pair(&s, NULL);

    raw_send_hello(fd, GS_PROTO_VERSION_MAJOR, GS__ROLE__ROLE_WORKER);
    raw_send_hello(fd, GS_PROTO_VERSION_MAJOR, GS__ROLE__ROLE_WORKER);
    RUN_UNTIL(s.closes == 1);
    cr_assert_eq(s.readies, 1);
    cr_assert_eq(s.status, GS_PROTO_ERR_HANDSHAKE);
    close(fd);
}

Test(conn, closes_peer_that_never_says_hello)
{
    struct side s = {0};
    struct gs_proto_conn_opts opts = side_opts(&s, GS__ROLE__ROLE_SCHEDULER, "gschedd");
    int fd;

    opts.handshake_timeout_ms = 20;
    fd = raw_pair(&s, &opts);
    RUN_UNTIL(s.closes == 1);
    cr_assert_eq(s.status, GS_PROTO_ERR_TIMEOUT);
    close(fd);
}

Test(conn, refuses_peer_role_it_does_not_accept)
{
    struct side s = {0};
    struct gs_proto_conn_opts opts = side_opts(&s, GS__ROLE__ROLE_SCHEDULER, "gschedd");
    int fd;

    opts.accept_roles = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_WORKER);
    fd = raw_pair(&s, &opts);
    raw_send_hello(fd, GS_PROTO_VERSION_MAJOR, GS__ROLE__ROLE_CLI);
    RUN_UNTIL(s.closes == 1);
    cr_assert_eq(s.status, GS_PROTO_ERR_ROLE);
    raw_expect_reject(fd, GS__REJECT_REASON__REJECT_REASON_ROLE);
    close(fd);
}

Test(conn, ends_when_the_peer_rejects_us)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__HelloReject reject = GS__HELLO_REJECT__INIT;
    struct side s = {0};
    int fd = raw_pair(&s, NULL);

    raw_send_hello(fd, GS_PROTO_VERSION_MAJOR, GS__ROLE__ROLE_WORKER);
    reject.reason = GS__REJECT_REASON__REJECT_REASON_DUPLICATE_NAME;
    reject.message = "node n1 is already\nconnected"; /* a newline must not split the log */
    env.body_case = GS__ENVELOPE__BODY_HELLO_REJECT;
    env.hello_reject = &reject;
    cr_assert_eq(gs_proto_write_fd(fd, &env, 1000), 0);
    RUN_UNTIL(s.closes == 1);
    cr_assert_eq(s.readies, 1);
    cr_assert_eq(s.messages, 0);
    cr_assert_eq(s.status, GS_PROTO_ERR_REJECTED);
    close(fd);
}

Test(conn, stops_delivering_once_message_callback_closes)
{
    struct gs_buf frames = GS_BUF_INIT;
    struct side s = {.close_on_message = true};
    int fd = raw_pair(&s, NULL);

    raw_send_hello(fd, GS_PROTO_VERSION_MAJOR, GS__ROLE__ROLE_WORKER);
    for (uint64_t seq = 1; seq <= 3; seq++)
        heartbeat_frame(&frames, seq);
    raw_write(fd, frames.data, frames.len); /* likely one read: all three in one chunk */
    RUN_UNTIL(s.closes == 1);
    cr_assert_eq(s.messages, 1);
    cr_assert_eq(s.bodies[0], GS__ENVELOPE__BODY_HEARTBEAT);
    cr_assert_eq(s.status, 0);
    gs_buf_release(&frames);
    close(fd);
}

/* ---- the sender's own mistakes ---- */

Test(conn, refuses_sends_it_cannot_make)
{
    struct side s = {0}, idle = {0};
    struct gs_proto_conn_opts opts = side_opts(&s, GS__ROLE__ROLE_SCHEDULER, "gschedd");
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__LogsReply logs = GS__LOGS_REPLY__INIT;
    Gs__Hello hello;
    uint8_t data[200] = {0};
    int fd;

    idle.conn = gs_proto_conn_new(&loop, GS_PROTO_PIPE, &opts);
    cr_assert_not_null(idle.conn);
    gs_proto_conn_set_data(idle.conn, &idle);
    logs.data.len = sizeof(data);
    logs.data.data = data;
    env.body_case = GS__ENVELOPE__BODY_LOGS_REPLY;
    env.logs_reply = &logs;
    cr_assert_eq(gs_proto_conn_send(idle.conn, &env), -ENOTCONN);
    gs_proto_conn_close(idle.conn);

    opts.max_frame = 100;
    fd = raw_pair(&s, &opts);
    cr_assert_eq(gs_proto_conn_send(s.conn, &env), -EMSGSIZE);
    gs_proto_hello_init(&hello, GS__ROLE__ROLE_SCHEDULER, "again");
    env.body_case = GS__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    cr_assert_eq(gs_proto_conn_send(s.conn, &env), -EINVAL);
    env.body_case = GS__ENVELOPE__BODY__NOT_SET;
    cr_assert_eq(gs_proto_conn_send(s.conn, &env), -EINVAL);
    gs_proto_conn_close(s.conn);
    cr_assert_eq(gs_proto_conn_send(s.conn, &env), -EPIPE);
    cr_assert_eq(gs_proto_conn_start(s.conn), -EINVAL);
    RUN_UNTIL(s.closes == 1 && idle.closes == 1);
    cr_assert_eq(idle.status, 0);
    cr_assert_eq(s.status, 0);
    close(fd);
}

/* ---- the cluster key (proto/auth.h) ---- */

static void fill_key(struct gs_proto_auth_key *key, uint8_t byte)
{
    memset(key, 0, sizeof(*key));
    memset(key->bytes, byte, 32);
    key->len = 32;
}

/* conn_pair with keys ka and kb (NULL: none). */
static void keyed_pair(struct side *a, const struct gs_proto_auth_key *ka, struct side *b,
                       const struct gs_proto_auth_key *kb)
{
    struct gs_proto_conn_opts oa = side_opts(a, GS__ROLE__ROLE_SCHEDULER, "gschedd");
    struct gs_proto_conn_opts ob = side_opts(b, GS__ROLE__ROLE_WORKER, "n1");
    int sv[2];

    oa.accept_roles = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_WORKER);
    oa.auth_key = ka;
    ob.auth_key = kb;
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    open_conn(sv[0], a, &oa);
    open_conn(sv[1], b, &ob);
}

Test(conn, peers_with_the_same_key_authenticate_and_talk)
{
    struct gs_proto_auth_key k;
    struct side a = {0}, b = {.echo = true};

    fill_key(&k, 0x5a);
    keyed_pair(&a, &k, &b, &k);
    RUN_UNTIL(a.readies == 1 && b.readies == 1);
    cr_assert_eq(gs_proto_conn_peer_hello(a.conn)->auth_nonce.len, GS_PROTO_AUTH_NONCE_SIZE);
    send_request(a.conn, 3);
    RUN_UNTIL(a.messages == 1);
    cr_assert_eq(a.last_job_id, 30);
    gs_proto_conn_close(a.conn);
    RUN_UNTIL(a.closes == 1 && b.closes == 1);
}

Test(conn, a_different_key_is_refused_on_both_sides)
{
    struct gs_proto_auth_key ka, kb;
    struct side a = {0}, b = {0};

    fill_key(&ka, 1);
    fill_key(&kb, 2);
    keyed_pair(&a, &ka, &b, &kb);
    RUN_UNTIL(a.closes == 1 && b.closes == 1);
    cr_assert_eq(a.readies + b.readies, 0, "nobody may become ready");
    cr_assert_eq(a.messages + b.messages, 0);
    cr_assert(a.status == GS_PROTO_ERR_AUTH || b.status == GS_PROTO_ERR_AUTH, "%d %d", a.status,
              b.status);
}

Test(conn, a_peer_without_the_key_is_told_and_closed)
{
    struct gs_proto_auth_key k;
    struct side a = {0}, b = {0};

    fill_key(&k, 7);
    keyed_pair(&a, &k, &b, NULL);
    RUN_UNTIL(a.closes == 1 && b.closes == 1);
    cr_assert_eq(a.readies, 0, "the keyed side never trusts it");
    cr_assert_eq(a.status, GS_PROTO_ERR_AUTH);
    cr_assert_eq(b.status, GS_PROTO_ERR_REJECTED, "told why: %d", b.status);
}

/* A raw peer that says Hello with a nonce and then anything but a valid proof. */
static void raw_hello_with_nonce(int fd, const uint8_t *nonce)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__Hello hello;

    gs_proto_hello_init(&hello, GS__ROLE__ROLE_WORKER, "raw");
    hello.auth_nonce.data = (uint8_t *)nonce;
    hello.auth_nonce.len = GS_PROTO_AUTH_NONCE_SIZE;
    env.body_case = GS__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    cr_assert_eq(gs_proto_write_fd(fd, &env, 1000), 0);
}

Test(conn, messages_before_a_valid_proof_are_refused)
{
    struct gs_proto_auth_key k;
    struct side s = {0};
    struct gs_proto_conn_opts opts = side_opts(&s, GS__ROLE__ROLE_SCHEDULER, "gschedd");
    uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE] = {9};
    struct gs_buf hb = GS_BUF_INIT;
    Gs__Envelope *env;
    int fd;

    fill_key(&k, 3);
    opts.auth_key = &k;
    fd = raw_pair(&s, &opts);
    raw_hello_with_nonce(fd, nonce);
    heartbeat_frame(&hb, 1); /* no proof: straight to business */
    raw_write(fd, hb.data, hb.len);
    RUN_UNTIL(s.closes == 1);
    cr_assert_eq(s.readies, 0);
    cr_assert_eq(s.messages, 0);
    cr_assert_eq(s.status, GS_PROTO_ERR_AUTH);
    gs_proto_envelope_free(raw_expect(fd, GS__ENVELOPE__BODY_HELLO));
    env = raw_expect(fd, GS__ENVELOPE__BODY_AUTH_PROOF); /* its own proof, for our nonce */
    cr_assert_eq(env->auth_proof->mac.len, GS_PROTO_AUTH_PROOF_SIZE);
    gs_proto_envelope_free(env);
    gs_buf_release(&hb);
    close(fd);
}

/* Runs the loop until the connection has written something for the raw peer at fd. */
static void pump_until_readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};

    for (int i = 0; i < DEADLINE_MS / 10; i++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        if (poll(&p, 1, 10) == 1)
            return;
    }
    cr_assert_fail("nothing to read from the connection");
}

/* Sending its own proof back (reflection) or echoing its nonce does not get a peer in. */
Test(conn, a_reflected_proof_or_echoed_nonce_is_refused)
{
    struct gs_proto_auth_key k;
    struct side s = {0}, t = {0};
    struct gs_proto_conn_opts opts = side_opts(&s, GS__ROLE__ROLE_SCHEDULER, "gschedd");
    uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE] = {1, 2, 3};
    Gs__Envelope *hello, *proof;
    int fd;

    fill_key(&k, 4);
    opts.auth_key = &k;
    fd = raw_pair(&s, &opts);
    raw_hello_with_nonce(fd, nonce);
    pump_until_readable(fd);
    hello = raw_expect(fd, GS__ENVELOPE__BODY_HELLO);
    pump_until_readable(fd);
    proof = raw_expect(fd, GS__ENVELOPE__BODY_AUTH_PROOF);
    cr_assert_eq(gs_proto_write_fd(fd, proof, 1000), 0);
    RUN_UNTIL(s.closes == 1);
    cr_assert_eq(s.readies, 0);
    cr_assert_eq(s.status, GS_PROTO_ERR_AUTH);
    close(fd);

    /* Its own nonce echoed in our Hello: refused before any proof is made. */
    gs_proto_envelope_free(hello);
    opts = side_opts(&t, GS__ROLE__ROLE_SCHEDULER, "gschedd");
    opts.auth_key = &k;
    fd = raw_pair(&t, &opts);
    pump_until_readable(fd);
    hello = raw_expect(fd, GS__ENVELOPE__BODY_HELLO);
    raw_hello_with_nonce(fd, hello->hello->auth_nonce.data);
    RUN_UNTIL(t.closes == 1);
    cr_assert_eq(t.readies, 0);
    cr_assert_eq(t.status, GS_PROTO_ERR_AUTH);
    gs_proto_envelope_free(raw_expect(fd, GS__ENVELOPE__BODY_HELLO_REJECT));
    close(fd);
    gs_proto_envelope_free(hello);
    gs_proto_envelope_free(proof);
}

/* ---- sealed frames (proto/seal.h) ---- */

/* A raw worker that completes the keyed handshake with the connection at fd (its Hello and
 * proof read, ours sent) and holds the link's seal in *seal. */
static void raw_keyed_handshake(int fd, const struct gs_proto_auth_key *k,
                                struct gs_proto_seal *seal)
{
    uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE] = {0x42, 7}, mac[GS_PROTO_AUTH_PROOF_SIZE];
    Gs__Envelope env = GS__ENVELOPE__INIT, *hello;
    Gs__AuthProof proof = GS__AUTH_PROOF__INIT;

    raw_hello_with_nonce(fd, nonce);
    pump_until_readable(fd);
    hello = raw_expect(fd, GS__ENVELOPE__BODY_HELLO);
    pump_until_readable(fd);
    gs_proto_envelope_free(raw_expect(fd, GS__ENVELOPE__BODY_AUTH_PROOF));
    cr_assert_eq(gs_proto_auth_proof(k, GS__ROLE__ROLE_WORKER, "raw", nonce,
                                     hello->hello->auth_nonce.data, mac),
                 0);
    proof.mac.data = mac;
    proof.mac.len = sizeof(mac);
    env.body_case = GS__ENVELOPE__BODY_AUTH_PROOF;
    env.auth_proof = &proof;
    cr_assert_eq(gs_proto_write_fd(fd, &env, 1000), 0);
    cr_assert_eq(gs_proto_seal_init(seal, k, nonce, hello->hello->auth_nonce.data), 0);
    seal->sending = seal->receiving = true;
    gs_proto_envelope_free(hello);
}

/* A heartbeat frame for the keyed connection, sealed; with tamper, one payload byte flipped
 * after sealing. */
static void sealed_heartbeat(struct gs_buf *out, struct gs_proto_seal *seal, uint64_t seq,
                             bool tamper)
{
    size_t start = out->len;

    heartbeat_frame(out, seq);
    cr_assert_eq(gs_proto_seal_frame(seal, out, start), 0);
    if (tamper)
        out->data[start + GS_PROTO_HEADER_SIZE + 2] ^= 0x01;
}

Test(conn, sealed_frames_pass_and_the_connection_seals_its_own)
{
    struct gs_proto_auth_key k;
    struct side s = {.echo = true};
    struct gs_proto_conn_opts opts = side_opts(&s, GS__ROLE__ROLE_SCHEDULER, "gschedd");
    struct gs_proto_seal seal = {0};
    struct gs_buf frames = GS_BUF_INIT;
    Gs__Envelope *env = NULL;
    int fd;

    fill_key(&k, 0x21);
    opts.auth_key = &k;
    fd = raw_pair(&s, &opts);
    raw_keyed_handshake(fd, &k, &seal);
    RUN_UNTIL(s.readies == 1);
    sealed_heartbeat(&frames, &seal, 1, false);
    sealed_heartbeat(&frames, &seal, 2, false);
    raw_write(fd, frames.data, frames.len);
    RUN_UNTIL(s.messages == 2);
    send_request(s.conn, 5); /* what the connection sends now carries its tag */
    pump_until_readable(fd);
    cr_assert_eq(gs_proto_read_fd_sealed(fd, 0, 1000, &seal, &env), 0);
    cr_assert_eq(env->body_case, GS__ENVELOPE__BODY_SUBMIT_REQUEST);
    gs_proto_envelope_free(env);
    gs_proto_conn_close(s.conn);
    RUN_UNTIL(s.closes == 1);
    cr_assert_eq(s.status, 0);
    gs_buf_release(&frames);
    gs_proto_seal_clear(&seal);
    close(fd);
}

/* After the handshake, a frame without its tag (injected by someone without the key), with
 * a changed byte, or out of turn (replayed) closes the connection unread. */
static void expect_refused(int how)
{
    struct gs_proto_auth_key k;
    struct side s = {0};
    struct gs_proto_conn_opts opts = side_opts(&s, GS__ROLE__ROLE_SCHEDULER, "gschedd");
    struct gs_proto_seal seal = {0};
    struct gs_buf frames = GS_BUF_INIT, replay = GS_BUF_INIT;
    int fd;

    fill_key(&k, 0x33);
    opts.auth_key = &k;
    fd = raw_pair(&s, &opts);
    raw_keyed_handshake(fd, &k, &seal);
    RUN_UNTIL(s.readies == 1);
    sealed_heartbeat(&frames, &seal, 1, false); /* one good frame first */
    if (how == 0)
        heartbeat_frame(&frames, 2);
    else if (how == 1)
        sealed_heartbeat(&frames, &seal, 2, true);
    else if (gs_buf_append(&replay, frames.data, frames.len) == 0) /* the good frame again */
        cr_assert_eq(gs_buf_append(&frames, replay.data, replay.len), 0);
    raw_write(fd, frames.data, frames.len);
    RUN_UNTIL(s.closes == 1);
    cr_assert_eq(s.messages, 1, "only the good frame was taken");
    cr_assert_eq(s.status, GS_PROTO_ERR_AUTH);
    gs_buf_release(&frames);
    gs_buf_release(&replay);
    gs_proto_seal_clear(&seal);
    close(fd);
}

Test(conn, an_unsealed_frame_after_the_handshake_closes_the_connection)
{
    expect_refused(0);
}

Test(conn, a_changed_frame_closes_the_connection)
{
    expect_refused(1);
}

Test(conn, a_replayed_frame_closes_the_connection)
{
    expect_refused(2);
}

/* A keyed end takes no peer that would not seal its frames. */
Test(conn, a_keyed_peer_before_sealed_frames_is_refused)
{
    struct gs_proto_auth_key k;
    struct side s = {0};
    struct gs_proto_conn_opts opts = side_opts(&s, GS__ROLE__ROLE_SCHEDULER, "gschedd");
    uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE] = {5};
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__Hello hello;
    int fd;

    fill_key(&k, 0x44);
    opts.auth_key = &k;
    fd = raw_pair(&s, &opts);
    gs_proto_hello_init(&hello, GS__ROLE__ROLE_WORKER, "old");
    hello.protocol_minor = GS_PROTO_MINOR_CRYPT - 1;
    hello.auth_nonce.data = nonce;
    hello.auth_nonce.len = sizeof(nonce);
    env.body_case = GS__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    cr_assert_eq(gs_proto_write_fd(fd, &env, 1000), 0);
    RUN_UNTIL(s.closes == 1);
    cr_assert_eq(s.readies, 0);
    cr_assert_eq(s.status, GS_PROTO_ERR_VERSION);
    close(fd);
}
