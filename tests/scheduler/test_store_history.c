/*
 * test_store_history.c: the history sreport reads from the SQLite store (store.h): node
 * availability rows (kept before a time, by node then time) and job allocation rows (one per
 * attempt and node however often written, closed at the job's end, read when they overlap a
 * window), surviving a reopen.
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "store_fixture.h"

TestSuite(store_history, .init = store_fixture_setup, .fini = store_fixture_teardown);

static char seen[512];

static int note_state(uint64_t at_ms, const char *node, bool up, bool maint, uint32_t cores,
                      uint32_t gpus, void *data)
{
    size_t len = strlen(seen);

    (void)data;
    snprintf(seen + len, sizeof(seen) - len, "%s@%llu:%s%s:%u/%u ", node, (unsigned long long)at_ms,
             up ? "up" : "down", maint ? "+maint" : "", cores, gpus);
    return 0;
}

static int note_alloc(const struct sched_alloc_row *r, void *data)
{
    size_t len = strlen(seen);

    (void)data;
    snprintf(seen + len, sizeof(seen) - len, "%s:%u/%u:%llu-%llu:%s/%s ", r->node, r->cores,
             r->gpus, (unsigned long long)r->start_ms, (unsigned long long)r->end_ms, r->account,
             r->user);
    return 0;
}

static void reopen(void)
{
    struct gs_error err = {0};

    sched_store_close(store);
    cr_assert_eq(sched_store_open(store_path, &store, &err), 0, "%s", err.msg);
}

Test(store_history, node_states_by_node_then_time_before_a_time)
{
    cr_assert_eq(sched_store_put_node_state(store, 200, "n2", true, false, 8, 2), 0);
    cr_assert_eq(sched_store_put_node_state(store, 100, "n1", true, false, 4, 0), 0);
    cr_assert_eq(sched_store_put_node_state(store, 300, "n1", false, false, 4, 0), 0);
    cr_assert_eq(sched_store_put_node_state(store, 900, "n1", true, false, 4, 0), 0);
    cr_assert_eq(sched_store_put_node_state(store, 400, "n2", true, true, 8, 2), 0);
    reopen();
    seen[0] = '\0';
    cr_assert_eq(sched_store_load_node_states(store, 900, note_state, NULL), 0);
    cr_expect_str_eq(seen, "n1@100:up:4/0 n1@300:down:4/0 n2@200:up:8/2 n2@400:up+maint:8/2 ");
}

Test(store_history, allocations_once_per_attempt_and_node_closed_at_the_end)
{
    struct sched_alloc_row a = {7, 1, "n1", 4, 1, 100, 0, "alice", "physics"};
    struct sched_alloc_row b = {7, 1, "n2", 2, 0, 100, 0, "alice", "physics"};
    struct sched_alloc_row later = {7, 1, "n1", 99, 9, 150, 0, "bob", ""};
    struct sched_alloc_row c = {8, 1, "n1", 1, 0, 500, 0, "bob", ""};

    cr_assert_eq(sched_store_put_alloc(store, &a), 0);
    cr_assert_eq(sched_store_put_alloc(store, &b), 0);
    cr_assert_eq(sched_store_put_alloc(store, &later), 0, "written again: the first row stays");
    cr_assert_eq(sched_store_put_alloc(store, &c), 0);
    cr_assert_eq(sched_store_end_allocs(store, 7, 400), 0);
    reopen();
    seen[0] = '\0';
    cr_assert_eq(sched_store_load_allocs(store, 0, 1000, note_alloc, NULL), 0);
    cr_expect(strstr(seen, "n1:4/1:100-400:physics/alice ") != NULL, "%s", seen);
    cr_expect(strstr(seen, "n2:2/0:100-400:physics/alice ") != NULL, "%s", seen);
    cr_expect(strstr(seen, "n1:1/0:500-0:/bob ") != NULL, "the open one: %s", seen);
    cr_expect(strstr(seen, "99") == NULL, "%s", seen);
    seen[0] = '\0';
    cr_assert_eq(sched_store_load_allocs(store, 400, 450, note_alloc, NULL), 0);
    cr_expect_str_eq(seen, "", "job 7 ended at 400, job 8 starts at 500");
    cr_assert_eq(sched_store_load_allocs(store, 450, 600, note_alloc, NULL), 0);
    cr_expect_str_eq(seen, "n1:1/0:500-0:/bob ");
}

/* A version 7 database's node_history has no maint column: it gains one, its rows outside
 * maintenance. */
Test(store_history, a_version_7_database_gains_the_maintenance_column)
{
    sqlite3 *db;

    sched_store_close(store);
    store = NULL;
    cr_assert_eq(sqlite3_open(store_path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db,
                              "DROP TABLE node_history; CREATE TABLE node_history (id INTEGER "
                              "PRIMARY KEY, at_ms INTEGER NOT NULL, node TEXT NOT NULL, up "
                              "INTEGER NOT NULL, cores INTEGER, gpus INTEGER); INSERT INTO "
                              "node_history (at_ms, node, up, cores, gpus) VALUES (5, 'n1', 1, 4, "
                              "0); UPDATE meta SET value = '7' WHERE key = 'schema_version'",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    reopen();
    cr_assert_eq(sched_store_put_node_state(store, 7, "n1", true, true, 4, 0), 0);
    seen[0] = '\0';
    cr_assert_eq(sched_store_load_node_states(store, 10, note_state, NULL), 0);
    cr_expect_str_eq(seen, "n1@5:up:4/0 n1@7:up+maint:4/0 ");
    reopen(); /* and opens again as version 8 */
}

Test(store_history, a_version_6_database_gains_the_history_tables)
{
    sqlite3 *db;

    sched_store_close(store);
    store = NULL;
    /* What gschedd before schema 7 left: neither table, version 6. */
    cr_assert_eq(sqlite3_open(store_path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db,
                              "DROP TABLE node_history; DROP TABLE allocations; UPDATE meta SET "
                              "value = '6' WHERE key = 'schema_version'",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    reopen();
    cr_assert_eq(sched_store_put_node_state(store, 5, "n1", true, false, 4, 0), 0);
    seen[0] = '\0';
    cr_assert_eq(sched_store_load_node_states(store, 10, note_state, NULL), 0);
    cr_expect_str_eq(seen, "n1@5:up:4/0 ");
}
