/*
 * trace.c: the simulator's trace model (see trace.h): growing arrays of nodes, jobs and
 * account names, the line reader the format readers share (with "FILE:LINE:" errors), and
 * the transformations main.c applies before a replay (sort, --nodes, --load, shapes,
 * --accounts).
 */
#include "sim/trace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sort.h"

#define MAX_FIELDS 32

void gs_sim_trace_init(struct gs_sim_trace *t)
{
    memset(t, 0, sizeof(*t));
}

static void free_accounts(struct gs_sim_trace *t)
{
    for (size_t i = 0; i < t->naccounts; i++)
        free(t->accounts[i]);
    free(t->accounts);
    t->accounts = NULL;
    t->naccounts = t->accounts_cap = 0;
}

void gs_sim_trace_release(struct gs_sim_trace *t)
{
    free(t->nodes);
    free(t->jobs);
    free_accounts(t);
    memset(t, 0, sizeof(*t));
}

/* Makes room for one more element of size in *v (n used, *cap allocated). */
static int grow(void **v, size_t n, size_t *cap, size_t size)
{
    size_t ncap;
    void *p;

    if (n < *cap)
        return 0;
    ncap = *cap ? *cap * 2 : 64;
    p = realloc(*v, ncap * size);
    if (p == NULL)
        return -ENOMEM;
    *v = p;
    *cap = ncap;
    return 0;
}

int gs_sim_trace_add_node(struct gs_sim_trace *t, const struct gs_sim_node *node)
{
    int rc = grow((void **)&t->nodes, t->nnodes, &t->nodes_cap, sizeof(*t->nodes));

    if (rc == 0)
        t->nodes[t->nnodes++] = *node;
    return rc;
}

int gs_sim_trace_add_job(struct gs_sim_trace *t, const struct gs_sim_job *job)
{
    int rc = grow((void **)&t->jobs, t->njobs, &t->jobs_cap, sizeof(*t->jobs));

    if (rc == 0)
        t->jobs[t->njobs++] = *job;
    return rc;
}

/* Account names become one word of [A-Za-z0-9._-] (as gsched.toml's [[account]] wants). */
static void one_word(const char *name, char *out, size_t size)
{
    size_t n = 0;

    for (; name[n] != '\0' && n + 1 < size; n++) {
        char c = name[n];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        out[n] = ok ? c : '_';
    }
    out[n] = '\0';
    if (n == 0)
        snprintf(out, size, "default");
}

int gs_sim_trace_account(struct gs_sim_trace *t, const char *name)
{
    char word[64], *copy;

    one_word(name, word, sizeof(word));
    for (size_t i = 0; i < t->naccounts; i++) {
        if (strcmp(t->accounts[i], word) == 0)
            return (int)i;
    }
    if (grow((void **)&t->accounts, t->naccounts, &t->accounts_cap, sizeof(*t->accounts)) < 0)
        return -ENOMEM;
    copy = strdup(word);
    if (copy == NULL)
        return -ENOMEM;
    t->accounts[t->naccounts] = copy;
    return (int)t->naccounts++;
}

uint64_t gs_sim_hash(const char *s, size_t len)
{
    uint64_t h = UINT64_C(14695981039346656037);

    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

/* splitmix64's finaliser: spreads a key and a seed over all bits. */
static uint64_t mix(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

int gs_sim_trace_hash_accounts(struct gs_sim_trace *t, uint32_t n, uint64_t seed)
{
    char name[32];

    if (n == 0)
        return -EINVAL;
    free_accounts(t);
    for (uint32_t i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "acct%u", i);
        if (gs_sim_trace_account(t, name) < 0)
            return -ENOMEM;
    }
    for (size_t i = 0; i < t->njobs; i++)
        t->jobs[i].account = (uint32_t)(mix(t->jobs[i].key ^ mix(seed)) % n);
    return 0;
}

/* Keeps urgency apart from the account hash of the same key and seed. */
#define URGENT_SALT UINT64_C(0x757267656e742121)
#define URGENT_BUCKETS 1000000

size_t gs_sim_trace_mark_urgent(struct gs_sim_trace *t, double share, uint64_t seed)
{
    uint64_t below = (uint64_t)(share * URGENT_BUCKETS + 0.5);
    size_t n = 0;

    for (size_t i = 0; i < t->njobs; i++) {
        uint64_t h = mix(mix(t->jobs[i].key ^ URGENT_SALT) ^ mix(seed));

        t->jobs[i].urgent = h % URGENT_BUCKETS < below;
        n += t->jobs[i].urgent;
    }
    return n;
}

#define DATASET_SALT UINT64_C(0x6461746173657473)

void gs_sim_trace_assign_datasets(struct gs_sim_trace *t, uint32_t datasets, uint64_t seed)
{
    for (size_t i = 0; i < t->njobs && datasets > 0; i++)
        t->jobs[i].dataset =
            (uint32_t)(mix(mix(t->jobs[i].account ^ DATASET_SALT) ^ mix(seed)) % datasets);
}

static int by_submit(const void *pa, const void *pb)
{
    const struct gs_sim_job *a = pa, *b = pb;

    if (a->submit_ms != b->submit_ms)
        return a->submit_ms < b->submit_ms ? -1 : 1;
    return a->line < b->line ? -1 : a->line > b->line;
}

void gs_sim_trace_sort(struct gs_sim_trace *t)
{
    uint64_t first;

    if (t->njobs == 0)
        return;
    gs_sort(t->jobs, t->njobs, sizeof(*t->jobs), by_submit);
    first = t->jobs[0].submit_ms;
    for (size_t i = 0; i < t->njobs; i++)
        t->jobs[i].submit_ms -= first;
}

void gs_sim_trace_keep_nodes(struct gs_sim_trace *t, size_t n)
{
    if (n > 0 && n < t->nnodes)
        t->nnodes = n;
}

void gs_sim_trace_scale_load(struct gs_sim_trace *t, double load)
{
    if (load <= 0)
        return;
    for (size_t i = 0; i < t->njobs; i++)
        t->jobs[i].submit_ms = (uint64_t)((double)t->jobs[i].submit_ms / load + 0.5);
}

static uint32_t div_up32(uint32_t a, uint32_t b)
{
    return (a + b - 1) / b;
}

size_t gs_sim_trace_shape(struct gs_sim_trace *t)
{
    uint32_t per = 0;
    size_t impossible = 0;

    for (size_t i = 0; i < t->nnodes; i++)
        per = t->nodes[i].ngpus > per ? t->nodes[i].ngpus : per;
    for (size_t i = 0; i < t->njobs; i++) {
        struct gs_sim_job *j = &t->jobs[i];
        uint32_t n = 1;

        if (per > 0 && j->gpus > per) {
            n = div_up32(j->gpus, per);
            while (j->gpus % n != 0)
                n++;
        }
        j->nodes = n;
        j->gpus_per_node = j->gpus / n;
        j->cores_per_node = j->cores > 0 ? div_up32(j->cores, n) : 1;
        j->mem_per_node_mib = (j->mem_mib + n - 1) / n;
        j->impossible = n > t->nnodes || (j->gpus > 0 && per == 0);
        impossible += j->impossible;
    }
    return impossible;
}

uint64_t gs_sim_trace_gpus(const struct gs_sim_trace *t)
{
    uint64_t n = 0;

    for (size_t i = 0; i < t->nnodes; i++)
        n += t->nodes[i].ngpus;
    return n;
}

int gs_sim_lines_error(struct gs_sim_lines *at, int code, const char *fmt, ...)
{
    va_list ap;

    gs_buf_printf(at->err, "%s:%u: ", at->path, at->line);
    va_start(ap, fmt);
    gs_buf_vprintf(at->err, fmt, ap);
    va_end(ap);
    gs_buf_putc(at->err, '\n');
    return code;
}

int gs_sim_field_u64(struct gs_sim_lines *at, const char *text, const char *what, uint64_t *ret)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(text, &end, 10);
    if (text[0] == '\0' || text[0] == '-' || *end != '\0' || errno != 0)
        return gs_sim_lines_error(at, -EINVAL, "%s: '%s' is not a whole number", what, text);
    *ret = v;
    return 0;
}

int gs_sim_field_double(struct gs_sim_lines *at, const char *text, const char *what, double *ret)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(text, &end);
    if (text[0] == '\0' || *end != '\0' || errno != 0 || !(v >= 0))
        return gs_sim_lines_error(at, -EINVAL, "%s: '%s' is not a number >= 0", what, text);
    *ret = v;
    return 0;
}

static int split(char *line, char sep, char **fields, int max)
{
    int n = 0;

    for (char *p = line; n < max;) {
        fields[n++] = p;
        p = strchr(p, sep);
        if (p == NULL)
            break;
        *p++ = '\0';
    }
    return n;
}

int gs_sim_read_lines(const char *path, char sep, int skip_header, int maxf, gs_sim_line_fn fn,
                      void *data, struct gs_buf *err)
{
    struct gs_sim_lines at = {.path = path, .err = err};
    char *fields[MAX_FIELDS];
    char *line = NULL;
    size_t cap = 0;
    FILE *f = fopen(path, "r");
    int rc = 0;

    if (f == NULL) {
        rc = -errno;
        gs_buf_printf(err, "%s: %s\n", path, strerror(-rc));
        return rc;
    }
    if (maxf > MAX_FIELDS)
        maxf = MAX_FIELDS;
    while (rc == 0 && getline(&line, &cap, f) >= 0) {
        at.line++;
        line[strcspn(line, "\r\n")] = '\0';
        if ((int)at.line <= skip_header || line[0] == '\0')
            continue;
        rc = fn(data, &at, fields, split(line, sep, fields, maxf));
    }
    if (rc == 0 && ferror(f)) {
        rc = -EIO;
        gs_buf_printf(err, "%s: read error\n", path);
    }
    if (rc == 0 && (int)at.line < skip_header) {
        at.line = 1;
        rc = gs_sim_lines_error(&at, -EINVAL, "empty file (a header line was expected)");
    }
    free(line);
    fclose(f);
    return rc;
}
