/*
 * cluster.c: per-node free-resource bookkeeping (see cluster.h): nodes added and reset, taken
 * and given back, up and down, with the indexes placement reads kept up to date (how many
 * nodes have each number of free GPUs; the groups of alike nodes), and what-if copies.
 * GPUs are a 64-bit mask per node, cores a bitmap, memory a counter. Where a job goes is
 * cluster_place.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/popcnt.h"
#include "scheduler/cluster_internal.h"

/* Whether node n belongs in group g: what placement reads of a node but its cores, memory,
 * switch and state. (Features are kept zero-filled past each name, so memcmp compares them.) */
static bool group_has_kind(const struct group *g, const struct node *n)
{
    return g->gs == n->gs && g->mask == n->gpu_free && g->ngpus == n->ngpus &&
           g->links_uniform == n->links_uniform && g->nfeatures == n->lay->nfeatures &&
           memcmp(g->gpu_numa, n->gpu_numa, n->ngpus * sizeof(*n->gpu_numa)) == 0 &&
           memcmp(g->nic_class, n->nic_class, n->ngpus * sizeof(*n->nic_class)) == 0 &&
           memcmp(g->features, n->lay->features, n->lay->nfeatures * sizeof(*g->features)) == 0;
}

static void index_out(struct sched_cluster *c, const struct node *n)
{
    if (n->up)
        c->by_free[__builtin_popcountll(n->gpu_free)]--;
}

static void index_in(struct sched_cluster *c, const struct node *n)
{
    if (n->up)
        c->by_free[__builtin_popcountll(n->gpu_free)]++;
}

/* Whether node a comes before node b in a group: fewer free cores, then lower index. */
static bool group_before(const struct sched_cluster *c, uint32_t a, uint32_t b)
{
    uint32_t ca = c->nodes[a].ncores_free, cb = c->nodes[b].ncores_free;

    return ca != cb ? ca < cb : a < b;
}

/* Where node i is, or would go, in g's order. */
static uint32_t group_slot(const struct sched_cluster *c, const struct group *g, uint32_t i)
{
    uint32_t lo = 0, hi = g->n;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (group_before(c, g->nodes[mid], i))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void groups_drop(struct sched_cluster *c)
{
    for (size_t g = 0; c->groups != NULL && g < c->ngroups; g++)
        free(c->groups[g].buf);
    free(c->groups);
    free(c->node_group);
    c->groups = NULL;
    c->node_group = NULL;
    c->ngroups = c->capgroups = 0;
}

/* Room in g for one more node, before its first (front) or after its last: without it, a
 * buffer twice as large with the nodes in its middle. 0 or -ENOMEM. */
static int group_room(struct group *g, bool front)
{
    size_t off = (size_t)(g->nodes - g->buf);
    uint32_t cap, *buf;

    if (g->buf != NULL && (front ? off > 0 : off + g->n < g->cap))
        return 0;
    cap = g->n < 4 ? 8 : 2 * g->n;
    buf = malloc(cap * sizeof(*buf));
    if (buf == NULL)
        return -ENOMEM;
    if (g->n > 0)
        memcpy(buf + (cap - g->n) / 2, g->nodes, g->n * sizeof(*buf));
    free(g->buf);
    g->buf = buf;
    g->nodes = buf + (cap - g->n) / 2;
    g->cap = cap;
    return 0;
}

/* Node i out of its group (before its GPUs, cores or shape change). */
static void group_out(struct sched_cluster *c, uint32_t i)
{
    struct group *g;
    uint32_t at;

    if (c->node_group == NULL || c->node_group[i] == UINT32_MAX)
        return;
    g = &c->groups[c->node_group[i]];
    at = group_slot(c, g, i);
    if (at < g->n && g->nodes[at] == i) {
        if (at < g->n / 2) {
            memmove(&g->nodes[1], &g->nodes[0], at * sizeof(*g->nodes));
            g->nodes++;
        } else {
            memmove(&g->nodes[at], &g->nodes[at + 1], (g->n - at - 1) * sizeof(*g->nodes));
        }
        g->n--;
    }
    c->node_group[i] = UINT32_MAX;
}

/* Node i into the group of its shape and free GPUs. Out of memory, or past GROUPS_MAX,
 * the index is dropped for good and placement scans every node, as copies do. */
static void group_in(struct sched_cluster *c, uint32_t i)
{
    const struct node *n = &c->nodes[i];
    struct group *g = NULL;
    uint32_t at;

    if (c->copy || (c->groups == NULL && c->ngroups == SIZE_MAX))
        return;
    if (c->node_group == NULL) {
        if ((c->node_group = malloc(c->cap * sizeof(*c->node_group))) == NULL)
            goto drop;
        memset(c->node_group, 0xff, c->cap * sizeof(*c->node_group));
    }
    for (size_t k = 0; k < c->ngroups && g == NULL; k++) {
        if (group_has_kind(&c->groups[k], n))
            g = &c->groups[k];
    }
    if (g == NULL) {
        if (c->ngroups == GROUPS_MAX)
            goto drop;
        if (c->ngroups == c->capgroups) {
            size_t cap = c->capgroups ? c->capgroups * 2 : 16;
            struct group *grown = realloc(c->groups, cap * sizeof(*grown));

            if (grown == NULL)
                goto drop;
            c->groups = grown;
            c->capgroups = cap;
        }
        g = &c->groups[c->ngroups++];
        *g = (struct group){
            .gs = n->gs, .mask = n->gpu_free, .ngpus = n->ngpus, .links_uniform = n->links_uniform};
        memcpy(g->gpu_numa, n->gpu_numa, sizeof(g->gpu_numa));
        memcpy(g->nic_class, n->nic_class, sizeof(g->nic_class));
        memcpy(g->features, n->lay->features, sizeof(g->features));
        g->nfeatures = n->lay->nfeatures;
    }
    at = group_slot(c, g, i);
    if (group_room(g, at < g->n / 2) < 0)
        goto drop;
    if (at < g->n / 2 && g->nodes > g->buf) {
        g->nodes--;
        memmove(&g->nodes[0], &g->nodes[1], at * sizeof(*g->nodes));
    } else {
        memmove(&g->nodes[at + 1], &g->nodes[at], (g->n - at) * sizeof(*g->nodes));
    }
    g->nodes[at] = i;
    g->n++;
    c->node_group[i] = (uint32_t)(g - c->groups);
    return;
drop:
    groups_drop(c);
    c->ngroups = SIZE_MAX; /* with groups NULL: never again */
}

bool sched_cluster_index_ok(const struct sched_cluster *cluster)
{
    uint32_t want[SCHED_MAX_GPUS + 1] = {0};

    for (size_t i = 0; i < cluster->nnodes; i++) {
        if (cluster->nodes[i].up)
            want[__builtin_popcountll(cluster->nodes[i].gpu_free)]++;
    }
    return memcmp(want, cluster->by_free, sizeof(want)) == 0;
}

struct sched_cluster *sched_cluster_new(void)
{
    return calloc(1, sizeof(struct sched_cluster));
}

void sched_cluster_free(struct sched_cluster *cluster)
{
    if (cluster == NULL)
        return;
    for (size_t i = 0; i < cluster->npool; i++) {
        free(cluster->pool[i]->memo);
        free(cluster->pool[i]);
    }
    free(cluster->pool);
    groups_drop(cluster);
    for (size_t i = 0; !cluster->copy && i < cluster->nnodes; i++)
        free(cluster->nodes[i].lay);
    free(cluster->dirty_bits);
    free(cluster->dirty);
    free(cluster->nodes);
    free(cluster);
}

/* Past this share of the nodes listing them costs more than copying them all at a sync. */
#define DIRTY_SHARE 4

/* Node i of a copy is about to change (an original keeps no list). */
static void dirty(struct sched_cluster *c, uint32_t i)
{
    if (!c->copy || c->all_dirty ||
        (c->dirty_bits != NULL && (c->dirty_bits[i / 64] >> (i % 64)) & 1))
        return;
    if (c->dirty_bits == NULL) { /* at the first change: a copy only read needs none */
        c->dirty_bits = calloc((c->nnodes + 63) / 64, sizeof(*c->dirty_bits));
        c->dirty = malloc((c->nnodes / DIRTY_SHARE + 1) * sizeof(*c->dirty));
    }
    if (c->dirty_bits == NULL || c->dirty == NULL || c->ndirty > c->nnodes / DIRTY_SHARE) {
        c->all_dirty = true; /* a sync copies every node */
        return;
    }
    c->dirty_bits[i / 64] |= UINT64_C(1) << (i % 64);
    c->dirty[c->ndirty++] = i;
}

void sched_cluster_sync(struct sched_cluster *copy, const struct sched_cluster *original)
{
    if (copy->all_dirty) {
        memcpy(copy->nodes, original->nodes, copy->nnodes * sizeof(*copy->nodes));
        if (copy->dirty_bits != NULL)
            memset(copy->dirty_bits, 0, (copy->nnodes + 63) / 64 * sizeof(*copy->dirty_bits));
    } else {
        for (size_t k = 0; k < copy->ndirty; k++) {
            uint32_t i = copy->dirty[k];

            copy->nodes[i] = original->nodes[i];
            copy->dirty_bits[i / 64] &= ~(UINT64_C(1) << (i % 64));
        }
    }
    memcpy(copy->by_free, original->by_free, sizeof(copy->by_free));
    copy->ndirty = 0;
    copy->all_dirty = false;
}

struct sched_cluster *sched_cluster_copy(const struct sched_cluster *cluster)
{
    struct sched_cluster *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->nodes = malloc((cluster->nnodes > 0 ? cluster->nnodes : 1) * sizeof(*c->nodes));
    if (c->nodes == NULL) {
        free(c);
        return NULL;
    }
    memcpy(c->nodes, cluster->nodes, cluster->nnodes * sizeof(*c->nodes));
    memcpy(c->by_free, cluster->by_free, sizeof(c->by_free));
    c->gpus_max = cluster->gpus_max;
    c->switch_max = cluster->switch_max;
    c->nnodes = c->cap = cluster->nnodes;
    c->copy = true;
    return c;
}

static uint64_t low_bits(uint32_t n)
{
    return n >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << n) - 1;
}

static int check_info(const struct sched_node_info *info)
{
    if (info->name == NULL || info->name[0] == '\0' || strlen(info->name) >= NAME_MAX_LEN)
        return -EINVAL;
    if (info->ngpus > SCHED_MAX_GPUS || info->ncores == 0 || info->ncores > SCHED_MAX_CORES)
        return -EINVAL;
    if (info->nfeatures > SCHED_MAX_FEATURES)
        return -EINVAL;
    for (size_t i = 0; i < info->nfeatures; i++) {
        if (strlen(info->features[i]) >= FEATURE_MAX_LEN)
            return -EINVAL;
    }
    return 0;
}

/* n from info, its layout in lay (n's own, or new for a new node). */
static void fill_node(struct node *n, struct node_layout *lay, const struct sched_node_info *info)
{
    memset(n, 0, sizeof(*n));
    memset(lay, 0, sizeof(*lay));
    n->lay = lay;
    snprintf(lay->name, sizeof(lay->name), "%s", info->name);
    n->ngpus = info->ngpus;
    n->ncores = info->ncores;
    n->mem_mib = info->mem_mib;
    for (uint32_t i = 0; i < info->ngpus; i++)
        n->gpu_numa[i] = (int16_t)(info->gpu_numa != NULL ? info->gpu_numa[i] : 0);
    for (uint32_t i = 0; i < info->ncores; i++)
        lay->core_numa[i] = (int16_t)(info->core_numa != NULL ? info->core_numa[i] : 0);
    for (size_t i = 0; i < info->nfeatures; i++)
        snprintf(lay->features[i], FEATURE_MAX_LEN, "%s", info->features[i]);
    lay->nfeatures = info->nfeatures;
    n->up = true;
    n->gpu_free = low_bits(info->ngpus);
    for (uint32_t w = 0; w < CORE_WORDS; w++) {
        uint32_t first = w * 64;
        n->core_free[w] = first >= info->ncores ? 0 : low_bits(info->ncores - first);
    }
    n->ncores_free = info->ncores;
    n->mem_free = info->mem_mib;
    n->switch_id = info->switch_id;
    for (uint32_t i = 0; info->gpu_nic_class != NULL && i < info->ngpus; i++) {
        n->nic_class[i] = info->gpu_nic_class[i];
        n->nic_known |= n->nic_class[i] != 0;
    }
    n->links_uniform = info->links != NULL && info->ngpus > 1;
    for (uint32_t i = 0; n->links_uniform && i < info->ngpus * info->ngpus; i++) {
        const struct gs_gpuset_link *a = &info->links[1], *b = &info->links[i];

        if (i / info->ngpus != i % info->ngpus && (a->cls != b->cls || a->nvlinks != b->nvlinks))
            n->links_uniform = false;
    }
}

static bool same_links(const struct gs_gpuset_node *a, const struct sched_node_info *info)
{
    if (a->ngpus != (int)info->ngpus)
        return false;
    for (uint32_t i = 0; i < info->ngpus; i++) {
        for (uint32_t j = 0; j < info->ngpus; j++) {
            const struct gs_gpuset_link *l = &info->links[i * info->ngpus + j];

            if (i != j && (a->cls[i][j] != l->cls ||
                           (l->cls == GS_GPUSET_NVLINK && a->nvlinks[i][j] != l->nvlinks)))
                return false;
        }
    }
    return true;
}

/* The node's link hierarchy from info, shared with the nodes of the same matrix, or NULL
 * when the matrix is unknown or unusable (placement then takes the lowest free indices) or
 * memory ran out (the same, for this node). */
static const struct gs_gpuset_node *make_shape(struct sched_cluster *cluster,
                                               const struct sched_node_info *info)
{
    struct shape *sh, **pool;

    if (info->links == NULL || info->ngpus == 0)
        return NULL;
    for (size_t i = 0; i < cluster->npool; i++) {
        if (same_links(&cluster->pool[i]->gs, info))
            return &cluster->pool[i]->gs;
    }
    if ((sh = calloc(1, sizeof(*sh))) == NULL)
        return NULL;
    if (gs_gpuset_init(&sh->gs, (int)info->ngpus, info->links) < 0 ||
        (pool = realloc(cluster->pool, (cluster->npool + 1) * sizeof(*pool))) == NULL) {
        free(sh);
        return NULL;
    }
    sh->no_memo = cluster->npool >= MEMO_SHAPES;
    cluster->pool = pool;
    cluster->pool[cluster->npool++] = sh;
    return &sh->gs;
}

int sched_cluster_add_node(struct sched_cluster *cluster, const struct sched_node_info *info)
{
    struct node_layout *lay;
    int rc = check_info(info);

    if (rc < 0)
        return rc;
    if (cluster->copy)
        return -EINVAL; /* a what-if copy */
    if ((lay = malloc(sizeof(*lay))) == NULL)
        return -ENOMEM;
    if (cluster->nnodes == cluster->cap) {
        size_t cap = cluster->cap ? cluster->cap * 2 : 8;
        struct node *nodes = realloc(cluster->nodes, cap * sizeof(*nodes));

        if (nodes == NULL) {
            free(lay);
            return -ENOMEM;
        }
        cluster->nodes = nodes;
        if (cluster->node_group != NULL) {
            uint32_t *ng = realloc(cluster->node_group, cap * sizeof(*ng));

            if (ng == NULL) {
                free(lay);
                return -ENOMEM;
            }
            memset(ng + cluster->cap, 0xff, (cap - cluster->cap) * sizeof(*ng));
            cluster->node_group = ng;
        }
        cluster->cap = cap;
    }
    fill_node(&cluster->nodes[cluster->nnodes], lay, info);
    if (info->ngpus > cluster->gpus_max)
        cluster->gpus_max = info->ngpus;
    cluster->nodes[cluster->nnodes].gs = make_shape(cluster, info);
    if (info->switch_id > cluster->switch_max)
        cluster->switch_max = info->switch_id;
    index_in(cluster, &cluster->nodes[cluster->nnodes]);
    group_in(cluster, (uint32_t)cluster->nnodes);
    return (int)cluster->nnodes++;
}

int sched_cluster_reset_node(struct sched_cluster *cluster, uint32_t node,
                             const struct sched_node_info *info)
{
    struct node *n;
    bool up;
    int rc = check_info(info);

    if (rc < 0)
        return rc;
    if (node >= cluster->nnodes)
        return -EINVAL;
    n = &cluster->nodes[node];
    if (n->njobs > 0)
        return -EBUSY;
    if (cluster->copy)
        return -EINVAL; /* a what-if copy */
    up = n->up;
    index_out(cluster, n);
    group_out(cluster, node);
    fill_node(n, n->lay, info);
    n->up = up;
    if (info->ngpus > cluster->gpus_max)
        cluster->gpus_max = info->ngpus;
    if (info->switch_id > cluster->switch_max)
        cluster->switch_max = info->switch_id;
    index_in(cluster, n);
    n->gs = make_shape(cluster, info);
    group_in(cluster, node);
    return 0;
}

size_t sched_cluster_nnodes(const struct sched_cluster *cluster)
{
    return cluster->nnodes;
}

size_t sched_cluster_nshapes(const struct sched_cluster *cluster)
{
    return cluster->npool;
}

const char *sched_cluster_node_name(const struct sched_cluster *cluster, uint32_t node)
{
    return node < cluster->nnodes ? cluster->nodes[node].lay->name : NULL;
}

void sched_cluster_set_up(struct sched_cluster *cluster, uint32_t node, bool up)
{
    if (node >= cluster->nnodes)
        return;
    index_out(cluster, &cluster->nodes[node]);
    cluster->nodes[node].up = up;
    index_in(cluster, &cluster->nodes[node]);
}

bool sched_cluster_is_up(const struct sched_cluster *cluster, uint32_t node)
{
    return node < cluster->nnodes && cluster->nodes[node].up;
}

static inline uint32_t count_cores(const uint64_t *bits)
{
    uint32_t n = 0;

    for (int w = 0; w < CORE_WORDS; w++)
        n += (uint32_t)__builtin_popcountll(bits[w]);
    return n;
}

uint32_t sched_cluster_free_gpus(const struct sched_cluster *cluster, uint32_t node)
{
    return (uint32_t)__builtin_popcountll(cluster->nodes[node].gpu_free);
}

uint32_t sched_cluster_free_cores(const struct sched_cluster *cluster, uint32_t node)
{
    return cluster->nodes[node].ncores_free;
}

uint64_t sched_cluster_free_mem(const struct sched_cluster *cluster, uint32_t node)
{
    return cluster->nodes[node].mem_free;
}

uint32_t sched_node_alloc_cores(const struct sched_node_alloc *na)
{
    uint32_t n = 0;

    for (size_t w = 0; w < SCHED_MAX_CORES / 64; w++)
        n += (uint32_t)__builtin_popcountll(na->cores[w]);
    return n;
}

void sched_alloc_init(struct sched_alloc *alloc)
{
    memset(alloc, 0, sizeof(*alloc));
}

void sched_alloc_release(struct sched_alloc *alloc)
{
    free(alloc->nodes);
    sched_alloc_init(alloc);
}

int sched_alloc_reserve(struct sched_alloc *alloc, uint32_t n)
{
    struct sched_node_alloc *nodes;

    if (n <= alloc->cap)
        return 0;
    nodes = realloc(alloc->nodes, n * sizeof(*nodes));
    if (nodes == NULL)
        return -ENOMEM;
    alloc->nodes = nodes;
    alloc->cap = n;
    return 0;
}

int sched_alloc_copy(struct sched_alloc *dst, const struct sched_alloc *src)
{
    int rc = sched_alloc_reserve(dst, src->nnodes);

    if (rc < 0)
        return rc;
    if (src->nnodes > 0)
        memcpy(dst->nodes, src->nodes, src->nnodes * sizeof(*dst->nodes));
    dst->nnodes = src->nnodes;
    dst->exclusive = src->exclusive;
    return 0;
}

uint64_t sched_cluster_best_gpus(const struct sched_cluster *cluster, uint32_t node, uint32_t k,
                                 uint64_t among)
{
    const struct node *n = node < cluster->nnodes ? &cluster->nodes[node] : NULL;
    struct gs_gpuset_choice ch;
    uint64_t mask = 0;

    if (n == NULL || k == 0)
        return 0;
    among &= low_bits(n->ngpus);
    if ((uint32_t)__builtin_popcountll(among) < k)
        return 0;
    if (n->gs != NULL && gs_gpuset_choose(n->gs, among, (int)k, GS_GPUSET_PREFER, &ch) == 0)
        return ch.mask;
    for (uint32_t i = 0; i < n->ngpus && k > 0; i++) { /* the lowest k of among */
        if ((among >> i) & 1) {
            mask |= UINT64_C(1) << i;
            k--;
        }
    }
    return mask;
}

uint64_t sched_cluster_free_gpu_mask(const struct sched_cluster *cluster, uint32_t node)
{
    return node < cluster->nnodes ? cluster->nodes[node].gpu_free : 0;
}

uint64_t sched_cluster_alloc_gen(const struct sched_cluster *cluster, uint32_t node)
{
    return node < cluster->nnodes ? cluster->nodes[node].alloc_gen : 0;
}

uint32_t sched_cluster_node_jobs(const struct sched_cluster *cluster, uint32_t node)
{
    return node < cluster->nnodes ? cluster->nodes[node].njobs : 0;
}

/* Counting a node's free GPUs and cores for the indexes (common/popcnt.h): every job's
 * start and end, and every end a backfill walk passes. */
GS_POPCNT_CLONES void sched_cluster_take(struct sched_cluster *cluster,
                                         const struct sched_alloc *alloc)
{
    for (uint32_t k = 0; k < alloc->nnodes; k++) {
        const struct sched_node_alloc *a = &alloc->nodes[k];
        struct node *n = &cluster->nodes[a->node];

        dirty(cluster, a->node);
        index_out(cluster, n);
        group_out(cluster, a->node);
        n->gpu_free &= ~a->gpus;
        index_in(cluster, n);
        for (int w = 0; w < CORE_WORDS; w++)
            n->core_free[w] &= ~a->cores[w];
        n->ncores_free = count_cores(n->core_free);
        group_in(cluster, a->node);
        n->mem_free -= a->mem_mib <= n->mem_free ? a->mem_mib : n->mem_free;
        n->njobs++;
        n->alloc_gen++;
        n->exclusive_held = n->exclusive_held || alloc->exclusive;
    }
}

void sched_cluster_gpu_quality(const struct sched_cluster *cluster, uint32_t node, uint64_t gpus,
                               struct sched_gpu_quality *ret)
{
    const struct node *n = node < cluster->nnodes ? &cluster->nodes[node] : NULL;
    struct gs_gpuset_choice ch;

    memset(ret, 0, sizeof(*ret));
    if (n == NULL || n->gs == NULL)
        return;
    gs_gpuset_evaluate(n->gs, gpus, &ch);
    ret->worst = ch.worst;
    ret->nvlinks = ch.worst_nvlinks;
    ret->score = ch.score;
}

GS_POPCNT_CLONES void sched_cluster_give_back(struct sched_cluster *cluster,
                                              const struct sched_alloc *alloc)
{
    for (uint32_t k = 0; k < alloc->nnodes; k++) {
        const struct sched_node_alloc *a = &alloc->nodes[k];
        struct node *n = &cluster->nodes[a->node];

        dirty(cluster, a->node);
        index_out(cluster, n);
        group_out(cluster, a->node);
        n->gpu_free |= a->gpus & low_bits(n->ngpus);
        index_in(cluster, n);
        for (int w = 0; w < CORE_WORDS; w++)
            n->core_free[w] |= a->cores[w];
        n->ncores_free = count_cores(n->core_free);
        group_in(cluster, a->node);
        n->mem_free += a->mem_mib;
        if (n->mem_free > n->mem_mib)
            n->mem_free = n->mem_mib;
        if (n->njobs > 0)
            n->njobs--;
        n->alloc_gen++;
        if (alloc->exclusive)
            n->exclusive_held = false;
    }
}
