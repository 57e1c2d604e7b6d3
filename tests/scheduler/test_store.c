/*
 * test_store.c: the scheduler's SQLite state survives close and reopen, rolls back what was
 * not committed, and refuses a database of another schema version; job steps' rows (sacct)
 * round-trip, srun steps still running end at a restart, and an older database gains them;
 * a job's suspension (scontrol suspend) round-trips, and a version 8 database gains it (a
 * version 9 one its resume time).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "scheduler/store.h"
#include "store_fixture.h"

TestSuite(store, .init = store_fixture_setup, .fini = store_fixture_teardown);

static void reopen(void)
{
    struct gs_error err;

    sched_store_close(store);
    cr_assert_eq(sched_store_open(store_path, &store, &err), 0, "%s", err.msg);
}

/* Closes the store, runs sql on its database as an older gschedd would have left it (sql
 * sets the older schema version), and opens it again, which upgrades it. */
static void as_older(const char *sql)
{
    sqlite3 *db;

    sched_store_close(store);
    store = NULL;
    cr_assert_eq(sqlite3_open(store_path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
    reopen();
}

/* r stored in a transaction of its own. */
static void put_job(const struct sched_job_row *r)
{
    cr_assert_eq(sched_store_begin(store), 0);
    cr_assert_eq(sched_store_put_job(store, r), 0);
    cr_assert_eq(sched_store_commit(store), 0);
}

static struct sched_job_row job(uint64_t id, int state)
{
    static const unsigned char spec[] = {0x0a, 0x03, 'a', 0x00, 'c'};

    return (struct sched_job_row){.id = id,
                                  .name = "train",
                                  .uid = 1000,
                                  .gid = 100,
                                  .user = "ada",
                                  .priority = -5,
                                  .state = state,
                                  .reason = "Resources",
                                  .submit_ms = 1764683000000ULL + id,
                                  .exit_code = -1,
                                  .spec = spec,
                                  .spec_len = sizeof(spec)};
}

struct seen {
    int n;
    struct sched_job_row last;
    char name[32];
    unsigned char spec[16];
    bool has_alloc;
    char usage[16];
    size_t usage_len;
    char submit_key[80];
};

static int collect_job(const struct sched_job_row *row, void *data)
{
    struct seen *s = data;

    s->n++;
    s->last = *row;
    snprintf(s->name, sizeof(s->name), "%s", row->name);
    memcpy(s->spec, row->spec, row->spec_len < 16 ? row->spec_len : 16);
    s->has_alloc = row->alloc != NULL;
    s->usage_len = row->usage != NULL ? row->usage_len : 0;
    snprintf(s->submit_key, sizeof(s->submit_key), "%s", row->submit_key ? row->submit_key : "");
    if (row->usage != NULL)
        memcpy(s->usage, row->usage, row->usage_len < 16 ? row->usage_len : 16);
    return 0;
}

Test(store, committed_jobs_survive_reopen_with_every_column)
{
    struct sched_job_row r = job(1, 2);
    struct seen s = {0};
    uint64_t next = 0;
    const char alloc[] = "n1";

    r.alloc = alloc;
    r.alloc_len = 2;
    r.held = true;
    r.restarts = 2;
    r.attempt = 3;
    put_job(&r);
    reopen();
    cr_assert_eq(sched_store_load_jobs(store, collect_job, &s), 0);
    cr_assert_eq(s.n, 1);
    cr_assert_str_eq(s.name, "train");
    cr_assert_eq(s.last.uid, 1000);
    cr_assert_eq(s.last.priority, -5);
    cr_assert_eq(s.last.state, 2);
    cr_assert(s.last.held);
    cr_assert_eq(s.last.submit_ms, 1764683000001ULL);
    cr_assert_eq(s.last.exit_code, -1);
    cr_assert_eq(s.last.restarts, 2);
    cr_assert_eq(s.last.attempt, 3);
    cr_assert_eq(s.last.spec_len, 5);
    cr_assert_eq(memcmp(s.spec,
                        "\x0a\x03"
                        "a\0c",
                        5),
                 0, "blob with a NUL kept whole");
    cr_assert(s.has_alloc);
    cr_assert_eq(sched_store_next_job_id(store, &next), 0);
    cr_assert_eq(next, 2);
}

Test(store, rolled_back_changes_are_gone)
{
    struct sched_job_row r = job(7, 1);
    struct seen s = {0};

    cr_assert_eq(sched_store_begin(store), 0);
    cr_assert_eq(sched_store_put_job(store, &r), 0);
    cr_assert_eq(sched_store_rollback(store), 0);
    cr_assert_eq(sched_store_load_jobs(store, collect_job, &s), 0);
    cr_assert_eq(s.n, 0);
}

Test(store, put_replaces_the_row_with_the_same_id)
{
    struct sched_job_row r = job(3, 1);
    struct seen s = {0};

    cr_assert_eq(sched_store_put_job(store, &r), 0);
    r.state = 3;
    r.reason = NULL;
    r.end_ms = 99;
    cr_assert_eq(sched_store_put_job(store, &r), 0);
    cr_assert_eq(sched_store_load_jobs(store, collect_job, &s), 0);
    cr_assert_eq(s.n, 1);
    cr_assert_eq(s.last.state, 3);
    cr_assert_eq(s.last.end_ms, 99);
    cr_assert_not(s.has_alloc);
}

static int count_task(const struct sched_task_row *row, void *data)
{
    int *n = data;

    cr_assert_str_eq(row->node, "node1");
    (*n)++;
    return 0;
}

Test(store, tasks_are_kept_per_rank_and_cleared_per_job)
{
    struct sched_task_row t = {.job_id = 4, .rank = 0, .node = "node1", .pid = 123};
    int n = 0;

    cr_assert_eq(sched_store_put_task(store, &t), 0);
    t.rank = 1;
    cr_assert_eq(sched_store_put_task(store, &t), 0);
    t.exit_code = 3;
    cr_assert_eq(sched_store_put_task(store, &t), 0, "same rank replaces");
    cr_assert_eq(sched_store_load_tasks(store, count_task, &n), 0);
    cr_assert_eq(n, 2);
    cr_assert_eq(sched_store_clear_tasks(store, 4), 0);
    n = 0;
    cr_assert_eq(sched_store_load_tasks(store, count_task, &n), 0);
    cr_assert_eq(n, 0);
}

static int count_node(const struct sched_node_row *row, void *data)
{
    cr_assert_str_eq(row->state, "idle");
    cr_assert_eq(row->topology_len, 3);
    (*(int *)data)++;
    return 0;
}

Test(store, nodes_round_trip)
{
    struct sched_node_row n = {
        .name = "node1", .state = "idle", .topology = "xyz", .topology_len = 3};
    int count = 0;

    cr_assert_eq(sched_store_put_node(store, &n), 0);
    cr_assert_eq(sched_store_load_nodes(store, count_node, &count), 0);
    cr_assert_eq(count, 1);
}

/* The drained nodes' reasons, "-" for the others, in name order. */
static int drains(const struct sched_node_row *row, void *data)
{
    struct gs_buf *b = data;

    return gs_buf_printf(b, "%s=%s;", row->name,
                         row->drain_reason != NULL ? row->drain_reason : "-");
}

Test(store, a_version_2_database_gains_the_drain_reason_and_keeps_its_nodes)
{
    struct sched_node_row n1 = {.name = "node1", .state = "up", .topology = "x", .topology_len = 1};
    struct sched_node_row n2 = n1;
    struct gs_buf b = GS_BUF_INIT;

    n2.name = "node2";
    cr_assert_eq(sched_store_put_node(store, &n1), 0);
    /* What gschedd before schema 3 left: no nodes.drain_reason, version 2. */
    as_older("ALTER TABLE nodes DROP COLUMN drain_reason; UPDATE meta SET value "
             "= '2' WHERE key = 'schema_version'");
    n2.drain_reason = "bad DIMM";
    cr_assert_eq(sched_store_put_node(store, &n2), 0);
    reopen();
    cr_assert_eq(sched_store_load_nodes(store, drains, &b), 0);
    cr_assert_str_eq(b.data, "node1=-;node2=bad DIMM;");
    gs_buf_release(&b);
}

static int count_event(uint64_t at_ms, uint64_t job_id, const char *node, const char *kind,
                       const char *detail, void *data)
{
    (void)at_ms;
    (void)node;
    (void)detail;
    cr_assert_not_null(kind);
    if (job_id == 9)
        cr_assert_str_eq(kind, "placed");
    (*(int *)data)++;
    return 0;
}

Test(store, events_filter_by_job)
{
    int all = 0, nine = 0;

    cr_assert_eq(sched_store_add_event(store, 1, 9, "node1", "placed", "gpus=0,1"), 0);
    cr_assert_eq(sched_store_add_event(store, 2, 10, NULL, "submitted", NULL), 0);
    cr_assert_eq(sched_store_add_event(store, 3, 0, "node2", "node_down", "missed=3"), 0);
    cr_assert_eq(sched_store_load_events(store, 0, count_event, &all), 0);
    cr_assert_eq(sched_store_load_events(store, 9, count_event, &nine), 0);
    cr_assert_eq(all, 3);
    cr_assert_eq(nine, 1);
}

static int stop_early(const struct sched_job_row *row, void *data)
{
    (void)row;
    (*(int *)data)++;
    return -ECANCELED;
}

Test(store, a_callback_error_stops_the_walk)
{
    struct sched_job_row a = job(1, 1), b = job(2, 1);
    int n = 0;

    sched_store_put_job(store, &a);
    sched_store_put_job(store, &b);
    cr_assert_eq(sched_store_load_jobs(store, stop_early, &n), -ECANCELED);
    cr_assert_eq(n, 1);
}

Test(store, refuses_another_schema_version)
{
    sqlite3 *db;
    struct gs_error err;

    sched_store_close(store);
    store = NULL;
    cr_assert_eq(sqlite3_open(store_path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "UPDATE meta SET value = '99' WHERE key = 'schema_version'", NULL,
                              NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    cr_assert_eq(sched_store_open(store_path, &store, &err), -EPROTO);
    cr_assert_not_null(strstr(err.msg, "schema version 99"), "%s", err.msg);
    cr_assert_null(store);
}

Test(store, unopenable_path_is_named)
{
    struct sched_store *other = NULL;
    struct gs_error err;

    cr_assert_lt(sched_store_open("/nonexistent-dir/state.db", &other, &err), 0);
    cr_assert_not_null(strstr(err.msg, "/nonexistent-dir/state.db"), "%s", err.msg);
    cr_assert_null(other);
}

Test(store, a_version_1_database_gains_the_usage_column)
{
    struct sched_job_row r = job(4, 3);
    struct seen s = {0};

    put_job(&r);
    /* What gschedd before schema 2 left: no jobs.usage, version 1. */
    as_older("ALTER TABLE jobs DROP COLUMN usage; ALTER TABLE jobs DROP COLUMN "
             "submit_key; ALTER TABLE nodes DROP COLUMN drain_reason; "
             "UPDATE meta SET value = '1' WHERE key = 'schema_version'");
    cr_assert_eq(sched_store_load_jobs(store, collect_job, &s), 0);
    cr_assert_eq(s.n, 1, "the old row is kept");
    cr_assert_eq(s.usage_len, 0);
    r.usage = "\x08\x01";
    r.usage_len = 2;
    r.submit_key = "retry-7f3a";
    put_job(&r);
    reopen();
    memset(&s, 0, sizeof(s));
    cr_assert_eq(sched_store_load_jobs(store, collect_job, &s), 0);
    cr_assert_eq(s.usage_len, 2);
    cr_assert_eq(memcmp(s.usage, "\x08\x01", 2), 0);
    cr_assert_str_eq(s.submit_key, "retry-7f3a");
}

Test(store, a_version_8_database_gains_the_suspension_columns)
{
    struct sched_job_row r = job(6, 2);
    struct seen s = {0};

    put_job(&r);
    /* What gschedd before schema 9 left: no jobs.suspend_at_ms, jobs.suspended_ms. */
    as_older("ALTER TABLE jobs DROP COLUMN suspend_at_ms; ALTER TABLE jobs DROP "
             "COLUMN suspended_ms; UPDATE meta SET value = '8' WHERE key = "
             "'schema_version'");
    cr_assert_eq(sched_store_load_jobs(store, collect_job, &s), 0);
    cr_assert_eq(s.n, 1, "the old row is kept");
    cr_assert_eq(s.last.suspend_at_ms, 0, "an old job was never suspended");
    cr_assert_eq(s.last.suspended_ms, 0);
    r.suspend_at_ms = 1764683009000ULL;
    r.suspended_ms = 4500;
    put_job(&r);
    reopen();
    memset(&s, 0, sizeof(s));
    cr_assert_eq(sched_store_load_jobs(store, collect_job, &s), 0);
    cr_assert_eq(s.last.suspend_at_ms, 1764683009000ULL);
    cr_assert_eq(s.last.suspended_ms, 4500);
}

Test(store, a_version_9_database_gains_the_resume_time)
{
    struct sched_job_row r = job(7, 2);
    struct seen s = {0};

    r.suspended_ms = 4500;
    put_job(&r);
    /* What gschedd before schema 10 left: no jobs.resume_at_ms. */
    as_older("ALTER TABLE jobs DROP COLUMN resume_at_ms; UPDATE meta SET value = '9' WHERE "
             "key = 'schema_version'");
    cr_assert_eq(sched_store_load_jobs(store, collect_job, &s), 0);
    cr_assert_eq(s.n, 1, "the old row is kept");
    cr_assert_eq(s.last.suspended_ms, 4500);
    cr_assert_eq(s.last.resume_at_ms, 0, "when it resumed was not kept");
    r.resume_at_ms = 1764683013500ULL;
    put_job(&r);
    reopen();
    memset(&s, 0, sizeof(s));
    cr_assert_eq(sched_store_load_jobs(store, collect_job, &s), 0);
    cr_assert_eq(s.last.resume_at_ms, 1764683013500ULL);
}

Test(store, the_database_is_readable_by_its_owner_only)
{
    struct stat st;

    cr_assert_eq(stat(store_path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "mode %o", st.st_mode & 0777);
    cr_assert_eq(chmod(store_path, 0644), 0); /* a database from before: tightened when opened */
    reopen();
    cr_assert_eq(stat(store_path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "mode %o", st.st_mode & 0777);
}

/* --- step rows (sacct's JOB.batch, JOB.0, ...) ----------------------------------------- */

static struct sched_step_row step_row(uint64_t job_id, uint32_t step, int state)
{
    return (struct sched_step_row){.job_id = job_id,
                                   .step = step,
                                   .attempt = 2,
                                   .name = step == 0 ? "batch" : "python3",
                                   .nodelist = "node[1-2]",
                                   .nnodes = 2,
                                   .ntasks = 4,
                                   .state = state,
                                   .exit_code = 3,
                                   .signaled = true,
                                   .term_signal = 9,
                                   .start_ms = 1764683000000ULL,
                                   .end_ms = 1764683005000ULL,
                                   .max_rss_kib = 51234,
                                   .max_rss_node = "node2",
                                   .max_rss_task = 3,
                                   .cpu_ms = 12345};
}

/* Each row as "job.step:name:state:end_ms:rss@node/task;" */
static int describe_step(const struct sched_step_row *r, void *data)
{
    struct gs_buf *b = data;

    cr_assert_eq(r->attempt, 2);
    cr_assert_str_eq(r->nodelist, "node[1-2]");
    cr_assert_eq(r->nnodes, 2);
    cr_assert_eq(r->ntasks, 4);
    cr_assert_eq(r->exit_code, 3);
    cr_assert(r->signaled);
    cr_assert_eq(r->term_signal, 9);
    cr_assert_eq(r->start_ms, 1764683000000ULL);
    cr_assert_eq(r->cpu_ms, 12345);
    return gs_buf_printf(b, "%llu.%u:%s:%d:%llu:%llu@%s/%u;", (unsigned long long)r->job_id,
                         r->step, r->name, r->state, (unsigned long long)r->end_ms,
                         (unsigned long long)r->max_rss_kib, r->max_rss_node, r->max_rss_task);
}

Test(store, step_rows_round_trip_by_job_range_and_replace_by_step)
{
    struct sched_step_row a = step_row(7, 0, 3), b = step_row(7, 1, 2), c = step_row(9, 1, 4);
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(sched_store_put_step(store, &c), 0);
    cr_assert_eq(sched_store_put_step(store, &b), 0);
    cr_assert_eq(sched_store_put_step(store, &a), 0);
    b.state = 4; /* the step ended: its row is written again */
    cr_assert_eq(sched_store_put_step(store, &b), 0);
    reopen();
    cr_assert_eq(sched_store_load_steps_range(store, 7, 8, describe_step, &out), 0);
    cr_assert_str_eq(out.data, "7.0:batch:3:1764683005000:51234@node2/3;"
                               "7.1:python3:4:1764683005000:51234@node2/3;");
    gs_buf_reset(&out);
    cr_assert_eq(sched_store_load_steps_range(store, 0, UINT64_MAX, describe_step, &out), 0);
    cr_assert_not_null(strstr(out.data, "9.1:python3:4:"), "%s", out.data);
    gs_buf_release(&out);
}

Test(store, running_srun_steps_end_at_a_restart_and_batch_steps_run_on)
{
    struct sched_step_row batch = step_row(7, 0, 2), srun = step_row(7, 1, 2);
    struct sched_step_row done = step_row(7, 2, 3);
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(sched_store_put_step(store, &batch), 0);
    cr_assert_eq(sched_store_put_step(store, &srun), 0);
    cr_assert_eq(sched_store_put_step(store, &done), 0);
    cr_assert_eq(sched_store_end_running_steps(store, 5, 1764683009000ULL), 0);
    cr_assert_eq(sched_store_load_steps_range(store, 7, 7, describe_step, &out), 0);
    cr_assert_str_eq(out.data, "7.0:batch:2:1764683005000:51234@node2/3;"
                               "7.1:python3:5:1764683009000:51234@node2/3;"
                               "7.2:python3:3:1764683005000:51234@node2/3;");
    gs_buf_release(&out);
}

static int step_suspended(const struct sched_step_row *r, void *data)
{
    *(uint64_t *)data = r->suspended_ms + 1; /* 0: no row seen */
    return 0;
}

Test(store, a_version_10_database_gains_the_steps_suspended_time)
{
    struct sched_step_row r = step_row(7, 1, 2);
    uint64_t seen = 0;

    cr_assert_eq(sched_store_put_step(store, &r), 0);
    /* What gschedd before schema 11 left: no steps.suspended_ms. */
    as_older("ALTER TABLE steps DROP COLUMN suspended_ms; UPDATE meta SET value = '10' WHERE "
             "key = 'schema_version'");
    cr_assert_eq(sched_store_load_steps_range(store, 7, 7, step_suspended, &seen), 0);
    cr_assert_eq(seen, 1, "the old row is kept, never suspended");
    r.suspended_ms = 2500;
    cr_assert_eq(sched_store_put_step(store, &r), 0);
    reopen();
    cr_assert_eq(sched_store_load_steps_range(store, 7, 7, step_suspended, &seen), 0);
    cr_assert_eq(seen, 2501);
}

static int step_given(const struct sched_step_row *r, void *data)
{
    snprintf(data, 64, "cpus=%u gpus=%u limit=%llu", r->cpus, r->gpus,
             (unsigned long long)r->time_limit_s);
    return 0;
}

Test(store, a_version_11_database_gains_what_steps_were_given)
{
    struct sched_step_row r = step_row(7, 1, 2);
    char seen[64] = "";

    cr_assert_eq(sched_store_put_step(store, &r), 0);
    /* What gschedd before schema 12 left: no steps.cpus, gpus, time_limit_s. */
    as_older("ALTER TABLE steps DROP COLUMN cpus; ALTER TABLE steps DROP COLUMN gpus; "
             "ALTER TABLE steps DROP COLUMN time_limit_s; UPDATE meta SET value = '11' WHERE "
             "key = 'schema_version'");
    cr_assert_eq(sched_store_load_steps_range(store, 7, 7, step_given, seen), 0);
    cr_assert_str_eq(seen, "cpus=0 gpus=0 limit=0", "the old row is kept, as unknown");
    r.cpus = 12;
    r.gpus = 2;
    r.time_limit_s = 600;
    cr_assert_eq(sched_store_put_step(store, &r), 0);
    reopen();
    cr_assert_eq(sched_store_load_steps_range(store, 7, 7, step_given, seen), 0);
    cr_assert_str_eq(seen, "cpus=12 gpus=2 limit=600");
}

Test(store, a_version_5_database_gains_the_steps_table)
{
    struct sched_step_row r = step_row(3, 1, 3);
    struct gs_buf out = GS_BUF_INIT;

    /* What gschedd before schema 6 left: no steps table, version 5. */
    as_older("DROP TABLE steps; UPDATE meta SET value = '5' WHERE key = "
             "'schema_version'");
    cr_assert_eq(sched_store_put_step(store, &r), 0);
    reopen();
    cr_assert_eq(sched_store_load_steps_range(store, 3, 3, describe_step, &out), 0);
    cr_assert_str_eq(out.data, "3.1:python3:3:1764683005000:51234@node2/3;");
    gs_buf_release(&out);
}

/* Each live step as "job.step:record;" (its bytes as text). */
static int describe_live(uint64_t job_id, uint32_t step, const void *record, size_t len, void *data)
{
    return gs_buf_printf(data, "%llu.%u:%.*s;", (unsigned long long)job_id, step, (int)len,
                         (const char *)record);
}

/* Running srun steps kept over a restart: put, replaced, deleted; the prune keeps those of
 * running jobs only; and ending the running steps' rows leaves the kept ones running. */
Test(store, live_steps_are_kept_for_running_jobs_and_their_rows_stay_running)
{
    struct sched_job_row running = job(7, 2), done = job(8, 4);
    struct sched_step_row kept = step_row(7, 1, 2), lost = step_row(7, 2, 2);
    struct gs_buf out = GS_BUF_INIT;

    put_job(&running);
    put_job(&done);
    cr_assert_eq(sched_store_put_step(store, &kept), 0);
    cr_assert_eq(sched_store_put_step(store, &lost), 0);
    cr_assert_eq(sched_store_put_live_step(store, 7, 1, "old", 3), 0);
    cr_assert_eq(sched_store_put_live_step(store, 7, 1, "rec1", 4), 0);
    cr_assert_eq(sched_store_put_live_step(store, 7, 3, "rec3", 4), 0);
    cr_assert_eq(sched_store_put_live_step(store, 8, 1, "gone", 4), 0);
    cr_assert_eq(sched_store_delete_live_step(store, 7, 3), 0);
    reopen();
    cr_assert_eq(sched_store_load_live_steps(store, describe_live, &out), 0);
    cr_assert_str_eq(out.data, "7.1:rec1;8.1:gone;");
    cr_assert_eq(sched_store_prune_live_steps(store), 0);
    cr_assert_eq(sched_store_end_running_steps(store, 5, 1764683009000ULL), 0);
    gs_buf_reset(&out);
    cr_assert_eq(sched_store_load_live_steps(store, describe_live, &out), 0);
    cr_assert_str_eq(out.data, "7.1:rec1;", "a step of a job that is not running is dropped");
    gs_buf_reset(&out);
    cr_assert_eq(sched_store_load_steps_range(store, 7, 7, describe_step, &out), 0);
    cr_assert_str_eq(out.data,
                     "7.1:python3:2:1764683005000:51234@node2/3;"
                     "7.2:python3:5:1764683009000:51234@node2/3;",
                     "the kept step runs on, the other ends");
    gs_buf_release(&out);
}

Test(store, a_live_steps_exits_are_rows_that_go_with_its_record)
{
    struct sched_job_row running = job(7, 2), done = job(8, 4);
    struct gs_buf out = GS_BUF_INIT;

    put_job(&running);
    put_job(&done);
    cr_assert_eq(sched_store_put_live_step(store, 7, 1, "rec1", 4), 0);
    cr_assert_eq(sched_store_put_live_exit(store, 7, 1, 2, "x2", 2), 0);
    cr_assert_eq(sched_store_put_live_exit(store, 7, 1, 0, "x0", 2), 0);
    cr_assert_eq(sched_store_put_live_exit(store, 7, 1, 2, "x2b", 3), 0); /* replaced */
    cr_assert_eq(sched_store_put_live_step(store, 7, 2, "rec2", 4), 0);
    cr_assert_eq(sched_store_put_live_exit(store, 7, 2, 0, "y0", 2), 0);
    cr_assert_eq(sched_store_put_live_step(store, 7, 3, "rec3", 4), 0);
    cr_assert_eq(sched_store_put_live_exit(store, 7, 3, 1, "z1", 2), 0);
    cr_assert_eq(sched_store_put_live_step(store, 8, 1, "gone", 4), 0);
    cr_assert_eq(sched_store_put_live_exit(store, 8, 1, 0, "g0", 2), 0);
    cr_assert_eq(sched_store_put_live_exit(store, 9, 1, 0, "orphan", 6), 0);
    cr_assert_eq(sched_store_delete_live_step(store, 7, 2), 0);
    cr_assert_eq(sched_store_put_live_step(store, 7, 3, "rec3b", 5), 0);
    reopen();
    cr_assert_eq(sched_store_load_live_exits(store, describe_live, &out), 0);
    cr_assert_str_eq(out.data, "7.1:x0;7.1:x2b;8.1:g0;9.1:orphan;",
                     "by job, step and rank; a deleted or rewritten record's exits are gone");
    cr_assert_eq(sched_store_prune_live_steps(store), 0);
    gs_buf_reset(&out);
    cr_assert_eq(sched_store_load_live_exits(store, describe_live, &out), 0);
    cr_assert_str_eq(out.data, "7.1:x0;7.1:x2b;", "exits without a kept record are dropped");
    gs_buf_reset(&out);
    cr_assert_eq(sched_store_load_live_steps(store, describe_live, &out), 0);
    cr_assert_str_eq(out.data, "7.1:rec1;7.3:rec3b;");
    gs_buf_release(&out);
}
