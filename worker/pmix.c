/*
 * pmix.c: the node's PMIx server (see pmix.h), over libpmix's server library.
 *
 * libpmix keeps one server per process and calls its host back through plain functions
 * that carry no pointer of ours, so the one server of this process is reached through
 * `server` below: the only file-level state, set by wrk_pmix_new and cleared by close.
 * Those callbacks come on libpmix's own thread. The ones that need the worker (a fence, an
 * abort) copy what they were given into a request, queue it under the mutex and wake the
 * loop (uv_async_send); the loop then numbers the fence, keeps libpmix's callback with it
 * and hands the node's part to the worker. The answer comes back on the loop too, which
 * calls libpmix's callback from there: libpmix moves it to its own thread itself.
 *
 * A step's fences are numbered in the order its tasks here enter them. Every node of the
 * step sees its fences in the same order (its tasks run the same program), so a number
 * names the same fence everywhere, and gschedd joins the parts by it. Fences over part of
 * a step's ranks would break that; they are refused (MPI's wire-up fences the whole step).
 */
#define _GNU_SOURCE

#include "worker/pmix.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "gsched_config.h"

#if GSCHED_HAVE_PMIX

#include <pmix.h>
#include <pmix_server.h>
#include <pthread.h>

/* A fence or an abort from libpmix's thread, for the loop. */
struct pmix_req {
    struct pmix_req *next;
    bool abort;
    uint64_t job_id;
    uint32_t step;
    int status; /* abort */
    char *data; /* fence: the node's part; abort: the message (owned) */
    size_t len;
    pmix_modex_cbfunc_t cb; /* fence: libpmix's, with cbdata */
    void *cbdata;
};

/* A fence of a step waiting for gschedd's answer. */
struct pfence {
    struct pfence *next;
    uint32_t seq;
    pmix_modex_cbfunc_t cb;
    void *cbdata;
};

/* A step registered here (loop thread only). */
struct pstep {
    struct pstep *next;
    uint64_t job_id;
    uint32_t step;
    uint32_t attempt;
    pmix_nspace_t nspace;
    uint32_t next_seq;
    struct pfence *pending;
};

struct wrk_pmix {
    uv_loop_t *loop;
    uv_async_t async;
    wrk_pmix_fence_cb fence;
    wrk_pmix_abort_cb abort_cb;
    void *data;
    struct pstep *steps;
    pthread_mutex_t mu; /* guards queue */
    struct pmix_req *queue, **queue_tail;
    bool started; /* PMIx_server_init succeeded: finalize at close */
    char dir[4096];
};

static struct wrk_pmix *server;

/* "gsched.JOB.STEP" */
static void nspace_of(pmix_nspace_t ns, uint64_t job_id, uint32_t step)
{
    char name[PMIX_MAX_NSLEN + 1];

    snprintf(name, sizeof(name), "gsched.%" PRIu64 ".%" PRIu32, job_id, step);
    PMIX_LOAD_NSPACE(ns, name);
}

static bool parse_nspace(const char *ns, uint64_t *job_id, uint32_t *step)
{
    return sscanf(ns, "gsched.%" SCNu64 ".%" SCNu32, job_id, step) == 2;
}

/* ---- libpmix's thread ---- */

static void enqueue(struct pmix_req *r)
{
    pthread_mutex_lock(&server->mu);
    *server->queue_tail = r;
    server->queue_tail = &r->next;
    pthread_mutex_unlock(&server->mu);
    uv_async_send(&server->async);
}

/* A task connected, or finalized: nothing for the host to do. */
static pmix_status_t on_client(const pmix_proc_t *proc, void *object, pmix_op_cbfunc_t cb,
                               void *cbdata)
{
    (void)proc;
    (void)object;
    (void)cb;
    (void)cbdata;
    return PMIX_OPERATION_SUCCEEDED;
}

static pmix_status_t on_abort(const pmix_proc_t *proc, void *object, int status, const char msg[],
                              pmix_proc_t procs[], size_t nprocs, pmix_op_cbfunc_t cb, void *cbdata)
{
    struct pmix_req *r = calloc(1, sizeof(*r));

    (void)object;
    (void)procs;
    (void)nprocs;
    (void)cb;
    (void)cbdata;
    if (r == NULL || !parse_nspace(proc->nspace, &r->job_id, &r->step)) {
        free(r);
        return PMIX_OPERATION_SUCCEEDED; /* the task exits with its status all the same */
    }
    r->abort = true;
    r->status = status;
    r->data = strdup(msg != NULL ? msg : "");
    enqueue(r);
    return PMIX_OPERATION_SUCCEEDED;
}

static pmix_status_t on_fence(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
                              size_t ninfo, char *data, size_t ndata, pmix_modex_cbfunc_t cb,
                              void *cbdata)
{
    struct pmix_req *r;

    (void)info;
    (void)ninfo;
    if (nprocs != 1 || procs[0].rank != PMIX_RANK_WILDCARD)
        return PMIX_ERR_NOT_SUPPORTED; /* part of a step: see the top */
    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return PMIX_ERR_NOMEM;
    if (!parse_nspace(procs[0].nspace, &r->job_id, &r->step) ||
        (ndata > 0 && (r->data = malloc(ndata)) == NULL)) {
        free(r);
        return PMIX_ERR_BAD_PARAM;
    }
    if (ndata > 0)
        memcpy(r->data, data, ndata);
    r->len = ndata;
    r->cb = cb;
    r->cbdata = cbdata;
    enqueue(r);
    return PMIX_SUCCESS;
}

static pmix_status_t on_dmodex(const pmix_proc_t *proc, const pmix_info_t info[], size_t ninfo,
                               pmix_modex_cbfunc_t cb, void *cbdata)
{
    (void)proc;
    (void)info;
    (void)ninfo;
    (void)cb;
    (void)cbdata;
    return PMIX_ERR_NOT_SUPPORTED; /* fences collect everything: nothing to fetch one by one */
}

/* ---- the loop ---- */

static struct pstep *find_step(struct wrk_pmix *p, uint64_t job_id, uint32_t step)
{
    for (struct pstep *s = p->steps; s != NULL; s = s->next) {
        if (s->job_id == job_id && s->step == step)
            return s;
    }
    return NULL;
}

static void release_buf(void *cbdata)
{
    free(cbdata);
}

static void fail_fence(struct pfence *f)
{
    f->cb(PMIX_ERROR, NULL, 0, f->cbdata, NULL, NULL);
    free(f);
}

static void handle_fence(struct wrk_pmix *p, struct pmix_req *r)
{
    struct pstep *s = find_step(p, r->job_id, r->step);
    struct pfence *f = s != NULL ? calloc(1, sizeof(*f)) : NULL;

    if (f == NULL) {
        GS_LOG(GS_LOG_WARN, "job=%" PRIu64 " step=%" PRIu32 " pmix fence of %s refused", r->job_id,
               r->step, s == NULL ? "a step not registered here" : "no memory");
        r->cb(PMIX_ERROR, NULL, 0, r->cbdata, NULL, NULL);
        return;
    }
    f->seq = s->next_seq++;
    f->cb = r->cb;
    f->cbdata = r->cbdata;
    f->next = s->pending;
    s->pending = f;
    GS_LOG(GS_LOG_DEBUG, "job=%" PRIu64 " step=%" PRIu32 " seq=%" PRIu32 " bytes=%zu pmix fence",
           r->job_id, r->step, f->seq, r->len);
    p->fence(p->data, s->job_id, s->step, s->attempt, f->seq, r->data, r->len);
}

/* Takes what libpmix's thread queued: handled (deliver), or only freed (once libpmix has
 * stopped, its callbacks are gone). */
static void drain(struct wrk_pmix *p, bool deliver)
{
    struct pmix_req *r, *next;

    pthread_mutex_lock(&p->mu);
    r = p->queue;
    p->queue = NULL;
    p->queue_tail = &p->queue;
    pthread_mutex_unlock(&p->mu);
    for (; r != NULL; r = next) {
        next = r->next;
        if (deliver && r->abort)
            p->abort_cb(p->data, r->job_id, r->step, r->status, r->data);
        else if (deliver)
            handle_fence(p, r);
        free(r->data);
        free(r);
    }
}

static void on_async(uv_async_t *async)
{
    drain(async->data, true);
}

int wrk_pmix_new(uv_loop_t *loop, const char *dir, const char *node_name, wrk_pmix_fence_cb fence,
                 wrk_pmix_abort_cb abort_cb, void *data, struct wrk_pmix **ret,
                 struct gs_error *err)
{
    pmix_server_module_t module = {
        .client_connected = on_client,
        .client_finalized = on_client,
        .abort = on_abort,
        .fence_nb = on_fence,
        .direct_modex = on_dmodex,
    };
    pmix_info_t info[3];
    struct wrk_pmix *p;
    pmix_status_t prc;
    int rc;

    if (server != NULL)
        return gs_error_set(err, -EALREADY, 0, 0, "a PMIx server runs already");
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return gs_error_set(err, -errno, 0, 0, "PMIx: cannot make %s: %s", dir,
                            gs_strerror(-errno));
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
    snprintf(p->dir, sizeof(p->dir), "%s", dir);
    p->loop = loop;
    p->fence = fence;
    p->abort_cb = abort_cb;
    p->data = data;
    p->queue_tail = &p->queue;
    pthread_mutex_init(&p->mu, NULL);
    rc = uv_async_init(loop, &p->async, on_async);
    if (rc < 0) {
        pthread_mutex_destroy(&p->mu);
        free(p);
        return gs_error_set(err, -EIO, 0, 0, "PMIx: %s", uv_strerror(rc));
    }
    p->async.data = p;
    server = p;
    PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, dir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[1], PMIX_SYSTEM_TMPDIR, dir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[2], PMIX_HOSTNAME, node_name, PMIX_STRING);
    prc = PMIx_server_init(&module, info, 3);
    for (size_t i = 0; i < 3; i++)
        PMIX_INFO_DESTRUCT(&info[i]);
    if (prc != PMIX_SUCCESS) {
        gs_error_set(err, -EIO, 0, 0, "PMIx server: %s", PMIx_Error_string(prc));
        wrk_pmix_close(p);
        return -EIO;
    }
    p->started = true;
    GS_LOG(GS_LOG_INFO, "dir=%s version=\"%s\" pmix server started", dir, PMIx_Get_version());
    *ret = p;
    return 0;
}

static void drop_step(struct wrk_pmix *p, struct pstep *s)
{
    for (struct pstep **at = &p->steps; *at != NULL; at = &(*at)->next) {
        if (*at == s) {
            *at = s->next;
            break;
        }
    }
    while (s->pending != NULL) {
        struct pfence *f = s->pending;

        s->pending = f->next;
        fail_fence(f);
    }
    PMIx_server_deregister_nspace(s->nspace, NULL, NULL);
    free(s);
}

static void on_closed(uv_handle_t *handle)
{
    struct wrk_pmix *p = handle->data;

    pthread_mutex_destroy(&p->mu);
    free(p);
}

void wrk_pmix_close(struct wrk_pmix *p)
{
    if (p == NULL)
        return;
    while (p->steps != NULL)
        drop_step(p, p->steps);
    if (p->started)
        PMIx_server_finalize(); /* its thread has stopped: nothing is queued after this */
    drain(p, false);
    if (rmdir(p->dir) < 0 && errno != ENOENT)
        GS_LOG(GS_LOG_DEBUG, "dir=%s error=\"%s\" pmix directory left", p->dir,
               gs_strerror(-errno));
    server = NULL;
    uv_close((uv_handle_t *)&p->async, on_closed);
}

/* The step's maps: node names and each node's ranks, as PMIx_generate_regex and
 * PMIx_generate_ppn read them ("n1,n2" and "0,1;2,3"), and this node's ranks ("2,3"). */
static int maps(const struct wrk_pmix_step *s, char **ret_nodes, char **ret_ranks, char **ret_peers)
{
    size_t nodes_len = 1, ranks_len = s->nnodes + 1;
    char *nodes, *ranks, *peers;
    size_t at = 0, rat = 0, pat = 0;

    for (size_t i = 0; i < s->nnodes; i++)
        nodes_len += strlen(s->nodes[i]) + 1;
    ranks_len += s->nranks * 12;
    nodes = malloc(nodes_len);
    ranks = malloc(ranks_len);
    peers = malloc(ranks_len);
    if (nodes == NULL || ranks == NULL || peers == NULL) {
        free(nodes);
        free(ranks);
        free(peers);
        return -ENOMEM;
    }
    nodes[0] = ranks[0] = peers[0] = '\0';
    for (size_t i = 0; i < s->nnodes; i++) {
        bool first = true;

        at += (size_t)snprintf(nodes + at, nodes_len - at, "%s%s", i > 0 ? "," : "", s->nodes[i]);
        if (i > 0)
            rat += (size_t)snprintf(ranks + rat, ranks_len - rat, ";");
        for (size_t r = 0; r < s->nranks; r++) {
            if (s->rank_nodes[r] != i)
                continue;
            rat += (size_t)snprintf(ranks + rat, ranks_len - rat, "%s%zu", first ? "" : ",", r);
            if (i == s->here)
                pat += (size_t)snprintf(peers + pat, ranks_len - pat, "%s%zu", first ? "" : ",", r);
            first = false;
        }
    }
    *ret_nodes = nodes;
    *ret_ranks = ranks;
    *ret_peers = peers;
    return 0;
}

/* Registers the namespace: its size, its nodes and which ranks each runs, this node's. */
static int register_nspace(const struct wrk_pmix_step *s, const pmix_nspace_t ns, uint32_t local,
                           struct gs_error *err)
{
    char *nodes = NULL, *ranks = NULL, *peers = NULL, *node_map = NULL, *proc_map = NULL;
    uint32_t size = (uint32_t)s->nranks, nnodes = (uint32_t)s->nnodes;
    pmix_info_t *info = NULL;
    size_t n = 0;
    pmix_status_t prc = PMIX_ERR_NOMEM;
    int rc = maps(s, &nodes, &ranks, &peers);

    if (rc < 0)
        goto out;
    if (PMIx_generate_regex(nodes, &node_map) != PMIX_SUCCESS ||
        PMIx_generate_ppn(ranks, &proc_map) != PMIX_SUCCESS) {
        rc = -EINVAL;
        gs_error_set(err, rc, 0, 0, "PMIx: cannot describe nodes %s with ranks %s", nodes, ranks);
        goto out;
    }
    PMIX_INFO_CREATE(info, 9);
    if (info == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    PMIX_INFO_LOAD(&info[n++], PMIX_UNIV_SIZE, &size, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[n++], PMIX_JOB_SIZE, &size, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[n++], PMIX_MAX_PROCS, &size, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[n++], PMIX_LOCAL_SIZE, &local, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[n++], PMIX_NUM_NODES, &nnodes, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[n++], PMIX_NODE_MAP, node_map, PMIX_REGEX);
    PMIX_INFO_LOAD(&info[n++], PMIX_PROC_MAP, proc_map, PMIX_REGEX);
    PMIX_INFO_LOAD(&info[n++], PMIX_LOCAL_PEERS, peers, PMIX_STRING);
    PMIX_INFO_LOAD(&info[n++], PMIX_JOBID, ns, PMIX_STRING);
    /* Blocking (no callback): libpmix's thread does it while the loop waits, briefly. */
    prc = PMIx_server_register_nspace(ns, (int)local, info, n, NULL, NULL);
    rc = prc == PMIX_SUCCESS || prc == PMIX_OPERATION_SUCCEEDED ? 0 : -EIO;
    if (rc < 0)
        gs_error_set(err, rc, 0, 0, "PMIx: cannot register %s: %s", ns, PMIx_Error_string(prc));
out:
    if (info != NULL)
        PMIX_INFO_FREE(info, 9);
    free(node_map);
    free(proc_map);
    free(nodes);
    free(ranks);
    free(peers);
    if (rc == -ENOMEM)
        gs_error_set(err, rc, 0, 0, "out of memory");
    return rc;
}

int wrk_pmix_step_add(struct wrk_pmix *p, const struct wrk_pmix_step *s, struct gs_error *err)
{
    struct pstep *st;
    uint32_t local = 0;
    int rc;

    if (find_step(p, s->job_id, s->step) != NULL)
        return 0; /* registered by an earlier launch here */
    for (size_t r = 0; r < s->nranks; r++) {
        if (s->rank_nodes[r] >= s->nnodes)
            return gs_error_set(err, -EINVAL, 0, 0, "PMIx: rank %zu on no node of the step", r);
        local += s->rank_nodes[r] == s->here;
    }
    st = calloc(1, sizeof(*st));
    if (st == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
    st->job_id = s->job_id;
    st->step = s->step;
    st->attempt = s->attempt;
    nspace_of(st->nspace, s->job_id, s->step);
    rc = register_nspace(s, st->nspace, local, err);
    for (size_t r = 0; rc == 0 && r < s->nranks; r++) {
        pmix_proc_t proc;
        pmix_status_t prc;

        if (s->rank_nodes[r] != s->here)
            continue;
        PMIX_LOAD_PROCID(&proc, st->nspace, (pmix_rank_t)r);
        prc = PMIx_server_register_client(&proc, s->uid, s->gid, NULL, NULL, NULL);
        if (prc != PMIX_SUCCESS && prc != PMIX_OPERATION_SUCCEEDED)
            rc = gs_error_set(err, -EIO, 0, 0, "PMIx: cannot register rank %zu: %s", r,
                              PMIx_Error_string(prc));
    }
    if (rc < 0) {
        PMIx_server_deregister_nspace(st->nspace, NULL, NULL);
        free(st);
        return rc;
    }
    st->next = p->steps;
    p->steps = st;
    GS_LOG(GS_LOG_INFO,
           "job=%" PRIu64 " step=%" PRIu32 " nspace=%s ranks=%zu local=%" PRIu32
           " pmix step registered",
           s->job_id, s->step, st->nspace, s->nranks, local);
    return 0;
}

int wrk_pmix_task_env(struct wrk_pmix *p, uint64_t job_id, uint32_t step, uint32_t rank,
                      char ***ret_env)
{
    struct pstep *s = find_step(p, job_id, step);
    pmix_proc_t proc;
    char **env = NULL;
    pmix_status_t prc;

    if (s == NULL)
        return -ENOENT;
    PMIX_LOAD_PROCID(&proc, s->nspace, rank);
    prc = PMIx_server_setup_fork(&proc, &env);
    if (prc != PMIX_SUCCESS) {
        wrk_pmix_env_free(env);
        return prc == PMIX_ERR_NOMEM ? -ENOMEM : -EIO;
    }
    *ret_env = env;
    return 0;
}

void wrk_pmix_env_free(char **env)
{
    for (size_t i = 0; env != NULL && env[i] != NULL; i++)
        free(env[i]);
    free(env);
}

void wrk_pmix_step_end(struct wrk_pmix *p, uint64_t job_id, uint32_t step)
{
    struct pstep *s = p != NULL ? find_step(p, job_id, step) : NULL;

    if (s == NULL)
        return;
    GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " step=%" PRIu32 " pmix step ended here", job_id, step);
    drop_step(p, s);
}

void wrk_pmix_fence_done(struct wrk_pmix *p, uint64_t job_id, uint32_t step, uint32_t seq, int code,
                         const void *bytes, size_t len)
{
    struct pstep *s = p != NULL ? find_step(p, job_id, step) : NULL;
    struct pfence **at = s != NULL ? &s->pending : NULL, *f;
    char *copy;

    while (at != NULL && *at != NULL && (*at)->seq != seq)
        at = &(*at)->next;
    if (at == NULL || *at == NULL) {
        GS_LOG(GS_LOG_WARN,
               "job=%" PRIu64 " step=%" PRIu32 " seq=%" PRIu32
               " pmix fence answer for no fence here, dropped",
               job_id, step, seq);
        return;
    }
    f = *at;
    *at = f->next;
    copy = code == 0 ? malloc(len > 0 ? len : 1) : NULL;
    if (copy == NULL) {
        GS_LOG(GS_LOG_WARN,
               "job=%" PRIu64 " step=%" PRIu32 " seq=%" PRIu32 " code=%d pmix fence "
               "failed",
               job_id, step, seq, code == 0 ? -ENOMEM : code);
        fail_fence(f);
        return;
    }
    if (len > 0)
        memcpy(copy, bytes, len);
    f->cb(PMIX_SUCCESS, copy, len, f->cbdata, release_buf, copy);
    free(f);
}

#else /* !GSCHED_HAVE_PMIX */

int wrk_pmix_new(uv_loop_t *loop, const char *dir, const char *node_name, wrk_pmix_fence_cb fence,
                 wrk_pmix_abort_cb abort_cb, void *data, struct wrk_pmix **ret,
                 struct gs_error *err)
{
    (void)loop;
    (void)dir;
    (void)node_name;
    (void)fence;
    (void)abort_cb;
    (void)data;
    (void)ret;
    return gs_error_set(err, -EOPNOTSUPP, 0, 0,
                        "this gsched-workerd was built without PMIx (libpmix-dev): srun "
                        "--mpi=pmix needs it");
}

void wrk_pmix_close(struct wrk_pmix *p)
{
    (void)p;
}

int wrk_pmix_step_add(struct wrk_pmix *p, const struct wrk_pmix_step *s, struct gs_error *err)
{
    (void)p;
    (void)s;
    return gs_error_set(err, -EOPNOTSUPP, 0, 0, "no PMIx server");
}

int wrk_pmix_task_env(struct wrk_pmix *p, uint64_t job_id, uint32_t step, uint32_t rank,
                      char ***ret_env)
{
    (void)p;
    (void)job_id;
    (void)step;
    (void)rank;
    (void)ret_env;
    return -EOPNOTSUPP;
}

void wrk_pmix_env_free(char **env)
{
    (void)env;
}

void wrk_pmix_step_end(struct wrk_pmix *p, uint64_t job_id, uint32_t step)
{
    (void)p;
    (void)job_id;
    (void)step;
}

void wrk_pmix_fence_done(struct wrk_pmix *p, uint64_t job_id, uint32_t step, uint32_t seq, int code,
                         const void *bytes, size_t len)
{
    (void)p;
    (void)job_id;
    (void)step;
    (void)seq;
    (void)code;
    (void)bytes;
    (void)len;
}

#endif
