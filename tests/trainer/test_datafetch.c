/*
 * test_datafetch.c: streamed shards asked of the worker and awaited (trainer/datafetch.h),
 * against a fake worker socket (fake_gschedd.h: the worker's CLI socket speaks gschedd's
 * protocol) that records each DataFetchRequest and, as told, puts the shard's file in place,
 * answers with a copy error, or does nothing. A hint asks and returns; a wait returns once the
 * file is there, fails at once with the worker's error, gives up after the timeout naming the
 * shard and the directory, ends when cancelled; a worker out of reach only warns, once.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "fake_gschedd.h"
#include "trainer/datafetch.h"

#define DATASET "0123456789abcdef0123456789abcdef"

/* A cached dataset's manifest, as the fetcher reads it: two train shards and a val shard. */
static char dir[64], paths[3][128];
static char *files[3] = {"train-00000.bin", "train-00001.bin", "val-00002.bin"};
static struct shard_manifest_shard shards[3];
static struct shard_manifest manifest = {.dir = dir, .nshards = 3, .shards = shards};

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/gs-datafetch-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    for (int i = 0; i < 3; i++) {
        snprintf(paths[i], sizeof(paths[i]), "%s/%s", dir, files[i]);
        shards[i] =
            (struct shard_manifest_shard){.file = files[i],
                                          .path = paths[i],
                                          .split = i < 2 ? SHARD_SPLIT_TRAIN : SHARD_SPLIT_VAL};
    }
}

static void teardown(void)
{
    for (int i = 0; i < 3; i++)
        unlink(paths[i]);
    rmdir(dir);
    unsetenv("GSCHED_JOB_ID");
    unsetenv("GSCHED_SOCKET");
}

TestSuite(datafetch, .init = setup, .fini = teardown);

static void put(uint32_t i)
{
    FILE *f = fopen(paths[i], "w");

    cr_assert_not_null(f);
    fclose(f);
}

/* The fake worker: what it was asked, and what it does about it. */
enum worker_does { NOTHING, PUTS, FAILS };
struct worker {
    enum worker_does does;
    atomic_int requests;
    uint64_t job_id;
    char dataset[40];
    uint32_t last_shard;
    size_t nshards;
};

static void answer(struct fake_gschedd *f, const Gs__Envelope *req, Gs__Envelope *reply)
{
    static Gs__DataFetchReply r;
    static uint32_t held;
    struct worker *w = f->data;
    const Gs__DataFetchRequest *q = req->data_fetch_request;

    cr_assert_eq(req->body_case, GS__ENVELOPE__BODY_DATA_FETCH_REQUEST);
    gs__data_fetch_reply__init(&r);
    w->job_id = q->job_id;
    snprintf(w->dataset, sizeof(w->dataset), "%s", q->dataset);
    w->nshards = q->n_shards;
    w->last_shard = q->n_shards > 0 ? q->shards[0] : UINT32_MAX;
    if (w->does == PUTS && q->n_shards == 1) {
        put(q->shards[0]);
        held = q->shards[0];
        r.n_held = 1;
        r.held = &held;
    } else if (w->does == FAILS) {
        r.error = "copy from /data/src failed: Input/output error";
    }
    reply->body_case = GS__ENVELOPE__BODY_DATA_FETCH_REPLY;
    reply->data_fetch_reply = &r;
    atomic_fetch_add(&w->requests, 1);
}

static struct trn_datafetch *fetcher(uint32_t timeout_s, FILE *warn)
{
    struct trn_datafetch_config cfg = {
        .manifest = &manifest, .dataset = DATASET, .timeout_s = timeout_s, .rank = 3, .warn = warn};
    struct trn_datafetch *f = NULL;

    cr_assert_eq(trn_datafetch_new(&cfg, &f), 0);
    return f;
}

Test(datafetch, the_variable_says_whether_shards_stream)
{
    unsetenv("GSCHED_DATA_STREAM");
    cr_expect_not(trn_datafetch_env());
    setenv("GSCHED_DATA_STREAM", "0", 1);
    cr_expect_not(trn_datafetch_env());
    setenv("GSCHED_DATA_STREAM", "1", 1);
    cr_expect(trn_datafetch_env());
    unsetenv("GSCHED_DATA_STREAM");
}

Test(datafetch, a_hint_asks_the_worker_for_the_shard_and_returns)
{
    struct worker w = {.does = NOTHING};
    struct fake_gschedd fake;
    struct gs_error err = {0};
    struct trn_datafetch *f;

    fake_gschedd_start(&fake, true, 0, answer, &w);
    f = fetcher(600, NULL);
    cr_expect(trn_datafetch_asks(f));
    cr_expect_eq(trn_datafetch_shard(1, false, &err, f), 0, "%s", err.msg);
    cr_expect_eq(atomic_load(&w.requests), 1);
    cr_expect_eq(w.job_id, 7);
    cr_expect_str_eq(w.dataset, DATASET);
    cr_expect_eq(w.nshards, 1);
    cr_expect_eq(w.last_shard, 1);
    /* A hint whose answer is an error returns all the same: the wait will say it. */
    w.does = FAILS;
    cr_expect_eq(trn_datafetch_shard(0, false, &err, f), 0);
    trn_datafetch_free(f);
    fake_gschedd_stop(&fake);
}

Test(datafetch, a_wait_returns_once_the_worker_has_put_the_file_in_place)
{
    struct worker w = {.does = PUTS};
    struct fake_gschedd fake;
    struct gs_error err = {0};
    struct trn_datafetch *f;

    fake_gschedd_start(&fake, true, 0, answer, &w);
    f = fetcher(600, NULL);
    cr_expect_eq(trn_datafetch_shard(0, true, &err, f), 0, "%s", err.msg);
    cr_expect_eq(access(paths[0], F_OK), 0);
    cr_expect_eq(atomic_load(&w.requests), 1);
    /* The val split: only its missing shard is asked for. */
    cr_expect_eq(trn_datafetch_split(f, SHARD_SPLIT_VAL, &err), 0, "%s", err.msg);
    cr_expect_eq(atomic_load(&w.requests), 2);
    cr_expect_eq(w.last_shard, 2);
    cr_expect_eq(trn_datafetch_split(f, SHARD_SPLIT_VAL, &err), 0, "%s", err.msg);
    cr_expect_eq(atomic_load(&w.requests), 2, "a shard there is not asked for");
    trn_datafetch_free(f);
    fake_gschedd_stop(&fake);
}

Test(datafetch, a_wait_fails_at_once_with_the_workers_error)
{
    struct worker w = {.does = FAILS};
    struct fake_gschedd fake;
    struct gs_error err = {0};
    struct trn_datafetch *f;

    fake_gschedd_start(&fake, true, 0, answer, &w);
    f = fetcher(600, NULL);
    cr_expect_eq(trn_datafetch_shard(1, true, &err, f), -EIO);
    cr_expect_not_null(strstr(err.msg, "train-00001.bin"), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "copy from /data/src failed"), "%s", err.msg);
    trn_datafetch_free(f);
    fake_gschedd_stop(&fake);
}

Test(datafetch, a_wait_gives_up_after_the_timeout_naming_the_shard_and_the_directory)
{
    struct worker w = {.does = NOTHING};
    struct fake_gschedd fake;
    struct gs_error err = {0};
    struct trn_datafetch *f;
    uint64_t t0;

    fake_gschedd_start(&fake, true, 0, answer, &w);
    f = fetcher(1, NULL);
    t0 = gs_clock_mono_ms();
    cr_expect_eq(trn_datafetch_shard(1, true, &err, f), -ETIMEDOUT);
    cr_expect_geq(gs_clock_mono_ms() - t0, 1000);
    cr_expect_lt(gs_clock_mono_ms() - t0, 5000);
    cr_expect_not_null(strstr(err.msg, "train-00001.bin"), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, dir), "%s", err.msg);
    cr_expect_geq(atomic_load(&w.requests), 1);
    trn_datafetch_free(f);
    fake_gschedd_stop(&fake);
}

Test(datafetch, a_worker_out_of_reach_only_warns_once)
{
    struct gs_error err = {0};
    struct trn_datafetch *f;
    char line[512];
    FILE *warn = tmpfile();
    int lines = 0;

    cr_assert_not_null(warn);
    setenv("GSCHED_JOB_ID", "7", 1);
    setenv("GSCHED_SOCKET", "/nonexistent/gsched.sock", 1);
    f = fetcher(600, warn);
    cr_expect(trn_datafetch_asks(f));
    cr_expect_eq(trn_datafetch_shard(0, false, &err, f), 0);
    put(1);
    cr_expect_eq(trn_datafetch_shard(1, true, &err, f), 0, "%s", err.msg);
    for (int i = 0; i < 5; i++)
        cr_expect_eq(trn_datafetch_shard(0, false, &err, f), 0);
    rewind(warn);
    while (fgets(line, sizeof(line), warn) != NULL) {
        lines++;
        cr_expect_not_null(strstr(line, "data: rank 3: cannot ask the worker"), "%s", line);
    }
    cr_expect_eq(lines, 1);
    fclose(warn);
    trn_datafetch_free(f);
}

static void *cancel_soon(void *arg)
{
    struct timespec ts = {.tv_nsec = 100 * 1000000L};

    nanosleep(&ts, NULL);
    trn_datafetch_cancel(arg);
    return NULL;
}

Test(datafetch, a_cancel_ends_a_wait)
{
    struct gs_error err = {0};
    struct trn_datafetch *f;
    pthread_t t;

    /* Outside a job: nothing is asked, the wait only looks for the file. */
    f = fetcher(600, NULL);
    cr_expect_not(trn_datafetch_asks(f));
    cr_assert_eq(pthread_create(&t, NULL, cancel_soon, f), 0);
    cr_expect_eq(trn_datafetch_shard(0, true, &err, f), -ECANCELED);
    pthread_join(t, NULL);
    trn_datafetch_free(f);
}
