/*
 * test_offload.c: blocking calls on threads of their own (worker/offload.h). Results come
 * back on the loop; calls that hang (reading a pipe nobody writes yet) hold neither the
 * other calls nor libuv's pool; the limit on calls at once holds; closing waits for no
 * running call, and a call that returns after the close, or whose result was not delivered
 * yet, is dropped, never done.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "tests/loop_wait.h"
#include "worker/offload.h"

#define DEADLINE_MS 10000
#define HUNG 6 /* more than libuv's pool has threads (4 unless UV_THREADPOOL_SIZE says more) */

static uv_loop_t loop;
static pthread_t loop_thread;
static int gate[2]; /* hung calls read a byte each from gate[0] */
static atomic_int dones, drops, works_finished;
static int closed_calls;

struct job {
    bool hang;
    int in, out;
    bool work_off_loop, done_on_loop; /* asserted on the loop: a failed assert belongs there */
};

#define RUN_UNTIL(cond) GS_TEST_RUN_UNTIL(&loop, cond, DEADLINE_MS)

/* Waits off the loop (for calls' threads) until cond holds or the deadline passes. */
#define POLL_UNTIL(cond)                                                                           \
    do {                                                                                           \
        uint64_t until_ = gs_clock_mono_ms() + DEADLINE_MS;                                        \
        while (!(cond) && gs_clock_mono_ms() < until_)                                             \
            nanosleep(&(struct timespec){0, 1000000}, NULL);                                       \
        cr_assert((cond), "timed out waiting for %s", #cond);                                      \
    } while (0)

static void work(void *data)
{
    struct job *j = data;
    char b;

    j->work_off_loop = !pthread_equal(pthread_self(), loop_thread);
    if (j->hang && read(gate[0], &b, 1) != 1)
        return; /* out stays 0: the test sees it */
    j->out = j->in * j->in;
    atomic_fetch_add(&works_finished, 1);
}

static void done(void *data)
{
    struct job *j = data;

    j->done_on_loop = pthread_equal(pthread_self(), loop_thread);
    atomic_fetch_add(&dones, 1);
}

static void drop(void *data)
{
    (void)data;
    atomic_fetch_add(&drops, 1);
}

static void on_closed(void *data)
{
    (*(int *)data)++;
}

static void release_hung(int n)
{
    for (int i = 0; i < n; i++)
        cr_assert_eq(write(gate[1], "x", 1), 1);
}

static void setup(void)
{
    cr_assert_eq(uv_loop_init(&loop), 0);
    cr_assert_eq(pipe(gate), 0);
    loop_thread = pthread_self();
    atomic_store(&dones, 0);
    atomic_store(&drops, 0);
    atomic_store(&works_finished, 0);
    closed_calls = 0;
}

static void teardown(void)
{
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&loop), 0, "a handle was left open");
    close(gate[0]);
    close(gate[1]);
}

TestSuite(offload, .init = setup, .fini = teardown);

static void close_offload(struct wrk_offload *o)
{
    wrk_offload_close(o, on_closed, &closed_calls);
    RUN_UNTIL(closed_calls == 1);
}

Test(offload, results_come_back_on_the_loop)
{
    struct job jobs[8] = {0};
    struct wrk_offload *o;

    cr_assert_eq(wrk_offload_new(&loop, 8, &o), 0);
    for (int i = 0; i < 8; i++) {
        jobs[i].in = i + 2;
        cr_assert_eq(wrk_offload_run(o, work, done, drop, &jobs[i]), 0);
    }
    RUN_UNTIL(atomic_load(&dones) == 8);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(jobs[i].out, (i + 2) * (i + 2));
        cr_assert(jobs[i].work_off_loop);
        cr_assert(jobs[i].done_on_loop);
    }
    cr_assert_eq(wrk_offload_pending(o), 0);
    cr_assert_eq(atomic_load(&drops), 0);
    close_offload(o);
}

static void pool_work(uv_work_t *req)
{
    (void)req;
}

static void pool_done(uv_work_t *req, int status)
{
    cr_assert_eq(status, 0);
    (*(int *)req->data)++;
}

/* More hung calls than libuv's pool has threads: quick calls and pool work still finish. */
Test(offload, hung_calls_hold_neither_other_calls_nor_the_pool)
{
    struct job hung[HUNG] = {0}, quick[4] = {0};
    struct wrk_offload *o;
    uv_work_t req;
    int pool_ran = 0;

    cr_assert_eq(wrk_offload_new(&loop, HUNG + 4, &o), 0);
    for (int i = 0; i < HUNG; i++) {
        hung[i] = (struct job){.hang = true, .in = 3};
        cr_assert_eq(wrk_offload_run(o, work, done, drop, &hung[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        quick[i].in = 5;
        cr_assert_eq(wrk_offload_run(o, work, done, drop, &quick[i]), 0);
    }
    req.data = &pool_ran;
    cr_assert_eq(uv_queue_work(&loop, &req, pool_work, pool_done), 0);
    RUN_UNTIL(atomic_load(&dones) == 4 && pool_ran == 1);
    cr_assert_eq(wrk_offload_pending(o), HUNG);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(quick[i].out, 25);
    release_hung(HUNG);
    RUN_UNTIL(atomic_load(&dones) == HUNG + 4);
    for (int i = 0; i < HUNG; i++)
        cr_assert_eq(hung[i].out, 9);
    close_offload(o);
}

Test(offload, at_most_max_calls_at_once)
{
    struct job j[3] = {{.hang = true}, {.hang = true}, {.in = 1}};
    struct wrk_offload *o;

    cr_assert_eq(wrk_offload_new(&loop, 0, &o), -EINVAL);
    cr_assert_eq(wrk_offload_new(&loop, 2, &o), 0);
    cr_assert_eq(wrk_offload_run(o, work, done, drop, &j[0]), 0);
    cr_assert_eq(wrk_offload_run(o, work, done, drop, &j[1]), 0);
    cr_assert_eq(wrk_offload_run(o, work, done, drop, &j[2]), -EBUSY);
    release_hung(1);
    RUN_UNTIL(atomic_load(&dones) == 1);
    cr_assert_eq(wrk_offload_run(o, work, done, drop, &j[2]), 0, "room again once one is done");
    RUN_UNTIL(atomic_load(&dones) == 2);
    release_hung(1);
    RUN_UNTIL(atomic_load(&dones) == 3);
    close_offload(o);
}

/* The close completes while a call is stuck; the call, once it returns, is dropped. */
Test(offload, closing_waits_for_no_hung_call)
{
    static struct job j = {.hang = true}; /* the call outlives this frame's loop run */
    struct wrk_offload *o;

    cr_assert_eq(wrk_offload_new(&loop, 4, &o), 0);
    cr_assert_eq(wrk_offload_run(o, work, done, drop, &j), 0);
    close_offload(o);
    cr_assert_eq(uv_run(&loop, UV_RUN_NOWAIT), 0, "nothing holds the loop");
    cr_assert_eq(atomic_load(&drops), 0);
    release_hung(1);
    POLL_UNTIL(atomic_load(&drops) == 1);
    cr_assert_eq(atomic_load(&dones), 0);
}

/* A call that returned before the close but whose result the loop has not taken yet is
 * dropped too (on the loop or on its thread, whichever had it), never done. */
Test(offload, a_result_not_yet_delivered_is_dropped)
{
    struct job j = {.in = 4};
    struct wrk_offload *o;

    cr_assert_eq(wrk_offload_new(&loop, 4, &o), 0);
    cr_assert_eq(wrk_offload_run(o, work, done, drop, &j), 0);
    POLL_UNTIL(atomic_load(&works_finished) == 1); /* the loop has not run since */
    wrk_offload_close(o, on_closed, &closed_calls);
    cr_assert_eq(wrk_offload_run(o, work, done, drop, &j), -ESHUTDOWN);
    RUN_UNTIL(closed_calls == 1);
    POLL_UNTIL(atomic_load(&drops) == 1);
    cr_assert_eq(atomic_load(&dones), 0);
    cr_assert_eq(j.out, 16);
}
