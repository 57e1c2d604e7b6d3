/*
 * test_sbcast_serve.c: sbcast's sender (slurm/sbcast.h) serves its receivers side by side:
 * three receivers on threads fetch a file while a stranger holds a connection open without
 * the token, and one with a wrong token is turned away; each gets the header and the
 * file's bytes, and the sender's status follows the step's exit and the receivers' answers.
 * The "step" is a child process that exits when the test says.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "slurm/sbcast.h"

#define TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define SIZE (3 << 20)

static uint16_t port;

struct receiver {
    pthread_t thread;
    const char *token;
    const char *answer; /* "ok\n" or another */
    char header[128];
    size_t got; /* file bytes read */
    bool same;  /* and they are the file's */
};

static int dial(void)
{
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    cr_assert_geq(fd, 0);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "%s", strerror(errno));
    return fd;
}

static void *receive(void *data)
{
    struct receiver *r = data;
    int fd = dial();
    size_t n = 0;
    long long size = 0;
    char byte, buf[65536];

    if (write(fd, r->token, strlen(r->token)) < 0 || write(fd, "\n", 1) != 1)
        goto out;
    while (n < sizeof(r->header) - 1 && read(fd, &byte, 1) == 1 && byte != '\n')
        r->header[n++] = byte;
    r->header[n] = '\0';
    if (sscanf(r->header, "%lld", &size) != 1)
        goto out;
    r->same = true;
    while (r->got < (size_t)size) {
        ssize_t k = read(fd, buf, sizeof(buf));

        if (k <= 0)
            break;
        for (ssize_t i = 0; i < k; i++)
            r->same &= buf[i] == (char)((r->got + (size_t)i) % 251);
        r->got += (size_t)k;
    }
    (void)!write(fd, r->answer, strlen(r->answer));
out:
    close(fd);
    return NULL;
}

struct ender {
    struct receiver *rs;
    size_t n;
    int fd; /* the step's pipe: closed, it exits */
};

/* Ends the step once every receiver is done, as srun ends when its tasks have. */
static void *end_step(void *data)
{
    struct ender *e = data;

    for (size_t i = 0; i < e->n; i++)
        pthread_join(e->rs[i].thread, NULL);
    close(e->fd);
    return NULL;
}

/* Runs the sender over a file of SIZE bytes (byte i is i % 251, mode 0750) with the
 * receivers, the step exiting with step_status once they are done, a stranger connected
 * first without a word when asked; returns the sender's status. */
static int run(struct receiver *rs, size_t n, int step_status, bool stranger)
{
    static char data[SIZE];
    char path[] = "/tmp/gsched-sbcast-XXXXXX";
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int src = mkstemp(path), lfd, go[2], rc, idle = -1;
    struct ender e;
    struct stat st;
    pthread_t t;
    pid_t pid;

    cr_assert_geq(src, 0);
    unlink(path);
    for (size_t i = 0; i < SIZE; i++)
        data[i] = (char)(i % 251);
    cr_assert_eq(write(src, data, SIZE), SIZE);
    cr_assert_eq(fchmod(src, 0750), 0);
    cr_assert_eq(fstat(src, &st), 0);
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    cr_assert_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(lfd, 16), 0);
    cr_assert_eq(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    port = ntohs(a.sin_port);
    cr_assert_eq(pipe(go), 0);
    pid = fork();
    if (pid == 0) { /* the step: ends when the test closes the pipe */
        char c;

        close(go[1]);
        (void)!read(go[0], &c, 1);
        _exit(step_status);
    }
    close(go[0]);
    if (stranger)
        idle = dial();
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(pthread_create(&rs[i].thread, NULL, receive, &rs[i]), 0);
    e = (struct ender){rs, n, go[1]};
    cr_assert_eq(pthread_create(&t, NULL, end_step, &e), 0);
    rc = sbcast_serve(lfd, pid, src, &st, TOKEN, 30);
    pthread_join(t, NULL);
    if (idle >= 0)
        close(idle);
    close(lfd);
    close(src);
    return rc;
}

Test(sbcast_serve, receivers_fetch_side_by_side_past_a_silent_stranger)
{
    struct receiver rs[4] = {{.token = TOKEN, .answer = "ok\n"},
                             {.token = TOKEN, .answer = "ok\n"},
                             {.token = TOKEN, .answer = "ok\n"},
                             {.token = "not-the-token", .answer = "ok\n"}};
    char want[64];
    uint64_t t0 = gs_clock_mono_ms();

    cr_assert_eq(run(rs, 4, 0, true), 0, "every receiver with the token answered ok");
    /* Served one after another, the stranger would have held the rest for its 30 s. */
    cr_assert_lt(gs_clock_mono_ms() - t0, 20000, "the stranger held the others up");
    snprintf(want, sizeof(want), "%d 750 ", SIZE);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(strncmp(rs[i].header, want, strlen(want)), 0, "header: %s", rs[i].header);
        cr_assert_eq(rs[i].got, SIZE, "receiver %d got %zu bytes", i, rs[i].got);
        cr_assert(rs[i].same, "receiver %d's bytes", i);
    }
    cr_assert_str_eq(rs[3].header, "", "a wrong token gets nothing");
    cr_assert_eq(rs[3].got, 0);
}

Test(sbcast_serve, a_receiver_that_fails_or_a_failed_step_fails_it)
{
    struct receiver bad[2] = {{.token = TOKEN, .answer = "ok\n"},
                              {.token = TOKEN, .answer = "error disk full\n"}};
    struct receiver fine[1] = {{.token = TOKEN, .answer = "ok\n"}};

    cr_assert_eq(run(bad, 2, 0, false), 1);
    cr_assert_eq(bad[0].got, SIZE);
    cr_assert_eq(run(fine, 1, 3, false), 1, "the step exited 3");
}
