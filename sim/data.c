/*
 * data.c: the nodes' dataset caches of the simulator's data model (see data.h). Each
 * node keeps a short list of the datasets it caches, with the bytes of each and when a job
 * last used it; staging a job tops up each of its nodes to its share and evicts the least
 * recently used others past the cache size, as the worker's shard cache does by shards.
 */
#include "sim/data.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    uint32_t dataset;
    uint64_t bytes, used_ms;
};

struct node_cache {
    struct entry *e;
    size_t n, cap;
    uint64_t total;
};

struct gs_sim_caches {
    const struct gs_sim_data_model *m;
    struct node_cache *nodes;
    size_t nnodes;
};

struct gs_sim_caches *gs_sim_caches_new(size_t nnodes, const struct gs_sim_data_model *m)
{
    struct gs_sim_caches *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->m = m;
    c->nnodes = nnodes;
    c->nodes = calloc(nnodes + 1, sizeof(*c->nodes));
    if (c->nodes == NULL) {
        free(c);
        return NULL;
    }
    return c;
}

void gs_sim_caches_free(struct gs_sim_caches *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->nnodes; i++)
        free(c->nodes[i].e);
    free(c->nodes);
    free(c);
}

static struct entry *find(const struct node_cache *nc, uint32_t d)
{
    for (size_t i = 0; i < nc->n; i++) {
        if (nc->e[i].dataset == d)
            return &nc->e[i];
    }
    return NULL;
}

void gs_sim_caches_bytes(const struct gs_sim_caches *c, uint32_t d, uint64_t *out)
{
    for (size_t i = 0; i < c->nnodes; i++) {
        const struct entry *e = find(&c->nodes[i], d);

        out[i] = e != NULL ? e->bytes : 0;
    }
}

/* Room for one more entry in nc. 0 or -ENOMEM. */
static int reserve(struct node_cache *nc)
{
    struct entry *e;
    size_t cap;

    if (nc->n < nc->cap)
        return 0;
    cap = nc->cap ? nc->cap * 2 : 4;
    e = realloc(nc->e, cap * sizeof(*e));
    if (e == NULL)
        return -ENOMEM;
    nc->e = e;
    nc->cap = cap;
    return 0;
}

/* Evicts the least recently used entries other than keep until nc fits in cap bytes. */
static void evict(struct node_cache *nc, uint32_t keep, uint64_t cap)
{
    while (nc->total > cap) {
        size_t lru = nc->n;

        for (size_t i = 0; i < nc->n; i++) {
            if (nc->e[i].dataset != keep && (lru == nc->n || nc->e[i].used_ms < nc->e[lru].used_ms))
                lru = i;
        }
        if (lru == nc->n)
            return; /* only keep is left, and it fits by construction */
        nc->total -= nc->e[lru].bytes;
        nc->e[lru] = nc->e[--nc->n];
    }
}

int gs_sim_caches_stage(struct gs_sim_caches *c, uint32_t d, const uint32_t *nodes, uint32_t n,
                        uint64_t now_ms, uint64_t *ret_ms, uint64_t *copied)
{
    const struct gs_sim_data_model *m = c->m;
    uint64_t share = n > 0 ? m->dataset_bytes / n + (m->dataset_bytes % n != 0) : 0;
    uint64_t most = 0;

    if (share > m->cache_bytes)
        share = m->cache_bytes;        /* the rest is read from the source as the job runs */
    for (uint32_t k = 0; k < n; k++) { /* every allocation first: all or nothing */
        if (nodes[k] < c->nnodes && find(&c->nodes[nodes[k]], d) == NULL &&
            reserve(&c->nodes[nodes[k]]) < 0)
            return -ENOMEM;
    }
    for (uint32_t k = 0; k < n; k++) {
        struct node_cache *nc;
        struct entry *e;

        if (nodes[k] >= c->nnodes)
            continue;
        nc = &c->nodes[nodes[k]];
        e = find(nc, d);
        if (e == NULL) {
            e = &nc->e[nc->n++];
            *e = (struct entry){.dataset = d};
        }
        if (e->bytes < share) {
            uint64_t missing = share - e->bytes;

            *copied += missing;
            most = missing > most ? missing : most;
            nc->total += missing;
            e->bytes = share;
        }
        e->used_ms = now_ms;
        evict(nc, d, m->cache_bytes);
    }
    *ret_ms = m->copy_rate > 0 ? (uint64_t)((double)most * 1000.0 / (double)m->copy_rate + 0.5) : 0;
    return 0;
}
