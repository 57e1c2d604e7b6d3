/*
 * store.c: SQLite persistence of the scheduler's state (see store.h for the schema).
 *
 * Every statement is prepared once at open. Text and blobs are bound SQLITE_STATIC: the
 * caller's row outlives the step. Errors map to negative errno: busy/locked -EBUSY, out of
 * memory -ENOMEM, disk full -ENOSPC, anything else -EIO.
 */
#include "scheduler/store.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sort.h"

enum stmt_id {
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_NEXT_ID,
    ST_PUT_JOB,
    ST_PUT_TASK,
    ST_CLEAR_TASKS,
    ST_PUT_NODE,
    ST_ADD_EVENT,
    ST_LOAD_JOBS,
    ST_LOAD_TASKS,
    ST_LOAD_NODES,
    ST_LOAD_EVENTS,
    ST_PUT_USAGE,
    ST_LOAD_USAGE,
    ST_LOAD_LIVE_JOBS,
    ST_LOAD_JOBS_RANGE,
    ST_LOAD_TASKS_RANGE,
    ST_LOAD_EVENTS_RANGE,
    ST_LOAD_FINISHED,
    ST_PUT_RESV,
    ST_DELETE_RESV,
    ST_LOAD_RESVS,
    ST_PUT_STEP,
    ST_LOAD_STEPS_RANGE,
    ST_END_RUNNING_STEPS,
    ST_PUT_LIVE_STEP,
    ST_DELETE_LIVE_STEP,
    ST_LOAD_LIVE_STEPS,
    ST_PRUNE_LIVE_STEPS,
    ST_PUT_LIVE_EXIT,
    ST_DELETE_LIVE_EXITS,
    ST_LOAD_LIVE_EXITS,
    ST_PRUNE_LIVE_EXITS,
    ST_PUT_NODE_STATE,
    ST_PUT_ALLOC,
    ST_END_ALLOCS,
    ST_LOAD_NODE_STATES,
    ST_LOAD_ALLOCS,
    ST_PURGE_PICK,
    ST_PURGE_FLOOR,
    ST_PURGE_TASKS,
    ST_PURGE_STEPS,
    ST_PURGE_ALLOCS,
    ST_PURGE_EVENTS,
    ST_PURGE_JOB,
    ST_PURGE_UNOWNED_EVENTS,
    ST_PURGE_HISTORY_KEEP,
    ST_PURGE_HISTORY,
    ST_COUNT,
};

#define JOB_COLUMNS                                                                                \
    "id, name, uid, gid, user, priority, state, reason, held, submit_ms, start_ms, end_ms, "       \
    "exit_code, signaled, term_signal, restarts, attempt, spec, alloc, usage, submit_key, "        \
    "suspend_at_ms, suspended_ms, resume_at_ms"

#define STEP_COLUMNS                                                                               \
    "job_id, step, attempt, name, nodelist, nnodes, ntasks, state, exit_code, signaled, "          \
    "term_signal, start_ms, end_ms, max_rss_kib, max_rss_node, max_rss_task, cpu_ms, "             \
    "suspended_ms, cpus, gpus, time_limit_s"

static const char *const stmt_sql[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    /* Past the highest id ever stored, also once a purge deleted it (sched_store_purge). */
    [ST_NEXT_ID] = "SELECT MAX(COALESCE((SELECT MAX(id) FROM jobs), 0), COALESCE((SELECT "
                   "CAST(value AS INTEGER) FROM meta WHERE key = 'job_id_floor'), 0)) + 1",
    [ST_PUT_JOB] =
        "INSERT OR REPLACE INTO jobs (id, name, uid, gid, user, priority, state, "
        "reason, held, submit_ms, start_ms, end_ms, exit_code, signaled, "
        "term_signal, restarts, attempt, spec, alloc, usage, submit_key, suspend_at_ms, "
        "suspended_ms, resume_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
        "?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)",
    [ST_PUT_TASK] = "INSERT OR REPLACE INTO tasks (job_id, rank, node, attempt, state, pid, "
                    "exit_code, signaled, term_signal, end_reason, start_ms, end_ms) VALUES "
                    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    [ST_CLEAR_TASKS] = "DELETE FROM tasks WHERE job_id = ?1",
    [ST_PUT_NODE] = "INSERT OR REPLACE INTO nodes (name, state, last_seen_ms, topology, "
                    "drain_reason) VALUES (?1, ?2, ?3, ?4, ?5)",
    [ST_ADD_EVENT] = "INSERT INTO events (at_ms, job_id, node, kind, detail) VALUES (?1, ?2, "
                     "?3, ?4, ?5)",
    [ST_LOAD_JOBS] = "SELECT " JOB_COLUMNS " FROM jobs ORDER BY id",
    [ST_LOAD_TASKS] = "SELECT job_id, rank, node, attempt, state, pid, exit_code, signaled, "
                      "term_signal, end_reason, start_ms, end_ms FROM tasks ORDER BY job_id, "
                      "rank",
    [ST_LOAD_NODES] = "SELECT name, state, last_seen_ms, topology, drain_reason FROM nodes "
                      "ORDER BY name",
    [ST_PUT_USAGE] = "INSERT OR REPLACE INTO usage (account, user, usage, at_ms) VALUES (?1, ?2, "
                     "?3, ?4)",
    [ST_LOAD_USAGE] = "SELECT account, user, usage, at_ms FROM usage ORDER BY account, user",
    [ST_LOAD_EVENTS] = "SELECT at_ms, job_id, node, kind, detail FROM events WHERE ?1 = 0 OR "
                       "job_id = ?1 ORDER BY id",
    /* Both terms have an index: SQLite reads the union of two index ranges. */
    [ST_LOAD_LIVE_JOBS] = "SELECT " JOB_COLUMNS " FROM jobs WHERE state IN (1, 2, 8) OR "
                          "end_ms >= ?1 ORDER BY id",
    [ST_LOAD_JOBS_RANGE] = "SELECT " JOB_COLUMNS " FROM jobs WHERE id BETWEEN ?1 AND ?2 "
                           "ORDER BY id",
    [ST_LOAD_TASKS_RANGE] = "SELECT job_id, rank, node, attempt, state, pid, exit_code, "
                            "signaled, term_signal, end_reason, start_ms, end_ms FROM tasks "
                            "WHERE job_id BETWEEN ?1 AND ?2 ORDER BY job_id, rank",
    [ST_LOAD_EVENTS_RANGE] = "SELECT at_ms, job_id, node, kind, detail FROM events WHERE "
                             "job_id BETWEEN ?1 AND ?2 ORDER BY id",
    [ST_LOAD_FINISHED] = "SELECT " JOB_COLUMNS " FROM jobs WHERE state NOT IN (1, 2, 8) AND "
                         "(?1 = 0 OR end_ms < ?1) AND (?2 IS NULL OR name = ?2) AND "
                         "(?3 IS NULL OR user = ?3) AND (?4 = 0 OR ((1 << state) & ?4) != 0) "
                         "ORDER BY id DESC LIMIT ?5",
    [ST_PUT_RESV] = "INSERT OR REPLACE INTO reservations (name, spec) VALUES (?1, ?2)",
    [ST_DELETE_RESV] = "DELETE FROM reservations WHERE name = ?1",
    [ST_LOAD_RESVS] = "SELECT name, spec FROM reservations ORDER BY name",
    [ST_PUT_STEP] = "INSERT OR REPLACE INTO steps (" STEP_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, "
                    "?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
                    "?21)",
    [ST_LOAD_STEPS_RANGE] = "SELECT " STEP_COLUMNS " FROM steps WHERE job_id BETWEEN ?1 AND ?2 "
                            "ORDER BY job_id, step",
    /* srun steps gschedd kept a record of to take up again are left running */
    [ST_END_RUNNING_STEPS] = "UPDATE steps SET state = ?1, end_ms = ?2 WHERE state = 2 AND "
                             "step > 0 AND NOT EXISTS (SELECT 1 FROM live_steps l WHERE "
                             "l.job_id = steps.job_id AND l.step = steps.step)",
    [ST_PUT_LIVE_STEP] = "INSERT OR REPLACE INTO live_steps (job_id, step, record) VALUES (?1, ?2, "
                         "?3)",
    [ST_DELETE_LIVE_STEP] = "DELETE FROM live_steps WHERE job_id = ?1 AND step = ?2",
    [ST_LOAD_LIVE_STEPS] = "SELECT job_id, step, record FROM live_steps ORDER BY job_id, step",
    [ST_PRUNE_LIVE_STEPS] = "DELETE FROM live_steps WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE "
                            "j.id = live_steps.job_id AND j.state = 2)",
    [ST_PUT_LIVE_EXIT] = "INSERT OR REPLACE INTO live_step_exits (job_id, step, rank, exit) "
                         "VALUES (?1, ?2, ?3, ?4)",
    [ST_DELETE_LIVE_EXITS] = "DELETE FROM live_step_exits WHERE job_id = ?1 AND step = ?2",
    [ST_LOAD_LIVE_EXITS] = "SELECT job_id, step, exit FROM live_step_exits ORDER BY job_id, "
                           "step, rank",
    [ST_PRUNE_LIVE_EXITS] = "DELETE FROM live_step_exits WHERE NOT EXISTS (SELECT 1 FROM "
                            "live_steps l WHERE l.job_id = live_step_exits.job_id AND l.step = "
                            "live_step_exits.step)",
    [ST_PUT_NODE_STATE] = "INSERT INTO node_history (at_ms, node, up, cores, gpus, maint) VALUES "
                          "(?1, ?2, ?3, ?4, ?5, ?6)",
    [ST_PUT_ALLOC] = "INSERT OR IGNORE INTO allocations (job_id, attempt, node, cores, gpus, "
                     "start_ms, user, account) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [ST_END_ALLOCS] = "UPDATE allocations SET end_ms = ?2 WHERE job_id = ?1 AND end_ms IS NULL",
    [ST_PURGE_PICK] = "SELECT id FROM jobs WHERE id > ?1 AND state NOT IN (1, 2, 8) AND "
                      "end_ms > 0 AND end_ms < ?2 ORDER BY id LIMIT ?3",
    [ST_PURGE_FLOOR] = "INSERT INTO meta (key, value) VALUES ('job_id_floor', ?1) ON "
                       "CONFLICT (key) DO UPDATE SET value = MAX(CAST(value AS INTEGER), ?1)",
    [ST_PURGE_TASKS] = "DELETE FROM tasks WHERE job_id = ?1",
    [ST_PURGE_STEPS] = "DELETE FROM steps WHERE job_id = ?1",
    [ST_PURGE_ALLOCS] = "DELETE FROM allocations WHERE job_id = ?1",
    [ST_PURGE_EVENTS] = "DELETE FROM events WHERE job_id = ?1",
    [ST_PURGE_JOB] = "DELETE FROM jobs WHERE id = ?1",
    [ST_PURGE_UNOWNED_EVENTS] = "DELETE FROM events WHERE job_id IS NULL AND at_ms < ?1",
    /* Each node's last row before the horizon says its state there: it moves up to it. */
    [ST_PURGE_HISTORY_KEEP] =
        "UPDATE node_history SET at_ms = ?1 WHERE at_ms < ?1 AND id = (SELECT h.id FROM "
        "node_history h WHERE h.node = node_history.node AND h.at_ms < ?1 ORDER BY h.at_ms "
        "DESC, h.id DESC LIMIT 1)",
    [ST_PURGE_HISTORY] = "DELETE FROM node_history WHERE at_ms < ?1",
    [ST_LOAD_NODE_STATES] =
        "SELECT at_ms, node, up, cores, gpus, maint FROM node_history WHERE at_ms < "
        "?1 ORDER BY node, at_ms, id",
    [ST_LOAD_ALLOCS] =
        "SELECT node, cores, gpus, start_ms, end_ms, user, account FROM allocations WHERE "
        "start_ms < ?2 AND (end_ms IS NULL OR end_ms > ?1) ORDER BY node",
};

#define USAGE_SQL                                                                                  \
    "CREATE TABLE IF NOT EXISTS usage (account TEXT NOT NULL, user TEXT NOT NULL, "                \
    "  usage REAL NOT NULL, at_ms INTEGER NOT NULL, PRIMARY KEY (account, user));"                 \
    "CREATE TABLE IF NOT EXISTS reservations (name TEXT PRIMARY KEY, spec BLOB NOT NULL);"         \
    "CREATE TABLE IF NOT EXISTS steps (job_id INTEGER NOT NULL, step INTEGER NOT NULL, "           \
    "  attempt INTEGER, name TEXT, nodelist TEXT, nnodes INTEGER, ntasks INTEGER, "                \
    "  state INTEGER NOT NULL, exit_code INTEGER, signaled INTEGER, term_signal INTEGER, "         \
    "  start_ms INTEGER, end_ms INTEGER, max_rss_kib INTEGER, max_rss_node TEXT, "                 \
    "  max_rss_task INTEGER, cpu_ms INTEGER, suspended_ms INTEGER NOT NULL DEFAULT 0, "            \
    "  cpus INTEGER NOT NULL DEFAULT 0, gpus INTEGER NOT NULL DEFAULT 0, "                         \
    "  time_limit_s INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (job_id, step));"                      \
    "CREATE TABLE IF NOT EXISTS node_history (id INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL, "    \
    "  node TEXT NOT NULL, up INTEGER NOT NULL, cores INTEGER, gpus INTEGER, "                     \
    "  maint INTEGER NOT NULL DEFAULT 0);"                                                         \
    "CREATE TABLE IF NOT EXISTS allocations (job_id INTEGER NOT NULL, attempt INTEGER NOT NULL, "  \
    "  node TEXT NOT NULL, cores INTEGER, gpus INTEGER, start_ms INTEGER NOT NULL, "               \
    "  end_ms INTEGER, user TEXT, account TEXT, PRIMARY KEY (job_id, attempt, node));"             \
    "CREATE INDEX IF NOT EXISTS allocations_end ON allocations (end_ms);"                          \
    "CREATE INDEX IF NOT EXISTS node_history_node ON node_history (node, at_ms);"                  \
    "CREATE INDEX IF NOT EXISTS events_unowned ON events (at_ms) WHERE job_id IS NULL;"            \
    "CREATE TABLE IF NOT EXISTS live_steps (job_id INTEGER NOT NULL, step INTEGER NOT NULL, "      \
    "  record BLOB NOT NULL, PRIMARY KEY (job_id, step));"                                         \
    "CREATE TABLE IF NOT EXISTS live_step_exits (job_id INTEGER NOT NULL, "                        \
    "  step INTEGER NOT NULL, rank INTEGER NOT NULL, exit BLOB NOT NULL, "                         \
    "  PRIMARY KEY (job_id, step, rank));"

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
    "  uid INTEGER NOT NULL, gid INTEGER NOT NULL, user TEXT, priority INTEGER NOT NULL, "
    "  state INTEGER NOT NULL, reason TEXT, held INTEGER NOT NULL, submit_ms INTEGER, "
    "  start_ms INTEGER, end_ms INTEGER, exit_code INTEGER, signaled INTEGER, "
    "  term_signal INTEGER, restarts INTEGER, attempt INTEGER, spec BLOB NOT NULL, alloc BLOB, "
    "  usage BLOB, submit_key TEXT, suspend_at_ms INTEGER NOT NULL DEFAULT 0, "
    "  suspended_ms INTEGER NOT NULL DEFAULT 0, resume_at_ms INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state);"
    "CREATE INDEX IF NOT EXISTS jobs_end ON jobs (end_ms);"
    "CREATE TABLE IF NOT EXISTS tasks (job_id INTEGER NOT NULL, rank INTEGER NOT NULL, "
    "  node TEXT, attempt INTEGER, state INTEGER, pid INTEGER, exit_code INTEGER, "
    "  signaled INTEGER, term_signal INTEGER, end_reason INTEGER, start_ms INTEGER, "
    "  end_ms INTEGER, PRIMARY KEY (job_id, rank));"
    "CREATE TABLE IF NOT EXISTS nodes (name TEXT PRIMARY KEY, state TEXT, "
    "  last_seen_ms INTEGER, topology BLOB, drain_reason TEXT);"
    "CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, at_ms INTEGER, "
    "  job_id INTEGER, node TEXT, kind TEXT NOT NULL, detail TEXT);"
    "CREATE INDEX IF NOT EXISTS events_job ON events (job_id);" USAGE_SQL
    "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', '13');";

struct sched_store {
    sqlite3 *db;
    sqlite3_stmt *stmt[ST_COUNT];
};

static int db_err(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW:
        return 0;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return -EBUSY;
    case SQLITE_NOMEM:
        return -ENOMEM;
    case SQLITE_FULL:
        return -ENOSPC;
    default:
        return -EIO;
    }
}

void sched_store_close(struct sched_store *store)
{
    if (store == NULL)
        return;
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(store->stmt[i]);
    sqlite3_close(store->db);
    free(store);
}

/* Runs one schema upgrade (ALTERs and the new version) in a transaction: all or nothing. */
static int migrate(struct sched_store *s, const char *sql)
{
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK &&
        sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK &&
        sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
        return 0;
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return -EIO;
}

static bool has_column(struct sched_store *s, const char *table, const char *column)
{
    sqlite3_stmt *st = NULL;
    bool found = false;

    if (sqlite3_prepare_v2(s->db, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

/*
 * What each schema version lacked, by version: the ALTERs that bring it to the next one,
 * skipped where the table already has column (a table made above from nothing has it).
 * "" where only new tables came (made above, with the others).
 */
static const struct upgrade {
    const char *table, *column, *alter;
} upgrades[] = {
    [1] = {NULL, NULL, /* jobs.usage, jobs.submit_key */
           "ALTER TABLE jobs ADD COLUMN usage BLOB; ALTER TABLE jobs ADD COLUMN submit_key TEXT;"},
    [2] = {NULL, NULL, "ALTER TABLE nodes ADD COLUMN drain_reason TEXT;"},
    [3] = {NULL, NULL, ""}, /* the usage table */
    [4] = {NULL, NULL, ""}, /* the reservations table */
    [5] = {NULL, NULL, ""}, /* the steps table */
    [6] = {NULL, NULL, ""}, /* node_history and allocations */
    [7] = {"node_history", "maint",
           "ALTER TABLE node_history ADD COLUMN maint INTEGER NOT NULL DEFAULT 0;"},
    [8] = {"jobs", "suspended_ms", /* scontrol suspend */
           "ALTER TABLE jobs ADD COLUMN suspend_at_ms INTEGER NOT NULL DEFAULT 0; "
           "ALTER TABLE jobs ADD COLUMN suspended_ms INTEGER NOT NULL DEFAULT 0;"},
    [9] = {"jobs", "resume_at_ms", /* scontrol show job's SuspendTime after a resume */
           "ALTER TABLE jobs ADD COLUMN resume_at_ms INTEGER NOT NULL DEFAULT 0;"},
    [10] = {"steps", "suspended_ms", /* a step's share of its job's suspensions */
            "ALTER TABLE steps ADD COLUMN suspended_ms INTEGER NOT NULL DEFAULT 0;"},
    [11] = {"steps", "time_limit_s", /* what a step was given (scontrol show step, sacct) */
            "ALTER TABLE steps ADD COLUMN cpus INTEGER NOT NULL DEFAULT 0; "
            "ALTER TABLE steps ADD COLUMN gpus INTEGER NOT NULL DEFAULT 0; "
            "ALTER TABLE steps ADD COLUMN time_limit_s INTEGER NOT NULL DEFAULT 0;"},
    [12] = {NULL, NULL, ""}, /* the live_steps table */
    [13] = {NULL, NULL, ""}, /* the live_step_exits table */
};
_Static_assert(sizeof(upgrades) / sizeof(upgrades[0]) == SCHED_STORE_SCHEMA_VERSION,
               "each schema version but the last has its upgrade");

/* From version to version + 1, in one transaction. */
static int upgrade(struct sched_store *s, int version)
{
    const struct upgrade *u = &upgrades[version];
    bool done = u->column != NULL && has_column(s, u->table, u->column);
    char sql[512];

    int n =
        snprintf(sql, sizeof(sql), "%s UPDATE meta SET value = '%d' WHERE key = 'schema_version';",
                 done ? "" : u->alter, version + 1);

    return n > 0 && (size_t)n < sizeof(sql) ? migrate(s, sql) : -E2BIG;
}

static int check_version(struct sched_store *s, struct gs_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key = 'schema_version'", -1,
                                &st, NULL);
    int version = 0;

    if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    while (version >= 1 && version < SCHED_STORE_SCHEMA_VERSION && upgrade(s, version) == 0)
        version++;
    if (version != SCHED_STORE_SCHEMA_VERSION)
        return gs_error_set(err, -EPROTO, 0, 0,
                            "state database has schema version %d, this "
                            "gschedd reads version %d",
                            version, SCHED_STORE_SCHEMA_VERSION);
    return 0;
}

static int setup_db(struct sched_store *s, struct gs_error *err)
{
    static const char pragmas[] = "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; "
                                  "PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;";
    char *msg = NULL;
    int rc;

    rc = sqlite3_exec(s->db, pragmas, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(s->db, schema_sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        gs_error_set(err, db_err(rc), 0, 0, "sqlite: %s", msg != NULL ? msg : "error");
        sqlite3_free(msg);
        return db_err(rc);
    }
    rc = check_version(s, err);
    for (int i = 0; rc == 0 && i < ST_COUNT; i++) {
        int prc = sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->stmt[i],
                                     NULL);
        if (prc != SQLITE_OK)
            rc = gs_error_set(err, db_err(prc), 0, 0, "sqlite: %s", sqlite3_errmsg(s->db));
    }
    return rc;
}

int sched_store_open(const char *path, struct sched_store **ret_store, struct gs_error *err)
{
    struct sched_store *s = calloc(1, sizeof(*s));
    int rc, fd;

    if (s == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
    /* Jobs' environments (secrets among them) live here: readable by gschedd's user only.
     * SQLite gives its -wal and -shm files the database's mode. */
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || fchmod(fd, 0600) < 0) {
        rc = gs_error_set(err, -errno, 0, 0, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(s);
        return rc;
    }
    close(fd);
    rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK) {
        rc = gs_error_set(err, db_err(rc), 0, 0, "%s: %s", path,
                          s->db != NULL ? sqlite3_errmsg(s->db) : "cannot open");
        sched_store_close(s);
        return rc;
    }
    rc = setup_db(s, err);
    if (rc < 0) {
        sched_store_close(s);
        return rc;
    }
    *ret_store = s;
    return 0;
}

/* Runs a statement that returns no rows, then resets it for the next use. */
static int run(struct sched_store *s, enum stmt_id id)
{
    int rc = sqlite3_step(s->stmt[id]);

    sqlite3_reset(s->stmt[id]);
    sqlite3_clear_bindings(s->stmt[id]);
    return rc == SQLITE_DONE ? 0 : db_err(rc);
}

int sched_store_begin(struct sched_store *store)
{
    return run(store, ST_BEGIN);
}

int sched_store_commit(struct sched_store *store)
{
    return run(store, ST_COMMIT);
}

int sched_store_rollback(struct sched_store *store)
{
    return run(store, ST_ROLLBACK);
}

int sched_store_next_job_id(struct sched_store *store, uint64_t *ret_id)
{
    sqlite3_stmt *st = store->stmt[ST_NEXT_ID];
    int rc = sqlite3_step(st);

    if (rc == SQLITE_ROW)
        *ret_id = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 0 : db_err(rc);
}

static void bind_text(sqlite3_stmt *st, int col, const char *s)
{
    if (s != NULL)
        sqlite3_bind_text(st, col, s, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, col);
}

static void bind_blob(sqlite3_stmt *st, int col, const void *p, size_t len)
{
    if (p != NULL)
        sqlite3_bind_blob64(st, col, len > 0 ? p : "", len, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, col);
}

int sched_store_put_job(struct sched_store *store, const struct sched_job_row *r)
{
    sqlite3_stmt *st = store->stmt[ST_PUT_JOB];

    sqlite3_bind_int64(st, 1, (sqlite3_int64)r->id);
    bind_text(st, 2, r->name != NULL ? r->name : "");
    sqlite3_bind_int64(st, 3, r->uid);
    sqlite3_bind_int64(st, 4, r->gid);
    bind_text(st, 5, r->user);
    sqlite3_bind_int(st, 6, r->priority);
    sqlite3_bind_int(st, 7, r->state);
    bind_text(st, 8, r->reason);
    sqlite3_bind_int(st, 9, r->held);
    sqlite3_bind_int64(st, 10, (sqlite3_int64)r->submit_ms);
    sqlite3_bind_int64(st, 11, (sqlite3_int64)r->start_ms);
    sqlite3_bind_int64(st, 12, (sqlite3_int64)r->end_ms);
    sqlite3_bind_int(st, 13, r->exit_code);
    sqlite3_bind_int(st, 14, r->signaled);
    sqlite3_bind_int(st, 15, r->term_signal);
    sqlite3_bind_int64(st, 16, r->restarts);
    sqlite3_bind_int64(st, 17, r->attempt);
    bind_blob(st, 18, r->spec != NULL ? r->spec : "", r->spec_len);
    bind_blob(st, 19, r->alloc, r->alloc_len);
    bind_blob(st, 20, r->usage, r->usage_len);
    if (r->submit_key != NULL)
        bind_text(st, 21, r->submit_key);
    else
        sqlite3_bind_null(st, 21);
    sqlite3_bind_int64(st, 22, (sqlite3_int64)r->suspend_at_ms);
    sqlite3_bind_int64(st, 23, (sqlite3_int64)r->suspended_ms);
    sqlite3_bind_int64(st, 24, (sqlite3_int64)r->resume_at_ms);
    return run(store, ST_PUT_JOB);
}

int sched_store_put_task(struct sched_store *store, const struct sched_task_row *r)
{
    sqlite3_stmt *st = store->stmt[ST_PUT_TASK];

    sqlite3_bind_int64(st, 1, (sqlite3_int64)r->job_id);
    sqlite3_bind_int64(st, 2, r->rank);
    bind_text(st, 3, r->node);
    sqlite3_bind_int64(st, 4, r->attempt);
    sqlite3_bind_int(st, 5, r->state);
    sqlite3_bind_int(st, 6, r->pid);
    sqlite3_bind_int(st, 7, r->exit_code);
    sqlite3_bind_int(st, 8, r->signaled);
    sqlite3_bind_int(st, 9, r->term_signal);
    sqlite3_bind_int(st, 10, r->end_reason);
    sqlite3_bind_int64(st, 11, (sqlite3_int64)r->start_ms);
    sqlite3_bind_int64(st, 12, (sqlite3_int64)r->end_ms);
    return run(store, ST_PUT_TASK);
}

int sched_store_clear_tasks(struct sched_store *store, uint64_t job_id)
{
    sqlite3_bind_int64(store->stmt[ST_CLEAR_TASKS], 1, (sqlite3_int64)job_id);
    return run(store, ST_CLEAR_TASKS);
}

int sched_store_put_node(struct sched_store *store, const struct sched_node_row *r)
{
    sqlite3_stmt *st = store->stmt[ST_PUT_NODE];

    bind_text(st, 1, r->name);
    bind_text(st, 2, r->state);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)r->last_seen_ms);
    bind_blob(st, 4, r->topology, r->topology_len);
    bind_text(st, 5, r->drain_reason);
    return run(store, ST_PUT_NODE);
}

int sched_store_add_event(struct sched_store *store, uint64_t at_ms, uint64_t job_id,
                          const char *node, const char *kind, const char *detail)
{
    sqlite3_stmt *st = store->stmt[ST_ADD_EVENT];

    sqlite3_bind_int64(st, 1, (sqlite3_int64)at_ms);
    if (job_id != 0)
        sqlite3_bind_int64(st, 2, (sqlite3_int64)job_id);
    else
        sqlite3_bind_null(st, 2);
    bind_text(st, 3, node);
    bind_text(st, 4, kind);
    bind_text(st, 5, detail);
    return run(store, ST_ADD_EVENT);
}

static const char *col_text(sqlite3_stmt *st, int col)
{
    return (const char *)sqlite3_column_text(st, col);
}

static uint64_t col_u64(sqlite3_stmt *st, int col)
{
    return (uint64_t)sqlite3_column_int64(st, col);
}

static void read_job(sqlite3_stmt *st, struct sched_job_row *r)
{
    memset(r, 0, sizeof(*r));
    r->id = col_u64(st, 0);
    r->name = col_text(st, 1);
    r->uid = (uint32_t)col_u64(st, 2);
    r->gid = (uint32_t)col_u64(st, 3);
    r->user = col_text(st, 4);
    r->priority = sqlite3_column_int(st, 5);
    r->state = sqlite3_column_int(st, 6);
    r->reason = col_text(st, 7);
    r->held = sqlite3_column_int(st, 8) != 0;
    r->submit_ms = col_u64(st, 9);
    r->start_ms = col_u64(st, 10);
    r->end_ms = col_u64(st, 11);
    r->exit_code = sqlite3_column_int(st, 12);
    r->signaled = sqlite3_column_int(st, 13) != 0;
    r->term_signal = sqlite3_column_int(st, 14);
    r->restarts = (uint32_t)col_u64(st, 15);
    r->attempt = (uint32_t)col_u64(st, 16);
    r->spec = sqlite3_column_blob(st, 17);
    r->spec_len = (size_t)sqlite3_column_bytes(st, 17);
    if (sqlite3_column_type(st, 18) != SQLITE_NULL) {
        r->alloc = sqlite3_column_blob(st, 18);
        r->alloc_len = (size_t)sqlite3_column_bytes(st, 18);
        if (r->alloc == NULL)
            r->alloc = "";
    }
    if (sqlite3_column_type(st, 19) != SQLITE_NULL) {
        r->usage = sqlite3_column_blob(st, 19);
        r->usage_len = (size_t)sqlite3_column_bytes(st, 19);
        if (r->usage == NULL)
            r->usage = "";
    }
    if (sqlite3_column_type(st, 20) != SQLITE_NULL)
        r->submit_key = col_text(st, 20);
    r->suspend_at_ms = col_u64(st, 21);
    r->suspended_ms = col_u64(st, 22);
    r->resume_at_ms = col_u64(st, 23);
}

static void read_task(sqlite3_stmt *st, struct sched_task_row *r)
{
    memset(r, 0, sizeof(*r));
    r->job_id = col_u64(st, 0);
    r->rank = (uint32_t)col_u64(st, 1);
    r->node = col_text(st, 2);
    r->attempt = (uint32_t)col_u64(st, 3);
    r->state = sqlite3_column_int(st, 4);
    r->pid = sqlite3_column_int(st, 5);
    r->exit_code = sqlite3_column_int(st, 6);
    r->signaled = sqlite3_column_int(st, 7) != 0;
    r->term_signal = sqlite3_column_int(st, 8);
    r->end_reason = sqlite3_column_int(st, 9);
    r->start_ms = col_u64(st, 10);
    r->end_ms = col_u64(st, 11);
}

/* Steps a query to the end, handing each row to visit; resets it whatever happens. */
static int walk(struct sched_store *s, enum stmt_id id,
                int (*visit)(sqlite3_stmt *st, void *fn, void *data), void *fn, void *data)
{
    sqlite3_stmt *st = s->stmt[id];
    int rc, cb_rc = 0;

    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        cb_rc = visit(st, fn, data);
        if (cb_rc < 0)
            break;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (cb_rc < 0)
        return cb_rc;
    return rc == SQLITE_DONE ? 0 : db_err(rc);
}

typedef int (*job_fn)(const struct sched_job_row *row, void *data);
typedef int (*task_fn)(const struct sched_task_row *row, void *data);
typedef int (*node_fn)(const struct sched_node_row *row, void *data);
typedef int (*usage_fn)(const char *account, const char *user, double usage, uint64_t at_ms,
                        void *data);
typedef int (*event_fn)(uint64_t at_ms, uint64_t job_id, const char *node, const char *kind,
                        const char *detail, void *data);
typedef int (*resv_fn)(const char *name, const void *spec, size_t len, void *data);
typedef int (*step_fn)(const struct sched_step_row *row, void *data);
typedef int (*live_step_fn)(uint64_t job_id, uint32_t step, const void *record, size_t len,
                            void *data);
typedef int (*node_state_fn)(uint64_t at_ms, const char *node, bool up, bool maint, uint32_t cores,
                             uint32_t gpus, void *data);
typedef int (*alloc_fn)(const struct sched_alloc_row *row, void *data);

/* Function pointers travel through walk() wrapped in a struct: C has no void * for them. */
struct fn_box {
    job_fn job;
    task_fn task;
    node_fn node;
    event_fn event;
    usage_fn usage;
    resv_fn resv;
    step_fn step;
    live_step_fn live_step;
    node_state_fn node_state;
    alloc_fn alloc;
};

static int visit_job(sqlite3_stmt *st, void *fn, void *data)
{
    struct sched_job_row r;

    read_job(st, &r);
    return ((struct fn_box *)fn)->job(&r, data);
}

static int visit_task(sqlite3_stmt *st, void *fn, void *data)
{
    struct sched_task_row r;

    read_task(st, &r);
    return ((struct fn_box *)fn)->task(&r, data);
}

static int visit_node(sqlite3_stmt *st, void *fn, void *data)
{
    struct sched_node_row r = {
        .name = col_text(st, 0),
        .state = col_text(st, 1),
        .last_seen_ms = col_u64(st, 2),
        .topology = sqlite3_column_blob(st, 3),
        .topology_len = (size_t)sqlite3_column_bytes(st, 3),
        .drain_reason = col_text(st, 4),
    };

    return ((struct fn_box *)fn)->node(&r, data);
}

static int visit_event(sqlite3_stmt *st, void *fn, void *data)
{
    return ((struct fn_box *)fn)
        ->event(col_u64(st, 0), col_u64(st, 1), col_text(st, 2), col_text(st, 3), col_text(st, 4),
                data);
}

int sched_store_load_jobs(struct sched_store *store, job_fn fn, void *data)
{
    struct fn_box box = {.job = fn};

    return walk(store, ST_LOAD_JOBS, visit_job, &box, data);
}

int sched_store_load_tasks(struct sched_store *store, task_fn fn, void *data)
{
    struct fn_box box = {.task = fn};

    return walk(store, ST_LOAD_TASKS, visit_task, &box, data);
}

int sched_store_load_nodes(struct sched_store *store, node_fn fn, void *data)
{
    struct fn_box box = {.node = fn};

    return walk(store, ST_LOAD_NODES, visit_node, &box, data);
}

int sched_store_load_events(struct sched_store *store, uint64_t job_id, event_fn fn, void *data)
{
    struct fn_box box = {.event = fn};

    sqlite3_bind_int64(store->stmt[ST_LOAD_EVENTS], 1, (sqlite3_int64)job_id);
    return walk(store, ST_LOAD_EVENTS, visit_event, &box, data);
}

int sched_store_put_usage(struct sched_store *store, const char *account, const char *user,
                          double usage, uint64_t at_ms)
{
    sqlite3_stmt *st = store->stmt[ST_PUT_USAGE];

    bind_text(st, 1, account);
    bind_text(st, 2, user);
    sqlite3_bind_double(st, 3, usage);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)at_ms);
    return run(store, ST_PUT_USAGE);
}

static int visit_usage(sqlite3_stmt *st, void *fn, void *data)
{
    return ((struct fn_box *)fn)
        ->usage(col_text(st, 0), col_text(st, 1), sqlite3_column_double(st, 2), col_u64(st, 3),
                data);
}

int sched_store_load_usage(struct sched_store *store, usage_fn fn, void *data)
{
    struct fn_box box = {.usage = fn};

    return walk(store, ST_LOAD_USAGE, visit_usage, &box, data);
}

int sched_store_put_resv(struct sched_store *store, const char *name, const void *spec, size_t len)
{
    sqlite3_stmt *st = store->stmt[ST_PUT_RESV];

    bind_text(st, 1, name);
    bind_blob(st, 2, spec, len);
    return run(store, ST_PUT_RESV);
}

int sched_store_delete_resv(struct sched_store *store, const char *name)
{
    bind_text(store->stmt[ST_DELETE_RESV], 1, name);
    return run(store, ST_DELETE_RESV);
}

static int visit_resv(sqlite3_stmt *st, void *fn, void *data)
{
    const void *spec = sqlite3_column_blob(st, 1);

    return ((struct fn_box *)fn)
        ->resv(col_text(st, 0), spec != NULL ? spec : "", (size_t)sqlite3_column_bytes(st, 1),
               data);
}

int sched_store_load_resvs(struct sched_store *store, resv_fn fn, void *data)
{
    struct fn_box box = {.resv = fn};

    return walk(store, ST_LOAD_RESVS, visit_resv, &box, data);
}

/* --- reads of part of the state (forgotten jobs: scheduler.min_job_age) ----------------- */

/* Ids are SQLite integers: beyond INT64_MAX means "no bound". */
static sqlite3_int64 id_bound(uint64_t id)
{
    return id > (uint64_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)id;
}

static void bind_range(sqlite3_stmt *st, uint64_t first, uint64_t last)
{
    sqlite3_bind_int64(st, 1, id_bound(first));
    sqlite3_bind_int64(st, 2, id_bound(last));
}

int sched_store_load_live_jobs(struct sched_store *store, uint64_t ended_since_ms, job_fn fn,
                               void *data)
{
    struct fn_box box = {.job = fn};

    sqlite3_bind_int64(store->stmt[ST_LOAD_LIVE_JOBS], 1, id_bound(ended_since_ms));
    return walk(store, ST_LOAD_LIVE_JOBS, visit_job, &box, data);
}

int sched_store_load_jobs_range(struct sched_store *store, uint64_t first, uint64_t last, job_fn fn,
                                void *data)
{
    struct fn_box box = {.job = fn};

    bind_range(store->stmt[ST_LOAD_JOBS_RANGE], first, last);
    return walk(store, ST_LOAD_JOBS_RANGE, visit_job, &box, data);
}

int sched_store_load_tasks_range(struct sched_store *store, uint64_t first, uint64_t last,
                                 task_fn fn, void *data)
{
    struct fn_box box = {.task = fn};

    bind_range(store->stmt[ST_LOAD_TASKS_RANGE], first, last);
    return walk(store, ST_LOAD_TASKS_RANGE, visit_task, &box, data);
}

int sched_store_load_events_range(struct sched_store *store, uint64_t first, uint64_t last,
                                  event_fn fn, void *data)
{
    struct fn_box box = {.event = fn};

    bind_range(store->stmt[ST_LOAD_EVENTS_RANGE], first, last);
    return walk(store, ST_LOAD_EVENTS_RANGE, visit_event, &box, data);
}

int sched_store_load_finished(struct sched_store *store, const struct sched_store_job_filter *f,
                              job_fn fn, void *data)
{
    sqlite3_stmt *st = store->stmt[ST_LOAD_FINISHED];
    struct fn_box box = {.job = fn};

    if (f->max == 0)
        return 0;
    sqlite3_bind_int64(st, 1, id_bound(f->ended_before_ms));
    bind_text(st, 2, f->name != NULL && f->name[0] != '\0' ? f->name : NULL);
    bind_text(st, 3, f->user != NULL && f->user[0] != '\0' ? f->user : NULL);
    sqlite3_bind_int64(st, 4, f->states);
    sqlite3_bind_int64(st, 5, f->max);
    return walk(store, ST_LOAD_FINISHED, visit_job, &box, data);
}

/* --- job steps (sacct's step rows) -------------------------------------------------------- */

int sched_store_put_step(struct sched_store *store, const struct sched_step_row *r)
{
    sqlite3_stmt *st = store->stmt[ST_PUT_STEP];

    sqlite3_bind_int64(st, 1, (sqlite3_int64)r->job_id);
    sqlite3_bind_int64(st, 2, r->step);
    sqlite3_bind_int64(st, 3, r->attempt);
    bind_text(st, 4, r->name != NULL ? r->name : "");
    bind_text(st, 5, r->nodelist != NULL ? r->nodelist : "");
    sqlite3_bind_int64(st, 6, r->nnodes);
    sqlite3_bind_int64(st, 7, r->ntasks);
    sqlite3_bind_int(st, 8, r->state);
    sqlite3_bind_int(st, 9, r->exit_code);
    sqlite3_bind_int(st, 10, r->signaled);
    sqlite3_bind_int(st, 11, r->term_signal);
    sqlite3_bind_int64(st, 12, (sqlite3_int64)r->start_ms);
    sqlite3_bind_int64(st, 13, (sqlite3_int64)r->end_ms);
    sqlite3_bind_int64(st, 14, id_bound(r->max_rss_kib));
    bind_text(st, 15, r->max_rss_node != NULL ? r->max_rss_node : "");
    sqlite3_bind_int64(st, 16, r->max_rss_task);
    sqlite3_bind_int64(st, 17, id_bound(r->cpu_ms));
    sqlite3_bind_int64(st, 18, id_bound(r->suspended_ms));
    sqlite3_bind_int64(st, 19, r->cpus);
    sqlite3_bind_int64(st, 20, r->gpus);
    sqlite3_bind_int64(st, 21, id_bound(r->time_limit_s));
    return run(store, ST_PUT_STEP);
}

static int visit_step(sqlite3_stmt *st, void *fn, void *data)
{
    struct sched_step_row r = {
        .job_id = col_u64(st, 0),
        .step = (uint32_t)col_u64(st, 1),
        .attempt = (uint32_t)col_u64(st, 2),
        .name = col_text(st, 3),
        .nodelist = col_text(st, 4),
        .nnodes = (uint32_t)col_u64(st, 5),
        .ntasks = (uint32_t)col_u64(st, 6),
        .state = sqlite3_column_int(st, 7),
        .exit_code = sqlite3_column_int(st, 8),
        .signaled = sqlite3_column_int(st, 9) != 0,
        .term_signal = sqlite3_column_int(st, 10),
        .start_ms = col_u64(st, 11),
        .end_ms = col_u64(st, 12),
        .max_rss_kib = col_u64(st, 13),
        .max_rss_node = col_text(st, 14),
        .max_rss_task = (uint32_t)col_u64(st, 15),
        .cpu_ms = col_u64(st, 16),
        .suspended_ms = col_u64(st, 17),
        .cpus = (uint32_t)col_u64(st, 18),
        .gpus = (uint32_t)col_u64(st, 19),
        .time_limit_s = col_u64(st, 20),
    };

    return ((struct fn_box *)fn)->step(&r, data);
}

int sched_store_load_steps_range(struct sched_store *store, uint64_t first, uint64_t last,
                                 step_fn fn, void *data)
{
    struct fn_box box = {.step = fn};

    bind_range(store->stmt[ST_LOAD_STEPS_RANGE], first, last);
    return walk(store, ST_LOAD_STEPS_RANGE, visit_step, &box, data);
}

int sched_store_end_running_steps(struct sched_store *store, int state, uint64_t end_ms)
{
    sqlite3_bind_int(store->stmt[ST_END_RUNNING_STEPS], 1, state);
    sqlite3_bind_int64(store->stmt[ST_END_RUNNING_STEPS], 2, id_bound(end_ms));
    return run(store, ST_END_RUNNING_STEPS);
}

/* Runs statement which (bound to job_id and step as ?1 and ?2). */
static int run_step_key(struct sched_store *store, int which, uint64_t job_id, uint32_t step)
{
    sqlite3_bind_int64(store->stmt[which], 1, (sqlite3_int64)job_id);
    sqlite3_bind_int64(store->stmt[which], 2, step);
    return run(store, which);
}

int sched_store_put_live_step(struct sched_store *store, uint64_t job_id, uint32_t step,
                              const void *record, size_t len)
{
    sqlite3_stmt *st = store->stmt[ST_PUT_LIVE_STEP];
    /* a new record starts without exits (a step number is not used twice, but an earlier
     * attempt's rows may have outlived a failed write) */
    int rc = run_step_key(store, ST_DELETE_LIVE_EXITS, job_id, step);

    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job_id);
    sqlite3_bind_int64(st, 2, step);
    bind_blob(st, 3, record, len);
    return run(store, ST_PUT_LIVE_STEP);
}

int sched_store_delete_live_step(struct sched_store *store, uint64_t job_id, uint32_t step)
{
    int rc = run_step_key(store, ST_DELETE_LIVE_EXITS, job_id, step);

    return rc < 0 ? rc : run_step_key(store, ST_DELETE_LIVE_STEP, job_id, step);
}

int sched_store_put_live_exit(struct sched_store *store, uint64_t job_id, uint32_t step,
                              uint32_t rank, const void *exit, size_t len)
{
    sqlite3_stmt *st = store->stmt[ST_PUT_LIVE_EXIT];

    sqlite3_bind_int64(st, 1, (sqlite3_int64)job_id);
    sqlite3_bind_int64(st, 2, step);
    sqlite3_bind_int64(st, 3, rank);
    bind_blob(st, 4, exit, len);
    return run(store, ST_PUT_LIVE_EXIT);
}

static int visit_live_step(sqlite3_stmt *st, void *fn, void *data)
{
    const void *record = sqlite3_column_blob(st, 2);

    return ((struct fn_box *)fn)
        ->live_step(col_u64(st, 0), (uint32_t)col_u64(st, 1), record != NULL ? record : "",
                    (size_t)sqlite3_column_bytes(st, 2), data);
}

int sched_store_prune_live_steps(struct sched_store *store)
{
    int rc = run(store, ST_PRUNE_LIVE_STEPS);

    return rc < 0 ? rc : run(store, ST_PRUNE_LIVE_EXITS);
}

int sched_store_load_live_steps(struct sched_store *store, live_step_fn fn, void *data)
{
    struct fn_box box = {.live_step = fn};

    return walk(store, ST_LOAD_LIVE_STEPS, visit_live_step, &box, data);
}

int sched_store_load_live_exits(struct sched_store *store, live_step_fn fn, void *data)
{
    struct fn_box box = {.live_step = fn};

    return walk(store, ST_LOAD_LIVE_EXITS, visit_live_step, &box, data);
}

/* ---- history for sreport: node availability and job allocations ---- */

int sched_store_put_node_state(struct sched_store *store, uint64_t at_ms, const char *node, bool up,
                               bool maint, uint32_t cores, uint32_t gpus)
{
    sqlite3_stmt *st = store->stmt[ST_PUT_NODE_STATE];

    sqlite3_bind_int64(st, 1, id_bound(at_ms));
    bind_text(st, 2, node);
    sqlite3_bind_int(st, 3, up);
    sqlite3_bind_int64(st, 4, cores);
    sqlite3_bind_int64(st, 5, gpus);
    sqlite3_bind_int(st, 6, maint);
    return run(store, ST_PUT_NODE_STATE);
}

int sched_store_put_alloc(struct sched_store *store, const struct sched_alloc_row *row)
{
    sqlite3_stmt *st = store->stmt[ST_PUT_ALLOC];

    sqlite3_bind_int64(st, 1, id_bound(row->job_id));
    sqlite3_bind_int64(st, 2, row->attempt);
    bind_text(st, 3, row->node);
    sqlite3_bind_int64(st, 4, row->cores);
    sqlite3_bind_int64(st, 5, row->gpus);
    sqlite3_bind_int64(st, 6, id_bound(row->start_ms));
    bind_text(st, 7, row->user);
    bind_text(st, 8, row->account);
    return run(store, ST_PUT_ALLOC);
}

int sched_store_end_allocs(struct sched_store *store, uint64_t job_id, uint64_t end_ms)
{
    sqlite3_stmt *st = store->stmt[ST_END_ALLOCS];

    sqlite3_bind_int64(st, 1, id_bound(job_id));
    sqlite3_bind_int64(st, 2, id_bound(end_ms));
    return run(store, ST_END_ALLOCS);
}

/* Runs a statement of one bound value. */
static int run_with(struct sched_store *s, enum stmt_id id, uint64_t value)
{
    sqlite3_bind_int64(s->stmt[id], 1, id_bound(value));
    return run(s, id);
}

static bool kept(const uint64_t *keep, size_t nkeep, uint64_t id)
{
    return nkeep > 0 && bsearch(&id, keep, nkeep, sizeof(id), gs_cmp_u64) != NULL;
}

/* The ids of the next batch, kept ones left out, into ids[0..*n); *last: the highest seen,
 * *seen: how many. */
static int pick(struct sched_store *s, const struct sched_store_purge *p, uint64_t *ids, size_t *n,
                uint64_t *last, size_t *seen)
{
    sqlite3_stmt *st = s->stmt[ST_PURGE_PICK];
    int rc;

    *n = *seen = 0;
    *last = p->after_id;
    sqlite3_bind_int64(st, 1, id_bound(p->after_id));
    sqlite3_bind_int64(st, 2, id_bound(p->before_ms));
    sqlite3_bind_int64(st, 3, (sqlite3_int64)p->max_jobs);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        uint64_t id = col_u64(st, 0);

        *last = id;
        (*seen)++;
        if (!kept(p->keep, p->nkeep, id))
            ids[(*n)++] = id;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? 0 : db_err(rc);
}

int sched_store_purge(struct sched_store *store, struct sched_store_purge *p)
{
    static const enum stmt_id per_job[] = {ST_PURGE_TASKS, ST_PURGE_STEPS, ST_PURGE_ALLOCS,
                                           ST_PURGE_EVENTS, ST_PURGE_JOB};
    uint64_t *ids, next_id = 0;
    size_t n = 0, seen = 0;
    int rc;

    p->deleted = 0;
    p->done = false;
    if (p->max_jobs == 0)
        return -EINVAL;
    ids = malloc(p->max_jobs * sizeof(*ids));
    if (ids == NULL)
        return -ENOMEM;
    rc = pick(store, p, ids, &n, &p->last_id, &seen);
    /* The highest id ever given stays known, whatever goes (ST_NEXT_ID). */
    if (rc == 0 && n > 0)
        rc = sched_store_next_job_id(store, &next_id);
    if (rc == 0 && n > 0)
        rc = run_with(store, ST_PURGE_FLOOR, next_id - 1);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        for (size_t k = 0; rc == 0 && k < sizeof(per_job) / sizeof(per_job[0]); k++)
            rc = run_with(store, per_job[k], ids[i]);
        p->deleted += rc == 0;
    }
    free(ids);
    p->done = rc == 0 && seen < p->max_jobs; /* no more after this batch */
    /* What no job owns, once per run: with its last batch. */
    if (rc == 0 && p->done)
        rc = run_with(store, ST_PURGE_UNOWNED_EVENTS, p->before_ms);
    if (rc == 0 && p->done)
        rc = run_with(store, ST_PURGE_HISTORY_KEEP, p->before_ms);
    if (rc == 0 && p->done)
        rc = run_with(store, ST_PURGE_HISTORY, p->before_ms);
    return rc;
}

static int visit_node_state(sqlite3_stmt *st, void *fn, void *data)
{
    return ((struct fn_box *)fn)
        ->node_state(col_u64(st, 0), col_text(st, 1), sqlite3_column_int(st, 2) != 0,
                     sqlite3_column_int(st, 5) != 0, (uint32_t)col_u64(st, 3),
                     (uint32_t)col_u64(st, 4), data);
}

int sched_store_load_node_states(struct sched_store *store, uint64_t before_ms, node_state_fn fn,
                                 void *data)
{
    struct fn_box box = {.node_state = fn};

    sqlite3_bind_int64(store->stmt[ST_LOAD_NODE_STATES], 1, id_bound(before_ms));
    return walk(store, ST_LOAD_NODE_STATES, visit_node_state, &box, data);
}

static int visit_alloc(sqlite3_stmt *st, void *fn, void *data)
{
    struct sched_alloc_row r = {.node = col_text(st, 0),
                                .cores = (uint32_t)col_u64(st, 1),
                                .gpus = (uint32_t)col_u64(st, 2),
                                .start_ms = col_u64(st, 3),
                                .end_ms = col_u64(st, 4),
                                .user = col_text(st, 5),
                                .account = col_text(st, 6)};

    return ((struct fn_box *)fn)->alloc(&r, data);
}

int sched_store_load_allocs(struct sched_store *store, uint64_t from_ms, uint64_t to_ms,
                            alloc_fn fn, void *data)
{
    struct fn_box box = {.alloc = fn};

    sqlite3_bind_int64(store->stmt[ST_LOAD_ALLOCS], 1, id_bound(from_ms));
    sqlite3_bind_int64(store->stmt[ST_LOAD_ALLOCS], 2, id_bound(to_ms));
    return walk(store, ST_LOAD_ALLOCS, visit_alloc, &box, data);
}
