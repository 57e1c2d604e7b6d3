/*
 * fake_gschedd.c: a stand-in gschedd for the trainer's tests (see fake_gschedd.h). Blocking
 * I/O on its own thread, every wait bounded, so that a test that goes wrong fails instead
 * of hanging.
 */
#define _GNU_SOURCE

#include "fake_gschedd.h"

#include <criterion/criterion.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define FAKE_IO_MS 2000

/* Hello both ways, the fake's saying protocol minor f->minor. */
static int handshake(struct fake_gschedd *f, int fd)
{
    Gs__Envelope env = GS__ENVELOPE__INIT, *peer = NULL;
    Gs__Hello hello;
    int rc;

    gs_proto_hello_init(&hello, GS__ROLE__ROLE_SCHEDULER, "fake");
    hello.protocol_minor = f->minor;
    env.body_case = GS__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    rc = gs_proto_write_fd(fd, &env, FAKE_IO_MS);
    if (rc == 0)
        rc = gs_proto_read_fd(fd, 0, FAKE_IO_MS, &peer);
    if (rc == 0 && peer->body_case != GS__ENVELOPE__BODY_HELLO)
        rc = -EPROTO;
    gs_proto_envelope_free(peer);
    return rc;
}

static void serve_one(struct fake_gschedd *f, int fd)
{
    Gs__Envelope *req = NULL, reply = GS__ENVELOPE__INIT;

    if (handshake(f, fd) < 0 || gs_proto_read_fd(fd, 0, FAKE_IO_MS, &req) < 0)
        return;
    f->answer(f, req, &reply);
    reply.request_id = req->request_id;
    (void)gs_proto_write_fd(fd, &reply, FAKE_IO_MS);
    gs_proto_envelope_free(req);
}

static void *fake_main(void *arg)
{
    struct fake_gschedd *f = arg;

    while (!atomic_load(&f->stop)) {
        struct pollfd p = {.fd = f->lfd, .events = POLLIN};
        int fd;

        if (poll(&p, 1, 20) <= 0)
            continue;
        fd = accept(f->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        serve_one(f, fd);
        close(fd);
    }
    return NULL;
}

void fake_gschedd_start(struct fake_gschedd *f, bool serve, uint32_t minor, fake_answer_fn answer,
                        void *data)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};

    memset(f, 0, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/gs-fake-XXXXXX");
    cr_assert_not_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/gschedd.sock", f->dir);
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", f->path);
    f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(f->lfd, 0);
    cr_assert_eq(bind(f->lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    cr_assert_eq(listen(f->lfd, 64), 0);
    f->serve = serve;
    f->minor = minor != 0 ? minor : GS_PROTO_VERSION_MINOR;
    f->answer = answer;
    f->data = data;
    if (serve)
        cr_assert_eq(pthread_create(&f->thread, NULL, fake_main, f), 0);
    setenv("GSCHED_JOB_ID", "7", 1);
    setenv("GSCHED_SOCKET", f->path, 1);
}

void fake_gschedd_stop(struct fake_gschedd *f)
{
    atomic_store(&f->stop, true);
    if (f->serve)
        pthread_join(f->thread, NULL);
    close(f->lfd);
    unlink(f->path);
    rmdir(f->dir);
    unsetenv("GSCHED_JOB_ID");
    unsetenv("GSCHED_SOCKET");
}
