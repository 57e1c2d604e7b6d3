/*
 * test_report.c: gsched-train's progress reports (trainer/report.h) against a fake gschedd
 * on a Unix socket in a temporary directory: no reports outside a job, which steps send
 * one, the eval loss riding on the next, a refusal turning reports off after one warning,
 * and a gschedd that never answers costing at most TRN_REPORT_MAX_FAILURES timeouts.
 */
#define _GNU_SOURCE

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "fake_gschedd.h"
#include "trainer/report.h"

#define MAX_SEEN 64

/* What the fake gschedd (fake_gschedd.h) took: every report, or refused each. */
struct seen {
    bool refuse;
    size_t n;
    Gs__JobProgressReport v[MAX_SEEN];
};

static void answer(struct fake_gschedd *f, const Gs__Envelope *req, Gs__Envelope *reply)
{
    static Gs__JobProgressReply ok = GS__JOB_PROGRESS_REPLY__INIT;
    static Gs__ErrorReply err = GS__ERROR_REPLY__INIT;
    struct seen *seen = f->data;

    if (req->body_case == GS__ENVELOPE__BODY_JOB_PROGRESS_REPORT && seen->n < MAX_SEEN) {
        seen->v[seen->n] = *req->job_progress_report;
        seen->v[seen->n].text = NULL; /* borrowed from req, freed after the answer */
        seen->n++;
    }
    if (seen->refuse) {
        err.code = -EINVAL;
        err.message = "job 7 is COMPLETED: progress is taken from running jobs only";
        reply->body_case = GS__ENVELOPE__BODY_ERROR;
        reply->error = &err;
    } else {
        ok.job_id = req->job_progress_report->job_id;
        reply->body_case = GS__ENVELOPE__BODY_JOB_PROGRESS_REPLY;
        reply->job_progress_reply = &ok;
    }
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
                                    .data_parallel = true,
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
    struct fake_gschedd f;
    struct seen seen = {0};

    fake_gschedd_start(&f, true, 0, answer, &seen);
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
    fake_gschedd_stop(&f);
    /* Steps done: 1, 6, 11 (every 5), 8 (after the eval), 12 (the last), 3 (stopped). */
    cr_assert_eq(seen.n, 6, "%zu reports", seen.n);
    uint64_t want[] = {1, 6, 8, 11, 12, 3};
    for (size_t i = 0; i < 6; i++) {
        cr_assert_eq(seen.v[i].step, want[i], "report %zu: step %llu", i,
                     (unsigned long long)seen.v[i].step);
        cr_assert_eq(seen.v[i].job_id, 7);
        cr_assert_eq(seen.v[i].steps, 12);
    }
    cr_assert_eq(seen.v[0].eval_loss, 0, "no eval before step 8");
    cr_assert_eq(seen.v[2].eval_loss, 2.25);
    cr_assert_eq(seen.v[2].eval_step, 8);
    cr_assert_eq(seen.v[4].eval_loss, 2.25, "the last eval stays with later reports");
    cr_assert_float_eq(seen.v[0].tokens_per_s, 10000.0, 1e-9);
    cr_assert_eq(seen.v[0].ranks, 2);
    cr_assert_float_eq(seen.v[0].comm_exposed_ms, 2.5, 1e-12);
    cr_assert_float_eq(seen.v[0].overlap, 0.75, 1e-12);
}

Test(report, a_refusal_is_one_warning_and_the_end_of_reports)
{
    struct trn_report *r = NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *warn = open_memstream(&text, &len);
    struct fake_gschedd f;
    struct seen seen = {.refuse = true};

    cr_assert_not_null(warn);
    fake_gschedd_start(&f, true, 0, answer, &seen);
    cr_assert_eq(trn_report_open(1, warn, &r), 0);
    for (uint64_t s = 0; s < 4; s++) {
        struct trn_step_record rec = record(s, 4);

        trn_report_step(r, &rec, false);
    }
    trn_report_free(r);
    fake_gschedd_stop(&f);
    fclose(warn);
    cr_assert_eq(seen.n, 1, "%zu reports after a refusal", seen.n);
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
    struct fake_gschedd f;

    cr_assert_not_null(warn);
    fake_gschedd_start(&f, false, 0, answer, NULL);
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
    fake_gschedd_stop(&f);
    fclose(warn);
    /* Each timed out (no sooner than the timeout), then nothing more was tried. */
    cr_assert_geq(t1 - t0, (uint64_t)TRN_REPORT_MAX_FAILURES * TRN_REPORT_TIMEOUT_MS - 5);
    cr_assert_lt(t1 - t0, (uint64_t)TRN_REPORT_MAX_FAILURES * TRN_REPORT_TIMEOUT_MS + 2000);
    cr_assert_lt(t2 - t1, 100, "%llu ms after reports were off", (unsigned long long)(t2 - t1));
    cr_assert(strstr(text, "timeout") != NULL, "%s", text);
    cr_assert_eq(strchr(text, '\n'), text + len - 1, "one line: %s", text);
    free(text);
}
