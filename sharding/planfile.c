/*
 * planfile.c: a job's data plan file (format and contract in planfile.h).
 *
 * Written by hand, like manifest.toml: a handful of typed keys, node names quoted by
 * shard_toml_quote(). Read with common/toml.h, strictly, because every rank must derive the same
 * assignment from it: anything the reader does not understand is an error at its place,
 * never a default. The holds lists are range strings rather than TOML arrays so that a node
 * holding 10,000 shards is one short line; the range parser reports the offending character's
 * offset and the reader turns it into a line:col.
 *
 * The dataset id hashes manifest.toml's bytes with OpenSSL's EVP SHA-256 (libcrypto, as
 * proto/auth.c uses it).
 */
#include "sharding/planfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/toml.h"
#include "sharding/tomlfile.h"

/* Indices in holds are below this: bounds what a hostile range like "0-4294967295" costs. */
#define MAX_SHARD_INDEX (UINT32_C(1) << 24)
/* And at most this many ranks. */
#define MAX_RANKS (UINT32_C(1) << 20)

void shard_planfile_free(struct shard_planfile *pf)
{
    if (pf == NULL)
        return;
    for (uint32_t i = 0; pf->nodes != NULL && i < pf->nnodes; i++) {
        free(pf->nodes[i].name);
        free(pf->nodes[i].holds);
    }
    free(pf->nodes);
    free(pf->rank_node);
    free(pf);
}

/* --- range lists --- */

int shard_planfile_format_ranges(const uint32_t *idx, size_t n, struct gs_buf *out)
{
    int rc = 0;

    for (size_t i = 1; i < n; i++) {
        if (idx[i] <= idx[i - 1])
            return -EINVAL;
    }
    for (size_t i = 0; rc == 0 && i < n;) {
        size_t j = i;

        while (j + 1 < n && idx[j + 1] == idx[j] + 1)
            j++;
        rc = gs_buf_printf(out, "%s%" PRIu32, i > 0 ? "," : "", idx[i]);
        if (rc == 0 && j > i)
            rc = gs_buf_printf(out, "-%" PRIu32, idx[j]);
        i = j + 1;
    }
    return rc;
}

/* Indices being collected by the range parser. */
struct index_list {
    uint32_t *v;
    size_t n, cap;
};

static int list_add_range(struct index_list *l, uint32_t a, uint32_t b)
{
    size_t need = l->n + (size_t)(b - a) + 1;

    if (need > l->cap) {
        size_t cap = l->cap ? l->cap : 16;
        uint32_t *grown;

        while (cap < need)
            cap *= 2;
        grown = realloc(l->v, cap * sizeof(*grown));
        if (grown == NULL)
            return -ENOMEM;
        l->v = grown;
        l->cap = cap;
    }
    for (uint64_t x = a; x <= b; x++)
        l->v[l->n++] = (uint32_t)x;
    return 0;
}

static const char *skip_spaces(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* A decimal index below MAX_SHARD_INDEX at *pp; advances *pp past it. */
static int parse_index(const char *text, const char **pp, uint32_t *out, struct gs_error *err)
{
    const char *p = *pp;
    uint64_t v = 0;

    if (*p < '0' || *p > '9')
        return gs_error_set(err, -EINVAL, 0, (int)(p - text) + 1,
                            *p == '\0' ? "expected a shard index at the end"
                                       : "expected a shard index, not '%c'",
                            *p);
    for (; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (uint64_t)(*p - '0');
        if (v >= MAX_SHARD_INDEX)
            return gs_error_set(err, -EINVAL, 0, (int)(*pp - text) + 1,
                                "shard index is not below %" PRIu32, MAX_SHARD_INDEX);
    }
    *out = (uint32_t)v;
    *pp = p;
    return 0;
}

/* One item ("A" or "A-B") at *pp into l, after the previous item's last index prev. */
static int parse_item(const char *text, const char **pp, bool have_prev, uint32_t prev,
                      struct index_list *l, struct gs_error *err)
{
    const char *start = *pp, *p = start;
    uint32_t a, b;
    int rc = parse_index(text, &p, &a, err);

    if (rc < 0)
        return rc;
    b = a;
    p = skip_spaces(p);
    if (*p == '-') {
        p = skip_spaces(p + 1);
        rc = parse_index(text, &p, &b, err);
        if (rc < 0)
            return rc;
        if (b < a)
            return gs_error_set(err, -EINVAL, 0, (int)(start - text) + 1,
                                "range %" PRIu32 "-%" PRIu32 " is backwards", a, b);
    }
    if (have_prev && a <= prev)
        return gs_error_set(err, -EINVAL, 0, (int)(start - text) + 1,
                            "not ascending: %" PRIu32 " after %" PRIu32, a, prev);
    if (list_add_range(l, a, b) < 0)
        return gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
    *pp = p;
    return 0;
}

int shard_planfile_parse_ranges(const char *text, uint32_t **ret_idx, size_t *ret_n,
                                struct gs_error *err)
{
    struct index_list l = {0};
    const char *p = skip_spaces(text);
    int rc = 0;

    while (*p != '\0') {
        rc = parse_item(text, &p, l.n > 0, l.n > 0 ? l.v[l.n - 1] : 0, &l, err);
        if (rc < 0)
            break;
        p = skip_spaces(p);
        if (*p == '\0')
            break;
        if (*p != ',') {
            rc = gs_error_set(err, -EINVAL, 0, (int)(p - text) + 1,
                              "expected ',' between ranges, not '%c'", *p);
            break;
        }
        p = skip_spaces(p + 1);
        if (*p == '\0') {
            rc = gs_error_set(err, -EINVAL, 0, (int)(p - text) + 1,
                              "expected a shard index after ','");
            break;
        }
    }
    if (rc < 0) {
        free(l.v);
        return rc;
    }
    *ret_idx = l.v;
    *ret_n = l.n;
    return 0;
}

/* --- writing --- */

/* A node name: not empty, no control characters. */
static bool good_name(const char *s, size_t len)
{
    if (len == 0 || strlen(s) != len)
        return false;
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    }
    return true;
}

/* What the reader checks beyond syntax, for a plan about to be written. */
static int check_plan(const struct shard_planfile *pf, struct gs_error *err)
{
    if (!shard_dataset_id_valid(pf->dataset))
        return gs_error_set(err, -EINVAL, 0, 0, "plan: dataset must be 32 lowercase hex digits");
    if (pf->seed > INT64_MAX)
        return gs_error_set(err, -EINVAL, 0, 0, "plan: seed must be at most 2^63 - 1");
    if (!isfinite(pf->tolerance) || pf->tolerance < 0)
        return gs_error_set(err, -EINVAL, 0, 0, "plan: tolerance must be a finite number >= 0");
    if (pf->nranks < 1 || pf->nranks > MAX_RANKS || pf->nnodes < 1)
        return gs_error_set(err, -EINVAL, 0, 0, "plan: needs 1 to %" PRIu32 " ranks and a node",
                            MAX_RANKS);
    for (uint32_t r = 0; r < pf->nranks; r++) {
        if (pf->rank_node[r] >= pf->nnodes)
            return gs_error_set(err, -EINVAL, 0, 0,
                                "plan: rank %" PRIu32 " on node %" PRIu32 " of %" PRIu32, r,
                                pf->rank_node[r], pf->nnodes);
    }
    for (uint32_t n = 0; n < pf->nnodes; n++) {
        const struct shard_planfile_node *node = &pf->nodes[n];

        if (node->name == NULL || !good_name(node->name, strlen(node->name)))
            return gs_error_set(err, -EINVAL, 0, 0, "plan: node %" PRIu32 " has a bad name", n);
        for (uint32_t k = 0; k < n; k++) {
            if (strcmp(pf->nodes[k].name, node->name) == 0)
                return gs_error_set(err, -EINVAL, 0, 0, "plan: node %s is listed twice",
                                    node->name);
        }
        for (size_t i = 0; i < node->nholds; i++) {
            if (node->holds[i] >= MAX_SHARD_INDEX ||
                (i > 0 && node->holds[i] <= node->holds[i - 1]))
                return gs_error_set(err, -EINVAL, 0, 0,
                                    "plan: node %s: holds must be strictly ascending indices "
                                    "below %" PRIu32,
                                    node->name, MAX_SHARD_INDEX);
        }
    }
    return 0;
}

/* s as a TOML basic string (good_name() has ruled out control characters). */
/* The shortest %g form of x that reads back as x, made a TOML float ("0" -> "0.0"). */
static void format_double(double x, char *out, size_t size)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, size, "%.*g", prec, x);
        if (strtod(out, NULL) == x)
            break;
    }
    if (strpbrk(out, ".e") == NULL)
        strncat(out, ".0", size - strlen(out) - 1);
}

static int format_node(const struct shard_planfile_node *node, struct gs_buf *out)
{
    int rc = gs_buf_append_str(out, "\n[[node]]\nname = ");

    if (rc == 0)
        rc = shard_toml_quote(out, node->name);
    if (rc == 0)
        rc = gs_buf_append_str(out, "\nholds = \"");
    if (rc == 0)
        rc = shard_planfile_format_ranges(node->holds, node->nholds, out);
    return rc == 0 ? gs_buf_append_str(out, "\"\n") : rc;
}

int shard_planfile_format(const struct shard_planfile *pf, struct gs_buf *out, struct gs_error *err)
{
    char tol[40];
    int rc = check_plan(pf, err);

    if (rc < 0)
        return rc;
    format_double(pf->tolerance, tol, sizeof(tol));
    rc = gs_buf_printf(out,
                       "# gsched data plan: written by gsched-workerd when a job with [data] "
                       "starts, read by gsched-train.\n"
                       "# ranks[r]: the node of rank r; holds: the manifest shard indices "
                       "each node held.\n"
                       "format = %d\ndataset = \"%s\"\nseed = %" PRIu64 "\ntolerance = %s\n"
                       "ranks = [",
                       SHARD_PLANFILE_FORMAT, pf->dataset, pf->seed, tol);
    for (uint32_t r = 0; rc == 0 && r < pf->nranks; r++)
        rc = gs_buf_printf(out, "%s%" PRIu32, r > 0 ? ", " : "", pf->rank_node[r]);
    if (rc == 0)
        rc = gs_buf_append_str(out, "]\n");
    for (uint32_t n = 0; rc == 0 && n < pf->nnodes; n++)
        rc = format_node(&pf->nodes[n], out);
    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "plan: out of memory");
    return 0;
}

int shard_planfile_write(const char *path, const struct shard_planfile *pf, struct gs_error *err)
{
    struct gs_buf text = GS_BUF_INIT;
    int rc = shard_planfile_format(pf, &text, err);

    if (rc == 0)
        rc = shard_toml_write(path, &text, err);
    gs_buf_release(&text);
    return rc;
}

/* --- reading --- */

/* The value of key in table t, which must be there: missing is an error at t (or the file). */
static int need(struct shard_toml_reader *r, const struct gs_toml_value *t, bool root,
                const char *key, const struct gs_toml_value **out)
{
    *out = gs_toml_get(t, key);
    if (*out != NULL)
        return 0;
    if (root)
        return gs_error_set(r->err, -EINVAL, 0, 0, "%s: no '%s' key", r->path, key);
    return shard_toml_bad_at(r, t, "node lacks '%s'", key);
}

static int read_holds(struct shard_toml_reader *r, const struct gs_toml_value *v,
                      struct shard_planfile_node *node)
{
    struct gs_error perr = {0};
    const char *s;
    size_t len;
    int rc;

    if (gs_toml_as_string(v, &s, &len) < 0 || strlen(s) != len)
        return shard_toml_bad_at(r, v,
                                 "holds must be a string of shard index ranges (\"0-99,150\")");
    rc = shard_planfile_parse_ranges(s, &node->holds, &node->nholds, &perr);
    if (rc == -EINVAL)
        return gs_error_set(r->err, rc, 0, 0, "%s:%d:%d: holds: %s", r->path, gs_toml_line(v),
                            gs_toml_col(v) + perr.col, perr.msg);
    if (rc < 0)
        return gs_error_set(r->err, rc, 0, 0, "%s: out of memory", r->path);
    return 0;
}

/* One [[node]] table into pf->nodes[n]. */
static int read_node(struct shard_toml_reader *r, const struct gs_toml_value *t,
                     struct shard_planfile *pf, uint32_t n)
{
    static const char *const keys[] = {"name", "holds", NULL};
    struct shard_planfile_node *node = &pf->nodes[n];
    const struct gs_toml_value *name = NULL, *holds = NULL; /* set when rc stays 0 */
    const char *s = NULL;
    size_t len = 0;
    int rc;

    if (gs_toml_type(t) != GS_TOML_TABLE)
        return shard_toml_bad_at(r, t, "node must be a table ([[node]])");
    rc = shard_toml_check_keys(r, t, keys);
    if (rc == 0)
        rc = need(r, t, false, "name", &name);
    if (rc == 0)
        rc = need(r, t, false, "holds", &holds);
    if (rc < 0)
        return rc;
    if (gs_toml_as_string(name, &s, &len) < 0 || !good_name(s, len))
        return shard_toml_bad_at(r, name,
                                 "name must be a non-empty string without control characters");
    for (uint32_t k = 0; k < n; k++) {
        if (strcmp(pf->nodes[k].name, s) == 0)
            return shard_toml_bad_at(r, name, "node '%s' is listed twice", s);
    }
    node->name = strdup(s);
    if (node->name == NULL)
        return gs_error_set(r->err, -ENOMEM, 0, 0, "%s: out of memory", r->path);
    return read_holds(r, holds, node);
}

static int read_nodes(struct shard_toml_reader *r, const struct gs_toml_value *root,
                      struct shard_planfile *pf)
{
    const struct gs_toml_value *nodes = gs_toml_get(root, "node");
    size_t count = gs_toml_count(nodes);
    int rc = 0;

    if (nodes == NULL)
        return gs_error_set(r->err, -EINVAL, 0, 0, "%s: no [[node]]: a plan needs one", r->path);
    if (gs_toml_type(nodes) != GS_TOML_ARRAY || count == 0 || count > MAX_RANKS)
        return shard_toml_bad_at(r, nodes,
                                 "node must be an array of tables ([[node]]), at least one");
    pf->nodes = calloc(count, sizeof(*pf->nodes));
    if (pf->nodes == NULL)
        return gs_error_set(r->err, -ENOMEM, 0, 0, "%s: out of memory", r->path);
    pf->nnodes = (uint32_t)count;
    for (uint32_t n = 0; rc == 0 && n < pf->nnodes; n++)
        rc = read_node(r, gs_toml_at(nodes, n), pf, n);
    return rc;
}

static int read_ranks(struct shard_toml_reader *r, const struct gs_toml_value *ranks,
                      struct shard_planfile *pf)
{
    size_t count = gs_toml_count(ranks);

    if (gs_toml_type(ranks) != GS_TOML_ARRAY || count == 0 || count > MAX_RANKS)
        return shard_toml_bad_at(
            r, ranks, "ranks must be an array of 1 to %" PRIu32 " node indices", MAX_RANKS);
    pf->rank_node = malloc(count * sizeof(*pf->rank_node));
    if (pf->rank_node == NULL)
        return gs_error_set(r->err, -ENOMEM, 0, 0, "%s: out of memory", r->path);
    for (size_t i = 0; i < count; i++) {
        const struct gs_toml_value *v = gs_toml_at(ranks, i);
        int64_t x = 0;

        if (gs_toml_as_int(v, &x) < 0 || x < 0 || x >= (int64_t)pf->nnodes)
            return shard_toml_bad_at(
                r, v, "rank %zu: its node must be an index into [[node]], below %" PRIu32, i,
                pf->nnodes);
        pf->rank_node[i] = (uint32_t)x;
    }
    pf->nranks = (uint32_t)count;
    return 0;
}

/* format, dataset, seed and tolerance. */
static int read_scalars(struct shard_toml_reader *r, const struct gs_toml_value *root,
                        struct shard_planfile *pf)
{
    const struct gs_toml_value *format = NULL, *dataset = NULL, *seed = NULL, *tol = NULL;
    const char *s;
    int64_t x = 0;
    int rc = need(r, root, true, "format", &format);

    if (rc == 0 && (gs_toml_as_int(format, &x) < 0 || x != SHARD_PLANFILE_FORMAT))
        rc = shard_toml_bad_at(r, format, "format must be %d (this gsched's data plan format)",
                               SHARD_PLANFILE_FORMAT);
    if (rc == 0)
        rc = need(r, root, true, "dataset", &dataset);
    if (rc == 0) {
        s = NULL;
        if (gs_toml_as_string(dataset, &s, NULL) < 0 || !shard_dataset_id_valid(s))
            rc = shard_toml_bad_at(r, dataset,
                                   "dataset must be 32 lowercase hex digits (a dataset id)");
        else
            memcpy(pf->dataset, s, SHARD_DATASET_ID_SIZE);
    }
    if (rc == 0)
        rc = need(r, root, true, "seed", &seed);
    if (rc == 0 && (gs_toml_as_int(seed, &x) < 0 || x < 0))
        rc = shard_toml_bad_at(r, seed, "seed must be a non-negative integer");
    if (rc == 0)
        pf->seed = (uint64_t)x;
    if (rc == 0)
        rc = need(r, root, true, "tolerance", &tol);
    if (rc == 0 && (gs_toml_as_float(tol, &pf->tolerance) < 0 || !isfinite(pf->tolerance) ||
                    pf->tolerance < 0))
        rc = shard_toml_bad_at(r, tol, "tolerance must be a finite number >= 0");
    return rc;
}

static int read_doc(struct shard_toml_reader *r, const struct gs_toml_value *root,
                    struct shard_planfile *pf)
{
    static const char *const keys[] = {"format", "dataset", "seed", "tolerance",
                                       "ranks",  "node",    NULL};
    const struct gs_toml_value *ranks = NULL;
    int rc = shard_toml_check_keys(r, root, keys);

    if (rc == 0)
        rc = read_scalars(r, root, pf);
    if (rc == 0)
        rc = read_nodes(r, root, pf);
    if (rc == 0)
        rc = need(r, root, true, "ranks", &ranks);
    if (rc == 0)
        rc = read_ranks(r, ranks, pf);
    return rc;
}

int shard_planfile_read(const char *path, struct shard_planfile **ret, struct gs_error *err)
{
    struct gs_toml_doc *doc = NULL;
    struct shard_planfile *pf = calloc(1, sizeof(*pf));
    struct shard_toml_reader r = {path, err};
    int rc;

    if (pf == NULL) {
        rc = gs_error_set(err, -ENOMEM, 0, 0, "%s: out of memory", path);
        goto out;
    }
    rc = gs_toml_parse_file(path, &doc, err);
    if (rc < 0)
        goto out;
    rc = read_doc(&r, gs_toml_root(doc), pf);
    if (rc == 0) {
        *ret = pf;
        pf = NULL;
    }
out:
    shard_planfile_free(pf);
    gs_toml_free(doc);
    return rc;
}

/* --- the planner's input --- */

void shard_planfile_input_release(struct shard_planfile_input *pi)
{
    free(pi->manifest_index);
    free(pi->shards);
    free(pi->holder_off);
    free(pi->holders);
    memset(pi, 0, sizeof(*pi));
}

/* How many nodes hold each manifest shard (count[m->nshards]); checks every index. */
static int count_holders(const struct shard_planfile *pf, const struct shard_manifest *m,
                         uint32_t *count, struct gs_error *err)
{
    for (uint32_t n = 0; n < pf->nnodes; n++) {
        const struct shard_planfile_node *node = &pf->nodes[n];

        for (size_t i = 0; i < node->nholds; i++) {
            if (node->holds[i] >= m->nshards)
                return gs_error_set(
                    err, -EINVAL, 0, 0,
                    "plan: node %s holds shard %" PRIu32 ", but %s/%s lists %zu shards", node->name,
                    node->holds[i], m->dir, SHARD_MANIFEST_FILE, m->nshards);
            count[node->holds[i]]++;
        }
    }
    return 0;
}

/* The train shards' entries and holder offsets; train_of[j] is manifest shard j's index
 * among them (UINT32_MAX for a val shard). */
static void fill_shards(const struct shard_manifest *m, const uint32_t *count,
                        struct shard_planfile_input *pi, uint32_t *train_of)
{
    size_t t = 0;

    pi->holder_off[0] = 0;
    for (size_t j = 0; j < m->nshards; j++) {
        const struct shard_manifest_shard *e = &m->shards[j];

        train_of[j] = UINT32_MAX;
        if (e->split != SHARD_SPLIT_TRAIN)
            continue;
        train_of[j] = (uint32_t)t;
        pi->manifest_index[t] = (uint32_t)j;
        pi->shards[t].tokens = e->tokens;
        pi->shards[t].bytes = SHARD_HEADER_SIZE + e->tokens * (uint64_t)e->dtype;
        pi->holder_off[t + 1] = pi->holder_off[t] + count[j];
        t++;
    }
}

/* Each train shard's holders from cursor[t] on, in node order (so each list ascends). */
static void fill_holders(const struct shard_planfile *pf, const uint32_t *train_of,
                         uint32_t *cursor, uint32_t *holders)
{
    for (uint32_t n = 0; n < pf->nnodes; n++) {
        for (size_t i = 0; i < pf->nodes[n].nholds; i++) {
            uint32_t t = train_of[pf->nodes[n].holds[i]];

            if (t != UINT32_MAX)
                holders[cursor[t]++] = n;
        }
    }
}

int shard_planfile_input(const struct shard_planfile *pf, const struct shard_manifest *m,
                         struct shard_planfile_input *ret, struct gs_error *err)
{
    struct shard_planfile_input pi = {0};
    uint32_t *count = calloc(m->nshards + 1, sizeof(*count));
    uint32_t *train_of = calloc(m->nshards + 1, sizeof(*train_of));
    uint32_t *cursor = NULL;
    size_t ntrain = 0;
    int rc = 0;

    for (size_t j = 0; j < m->nshards; j++)
        ntrain += m->shards[j].split == SHARD_SPLIT_TRAIN;
    pi.manifest_index = calloc(ntrain + 1, sizeof(*pi.manifest_index));
    pi.shards = calloc(ntrain + 1, sizeof(*pi.shards));
    pi.holder_off = calloc(ntrain + 1, sizeof(*pi.holder_off));
    cursor = calloc(ntrain + 1, sizeof(*cursor));
    if (count == NULL || train_of == NULL || pi.manifest_index == NULL || pi.shards == NULL ||
        pi.holder_off == NULL || cursor == NULL) {
        rc = gs_error_set(err, -ENOMEM, 0, 0, "plan: out of memory");
        goto out;
    }
    rc = count_holders(pf, m, count, err);
    if (rc < 0)
        goto out;
    fill_shards(m, count, &pi, train_of);
    pi.holders = calloc((size_t)pi.holder_off[ntrain] + 1, sizeof(*pi.holders));
    if (pi.holders == NULL) {
        rc = gs_error_set(err, -ENOMEM, 0, 0, "plan: out of memory");
        goto out;
    }
    memcpy(cursor, pi.holder_off, ntrain * sizeof(*cursor));
    fill_holders(pf, train_of, cursor, pi.holders);
    pi.in = (struct shard_plan_input){.nshards = ntrain,
                                      .shards = pi.shards,
                                      .holder_off = pi.holder_off,
                                      .holders = pi.holders,
                                      .nnodes = pf->nnodes,
                                      .nranks = pf->nranks,
                                      .rank_node = pf->rank_node,
                                      .seed = pf->seed,
                                      .epoch = 0,
                                      .tolerance = pf->tolerance};
    *ret = pi;
    memset(&pi, 0, sizeof(pi));
out:
    shard_planfile_input_release(&pi);
    free(cursor);
    free(train_of);
    free(count);
    return rc;
}
