/*
 * data_launch.c: a LaunchTasks with a dataset on a worker (docs/data.md, "Staging"). The
 * launch (step 0) waits here while its node's shards are staged:
 *   1. the dataset is added to the cache from its source (its manifest copied) and pinned
 *      until the job's last task here ends (a leader job's other nodes: until the job's
 *      end); its id must be the one the job was submitted with, else the dataset changed
 *      since and the launch fails saying so;
 *   2. the plan file is built from what gschedd sent (every allocation node's holdings, the
 *      seed and tolerance), the same on every node, so every node computes the same shard
 *      plan (sharding/planner.h) on its own: this node stages the train shards its ranks
 *      read that it lacks, and every val shard it lacks (val first), from a node of the job
 *      that holds it, else a peer gschedd named outside the job, else the source;
 *   3. once they are in (stage "stream": once the val shards are), the plan file is written
 *      (mode 0644, the worker's script dir) and the tasks start with GSCHED_DATA_DIR,
 *      GSCHED_DATA_PLAN (and GSCHED_DATA_STREAM); a JobDataReport tells gschedd what was
 *      local, fetched from peers, copied from the source. A copy that fails fails the
 *      launch (a streaming job: its loaders' next fetch request), naming the shard.
 * A SignalTasks ending the job meanwhile drops the launch (its tasks fail to start, which is
 * how gschedd hears of it); the copy in flight finishes into the cache. srun steps of the
 * job (a batch script's, mpirun's ranks) wait for the node's staging and start with the
 * same variables. A streaming job's loaders send DataFetchRequests on the CLI socket; the
 * worker moves those shards to the front of its queue and answers at once.
 */
#include "worker/worker_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "proto/held.h"
#include "sharding/planner.h"
#include "worker/data_internal.h"

void wrk_data_stage_free(struct data_stage *st)
{
    if (st == NULL)
        return;
    while (st->steps != NULL) {
        struct data_step_wait *sw = st->steps;

        st->steps = sw->next;
        gs__launch_tasks__free_unpacked(sw->msg, NULL);
        free(sw);
    }
    if (st->msg != NULL)
        gs__launch_tasks__free_unpacked(st->msg, NULL);
    shard_planfile_free(st->pf);
    free(st);
}

static void unlink_stage(struct wrk_data *d, struct data_stage *st)
{
    for (struct data_stage **p = &d->stages; *p != NULL; p = &(*p)->next) {
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

/*
 * The plan file's content from the launch: ranks by node, each node's holdings (as bitmap
 * or runs, proto/held.h) of a manifest of shards shards. -EINVAL for a launch that does
 * not fit it.
 */
static int build_planfile(const Gs__LaunchTasks *m, uint32_t shards, struct shard_planfile **ret)
{
    const Gs__JobLaunchData *ld = m->data;
    struct shard_planfile *pf = calloc(1, sizeof(*pf));
    uint8_t *bits = malloc((size_t)shards / 8 + 1);
    uint32_t nranks = 0;
    int rc = -ENOMEM;

    if (pf == NULL || bits == NULL)
        goto fail;
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
        if (h->shards != shards ||
            gs_held_read(&h->held, h->held_runs, h->n_held_runs, shards, bits) < 0) {
            rc = -EINVAL;
            goto fail;
        }
        node->name = strdup(na->node_name);
        node->holds = calloc(gs_held_count(bits, shards) + 1, sizeof(*node->holds));
        if (node->name == NULL || node->holds == NULL)
            goto fail;
        for (uint32_t s = 0; s < shards; s++) {
            if (bits[s / 8] >> (s % 8) & 1)
                node->holds[node->nholds++] = s;
        }
    }
    free(bits);
    *ret = pf;
    return 0;
fail:
    free(bits);
    shard_planfile_free(pf);
    return rc;
}

/*
 * The manifest shards this node's ranks read: its ranks' train shards by the plan, and
 * every val shard. need (manifest nshards, zeroed) gets a flag per shard.
 */
static int shards_needed(struct data_stage *st, const struct shard_manifest *man, int node,
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

/* Whether a plan file node's holds (ascending) list shard. */
static bool holds(const struct shard_planfile_node *node, uint32_t shard)
{
    size_t lo = 0, hi = node->nholds;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (node->holds[mid] == shard)
            return true;
        if (node->holds[mid] < shard)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/*
 * The launch's peers outside the job, their holdings read into bitmaps of shards shards
 * (a peer whose holding does not read holds nothing). NULL: out of memory.
 */
#define MAX_EXTRA_PEERS 16 /* gschedd names 4; more are not looked at */

static uint8_t *peers_held(const Gs__JobLaunchData *ld, uint32_t shards, size_t *ret_n)
{
    size_t n = ld->n_peers < MAX_EXTRA_PEERS ? ld->n_peers : MAX_EXTRA_PEERS;
    size_t len = (size_t)shards / 8 + 1;
    uint8_t *bits = calloc(n + 1, len);

    for (size_t i = 0; bits != NULL && i < n; i++) {
        if (gs_held_read(&ld->peers[i]->held, ld->peers[i]->held_runs, ld->peers[i]->n_held_runs,
                         shards, bits + i * len) < 0)
            memset(bits + i * len, 0, len);
    }
    *ret_n = n;
    return bits;
}

/*
 * Where to fetch shard from before the source: a node of the job that gschedd says holds
 * it (st->pf), else one of the launch's peers outside the job (peer_bits, npeers of them,
 * each shards / 8 + 1 bytes). False: none (the source).
 */
static bool peer_holding(const struct data_stage *st, int mine, uint32_t shard,
                         const uint8_t *peer_bits, size_t npeers, const char **ret_host,
                         uint32_t *ret_port)
{
    const Gs__LaunchTasks *m = st->msg;
    const Gs__JobLaunchData *ld = m->data;
    size_t len = (size_t)ld->data->shards / 8 + 1;

    for (size_t i = 0; i < st->pf->nnodes && i < ld->n_peer_ports; i++) {
        if ((int)i == mine || ld->peer_ports[i] == 0 || !holds(&st->pf->nodes[i], shard))
            continue;
        *ret_host = m->allocation[i]->address;
        *ret_port = ld->peer_ports[i];
        return true;
    }
    for (size_t i = 0; i < npeers; i++) {
        const uint8_t *bits = peer_bits + i * len;

        if (ld->peers[i]->port == 0 || !(bits[shard / 8] >> (shard % 8) & 1))
            continue;
        *ret_host = ld->peers[i]->address;
        *ret_port = ld->peers[i]->port;
        return true;
    }
    return false;
}

/* Steps 1 and 2 of a staged launch (top of the file). 0, or < 0 with st->why. */
static int stage_start(struct wrk_data *d, struct data_stage *st)
{
    const Gs__LaunchTasks *m = st->msg;
    const Gs__JobData *jd = m->data->data;
    struct shard_cache_dataset_info info;
    int mine = my_node(d->w, m);
    uint8_t *need = NULL, *peer_bits = NULL;
    size_t ds, npeers = 0;
    int rc;

    rc = wrk_data_add_dataset(d, jd->source, m->user, &ds, st->why, sizeof(st->why));
    if (rc < 0)
        return rc;
    shard_cache_dataset(d->cache, ds, &info);
    if (strcmp(info.id, jd->dataset) != 0) {
        snprintf(st->why, sizeof(st->why),
                 "dataset %s changed since the job was submitted (its manifest is now %s)",
                 jd->source, info.id);
        return -ESTALE;
    }
    /* Holdings not of this manifest, or that do not read: refuse rather than guess. */
    rc = -EINVAL;
    if (jd->shards == info.nshards && info.nshards <= GS_HELD_MAX_SHARDS && mine >= 0)
        rc = build_planfile(m, (uint32_t)info.nshards, &st->pf);
    if (rc < 0) {
        snprintf(st->why, sizeof(st->why), "%s",
                 rc == -ENOMEM ? "out of memory" : "its launch message has no valid data plan");
        return rc;
    }
    shard_cache_pin_dataset(d->cache, ds);
    snprintf(st->dataset, sizeof(st->dataset), "%s", info.id);
    snprintf(st->data_dir, sizeof(st->data_dir), "%s", info.dir);
    need = calloc(info.nshards + 1, 1);
    peer_bits = peers_held(m->data, (uint32_t)info.nshards, &npeers);
    if (need == NULL || peer_bits == NULL) {
        free(need);
        free(peer_bits);
        snprintf(st->why, sizeof(st->why), "out of memory");
        return -ENOMEM;
    }
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
        if (!peer_holding(st, mine, (uint32_t)i, peer_bits, npeers, &host, &port)) {
            host = NULL;
            port = 0;
        }
        st->shards_fetched++;
        rc = wrk_data_enqueue(d, info.id, i, jd->source, info.manifest->shards[i].file, host, port,
                              m->user, st);
        if (rc < 0)
            snprintf(st->why, sizeof(st->why), "out of memory");
        else if (val)
            st->val_pending++, d->queue_tail->val = true;
    }
    free(need);
    free(peer_bits);
    return rc;
}

static void send_report(struct wrk_data *d, const struct data_stage *st)
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

static void data_env_init(struct data_env *e, const struct data_pin *pin)
{
    snprintf(e->dir, sizeof(e->dir), "GSCHED_DATA_DIR=%s", pin->data_dir);
    snprintf(e->plan, sizeof(e->plan), "GSCHED_DATA_PLAN=%s", pin->plan_path);
    e->extra[0] = e->dir;
    e->extra[1] = e->plan;
    e->extra[2] = pin->stream ? (char *)"GSCHED_DATA_STREAM=1" : NULL;
    e->extra[3] = NULL;
}

/* The plan file and the job's pin: what its tasks start with. 0, or < 0 with st->why. */
static int stage_publish(struct wrk_data *d, struct data_stage *st)
{
    const Gs__UserIdentity *u = st->msg->user;
    struct gs_error err = {0};
    struct data_pin *pin = calloc(1, sizeof(*pin));
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

static struct data_pin *find_pin(struct wrk_data *d, uint64_t job_id)
{
    for (struct data_pin *p = d->pins; p != NULL; p = p->next) {
        if (p->job_id == job_id)
            return p;
    }
    return NULL;
}

/* The job's tasks here, with its data variables (none: a leader job's other node). */
static void stage_start_tasks(struct wrk_data *d, struct data_stage *st)
{
    struct data_env e;

    data_env_init(&e, find_pin(d, st->job_id));
    if (st->msg->n_tasks > 0)
        wrk_launch_now(d->w, st->msg, st->request_id, e.extra, 0, NULL);
}

static void log_staged(const struct data_stage *st, const char *what)
{
    GS_LOG(GS_LOG_INFO,
           "job=%llu dataset=%s shards_read=%u shards_fetched=%u bytes_local=%llu "
           "bytes_peer=%llu bytes_source=%llu %s",
           (unsigned long long)st->job_id, st->dataset, st->shards_read, st->shards_fetched,
           (unsigned long long)st->bytes_local, (unsigned long long)st->bytes_peer,
           (unsigned long long)st->bytes_source, what);
}

/* Step 3 (stage before): the plan file, the report, the tasks. */
static int stage_finish(struct wrk_data *d, struct data_stage *st)
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
static void release_steps(struct wrk_data *d, struct data_stage *st)
{
    while (st->steps != NULL) {
        struct data_step_wait *sw = st->steps;

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
static void remember_failure(struct wrk_data *d, const struct data_stage *st)
{
    struct data_pin *pin = calloc(1, sizeof(*pin));

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
static void stream_done(struct wrk_data *d, struct data_stage *st)
{
    struct data_pin *pin = find_pin(d, st->job_id);

    if (st->failed < 0 && !st->cancelled && pin != NULL && pin->failed[0] == '\0') {
        snprintf(pin->failed, sizeof(pin->failed), "%s", st->why);
        GS_LOG(GS_LOG_WARN, "job=%llu error=\"%s\" streaming its data failed",
               (unsigned long long)st->job_id, st->why);
    } else if (st->failed == 0) {
        send_report(d, st);
        log_staged(st, "data streamed in");
    }
    wrk_data_stage_free(st);
}

void wrk_data_stage_check(struct wrk_data *d, struct data_stage *st)
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
        wrk_data_stage_free(st);
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
        struct data_step_wait *sw = st->steps;

        st->steps = sw->next;
        wrk_launch_now(d->w, sw->msg, sw->request_id, NULL, st->failed, st->why);
        gs__launch_tasks__free_unpacked(sw->msg, NULL);
        free(sw);
    }
    if (st->msg->n_tasks > 0)
        wrk_launch_now(d->w, st->msg, st->request_id, NULL, st->failed, st->why);
    wrk_data_stage_free(st);
}

/*
 * A srun step of a job whose dataset this node stages or has staged: it waits for the
 * staging, then starts with the job's data variables (or fails as the staging did).
 * Whether it took the launch.
 */
static bool step_launch(struct wrk_data *d, const Gs__LaunchTasks *msg, uint64_t request_id)
{
    struct data_env e;
    struct data_pin *pin;

    for (struct data_stage *st = d->stages; st != NULL; st = st->next) {
        struct data_step_wait *sw;
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
    struct data_stage *st;
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
        wrk_data_stage_free(st);
        wrk_launch_now(w, msg, request_id, NULL, -ENOMEM, "out of memory");
        return true;
    }
    wrk_data_stage_check(d, st); /* nothing to fetch, or a failure: now */
    wrk_data_kick(d);
    return true;
}

static void drop_pin(struct wrk_data *d, struct data_pin **p)
{
    struct data_pin *pin = *p;

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
    for (struct data_pin **p = msg->all_steps ? &w->data->pins : NULL; p != NULL && *p != NULL;) {
        if ((*p)->job_id == msg->job_id && (*p)->until_end)
            drop_pin(w->data, p);
        else
            p = &(*p)->next;
    }
    for (struct data_stage *st = w->data->stages; st != NULL; st = st->next) {
        if (st->job_id != msg->job_id)
            continue;
        st->cancelled = true;
        /* Copies still queued for it are dropped; the one running finishes. */
        for (struct data_copy **p = &w->data->queue; *p != NULL;) {
            struct data_copy *c = *p;

            if (c->owner != st) {
                p = &c->next;
                continue;
            }
            *p = c->next;
            st->pending--;
            free(c);
        }
        w->data->queue_tail = NULL;
        for (struct data_copy *c = w->data->queue; c != NULL; c = c->next)
            w->data->queue_tail = c;
        wrk_data_stage_check(w->data, st);
        return;
    }
}

void wrk_data_job_forget(struct wrk_ctx *w, uint64_t job_id)
{
    struct wrk_data *d = w->data;

    for (struct data_pin **p = d != NULL ? &d->pins : NULL; p != NULL && *p != NULL;) {
        if ((*p)->job_id == job_id && !(*p)->until_end) /* those last until the job's end */
            drop_pin(d, p);
        else
            p = &(*p)->next;
    }
}

/* ---- a streaming job's loader asking for its shards ---- */

void wrk_data_stream_failed(struct wrk_data *d, uint64_t job_id, const char *why)
{
    struct data_pin *pin = find_pin(d, job_id);

    if (pin != NULL && pin->failed[0] == '\0')
        snprintf(pin->failed, sizeof(pin->failed), "%s", why);
}

/* Moves the queued copy of (dataset, shard) to the front; false when none is queued. */
static bool to_front(struct wrk_data *d, const char *dataset, size_t shard)
{
    for (struct data_copy **p = &d->queue, *prev = NULL; *p != NULL; prev = *p, p = &(*p)->next) {
        struct data_copy *c = *p;

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
static void fetch_shards(struct wrk_data *d, const struct data_pin *pin, size_t ds,
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
        if (wrk_data_in_flight(d, pin->dataset, i) || to_front(d, pin->dataset, i))
            continue;
        /* Not queued (its copy failed, or the node lost it): from the source, first. */
        if (wrk_data_enqueue(d, pin->dataset, i, pin->source, info.manifest->shards[i].file, NULL,
                             0, &user, NULL) == 0)
            to_front(d, pin->dataset, i);
    }
}

bool wrk_data_fetch(struct wrk_ctx *w, struct gs_proto_conn *conn, const Gs__Envelope *env,
                    uint32_t uid)
{
    const Gs__DataFetchRequest *req = env->data_fetch_request;
    Gs__DataFetchReply reply = GS__DATA_FETCH_REPLY__INIT;
    struct wrk_data *d = w->data;
    struct data_pin *pin;
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
    wrk_data_kick(d);
    return true;
}
