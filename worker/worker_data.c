/*
 * worker_data.c: the node's shard cache on a worker (issue 19, docs/data.md): what it holds
 * reported to gschedd, shards copied into it (for jobs, data_launch.c, and for `gsched data
 * warm`), datasets evicted, and its data port serving peers.
 *
 * The cache (sharding/cache.h) lives under worker.data_dir and belongs to the loop thread;
 * copies run each on a thread of its own (worker/offload.h), worker.data_copies at once,
 * never two of one shard (shard_cache_copy_run touches no cache state),
 * from a peer's data port (worker/peer_fetch.h) when one holds the shard, else (or when the
 * peer fails) from the dataset's source directory, which the job's user must be able to
 * read (data_access.c).
 *
 * A copy whose bytes stop moving for worker.data_stall is given up (on_stall_timer): its
 * launch fails saying so and the copies queued behind it start, while its thread waits in
 * the kernel for as long as the filesystem hangs.
 *
 * Holdings go to gschedd in full after each registration and, within HOLDINGS_DELAY_MS of a
 * change, as the datasets whose generation moved (and those evicted whole).
 */
#include "worker/worker_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "sharding/cache.h"
#include "worker/data_internal.h"
#include "worker/peer.h"
#include "worker/peer_fetch.h"
#include "proto/held.h"

#define HOLDINGS_DELAY_MS 200
#define PEER_TIMEOUT_MS 10000
#define STALL_DEFAULT_S 300
/* Copies given up whose threads have not returned, at most: past it a stuck copy keeps its
 * place, so a filesystem that hangs for good costs a bounded number of threads. */
#define MAX_GIVEN_UP 64

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
    struct data_source *grown;
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

/*
 * One dataset's holding for a report: bits (the caller frees it) and w (the caller releases
 * it) back the message.
 */
static int holding_msg(struct wrk_data *d, size_t ds, Gs__DatasetHolding *m, uint8_t **bits,
                       struct gs_held_wire *w, bool runs_ok)
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
    if (gs_held_wire_init(w, *bits, (uint32_t)info.nshards, runs_ok) < 0)
        return -ENOMEM;
    gs__dataset_holding__init(m);
    m->dataset = (char *)info.id;
    m->shards = (uint32_t)info.nshards;
    m->held = w->bits;
    m->n_held_runs = w->nruns;
    m->held_runs = w->runs;
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
    struct gs_held_wire *wires = calloc(n + 1, sizeof(*wires));
    const Gs__Hello *peer = d->w->conn != NULL ? gs_proto_conn_peer_hello(d->w->conn) : NULL;
    bool runs_ok = peer != NULL && peer->protocol_minor >= GS_PROTO_MINOR_HELD_RUNS;
    char(*removed)[SHARD_DATASET_ID_SIZE] = NULL;
    char *removed_ptrs[64];
    uint64_t gen = shard_cache_generation(d->cache);
    int rc = -ENOMEM;

    if (h == NULL || ptrs == NULL || bits == NULL || wires == NULL)
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
        rc = holding_msg(d, ds, &h[k], &bits[k], &wires[k], runs_ok);
        k++; /* bits[k] and wires[k] are freed below either way */
        if (rc < 0)
            goto out;
        ptrs[k - 1] = &h[k - 1];
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
    for (size_t i = 0; bits != NULL && i < k; i++) {
        gs_held_wire_release(&wires[i]);
        free(bits[i]);
    }
    free(bits);
    free(wires);
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

void wrk_data_holdings_changed(struct wrk_data *d)
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

/* A copy from the peer; on failure the source directory is tried by the caller. */
static int copy_from_peer(struct data_copy *c, const char *file)
{
    struct wrk_peer_fetch *f = NULL;
    struct wrk_peer_fetch_reader r;
    int rc = wrk_peer_fetch_open(c->peer_host, c->peer_port, &c->key, c->node_name, PEER_TIMEOUT_MS,
                                 &f, &c->err);

    if (rc < 0)
        return rc;
    r.fetch = f;
    r.dataset = c->dataset;
    r.file = file;
    c->job.read = wrk_peer_fetch_reader;
    c->job.read_data = &r;
    c->job.source_path = NULL;
    rc = shard_cache_copy_run(&c->job, &c->err);
    wrk_peer_fetch_close(f);
    return rc;
}

/* On the copy's thread, touching only c (never c->d): the peer first when there is one,
 * else (or after it failed) the source. */
static void copy_work(void *data)
{
    struct data_copy *c = data;
    const char *file = strrchr(c->job.path, '/') + 1;

    if (c->gate != NULL)
        c->gate(c->gate_data);
    if (c->peer_host[0] != '\0') {
        c->result = copy_from_peer(c, file);
        if (c->result == 0) {
            c->from_peer = true;
            return;
        }
        snprintf(c->peer_error, sizeof(c->peer_error), "%s", c->err.msg); /* logged on the loop */
    }
    if (!wrk_data_user_may_read(c->source, c->uid, c->gid, c->user)) {
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

static void copy_free(struct data_copy *c)
{
    gs_proto_auth_key_clear(&c->key);
    free(c);
}

/* A copy that was running when the worker stopped, once its thread is done with it (any
 * thread): its .part stays for the next worker to resume; the cache it was staged in is
 * gone, so only the job's own strings are freed. */
static void copy_drop(void *data)
{
    struct data_copy *c = data;

    free(c->job.path);
    free(c->job.part_path);
    copy_free(c);
}

/* A copy of st's failed with rc, saying why; the first failure is the launch's. */
static void stage_failed(struct data_stage *st, int rc, const char *why)
{
    if (st->failed == 0) {
        st->failed = rc;
        snprintf(st->why, sizeof(st->why), "staging its data: %.400s", why);
    }
}

/* A copy of st's is over: c->result, or already held when its turn came (was_local). */
static void account(struct data_stage *st, const struct data_copy *c, bool was_local)
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
        stage_failed(st, c->result, c->err.msg);
        return;
    }
    if (c->from_peer)
        st->bytes_peer += c->bytes;
    else
        st->bytes_source += c->bytes;
}

/* On the loop once the copy's thread returned; never after wrk_data_stop. */
static void copy_done(void *data)
{
    struct data_copy *c = data;
    struct wrk_data *d = c->d;
    uint64_t copied = c->job.bytes_copied;

    c->bytes = c->job.bytes; /* stage_end zeroes the job */
    for (struct data_copy **p = &d->running; *p != NULL; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            if (c->given_up)
                d->ngiven_up--;
            else
                d->nrunning--;
            break;
        }
    }
    if (c->given_up)
        GS_LOG(GS_LOG_INFO, "dataset=%s shard=%zu result=%d a copy given up has returned",
               c->dataset, c->shard, c->result);
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
    wrk_data_holdings_changed(d);
    if (c->owner != NULL) {
        account(c->owner, c, false);
        if (c->result < 0 && c->owner->launched) /* its loader is told at its next fetch */
            wrk_data_stream_failed(d, c->owner->job_id, c->owner->why);
        wrk_data_stage_check(d, c->owner);
    }
    copy_free(c);
    wrk_data_kick(d);
}

bool wrk_data_in_flight(const struct wrk_data *d, const char *dataset, size_t shard)
{
    for (const struct data_copy *c = d->running; c != NULL; c = c->next) {
        if (c->shard == shard && strcmp(c->dataset, dataset) == 0)
            return true;
    }
    return false;
}

/*
 * Takes the first queued copy whose shard is not in flight already (a second copy of it
 * waits in the queue for the first to end, then finds it held); NULL: none may start.
 */
static struct data_copy *next_startable(struct wrk_data *d)
{
    struct data_copy *prev = NULL;

    for (struct data_copy *c = d->queue; c != NULL; prev = c, c = c->next) {
        if (wrk_data_in_flight(d, c->dataset, c->shard))
            continue;
        if (prev == NULL)
            d->queue = c->next;
        else
            prev->next = c->next;
        if (d->queue_tail == c)
            d->queue_tail = prev;
        c->next = NULL;
        return c;
    }
    return NULL;
}

/*
 * Gives up copy c, stuck past worker.data_stall: it is told to cancel (should its read ever
 * return), its launch fails saying why, and it no longer counts against data_copies. It
 * stays on the running list, so no second copy of its shard starts (the cache still has
 * the shard being staged) until its thread returns. Touches only the loop's side of c.
 */
static void give_up(struct wrk_data *d, struct data_copy *c, uint64_t stalled_ms)
{
    struct data_stage *st = c->owner;
    char why[400];

    c->given_up = true;
    atomic_store(&c->cancel, true);
    d->nrunning--;
    d->ngiven_up++;
    snprintf(why, sizeof(why),
             "shard %zu of dataset %s: no progress in %llu s (worker.data_stall); its source "
             "(%.200s) may be on a filesystem that hangs",
             c->shard, c->dataset, (unsigned long long)(stalled_ms / 1000), c->source);
    GS_LOG(GS_LOG_WARN,
           "dataset=%s shard=%zu stalled_ms=%llu given_up=%u source=\"%s\" shard copy given up",
           c->dataset, c->shard, (unsigned long long)stalled_ms, d->ngiven_up, c->source);
    if (st == NULL)
        return;
    c->owner = NULL;
    st->pending--;
    if (c->val)
        st->val_pending--;
    stage_failed(st, -ETIMEDOUT, why);
    if (st->launched) /* its loader is told at its next fetch */
        wrk_data_stream_failed(d, st->job_id, st->why);
    wrk_data_stage_check(d, st);
}

/* While copies run: any whose bytes have not moved for worker.data_stall is given up. */
static void on_stall_timer(uv_timer_t *t)
{
    struct wrk_data *d = t->data;
    uint64_t now = gs_clock_mono_ms();
    bool gave_up = false;

    for (struct data_copy *c = d->running; c != NULL; c = c->next) {
        uint64_t seen = atomic_load(&c->progress);

        if (c->given_up)
            continue;
        if (seen != c->seen) {
            c->seen = seen;
            c->moved_ms = now;
        } else if (now - c->moved_ms >= d->stall_ms && d->ngiven_up < MAX_GIVEN_UP) {
            give_up(d, c, now - c->moved_ms);
            gave_up = true;
        }
    }
    if (gave_up)
        wrk_data_kick(d);
    if (d->nrunning == 0)
        uv_timer_stop(t);
}

/* Starts queued copies while fewer than max_running run. */
void wrk_data_kick(struct wrk_data *d)
{
    struct data_copy *c;

    while (d->nrunning < d->max_running && !d->closing && (c = next_startable(d)) != NULL) {
        struct gs_error err = {0};
        size_t ds;
        int rc;

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
                wrk_data_stage_check(d, c->owner);
            }
            copy_free(c);
            continue;
        }
        /* worker.data_rate is the node's: each of the copies at once gets its share. */
        c->job.rate_bytes_per_s = d->rate / d->max_running;
        atomic_init(&c->cancel, false);
        c->job.cancel = &c->cancel;
        atomic_init(&c->progress, 0);
        c->job.progress = &c->progress;
        c->seen = 0;
        c->moved_ms = gs_clock_mono_ms();
        c->gate = d->copy_gate;
        c->gate_data = d->copy_gate_data;
        c->key = d->w->auth_key;
        snprintf(c->node_name, sizeof(c->node_name), "%s", d->w->node_name);
        rc = wrk_offload_run(d->copies, copy_work, copy_done, copy_drop, c);
        if (rc == 0) {
            c->next = d->running;
            d->running = c;
            d->nrunning++;
            if (!uv_is_active((uv_handle_t *)&d->stall_timer)) {
                uint64_t every = d->stall_ms / 4 < 5000 ? d->stall_ms / 4 + 1 : 5000;

                uv_timer_start(&d->stall_timer, on_stall_timer, every, every);
            }
        }
        if (rc < 0) {
            c->result = rc;
            gs_error_set(&c->err, rc, 0, 0, "cannot start the copy: %s", gs_strerror(rc));
            shard_cache_stage_end(d->cache, &c->job, rc);
            if (c->owner != NULL) {
                account(c->owner, c, false);
                wrk_data_stage_check(d, c->owner);
            }
            copy_free(c);
            continue;
        }
    }
}

int wrk_data_enqueue(struct wrk_data *d, const char *dataset, size_t shard, const char *source_dir,
                     const char *file, const char *peer_host, uint32_t peer_port,
                     const Gs__UserIdentity *user, struct data_stage *owner)
{
    struct data_copy *c = calloc(1, sizeof(*c));

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

/*
 * Lets read the cached copy of a dataset (dir) only those who may read its source manifest
 * (data_access.c). A dataset new to the cache takes its source's access; one it had lets
 * the new source's readers in as well (the same bytes: each source's readers may read
 * them), by an ACL entry. On a filesystem without ACLs it takes the latest source's
 * access instead, unless every user may read it already. The cache makes a new dataset's
 * directory 0700, so nobody reads its manifest copy before this. A worker that is not root
 * runs every task as itself, which that mode already lets in. On failure the copy is left
 * to root alone.
 */
static int set_access(const char *dir, const char *manifest, bool fresh, char *why, size_t size)
{
    struct wrk_data_access a;
    struct stat st;
    bool changed = true;
    int rc;

    if (geteuid() != 0)
        return 0;
    if (!fresh && stat(dir, &st) == 0 && (st.st_mode & 0005) == 0005)
        return 0; /* every user may read it already: no source to walk */
    rc = wrk_data_source_access(manifest, &a);
    if (rc == 0 && fresh)
        rc = wrk_data_apply_access(dir, &a);
    else if (rc == 0 && (rc = wrk_data_widen_access(dir, &a, &changed)) == -ENOTSUP) {
        GS_LOG(GS_LOG_WARN,
               "dir=%s no POSIX ACLs on this filesystem: the cached dataset takes the latest "
               "source's access",
               dir);
        rc = wrk_data_apply_access(dir, &a);
    }
    if (rc < 0) {
        snprintf(why, size, "%.300s: cannot limit who may read the cached copy: %s", dir,
                 gs_strerror(rc));
        (void)chmod(dir, 0700);
        return rc;
    }
    if (changed)
        GS_LOG(GS_LOG_DEBUG, "dir=%s uid=%u gid=%u mode=%03o fresh=%d cached dataset access set",
               dir, (unsigned)a.uid, (unsigned)a.gid, (unsigned)a.mode, fresh);
    return 0;
}

/*
 * A user the source lets in beyond the access the cached copy took from its bits (by an
 * ACL entry on the source, say) gets a named ACL entry on the copy, never its ownership:
 * reading it is all the source gave them. Only a root worker narrows access at all.
 */
static int let_user_in(const char *dir, const Gs__UserIdentity *user, char *why, size_t size)
{
    bool changed;
    int rc;

    if (geteuid() != 0 || user->uid == 0 ||
        wrk_data_user_may_read(dir, user->uid, user->gid, user->username))
        return 0;
    rc = wrk_data_let_user_in(dir, user->uid, &changed);
    if (rc < 0) {
        snprintf(why, size, "%.300s: cannot let user %.60s read the cached copy%s: %s", dir,
                 user->username != NULL ? user->username : "?",
                 rc == -ENOTSUP ? " (no POSIX ACLs on the cache's filesystem)" : "",
                 gs_strerror(rc));
        return rc;
    }
    if (changed)
        GS_LOG(GS_LOG_DEBUG, "dir=%s uid=%u cached dataset access widened for a user", dir,
               (unsigned)user->uid);
    return 0;
}

/* Adds source's dataset to the cache for user; 0 with *ret_ds, or < 0 with why. */
int wrk_data_add_dataset(struct wrk_data *d, const char *source, const Gs__UserIdentity *user,
                         size_t *ret_ds, char *why, size_t size)
{
    struct gs_error err = {0};
    char manifest[PATH_MAX];
    size_t before = shard_cache_count(d->cache);
    int rc;

    snprintf(manifest, sizeof(manifest), "%s/%s", source, SHARD_MANIFEST_FILE);
    if (!wrk_data_user_may_read(source, user->uid, user->gid, user->username) ||
        !wrk_data_user_may_read(manifest, user->uid, user->gid, user->username)) {
        snprintf(why, size, "%.400s: user %.60s may not read it (or it does not exist)", manifest,
                 user->username != NULL ? user->username : "?");
        return -EACCES;
    }
    rc = shard_cache_add_dataset(d->cache, source, ret_ds, &err);
    if (rc < 0) {
        snprintf(why, size, "%s", err.msg);
    } else {
        struct shard_cache_dataset_info info;

        rc = shard_cache_dataset(d->cache, *ret_ds, &info);
        if (rc == 0)
            rc = set_access(info.dir, manifest, shard_cache_count(d->cache) > before, why, size);
        if (rc == 0)
            rc = let_user_in(info.dir, user, why, size);
        if (rc == 0)
            remember_source(d, info.id, source);
        wrk_data_holdings_changed(d);
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

    if (wrk_data_add_dataset(d, cmd->source, user, &ds, why, sizeof(why)) < 0) {
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
        if (wrk_data_enqueue(d, info.id, i, cmd->source, info.manifest->shards[i].file, NULL, 0,
                             user, NULL) == 0)
            queued++;
    }
    GS_LOG(GS_LOG_INFO, "dataset=%s source=%s shards=%zu queued=%zu uid=%u warm", info.id,
           cmd->source, info.nshards, queued, user->uid);
    wrk_data_kick(d);
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
    wrk_data_holdings_changed(d);
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
    d->max_running = opts->data_copies > 0 ? opts->data_copies : 2;
    d->stall_ms = (uint64_t)(opts->data_stall_s > 0 ? opts->data_stall_s : STALL_DEFAULT_S) * 1000;
    d->copy_gate = opts->data_copy_gate;
    d->copy_gate_data = opts->data_copy_gate_data;
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
    rc = wrk_offload_new(w->loop, d->max_running + MAX_GIVEN_UP, &d->copies);
    if (rc < 0) {
        shard_cache_close(d->cache);
        free(d);
        return gs_error_set(err, rc, 0, 0, "cannot start the shard copies: %s", gs_strerror(rc));
    }
    d->peer = wrk_peer_server_new(w->loop, &po, err);
    if (d->peer == NULL) {
        wrk_offload_close(d->copies, NULL, NULL); /* its handle closes on the loop's next turn */
        shard_cache_close(d->cache);
        free(d);
        return err->code < 0 ? err->code : -EIO;
    }
    w->open_handles++; /* the peer server */
    w->open_handles++; /* the copies, until on_copies_closed */
    uv_timer_init(w->loop, &d->report_timer);
    d->report_timer.data = d;
    w->open_handles++;
    uv_timer_init(w->loop, &d->stall_timer);
    d->stall_timer.data = d;
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

static void on_copies_closed(void *data)
{
    wrk_handle_closed(data);
}

static void on_timer_closed(uv_handle_t *h)
{
    struct wrk_data *d = h->data;

    wrk_handle_closed(d->w);
}

/* Copies in flight are told to stop and left behind, not waited for: one reading a source
 * on a filesystem that hangs could hold the stop for good, and a long one at the node's
 * data_rate for minutes. Each keeps its .part, which the next worker resumes. */
void wrk_data_stop(struct wrk_ctx *w)
{
    struct wrk_data *d = w->data;

    if (d == NULL || d->closing)
        return;
    d->closing = true;
    if (d->nrunning + d->ngiven_up > 0)
        GS_LOG(GS_LOG_INFO, "copies=%u given_up=%u shard copies stopped, their .part files kept",
               d->nrunning, d->ngiven_up);
    for (struct data_copy *c = d->running; c != NULL; c = c->next)
        atomic_store(&c->cancel, true);
    d->running = NULL; /* theirs to free now (copy_drop) */
    d->nrunning = d->ngiven_up = 0;
    wrk_offload_close(d->copies, on_copies_closed, w);
    d->copies = NULL;
    wrk_peer_server_close(d->peer, on_peer_closed, w);
    uv_close((uv_handle_t *)&d->report_timer, on_timer_closed);
    uv_close((uv_handle_t *)&d->stall_timer, on_timer_closed);
}

void wrk_data_free(struct wrk_ctx *w)
{
    struct wrk_data *d = w->data;

    if (d == NULL)
        return;
    while (d->queue != NULL) {
        struct data_copy *c = d->queue;

        d->queue = c->next;
        free(c);
    }
    while (d->stages != NULL) {
        struct data_stage *st = d->stages;

        d->stages = st->next;
        wrk_data_stage_free(st);
    }
    while (d->pins != NULL) {
        struct data_pin *p = d->pins;

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
