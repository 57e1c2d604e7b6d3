/*
 * pmi.c: the PMI server of srun --mpi=pmi2 steps (see pmi.h for what it is for; pmi1.c and
 * pmi2.c read and answer the two wire protocols). A step here holds its key/value space
 * (keys from every node, sorted, after each barrier), the puts of this node's ranks since
 * the last barrier, its node attributes (PMI-2's, this node's alone) and one connection per
 * local rank: the worker's end of a socket pair whose other end the task inherits.
 *
 * A barrier's part is the node's new puts as records, each a 4-byte little-endian length
 * and the key, then the same for the value; gschedd joins the parts of the step's nodes in
 * node order, so a key put twice keeps the value of the later node (a key is put once in
 * practice: each rank puts its own). Within a step the space is bounded at PMI_BYTES_MAX,
 * a request at PMI_LINE_MAX: past either the put fails or the connection closes, as for
 * any client that sends what no MPI library does.
 */
#include "worker/pmi.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/log.h"
#include "worker/pmi_internal.h"

int wrk_pmi_new(uv_loop_t *loop, wrk_pmix_fence_cb fence, wrk_pmix_abort_cb abort_cb, void *data,
                struct wrk_pmi **ret)
{
    struct wrk_pmi *p = calloc(1, sizeof(*p));

    if (p == NULL)
        return -ENOMEM;
    p->loop = loop;
    p->fence = fence;
    p->abort_cb = abort_cb;
    p->data = data;
    *ret = p;
    return 0;
}

/* --- the key/value space ------------------------------------------------------------------- */

int pmi_kv_make(struct pmi_kv *kv, const char *key, size_t klen, const char *value, size_t vlen,
                uint64_t order)
{
    char *m = malloc(klen + vlen + 2);

    if (m == NULL)
        return -ENOMEM;
    memcpy(m, key, klen);
    m[klen] = '\0';
    memcpy(m + klen + 1, value, vlen);
    m[klen + 1 + vlen] = '\0';
    *kv = (struct pmi_kv){m, m + klen + 1, order};
    return 0;
}

static int kv_order(const void *a, const void *b)
{
    const struct pmi_kv *x = a, *y = b;
    int c = strcmp(x->key, y->key);

    if (c != 0)
        return c;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int kv_key(const void *key, const void *elem)
{
    return strcmp(key, ((const struct pmi_kv *)elem)->key);
}

/* Sorts the space and keeps the latest of each key. */
static void kv_settle(struct pmi_step *st)
{
    size_t out = 0;

    if (st->nkv == 0)
        return;
    qsort(st->kv, st->nkv, sizeof(*st->kv), kv_order);
    for (size_t i = 0; i < st->nkv; i++) {
        if (i + 1 < st->nkv && strcmp(st->kv[i].key, st->kv[i + 1].key) == 0) {
            st->bytes -= strlen(st->kv[i].key) + strlen(st->kv[i].value);
            free(st->kv[i].key);
            continue;
        }
        st->kv[out++] = st->kv[i];
    }
    st->nkv = out;
}

static const char *kv_get(const struct pmi_step *st, const char *key)
{
    const struct pmi_kv *kv =
        st->nkv > 0 ? bsearch(key, st->kv, st->nkv, sizeof(*kv), kv_key) : NULL;

    if (kv != NULL)
        return kv->value;
    for (size_t i = st->nputs; i-- > 0;) /* a rank's own puts, before the barrier */
        if (strcmp(st->puts[i].key, key) == 0)
            return st->puts[i].value;
    return NULL;
}

void pmi_kv_free(struct pmi_kv *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].key);
    free(v);
}

/* Appends n records from bytes to the space (unsorted; kv_settle next). 0, -EPROTO when
 * they are cut short, -E2BIG past PMI_BYTES_MAX, -ENOMEM. */
static int kv_take(struct pmi_step *st, const uint8_t *bytes, size_t len)
{
    size_t at = 0;

    while (at < len) {
        uint32_t kl, vl;
        const uint8_t *key, *value;
        int rc;

        if (len - at < 4)
            return -EPROTO;
        kl = (uint32_t)bytes[at] | (uint32_t)bytes[at + 1] << 8 | (uint32_t)bytes[at + 2] << 16 |
             (uint32_t)bytes[at + 3] << 24;
        at += 4;
        if (len - at < kl || len - at - kl < 4)
            return -EPROTO;
        key = bytes + at;
        at += kl;
        vl = (uint32_t)bytes[at] | (uint32_t)bytes[at + 1] << 8 | (uint32_t)bytes[at + 2] << 16 |
             (uint32_t)bytes[at + 3] << 24;
        at += 4;
        if (len - at < vl)
            return -EPROTO;
        value = bytes + at;
        at += vl;
        if (memchr(key, '\0', kl) != NULL || memchr(value, '\0', vl) != NULL)
            return -EPROTO;
        if ((size_t)kl + vl > PMI_BYTES_MAX - st->bytes)
            return -E2BIG;
        rc = pmi_grow(&st->kv, &st->cap_kv, st->nkv, sizeof(*st->kv), PMI_KEYS_MAX);
        if (rc < 0)
            return rc == -ENOSPC ? -E2BIG : rc;
        rc = pmi_kv_make(&st->kv[st->nkv], (const char *)key, kl, (const char *)value, vl,
                         st->order++);
        if (rc < 0)
            return rc;
        st->nkv++;
        st->bytes += (size_t)kl + vl;
    }
    return 0;
}

static void put_u32(struct gs_buf *b, size_t n)
{
    uint8_t le[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};

    gs_buf_append(b, le, sizeof(le));
}

/* --- answers ---------------------------------------------------------------------------------- */

struct pmi_write {
    uv_write_t req;
    char text[];
};

static void written(uv_write_t *req, int status)
{
    (void)status; /* a task gone: its end of file closes the connection */
    free(req);
}

void pmi_write(struct pmi_conn *c, const char *text, size_t len)
{
    struct pmi_write *w;
    uv_buf_t buf;

    if (uv_is_closing((uv_handle_t *)&c->pipe))
        return;
    w = malloc(sizeof(*w) + len + 1);
    if (w == NULL) {
        pmi_conn_close(c);
        return;
    }
    memcpy(w->text, text, len);
    buf = uv_buf_init(w->text, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&c->pipe, &buf, 1, written) < 0) {
        free(w);
        pmi_conn_close(c);
    }
}

/* --- barriers --------------------------------------------------------------------------------- */

/* Ends the barrier of every local rank in it: code 0, or the failure the clients see. */
static void barrier_out(struct pmi_step *st, int code)
{
    for (struct pmi_conn *c = st->conns; c != NULL; c = c->next) {
        if (!c->in_barrier)
            continue;
        c->in_barrier = false;
        if (c->version == 2)
            pmi2_fence_out(c, code);
        else
            pmi1_fence_out(c, code);
    }
    st->in_barrier = 0;
}

/* Every local rank is in the barrier: this node's new puts go to gschedd. */
static void fence_start(struct wrk_pmi *p, struct pmi_step *st)
{
    struct gs_buf part = GS_BUF_INIT;
    uint32_t seq = st->seq++;

    for (size_t i = 0; i < st->nputs; i++) {
        size_t kl = strlen(st->puts[i].key), vl = strlen(st->puts[i].value);

        st->bytes -= kl + vl; /* counted again when they come back */
        put_u32(&part, kl);
        gs_buf_append(&part, st->puts[i].key, kl);
        put_u32(&part, vl);
        gs_buf_append(&part, st->puts[i].value, vl);
    }
    pmi_kv_free(st->puts, st->nputs);
    st->puts = NULL;
    st->nputs = st->cap_puts = 0;
    if (gs_buf_error(&part) < 0) {
        barrier_out(st, gs_buf_error(&part));
        gs_buf_release(&part);
        return;
    }
    st->fencing = true;
    GS_LOG(GS_LOG_DEBUG, "job=%" PRIu64 " step=%" PRIu32 " seq=%" PRIu32 " bytes=%zu pmi fence",
           st->job_id, st->step, seq, part.len);
    /* It may answer at once (no gschedd): wrk_pmi_fence_done then ends the barrier. */
    p->fence(p->data, st->job_id, st->step, st->attempt, seq, part.data, part.len);
    gs_buf_release(&part);
}

/* --- what both protocols ask ------------------------------------------------------------------ */

int pmi_put(struct pmi_step *st, const char *key, const char *value, const char **why)
{
    size_t kl = strlen(key), vl = strlen(value);
    int rc;

    if (kl == 0) {
        *why = "a put needs a key";
        return -EINVAL;
    }
    if (kl + vl > PMI_BYTES_MAX - st->bytes) {
        *why = "the step's keys and values are past 64 MiB";
        return -E2BIG;
    }
    rc = pmi_grow(&st->puts, &st->cap_puts, st->nputs, sizeof(*st->puts), PMI_KEYS_MAX);
    if (rc == 0)
        rc = pmi_kv_make(&st->puts[st->nputs], key, kl, value, vl, 0);
    if (rc < 0) {
        *why = rc == -ENOSPC ? "the node's ranks put over a million keys before a barrier"
                             : "out of memory";
        return rc;
    }
    st->nputs++;
    st->bytes += kl + vl;
    return 0;
}

const char *pmi_get(const struct pmi_step *st, const char *key)
{
    return strcmp(key, "PMI_process_mapping") == 0 ? st->mapping : kv_get(st, key);
}

int pmi_grow(void *arr, size_t *cap, size_t n, size_t elem, size_t max)
{
    void **at = arr, *v;
    size_t want;

    if (n < *cap)
        return 0;
    if (n >= max)
        return -ENOSPC;
    want = *cap < 16 ? 16 : *cap * 2;
    if (want > max)
        want = max;
    v = realloc(*at, want * elem);
    if (v == NULL)
        return -ENOMEM;
    *at = v;
    *cap = want;
    return 0;
}

const char *pmi_arg(const struct pmi_args *a, const char *key)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->k[i], key) == 0)
            return a->v[i];
    return NULL;
}

void pmi_barrier_in(struct pmi_conn *c)
{
    struct pmi_step *st = c->st;

    if (c->in_barrier)
        return;
    c->in_barrier = true;
    if (++st->in_barrier == st->nlocal)
        fence_start(c->p, st);
}

void pmi_abort(struct pmi_conn *c, int code, const char *msg)
{
    struct wrk_pmi *p = c->p;

    /* The worker ends the step's tasks here (this one too) and, through gschedd, elsewhere. */
    p->abort_cb(p->data, c->st->job_id, c->st->step, code, msg);
}

/* --- connections ------------------------------------------------------------------------------ */

static void conn_closed(uv_handle_t *h)
{
    struct pmi_conn *c = h->data;
    struct wrk_pmi *p = c->p;

    gs_buf_release(&c->in);
    free(c);
    if (--p->handles == 0 && p->closing)
        free(p);
}

/* Closes c; a rank in the barrier leaves it (its task ending fails the fence, gschedd's). */
void pmi_conn_close(struct pmi_conn *c)
{
    struct pmi_step *st = c->st;

    if (uv_is_closing((uv_handle_t *)&c->pipe))
        return;
    if (st != NULL) {
        for (struct pmi_conn **at = &st->conns; *at != NULL; at = &(*at)->next) {
            if (*at == c) {
                *at = c->next;
                break;
            }
        }
        if (c->in_barrier)
            st->in_barrier--;
        if (c->version == 2)
            pmi2_conn_gone(c);
        c->st = NULL;
    }
    uv_close((uv_handle_t *)&c->pipe, conn_closed);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct pmi_conn *c = h->data;

    (void)suggested;
    *buf = uv_buf_init(c->rbuf, sizeof(c->rbuf));
}

/* The next whole request in c's input, handed to its protocol's reader: 1, or 0 when it
 * has not all come. */
static int next_request(struct pmi_conn *c)
{
    char *text = c->in.data, *nl, lenbuf[PMI2_LEN_SIZE + 1], *end;
    unsigned long len;

    if (c->version == 1) {
        if ((nl = memchr(text, '\n', c->in.len)) == NULL)
            return 0;
        *nl = '\0';
        pmi1_request(c, text);
        gs_buf_consume(&c->in, (size_t)(nl - text) + 1);
        return 1;
    }
    if (c->in.len < PMI2_LEN_SIZE)
        return 0;
    memcpy(lenbuf, text, PMI2_LEN_SIZE);
    lenbuf[PMI2_LEN_SIZE] = '\0';
    len = strtoul(lenbuf, &end, 10);
    while (*end == ' ')
        end++;
    if (*end != '\0' || len == 0 || len > PMI_LINE_MAX) {
        GS_LOG(GS_LOG_WARN,
               "job=%" PRIu64 " step=%" PRIu32 " rank=%" PRIu32 " pmi2 request with a bad "
               "length, connection closed",
               c->st->job_id, c->st->step, c->rank);
        pmi_conn_close(c);
        return 0;
    }
    if (c->in.len - PMI2_LEN_SIZE < len)
        return 0;
    /* NUL-terminated in place: the byte after it is the next request's, read first. */
    char first = c->in.len > PMI2_LEN_SIZE + len ? text[PMI2_LEN_SIZE + len] : '\0';

    text[PMI2_LEN_SIZE + len] = '\0';
    pmi2_request(c, text + PMI2_LEN_SIZE, len);
    if (c->in.len > PMI2_LEN_SIZE + len)
        c->in.data[PMI2_LEN_SIZE + len] = first;
    gs_buf_consume(&c->in, PMI2_LEN_SIZE + len);
    return 1;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct pmi_conn *c = s->data;

    if (n < 0 || c->st == NULL) { /* end of file: the task and its children are gone */
        pmi_conn_close(c);
        return;
    }
    if (gs_buf_append(&c->in, buf->base, (size_t)n) < 0) {
        pmi_conn_close(c);
        return;
    }
    while (!uv_is_closing((uv_handle_t *)&c->pipe) && c->in.len > 0 && next_request(c))
        ;
    if (c->in.len > PMI_LINE_MAX + PMI2_LEN_SIZE && !uv_is_closing((uv_handle_t *)&c->pipe)) {
        GS_LOG(GS_LOG_WARN,
               "job=%" PRIu64 " step=%" PRIu32 " rank=%" PRIu32 " pmi request "
               "past %u bytes, connection closed",
               c->st->job_id, c->st->step, c->rank, PMI_LINE_MAX);
        pmi_conn_close(c);
    }
}

/* --- steps ------------------------------------------------------------------------------------ */

static struct pmi_step *find_step(const struct wrk_pmi *p, uint64_t job_id, uint32_t step)
{
    struct pmi_step *st = p != NULL ? p->steps : NULL;

    while (st != NULL && (st->job_id != job_id || st->step != step))
        st = st->next;
    return st;
}

int wrk_pmi_process_mapping(const uint32_t *rank_nodes, size_t n, char *out, size_t size)
{
    size_t at = (size_t)snprintf(out, size, "(vector");

    for (size_t i = 0; i < n && at < size;) {
        uint32_t node = rank_nodes[i];
        size_t len = 1, count = 1, j;

        while (i + len < n && rank_nodes[i + len] == node)
            len++;
        /* Then as many runs of len ranks on the next nodes up. */
        for (j = i + len; j + len <= n && rank_nodes[j] == node + count; j += len, count++) {
            size_t k = 1;

            while (k < len && rank_nodes[j + k] == rank_nodes[j])
                k++;
            if (k < len || (j + len < n && rank_nodes[j + len] == rank_nodes[j]))
                break;
        }
        at += (size_t)snprintf(out + at, size - at, ",(%" PRIu32 ",%zu,%zu)", node, count, len);
        i = j;
    }
    if (at < size)
        at += (size_t)snprintf(out + at, size - at, ")");
    return at < size ? 0 : -ENOSPC;
}

static void step_free(struct pmi_step *st)
{
    while (st->conns != NULL)
        pmi_conn_close(st->conns);
    pmi_kv_free(st->kv, st->nkv);
    pmi_kv_free(st->puts, st->nputs);
    pmi_kv_free(st->attrs, st->nattrs);
    for (size_t i = 0; i < st->nwaits; i++)
        free(st->waits[i].key);
    free(st->waits);
    free(st->rank_nodes);
    free(st->mapping);
    free(st);
}

int wrk_pmi_step_add(struct wrk_pmi *p, const struct wrk_pmix_step *s, struct gs_error *err)
{
    char mapping[PMI_VALLEN_MAX + 1];
    struct pmi_step *st;

    if (find_step(p, s->job_id, s->step) != NULL)
        return gs_error_set(err, -EEXIST, 0, 0,
                            "PMI: step %" PRIu32 " of job %" PRIu64
                            " has a key/value space here already",
                            s->step - 1, s->job_id);
    if (s->nranks == 0 || s->nranks > UINT32_MAX || s->here >= s->nnodes)
        return gs_error_set(err, -EINVAL, 0, 0, "PMI: the launch says no rank's node");
    st = calloc(1, sizeof(*st));
    if (st == NULL || (st->rank_nodes = calloc(s->nranks, sizeof(*st->rank_nodes))) == NULL) {
        free(st);
        return gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
    }
    st->job_id = s->job_id;
    st->step = s->step;
    st->attempt = s->attempt;
    st->size = (uint32_t)s->nranks;
    st->here = (uint32_t)s->here;
    memcpy(st->rank_nodes, s->rank_nodes, s->nranks * sizeof(*st->rank_nodes));
    for (size_t r = 0; r < s->nranks; r++)
        st->nlocal += s->rank_nodes[r] == s->here;
    snprintf(st->kvsname, sizeof(st->kvsname), "gsched.%" PRIu64 ".%" PRIu32, s->job_id,
             s->step - 1);
    /* Past what a get answers, MPICH finds its peers' nodes by itself. */
    if (wrk_pmi_process_mapping(s->rank_nodes, s->nranks, mapping, sizeof(mapping)) == 0)
        st->mapping = strdup(mapping);
    st->next = p->steps;
    p->steps = st;
    GS_LOG(GS_LOG_INFO,
           "job=%" PRIu64 " step=%" PRIu32 " ranks=%" PRIu32 " here=%" PRIu32 " pmi step added",
           st->job_id, st->step, st->size, st->nlocal);
    return 0;
}

/* Frees an environment of wrk_pmi_task's (pmix.c's wrk_pmix_env_free does the same; pmi.c
 * stands without libpmix, as its fuzzer builds it). */
static void env_free(char **env)
{
    for (size_t i = 0; env != NULL && env[i] != NULL; i++)
        free(env[i]);
    free(env);
}

/* Appends "NAME=number" (value NULL) or "NAME=value" to env. 0 or -ENOMEM. */
static int env_add(char **env, size_t *n, const char *name, uint64_t number, const char *value)
{
    char num[24];
    size_t len;

    if (value == NULL) {
        snprintf(num, sizeof(num), "%" PRIu64, number);
        value = num;
    }
    len = strlen(name) + strlen(value) + 2;
    if ((env[*n] = malloc(len)) == NULL)
        return -ENOMEM;
    snprintf(env[(*n)++], len, "%s=%s", name, value);
    return 0;
}

int wrk_pmi_task(struct wrk_pmi *p, uint64_t job_id, uint32_t step, uint32_t rank, int *ret_fd,
                 char ***ret_env)
{
    struct pmi_step *st = find_step(p, job_id, step);
    struct pmi_conn *c;
    char **env = NULL;
    size_t n = 0;
    int sv[2] = {-1, -1}, rc;

    if (st == NULL)
        return -ENOENT;
    if (rank >= st->size || st->rank_nodes[rank] != st->here)
        return -EINVAL;
    for (c = st->conns; c != NULL; c = c->next)
        if (c->rank == rank)
            return -EEXIST;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return -errno;
    c = calloc(1, sizeof(*c));
    env = calloc(5, sizeof(*env));
    rc = c != NULL && env != NULL ? 0 : -ENOMEM;
    if (rc == 0)
        rc = env_add(env, &n, "PMI_FD", (uint64_t)sv[1], NULL);
    if (rc == 0)
        rc = env_add(env, &n, "PMI_RANK", rank, NULL);
    if (rc == 0)
        rc = env_add(env, &n, "PMI_SIZE", st->size, NULL);
    if (rc == 0)
        rc = env_add(env, &n, "PMI_JOBID", 0, st->kvsname);
    if (rc == 0)
        rc = uv_pipe_init(p->loop, &c->pipe, 0);
    if (rc < 0)
        goto fail;
    c->pipe.data = c;
    c->p = p;
    c->st = st;
    c->rank = rank;
    c->version = 1;
    p->handles++;
    rc = uv_pipe_open(&c->pipe, sv[0]);
    if (rc == 0) {
        sv[0] = -1; /* the handle's now */
        rc = uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
    }
    if (rc < 0) {
        uv_close((uv_handle_t *)&c->pipe, conn_closed);
        if (sv[0] >= 0)
            close(sv[0]);
        close(sv[1]);
        env_free(env);
        return rc;
    }
    c->next = st->conns;
    st->conns = c;
    *ret_fd = sv[1];
    *ret_env = env;
    return 0;
fail:
    free(c);
    env_free(env);
    close(sv[0]);
    close(sv[1]);
    return rc;
}

void wrk_pmi_step_end(struct wrk_pmi *p, uint64_t job_id, uint32_t step)
{
    struct pmi_step **at = p != NULL ? &p->steps : NULL;

    while (at != NULL && *at != NULL && ((*at)->job_id != job_id || (*at)->step != step))
        at = &(*at)->next;
    if (at == NULL || *at == NULL)
        return;
    struct pmi_step *st = *at;

    *at = st->next;
    GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " step=%" PRIu32 " pmi step ended here", job_id, step);
    step_free(st);
}

int wrk_pmi_fence_done(struct wrk_pmi *p, uint64_t job_id, uint32_t step, uint32_t seq, int code,
                       const void *bytes, size_t len)
{
    struct pmi_step *st = find_step(p, job_id, step);

    if (st == NULL)
        return -ENOENT;
    if (!st->fencing || seq + 1 != st->seq) {
        GS_LOG(GS_LOG_WARN,
               "job=%" PRIu64 " step=%" PRIu32 " seq=%" PRIu32 " pmi fence answer "
               "for no fence here, dropped",
               job_id, step, seq);
        return 0;
    }
    st->fencing = false;
    if (code == 0) {
        code = kv_take(st, bytes, len);
        kv_settle(st); /* what came before a bad record is kept, sorted */
    }
    if (code < 0)
        GS_LOG(GS_LOG_WARN,
               "job=%" PRIu64 " step=%" PRIu32 " seq=%" PRIu32 " code=%d pmi "
               "fence failed",
               job_id, step, seq, code);
    barrier_out(st, code);
    return 0;
}

void wrk_pmi_close(struct wrk_pmi *p)
{
    if (p == NULL)
        return;
    while (p->steps != NULL) {
        struct pmi_step *st = p->steps;

        p->steps = st->next;
        step_free(st);
    }
    p->closing = true;
    if (p->handles == 0)
        free(p);
}
