/*
 * test_store_purge.c: old history deleted from the SQLite store (sched_store_purge,
 * scheduler.purge_after): the jobs that ended before the horizon go with every row of
 * theirs, in batches, while pending, running and recent ones, and those gschedd still
 * holds, stay; node and reservation events before it go; node history keeps each node's
 * state at the horizon; and a job id is never given again after its job went.
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "store_fixture.h"

TestSuite(store_purge, .init = store_fixture_setup, .fini = store_fixture_teardown);

#define HORIZON 1000000

/* A count from another connection, as any reader of the file sees it. */
static long count(const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long n = -1;

    cr_assert_eq(sqlite3_open_v2(store_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    if (sqlite3_step(st) == SQLITE_ROW)
        n = (long)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* A job with one task, one step, one allocation row and one event. */
static void put_job(uint64_t id, int state, uint64_t end_ms)
{
    struct sched_job_row j = {.id = id,
                              .name = "j",
                              .user = "ada",
                              .state = state,
                              .submit_ms = 1,
                              .start_ms = end_ms ? 2 : 0,
                              .end_ms = end_ms,
                              .spec = "",
                              .attempt = 1};
    struct sched_task_row t = {
        .job_id = id, .node = "n1", .attempt = 1, .state = state, .end_ms = end_ms};
    struct sched_step_row s = {
        .job_id = id, .step = 0, .name = "batch", .state = state, .end_ms = end_ms};
    struct sched_alloc_row a = {id, 1, "n1", 1, 0, 2, 0, "ada", ""};

    cr_assert_eq(sched_store_put_job(store, &j), 0);
    cr_assert_eq(sched_store_put_task(store, &t), 0);
    cr_assert_eq(sched_store_put_step(store, &s), 0);
    cr_assert_eq(sched_store_put_alloc(store, &a), 0);
    if (end_ms != 0)
        cr_assert_eq(sched_store_end_allocs(store, id, end_ms), 0);
    cr_assert_eq(sched_store_add_event(store, end_ms ? end_ms : 5, id, "n1", "X", ""), 0);
}

static size_t purge_all(const uint64_t *keep, size_t nkeep, size_t batch, int *calls)
{
    struct sched_store_purge p = {
        .before_ms = HORIZON, .keep = keep, .nkeep = nkeep, .max_jobs = batch};
    size_t deleted = 0;

    *calls = 0;
    do {
        cr_assert_eq(sched_store_begin(store), 0);
        cr_assert_eq(sched_store_purge(store, &p), 0);
        cr_assert_eq(sched_store_commit(store), 0);
        deleted += p.deleted;
        p.after_id = p.last_id;
        ++*calls;
        cr_assert_lt(*calls, 100, "never done");
    } while (!p.done);
    return deleted;
}

Test(store_purge, old_ended_jobs_go_with_their_rows_the_rest_stays)
{
    static const uint64_t keep[] = {4}; /* still in gschedd's memory (a dependency pins it) */
    int calls = 0;

    put_job(1, 3, 100);         /* COMPLETED long ago: goes */
    put_job(2, 4, HORIZON - 1); /* FAILED just before the horizon: goes */
    put_job(3, 3, HORIZON + 1); /* ended after it: stays */
    put_job(4, 5, 200);         /* CANCELLED long ago, but held: stays */
    put_job(5, 1, 0);           /* PENDING since long ago: stays */
    put_job(6, 2, 0);           /* RUNNING: stays */
    put_job(7, 8, 300);         /* REQUEUED (on its way back to pending): stays */
    put_job(8, 9, 400);         /* OUT_OF_MEMORY long ago: goes */
    cr_assert_eq(purge_all(keep, 1, 2, &calls), 3);
    cr_assert_eq(calls, 3, "1 and 2, then 4 (kept) and 8, then none");
    cr_assert_eq(count("SELECT COUNT(*) FROM jobs"), 5);
    cr_assert_eq(count("SELECT COUNT(*) FROM jobs WHERE id IN (1, 2, 8)"), 0);
    for (const char *const *t =
             (const char *const[]){"tasks", "steps", "allocations", "events", NULL};
         *t != NULL; t++) {
        char sql[128];

        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM %s WHERE job_id IN (1, 2, 8)", *t);
        cr_assert_eq(count(sql), 0, "%s of the purged jobs", *t);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM %s", *t);
        cr_assert_eq(count(sql), 5, "%s of the others", *t);
    }
}

Test(store_purge, an_id_is_never_given_again)
{
    uint64_t next = 0;
    int calls = 0;

    put_job(1, 3, 100);
    put_job(2, 3, 200);
    cr_assert_eq(purge_all(NULL, 0, 100, &calls), 2);
    cr_assert_eq(count("SELECT COUNT(*) FROM jobs"), 0);
    cr_assert_eq(sched_store_next_job_id(store, &next), 0);
    cr_assert_eq(next, 3, "not 1: jobs 1 and 2 existed");
    put_job(3, 3, 100);
    cr_assert_eq(purge_all(NULL, 0, 100, &calls), 1);
    cr_assert_eq(sched_store_next_job_id(store, &next), 0);
    cr_assert_eq(next, 4);
}

Test(store_purge, node_history_keeps_each_nodes_state_at_the_horizon)
{
    int calls = 0;

    cr_assert_eq(sched_store_put_node_state(store, 10, "n1", true, false, 4, 0), 0);
    cr_assert_eq(sched_store_put_node_state(store, 20, "n1", false, false, 4, 0), 0);
    cr_assert_eq(sched_store_put_node_state(store, 30, "n2", true, false, 8, 1), 0);
    cr_assert_eq(sched_store_put_node_state(store, HORIZON + 5, "n1", true, false, 4, 0), 0);
    cr_assert_eq(sched_store_put_node_state(store, HORIZON + 9, "n3", true, false, 2, 0), 0);
    cr_assert_eq(sched_store_add_event(store, 50, 0, "n1", "DRAIN", "disk"), 0);
    cr_assert_eq(sched_store_add_event(store, HORIZON + 1, 0, "n1", "RESUME", ""), 0);
    purge_all(NULL, 0, 10, &calls);
    cr_assert_eq(count("SELECT COUNT(*) FROM node_history"), 4);
    cr_assert_eq(count("SELECT COUNT(*) FROM node_history WHERE node = 'n1' AND at_ms = 1000000 "
                       "AND up = 0"),
                 1, "n1 was down at the horizon");
    cr_assert_eq(count("SELECT COUNT(*) FROM node_history WHERE node = 'n2' AND at_ms = 1000000 "
                       "AND up = 1 AND cores = 8 AND gpus = 1"),
                 1, "n2 was up at the horizon");
    cr_assert_eq(count("SELECT COUNT(*) FROM node_history WHERE at_ms > 1000000"), 2);
    cr_assert_eq(count("SELECT COUNT(*) FROM events"), 1, "the DRAIN before the horizon goes");
    cr_assert_eq(count("SELECT COUNT(*) FROM events WHERE kind = 'RESUME'"), 1);
}
