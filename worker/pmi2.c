/*
 * pmi2.c: the PMI-2 wire protocol (pmi.h), what Slurm's libpmi2 and MPICH's PMI-2 client
 * speak once their PMI-1 init has asked for version 2 (pmi1.c). A request or answer is its
 * length as 6 decimal characters, space padded, then that many bytes of key=value pairs,
 * each ended by ';', the first cmd=NAME; a ';' inside a value is doubled. An answer is the
 * request's cmd with "-response", with rc (0, or -1 and errmsg) and, when the request had
 * one (a threaded client), its thrid.
 *
 * Beyond the step's key/value space (kvs-put, kvs-fence, kvs-get: pmi.c's, as in PMI-1),
 * PMI-2 has job attributes, answered from the step (PMI_process_mapping, universeSize),
 * and node attributes, which the node's ranks put and get among themselves, a get with
 * wait=TRUE waiting for the put. Spawn, names, job connect and Slurm's ring are refused.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "worker/pmi_internal.h"

/* Splits text (in place) into its pairs, undoubling ";;". -EPROTO for a pair without '='. */
static int parse(char *text, struct pmi_args *a)
{
    char *r = text;

    a->n = 0;
    while (*r != '\0') {
        char *key = r, *eq = strchr(r, '='), *w;

        if (eq == NULL)
            return -EPROTO;
        *eq = '\0';
        w = r = eq + 1;
        while (*r != '\0' && !(r[0] == ';' && r[1] != ';')) {
            if (r[0] == ';') /* ";;" */
                r++;
            *w++ = *r++;
        }
        if (*r == ';')
            r++;
        *w = '\0';
        if (a->n < PMI_ARGS_MAX) {
            a->k[a->n] = key;
            a->v[a->n++] = eq + 1;
        }
    }
    return 0;
}

/* --- answers ---------------------------------------------------------------------------------- */

/* Starts an answer: room for the length, then cmd and rc. */
static void begin(struct gs_buf *b, const char *cmd, int rc)
{
    gs_buf_printf(b, "%*s", PMI2_LEN_SIZE, "");
    gs_buf_printf(b, "cmd=%s;rc=%d;", cmd, rc);
}

static void add(struct gs_buf *b, const char *key, const char *value)
{
    gs_buf_printf(b, "%s=", key);
    for (const char *s = value; *s != '\0'; s++) {
        if (*s == ';')
            gs_buf_append(b, ";;", 2);
        else
            gs_buf_putc(b, *s);
    }
    gs_buf_putc(b, ';');
}

/* Sends the answer in b (thrid added when the request had one), and releases b. */
static void send_answer(struct pmi_conn *c, struct gs_buf *b, const char *thrid)
{
    char len[24];

    if (thrid != NULL && thrid[0] != '\0')
        add(b, "thrid", thrid);
    if (gs_buf_error(b) < 0 || b->len - PMI2_LEN_SIZE > 999999) {
        pmi_conn_close(c);
        gs_buf_release(b);
        return;
    }
    snprintf(len, sizeof(len), "%-*zu", PMI2_LEN_SIZE, b->len - PMI2_LEN_SIZE);
    memcpy(b->data, len, PMI2_LEN_SIZE);
    pmi_write(c, b->data, b->len);
    gs_buf_release(b);
}

/* An answer of cmd-response with rc 0 and up to two pairs (key NULL: none). */
static void answer(struct pmi_conn *c, const char *cmd, const char *thrid, const char *k1,
                   const char *v1, const char *k2, const char *v2)
{
    struct gs_buf b = GS_BUF_INIT;

    begin(&b, cmd, 0);
    if (k1 != NULL)
        add(&b, k1, v1);
    if (k2 != NULL)
        add(&b, k2, v2);
    send_answer(c, &b, thrid);
}

static void refuse(struct pmi_conn *c, const char *cmd, const char *thrid, const char *why)
{
    struct gs_buf b = GS_BUF_INIT;

    begin(&b, cmd, -1);
    add(&b, "errmsg", why);
    send_answer(c, &b, thrid);
}

/* A found/value answer: value NULL says not found. */
static void found(struct pmi_conn *c, const char *cmd, const char *thrid, const char *value)
{
    answer(c, cmd, thrid, "found", value != NULL ? "TRUE" : "FALSE", value != NULL ? "value" : NULL,
           value);
}

void pmi2_fence_out(struct pmi_conn *c, int code)
{
    char why[96];

    if (code == 0) {
        answer(c, "kvs-fence-response", c->fence_thrid, NULL, NULL, NULL, NULL);
        return;
    }
    snprintf(why, sizeof(why), "the fence failed: %s", gs_strerror(code));
    refuse(c, "kvs-fence-response", c->fence_thrid, why);
}

/* --- node attributes -------------------------------------------------------------------------- */

static const char *attr_get(const struct pmi_step *st, const char *key)
{
    for (size_t i = 0; i < st->nattrs; i++)
        if (strcmp(st->attrs[i].key, key) == 0)
            return st->attrs[i].value;
    return NULL;
}

static void drop_wait(struct pmi_step *st, size_t i)
{
    free(st->waits[i].key);
    st->waits[i] = st->waits[--st->nwaits];
}

/* info-putnodeattr: kept (a key put again takes the new value), and the gets waiting for it
 * answered. */
static void put_attr(struct pmi_conn *c, const char *key, const char *value, const char *thrid)
{
    struct pmi_step *st = c->st;
    size_t kl = strlen(key), vl = strlen(value), i;
    struct pmi_kv kv;

    for (i = 0; i < st->nattrs && strcmp(st->attrs[i].key, key) != 0; i++)
        ;
    if (kl + vl > PMI_BYTES_MAX - st->bytes ||
        (i == st->nattrs &&
         pmi_grow(&st->attrs, &st->cap_attrs, i, sizeof(*st->attrs), PMI_ATTRS_MAX) < 0) ||
        pmi_kv_make(&kv, key, kl, value, vl, 0) < 0) {
        refuse(c, "info-putnodeattr-response", thrid, "no room for the attribute");
        return;
    }
    if (i == st->nattrs) {
        st->nattrs++;
    } else {
        st->bytes -= strlen(st->attrs[i].key) + strlen(st->attrs[i].value);
        free(st->attrs[i].key);
    }
    st->attrs[i] = kv;
    st->bytes += kl + vl;
    answer(c, "info-putnodeattr-response", thrid, NULL, NULL, NULL, NULL);
    for (size_t w = 0; w < st->nwaits;) {
        if (strcmp(st->waits[w].key, key) != 0) {
            w++;
            continue;
        }
        found(st->waits[w].c, "info-getnodeattr-response", st->waits[w].thrid, kv.value);
        drop_wait(st, w);
    }
}

/* info-getnodeattr: the value, or with wait=TRUE an answer once it is put. */
static void get_attr(struct pmi_conn *c, const char *key, bool wait, const char *thrid)
{
    struct pmi_step *st = c->st;
    const char *value = attr_get(st, key);
    struct pmi_wait *v;

    if (value != NULL || !wait) {
        found(c, "info-getnodeattr-response", thrid, value);
        return;
    }
    if (pmi_grow(&st->waits, &st->cap_waits, st->nwaits, sizeof(*st->waits), PMI_ATTRS_MAX) < 0 ||
        (st->waits[st->nwaits].key = strdup(key)) == NULL) {
        refuse(c, "info-getnodeattr-response", thrid, "too many gets waiting, or out of memory");
        return;
    }
    v = st->waits;
    v[st->nwaits].c = c;
    snprintf(v[st->nwaits].thrid, sizeof(v[st->nwaits].thrid), "%s", thrid != NULL ? thrid : "");
    st->nwaits++;
}

void pmi2_conn_gone(struct pmi_conn *c)
{
    struct pmi_step *st = c->st;

    for (size_t w = 0; st != NULL && w < st->nwaits;) {
        if (st->waits[w].c == c)
            drop_wait(st, w);
        else
            w++;
    }
}

/* --- requests --------------------------------------------------------------------------------- */

static void fullinit(struct pmi_conn *c, const struct pmi_args *a, const char *thrid)
{
    const char *rank = pmi_arg(a, "pmirank");
    struct gs_buf b = GS_BUF_INIT;

    if (rank != NULL && strtoul(rank, NULL, 10) != c->rank) {
        refuse(c, "fullinit-response", thrid, "pmirank is not this task's rank (PMI_RANK)");
        return;
    }
    begin(&b, "fullinit-response", 0);
    add(&b, "pmi-version", "2");
    add(&b, "pmi-subversion", "0");
    gs_buf_printf(&b, "rank=%" PRIu32 ";size=%" PRIu32 ";appnum=0;", c->rank, c->st->size);
    add(&b, "debugged", "FALSE");
    add(&b, "pmiverbose", "FALSE");
    send_answer(c, &b, thrid);
}

static void job_attr(struct pmi_conn *c, const char *key, const char *thrid)
{
    char size[16];

    if (key != NULL && strcmp(key, "universeSize") == 0) {
        snprintf(size, sizeof(size), "%" PRIu32, c->st->size);
        found(c, "info-getjobattr-response", thrid, size);
        return;
    }
    found(c, "info-getjobattr-response", thrid,
          key != NULL && strcmp(key, "PMI_process_mapping") == 0 ? c->st->mapping : NULL);
}

static void kvs_put(struct pmi_conn *c, const char *key, const char *value, const char *thrid)
{
    const char *why = "a put needs a key and a value";

    if (key != NULL && value != NULL && pmi_put(c->st, key, value, &why) == 0)
        answer(c, "kvs-put-response", thrid, NULL, NULL, NULL, NULL);
    else
        refuse(c, "kvs-put-response", thrid, why);
}

static void kvs_get(struct pmi_conn *c, const struct pmi_args *a, const char *thrid)
{
    const char *key = pmi_arg(a, "key"), *job = pmi_arg(a, "jobid");

    /* Another job's space (MPI_Comm_connect's) is not served: its keys are not found. */
    found(c, "kvs-get-response", thrid,
          key != NULL && (job == NULL || job[0] == '\0' || strcmp(job, c->st->kvsname) == 0)
              ? pmi_get(c->st, key)
              : NULL);
}

void pmi2_request(struct pmi_conn *c, char *text, size_t len)
{
    struct pmi_step *st = c->st;
    struct pmi_args a;
    const char *cmd, *thrid;
    char response[64];

    (void)len;
    if (parse(text, &a) < 0 || (cmd = pmi_arg(&a, "cmd")) == NULL) {
        GS_LOG(GS_LOG_WARN,
               "job=%" PRIu64 " step=%" PRIu32 " rank=%" PRIu32 " pmi2 request "
               "without cmd, connection closed",
               st->job_id, st->step, c->rank);
        pmi_conn_close(c);
        return;
    }
    thrid = pmi_arg(&a, "thrid");
    snprintf(response, sizeof(response), "%.40s-response", cmd);
    if (strcmp(cmd, "fullinit") == 0) {
        fullinit(c, &a, thrid);
    } else if (strcmp(cmd, "job-getid") == 0) {
        answer(c, response, thrid, "jobid", st->kvsname, NULL, NULL);
    } else if (strcmp(cmd, "info-getjobattr") == 0) {
        job_attr(c, pmi_arg(&a, "key"), thrid);
    } else if (strcmp(cmd, "info-putnodeattr") == 0 && pmi_arg(&a, "key") != NULL &&
               pmi_arg(&a, "value") != NULL) {
        put_attr(c, pmi_arg(&a, "key"), pmi_arg(&a, "value"), thrid);
    } else if (strcmp(cmd, "info-getnodeattr") == 0 && pmi_arg(&a, "key") != NULL) {
        const char *wait = pmi_arg(&a, "wait");

        get_attr(c, pmi_arg(&a, "key"), wait != NULL && strcmp(wait, "TRUE") == 0, thrid);
    } else if (strcmp(cmd, "kvs-put") == 0) {
        kvs_put(c, pmi_arg(&a, "key"), pmi_arg(&a, "value"), thrid);
    } else if (strcmp(cmd, "kvs-get") == 0) {
        kvs_get(c, &a, thrid);
    } else if (strcmp(cmd, "kvs-fence") == 0) {
        snprintf(c->fence_thrid, sizeof(c->fence_thrid), "%s", thrid != NULL ? thrid : "");
        pmi_barrier_in(c);
    } else if (strcmp(cmd, "finalize") == 0) {
        answer(c, response, thrid, NULL, NULL, NULL, NULL);
    } else if (strcmp(cmd, "abort") == 0) {
        const char *msg = pmi_arg(&a, "msg");

        pmi_abort(c, 1, msg != NULL && msg[0] != '\0' ? msg : "PMI2_Abort");
    } else {
        GS_LOG(GS_LOG_INFO,
               "job=%" PRIu64 " step=%" PRIu32 " rank=%" PRIu32 " cmd=%.40s pmi2 request "
               "not served",
               st->job_id, st->step, c->rank, cmd);
        refuse(c, response, thrid, "gsched does not serve this PMI-2 request");
    }
}
