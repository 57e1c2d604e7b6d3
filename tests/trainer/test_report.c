/*
 * test_report.c: gsched-train's progress reports (trainer/report.h) against a fake gschedd
 * on a Unix socket in a temporary directory: no reports outside a job, which steps send
 * one, the eval loss riding on the next, a refusal turning reports off after one warning,
 * and a gschedd that never answers costing at most TRN_REPORT_MAX_FAILURES timeouts.
 */
#define _GNU_SOURCE

#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/clock.h"
#include "proto/frame.h"
#include "trainer/report.h"

#define MAX_SEEN 64

/* A gschedd that takes (or refuses) every report and remembers it. */
struct fake {
    char dir[32], path[80];
    int lfd;
    bool serve; /* false: listen only, never accept (a stuck gschedd) */
    bool refuse;
    atomic_bool stop;
    pthread_t thread;
    size_t n;
    Gs__JobProgressReport seen[MAX_SEEN];
};

static void serve_one(struct fake *f, int fd)
{
    Gs__Envelope *req = NULL, env = GS__ENVELOPE__INIT;
    Gs__JobProgressReply ok = GS__JOB_PROGRESS_REPLY__INIT;
    Gs__ErrorReply err = GS__ERROR_REPLY__INIT;

    if (gs_proto_handshake_fd(fd, GS__ROLE__ROLE_SCHEDULER, "fake",
                              GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_CLI), 2000, NULL) < 0 ||
        gs_proto_read_fd(fd, 0, 2000, &req) < 0)
        return;
    if (req->body_case == GS__ENVELOPE__BODY_JOB_PROGRESS_REPORT && f->n < MAX_SEEN) {
        f->seen[f->n] = *req->job_progress_report;
        f->seen[f->n].text = NULL; /* borrowed from req, freed below */
        f->n++;
    }
    env.request_id = req->request_id;
    if (f->refuse) {
        err.code = -EINVAL;
        err.message = "job 7 is COMPLETED: progress is taken from running jobs only";
        env.body_case = GS__ENVELOPE__BODY_ERROR;
        env.error = &err;
    } else {
        ok.job_id = req->job_progress_report->job_id;
        env.body_case = GS__ENVELOPE__BODY_JOB_PROGRESS_REPLY;
        env.job_progress_reply = &ok;
    }
    (void)gs_proto_write_fd(fd, &env, 2000);
    gs_proto_envelope_free(req);
}

static void *fake_main(void *arg)
{
    struct fake *f = arg;

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

static void fake_start(struct fake *f, bool serve)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};

    memset(f, 0, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/gs-report-XXXXXX");
    cr_assert_not_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/gschedd.sock", f->dir);
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", f->path);
    f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(f->lfd, 0);
    cr_assert_eq(bind(f->lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    cr_assert_eq(listen(f->lfd, 64), 0);
    f->serve = serve;
    if (serve)
        cr_assert_eq(pthread_create(&f->thread, NULL, fake_main, f), 0);
    setenv("GSCHED_JOB_ID", "7", 1);
    setenv("GSCHED_SOCKET", f->path, 1);
}

static void fake_stop(struct fake *f)
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

static struct trn_step_record record(uint64_t step, uint64_t steps)
{
    return (struct trn_step_record){.step = step,
                                    .steps = steps,
                                    .loss = 2.0,
                                    .lr = 1e-3,
                                    .tokens = 1000,
                                    .step_ms = 100,
                                    .ranks = 2,
                                    .comm_ms = 10,
                                    .exposed_ms = 2.5};
}

Test(report, none_outside_a_job)
{
    struct trn_report *r = (struct trn_report *)1;

    unsetenv("GSCHED_JOB_ID");
    setenv("GSCHED_SOCKET", "/nonexistent.sock", 1);
    cr_assert_eq(trn_report_open(5, NULL, &r), 0);
    cr_assert_null(r);
    setenv("GSCHED_JOB_ID", "12x", 1);
    cr_assert_eq(trn_report_open(5, NULL, &r), 0);
    cr_assert_null(r, "a job id that is not a number");
    setenv("GSCHED_JOB_ID", "12", 1);
    unsetenv("GSCHED_SOCKET");
    cr_assert_eq(trn_report_open(5, NULL, &r), 0);
    cr_assert_null(r, "no socket to report to");
    unsetenv("GSCHED_JOB_ID");
    trn_report_step(NULL, NULL, true); /* nothing, not a crash */
    trn_report_eval(NULL, 1, 1.0);
}

Test(report, every_n_steps_after_eval_at_the_end_and_when_stopped)
{
    struct trn_report *r = NULL;
    struct fake f;

    fake_start(&f, true);
    cr_assert_eq(trn_report_open(5, NULL, &r), 0);
    cr_assert_not_null(r);
    for (uint64_t s = 0; s < 12; s++) {
        struct trn_step_record rec = record(s, 12);

        if (s + 1 == 8)
            trn_report_eval(r, 8, 2.25);
        trn_report_step(r, &rec, false);
    }
    trn_report_step(r, &(struct trn_step_record){.step = 2, .steps = 12}, true);
    trn_report_free(r);
    fake_stop(&f);
    /* Steps done: 1, 6, 11 (every 5), 8 (after the eval), 12 (the last), 3 (stopped). */
    cr_assert_eq(f.n, 6, "%zu reports", f.n);
    uint64_t want[] = {1, 6, 8, 11, 12, 3};
    for (size_t i = 0; i < 6; i++) {
        cr_assert_eq(f.seen[i].step, want[i], "report %zu: step %llu", i,
                     (unsigned long long)f.seen[i].step);
        cr_assert_eq(f.seen[i].job_id, 7);
        cr_assert_eq(f.seen[i].steps, 12);
    }
    cr_assert_eq(f.seen[0].eval_loss, 0, "no eval before step 8");
    cr_assert_eq(f.seen[2].eval_loss, 2.25);
    cr_assert_eq(f.seen[2].eval_step, 8);
    cr_assert_eq(f.seen[4].eval_loss, 2.25, "the last eval stays with later reports");
    cr_assert_float_eq(f.seen[0].tokens_per_s, 10000.0, 1e-9);
    cr_assert_eq(f.seen[0].ranks, 2);
    cr_assert_float_eq(f.seen[0].comm_exposed_ms, 2.5, 1e-12);
    cr_assert_float_eq(f.seen[0].overlap, 0.75, 1e-12);
}

Test(report, a_refusal_is_one_warning_and_the_end_of_reports)
{
    struct trn_report *r = NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *warn = open_memstream(&text, &len);
    struct fake f;

    cr_assert_not_null(warn);
    fake_start(&f, true);
    f.refuse = true;
    cr_assert_eq(trn_report_open(1, warn, &r), 0);
    for (uint64_t s = 0; s < 4; s++) {
        struct trn_step_record rec = record(s, 4);

        trn_report_step(r, &rec, false);
    }
    trn_report_free(r);
    fake_stop(&f);
    fclose(warn);
    cr_assert_eq(f.n, 1, "%zu reports after a refusal", f.n);
    cr_assert(strstr(text, "is COMPLETED") != NULL && strstr(text, "reports are off") != NULL, "%s",
              text);
    cr_assert_eq(strchr(text, '\n'), text + len - 1, "one line: %s", text);
    free(text);
}

Test(report, a_gschedd_that_never_answers_costs_a_bounded_time)
{
    struct trn_report *r = NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *warn = open_memstream(&text, &len);
    uint64_t t0, t1, t2;
    struct fake f;

    cr_assert_not_null(warn);
    fake_start(&f, false);
    cr_assert_eq(trn_report_open(1, warn, &r), 0);
    t0 = gs_clock_mono_ms();
    for (uint64_t s = 0; s < TRN_REPORT_MAX_FAILURES; s++) {
        struct trn_step_record rec = record(s, 100);

        trn_report_step(r, &rec, false);
    }
    t1 = gs_clock_mono_ms();
    for (uint64_t s = TRN_REPORT_MAX_FAILURES; s < 50; s++) {
        struct trn_step_record rec = record(s, 100);

        trn_report_step(r, &rec, false);
    }
    t2 = gs_clock_mono_ms();
    trn_report_free(r);
    fake_stop(&f);
    fclose(warn);
    /* Each timed out (no sooner than the timeout), then nothing more was tried. */
    cr_assert_geq(t1 - t0, (uint64_t)TRN_REPORT_MAX_FAILURES * TRN_REPORT_TIMEOUT_MS - 5);
    cr_assert_lt(t1 - t0, (uint64_t)TRN_REPORT_MAX_FAILURES * TRN_REPORT_TIMEOUT_MS + 2000);
    cr_assert_lt(t2 - t1, 100, "%llu ms after reports were off", (unsigned long long)(t2 - t1));
    cr_assert(strstr(text, "timeout") != NULL, "%s", text);
    cr_assert_eq(strchr(text, '\n'), text + len - 1, "one line: %s", text);
    free(text);
}
