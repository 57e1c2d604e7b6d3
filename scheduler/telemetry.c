/*
 * telemetry.c: the per-GPU rings and idle state of telemetry.h. Nodes are kept in an array
 * indexed like the cluster's nodes, grown as nodes report; each GPU's record is fixed-size
 * so a heartbeat costs a few stores per GPU and no allocation.
 */
#include "scheduler/telemetry.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct sched_tel {
    uint32_t threshold_pct;
    uint64_t window_ms;
    struct sched_tel_node *nodes; /* nnodes entries; ngpus 0 until the node reports */
    uint32_t nnodes;
};

struct sched_tel *sched_tel_new(uint32_t threshold_pct, uint64_t window_ms)
{
    struct sched_tel *t = calloc(1, sizeof(*t));

    if (t != NULL) {
        t->threshold_pct = threshold_pct;
        t->window_ms = window_ms;
    }
    return t;
}

void sched_tel_free(struct sched_tel *t)
{
    if (t == NULL)
        return;
    for (uint32_t i = 0; i < t->nnodes; i++)
        free(t->nodes[i].gpus);
    free(t->nodes);
    free(t);
}

uint32_t sched_tel_threshold(const struct sched_tel *t)
{
    return t->threshold_pct;
}

uint64_t sched_tel_window_ms(const struct sched_tel *t)
{
    return t->window_ms;
}

struct sched_tel_node *sched_tel_node(struct sched_tel *t, uint32_t node, uint32_t ngpus)
{
    struct sched_tel_node *n;

    if (node >= t->nnodes) {
        n = realloc(t->nodes, ((size_t)node + 1) * sizeof(*n));
        if (n == NULL)
            return NULL;
        memset(&n[t->nnodes], 0, ((size_t)node + 1 - t->nnodes) * sizeof(*n));
        t->nodes = n;
        t->nnodes = node + 1;
    }
    n = &t->nodes[node];
    if (n->gpus == NULL || n->ngpus != ngpus) {
        struct sched_tel_gpu *g = calloc(ngpus > 0 ? ngpus : 1, sizeof(*g));

        if (g == NULL)
            return NULL;
        free(n->gpus);
        n->gpus = g;
        n->ngpus = ngpus;
    }
    return n;
}

const struct sched_tel_node *sched_tel_node_get(const struct sched_tel *t, uint32_t node)
{
    return node < t->nnodes && t->nodes[node].gpus != NULL ? &t->nodes[node] : NULL;
}

static void add_coarse(struct sched_tel_gpu *g, const struct sched_tel_sample *s)
{
    uint64_t minute = s->at_ms / 60000;
    struct sched_tel_bucket *b = NULL;

    if (g->coarse_n > 0) {
        b = &g->coarse[(g->coarse_next + SCHED_TEL_COARSE - 1) % SCHED_TEL_COARSE];
        if (b->minute != minute)
            b = NULL;
    }
    if (b == NULL) {
        b = &g->coarse[g->coarse_next];
        memset(b, 0, sizeof(*b));
        b->minute = minute;
        g->coarse_next = (g->coarse_next + 1) % SCHED_TEL_COARSE;
        if (g->coarse_n < SCHED_TEL_COARSE)
            g->coarse_n++;
    }
    b->util_sum += s->util_pct;
    b->count++;
    b->power_sum_w += s->power_w;
    if (s->util_max_pct > b->util_max_pct)
        b->util_max_pct = s->util_max_pct;
    if (s->mem_used_max_mib > b->mem_max_mib)
        b->mem_max_mib = s->mem_used_max_mib;
}

static void add_sample(struct sched_tel_gpu *g, const struct sched_tel_sample *s)
{
    g->fine[g->fine_next] = *s;
    g->fine_next = (g->fine_next + 1) % SCHED_TEL_FINE;
    if (g->fine_n < SCHED_TEL_FINE)
        g->fine_n++;
    add_coarse(g, s);
}

/* The idle state machine of one summary; see telemetry.h. */
static enum sched_tel_idle update_idle(struct sched_tel *t, struct sched_tel_gpu *g,
                                       uint32_t util_max, uint64_t owner, uint64_t now_ms)
{
    if (owner != g->owner) {
        g->owner = owner;
        g->below_since_ms = 0;
        g->flagged = false;
        g->flagged_at_ms = 0;
    }
    if (owner == 0)
        return SCHED_TEL_IDLE_SAME;
    if (util_max >= t->threshold_pct) {
        g->below_since_ms = 0;
        if (!g->flagged)
            return SCHED_TEL_IDLE_SAME;
        g->flagged = false;
        g->flagged_at_ms = 0;
        return SCHED_TEL_IDLE_CLEARED;
    }
    if (g->below_since_ms == 0)
        g->below_since_ms = now_ms;
    if (g->flagged || now_ms - g->below_since_ms < t->window_ms)
        return SCHED_TEL_IDLE_SAME;
    g->flagged = true;
    g->flagged_at_ms = now_ms;
    return SCHED_TEL_IDLE_FLAGGED;
}

enum sched_tel_idle sched_tel_record(struct sched_tel *t, struct sched_tel_gpu *g,
                                     const struct sched_tel_figures *f, uint64_t owner,
                                     uint64_t now_ms)
{
    uint64_t xid_total = g->xid_total + f->xid_count;

    if (f->samples == 0) /* nothing measured: keeps its state, as a heartbeat without GPUs */
        return SCHED_TEL_IDLE_SAME;
    g->latest = *f;
    g->latest.s.at_ms = now_ms;
    g->xid_total = xid_total;
    g->known = true;
    add_sample(g, &g->latest.s);
    return update_idle(t, g, f->s.util_max_pct, owner, now_ms);
}

size_t sched_tel_fine(const struct sched_tel_gpu *g, uint64_t since_ms,
                      struct sched_tel_sample *out, size_t max)
{
    size_t n = 0;

    for (uint32_t i = 0; i < g->fine_n && n < max; i++) {
        const struct sched_tel_sample *s =
            &g->fine[(g->fine_next + SCHED_TEL_FINE - g->fine_n + i) % SCHED_TEL_FINE];

        if (s->at_ms >= since_ms)
            out[n++] = *s;
    }
    return n;
}

size_t sched_tel_coarse(const struct sched_tel_gpu *g, uint64_t since_ms,
                        struct sched_tel_bucket *out, size_t max)
{
    size_t n = 0;

    for (uint32_t i = 0; i < g->coarse_n && n < max; i++) {
        const struct sched_tel_bucket *b =
            &g->coarse[(g->coarse_next + SCHED_TEL_COARSE - g->coarse_n + i) % SCHED_TEL_COARSE];

        if ((b->minute + 1) * 60000 > since_ms)
            out[n++] = *b;
    }
    return n;
}
