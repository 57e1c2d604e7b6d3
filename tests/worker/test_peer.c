/*
 * test_peer.c: worker-to-worker shard transfer: the data port (worker/peer.h) on a private
 * loop run by a second thread, and the blocking client (worker/peer_fetch.h) in the test's
 * own thread, over 127.0.0.1 with an ephemeral port and a cache ROOT in a temporary
 * directory. The loop thread makes no assertions; it stops when the test posts the close
 * (uv_async_send), and teardown checks the server called back and the loop has nothing
 * left (uv_loop_close() == 0).
 *
 * Suite peer (keyed, the default limit): whole files and ranges byte for byte, across
 * pieces and windows; resuming from an offset; reads out of order and across files on one
 * connection; end of file; the refusals (-EINVAL for names that are not plain, -ENOENT for
 * what is not held or not servable, -ERANGE past the end) with the connection still
 * usable; a wrong or missing key; a client sending garbage, a second ShardRead or another
 * message is closed while others are served; a client leaving mid-transfer. Suite
 * peer_open: no key on either side. Suite peer_limit: one connection at most. Suite
 * fetch: the client against sockets that never answer, hang up or do not listen. Suite
 * server: a taken port or a bad address, on a private loop, leaves nothing behind.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "proto/handshake_fd.h"
#include "worker/peer.h"
#include "worker/peer_fetch.h"

#define DATASET "0123456789abcdef0123456789abcdef"
#define SMALL_SIZE 1000u
#define BIG_SIZE (2u * WRK_PEER_CHUNK + WRK_PEER_CHUNK / 2u + 123u)  /* three pieces */
#define HUGE_SIZE (WRK_PEER_FETCH_WINDOW + 8u * WRK_PEER_CHUNK + 7u) /* two windows */
#define TIMEOUT_MS 5000

static uv_loop_t loop;
static uv_async_t stop_async;
static pthread_t loop_thread;
static struct wrk_peer_server *server;
static uint16_t port;
static char root[64];
static struct gs_proto_auth_key key;
static atomic_bool server_closed;
static atomic_int may_serve_calls;
static atomic_bool may_serve_saw_part;

/* What the suite's init asks of the server. */
static bool keyed = true;
static unsigned max_connections;

/* ---- files ---- */

static uint8_t pattern_byte(uint64_t i, unsigned seed)
{
    return (uint8_t)(i * 131u + seed + (i >> 13));
}

static uint8_t *pattern(size_t size, unsigned seed)
{
    uint8_t *p = malloc(size > 0 ? size : 1);

    cr_assert_not_null(p);
    for (size_t i = 0; i < size; i++)
        p[i] = pattern_byte(i, seed);
    return p;
}

static void path_of(char *out, size_t size, const char *file)
{
    snprintf(out, size, "%s/%s/%s", root, DATASET, file);
}

static void make_file(const char *file, size_t size, unsigned seed)
{
    char path[256];
    uint8_t *p = pattern(size, seed);
    FILE *f;

    path_of(path, sizeof(path), file);
    f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(p, 1, size, f), size);
    cr_assert_eq(fclose(f), 0);
    free(p);
}

static void remove_tree(void)
{
    const char *files[] = {"small.bin", "big.bin",  "huge.bin",    "empty.bin", "manifest.toml",
                           "half.part", "link.bin", "refused.bin", ".hidden"};
    char path[256];

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        path_of(path, sizeof(path), files[i]);
        unlink(path);
    }
    path_of(path, sizeof(path), "sub");
    rmdir(path);
    snprintf(path, sizeof(path), "%s/%s", root, DATASET);
    rmdir(path);
    rmdir(root);
}

/* ---- the server on its thread ---- */

static bool may_serve(const char *dataset, const char *file, void *data)
{
    size_t len = strlen(file);

    (void)data;
    atomic_fetch_add(&may_serve_calls, 1);
    if (len >= 5 && strcmp(file + len - 5, ".part") == 0)
        atomic_store(&may_serve_saw_part, true);
    return strcmp(dataset, DATASET) == 0 && strcmp(file, "refused.bin") != 0;
}

static void on_server_closed(void *data)
{
    (void)data;
    atomic_store(&server_closed, true);
}

static void on_stop(uv_async_t *async)
{
    wrk_peer_server_close(server, on_server_closed, NULL);
    uv_close((uv_handle_t *)async, NULL);
}

static void *run_loop(void *arg)
{
    (void)arg;
    uv_run(&loop, UV_RUN_DEFAULT);
    return NULL;
}

static void fill_key(struct gs_proto_auth_key *k, uint8_t first)
{
    memset(k, 0, sizeof(*k));
    for (size_t i = 0; i < 32; i++)
        k->bytes[i] = (uint8_t)(first + i * 7u);
    k->len = 32;
}

static void setup(void)
{
    struct wrk_peer_opts opts = {.bind_address = "127.0.0.1", .node_name = "n1"};
    struct gs_error err;
    char path[256];

    signal(SIGPIPE, SIG_IGN); /* as the daemons */
    snprintf(root, sizeof(root), "/tmp/gs-peer-XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    snprintf(path, sizeof(path), "%s/%s", root, DATASET);
    cr_assert_eq(mkdir(path, 0755), 0);
    make_file("small.bin", SMALL_SIZE, 1);
    make_file("big.bin", BIG_SIZE, 2);
    make_file("empty.bin", 0, 3);
    make_file("manifest.toml", 40, 4);
    make_file("half.part", 5000, 5);
    make_file("refused.bin", 100, 6);
    make_file(".hidden", 100, 7);
    path_of(path, sizeof(path), "link.bin");
    cr_assert_eq(symlink("big.bin", path), 0);
    path_of(path, sizeof(path), "sub");
    cr_assert_eq(mkdir(path, 0755), 0);

    fill_key(&key, 1);
    opts.root = root;
    opts.auth_key = keyed ? &key : NULL;
    opts.may_serve = may_serve;
    opts.max_connections = max_connections;
    cr_assert_eq(uv_loop_init(&loop), 0);
    server = wrk_peer_server_new(&loop, &opts, &err);
    cr_assert_not_null(server, "%s", err.msg);
    port = wrk_peer_server_port(server);
    cr_assert_neq(port, 0);
    cr_assert_eq(uv_async_init(&loop, &stop_async, on_stop), 0);
    cr_assert_eq(pthread_create(&loop_thread, NULL, run_loop, NULL), 0);
}

static void teardown(void)
{
    uv_async_send(&stop_async);
    pthread_join(loop_thread, NULL);
    cr_assert(atomic_load(&server_closed), "the server called back once closed");
    cr_assert_eq(uv_loop_close(&loop), 0, "handles or requests left on the loop");
    remove_tree();
}

/* ---- clients ---- */

static struct wrk_peer_fetch *open_fetch(void)
{
    struct wrk_peer_fetch *f = NULL;
    struct gs_error err;
    int rc =
        wrk_peer_fetch_open("127.0.0.1", port, keyed ? &key : NULL, "n2", TIMEOUT_MS, &f, &err);

    cr_assert_eq(rc, 0, "open: %s", err.msg);
    return f;
}

/* Reads [offset, end of file) in reads of at most step bytes; returns the bytes (freed by
 * the caller) and their count in *ret_len. */
static uint8_t *read_all(struct wrk_peer_fetch *f, const char *file, uint64_t offset, size_t step,
                         size_t *ret_len)
{
    struct gs_buf out = GS_BUF_INIT;
    uint8_t *buf = malloc(step);
    struct gs_error err;
    size_t got;

    cr_assert_not_null(buf);
    for (;;) {
        int rc = wrk_peer_fetch_read(f, DATASET, file, offset, buf, step, &got, &err);

        cr_assert_eq(rc, 0, "read %s at %llu: %s", file, (unsigned long long)offset, err.msg);
        if (got == 0)
            break;
        cr_assert_eq(gs_buf_append(&out, buf, got), 0);
        offset += got;
    }
    free(buf);
    *ret_len = out.len;
    return (uint8_t *)gs_buf_detach(&out, NULL);
}

static void expect_file(struct wrk_peer_fetch *f, const char *file, size_t size, unsigned seed,
                        uint64_t offset, size_t step)
{
    uint8_t *want = pattern(size, seed);
    size_t len;
    uint8_t *got = read_all(f, file, offset, step, &len);

    cr_assert_eq(len, size - offset, "%s from %llu: %zu bytes", file, (unsigned long long)offset,
                 len);
    cr_assert(memcmp(got, want + offset, len) == 0, "%s from %llu differs", file,
              (unsigned long long)offset);
    cr_assert_eq(wrk_peer_fetch_file_size(f), size);
    free(got);
    free(want);
}

/* One read's result code, with err's message for a failing assertion. */
static int read_code(struct wrk_peer_fetch *f, const char *dataset, const char *file,
                     uint64_t offset, struct gs_error *err)
{
    uint8_t buf[64];
    size_t got = 12345;
    int rc = wrk_peer_fetch_read(f, dataset, file, offset, buf, sizeof(buf), &got, err);

    if (rc < 0)
        cr_assert_eq(got, 12345, "ret_got is written only on success");
    return rc;
}

/* A raw TCP connection to the data port. */
static int raw_connect(uint16_t to_port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(to_port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_geq(fd, 0);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0, "%s", strerror(errno));
    return fd;
}

/* Reads and drops everything until the peer closes; false when it did not within 5 s. */
static bool closed_by_peer(int fd)
{
    uint64_t deadline = gs_clock_mono_ms() + TIMEOUT_MS;
    char buf[65536];

    while (gs_clock_mono_ms() < deadline) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        ssize_t n;

        if (poll(&pfd, 1, 100) <= 0)
            continue;
        n = read(fd, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return true;
    }
    return false;
}

/* A keyed, handshaken raw connection, to speak frames the client never would; *seal is the
 * link's (its frames must carry tags). */
static int raw_worker(struct gs_proto_seal *seal)
{
    int fd = raw_connect(port);

    cr_assert_eq(gs_proto_handshake_fd_keyed(fd, GS__ROLE__ROLE_WORKER, "raw",
                                             GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_WORKER), &key,
                                             TIMEOUT_MS, NULL, seal),
                 0);
    return fd;
}

/* env appended to out as a frame, sealed with seal unless it is NULL. */
static void append_frame(struct gs_buf *out, const Gs__Envelope *env, struct gs_proto_seal *seal)
{
    size_t start = out->len;

    cr_assert_eq(gs_proto_encode(env, out), 0);
    if (seal != NULL)
        cr_assert_eq(gs_proto_seal_frame(seal, out, start), 0);
}

static void append_shard_read(struct gs_buf *out, uint64_t request_id, const char *file,
                              struct gs_proto_seal *seal)
{
    Gs__ShardRead req = GS__SHARD_READ__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    req.dataset = (char *)DATASET;
    req.file = (char *)file;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_SHARD_READ;
    env.shard_read = &req;
    append_frame(out, &env, seal);
}

static void write_buf(int fd, const struct gs_buf *b)
{
    cr_assert_eq(write(fd, b->data, b->len), (ssize_t)b->len);
}

/* ---- suite peer: keyed ---- */

TestSuite(peer, .init = setup, .fini = teardown, .timeout = 60);

Test(peer, serves_whole_files_byte_for_byte)
{
    struct wrk_peer_fetch *f = open_fetch();

    expect_file(f, "big.bin", BIG_SIZE, 2, 0, 4 * WRK_PEER_CHUNK);
    expect_file(f, "small.bin", SMALL_SIZE, 1, 0, 4096);
    expect_file(f, "manifest.toml", 40, 4, 0, 4096);
    cr_assert_gt(atomic_load(&may_serve_calls), 0, "may_serve was asked");
    wrk_peer_fetch_close(f);
}

Test(peer, streams_small_reads_across_pieces_and_windows)
{
    struct wrk_peer_fetch *f;

    make_file("huge.bin", HUGE_SIZE, 8);
    f = open_fetch();
    expect_file(f, "huge.bin", HUGE_SIZE, 8, 0, 65536 + 3);
    expect_file(f, "big.bin", BIG_SIZE, 2, 0, 1000003);
    wrk_peer_fetch_close(f);
}

Test(peer, resumes_from_an_offset)
{
    struct wrk_peer_fetch *f = open_fetch();

    expect_file(f, "big.bin", BIG_SIZE, 2, WRK_PEER_CHUNK + 17, WRK_PEER_CHUNK);
    expect_file(f, "big.bin", BIG_SIZE, 2, BIG_SIZE - 1, 4096);
    expect_file(f, "small.bin", SMALL_SIZE, 1, 999, 10);
    wrk_peer_fetch_close(f);
}

Test(peer, reads_out_of_order_on_one_connection)
{
    static const uint64_t offsets[] = {2 * WRK_PEER_CHUNK + 5, 10, WRK_PEER_CHUNK - 3, 0,
                                       BIG_SIZE - 100};
    struct wrk_peer_fetch *f = open_fetch();
    uint8_t *want = pattern(BIG_SIZE, 2);
    uint8_t buf[4096];
    struct gs_error err;
    size_t got;

    for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
        size_t expect = BIG_SIZE - offsets[i] < sizeof(buf) ? BIG_SIZE - offsets[i] : sizeof(buf);

        cr_assert_eq(
            wrk_peer_fetch_read(f, DATASET, "big.bin", offsets[i], buf, sizeof(buf), &got, &err), 0,
            "%s", err.msg);
        cr_assert_eq(got, expect);
        cr_assert(memcmp(buf, want + offsets[i], got) == 0, "read %zu differs", i);
        /* and a read of another file in between */
        cr_assert_eq(wrk_peer_fetch_read(f, DATASET, "small.bin", 0, buf, 10, &got, &err), 0, "%s",
                     err.msg);
        cr_assert_eq(got, 10);
    }
    free(want);
    wrk_peer_fetch_close(f);
}

Test(peer, reports_the_end_of_file_and_empty_files)
{
    struct wrk_peer_fetch *f = open_fetch();
    uint8_t buf[16];
    struct gs_error err;
    size_t got = 1;

    cr_assert_eq(wrk_peer_fetch_file_size(f), UINT64_MAX);
    cr_assert_eq(wrk_peer_fetch_read(f, DATASET, "empty.bin", 0, buf, sizeof(buf), &got, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(got, 0);
    cr_assert_eq(wrk_peer_fetch_file_size(f), 0);
    got = 1;
    cr_assert_eq(
        wrk_peer_fetch_read(f, DATASET, "small.bin", SMALL_SIZE, buf, sizeof(buf), &got, &err), 0,
        "%s", err.msg);
    cr_assert_eq(got, 0, "at the end: 0 bytes");
    cr_assert_eq(wrk_peer_fetch_file_size(f), SMALL_SIZE);
    wrk_peer_fetch_close(f);
}

Test(peer, refuses_names_that_are_not_plain_with_einval)
{
    static const char *const files[] = {"../etc/passwd", ".x",      "a.part", "x/y", "", ".", "..",
                                        "half.part",     ".hidden", "a\nb"};
    struct wrk_peer_fetch *f = open_fetch();
    struct gs_error err;

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        cr_assert_eq(read_code(f, DATASET, files[i], 0, &err), -EINVAL, "%s", files[i]);
        cr_assert(strstr(err.msg, "127.0.0.1") != NULL, "names the peer: %s", err.msg);
    }
    cr_assert_eq(read_code(f, "0123456789ABCDEF0123456789ABCDEF", "small.bin", 0, &err), -EINVAL);
    cr_assert_eq(read_code(f, "0123", "small.bin", 0, &err), -EINVAL);
    cr_assert_eq(read_code(f, "..", "small.bin", 0, &err), -EINVAL);
    cr_assert(!atomic_load(&may_serve_saw_part), "a .part never reaches may_serve");
    expect_file(f, "small.bin", SMALL_SIZE, 1, 0, 4096); /* still usable */
    wrk_peer_fetch_close(f);
}

Test(peer, refuses_what_is_not_held_with_enoent)
{
    struct wrk_peer_fetch *f = open_fetch();
    struct gs_error err;

    cr_assert_eq(read_code(f, DATASET, "missing.bin", 0, &err), -ENOENT);
    cr_assert(strstr(err.msg, DATASET) != NULL && strstr(err.msg, "missing.bin") != NULL,
              "names dataset and file: %s", err.msg);
    cr_assert(strstr(err.msg, "(n1)") != NULL, "names the peer node: %s", err.msg);
    cr_assert_eq(read_code(f, DATASET, "refused.bin", 0, &err), -ENOENT, "may_serve said no");
    cr_assert(strstr(err.msg, "refused.bin") != NULL, "%s", err.msg);
    cr_assert_eq(read_code(f, DATASET, "link.bin", 0, &err), -ENOENT, "a symbolic link");
    cr_assert_eq(read_code(f, DATASET, "sub", 0, &err), -ENOENT, "a directory");
    cr_assert_eq(read_code(f, "ffffffffffffffffffffffffffffffff", "small.bin", 0, &err), -ENOENT);
    expect_file(f, "small.bin", SMALL_SIZE, 1, 0, 4096);
    wrk_peer_fetch_close(f);
}

Test(peer, refuses_an_offset_past_the_end_with_erange)
{
    struct wrk_peer_fetch *f = open_fetch();
    struct gs_error err;
    int rc;

    cr_assert_eq(read_code(f, DATASET, "small.bin", SMALL_SIZE + 1, &err), -ERANGE, "%s", err.msg);
    rc = read_code(f, DATASET, "big.bin", UINT64_MAX, &err);
    cr_assert_eq(rc, -ERANGE, "%d %s", rc, err.msg);
    expect_file(f, "small.bin", SMALL_SIZE, 1, 0, 4096);
    /* the size is known now: past it is still the peer's -ERANGE */
    cr_assert_eq(read_code(f, DATASET, "small.bin", SMALL_SIZE + 1, &err), -ERANGE);
    wrk_peer_fetch_close(f);
}

Test(peer, fails_the_handshake_with_another_key_or_none)
{
    struct gs_proto_auth_key other;
    struct wrk_peer_fetch *f = NULL;
    struct gs_error err;

    fill_key(&other, 2);
    cr_assert_eq(wrk_peer_fetch_open("127.0.0.1", port, &other, "n2", TIMEOUT_MS, &f, &err),
                 -EKEYREJECTED);
    cr_assert_null(f);
    cr_assert(strstr(err.msg, "127.0.0.1") != NULL, "%s", err.msg);
    cr_assert_eq(wrk_peer_fetch_open("127.0.0.1", port, NULL, "n2", TIMEOUT_MS, &f, &err),
                 -EKEYREJECTED);
    cr_assert_null(f);
    f = open_fetch(); /* the right key still gets in */
    expect_file(f, "small.bin", SMALL_SIZE, 1, 0, 4096);
    wrk_peer_fetch_close(f);
}

Test(peer, closes_a_client_that_sends_garbage_and_serves_others)
{
    struct wrk_peer_fetch *f = open_fetch();
    static const char garbage[] = "GET / HTTP/1.0\r\n\r\n";
    int fd = raw_connect(port);

    cr_assert_eq(write(fd, garbage, sizeof(garbage) - 1), (ssize_t)(sizeof(garbage) - 1));
    cr_assert(closed_by_peer(fd), "garbage ends the connection");
    close(fd);
    expect_file(f, "big.bin", BIG_SIZE, 2, 0, WRK_PEER_CHUNK);
    wrk_peer_fetch_close(f);
}

Test(peer, closes_a_connection_that_sends_a_second_read_or_another_message)
{
    struct gs_buf frames = GS_BUF_INIT;
    Gs__Heartbeat hb = GS__HEARTBEAT__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    struct wrk_peer_fetch *f = open_fetch();
    struct gs_proto_seal seal = {0};
    int fd = raw_worker(&seal);

    append_shard_read(&frames, 1, "big.bin", &seal);
    /* in the same write: the first is not done */
    append_shard_read(&frames, 2, "small.bin", &seal);
    write_buf(fd, &frames);
    cr_assert(closed_by_peer(fd), "a second ShardRead ends the connection");
    close(fd);
    gs_proto_seal_clear(&seal);

    fd = raw_worker(&seal);
    gs_buf_reset(&frames);
    env.body_case = GS__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    append_frame(&frames, &env, &seal);
    write_buf(fd, &frames);
    cr_assert(closed_by_peer(fd), "a message other than ShardRead ends the connection");
    close(fd);
    gs_proto_seal_clear(&seal);
    gs_buf_release(&frames);

    expect_file(f, "small.bin", SMALL_SIZE, 1, 0, 4096);
    wrk_peer_fetch_close(f);
}

/* After the handshake every frame carries its tag, numbered: a frame without one (injected
 * by someone without the key) or out of turn (replayed, or one dropped before it) ends the
 * connection unread, and the port goes on serving. */
Test(peer, closes_a_connection_whose_frame_is_unsealed_or_out_of_turn)
{
    struct gs_buf frames = GS_BUF_INIT;
    struct wrk_peer_fetch *f = open_fetch();
    struct gs_proto_seal seal = {0};
    int fd = raw_worker(&seal);

    append_shard_read(&frames, 1, "small.bin", NULL);
    write_buf(fd, &frames);
    cr_assert(closed_by_peer(fd), "an unsealed frame ends the connection");
    close(fd);
    gs_proto_seal_clear(&seal);

    fd = raw_worker(&seal);
    gs_buf_reset(&frames);
    seal.send_seq = 1; /* as if frame 0 had gone before, or this one came again */
    append_shard_read(&frames, 1, "small.bin", &seal);
    write_buf(fd, &frames);
    cr_assert(closed_by_peer(fd), "a frame out of turn ends the connection");
    close(fd);
    gs_proto_seal_clear(&seal);
    gs_buf_release(&frames);

    expect_file(f, "small.bin", SMALL_SIZE, 1, 0, 4096);
    wrk_peer_fetch_close(f);
}

Test(peer, goes_on_serving_when_a_client_leaves_mid_transfer)
{
    struct wrk_peer_fetch *f, *g;
    uint8_t buf[100];
    struct gs_error err;
    size_t got;

    make_file("huge.bin", HUGE_SIZE, 8);
    for (int i = 0; i < 3; i++) {
        /* a window of 16 MiB is asked for: far more than the socket buffers hold */
        f = open_fetch();
        cr_assert_eq(wrk_peer_fetch_read(f, DATASET, "huge.bin", 0, buf, sizeof(buf), &got, &err),
                     0, "%s", err.msg);
        cr_assert_eq(got, sizeof(buf));
        wrk_peer_fetch_close(f);
    }
    g = open_fetch();
    expect_file(g, "huge.bin", HUGE_SIZE, 8, 0, 4 * WRK_PEER_CHUNK);
    wrk_peer_fetch_close(g);
}

Test(peer, serves_several_clients_at_once)
{
    struct wrk_peer_fetch *f = open_fetch(), *g = open_fetch();
    uint8_t *want = pattern(BIG_SIZE, 2);
    uint8_t a[65536], b[65536];
    struct gs_error err;
    size_t got_a, got_b;
    uint64_t off = 0;

    /* interleaved: each connection's range waits while the other reads */
    while (off < BIG_SIZE) {
        cr_assert_eq(wrk_peer_fetch_read(f, DATASET, "big.bin", off, a, sizeof(a), &got_a, &err), 0,
                     "%s", err.msg);
        cr_assert_eq(wrk_peer_fetch_read(g, DATASET, "big.bin", off, b, sizeof(b), &got_b, &err), 0,
                     "%s", err.msg);
        cr_assert_eq(got_a, got_b);
        cr_assert_gt(got_a, 0);
        cr_assert(memcmp(a, want + off, got_a) == 0 && memcmp(b, want + off, got_b) == 0);
        off += got_a;
    }
    free(want);
    wrk_peer_fetch_close(f);
    wrk_peer_fetch_close(g);
}

Test(peer, plugs_into_a_reader_callback)
{
    struct wrk_peer_fetch *f = open_fetch();
    struct wrk_peer_fetch_reader r = {.fetch = f, .dataset = DATASET, .file = "small.bin"};
    int (*read_fn)(uint64_t, void *, size_t, size_t *, struct gs_error *, void *) =
        wrk_peer_fetch_reader;
    uint8_t *want = pattern(SMALL_SIZE, 1);
    uint8_t buf[SMALL_SIZE];
    struct gs_error err;
    size_t got;

    cr_assert_eq(read_fn(500, buf, sizeof(buf), &got, &err, &r), 0, "%s", err.msg);
    cr_assert_eq(got, SMALL_SIZE - 500);
    cr_assert(memcmp(buf, want + 500, got) == 0);
    cr_assert_eq(read_fn(SMALL_SIZE, buf, sizeof(buf), &got, &err, &r), 0);
    cr_assert_eq(got, 0);
    free(want);
    wrk_peer_fetch_close(f);
}

/* ---- suite peer_open: no key ---- */

static void setup_open(void)
{
    keyed = false;
    setup();
}

TestSuite(peer_open, .init = setup_open, .fini = teardown, .timeout = 60);

Test(peer_open, serves_without_a_key_and_refuses_a_keyed_client)
{
    struct wrk_peer_fetch *f = NULL;
    struct gs_error err;

    cr_assert_eq(wrk_peer_fetch_open("127.0.0.1", port, &key, "n2", TIMEOUT_MS, &f, &err),
                 -EKEYREJECTED, "a keyed client wants a keyed peer");
    f = open_fetch();
    expect_file(f, "big.bin", BIG_SIZE, 2, 0, WRK_PEER_CHUNK);
    wrk_peer_fetch_close(f);
}

/* ---- suite peer_limit: one connection ---- */

static void setup_limit(void)
{
    max_connections = 1;
    setup();
}

TestSuite(peer_limit, .init = setup_limit, .fini = teardown, .timeout = 60);

Test(peer_limit, closes_connections_beyond_the_limit_at_once)
{
    struct wrk_peer_fetch *f = open_fetch(), *g = NULL;
    uint64_t deadline = gs_clock_mono_ms() + TIMEOUT_MS;
    struct gs_error err;
    int fd = raw_connect(port);
    char byte;

    cr_assert(closed_by_peer(fd), "the second connection is closed");
    close(fd);
    fd = raw_connect(port);
    cr_assert_eq(read(fd, &byte, 1), 0, "closed before any Hello");
    close(fd);
    expect_file(f, "small.bin", SMALL_SIZE, 1, 0, 4096);
    wrk_peer_fetch_close(f);
    /* once the first has gone (the server learns it soon), another gets in */
    while (wrk_peer_fetch_open("127.0.0.1", port, &key, "n2", TIMEOUT_MS, &g, &err) < 0) {
        cr_assert_lt(gs_clock_mono_ms(), deadline, "a new connection after the first left");
        poll(NULL, 0, 5); /* polled with a deadline: the server's close takes a loop turn */
    }
    expect_file(g, "small.bin", SMALL_SIZE, 1, 0, 4096);
    wrk_peer_fetch_close(g);
}

/* ---- suite fetch: the client against peers that misbehave ---- */

struct fake_peer {
    int listen_fd;
    uint16_t port;
    bool hang_up; /* accept and close at once; else accept and say nothing */
    int accepted_fd;
    pthread_t thread;
};

static void *fake_peer_run(void *arg)
{
    struct fake_peer *p = arg;

    p->accepted_fd = accept(p->listen_fd, NULL, NULL);
    if (p->hang_up && p->accepted_fd >= 0) {
        close(p->accepted_fd);
        p->accepted_fd = -1;
    }
    return NULL;
}

static void fake_peer_start(struct fake_peer *p, bool hang_up)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    socklen_t len = sizeof(sin);

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    p->hang_up = hang_up;
    p->accepted_fd = -1;
    p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(p->listen_fd, 0);
    cr_assert_eq(bind(p->listen_fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    cr_assert_eq(listen(p->listen_fd, 4), 0);
    cr_assert_eq(getsockname(p->listen_fd, (struct sockaddr *)&sin, &len), 0);
    p->port = ntohs(sin.sin_port);
    cr_assert_eq(pthread_create(&p->thread, NULL, fake_peer_run, p), 0);
}

static void fake_peer_stop(struct fake_peer *p)
{
    pthread_join(p->thread, NULL);
    if (p->accepted_fd >= 0)
        close(p->accepted_fd);
    close(p->listen_fd);
}

static void ignore_sigpipe(void)
{
    signal(SIGPIPE, SIG_IGN);
}

TestSuite(fetch, .init = ignore_sigpipe, .timeout = 60);

Test(fetch, times_out_on_a_peer_that_says_nothing)
{
    struct fake_peer p;
    struct wrk_peer_fetch *f = NULL;
    struct gs_error err;

    fake_peer_start(&p, false);
    cr_assert_eq(wrk_peer_fetch_open("127.0.0.1", p.port, NULL, "n2", 200, &f, &err), -ETIMEDOUT,
                 "%s", err.msg);
    cr_assert_null(f);
    fake_peer_stop(&p);
}

Test(fetch, reports_a_peer_that_hangs_up)
{
    struct fake_peer p;
    struct wrk_peer_fetch *f = NULL;
    struct gs_error err;
    int rc;

    fake_peer_start(&p, true);
    rc = wrk_peer_fetch_open("127.0.0.1", p.port, NULL, "n2", TIMEOUT_MS, &f, &err);
    cr_assert(rc == -ECONNRESET || rc == -EPIPE, "rc=%d %s", rc, err.msg);
    cr_assert(strstr(err.msg, "127.0.0.1") != NULL, "%s", err.msg);
    cr_assert_null(f);
    fake_peer_stop(&p);
}

Test(fetch, reports_nobody_listening)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    socklen_t len = sizeof(sin);
    struct wrk_peer_fetch *f = NULL;
    struct gs_error err;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    /* a port bound but not listening: connecting to it is refused */
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    cr_assert_eq(
        wrk_peer_fetch_open("127.0.0.1", ntohs(sin.sin_port), NULL, "n2", TIMEOUT_MS, &f, &err),
        -ECONNREFUSED, "%s", err.msg);
    cr_assert_null(f);
    close(fd);
    wrk_peer_fetch_close(NULL);
}

/* ---- suite server: creating one, on a private loop in this thread ---- */

static void count_closed(void *data)
{
    (*(int *)data)++;
}

Test(server, refuses_a_taken_port_and_an_address_that_is_not_one)
{
    struct wrk_peer_opts opts = {
        .bind_address = "127.0.0.1", .root = "/nonexistent", .node_name = "n1"};
    struct wrk_peer_server *a, *b;
    struct gs_error err;
    uv_loop_t l;
    int closed = 0;

    cr_assert_eq(uv_loop_init(&l), 0);
    a = wrk_peer_server_new(&l, &opts, &err);
    cr_assert_not_null(a, "%s", err.msg);
    cr_assert_eq(wrk_peer_server_connections(a), 0);
    opts.port = wrk_peer_server_port(a);
    b = wrk_peer_server_new(&l, &opts, &err);
    cr_assert_null(b);
    cr_assert_eq(err.code, -EADDRINUSE, "%s", err.msg);
    opts.bind_address = "not-an-address";
    cr_assert_null(wrk_peer_server_new(&l, &opts, &err));
    cr_assert_eq(err.code, -EINVAL, "%s", err.msg);
    wrk_peer_server_close(a, count_closed, &closed);
    wrk_peer_server_close(NULL, count_closed, &closed);
    uv_run(&l, UV_RUN_DEFAULT);
    cr_assert_eq(closed, 1);
    cr_assert_eq(uv_loop_close(&l), 0, "the failed servers freed their handles too");
}
