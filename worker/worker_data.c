/*
 * worker_data.c: the node's shard cache on a worker (issue 19, docs/data.md): what it holds
 * reported to gschedd, shards staged into it for jobs and for `gsched data warm`, served to
 * peers, and a job's data plan written before its tasks start.
 *
 * The cache (sharding/cache.h) lives under worker.data_dir and belongs to the loop thread;
 * copies run one at a time in libuv's pool (shard_cache_copy_run touches no cache state),
 * from a peer's data port (worker/peer_fetch.h) when a node of the job holds the shard, else
 * from the dataset's source directory, which must be readable by the job's user: the worker
 * is root, so it checks the permission bits itself before it copies anything.
 *
 * Holdings go to gschedd in full after each registration and, within HOLDINGS_DELAY_MS of a
 * change, as the datasets whose generation moved (and those evicted whole).
 *
 * A LaunchTasks with a dataset (step 0) waits here while its node's shards are staged:
 *   1. the dataset is added to the cache from its source (its manifest copied) and pinned
 *      until the job's last task here ends; its id must be the one the job was submitted
 *      with, else the dataset changed since and the launch fails saying so;
 *   2. the plan file is built from what gschedd sent (every allocation node's holdings, the
 *      seed and tolerance), the same on every node, so every node computes the same shard
 *      plan (sharding/planner.h) on its own: this node stages the train shards its ranks
 *      read that it lacks, and every val shard it lacks;
 *   3. once they are in, the plan file is written (mode 0644, the worker's script dir), a
 *      JobDataReport tells gschedd what was local, fetched from peers, copied from the
 *      source, and the tasks start with GSCHED_DATA_DIR (the cached dataset) and
 *      GSCHED_DATA_PLAN (the plan file). A copy that fails fails the launch, naming the shard.
 * A SignalTasks ending the job meanwhile drops the launch (its tasks fail to start, which is
 * how gschedd hears of it); the copy in flight finishes into the cache.
 */
#define _GNU_SOURCE /* getgrouplist */

#include "worker/worker_internal.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "sharding/cache.h"
#include "sharding/planfile.h"
#include "sharding/planner.h"
#include "worker/peer.h"
#include "worker/peer_fetch.h"

#define HOLDINGS_DELAY_MS 200
#define PEER_TIMEOUT_MS 10000
#define MAX_GROUPS 256

/* One shard to copy into the cache. */
struct copy {
    struct copy *next;
    struct wrk_data *d;
    uv_work_t req;
    struct shard_cache_copy job;
    char dataset[SHARD_DATASET_ID_SIZE];
    size_t shard;
    struct stage *owner;   /* the launch waiting for it; NULL for a warm */
    char source[PATH_MAX]; /* SOURCE/<file> */
    char peer_host[256];   /* "" none */
    uint16_t peer_port;
    uid_t uid; /* whose permission reads the source */
    gid_t gid;
    char user[64];
    bool from_peer;       /* the copy came from the peer */
    char peer_error[256]; /* why the peer's copy failed, "" when it did not */
    uint64_t bytes;       /* the shard's file size, for the launch's figures */
    bool val;             /* a val shard of its owner's */
    int result;
    struct gs_error err;
};

/* A launch waiting for its shards. */
struct stage {
    struct stage *next;
    uint64_t job_id;
    uint32_t attempt;
    uint64_t request_id;
    Gs__LaunchTasks *msg; /* owned copy */
    char dataset[SHARD_DATASET_ID_SIZE];
    char plan_path[PATH_MAX];
    char data_dir[PATH_MAX];
    struct shard_planfile *pf;
    size_t pending;
    int failed;
    char why[512];
    bool cancelled;
    uint64_t started_ms;
    uint64_t bytes_local, bytes_peer, bytes_source;
    uint32_t shards_read, shards_fetched;
    struct step_wait *steps; /* srun steps of the job that came meanwhile */
    bool stream;             /* started its tasks at once; copies go on behind them */
    bool launched;
    size_t val_pending;   /* of pending, val shards (a streaming job waits for those) */
    uint64_t launched_ms; /* mono: when a streaming job's tasks started */
};

/* A running job's hold on its dataset and plan file, until its last task here ends. */
struct job_pin {
    struct job_pin *next;
    uint64_t job_id;
    char dataset[SHARD_DATASET_ID_SIZE];
    char plan_path[PATH_MAX];
    char data_dir[PATH_MAX];
    /* A leader job's node (batch script, mpirun): its srun steps come and go, so the pin
     * lasts until the job's end (SignalTasks of all its steps), not its tasks'. */
    bool until_end;
    char failed[512]; /* staging failed: its steps fail with this; "" when staged */
    bool stream;      /* [data] stage = "stream": its tasks run while its shards arrive */
    uid_t uid;        /* the job's user: who may ask for its shards (DataFetchRequest) */
    gid_t gid;
    char user[64];
    char source[PATH_MAX];
};

/* A srun step's launch waiting for its job's data on this node. */
struct step_wait {
    struct step_wait *next;
    Gs__LaunchTasks *msg; /* owned copy */
    uint64_t request_id;
};

struct wrk_data {
    struct wrk_ctx *w;
    struct shard_cache *cache;
    struct wrk_peer_server *peer;
    uint64_t rate;
    struct copy *queue, *queue_tail;
    struct copy *running;
    struct stage *stages;
    struct job_pin *pins;
    uint64_t reported_gen; /* the cache generation the last report covered */
    bool report_full;      /* the next report replaces gschedd's view */
    uv_timer_t report_timer;
    bool closing;
    /* Where each dataset was last staged from, for the reports (memory only: "" after a
     * restart until it is used again). */
    struct source_of {
        char id[SHARD_DATASET_ID_SIZE];
        char *dir;
    } * sources;
    size_t nsources;
};

static void kick(struct wrk_data *d);
static void stage_check(struct wrk_data *d, struct stage *st);
static void stream_failed(struct wrk_data *d, uint64_t job_id, const char *why);

/* ---- permissions: the worker is root, the source is the user's ---- */

static bool in_groups(gid_t gid, const gid_t *groups, int n)
{
    for (int i = 0; i < n; i++) {
        if (groups[i] == gid)
            return true;
    }
    return false;
}

static bool allowed(const struct stat *st, uid_t uid, const gid_t *groups, int ngroups,
                    mode_t want_user)
{
    mode_t want_group = want_user >> 3, want_other = want_user >> 6;

    if (uid == 0)
        return true;
    if (st->st_uid == uid)
        return (st->st_mode & want_user) == want_user;
    if (in_groups(st->st_gid, groups, ngroups))
        return (st->st_mode & want_group) == want_group;
    return (st->st_mode & want_other) == want_other;
}

/*
 * Whether user (uid, gid, name) may read path: every directory above it searchable and
 * the file itself readable (a directory: readable and searchable), by its permission bits.
 */
static bool user_may_read(const char *path, uid_t uid, gid_t gid, const char *user)
{
    gid_t groups[MAX_GROUPS];
    int ngroups = MAX_GROUPS;
    char walk[PATH_MAX];
    struct stat st;

    if (uid == 0)
        return true;
    if (user == NULL || user[0] == '\0' || getgrouplist(user, gid, groups, &ngroups) < 0) {
        groups[0] = gid;
        ngroups = 1;
    }
    if (snprintf(walk, sizeof(walk), "%s", path) >= (int)sizeof(walk) || walk[0] != '/')
        return false;
    for (char *slash = strchr(walk + 1, '/'); slash != NULL; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (stat(walk, &st) < 0 || !allowed(&st, uid, groups, ngroups, S_IXUSR)) {
            *slash = '/';
            return false;
        }
        *slash = '/';
    }
    if (stat(path, &st) < 0)
        return false;
    return allowed(&st, uid, groups, ngroups, S_ISDIR(st.st_mode) ? S_IRUSR | S_IXUSR : S_IRUSR);
}

/* ---- holdings reports ---- */

static const char *source_of(const struct wrk_data *d, const char *id)
{
    for (size_t i = 0; i < d->nsources; i++) {
        if (strcmp(d->sources[i].id, id) == 0)
            return d->sources[i].dir;
    }
    return "";
}

/* Remembers dir as where dataset id comes from (the latest wins). */
static void remember_source(struct wrk_data *d, const char *id, const char *dir)
{
    struct source_of *grown;
    char *copy = strdup(dir);

    if (copy == NULL)
        return;
    for (size_t i = 0; i < d->nsources; i++) {
        if (strcmp(d->sources[i].id, id) == 0) {
            free(d->sources[i].dir);
            d->sources[i].dir = copy;
            return;
        }
    }
    grown = realloc(d->sources, (d->nsources + 1) * sizeof(*grown));
    if (grown == NULL) {
        free(copy);
        return;
    }
    d->sources = grown;
    snprintf(d->sources[d->nsources].id, sizeof(d->sources[d->nsources].id), "%s", id);
    d->sources[d->nsources++].dir = copy;
}

static int holding_msg(struct wrk_data *d, size_t ds, Gs__DatasetHolding *m, uint8_t **bits)
{
    struct shard_cache_dataset_info info;
    size_t len;

    if (shard_cache_dataset(d->cache, ds, &info) < 0)
        return -EINVAL;
    len = (info.nshards + 7) / 8;
    *bits = calloc(len + 1, 1);
    if (*bits == NULL)
        return -ENOMEM;
    shard_cache_bitmap(d->cache, ds, *bits, len);
    gs__dataset_holding__init(m);
    m->dataset = (char *)info.id;
    m->shards = (uint32_t)info.nshards;
    m->held.data = *bits;
    m->held.len = len;
    m->bytes_held = info.bytes_held;
    m->bytes_total = info.bytes_total;
    m->last_used_ms = info.last_used_ms;
    m->source = (char *)source_of(d, info.id);
    return 0;
}

/* Sends what changed since the last report (everything when full); 0 or < 0. */
static int send_holdings(struct wrk_data *d)
{
    Gs__DataHoldings m = GS__DATA_HOLDINGS__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    size_t n = shard_cache_count(d->cache), k = 0, nremoved = 0;
    Gs__DatasetHolding *h = calloc(n + 1, sizeof(*h));
    Gs__DatasetHolding **ptrs = calloc(n + 1, sizeof(*ptrs));
    uint8_t **bits = calloc(n + 1, sizeof(*bits));
    char(*removed)[SHARD_DATASET_ID_SIZE] = NULL;
    char *removed_ptrs[64];
    uint64_t gen = shard_cache_generation(d->cache);
    int rc = -ENOMEM;

    if (h == NULL || ptrs == NULL || bits == NULL)
        goto out;
    removed = calloc(64, sizeof(*removed));
    if (removed == NULL)
        goto out;
    while (nremoved < 64 && shard_cache_pop_removed(d->cache, removed[nremoved])) {
        removed_ptrs[nremoved] = removed[nremoved];
        nremoved++;
    }
    for (size_t ds = 0; ds < n; ds++) {
        struct shard_cache_dataset_info info;

        if (shard_cache_dataset(d->cache, ds, &info) < 0 ||
            (!d->report_full && info.generation <= d->reported_gen))
            continue;
        rc = holding_msg(d, ds, &h[k], &bits[k]);
        if (rc < 0)
            goto out;
        ptrs[k] = &h[k];
        k++;
    }
    m.full = d->report_full;
    m.n_datasets = k;
    m.datasets = ptrs;
    m.n_removed = nremoved;
    m.removed = removed_ptrs;
    m.used_bytes = shard_cache_bytes_used(d->cache);
    m.cap_bytes = shard_cache_cap(d->cache);
    m.data_dir = (char *)shard_cache_root(d->cache);
    env.body_case = GS__ENVELOPE__BODY_DATA_HOLDINGS;
    env.data_holdings = &m;
    rc = 0;
    if (k > 0 || nremoved > 0 || d->report_full)
        rc = wrk_send(d->w, &env);
    if (rc == 0) {
        d->reported_gen = gen;
        d->report_full = false;
    }
    if (nremoved == 64) /* more are queued: soon */
        uv_timer_start(&d->report_timer, NULL, 0, 0);
out:
    for (size_t i = 0; bits != NULL && i < k; i++)
        free(bits[i]);
    free(bits);
    free(h);
    free(ptrs);
    free(removed);
    return rc;
}

static void on_report_timer(uv_timer_t *t)
{
    struct wrk_data *d = t->data;

    if (d->w->registered && send_holdings(d) < 0)
        GS_LOG(GS_LOG_DEBUG, "data holdings report not sent (retried on the next change)");
}

static void holdings_changed(struct wrk_data *d)
{
    if (!uv_is_active((uv_handle_t *)&d->report_timer))
        uv_timer_start(&d->report_timer, on_report_timer, HOLDINGS_DELAY_MS, 0);
}

void wrk_data_registered(struct wrk_ctx *w)
{
    if (w->data == NULL)
        return;
    w->data->report_full = true;
    if (send_holdings(w->data) < 0)
        GS_LOG(GS_LOG_WARN, "data holdings not reported after registering");
}

/* ---- copies ---- */

static int peer_read(uint64_t offset, void *buf, size_t len, size_t *ret_got, struct gs_error *err,
                     void *data)
{
    struct wrk_peer_fetch_reader *r = data;

    return wrk_peer_fetch_read(r->fetch, r->dataset, r->file, offset, buf, len, ret_got, err);
}

/* A copy from the peer; on failure the source directory is tried by the caller. */
static int copy_from_peer(struct copy *c, const char *file)
{
    struct wrk_peer_fetch *f = NULL;
    struct wrk_peer_fetch_reader r;
    int rc = wrk_peer_fetch_open(c->peer_host, c->peer_port, &c->d->w->auth_key, c->d->w->node_name,
                                 PEER_TIMEOUT_MS, &f, &c->err);

    if (rc < 0)
        return rc;
    r.fetch = f;
    r.dataset = c->dataset;
    r.file = file;
    c->job.read = peer_read;
    c->job.read_data = &r;
    c->job.source_path = NULL;
    rc = shard_cache_copy_run(&c->job, &c->err);
    wrk_peer_fetch_close(f);
    return rc;
}

/* In the pool: the peer first when there is one, else (or after it failed) the source. */
static void copy_work(uv_work_t *req)
{
    struct copy *c = req->data;
    const char *file = strrchr(c->job.path, '/') + 1;

    if (c->peer_host[0] != '\0') {
        c->result = copy_from_peer(c, file);
        if (c->result == 0) {
            c->from_peer = true;
            return;
        }
        snprintf(c->peer_error, sizeof(c->peer_error), "%s", c->err.msg); /* logged on the loop */
    }
    if (!user_may_read(c->source, c->uid, c->gid, c->user)) {
        c->result =
            gs_error_set(&c->err, -EACCES, 0, 0, "%s: user %s may not read it", c->source, c->user);
        return;
    }
    c->job.read = NULL;
    c->job.read_data = NULL;
    c->job.source_path = c->source;
    gs_error_clear(&c->err);
    c->result = shard_cache_copy_run(&c->job, &c->err);
}

static void copy_free(struct copy *c)
{
    free(c);
}

/* A copy of st's is over: c->result, or already held when its turn came (was_local). */
static void account(struct stage *st, const struct copy *c, bool was_local)
{
    st->pending--;
    if (c->val)
        st->val_pending--;
    if (was_local) {
        st->shards_fetched--;
        st->bytes_local += c->bytes;
        return;
    }
    if (c->result < 0) {
        if (st->failed == 0) {
            st->failed = c->result;
            snprintf(st->why, sizeof(st->why), "staging its data: %s", c->err.msg);
        }
        return;
    }
    if (c->from_peer)
        st->bytes_peer += c->bytes;
    else
        st->bytes_source += c->bytes;
}

static void copy_done(uv_work_t *req, int status)
{
    struct copy *c = req->data;
    struct wrk_data *d = c->d;
    uint64_t copied = c->job.bytes_copied;

    if (status < 0 && c->result == 0)
        c->result = status;
    c->bytes = c->job.bytes; /* stage_end zeroes the job */
    d->running = NULL;
    shard_cache_stage_end(d->cache, &c->job, c->result);
    if (c->peer_error[0] != '\0')
        GS_LOG(GS_LOG_WARN,
               "dataset=%s shard=%zu peer=%s:%u error=\"%s\" peer copy failed, "
               "copying from the source",
               c->dataset, c->shard, c->peer_host, (unsigned)c->peer_port, c->peer_error);
    if (c->result < 0)
        GS_LOG(GS_LOG_WARN, "dataset=%s shard=%zu error=\"%s\" shard not staged", c->dataset,
               c->shard, c->err.msg);
    else
        GS_LOG(GS_LOG_DEBUG, "dataset=%s shard=%zu bytes=%llu from=%s shard staged", c->dataset,
               c->shard, (unsigned long long)copied, c->from_peer ? c->peer_host : "source");
    holdings_changed(d);
    if (c->owner != NULL) {
        account(c->owner, c, false);
        if (c->result < 0 && c->owner->launched) /* its loader is told at its next fetch */
            stream_failed(d, c->owner->job_id, c->owner->why);
        stage_check(d, c->owner);
    }
    copy_free(c);
    kick(d);
    wrk_handle_closed(d->w); /* the work request; may free the worker when stopping */
}

/* Begins the next queued copy, if none runs. */
static void kick(struct wrk_data *d)
{
    while (d->running == NULL && d->queue != NULL && !d->closing) {
        struct copy *c = d->queue;
        struct gs_error err = {0};
        size_t ds;
        int rc;

        d->queue = c->next;
        if (d->queue == NULL)
            d->queue_tail = NULL;
        rc = shard_cache_find(d->cache, c->dataset, &ds);
        if (rc == 0 && shard_cache_holds(d->cache, ds, c->shard)) {
            rc = 1; /* staged meanwhile (a warm and a job asked for it) */
        } else if (rc == 0) {
            rc = shard_cache_trim(d->cache, shard_cache_shard_bytes(d->cache, ds, c->shard), NULL,
                                  NULL, NULL, &err);
            if (rc == 0)
                rc = shard_cache_stage_begin(d->cache, ds, c->shard, &c->job, &err);
        } else {
            gs_error_set(&err, rc, 0, 0, "dataset %s is no longer cached", c->dataset);
        }
        if (rc != 0) {
            c->result = rc > 0 ? 0 : rc;
            c->err = err;
            if (c->owner != NULL) {
                if (rc > 0)
                    c->bytes = shard_cache_shard_bytes(d->cache, ds, c->shard);
                account(c->owner, c, rc > 0);
                stage_check(d, c->owner);
            }
            copy_free(c);
            continue;
        }
        c->job.rate_bytes_per_s = d->rate;
        c->req.data = c;
        d->running = c;
        rc = uv_queue_work(d->w->loop, &c->req, copy_work, copy_done);
        if (rc < 0) {
            d->running = NULL;
            c->result = rc;
            gs_error_set(&c->err, rc, 0, 0, "cannot queue the copy: %s", uv_strerror(rc));
            shard_cache_stage_end(d->cache, &c->job, rc);
            if (c->owner != NULL) {
                account(c->owner, c, false);
                stage_check(d, c->owner);
            }
            copy_free(c);
            continue;
        }
        d->w->open_handles++; /* until copy_done */
    }
}

static int enqueue(struct wrk_data *d, const char *dataset, size_t shard, const char *source_dir,
                   const char *file, const char *peer_host, uint32_t peer_port,
                   const Gs__UserIdentity *user, struct stage *owner)
{
    struct copy *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return -ENOMEM;
    c->d = d;
    snprintf(c->dataset, sizeof(c->dataset), "%s", dataset);
    c->shard = shard;
    c->owner = owner;
    if (snprintf(c->source, sizeof(c->source), "%s/%s", source_dir, file) >=
        (int)sizeof(c->source)) {
        free(c);
        return -ENAMETOOLONG;
    }
    if (peer_host != NULL && peer_port > 0 && peer_port <= 65535) {
        snprintf(c->peer_host, sizeof(c->peer_host), "%s", peer_host);
        c->peer_port = (uint16_t)peer_port;
    }
    c->uid = user != NULL ? user->uid : 0;
    c->gid = user != NULL ? user->gid : 0;
    snprintf(c->user, sizeof(c->user), "%s", user != NULL && user->username ? user->username : "");
    if (d->queue_tail != NULL)
        d->queue_tail->next = c;
    else
        d->queue = c;
    d->queue_tail = c;
    if (owner != NULL)
        owner->pending++;
    return 0;
}

/* ---- datasets: add from a source as a user ---- */

/* Adds source's dataset to the cache for user; 0 with *ret_ds, or < 0 with why. */
static int add_dataset(struct wrk_data *d, const char *source, const Gs__UserIdentity *user,
                       size_t *ret_ds, char *why, size_t size)
{
    struct gs_error err = {0};
    char manifest[PATH_MAX];
    int rc;

    snprintf(manifest, sizeof(manifest), "%s/%s", source, SHARD_MANIFEST_FILE);
    if (!user_may_read(source, user->uid, user->gid, user->username) ||
        !user_may_read(manifest, user->uid, user->gid, user->username)) {
        snprintf(why, size, "%.400s: user %.60s may not read it (or it does not exist)", manifest,
                 user->username != NULL ? user->username : "?");
        return -EACCES;
    }
    rc = shard_cache_add_dataset(d->cache, source, ret_ds, &err);
    if (rc < 0) {
        snprintf(why, size, "%s", err.msg);
    } else {
        struct shard_cache_dataset_info info;

        if (shard_cache_dataset(d->cache, *ret_ds, &info) == 0)
            remember_source(d, info.id, source);
        holdings_changed(d);
    }
    return rc;
}

/* ---- gsched data warm / evict ---- */

static void warm(struct wrk_data *d, const Gs__DataCommand *cmd)
{
    static const Gs__UserIdentity nobody = GS__USER_IDENTITY__INIT;
    const Gs__UserIdentity *user = cmd->user != NULL ? cmd->user : &nobody;
    struct shard_cache_dataset_info info;
    char why[512];
    size_t ds, queued = 0;

    if (add_dataset(d, cmd->source, user, &ds, why, sizeof(why)) < 0) {
        GS_LOG(GS_LOG_WARN, "dataset=%s source=%s error=\"%s\" warm refused", cmd->dataset,
               cmd->source, why);
        return;
    }
    shard_cache_dataset(d->cache, ds, &info);
    if (strcmp(info.id, cmd->dataset) != 0) {
        GS_LOG(GS_LOG_WARN, "dataset=%s source=%s found=%s warm refused: the dataset changed",
               cmd->dataset, cmd->source, info.id);
        return;
    }
    for (size_t i = 0; i < info.nshards; i++) {
        if (shard_cache_holds(d->cache, ds, i))
            continue;
        if (enqueue(d, info.id, i, cmd->source, info.manifest->shards[i].file, NULL, 0, user,
                    NULL) == 0)
            queued++;
    }
    GS_LOG(GS_LOG_INFO, "dataset=%s source=%s shards=%zu queued=%zu uid=%u warm", info.id,
           cmd->source, info.nshards, queued, user->uid);
    kick(d);
}

static void evict(struct wrk_data *d, const Gs__DataCommand *cmd)
{
    struct gs_error err = {0};
    size_t ds;
    int rc = shard_cache_find(d->cache, cmd->dataset, &ds);

    if (rc == 0)
        rc = shard_cache_evict(d->cache, ds, SHARD_CACHE_ALL, &err);
    if (rc < 0 && rc != -ENOENT) {
        GS_LOG(GS_LOG_WARN, "dataset=%s error=\"%s\" not evicted", cmd->dataset,
               rc == -EBUSY ? "a running job reads it" : err.msg);
        return;
    }
    GS_LOG(GS_LOG_INFO, "dataset=%s found=%d evicted", cmd->dataset, rc == 0);
    holdings_changed(d);
}

void wrk_data_command(struct wrk_ctx *w, const Gs__DataCommand *cmd)
{
    if (w->data == NULL) {
        GS_LOG(GS_LOG_WARN, "dataset=%s this node keeps no data cache (worker.data_dir)",
               cmd->dataset != NULL ? cmd->dataset : "");
        return;
    }
    if (cmd->dataset == NULL || !shard_dataset_id_valid(cmd->dataset))
        return;
    if (cmd->op == GS__DATA_OP__DATA_OP_WARM && cmd->source != NULL && cmd->source[0] == '/')
        warm(w->data, cmd);
    else if (cmd->op == GS__DATA_OP__DATA_OP_EVICT)
        evict(w->data, cmd);
}

/* ---- launches with a dataset ---- */

static void stage_free(struct stage *st)
{
    if (st == NULL)
        return;
    while (st->steps != NULL) {
        struct step_wait *sw = st->steps;

        st->steps = sw->next;
        gs__launch_tasks__free_unpacked(sw->msg, NULL);
        free(sw);
    }
    if (st->msg != NULL)
        gs__launch_tasks__free_unpacked(st->msg, NULL);
    shard_planfile_free(st->pf);
    free(st);
}

static void unlink_stage(struct wrk_data *d, struct stage *st)
{
    for (struct stage **p = &d->stages; *p != NULL; p = &(*p)->next) {
        if (*p == st) {
            *p = st->next;
            return;
        }
    }
}

static void unpin(struct wrk_data *d, const char *dataset)
{
    size_t ds;

    if (shard_cache_find(d->cache, dataset, &ds) == 0)
        shard_cache_unpin_dataset(d->cache, ds);
}

/* The allocation node of this worker, or -1. */
static int my_node(const struct wrk_ctx *w, const Gs__LaunchTasks *m)
{
    for (size_t i = 0; i < m->n_allocation; i++) {
        if (strcmp(m->allocation[i]->node_name, w->node_name) == 0)
            return (int)i;
    }
    return -1;
}

/* The plan file's content from the launch: ranks by node, each node's holdings. */
static int build_planfile(const Gs__LaunchTasks *m, struct shard_planfile **ret)
{
    const Gs__JobLaunchData *ld = m->data;
    struct shard_planfile *pf = calloc(1, sizeof(*pf));
    uint32_t nranks = 0;
    int rc = -ENOMEM;

    if (pf == NULL)
        return -ENOMEM;
    /* The ranks as the allocation lays them out: a leader job's (mpirun's, srun's) too,
     * whose world_size counts its one leader task. */
    for (size_t i = 0; i < m->n_allocation; i++) {
        uint32_t end = m->allocation[i]->first_rank + m->allocation[i]->ntasks;

        if (end > nranks && end <= 1u << 20)
            nranks = end;
    }
    if (ld->n_holdings != m->n_allocation || m->n_allocation == 0 || nranks == 0) {
        rc = -EINVAL;
        goto fail;
    }
    snprintf(pf->dataset, sizeof(pf->dataset), "%s", ld->data->dataset);
    pf->seed = ld->data->seed;
    pf->tolerance = ld->data->tolerance;
    pf->nranks = nranks;
    pf->nnodes = (uint32_t)m->n_allocation;
    pf->rank_node = calloc(nranks, sizeof(*pf->rank_node));
    pf->nodes = calloc(m->n_allocation, sizeof(*pf->nodes));
    if (pf->rank_node == NULL || pf->nodes == NULL)
        goto fail;
    for (size_t i = 0; i < m->n_allocation; i++) {
        const Gs__NodeAllocation *na = m->allocation[i];
        const Gs__DatasetHolding *h = ld->holdings[i];
        struct shard_planfile_node *node = &pf->nodes[i];

        for (uint32_t r = na->first_rank; r < na->first_rank + na->ntasks && r < nranks; r++)
            pf->rank_node[r] = (uint32_t)i;
        node->name = strdup(na->node_name);
        node->holds = calloc(h->shards + 1, sizeof(*node->holds));
        if (node->name == NULL || node->holds == NULL)
            goto fail;
        for (uint32_t s = 0; s < h->shards && s / 8 < h->held.len; s++) {
            if (h->held.data[s / 8] >> (s % 8) & 1)
                node->holds[node->nholds++] = s;
        }
    }
    *ret = pf;
    return 0;
fail:
    shard_planfile_free(pf);
    return rc;
}

/*
 * The manifest shards this node's ranks read: its ranks' train shards by the plan, and
 * every val shard. need (manifest nshards, zeroed) gets a flag per shard.
 */
static int shards_needed(struct stage *st, const struct shard_manifest *man, int node,
                         uint8_t *need, char *why, size_t size)
{
    struct shard_planfile_input pi = {0};
    struct shard_plan *plan = NULL;
    struct gs_error err = {0};
    int rc = shard_planfile_input(st->pf, man, &pi, &err);

    if (rc == 0)
        rc = shard_plan(&pi.in, &plan, &err);
    if (rc < 0) {
        snprintf(why, size, "planning its shards: %s", err.msg);
        goto out;
    }
    for (uint32_t r = 0; r < plan->nranks; r++) {
        if (st->pf->rank_node[r] != (uint32_t)node)
            continue;
        for (size_t k = plan->rank_off[r]; k < plan->rank_off[r + 1]; k++)
            need[pi.manifest_index[plan->reads[k].shard]] = 1;
    }
    for (size_t i = 0; i < man->nshards; i++) {
        if (man->shards[i].split == SHARD_SPLIT_VAL)
            need[i] = 1;
    }
out:
    shard_plan_free(plan);
    shard_planfile_input_release(&pi);
    return rc;
}

/* A node of the allocation, other than ours, that gschedd says holds shard; or -1. */
static bool bit(const ProtobufCBinaryData *held, size_t shard)
{
    return shard / 8 < held->len && (held->data[shard / 8] >> (shard % 8) & 1);
}

/*
 * Where to fetch shard from before the source: a node of the job that gschedd says holds
 * it, else one of the launch's peers outside the job. False: none (the source).
 */
static bool peer_holding(const Gs__LaunchTasks *m, int mine, size_t shard, const char **ret_host,
                         uint32_t *ret_port)
{
    const Gs__JobLaunchData *ld = m->data;

    for (size_t i = 0; i < ld->n_holdings && i < ld->n_peer_ports; i++) {
        if ((int)i == mine || ld->peer_ports[i] == 0 || !bit(&ld->holdings[i]->held, shard))
            continue;
        *ret_host = m->allocation[i]->address;
        *ret_port = ld->peer_ports[i];
        return true;
    }
    for (size_t i = 0; i < ld->n_peers; i++) {
        if (ld->peers[i]->port == 0 || !bit(&ld->peers[i]->held, shard))
            continue;
        *ret_host = ld->peers[i]->address;
        *ret_port = ld->peers[i]->port;
        return true;
    }
    return false;
}

/* Steps 1 and 2 of a staged launch (top of the file). 0, or < 0 with st->why. */
static int stage_start(struct wrk_data *d, struct stage *st)
{
    const Gs__LaunchTasks *m = st->msg;
    const Gs__JobData *jd = m->data->data;
    struct shard_cache_dataset_info info;
    int mine = my_node(d->w, m);
    uint8_t *need = NULL;
    size_t ds;
    int rc;

    rc = add_dataset(d, jd->source, m->user, &ds, st->why, sizeof(st->why));
    if (rc < 0)
        return rc;
    shard_cache_dataset(d->cache, ds, &info);
    if (strcmp(info.id, jd->dataset) != 0) {
        snprintf(st->why, sizeof(st->why),
                 "dataset %s changed since the job was submitted (its manifest is now %s)",
                 jd->source, info.id);
        return -ESTALE;
    }
    for (size_t i = 0; i < m->data->n_holdings; i++) {
        const Gs__DatasetHolding *h = m->data->holdings[i];

        if (h->shards != info.nshards || (h->held.len != 0 && h->held.len != (h->shards + 7) / 8))
            mine = -1; /* not this manifest's holdings: refuse rather than guess */
    }
    if (jd->shards != info.nshards || mine < 0 || build_planfile(m, &st->pf) < 0) {
        snprintf(st->why, sizeof(st->why), "its launch message has no valid data plan");
        return -EINVAL;
    }
    shard_cache_pin_dataset(d->cache, ds);
    snprintf(st->dataset, sizeof(st->dataset), "%s", info.id);
    snprintf(st->data_dir, sizeof(st->data_dir), "%s", info.dir);
    need = calloc(info.nshards + 1, 1);
    if (need == NULL)
        return -ENOMEM;
    rc = shards_needed(st, info.manifest, mine, need, st->why, sizeof(st->why));
    /* Val shards first: a streaming job's tasks start once they are in (its evaluation
     * opens them all), its train shards streaming in behind. */
    for (size_t n = 0; rc == 0 && n < 2 * info.nshards; n++) {
        size_t i = n % info.nshards;
        bool val = info.manifest->shards[i].split == SHARD_SPLIT_VAL;
        const char *host;
        uint32_t port;

        if (!need[i] || val != (n < info.nshards))
            continue;
        st->shards_read++;
        if (shard_cache_holds(d->cache, ds, i)) {
            st->bytes_local += shard_cache_shard_bytes(d->cache, ds, i);
            shard_cache_touch(d->cache, ds, i, gs_clock_wall_ms(), NULL);
            continue;
        }
        if (!peer_holding(m, mine, i, &host, &port)) {
            host = NULL;
            port = 0;
        }
        st->shards_fetched++;
        rc = enqueue(d, info.id, i, jd->source, info.manifest->shards[i].file, host, port, m->user,
                     st);
        if (rc < 0)
            snprintf(st->why, sizeof(st->why), "out of memory");
        else if (val)
            st->val_pending++, d->queue_tail->val = true;
    }
    free(need);
    return rc;
}

static void send_report(struct wrk_data *d, const struct stage *st)
{
    Gs__JobDataReport r = GS__JOB_DATA_REPORT__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    r.job_id = st->job_id;
    r.attempt = st->attempt;
    r.node_name = d->w->node_name;
    r.bytes_local = st->bytes_local;
    r.bytes_peer = st->bytes_peer;
    r.bytes_source = st->bytes_source;
    /* What the tasks waited: a streaming job's, until they started. */
    r.stage_ms = (st->launched ? st->launched_ms : gs_clock_mono_ms()) - st->started_ms;
    r.shards_read = st->shards_read;
    r.shards_fetched = st->shards_fetched;
    env.body_case = GS__ENVELOPE__BODY_JOB_DATA_REPORT;
    env.job_data_report = &r;
    wrk_send(d->w, &env);
}

/* A job's data variables for its tasks from its pin: extra (4 slots) points into bufs. */
struct data_env {
    char dir[PATH_MAX + 32], plan[PATH_MAX + 32];
    char *extra[4];
};

static void data_env_init(struct data_env *e, const struct job_pin *pin)
{
    snprintf(e->dir, sizeof(e->dir), "GSCHED_DATA_DIR=%s", pin->data_dir);
    snprintf(e->plan, sizeof(e->plan), "GSCHED_DATA_PLAN=%s", pin->plan_path);
    e->extra[0] = e->dir;
    e->extra[1] = e->plan;
    e->extra[2] = pin->stream ? (char *)"GSCHED_DATA_STREAM=1" : NULL;
    e->extra[3] = NULL;
}

/* The plan file and the job's pin: what its tasks start with. 0, or < 0 with st->why. */
static int stage_publish(struct wrk_data *d, struct stage *st)
{
    const Gs__UserIdentity *u = st->msg->user;
    struct gs_error err = {0};
    struct job_pin *pin = calloc(1, sizeof(*pin));
    int rc;

    if (pin == NULL) {
        snprintf(st->why, sizeof(st->why), "out of memory");
        return -ENOMEM;
    }
    /* The node in the name: workers sharing a machine (gsched up) share the directory. */
    snprintf(st->plan_path, sizeof(st->plan_path), "%s/gsched-%llu.%u.%s.plan.toml",
             d->w->script_dir, (unsigned long long)st->job_id, st->attempt, d->w->node_name);
    rc = shard_planfile_write(st->plan_path, st->pf, &err);
    if (rc == 0 && chmod(st->plan_path, 0644) < 0)
        rc = -errno;
    if (rc < 0) {
        snprintf(st->why, sizeof(st->why), "writing its data plan: %s",
                 err.msg[0] != '\0' ? err.msg : strerror(-rc));
        free(pin);
        return rc;
    }
    pin->job_id = st->job_id;
    snprintf(pin->dataset, sizeof(pin->dataset), "%s", st->dataset);
    snprintf(pin->plan_path, sizeof(pin->plan_path), "%s", st->plan_path);
    snprintf(pin->data_dir, sizeof(pin->data_dir), "%s", st->data_dir);
    snprintf(pin->source, sizeof(pin->source), "%s", st->msg->data->data->source);
    pin->until_end = st->msg->n_tasks == 0 || wrk_leader_launch(st->msg);
    pin->stream = st->stream;
    pin->uid = u != NULL ? u->uid : 0;
    pin->gid = u != NULL ? u->gid : 0;
    snprintf(pin->user, sizeof(pin->user), "%s", u != NULL && u->username ? u->username : "");
    pin->next = d->pins;
    d->pins = pin;
    return 0;
}

static struct job_pin *find_pin(struct wrk_data *d, uint64_t job_id)
{
    for (struct job_pin *p = d->pins; p != NULL; p = p->next) {
        if (p->job_id == job_id)
            return p;
    }
    return NULL;
}

/* The job's tasks here, with its data variables (none: a leader job's other node). */
static void stage_start_tasks(struct wrk_data *d, struct stage *st)
{
    struct data_env e;

    data_env_init(&e, find_pin(d, st->job_id));
    if (st->msg->n_tasks > 0)
        wrk_launch_now(d->w, st->msg, st->request_id, e.extra, 0, NULL);
}

static void log_staged(const struct stage *st, const char *what)
{
    GS_LOG(GS_LOG_INFO,
           "job=%llu dataset=%s shards_read=%u shards_fetched=%u bytes_local=%llu "
           "bytes_peer=%llu bytes_source=%llu %s",
           (unsigned long long)st->job_id, st->dataset, st->shards_read, st->shards_fetched,
           (unsigned long long)st->bytes_local, (unsigned long long)st->bytes_peer,
           (unsigned long long)st->bytes_source, what);
}

/* Step 3 (stage before): the plan file, the report, the tasks. */
static int stage_finish(struct wrk_data *d, struct stage *st)
{
    int rc = stage_publish(d, st);

    if (rc < 0)
        return rc;
    send_report(d, st);
    log_staged(st, "data staged, tasks start");
    stage_start_tasks(d, st);
    return 0;
}

/* Launches the steps that waited for st, with its data or its failure. */
static void release_steps(struct wrk_data *d, struct stage *st)
{
    while (st->steps != NULL) {
        struct step_wait *sw = st->steps;

        st->steps = sw->next;
        GS_LOG(GS_LOG_INFO, "job=%llu step=%u launch waited for its data",
               (unsigned long long)sw->msg->job_id, sw->msg->step);
        if (!wrk_data_launch(d->w, sw->msg, sw->request_id)) /* the pin says how, now */
            wrk_launch_now(d->w, sw->msg, sw->request_id, NULL, 0, NULL);
        gs__launch_tasks__free_unpacked(sw->msg, NULL);
        free(sw);
    }
}

/* A leader node's failed staging, kept so that its steps fail saying why. */
static void remember_failure(struct wrk_data *d, const struct stage *st)
{
    struct job_pin *pin = calloc(1, sizeof(*pin));

    if (pin == NULL)
        return;
    pin->job_id = st->job_id;
    pin->until_end = true;
    snprintf(pin->failed, sizeof(pin->failed), "%s", st->why);
    pin->next = d->pins;
    d->pins = pin;
}

/* When a staged launch has nothing left in flight: start it, or fail it. */
/* A streaming job's copies are over: its figures, or its failure for its fetches. */
static void stream_done(struct wrk_data *d, struct stage *st)
{
    struct job_pin *pin = find_pin(d, st->job_id);

    if (st->failed < 0 && !st->cancelled && pin != NULL && pin->failed[0] == '\0') {
        snprintf(pin->failed, sizeof(pin->failed), "%s", st->why);
        GS_LOG(GS_LOG_WARN, "job=%llu error=\"%s\" streaming its data failed",
               (unsigned long long)st->job_id, st->why);
    } else if (st->failed == 0) {
        send_report(d, st);
        log_staged(st, "data streamed in");
    }
    stage_free(st);
}

static void stage_check(struct wrk_data *d, struct stage *st)
{
    if (st->stream && !st->launched && st->pending > st->val_pending && st->val_pending == 0 &&
        st->failed == 0 && !st->cancelled) {
        /* Tasks now; the train shards go on behind them, asked for first by their loaders. */
        if (stage_publish(d, st) < 0) {
            st->failed = -EIO;
        } else {
            st->launched = true;
            st->launched_ms = gs_clock_mono_ms();
            log_staged(st, "val data staged, tasks start, train data streams in");
            stage_start_tasks(d, st);
        }
    }
    if (st->pending > 0)
        return;
    unlink_stage(d, st);
    if (st->launched) {
        stream_done(d, st);
        return;
    }
    if (st->cancelled && st->failed == 0) {
        st->failed = -ECANCELED;
        snprintf(st->why, sizeof(st->why), "the job ended while its data was staged");
    }
    if (st->failed == 0 && stage_finish(d, st) == 0) {
        release_steps(d, st);
        stage_free(st);
        return;
    }
    if (st->failed == 0)
        st->failed = -EIO;
    if (st->dataset[0] != '\0')
        unpin(d, st->dataset);
    GS_LOG(GS_LOG_WARN, "job=%llu error=\"%s\" launch failed", (unsigned long long)st->job_id,
           st->why);
    if (!st->cancelled && (st->msg->n_tasks == 0 || wrk_leader_launch(st->msg)))
        remember_failure(d, st);
    while (st->steps != NULL) {
        struct step_wait *sw = st->steps;

        st->steps = sw->next;
        wrk_launch_now(d->w, sw->msg, sw->request_id, NULL, st->failed, st->why);
        gs__launch_tasks__free_unpacked(sw->msg, NULL);
        free(sw);
    }
    if (st->msg->n_tasks > 0)
        wrk_launch_now(d->w, st->msg, st->request_id, NULL, st->failed, st->why);
    stage_free(st);
}

/*
 * A srun step of a job whose dataset this node stages or has staged: it waits for the
 * staging, then starts with the job's data variables (or fails as the staging did).
 * Whether it took the launch.
 */
static bool step_launch(struct wrk_data *d, const Gs__LaunchTasks *msg, uint64_t request_id)
{
    struct data_env e;
    struct job_pin *pin;

    for (struct stage *st = d->stages; st != NULL; st = st->next) {
        struct step_wait *sw;
        size_t len;
        uint8_t *buf;

        if (st->job_id != msg->job_id || st->cancelled || st->launched)
            continue;
        sw = calloc(1, sizeof(*sw));
        len = gs__launch_tasks__get_packed_size(msg);
        buf = malloc(len + 1);
        if (sw == NULL || buf == NULL) {
            free(sw);
            free(buf);
            wrk_launch_now(d->w, msg, request_id, NULL, -ENOMEM, "out of memory");
            return true;
        }
        gs__launch_tasks__pack(msg, buf);
        sw->msg = gs__launch_tasks__unpack(NULL, len, buf);
        free(buf);
        if (sw->msg == NULL) {
            free(sw);
            wrk_launch_now(d->w, msg, request_id, NULL, -ENOMEM, "out of memory");
            return true;
        }
        sw->request_id = request_id;
        sw->next = st->steps;
        st->steps = sw;
        return true;
    }
    pin = find_pin(d, msg->job_id);
    if (pin == NULL)
        return false;
    if (pin->failed[0] != '\0') {
        wrk_launch_now(d->w, msg, request_id, NULL, -EIO, pin->failed);
        return true;
    }
    data_env_init(&e, pin);
    wrk_launch_now(d->w, msg, request_id, e.extra, 0, NULL);
    return true;
}

bool wrk_data_launch(struct wrk_ctx *w, const Gs__LaunchTasks *msg, uint64_t request_id)
{
    struct wrk_data *d = w->data;
    struct stage *st;
    uint8_t *buf;
    size_t len;
    int rc;

    if (msg->step != 0)
        return d != NULL && step_launch(d, msg, request_id);
    if (msg->data == NULL || msg->data->data == NULL)
        return false;
    if (d == NULL) {
        wrk_launch_now(w, msg, request_id, NULL, -ENOENT,
                       "the job reads a dataset and this node keeps no data cache "
                       "(worker.data_dir)");
        return true;
    }
    st = calloc(1, sizeof(*st));
    len = gs__launch_tasks__get_packed_size(msg);
    buf = malloc(len + 1);
    if (st == NULL || buf == NULL) {
        free(st);
        free(buf);
        wrk_launch_now(w, msg, request_id, NULL, -ENOMEM, "out of memory");
        return true;
    }
    gs__launch_tasks__pack(msg, buf);
    st->msg = gs__launch_tasks__unpack(NULL, len, buf);
    free(buf);
    st->job_id = msg->job_id;
    st->attempt = msg->attempt;
    st->request_id = request_id;
    st->started_ms = gs_clock_mono_ms();
    st->next = d->stages;
    d->stages = st;
    st->stream = msg->data->data->stage == GS__DATA_STAGE__DATA_STAGE_STREAM;
    rc = st->msg != NULL ? stage_start(d, st) : -ENOMEM;
    if (rc < 0 && st->failed == 0)
        st->failed = rc;

    GS_LOG(GS_LOG_INFO,
           "job=%llu attempt=%u shards_read=%u shards_to_fetch=%zu launch waits "
           "for its data",
           (unsigned long long)msg->job_id, msg->attempt, st->shards_read, st->pending);
    if (st->msg == NULL) {
        unlink_stage(d, st);
        stage_free(st);
        wrk_launch_now(w, msg, request_id, NULL, -ENOMEM, "out of memory");
        return true;
    }
    stage_check(d, st); /* nothing to fetch, or a failure: now */
    kick(d);
    return true;
}

static void drop_pin(struct wrk_data *d, struct job_pin **p)
{
    struct job_pin *pin = *p;

    *p = pin->next;
    if (pin->failed[0] == '\0') {
        unpin(d, pin->dataset);
        unlink(pin->plan_path);
    }
    free(pin);
}

void wrk_data_job_signal(struct wrk_ctx *w, const Gs__SignalTasks *msg)
{
    if (w->data == NULL || msg->signal != 0)
        return;
    /* The end of a leader job (or of every step): its node-long pins go. */
    for (struct job_pin **p = msg->all_steps ? &w->data->pins : NULL; p != NULL && *p != NULL;) {
        if ((*p)->job_id == msg->job_id && (*p)->until_end)
            drop_pin(w->data, p);
        else
            p = &(*p)->next;
    }
    for (struct stage *st = w->data->stages; st != NULL; st = st->next) {
        if (st->job_id != msg->job_id)
            continue;
        st->cancelled = true;
        /* Copies still queued for it are dropped; the one running finishes. */
        for (struct copy **p = &w->data->queue; *p != NULL;) {
            struct copy *c = *p;

            if (c->owner != st) {
                p = &c->next;
                continue;
            }
            *p = c->next;
            st->pending--;
            free(c);
        }
        w->data->queue_tail = NULL;
        for (struct copy *c = w->data->queue; c != NULL; c = c->next)
            w->data->queue_tail = c;
        stage_check(w->data, st);
        return;
    }
}

void wrk_data_job_forget(struct wrk_ctx *w, uint64_t job_id)
{
    struct wrk_data *d = w->data;

    for (struct job_pin **p = d != NULL ? &d->pins : NULL; p != NULL && *p != NULL;) {
        if ((*p)->job_id == job_id && !(*p)->until_end) /* those last until the job's end */
            drop_pin(d, p);
        else
            p = &(*p)->next;
    }
}

/* ---- a streaming job's loader asking for its shards ---- */

static void stream_failed(struct wrk_data *d, uint64_t job_id, const char *why)
{
    struct job_pin *pin = find_pin(d, job_id);

    if (pin != NULL && pin->failed[0] == '\0')
        snprintf(pin->failed, sizeof(pin->failed), "%s", why);
}

/* Moves the queued copy of (dataset, shard) to the front; false when none is queued. */
static bool to_front(struct wrk_data *d, const char *dataset, size_t shard)
{
    for (struct copy **p = &d->queue, *prev = NULL; *p != NULL; prev = *p, p = &(*p)->next) {
        struct copy *c = *p;

        if (c->shard != shard || strcmp(c->dataset, dataset) != 0)
            continue;
        if (c == d->queue)
            return true;
        *p = c->next;
        if (d->queue_tail == c)
            d->queue_tail = prev;
        c->next = d->queue;
        d->queue = c;
        return true;
    }
    return false;
}

static bool in_flight(const struct wrk_data *d, const char *dataset, size_t shard)
{
    return d->running != NULL && d->running->shard == shard &&
           strcmp(d->running->dataset, dataset) == 0;
}

static void fetch_reply(struct gs_proto_conn *conn, uint64_t request_id, int code,
                        const char *message, Gs__DataFetchReply *reply)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__ErrorReply err = GS__ERROR_REPLY__INIT;

    env.request_id = request_id;
    if (code < 0) {
        err.code = code;
        err.message = (char *)message;
        env.body_case = GS__ENVELOPE__BODY_ERROR;
        env.error = &err;
    } else {
        env.body_case = GS__ENVELOPE__BODY_DATA_FETCH_REPLY;
        env.data_fetch_reply = reply;
    }
    (void)gs_proto_conn_send(conn, &env);
}

/* Brings the asked-for shards forward (in the order asked), holds nothing back. */
static void fetch_shards(struct wrk_data *d, const struct job_pin *pin, size_t ds,
                         const Gs__DataFetchRequest *req, Gs__DataFetchReply *reply)
{
    Gs__UserIdentity user = GS__USER_IDENTITY__INIT;
    struct shard_cache_dataset_info info;

    user.uid = pin->uid;
    user.gid = pin->gid;
    user.username = (char *)pin->user;
    shard_cache_dataset(d->cache, ds, &info);
    for (size_t k = req->n_shards; k-- > 0;) { /* the first asked ends up first in line */
        size_t i = req->shards[k];

        if (i >= info.nshards)
            continue;
        if (shard_cache_holds(d->cache, ds, i)) {
            reply->held[reply->n_held++] = (uint32_t)i;
            continue;
        }
        if (in_flight(d, pin->dataset, i) || to_front(d, pin->dataset, i))
            continue;
        /* Not queued (its copy failed, or the node lost it): from the source, first. */
        if (enqueue(d, pin->dataset, i, pin->source, info.manifest->shards[i].file, NULL, 0, &user,
                    NULL) == 0 &&
            d->queue_tail != NULL && d->queue != d->queue_tail) {
            struct copy *c = d->queue_tail, *p = d->queue;

            while (p->next != c)
                p = p->next;
            p->next = NULL;
            d->queue_tail = p;
            c->next = d->queue;
            d->queue = c;
        }
    }
}

bool wrk_data_fetch(struct wrk_ctx *w, struct gs_proto_conn *conn, const Gs__Envelope *env,
                    uint32_t uid)
{
    const Gs__DataFetchRequest *req = env->data_fetch_request;
    Gs__DataFetchReply reply = GS__DATA_FETCH_REPLY__INIT;
    struct wrk_data *d = w->data;
    struct job_pin *pin;
    char why[160];
    size_t ds;

    if (env->body_case != GS__ENVELOPE__BODY_DATA_FETCH_REQUEST)
        return false;
    pin = d != NULL ? find_pin(d, req->job_id) : NULL;
    if (pin == NULL || pin->plan_path[0] == '\0' || strcmp(pin->dataset, req->dataset) != 0 ||
        shard_cache_find(d->cache, pin->dataset, &ds) < 0) {
        snprintf(why, sizeof(why), "job %llu has no dataset %.40s staged on %.64s",
                 (unsigned long long)req->job_id, req->dataset, w->node_name);
        fetch_reply(conn, env->request_id, -ENOENT, why, NULL);
        return true;
    }
    if (uid != 0 && uid != pin->uid) {
        snprintf(why, sizeof(why), "job %llu is not yours", (unsigned long long)req->job_id);
        fetch_reply(conn, env->request_id, -EPERM, why, NULL);
        return true;
    }
    reply.held = calloc(req->n_shards + 1, sizeof(*reply.held));
    if (reply.held == NULL) {
        fetch_reply(conn, env->request_id, -ENOMEM, "out of memory", NULL);
        return true;
    }
    fetch_shards(d, pin, ds, req, &reply);
    reply.error = pin->failed;
    fetch_reply(conn, env->request_id, 0, NULL, &reply);
    free(reply.held);
    kick(d);
    return true;
}

/* ---- serving peers ---- */

static bool may_serve(const char *dataset, const char *file, void *data)
{
    struct wrk_data *d = data;
    struct shard_cache_dataset_info info;
    size_t ds;

    if (shard_cache_find(d->cache, dataset, &ds) < 0 ||
        shard_cache_dataset(d->cache, ds, &info) < 0)
        return false;
    if (strcmp(file, SHARD_MANIFEST_FILE) == 0)
        return true;
    for (size_t i = 0; i < info.nshards; i++) {
        if (strcmp(info.manifest->shards[i].file, file) == 0)
            return shard_cache_holds(d->cache, ds, i);
    }
    return false;
}

/* ---- life ---- */

int wrk_data_start(struct wrk_ctx *w, const struct wrk_opts *opts, struct gs_error *err)
{
    struct wrk_data *d;
    struct wrk_peer_opts po = {0};
    const struct shard_cache_scan_stats *scan;
    int rc;

    if (opts->data_dir == NULL)
        return 0;
    d = calloc(1, sizeof(*d));
    if (d == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
    d->w = w;
    d->rate = opts->data_rate_bytes;
    rc = shard_cache_open(opts->data_dir, opts->data_cap_bytes, &d->cache, err);
    if (rc < 0) {
        free(d);
        return rc;
    }
    po.root = opts->data_dir;
    po.node_name = w->node_name;
    po.port = (uint16_t)opts->data_port;
    po.auth_key = &w->auth_key;
    po.may_serve = may_serve;
    po.data = d;
    d->peer = wrk_peer_server_new(w->loop, &po, err);
    if (d->peer == NULL) {
        shard_cache_close(d->cache);
        free(d);
        return err->code < 0 ? err->code : -EIO;
    }
    w->open_handles++; /* the peer server */
    uv_timer_init(w->loop, &d->report_timer);
    d->report_timer.data = d;
    w->open_handles++;
    w->data = d;
    scan = shard_cache_scan_stats(d->cache);
    GS_LOG(GS_LOG_INFO,
           "data_dir=%s datasets=%zu shards=%zu bytes=%llu removed=%zu port=%u data cache open",
           opts->data_dir, scan->datasets, scan->shards_held, (unsigned long long)scan->bytes_held,
           scan->files_removed, (unsigned)wrk_peer_server_port(d->peer));
    return 0;
}

uint32_t wrk_data_port(const struct wrk_ctx *w)
{
    return w->data != NULL ? wrk_peer_server_port(w->data->peer) : 0;
}

static void on_peer_closed(void *data)
{
    wrk_handle_closed(data);
}

static void on_timer_closed(uv_handle_t *h)
{
    struct wrk_data *d = h->data;

    wrk_handle_closed(d->w);
}

void wrk_data_stop(struct wrk_ctx *w)
{
    struct wrk_data *d = w->data;

    if (d == NULL || d->closing)
        return;
    d->closing = true;
    wrk_peer_server_close(d->peer, on_peer_closed, w);
    uv_close((uv_handle_t *)&d->report_timer, on_timer_closed);
}

void wrk_data_free(struct wrk_ctx *w)
{
    struct wrk_data *d = w->data;

    if (d == NULL)
        return;
    while (d->queue != NULL) {
        struct copy *c = d->queue;

        d->queue = c->next;
        free(c);
    }
    while (d->stages != NULL) {
        struct stage *st = d->stages;

        d->stages = st->next;
        stage_free(st);
    }
    while (d->pins != NULL) {
        struct job_pin *p = d->pins;

        d->pins = p->next;
        free(p);
    }
    for (size_t i = 0; i < d->nsources; i++)
        free(d->sources[i].dir);
    free(d->sources);
    shard_cache_close(d->cache);
    free(d);
    w->data = NULL;
}
