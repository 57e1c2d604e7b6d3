/*
 * sched_slurm.c: what gschedd does for Slurm batch jobs (gsched sbatch) beyond a job file:
 * partitions and node lists narrowed to the nodes a job may use, and the job-level SLURM_*
 * environment its batch step and srun steps see.
 *
 * Partitions come from the configuration ([[partition]], or the implicit "main" of every
 * node). A job's partition is fixed at submit (the default one when it names none), so a
 * later change of the default does not move queued jobs. Node masks are bitmaps over the
 * cluster's node indices. Each partition's is kept as nodes join the cluster (their workers
 * register), so that the planning pass, which asks every pending job's at every event, gets
 * it without matching node names: a job's is its partition's, borrowed, or a copy of it less
 * its --exclude.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/features.h"
#include "common/hostlist.h"
#include "common/log.h"
#include "common/units.h"
#include "scheduler/sched_internal.h"

#define BATCH_STEP_MAX_ENV 64 /* the SLURM_* variables set here, with room to spare */
#define HET_GROUP_MAX_ENV 24  /* those set again for each component, _HET_GROUP_K */

static void set_bit(uint64_t *bits, size_t i)
{
    bits[i / 64] |= 1ULL << (i % 64);
}

static void clear_bit(uint64_t *bits, size_t i)
{
    bits[i / 64] &= ~(1ULL << (i % 64));
}

const struct gs_config_partition *sched_job_partition(struct sched_ctx *s,
                                                      const struct gs_jobspec *spec)
{
    return gs_config_partition(s->cfg, spec->partition);
}

int sched_slurm_admit(struct sched_ctx *s, struct gs_jobspec *spec, char *why, size_t size)
{
    const struct gs_config_partition *p = sched_job_partition(s, spec);
    char limit[32];

    if (p == NULL) {
        snprintf(why, size, "partition: no partition '%s' (see gsched sinfo)", spec->partition);
        return -EINVAL;
    }
    if (spec->partition == NULL) {
        spec->partition = strdup(p->name);
        if (spec->partition == NULL)
            return -ENOMEM;
    }
    if (p->max_time_s != GS_DURATION_INFINITE) {
        if (spec->time_limit_s == GS_DURATION_INFINITE) {
            spec->time_limit_s = p->max_time_s; /* Slurm's default: the partition's limit */
        } else if (spec->time_limit_s > p->max_time_s) {
            gs_format_duration(p->max_time_s, limit, sizeof(limit));
            snprintf(why, size,
                     "resources.time_limit: partition '%s' allows jobs at most %s (its max_time)",
                     p->name, limit);
            return -EINVAL;
        }
    }
    for (size_t i = 0; i < spec->nnodelist; i++) {
        if (!gs_config_partition_has(p, spec->nodelist[i])) {
            snprintf(why, size, "resources.nodelist: node %s is not in partition '%s'",
                     spec->nodelist[i], p->name);
            return -EINVAL;
        }
        if (sched_node_find(s, spec->nodelist[i]) == NULL) {
            snprintf(why, size, "resources.nodelist: no node %s in the cluster", spec->nodelist[i]);
            return -EINVAL;
        }
    }
    return 0;
}

void sched_part_masks_free(struct sched_ctx *s)
{
    for (size_t i = 0; s->part_masks != NULL && i < s->cfg->npartitions; i++)
        free(s->part_masks[i]);
    free(s->part_masks);
    s->part_masks = NULL;
    s->part_words = 0;
}

/* Every partition mask grown to words words (the new ones zero); false out of memory. */
static bool part_masks_grow(struct sched_ctx *s, size_t words)
{
    if (s->part_masks == NULL &&
        (s->part_masks = calloc(s->cfg->npartitions, sizeof(*s->part_masks))) == NULL)
        return false;
    for (size_t i = 0; words > s->part_words && i < s->cfg->npartitions; i++) {
        uint64_t *grown;

        if (s->cfg->partitions[i].nodes == NULL)
            continue;
        if ((grown = realloc(s->part_masks[i], words * sizeof(*grown))) == NULL)
            return false;
        memset(grown + s->part_words, 0, (words - s->part_words) * sizeof(*grown));
        s->part_masks[i] = grown;
    }
    if (words > s->part_words)
        s->part_words = words;
    return true;
}

void sched_part_masks_node_added(struct sched_ctx *s, const struct sched_node *n)
{
    /* as many words as the planner's masks for a cluster of index + 1 nodes */
    if (s->part_masks_lost || s->cfg->npartitions == 0)
        return;
    if (!part_masks_grow(s, (n->index + 1) / 64 + 1)) {
        sched_part_masks_free(s);
        s->part_masks_lost = true;
        GS_LOG(GS_LOG_WARN,
               "node=%s out of memory for the partitions' node masks: they are "
               "built for each job from now on",
               n->name);
        return;
    }
    for (size_t i = 0; i < s->cfg->npartitions; i++) {
        if (s->part_masks[i] != NULL && gs_config_partition_has(&s->cfg->partitions[i], n->name))
            set_bit(s->part_masks[i], n->index);
    }
}

/* The kept mask of partition p for a cluster of words-word masks, or NULL. */
static uint64_t *part_mask(struct sched_ctx *s, const struct gs_config_partition *p, size_t words)
{
    if (p == NULL || s->part_masks == NULL || s->part_words != words)
        return NULL;
    return s->part_masks[p - s->cfg->partitions];
}

/* One dataset's bytes in each node's cache, and the nodes holding some (ndata of them). */
struct sched_data_view {
    char id[GS_DATA_ID_SIZE];
    uint64_t *bytes;
    uint32_t *nodes;
    uint32_t n;
};

#define DATA_VIEWS_MAX 32 /* datasets a pass shares views of; jobs of others build their own */

/* The nodes satisfying one --prefer expression, for a pass. */
struct sched_prefer_view {
    char *expr;
    uint64_t *mask;
    bool every; /* every node: no node ranks before another, so no preference at all */
};

#define PREFER_VIEWS_MAX 32 /* --prefer expressions a pass shares masks of */

/* Dataset id's bytes and nodes on s's n nodes into bytes (n + 1 zeroed) and nodes. */
static void data_fill(struct sched_ctx *s, const char *id, size_t n, uint64_t *bytes,
                      uint32_t *nodes, uint32_t *ret_n)
{
    *ret_n = 0;
    for (size_t i = 0; i < s->nnodes; i++) {
        uint32_t at = s->nodes[i]->index;

        if (at >= n)
            continue;
        bytes[at] = sched_data_node_bytes(s->nodes[i], id);
        if (bytes[at] != 0)
            nodes[(*ret_n)++] = at;
    }
}

void sched_data_view_begin(struct sched_ctx *s)
{
    sched_data_view_end(s);
    s->data_views_on = true;
}

void sched_data_view_end(struct sched_ctx *s)
{
    for (size_t i = 0; i < s->ndata_views; i++) {
        free(s->data_views[i].bytes);
        free(s->data_views[i].nodes);
    }
    free(s->data_views);
    s->data_views = NULL;
    s->ndata_views = 0;
    for (size_t i = 0; i < s->nprefer_views; i++) {
        free(s->prefer_views[i].expr);
        free(s->prefer_views[i].mask);
    }
    free(s->prefer_views);
    s->prefer_views = NULL;
    s->nprefer_views = 0;
    s->data_views_on = false;
}

/* The pass's view of dataset id, made at its first job; NULL outside a pass, past
 * DATA_VIEWS_MAX datasets, or out of memory (the caller builds the job's own). */
static const struct sched_data_view *data_view(struct sched_ctx *s, const char *id, size_t n)
{
    struct sched_data_view *v;

    for (size_t i = 0; s->data_views_on && i < s->ndata_views; i++) {
        if (strcmp(s->data_views[i].id, id) == 0)
            return &s->data_views[i];
    }
    if (!s->data_views_on || s->ndata_views == DATA_VIEWS_MAX)
        return NULL;
    if (s->data_views == NULL &&
        (s->data_views = calloc(DATA_VIEWS_MAX, sizeof(*s->data_views))) == NULL)
        return NULL;
    v = &s->data_views[s->ndata_views];
    v->bytes = calloc(n + 1, sizeof(*v->bytes));
    v->nodes = malloc((n + 1) * sizeof(*v->nodes));
    if (v->bytes == NULL || v->nodes == NULL) {
        free(v->bytes);
        free(v->nodes);
        *v = (struct sched_data_view){0};
        return NULL;
    }
    snprintf(v->id, sizeof(v->id), "%s", id);
    data_fill(s, id, n, v->bytes, v->nodes, &v->n);
    s->ndata_views++;
    return v;
}

/* The nodes (of n) whose features satisfy expr, into mask (words words, zeroed here);
 * whether that is every one of them. */
static bool prefer_fill(const struct sched_ctx *s, const char *expr, size_t n, size_t words,
                        uint64_t *mask)
{
    size_t set = 0;

    memset(mask, 0, words * sizeof(*mask));
    for (size_t i = 0; i < s->nnodes; i++) {
        const Gs__NodeTopology *t = s->nodes[i]->topology;

        if (s->nodes[i]->index < n && gs_features_match_names(expr, t->features, t->n_features)) {
            set_bit(mask, s->nodes[i]->index);
            set++;
        }
    }
    return set == n;
}

/*
 * The pass's mask of --prefer expression expr, made at its first job: every node matched
 * once per expression and pass, not once per job (a queue of 100,000 jobs preferring "ib"
 * would otherwise match 100,000 x the nodes), and whether it holds every node (*ret_every).
 * NULL outside a pass, past PREFER_VIEWS_MAX expressions, or out of memory (the caller
 * builds the job's own).
 */
static const uint64_t *prefer_view(struct sched_ctx *s, const char *expr, size_t n, size_t words,
                                   bool *ret_every)
{
    struct sched_prefer_view *v;

    for (size_t i = 0; s->data_views_on && i < s->nprefer_views; i++) {
        if (strcmp(s->prefer_views[i].expr, expr) == 0) {
            *ret_every = s->prefer_views[i].every;
            return s->prefer_views[i].mask;
        }
    }
    if (!s->data_views_on || s->nprefer_views == PREFER_VIEWS_MAX)
        return NULL;
    if (s->prefer_views == NULL &&
        (s->prefer_views = calloc(PREFER_VIEWS_MAX, sizeof(*s->prefer_views))) == NULL)
        return NULL;
    v = &s->prefer_views[s->nprefer_views];
    v->expr = strdup(expr);
    v->mask = malloc(words * sizeof(*v->mask));
    if (v->expr == NULL || v->mask == NULL) {
        free(v->expr);
        free(v->mask);
        *v = (struct sched_prefer_view){0};
        return NULL;
    }
    v->every = prefer_fill(s, expr, n, words, v->mask);
    *ret_every = v->every;
    s->nprefer_views++;
    return v->mask;
}

int sched_node_masks_build(struct sched_ctx *s, const struct gs_jobspec *spec,
                           struct sched_node_masks *m)
{
    const struct gs_config_partition *p = sched_job_partition(s, spec);
    size_t n = sched_cluster_nnodes(s->cluster), words = n / 64 + 1;
    uint64_t *kept = part_mask(s, p, words);

    *m = (struct sched_node_masks){0};
    if (spec->data.id[0] != '\0' && s->cfg->data_locality != GS_DATA_LOCALITY_OFF) {
        /* where its dataset is cached, for the placement */
        const struct sched_data_view *v = data_view(s, spec->data.id, n);

        m->data_first = s->cfg->data_locality == GS_DATA_LOCALITY_PREFER;
        if (v != NULL) {
            m->data_bytes = v->bytes; /* the planner only reads them */
            m->data_nodes = v->nodes;
            m->ndata_nodes = v->n;
            m->data_borrowed = true;
        } else {
            m->data_bytes = calloc(n + 1, sizeof(*m->data_bytes));
            m->data_nodes = malloc((n + 1) * sizeof(*m->data_nodes));
            if (m->data_bytes == NULL || m->data_nodes == NULL)
                goto oom;
            data_fill(s, spec->data.id, n, m->data_bytes, m->data_nodes, &m->ndata_nodes);
        }
    }
    if (spec->prefer != NULL && spec->prefer[0] != '\0') { /* sbatch --prefer: rank first */
        bool every = false;

        m->preferred = prefer_view(s, spec->prefer, n, words, &every);
        if (m->preferred == NULL) {
            if ((m->prefer_own = malloc(words * sizeof(*m->prefer_own))) == NULL)
                goto oom;
            every = prefer_fill(s, spec->prefer, n, words, m->prefer_own);
            m->preferred = m->prefer_own;
        }
        if (every) /* ranking every node first is ranking none: placement need not score them */
            m->preferred = NULL;
    }
    if (p != NULL && p->nodes == NULL && spec->nexclude == 0 && spec->nnodelist == 0 &&
        spec->tmp_per_node_mib == 0)
        return 0; /* every node, nothing required: no masks at all */
    if (kept != NULL && spec->nexclude == 0 && spec->tmp_per_node_mib == 0) {
        m->allowed = kept;
        m->allowed_borrowed = true;
    } else if ((m->allowed = malloc(words * sizeof(*m->allowed))) == NULL) {
        goto oom;
    } else if (kept != NULL) {
        memcpy(m->allowed, kept, words * sizeof(*m->allowed));
    } else {
        memset(m->allowed, 0, words * sizeof(*m->allowed));
        for (size_t i = 0; i < s->nnodes; i++) {
            const struct sched_node *node = s->nodes[i];

            if (node->index < n && p != NULL && gs_config_partition_has(p, node->name))
                set_bit(m->allowed, node->index);
        }
    }
    for (size_t i = 0; i < spec->nexclude; i++) {
        const struct sched_node *node = sched_node_find(s, spec->exclude[i]);
        if (node != NULL && node->index < n)
            clear_bit(m->allowed, node->index);
    }
    for (size_t i = 0; spec->tmp_per_node_mib > 0 && i < s->nnodes; i++) { /* sbatch --tmp */
        const struct sched_node *node = s->nodes[i];

        if (node->index < n && node->topology->tmp_disk_mib < spec->tmp_per_node_mib)
            clear_bit(m->allowed, node->index);
    }
    if (spec->nnodelist > 0) {
        m->required = calloc(words, sizeof(*m->required));
        if (m->required == NULL)
            goto oom;
        for (size_t i = 0; i < spec->nnodelist; i++) {
            const struct sched_node *node = sched_node_find(s, spec->nodelist[i]);
            if (node != NULL && node->index < n) {
                set_bit(m->required, node->index);
                m->nrequired++;
            }
        }
    }
    return 0;
oom:
    sched_node_masks_release(m);
    return -ENOMEM;
}

/* --- the batch step's environment -------------------------------------------------------- */

static void env_put(struct sched_env *e, const char *key, const char *value)
{
    Gs__LaunchTasks__EnvEntry *en;
    char *k, *v;

    if (e->rc < 0)
        return;
    for (size_t i = 0; i < e->n; i++) {
        if (strcmp(e->entries[i].key, key) == 0) { /* Slurm's value wins over the user's */
            v = strdup(value);
            if (v == NULL) {
                e->rc = -ENOMEM;
                return;
            }
            if (e->owned[i] & 2)
                free(e->entries[i].value);
            e->entries[i].value = v;
            e->owned[i] |= 2;
            return;
        }
    }
    if (e->n >= e->cap) {
        e->rc = -ENOMEM;
        return;
    }
    k = strdup(key);
    v = strdup(value);
    if (k == NULL || v == NULL) {
        free(k);
        free(v);
        e->rc = -ENOMEM;
        return;
    }
    en = &e->entries[e->n];
    gs__launch_tasks__env_entry__init(en);
    en->key = k;
    en->value = v;
    e->owned[e->n] = 3;
    e->ptrs[e->n] = en;
    e->n++;
}

static void env_putf(struct sched_env *e, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void env_putf(struct sched_env *e, const char *key, const char *fmt, ...)
{
    char value[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(value, sizeof(value), fmt, ap);
    va_end(ap);
    env_put(e, key, value);
}

void sched_env_release(struct sched_env *e)
{
    for (size_t i = 0; i < e->n; i++) {
        if (e->owned[i] & 1)
            free(e->entries[i].key);
        if (e->owned[i] & 2)
            free(e->entries[i].value);
    }
    free(e->entries);
    free(e->ptrs);
    free(e->owned);
    *e = (struct sched_env){0};
}

int sched_env_init(struct sched_env *e, const Gs__RunSpec *run, uint32_t nhet)
{
    size_t cap = run->n_env + BATCH_STEP_MAX_ENV + (nhet > 0 ? (nhet + 1) * HET_GROUP_MAX_ENV : 0);

    *e = (struct sched_env){0};
    e->entries = calloc(cap, sizeof(*e->entries));
    e->ptrs = calloc(cap, sizeof(*e->ptrs));
    e->owned = calloc(cap, sizeof(*e->owned));
    e->cap = cap;
    if (e->entries == NULL || e->ptrs == NULL || e->owned == NULL) {
        sched_env_release(e);
        return -ENOMEM;
    }
    for (size_t i = 0; i < run->n_env; i++) { /* borrowed from the run spec */
        gs__launch_tasks__env_entry__init(&e->entries[i]);
        e->entries[i].key = run->env[i]->key;
        e->entries[i].value = run->env[i]->value;
        e->ptrs[i] = &e->entries[i];
    }
    e->n = run->n_env;
    return 0;
}

/* The variable key + suffix ("SLURM_NTASKS" "_HET_GROUP_1"), set to the formatted value. */
static void put_sfx(struct sched_env *e, const char *key, const char *sfx, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void put_sfx(struct sched_env *e, const char *key, const char *sfx, const char *fmt, ...)
{
    char name[96], value[256];
    va_list ap;

    snprintf(name, sizeof(name), "%s%s", key, sfx);
    va_start(ap, fmt);
    vsnprintf(value, sizeof(value), fmt, ap);
    va_end(ap);
    env_put(e, name, value);
}

/* A component's nodes: first..first + n - 1 of the job's allocation (every node, for an
 * ordinary job). */
struct comp_nodes {
    uint32_t first, n;
};

/* The component's per-node counts: tasks as sbatch lays them out, and allocated cores. */
static int node_counts(const struct sched_job *job, const struct gs_jobspec *sp,
                       struct comp_nodes cn, uint32_t **tasks, uint32_t **cpus)
{
    *tasks = calloc(cn.n + 1, sizeof(**tasks));
    *cpus = calloc(cn.n + 1, sizeof(**cpus));
    if (*tasks == NULL || *cpus == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < cn.n; i++) {
        (*tasks)[i] = gs_jobspec_node_tasks(sp, i);
        (*cpus)[i] = sched_node_alloc_cores(&job->alloc.nodes[cn.first + i]);
    }
    return 0;
}

/*
 * What one component's nodes are and hold (the whole job's for an ordinary job), each name
 * with sfx after it: "" for the plain names, "_HET_GROUP_K" for component K of a
 * heterogeneous job. sp is the component's view (gs_jobspec_het_view).
 */
static int component_env(struct sched_ctx *s, const struct sched_job *job,
                         const struct gs_jobspec *sp, struct comp_nodes cn, const char *sfx,
                         struct sched_env *e)
{
    struct gs_buf nodelist = GS_BUF_INIT, tpn = GS_BUF_INIT, cpn = GS_BUF_INIT;
    const char **names = calloc(cn.n + 1, sizeof(*names));
    uint32_t *tasks = NULL, *cpus = NULL;
    int rc;

    rc = names == NULL ? -ENOMEM : node_counts(job, sp, cn, &tasks, &cpus);
    if (rc < 0)
        goto out;
    for (uint32_t i = 0; i < cn.n; i++) {
        const char *name = sched_cluster_node_name(s->cluster, job->alloc.nodes[cn.first + i].node);
        names[i] = name != NULL ? name : "";
    }
    rc = gs_hostlist_compress(names, cn.n, &nodelist);
    if (rc == 0)
        rc = gs_hostlist_counts(tasks, cn.n, &tpn);
    if (rc == 0)
        rc = gs_hostlist_counts(cpus, cn.n, &cpn);
    if (rc < 0)
        goto out;
    put_sfx(e, "SLURM_JOB_NODELIST", sfx, "%s", nodelist.data != NULL ? nodelist.data : "");
    put_sfx(e, "SLURM_NODELIST", sfx, "%s", nodelist.data != NULL ? nodelist.data : "");
    put_sfx(e, "SLURM_JOB_NUM_NODES", sfx, "%u", cn.n);
    put_sfx(e, "SLURM_NNODES", sfx, "%u", cn.n);
    put_sfx(e, "SLURM_NTASKS", sfx, "%u", gs_jobspec_ntasks(sp));
    put_sfx(e, "SLURM_NPROCS", sfx, "%u", gs_jobspec_ntasks(sp));
    if (sp->tasks_per_node > 0 && sp->ntasks == 0)
        put_sfx(e, "SLURM_NTASKS_PER_NODE", sfx, "%u", sp->tasks_per_node);
    put_sfx(e, "SLURM_TASKS_PER_NODE", sfx, "%s", tpn.data != NULL ? tpn.data : "");
    put_sfx(e, "SLURM_JOB_CPUS_PER_NODE", sfx, "%s", cpn.data != NULL ? cpn.data : "");
    if (sp->cpus_per_task > 0)
        put_sfx(e, "SLURM_CPUS_PER_TASK", sfx, "%u", sp->cpus_per_task);
    if (sp->cpus_per_gpu > 0)
        put_sfx(e, "SLURM_CPUS_PER_GPU", sfx, "%u", sp->cpus_per_gpu);
    if (sp->overcommit)
        put_sfx(e, "SLURM_OVERCOMMIT", sfx, "1");
    if (sp->threads_per_core > 0)
        put_sfx(e, "SLURM_THREADS_PER_CORE", sfx, "%u", sp->threads_per_core);
    if (sp->gpus_per_node > 0) {
        put_sfx(e, "SLURM_GPUS_PER_NODE", sfx, "%u", sp->gpus_per_node);
        put_sfx(e, "SLURM_GPUS", sfx, "%u", sp->gpus_per_node * cn.n);
    }
    if (sp->gpus_per_task > 0)
        put_sfx(e, "SLURM_GPUS_PER_TASK", sfx, "%u", sp->gpus_per_task);
    if (sp->mem_per_node_mib > 0)
        put_sfx(e, "SLURM_MEM_PER_NODE", sfx, "%" PRIu64, sp->mem_per_node_mib);
    if (sfx[0] != '\0') { /* the whole job's, under each component's name as Slurm has them */
        put_sfx(e, "SLURM_JOB_ID", sfx, "%" PRIu64, job->id);
        put_sfx(e, "SLURM_JOB_PARTITION", sfx, "%s", sp->partition != NULL ? sp->partition : "");
    }
    rc = e->rc;
out:
    gs_buf_release(&nodelist);
    gs_buf_release(&tpn);
    gs_buf_release(&cpn);
    free(names);
    free(tasks);
    free(cpus);
    return rc;
}

/*
 * The plain names describe component 0 (srun's default group); a heterogeneous job adds
 * SLURM_HET_SIZE and every component's under _HET_GROUP_K.
 */
static int components_env(struct sched_ctx *s, const struct sched_job *job, struct sched_env *e)
{
    const struct gs_jobspec *sp = job->spec;
    struct gs_jobspec view;
    struct comp_nodes cn = {0, sp->nhet > 0 ? sp->nodes : job->alloc.nnodes};
    char sfx[32];
    int rc;

    gs_jobspec_het_view(sp, 0, &view);
    rc = component_env(s, job, &view, cn, "", e);
    if (rc < 0 || sp->nhet == 0)
        return rc;
    env_putf(e, "SLURM_HET_SIZE", "%u", sp->nhet + 1);
    for (uint32_t k = 0; rc == 0 && k <= sp->nhet; k++) {
        gs_jobspec_het_view(sp, k, &view);
        cn.first = gs_jobspec_het_first_node(sp, k);
        cn.n = view.nodes;
        if (cn.first + cn.n > job->alloc.nnodes)
            return -EINVAL; /* not the allocation placement made for this spec */
        snprintf(sfx, sizeof(sfx), "_HET_GROUP_%u", k);
        rc = component_env(s, job, &view, cn, sfx, e);
    }
    return rc;
}

int sched_slurm_job_env(struct sched_ctx *s, const struct sched_job *job, struct sched_env *e)
{
    const struct gs_jobspec *sp = job->spec;
    int rc = components_env(s, job, e);

    if (rc < 0)
        return rc;
    env_putf(e, "SLURM_JOB_ID", "%" PRIu64, job->id);
    env_putf(e, "SLURM_JOBID", "%" PRIu64, job->id);
    env_put(e, "SLURM_JOB_NAME", sp->name);
    if (sp->submit_dir != NULL)
        env_put(e, "SLURM_SUBMIT_DIR", sp->submit_dir);
    if (sp->submit_host != NULL)
        env_put(e, "SLURM_SUBMIT_HOST", sp->submit_host);
    env_put(e, "SLURM_CLUSTER_NAME", s->cfg->cluster_name);
    env_put(e, "SLURM_JOB_PARTITION", sp->partition != NULL ? sp->partition : "");
    if (sp->account != NULL)
        env_put(e, "SLURM_JOB_ACCOUNT", sp->account);
    if (sp->qos != NULL)
        env_put(e, "SLURM_JOB_QOS", sp->qos);
    if (sp->reservation != NULL)
        env_put(e, "SLURM_JOB_RESERVATION", sp->reservation);
    env_put(e, "SLURM_JOB_USER", job->user);
    env_putf(e, "SLURM_JOB_UID", "%u", job->uid);
    env_putf(e, "SLURM_JOB_GID", "%u", job->gid);
    env_putf(e, "SLURM_RESTART_COUNT", "%u", job->restarts);
    env_putf(e, "SLURM_JOB_START_TIME", "%" PRIu64, job->start_ms / 1000);
    if (sp->time_limit_s != GS_DURATION_INFINITE)
        env_putf(e, "SLURM_JOB_END_TIME", "%" PRIu64, job->start_ms / 1000 + sp->time_limit_s);
    if (sp->array.array_job_id != 0) {
        env_putf(e, "SLURM_ARRAY_JOB_ID", "%" PRIu64, sp->array.array_job_id);
        env_putf(e, "SLURM_ARRAY_TASK_ID", "%u", sp->array.task_id);
        env_putf(e, "SLURM_ARRAY_TASK_COUNT", "%u", sp->array.count);
        env_putf(e, "SLURM_ARRAY_TASK_MIN", "%u", sp->array.min);
        env_putf(e, "SLURM_ARRAY_TASK_MAX", "%u", sp->array.max);
        env_putf(e, "SLURM_ARRAY_TASK_STEP", "%u", sp->array.step);
    }
    /* srun inside the job reaches this scheduler through its socket. */
    env_put(e, "GSCHED_SOCKET", s->socket_path);
    return e->rc;
}
