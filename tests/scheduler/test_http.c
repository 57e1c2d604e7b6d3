/*
 * test_http.c: gschedd's HTTP server (scheduler/http.h). HOST:PORT parsing (IPv4, names,
 * [IPv6], refusals) and formatting; and the server on a private libuv loop: started on a
 * free port whose address lands in STATE_DIR/http.addr, answering an unknown path 404
 * and a POST 405 with its Allow header, a taken port refused without harm, and a close
 * that removes the file and leaves nothing on the loop.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "scheduler/http.h"

static struct sockaddr_storage addr;
static socklen_t len;

Test(http_addr, parses_ipv4_with_its_port)
{
    char text[64];

    cr_assert_eq(sched_http_parse_addr("127.0.0.1:6818", &addr, &len), 0);
    cr_assert_eq(addr.ss_family, AF_INET);
    cr_assert_eq(len, sizeof(struct sockaddr_in));
    cr_assert_eq(sched_http_format_addr((struct sockaddr *)&addr, text, sizeof(text)), 0);
    cr_assert_str_eq(text, "127.0.0.1:6818");
}

Test(http_addr, resolves_localhost_to_ipv4)
{
    char text[64];

    cr_assert_eq(sched_http_parse_addr("localhost:0", &addr, &len), 0);
    cr_assert_eq(sched_http_format_addr((struct sockaddr *)&addr, text, sizeof(text)), 0);
    cr_assert_str_eq(text, "127.0.0.1:0");
}

Test(http_addr, parses_ipv6_in_brackets)
{
    char text[64];

    cr_assert_eq(sched_http_parse_addr("[::1]:9100", &addr, &len), 0);
    cr_assert_eq(addr.ss_family, AF_INET6);
    cr_assert_eq(sched_http_format_addr((struct sockaddr *)&addr, text, sizeof(text)), 0);
    cr_assert_str_eq(text, "[::1]:9100");
}

Test(http_addr, refuses_malformed_specs)
{
    const char *bad[] = {"",
                         "127.0.0.1",
                         ":6818",
                         "127.0.0.1:",
                         "1.2.3.4:x1",
                         "127.0.0.1:65536",
                         "::1:80",
                         "[::1]80",
                         "[::1:80",
                         "[]:80",
                         "1.2.3.4:-1",
                         "127.0.0.1:123456",
                         "[1.2.3.4]:80"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(sched_http_parse_addr(bad[i], &addr, &len), -EINVAL, "'%s' accepted", bad[i]);
    cr_expect_eq(sched_http_parse_addr(NULL, &addr, &len), -EINVAL);
}

/* --- the server on a private loop ------------------------------------------------------- */

static uv_loop_t loop;
static char dir[64];
static bool closed;

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/gsched-http-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(uv_loop_init(&loop), 0);
    closed = false;
}

static void teardown(void)
{
    char path[128];

    snprintf(path, sizeof(path), "%s/http.addr", dir);
    unlink(path);
    rmdir(dir);
}

TestSuite(http_server, .init = setup, .fini = teardown);

static void on_closed(void *data)
{
    *(bool *)data = true;
}

static void close_and_check(struct sched_http *h)
{
    sched_http_close(h, on_closed, &closed);
    while (!closed)
        uv_run(&loop, UV_RUN_ONCE);
    cr_assert_eq(uv_loop_close(&loop), 0, "handles left on the loop");
}

/* Sends request to port and runs the loop until the server closes; the reply in out. */
static void exchange(int port, const char *request, char *out, size_t size)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    uint64_t deadline = gs_clock_mono_ms() + 5000;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    size_t got = 0;
    ssize_t n;

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_geq(fd, 0);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    cr_assert_eq(send(fd, request, strlen(request), 0), (ssize_t)strlen(request));
    fcntl(fd, F_SETFL, O_NONBLOCK);
    for (;;) {
        cr_assert_lt(gs_clock_mono_ms(), deadline, "no complete reply; got: %.*s", (int)got, out);
        uv_run(&loop, UV_RUN_NOWAIT);
        n = recv(fd, out + got, size - 1 - got, 0);
        if (n == 0 || got + (size_t)(n > 0 ? n : 0) >= size - 1)
            break;
        if (n > 0)
            got += (size_t)n;
    }
    out[got] = '\0';
    close(fd);
}

static int read_addr_port(void)
{
    char path[128], text[64] = "";
    FILE *f;
    char *colon;

    snprintf(path, sizeof(path), "%s/http.addr", dir);
    f = fopen(path, "r");
    cr_assert_not_null(f, "no %s", path);
    cr_assert_not_null(fgets(text, sizeof(text), f));
    fclose(f);
    colon = strrchr(text, ':');
    cr_assert(strncmp(text, "127.0.0.1:", 10) == 0 && colon != NULL, "http.addr: %s", text);
    return atoi(colon + 1);
}

Test(http_server, writes_its_bound_port_and_answers_404_and_405)
{
    struct sched_http *h = sched_http_start(NULL, &loop, "127.0.0.1:0", dir);
    char reply[2048];
    int port;

    cr_assert_not_null(h);
    port = sched_http_port(h);
    cr_assert_gt(port, 0);
    cr_assert_eq(read_addr_port(), port);
    exchange(port, "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", reply,
             sizeof(reply));
    cr_assert(strncmp(reply, "HTTP/1.1 404", 12) == 0, "reply: %s", reply);
    cr_assert_not_null(strstr(reply, "{\"error\":\"not found\",\"path\":\"/nope\"}"), "%s", reply);
    exchange(port,
             "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n"
             "\r\nabc",
             reply, sizeof(reply));
    cr_assert(strncmp(reply, "HTTP/1.1 405", 12) == 0, "reply: %s", reply);
    cr_assert_not_null(strstr(reply, "Allow: GET, HEAD\r\n"), "%s", reply);
    close_and_check(h);
    cr_assert_eq(access(dir, F_OK), 0);
}

Test(http_server, removes_its_address_file_when_closed)
{
    struct sched_http *h = sched_http_start(NULL, &loop, "127.0.0.1:0", dir);
    char path[128];

    cr_assert_not_null(h);
    snprintf(path, sizeof(path), "%s/http.addr", dir);
    cr_assert_eq(access(path, F_OK), 0);
    close_and_check(h);
    cr_assert_neq(access(path, F_OK), 0);
}

Test(http_server, refuses_a_taken_port_and_leaves_nothing_behind)
{
    struct sched_http *h = sched_http_start(NULL, &loop, "127.0.0.1:0", dir);
    struct sched_http *second;
    char spec[64];

    cr_assert_not_null(h);
    snprintf(spec, sizeof(spec), "127.0.0.1:%d", sched_http_port(h));
    second = sched_http_start(NULL, &loop, spec, dir);
    cr_assert_null(second);
    cr_assert_eq(read_addr_port(), sched_http_port(h), "the first server's file was touched");
    close_and_check(h);
}

Test(http_server, is_off_without_an_address_and_refuses_a_bad_one)
{
    cr_assert_null(sched_http_start(NULL, &loop, NULL, dir));
    cr_assert_null(sched_http_start(NULL, &loop, "nonsense", dir));
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&loop), 0);
}
