/*
 * sched_data.c: the datasets in the nodes' shard caches, as their workers report them
 * (sched_data.h), and what uses that knowledge: `gsched data`, the LaunchTasks of jobs
 * with a dataset, and the data figures of their usage.
 *
 * A node's record is a small array of holdings, one per dataset its cache knows: the id,
 * the shard count, a bitmap of the shards held (as the worker sent it), bytes held and
 * total, when it was last used and where it was staged from. Reports are trusted only as
 * far as their shape: an id that is not one, or a bitmap shorter than its shard count
 * says, is skipped with a warning, so one bad worker report costs that entry, not the
 * daemon. Memory only: workers report in full whenever they register.
 */
#include "scheduler/sched_data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jobspec.h"
#include "common/log.h"
#include "proto/frame.h"
#include "scheduler/sched_internal.h"

#define MAX_DATASETS_PER_NODE 4096 /* a report past it is cut: the cache is someone's folly */

struct holding {
    char id[GS_DATA_ID_SIZE];
    uint32_t shards;
    uint8_t *held; /* (shards + 7) / 8 bytes */
    uint64_t bytes_held, bytes_total, last_used_ms;
    char *source;
};

struct sched_node_data {
    struct holding *h;
    size_t n, cap;
    uint64_t used_bytes, cap_bytes;
    char *data_dir;
};

static struct sched_node_data *node_data(struct sched_node *n)
{
    if (n->data == NULL)
        n->data = calloc(1, sizeof(*n->data));
    return n->data;
}

static void holding_release(struct holding *h)
{
    free(h->held);
    free(h->source);
    memset(h, 0, sizeof(*h));
}

static void clear_holdings(struct sched_node_data *d)
{
    for (size_t i = 0; i < d->n; i++)
        holding_release(&d->h[i]);
    d->n = 0;
}

void sched_data_node_free(struct sched_node *n)
{
    if (n->data == NULL)
        return;
    clear_holdings(n->data);
    free(n->data->h);
    free(n->data->data_dir);
    free(n->data);
    n->data = NULL;
}

static struct holding *find(const struct sched_node_data *d, const char *id)
{
    for (size_t i = 0; d != NULL && i < d->n; i++) {
        if (strcmp(d->h[i].id, id) == 0)
            return &d->h[i];
    }
    return NULL;
}

static void drop(struct sched_node_data *d, const char *id)
{
    struct holding *h = find(d, id);

    if (h == NULL)
        return;
    holding_release(h);
    *h = d->h[--d->n];
}

/* Copies one reported holding in; 0, -EINVAL for a malformed one, -ENOMEM. */
static int upsert(struct sched_node_data *d, const Gs__DatasetHolding *m)
{
    struct holding *h, fresh = {0};
    int rc;

    if (m->dataset == NULL || !gs_data_id_valid(m->dataset))
        return -EINVAL;
    snprintf(fresh.id, sizeof(fresh.id), "%s", m->dataset);
    fresh.shards = m->shards;
    rc = gs_held_read_new(&m->held, m->held_runs, m->n_held_runs, m->shards, &fresh.held);
    fresh.source = rc == 0 ? strdup(m->source != NULL ? m->source : "") : NULL;
    if (rc == 0 && fresh.source == NULL)
        rc = -ENOMEM;
    if (rc < 0) {
        holding_release(&fresh);
        return rc;
    }
    fresh.bytes_held = m->bytes_held;
    fresh.bytes_total = m->bytes_total;
    fresh.last_used_ms = m->last_used_ms;
    h = find(d, fresh.id);
    if (h == NULL) {
        if (d->n >= MAX_DATASETS_PER_NODE) {
            holding_release(&fresh);
            return -E2BIG;
        }
        if (d->n == d->cap) {
            size_t cap = d->cap > 0 ? d->cap * 2 : 8;
            struct holding *grown = realloc(d->h, cap * sizeof(*grown));

            if (grown == NULL) {
                holding_release(&fresh);
                return -ENOMEM;
            }
            d->h = grown;
            d->cap = cap;
        }
        h = &d->h[d->n++];
    } else {
        holding_release(h);
    }
    *h = fresh;
    return 0;
}

void sched_data_holdings(struct sched_ctx *s, struct sched_node *n, const Gs__DataHoldings *m)
{
    struct sched_node_data *d = node_data(n);
    size_t bad = 0;

    (void)s;
    if (d == NULL) {
        GS_LOG(GS_LOG_ERROR, "node=%s out of memory keeping its data holdings", n->name);
        return;
    }
    if (m->full)
        clear_holdings(d);
    for (size_t i = 0; i < m->n_removed; i++)
        drop(d, m->removed[i] != NULL ? m->removed[i] : "");
    for (size_t i = 0; i < m->n_datasets; i++) {
        if (upsert(d, m->datasets[i]) < 0)
            bad++;
    }
    d->used_bytes = m->used_bytes;
    d->cap_bytes = m->cap_bytes;
    free(d->data_dir);
    d->data_dir = strdup(m->data_dir != NULL ? m->data_dir : "");
    if (bad > 0)
        GS_LOG(GS_LOG_WARN, "node=%s skipped=%zu data holdings malformed or over the limit",
               n->name, bad);
    GS_LOG(GS_LOG_DEBUG, "node=%s full=%d datasets=%zu removed=%zu used_bytes=%llu data holdings",
           n->name, (int)m->full, m->n_datasets, m->n_removed, (unsigned long long)m->used_bytes);
}

uint64_t sched_data_node_bytes(const struct sched_node *n, const char *id)
{
    const struct holding *h = find(n->data, id);

    return h != NULL ? h->bytes_held : 0;
}

/* ---- LaunchTasks ---- */

/* h's message, its shards in w (released by the caller); runs_ok as gs_held_wire_init's. */
static int holding_msg(Gs__DatasetHolding *m, struct gs_held_wire *w, const struct holding *h,
                       const char *id, uint32_t shards, bool runs_ok)
{
    gs__dataset_holding__init(m);
    memset(w, 0, sizeof(*w));
    m->dataset = (char *)id;
    m->shards = shards;
    if (h == NULL || h->shards != shards)
        return 0; /* nothing known (or a different manifest of the same id: impossible) */
    if (gs_held_wire_init(w, h->held, shards, runs_ok) < 0)
        return -ENOMEM;
    m->held = w->bits;
    m->n_held_runs = w->nruns;
    m->held_runs = w->runs;
    m->bytes_held = h->bytes_held;
    m->bytes_total = h->bytes_total;
    m->last_used_ms = h->last_used_ms;
    m->source = h->source;
    return 0;
}

static bool in_allocation(const struct sched_job *job, const struct sched_node *n)
{
    for (uint32_t i = 0; i < job->alloc.nnodes; i++) {
        if (job->alloc.nodes[i].node == n->index)
            return true;
    }
    return false;
}

/* Shards of missing (len bytes) that h holds. */
static size_t covers(const struct holding *h, const uint8_t *missing, size_t len)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++)
        n += (size_t)__builtin_popcount(h->held[i] & missing[i]);
    return n;
}

/* The node outside the allocation, reachable for its peers, holding the most of missing. */
static struct sched_node *best_peer(struct sched_ctx *s, const struct sched_job *job,
                                    const uint8_t *missing, size_t len, size_t *ret_n)
{
    struct sched_node *best = NULL;

    *ret_n = 0;
    for (size_t i = 0; i < s->nnodes; i++) {
        struct sched_node *node = s->nodes[i];
        const struct holding *h = find(node->data, job->spec->data.id);
        size_t n;

        if (h == NULL || h->shards != job->spec->data.shards || node->conn == NULL ||
            node->data_port == 0 || in_allocation(job, node))
            continue;
        n = covers(h, missing, len);
        if (n > *ret_n) {
            *ret_n = n;
            best = node;
        }
    }
    return best;
}

/*
 * Nodes outside the job whose caches hold shards none of its nodes holds, the most useful
 * first, while they add some: its workers fetch those from them before the source.
 */
static int extra_peers(struct sched_ctx *s, const struct sched_job *job,
                       struct sched_data_launch *m, bool runs_ok)
{
    size_t len = ((size_t)job->spec->data.shards + 7) / 8, n;
    uint8_t *missing = malloc(len + 1);
    struct sched_node *node;

    if (missing == NULL)
        return -ENOMEM;
    memset(missing, 0xff, len);
    if (job->spec->data.shards % 8 != 0)
        missing[len - 1] = (uint8_t)((1u << (job->spec->data.shards % 8)) - 1);
    for (uint32_t k = 0; k < job->alloc.nnodes; k++) {
        const struct sched_node *an = sched_node_at(s, job->alloc.nodes[k].node);
        const struct holding *h = an != NULL ? find(an->data, job->spec->data.id) : NULL;

        for (size_t i = 0; h != NULL && h->shards == job->spec->data.shards && i < len; i++)
            missing[i] &= (uint8_t)~h->held[i];
    }
    while (m->msg.n_peers < SCHED_DATA_EXTRA_PEERS &&
           (node = best_peer(s, job, missing, len, &n)) != NULL) {
        const struct holding *h = find(node->data, job->spec->data.id);
        Gs__DataPeer *p = &m->peers[m->msg.n_peers];

        struct gs_held_wire *w = &m->peer_wires[m->msg.n_peers];

        gs__data_peer__init(p);
        p->node = node->name;
        p->address = (char *)sched_node_address(node);
        p->port = node->data_port;
        if (gs_held_wire_init(w, h->held, job->spec->data.shards, runs_ok) < 0) {
            free(missing);
            return -ENOMEM;
        }
        p->held = w->bits;
        p->n_held_runs = w->nruns;
        p->held_runs = w->runs;
        m->peer_ptrs[m->msg.n_peers++] = p;
        for (size_t i = 0; i < len; i++)
            missing[i] &= (uint8_t)~h->held[i];
    }
    m->msg.peers = m->peer_ptrs;
    free(missing);
    return 0;
}

int sched_data_launch_init(struct sched_ctx *s, const struct sched_job *job,
                           struct sched_data_launch *m)
{
    const struct gs_jobdata *d = &job->spec->data;
    size_t n = job->alloc.nnodes;
    bool runs_ok = true;
    int rc = 0;

    memset(m, 0, sizeof(*m));
    m->holdings = calloc(n + 1, sizeof(*m->holdings));
    m->ptrs = calloc(n + 1, sizeof(*m->ptrs));
    m->wires = calloc(n + 1, sizeof(*m->wires));
    m->ports = calloc(n + 1, sizeof(*m->ports));
    if (m->holdings == NULL || m->ptrs == NULL || m->wires == NULL || m->ports == NULL) {
        sched_data_launch_release(m);
        return -ENOMEM;
    }
    /* Every node must read the holdings the same way: runs only when all of them can. */
    for (size_t i = 0; i < n; i++) {
        const struct sched_node *node = sched_node_at(s, job->alloc.nodes[i].node);
        const Gs__Hello *peer =
            node != NULL && node->conn != NULL ? gs_proto_conn_peer_hello(node->conn) : NULL;

        if (peer == NULL || peer->protocol_minor < GS_PROTO_MINOR_HELD_RUNS)
            runs_ok = false;
    }
    gs__job_launch_data__init(&m->msg);
    gs__job_data__init(&m->data);
    m->data.dataset = (char *)d->id;
    m->data.source = d->source != NULL ? d->source : "";
    m->data.stage = d->stage == GS_DATA_STAGE_STREAM ? GS__DATA_STAGE__DATA_STAGE_STREAM
                                                     : GS__DATA_STAGE__DATA_STAGE_BEFORE;
    m->data.shards = d->shards;
    m->data.bytes = d->bytes;
    m->data.tolerance = d->tolerance;
    m->data.seed = d->seed;
    for (size_t i = 0; i < n; i++) {
        struct sched_node *node = sched_node_at(s, job->alloc.nodes[i].node);

        if (rc == 0)
            rc = holding_msg(&m->holdings[i], &m->wires[i],
                             node != NULL ? find(node->data, d->id) : NULL, d->id, d->shards,
                             runs_ok);
        m->ptrs[i] = &m->holdings[i];
        m->ports[i] = node != NULL ? node->data_port : 0;
    }
    m->msg.data = &m->data;
    m->msg.n_holdings = n;
    m->msg.holdings = m->ptrs;
    m->msg.n_peer_ports = n;
    m->msg.peer_ports = m->ports;
    if (rc == 0)
        rc = extra_peers(s, job, m, runs_ok);
    if (rc < 0)
        sched_data_launch_release(m);
    return rc;
}

void sched_data_launch_release(struct sched_data_launch *m)
{
    for (size_t i = 0; m->wires != NULL && i < m->msg.n_holdings; i++)
        gs_held_wire_release(&m->wires[i]);
    for (size_t i = 0; i < m->msg.n_peers; i++)
        gs_held_wire_release(&m->peer_wires[i]);
    free(m->wires);
    free(m->holdings);
    free(m->ptrs);
    free(m->ports);
    memset(m, 0, sizeof(*m));
}

void sched_data_job_report(struct sched_ctx *s, struct sched_node *n, const Gs__JobDataReport *r)
{
    struct sched_job *job = sched_jobs_find(s->jobs, r->job_id);
    struct sched_job_usage *u;

    if (job == NULL || job->attempt != r->attempt) {
        GS_LOG(GS_LOG_DEBUG, "node=%s job=%llu attempt=%u data report for no such attempt", n->name,
               (unsigned long long)r->job_id, r->attempt);
        return;
    }
    u = &job->usage;
    u->data = true;
    u->data_bytes_local += r->bytes_local;
    u->data_bytes_peer += r->bytes_peer;
    u->data_bytes_source += r->bytes_source;
    if (r->stage_ms > u->data_stage_ms)
        u->data_stage_ms = r->stage_ms;
    GS_LOG(GS_LOG_INFO,
           "node=%s job=%llu shards_read=%u shards_fetched=%u bytes_local=%llu bytes_peer=%llu "
           "bytes_source=%llu stage_ms=%llu job data staged",
           n->name, (unsigned long long)r->job_id, r->shards_read, r->shards_fetched,
           (unsigned long long)r->bytes_local, (unsigned long long)r->bytes_peer,
           (unsigned long long)r->bytes_source, (unsigned long long)r->stage_ms);
}

/* ---- gsched data ---- */

static bool named(const Gs__DataRequest *req, const char *node)
{
    if (req->n_nodes == 0)
        return true;
    for (size_t i = 0; i < req->n_nodes; i++) {
        if (strcmp(req->nodes[i], node) == 0)
            return true;
    }
    return false;
}

/* Every requested node must exist: a typo is an error, not an empty answer. */
static int check_nodes(struct sched_ctx *s, const Gs__DataRequest *req, char *why, size_t size)
{
    for (size_t i = 0; i < req->n_nodes; i++) {
        if (sched_node_find(s, req->nodes[i]) == NULL) {
            snprintf(why, size, "nodes: no node named %s", req->nodes[i]);
            return -ENOENT;
        }
    }
    return 0;
}

struct list_reply {
    Gs__DataReply reply;
    Gs__DataNodeHolding *rows;
    Gs__DataNodeHolding **ptrs;
    Gs__DatasetHolding *holdings;
    struct gs_held_wire *wires;
    size_t n;
};

static int list_rows(struct sched_ctx *s, const Gs__DataRequest *req, bool runs_ok,
                     struct list_reply *l)
{
    size_t total = 0;
    const char *want = req->dataset != NULL && req->dataset[0] != '\0' ? req->dataset : NULL;

    for (size_t i = 0; i < s->nnodes; i++)
        total += s->nodes[i]->data != NULL ? s->nodes[i]->data->n : 0;
    l->rows = calloc(total + 1, sizeof(*l->rows));
    l->ptrs = calloc(total + 1, sizeof(*l->ptrs));
    l->holdings = calloc(total + 1, sizeof(*l->holdings));
    l->wires = calloc(total + 1, sizeof(*l->wires));
    if (l->rows == NULL || l->ptrs == NULL || l->holdings == NULL || l->wires == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < s->nnodes; i++) {
        struct sched_node *node = s->nodes[i];
        const struct sched_node_data *d = node->data;

        for (size_t k = 0; d != NULL && named(req, node->name) && k < d->n; k++) {
            const struct holding *h = &d->h[k];

            if (want != NULL && strcmp(want, h->id) != 0)
                continue;
            gs__data_node_holding__init(&l->rows[l->n]);
            if (holding_msg(&l->holdings[l->n], &l->wires[l->n], h, h->id, h->shards, runs_ok) < 0)
                return -ENOMEM; /* l->n rows so far, each released by the caller */
            l->rows[l->n].node = node->name;
            l->rows[l->n].holding = &l->holdings[l->n];
            l->rows[l->n].used_bytes = d->used_bytes;
            l->rows[l->n].cap_bytes = d->cap_bytes;
            l->ptrs[l->n] = &l->rows[l->n];
            l->n++;
        }
    }
    l->reply.n_holdings = l->n;
    l->reply.holdings = l->ptrs;
    return 0;
}

static void answer_list(struct sched_cli *c, uint64_t request_id, const Gs__DataRequest *req)
{
    struct list_reply l = {.reply = GS__DATA_REPLY__INIT};
    Gs__Envelope env = GS__ENVELOPE__INIT;
    /* A relayed CLI's Hello went to its worker: not knowing its version, send bitmaps. */
    const Gs__Hello *peer = c->conn != NULL ? gs_proto_conn_peer_hello(c->conn) : NULL;

    if (list_rows(c->s, req, peer != NULL && peer->protocol_minor >= GS_PROTO_MINOR_HELD_RUNS, &l) <
        0) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
        goto out;
    }
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_DATA_REPLY;
    env.data_reply = &l.reply;
    sched_cli_reply(c, &env, false);
out:
    for (size_t i = 0; l.wires != NULL && i <= l.n; i++)
        gs_held_wire_release(&l.wires[i]);
    free(l.wires);
    free(l.rows);
    free(l.ptrs);
    free(l.holdings);
}

/* Warm or evict: a DataCommand to each named node that is up and knows datasets. */
static void command(struct sched_cli *c, uint64_t request_id, const Gs__DataRequest *req)
{
    struct sched_ctx *s = c->s;
    Gs__DataCommand cmd = GS__DATA_COMMAND__INIT;
    Gs__UserIdentity user = GS__USER_IDENTITY__INIT;
    Gs__DataReply reply = GS__DATA_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, out = GS__ENVELOPE__INIT;
    char name[64], why[192];
    char **told = calloc(req->n_nodes + s->nnodes + 1, sizeof(*told));
    size_t ntold = 0;

    if (told == NULL) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
        return;
    }
    sched_user_name(c->uid, name, sizeof(name));
    user.uid = c->uid;
    user.gid = c->gid;
    user.username = name;
    cmd.op = req->op;
    cmd.dataset = req->dataset;
    cmd.source = req->source != NULL ? req->source : "";
    cmd.user = &user;
    env.body_case = GS__ENVELOPE__BODY_DATA_COMMAND;
    env.data_command = &cmd;
    for (size_t i = 0; i < s->nnodes; i++) {
        struct sched_node *n = s->nodes[i];
        const Gs__Hello *peer = n->conn != NULL ? gs_proto_conn_peer_hello(n->conn) : NULL;

        if (!named(req, n->name))
            continue;
        if (peer == NULL || peer->protocol_minor < GS_PROTO_MINOR_DATA) {
            if (req->n_nodes > 0) { /* asked for by name: say why not */
                snprintf(why, sizeof(why), "node %s: %s", n->name,
                         peer == NULL ? "its worker is not connected"
                                      : "its worker is too old for datasets");
                sched_cli_error(c, request_id, -EHOSTDOWN, why, false);
                free(told);
                return;
            }
            continue;
        }
        told[ntold++] = n->name;
    }
    for (size_t i = 0; i < ntold; i++)
        gs_proto_conn_send(sched_node_find(s, told[i])->conn, &env);
    GS_LOG(GS_LOG_INFO, "uid=%u op=%d dataset=%s nodes=%zu data command sent", (unsigned)c->uid,
           (int)req->op, req->dataset, ntold);
    reply.n_nodes = ntold;
    reply.nodes = told;
    out.request_id = request_id;
    out.body_case = GS__ENVELOPE__BODY_DATA_REPLY;
    out.data_reply = &reply;
    sched_cli_reply(c, &out, false);
    free(told);
}

void sched_data_request(struct sched_cli *c, uint64_t request_id, const Gs__DataRequest *req)
{
    char why[192];
    bool has_id = req->dataset != NULL && req->dataset[0] != '\0';
    int rc = check_nodes(c->s, req, why, sizeof(why));

    if (rc < 0) {
        sched_cli_error(c, request_id, rc, why, false);
        return;
    }
    if (has_id && !gs_data_id_valid(req->dataset)) {
        sched_cli_error(c, request_id, -EINVAL, "dataset: not a dataset id (32 hex digits)", false);
        return;
    }
    switch (req->op) {
    case GS__DATA_OP__DATA_OP_LIST:
    case GS__DATA_OP__DATA_OP_STAT:
        answer_list(c, request_id, req);
        return;
    case GS__DATA_OP__DATA_OP_WARM:
        if (!has_id || req->source == NULL || req->source[0] != '/') {
            sched_cli_error(c, request_id, -EINVAL,
                            "warm: a dataset id and its absolute directory are needed", false);
            return;
        }
        command(c, request_id, req);
        return;
    case GS__DATA_OP__DATA_OP_EVICT:
        if (!has_id) {
            sched_cli_error(c, request_id, -EINVAL, "evict: which dataset?", false);
            return;
        }
        if (c->uid != 0) { /* caches are shared by every user of a node */
            sched_cli_error(c, request_id, -EPERM, "only root may evict datasets", false);
            return;
        }
        command(c, request_id, req);
        return;
    default:
        sched_cli_error(c, request_id, -EINVAL, "op: list, stat, warm or evict", false);
        return;
    }
}
