/*
 * test_journal.c: changes handed to the journal are on disk when their done callback runs,
 * a failing change fails alone, and closing flushes what is queued.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

#include "scheduler/journal.h"

#define NJOBS 200

static char dir[64], path[128];
static uv_loop_t loop;
static struct sched_journal *journal;
static int done_count, failed_count, seen_on_disk;

struct put {
    uint64_t id;
    int fail_with;
};

static void setup(void)
{
    struct sched_store *store;
    struct gs_error err;

    snprintf(dir, sizeof(dir), "/tmp/gsched-journal-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/state.db", dir);
    cr_assert_eq(sched_store_open(path, &store, &err), 0, "%s", err.msg);
    cr_assert_eq(uv_loop_init(&loop), 0);
    journal = sched_journal_new(&loop, store);
    cr_assert_not_null(journal);
    done_count = failed_count = seen_on_disk = 0;
}

static void teardown(void)
{
    char cmd[128];

    if (journal != NULL)
        sched_journal_close(journal);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&loop), 0);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(journal, .init = setup, .fini = teardown, .timeout = 60);

static int apply_put(struct sched_store *store, void *data)
{
    struct put *p = data;
    struct sched_job_row row = {.id = p->id, .name = "j", .spec = "", .spec_len = 0};

    if (p->fail_with != 0)
        return p->fail_with;
    return sched_store_put_job(store, &row);
}

/* Another connection, as a restarted scheduler would see the file. */
static bool on_disk(uint64_t id)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    bool found;

    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT 1 FROM jobs WHERE id = ?1", -1, &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return found;
}

static void done_put(int status, void *data)
{
    struct put *p = data;

    done_count++;
    if (status < 0)
        failed_count++;
    else if (p->id % 50 == 0 && on_disk(p->id))
        seen_on_disk++;
    free(p);
}

static void submit(uint64_t id, int fail_with)
{
    struct put *p = malloc(sizeof(*p));

    cr_assert_not_null(p);
    *p = (struct put){id, fail_with};
    cr_assert_eq(sched_journal_submit(journal, apply_put, done_put, p), 0);
}

static void run_until_done(int want)
{
    while (done_count < want)
        uv_run(&loop, UV_RUN_ONCE);
}

Test(journal, change_is_on_disk_before_its_done_callback)
{
    for (uint64_t id = 1; id <= NJOBS; id++)
        submit(id, 0);
    cr_assert_eq(sched_journal_pending(journal), NJOBS);
    run_until_done(NJOBS);
    cr_assert_eq(failed_count, 0);
    cr_assert_eq(seen_on_disk, NJOBS / 50, "every sampled job was committed when acked");
    cr_assert_eq(sched_journal_pending(journal), 0);
}

Test(journal, a_failing_change_fails_alone)
{
    submit(1, 0);
    submit(2, -EINVAL);
    submit(3, 0);
    run_until_done(3);
    cr_assert_eq(failed_count, 1);
    cr_assert(on_disk(1));
    cr_assert_not(on_disk(2));
    cr_assert(on_disk(3));
}

Test(journal, close_flushes_queued_changes_and_reports_them)
{
    for (uint64_t id = 1; id <= 20; id++)
        submit(id, 0);
    sched_journal_close(journal);
    journal = NULL;
    cr_assert_eq(done_count, 20);
    cr_assert(on_disk(20));
}
