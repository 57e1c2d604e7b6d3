/*
 * test_store_reads.c: the store's reads of part of the state, for jobs gschedd no longer
 * holds in memory (scheduler.min_job_age): the jobs kept at start (not finished, or ended
 * recently), jobs, tasks and events by id range, the most recent finished jobs matching a
 * filter; and reads through the journal, run on its writer thread once earlier changes are
 * committed, answered on the loop, a failed read failing alone.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/journal.h"
#include "scheduler/store.h"
#include "store_fixture.h"

TestSuite(store_reads, .init = store_fixture_setup, .fini = store_fixture_teardown, .timeout = 60);

/* Job id: state, ended at end_ms (0: not ended), by user, named name. */
static void put(uint64_t id, int state, uint64_t end_ms, const char *user, const char *name)
{
    static const unsigned char spec[] = {0x0a, 0x01, 'x'};
    struct sched_job_row row = {.id = id,
                                .name = name,
                                .uid = 1000,
                                .gid = 100,
                                .user = user,
                                .state = state,
                                .reason = "",
                                .submit_ms = 1000 + id,
                                .end_ms = end_ms,
                                .exit_code = (int32_t)id,
                                .spec = spec,
                                .spec_len = sizeof(spec)};

    cr_assert_eq(sched_store_put_job(store, &row), 0);
}

static void put_task(uint64_t job_id, uint32_t rank, const char *node)
{
    struct sched_task_row row = {.job_id = job_id,
                                 .rank = rank,
                                 .node = node,
                                 .attempt = 1,
                                 .state = 3,
                                 .exit_code = 7,
                                 .end_ms = 5000};

    cr_assert_eq(sched_store_put_task(store, &row), 0);
}

struct ids {
    uint64_t v[64];
    size_t n;
    char last_user[32], last_node[32];
};

static int collect_job(const struct sched_job_row *row, void *data)
{
    struct ids *ids = data;

    cr_assert_lt(ids->n, 64);
    ids->v[ids->n++] = row->id;
    snprintf(ids->last_user, sizeof(ids->last_user), "%s", row->user);
    cr_assert_eq(row->exit_code, (int32_t)row->id, "the whole row comes back");
    cr_assert_eq(row->spec_len, 3);
    return 0;
}

static int collect_task(const struct sched_task_row *row, void *data)
{
    struct ids *ids = data;

    ids->v[ids->n++] = row->job_id * 100 + row->rank;
    snprintf(ids->last_node, sizeof(ids->last_node), "%s", row->node);
    return 0;
}

static int collect_event(uint64_t at_ms, uint64_t job_id, const char *node, const char *kind,
                         const char *detail, void *data)
{
    struct ids *ids = data;

    (void)node;
    (void)kind;
    (void)detail;
    ids->v[ids->n++] = job_id * 1000 + at_ms;
    return 0;
}

static void expect(const struct ids *got, const uint64_t *want, size_t n)
{
    cr_assert_eq(got->n, n, "%zu rows, not %zu", got->n, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got->v[i], want[i], "row %zu: %llu, not %llu", i,
                     (unsigned long long)got->v[i], (unsigned long long)want[i]);
}

/* 1 completed long ago, 2 pending, 3 running, 4 failed recently, 5 requeued, 6 cancelled
 * long ago by bob, 7 completed recently by bob, 8 timeout long ago. */
static void fill(void)
{
    cr_assert_eq(sched_store_begin(store), 0);
    put(1, 3, 10000, "ada", "prep");
    put(2, 1, 0, "ada", "train");
    put(3, 2, 0, "ada", "train");
    put(4, 4, 90000, "ada", "train");
    put(5, 8, 0, "ada", "train");
    put(6, 5, 20000, "bob", "prep");
    put(7, 3, 95000, "bob", "eval");
    put(8, 6, 30000, "ada", "prep");
    cr_assert_eq(sched_store_commit(store), 0);
}

Test(store_reads, live_jobs_are_the_unfinished_and_the_recently_ended)
{
    struct ids got = {0};
    uint64_t want[] = {2, 3, 4, 5, 7};

    fill();
    cr_assert_eq(sched_store_load_live_jobs(store, 90000, collect_job, &got), 0);
    expect(&got, want, 5);
    got.n = 0;
    cr_assert_eq(sched_store_load_live_jobs(store, 0, collect_job, &got), 0);
    cr_assert_eq(got.n, 8, "ended since 0: every job");
}

Test(store_reads, jobs_by_id_range)
{
    struct ids got = {0};
    uint64_t want[] = {3, 4, 5}, one[] = {6};

    fill();
    cr_assert_eq(sched_store_load_jobs_range(store, 3, 5, collect_job, &got), 0);
    expect(&got, want, 3);
    got.n = 0;
    cr_assert_eq(sched_store_load_jobs_range(store, 6, 6, collect_job, &got), 0);
    expect(&got, one, 1);
    cr_assert_str_eq(got.last_user, "bob");
    got.n = 0;
    cr_assert_eq(sched_store_load_jobs_range(store, 9, UINT64_MAX, collect_job, &got), 0);
    cr_assert_eq(got.n, 0, "none past the last");
    cr_assert_eq(sched_store_load_jobs_range(store, 5, UINT64_MAX, collect_job, &got), 0);
    cr_assert_eq(got.n, 4, "no upper bound");
}

Test(store_reads, tasks_and_events_by_job_range)
{
    struct ids got = {0};
    uint64_t tasks[] = {300, 301, 400}, events[] = {3001, 4002, 3003};

    fill();
    cr_assert_eq(sched_store_begin(store), 0);
    put_task(1, 0, "node1");
    put_task(3, 1, "node2");
    put_task(3, 0, "node1");
    put_task(4, 0, "node9");
    put_task(6, 0, "node1");
    cr_assert_eq(sched_store_add_event(store, 1, 3, "", "PENDING", "submitted"), 0);
    cr_assert_eq(sched_store_add_event(store, 2, 4, "", "FAILED", "exit 1"), 0);
    cr_assert_eq(sched_store_add_event(store, 3, 3, "node1", "RUNNING", "on node1"), 0);
    cr_assert_eq(sched_store_add_event(store, 4, 0, "node1", "node_down", "gone"), 0);
    cr_assert_eq(sched_store_add_event(store, 5, 6, "", "CANCELLED", NULL), 0);
    cr_assert_eq(sched_store_commit(store), 0);
    cr_assert_eq(sched_store_load_tasks_range(store, 3, 4, collect_task, &got), 0);
    expect(&got, tasks, 3);
    cr_assert_str_eq(got.last_node, "node9");
    got.n = 0;
    cr_assert_eq(sched_store_load_events_range(store, 3, 4, collect_event, &got), 0);
    expect(&got, events, 3);
    got.n = 0;
    cr_assert_eq(sched_store_load_events_range(store, 2, 2, collect_event, &got), 0);
    cr_assert_eq(got.n, 0);
}

Test(store_reads, finished_jobs_newest_first_matching_the_filter)
{
    struct ids got = {0};
    struct sched_store_job_filter f = {.max = 100};
    uint64_t any[] = {8, 7, 6, 4, 1}, old[] = {8, 6, 1}, ada_prep[] = {8, 1}, bob[] = {7, 6},
             ended_ok[] = {7, 1}, two[] = {8, 7};

    fill();
    cr_assert_eq(sched_store_load_finished(store, &f, collect_job, &got), 0);
    expect(&got, any, 5);
    got.n = 0;
    f.ended_before_ms = 90000;
    cr_assert_eq(sched_store_load_finished(store, &f, collect_job, &got), 0);
    expect(&got, old, 3);
    got.n = 0;
    f = (struct sched_store_job_filter){.user = "ada", .name = "prep", .max = 100};
    cr_assert_eq(sched_store_load_finished(store, &f, collect_job, &got), 0);
    expect(&got, ada_prep, 2);
    got.n = 0;
    f = (struct sched_store_job_filter){.user = "bob", .name = "", .max = 100};
    cr_assert_eq(sched_store_load_finished(store, &f, collect_job, &got), 0);
    expect(&got, bob, 2);
    got.n = 0;
    f = (struct sched_store_job_filter){.states = 1u << 3, .max = 100}; /* COMPLETED */
    cr_assert_eq(sched_store_load_finished(store, &f, collect_job, &got), 0);
    expect(&got, ended_ok, 2);
    got.n = 0;
    f = (struct sched_store_job_filter){.states = (1u << 1) | (1u << 2), .max = 100};
    cr_assert_eq(sched_store_load_finished(store, &f, collect_job, &got), 0);
    cr_assert_eq(got.n, 0, "pending and running jobs are never among the finished");
    f = (struct sched_store_job_filter){.max = 2};
    cr_assert_eq(sched_store_load_finished(store, &f, collect_job, &got), 0);
    expect(&got, two, 2);
    got.n = 0;
    f.max = 0;
    cr_assert_eq(sched_store_load_finished(store, &f, collect_job, &got), 0);
    cr_assert_eq(got.n, 0, "max 0: nothing read");
}

static int stop_at_second(const struct sched_job_row *row, void *data)
{
    int *n = data;

    (void)row;
    return ++*n == 2 ? -ECANCELED : 0;
}

Test(store_reads, a_callback_error_stops_the_read_and_the_store_reads_again_after)
{
    struct ids got = {0};
    struct sched_store_job_filter f = {.max = 10};
    int n = 0;

    fill();
    cr_assert_eq(sched_store_load_finished(store, &f, stop_at_second, &n), -ECANCELED);
    cr_assert_eq(n, 2);
    cr_assert_eq(sched_store_load_finished(store, &f, collect_job, &got), 0);
    cr_assert_eq(got.n, 5, "the statement was reset");
}

Test(store_reads, the_end_time_index_exists_and_reopening_keeps_it)
{
    struct gs_error err;
    struct ids got = {0};

    fill();
    sched_store_close(store);
    cr_assert_eq(sched_store_open(store_path, &store, &err), 0, "%s", err.msg);
    cr_assert_eq(sched_store_load_live_jobs(store, 95000, collect_job, &got), 0);
    cr_assert_eq(got.n, 4); /* 2, 3, 5 and 7 */
}

/* --- through the journal ------------------------------------------------------------------ */

static uv_loop_t loop;
static struct sched_journal *journal;
static int dones;

struct read_op {
    uint64_t want_id;
    int fail_with;
    int status;
    bool found;
    bool ran;
};

static int put_job(struct sched_store *s, void *data)
{
    uint64_t id = *(uint64_t *)data;
    struct sched_job_row row = {.id = id, .name = "j", .user = "ada", .state = 3, .spec = ""};

    return sched_store_put_job(s, &row);
}

static void put_done(int status, void *data)
{
    cr_assert_eq(status, 0);
    free(data);
    dones++;
}

static int found(const struct sched_job_row *row, void *data)
{
    struct read_op *op = data;

    op->found = op->found || row->id == op->want_id;
    return 0;
}

static int read_one(struct sched_store *s, void *data)
{
    struct read_op *op = data;

    op->ran = true;
    if (op->fail_with != 0)
        return op->fail_with;
    return sched_store_load_jobs_range(s, op->want_id, op->want_id, found, op);
}

static void read_done(int status, void *data)
{
    struct read_op *op = data;

    op->status = status;
    dones++;
}

static void journal_start(void)
{
    cr_assert_eq(uv_loop_init(&loop), 0);
    journal = sched_journal_new(&loop, store);
    cr_assert_not_null(journal);
    store = NULL; /* the journal's now */
    dones = 0;
}

static void journal_stop(void)
{
    struct gs_error err;

    sched_journal_close(journal);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&loop), 0);
    cr_assert_eq(sched_store_open(store_path, &store, &err), 0, "%s", err.msg); /* for teardown */
}

static void submit_put(uint64_t id)
{
    uint64_t *p = malloc(sizeof(*p));

    cr_assert_not_null(p);
    *p = id;
    cr_assert_eq(sched_journal_submit(journal, put_job, put_done, p), 0);
}

Test(store_reads, a_journal_read_sees_what_was_queued_before_it)
{
    struct read_op ops[3] = {{.want_id = 10}, {.want_id = 11, .fail_with = -EIO}, {.want_id = 12}};

    journal_start();
    submit_put(10);
    cr_assert_eq(sched_journal_read(journal, read_one, read_done, &ops[0]), 0);
    cr_assert_eq(sched_journal_read(journal, read_one, read_done, &ops[1]), 0);
    submit_put(12);
    cr_assert_eq(sched_journal_read(journal, read_one, read_done, &ops[2]), 0);
    cr_assert_eq(sched_journal_pending(journal), 5);
    while (dones < 5)
        uv_run(&loop, UV_RUN_ONCE);
    cr_assert_eq(ops[0].status, 0);
    cr_assert(ops[0].found, "the put queued before the read is visible to it");
    cr_assert_eq(ops[1].status, -EIO, "a failed read fails alone");
    cr_assert_eq(ops[2].status, 0);
    cr_assert(ops[2].found);
    cr_assert_eq(sched_journal_pending(journal), 0);
    journal_stop();
    /* both puts were committed despite the failed read beside them */
    struct read_op ten = {.want_id = 10}, twelve = {.want_id = 12};
    cr_assert_eq(sched_store_load_jobs_range(store, 10, 12, found, &ten), 0);
    cr_assert_eq(sched_store_load_jobs_range(store, 10, 12, found, &twelve), 0);
    cr_assert(ten.found && twelve.found);
}

Test(store_reads, close_runs_the_reads_still_queued)
{
    struct read_op op = {.want_id = 20};

    journal_start();
    submit_put(20);
    cr_assert_eq(sched_journal_read(journal, read_one, read_done, &op), 0);
    journal_stop();
    cr_assert_eq(dones, 2);
    cr_assert(op.ran && op.found);
    cr_assert_eq(op.status, 0);
}
