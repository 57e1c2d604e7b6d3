/*
 * placement.c: which GPUs of a node a job gets, gsched's topology-aware choice
 * (common/gpuset.h, GS_GPUSET_PREFER) against first fit (GS_GPUSET_ANY: the lowest free
 * indices), replayed on a simulated cluster of identical nodes, same job stream, same run.
 *
 *     placement [NODES [JOBS [SEED [LOAD [SLOWDOWN]]]]]     defaults: 1000 100000 1 0.95 1
 *
 * For each node shape (8-GPU NVSwitch, 8-GPU PCIe server, 4-GPU NVLink-bridged workstation)
 * one stream of requests for 1, 2, 4 and 8 GPUs (40/25/20/15 %; no 8 on 4-GPU nodes) arrives
 * as a Poisson process sized for LOAD of the cluster's GPUs, with exponential run times
 * (mean 1 h, at least 1 min), and is served first come first served. Both policies pick the
 * node the same way, best fit (the node with the fewest free GPUs that has enough, lowest
 * index first), so the comparison isolates the choice within a node.
 *
 * With SLOWDOWN 1 a multi-GPU job runs longer when its worst link is worse (an assumed
 * all-reduce penalty, printed with the results); with 0 run times ignore placement, and since
 * node choice counts GPUs only, both policies then start every job at the same time.
 *
 * Reported per policy: share of jobs whose worst link class is the best an empty node of
 * this shape gives for their size; stranded free GPUs (see print_shape); average queueing
 * delay; the cost of one decision (node scan + GPU choice) over 1000-node cluster states
 * taken from the replay, timed with clock_gettime over many decisions; and the cost of the
 * GPU choice alone.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/gpuset.h"

#define MEAN_RUN_S 3600.0
#define MIN_RUN_S 60.0
#define TIMED_DECISIONS 200000
#define TIMED_CHOICES 1000000
#define NSIZES 4

static const int sizes[NSIZES] = {1, 2, 4, 8};
static const int size_weight[NSIZES] = {40, 25, 20, 15};

/* Assumed run-time factor by worst link class (index: enum gs_gpuset_class). */
static const double slowdown[GS_GPUSET_CLASS_WORST + 1] = {1.0, 1.0, 1.10, 1.15, 1.20, 1.25, 1.40};

struct job {
    double arrival;
    double run; /* seconds, before any slowdown */
    int gpus;
};

struct running {
    double end;
    int node;
    uint64_t mask;
};

/* Min-heap of running jobs by end time. */
struct heap {
    struct running *v;
    size_t len;
};

/* Cluster state. stranded[i]: free GPUs on nodes that cannot start a stranded_size[i] job. */
static const int stranded_size[2] = {4, 8};

struct cluster {
    const struct gs_gpuset_node *shape;
    int nnodes;
    uint64_t *free;
    bool *able[2]; /* per node: a stranded_size[i]-GPU job could start at its best class */
    long free_gpus;
    long stranded[2];
};

struct result {
    long jobs[NSIZES], best[NSIZES];
    double wait_sum;
    long started;
    double area_free, area_stranded[2]; /* GPU-seconds up to the last arrival */
    uint64_t *snapshot;                 /* free masks when half the jobs had started */
    double decision_us, choice_ns;
};

static uint64_t splitmix(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *state)
{
    return (double)(splitmix(state) >> 11) / 9007199254740992.0; /* [0, 1) */
}

static double exponential(uint64_t *state, double mean)
{
    return -mean * log(1.0 - uniform01(state));
}

static int size_index(int gpus)
{
    for (int i = 0; i < NSIZES; i++) {
        if (sizes[i] == gpus)
            return i;
    }
    return 0;
}

/* ---- node shapes ---- */

static void set_pair(struct gs_gpuset_link *l, int n, int i, int j, int cls, int nvlinks)
{
    l[i * n + j] = (struct gs_gpuset_link){(uint8_t)cls, (uint8_t)nvlinks};
    l[j * n + i] = l[i * n + j];
}

static void nvswitch8(struct gs_gpuset_link *l)
{
    for (int i = 0; i < 8; i++) {
        for (int j = i + 1; j < 8; j++)
            set_pair(l, 8, i, j, GS_GPUSET_NVLINK, 18);
    }
}

static void pcie8(struct gs_gpuset_link *l)
{
    for (int i = 0; i < 8; i++) {
        for (int j = i + 1; j < 8; j++) {
            int cls = i / 4 != j / 4   ? GS_GPUSET_SYS
                      : i / 2 != j / 2 ? GS_GPUSET_NODE
                                       : GS_GPUSET_PIX;

            set_pair(l, 8, i, j, cls, 0);
        }
    }
}

static void workstation4(struct gs_gpuset_link *l)
{
    for (int i = 0; i < 4; i++) {
        for (int j = i + 1; j < 4; j++)
            set_pair(l, 4, i, j, i / 2 == j / 2 ? GS_GPUSET_NVLINK : GS_GPUSET_PHB, 4);
    }
}

struct shape {
    const char *name;
    const char *what;
    int ngpus;
    void (*fill)(struct gs_gpuset_link *links);
};

static const struct shape shapes[] = {
    {"nvswitch8", "8 GPUs, NVSwitch: every pair NV18", 8, nvswitch8},
    {"pcie8", "8 GPUs, 4 PCIe switches of 2 (PIX), 2 sockets (NODE within, SYS across)", 8, pcie8},
    {"workstation4", "4 GPUs, NVLink bridges 0-1 and 2-3 (NV4), PHB otherwise", 4, workstation4},
};

/* ---- the job stream ---- */

static struct job *make_stream(size_t njobs, int max_gpus, int nnodes, double load, uint64_t seed)
{
    struct job *jobs = calloc(njobs, sizeof(*jobs));
    double weight_sum = 0, mean_gpus = 0, rate, t = 0;

    if (jobs == NULL)
        return NULL;
    for (int i = 0; i < NSIZES && sizes[i] <= max_gpus; i++) {
        weight_sum += size_weight[i];
        mean_gpus += size_weight[i] * sizes[i];
    }
    mean_gpus /= weight_sum;
    rate = load * nnodes * max_gpus / (mean_gpus * MEAN_RUN_S);
    for (size_t j = 0; j < njobs; j++) {
        double w = uniform01(&seed) * weight_sum;
        int i = 0;

        while (w >= size_weight[i] && i + 1 < NSIZES && sizes[i + 1] <= max_gpus)
            w -= size_weight[i++];
        t += exponential(&seed, 1.0 / rate);
        jobs[j].arrival = t;
        jobs[j].gpus = sizes[i];
        jobs[j].run = fmax(MIN_RUN_S, exponential(&seed, MEAN_RUN_S));
    }
    return jobs;
}

/* ---- the cluster ---- */

static void heap_push(struct heap *h, struct running r)
{
    size_t i = h->len++;

    while (i > 0 && h->v[(i - 1) / 2].end > r.end) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = r;
}

static struct running heap_pop(struct heap *h)
{
    struct running top = h->v[0], last = h->v[--h->len];
    size_t i = 0;

    for (;;) {
        size_t c = 2 * i + 1;

        if (c >= h->len)
            break;
        if (c + 1 < h->len && h->v[c + 1].end < h->v[c].end)
            c++;
        if (h->v[c].end >= last.end)
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->len > 0)
        h->v[i] = last;
    return top;
}

/* Sets node i's free mask and keeps the free and stranded counts current. */
static void set_free(struct cluster *c, int i, uint64_t free_mask)
{
    struct gs_gpuset_choice unused;
    int before = __builtin_popcountll(c->free[i]), after = __builtin_popcountll(free_mask);

    c->free_gpus += after - before;
    c->free[i] = free_mask;
    for (int s = 0; s < 2; s++) {
        if (!c->able[s][i])
            c->stranded[s] -= before;
        c->able[s][i] =
            stranded_size[s] <= c->shape->ngpus &&
            gs_gpuset_choose(c->shape, free_mask, stranded_size[s], GS_GPUSET_STRICT, &unused) == 0;
        if (!c->able[s][i])
            c->stranded[s] += after;
    }
}

static int cluster_init(struct cluster *c, const struct gs_gpuset_node *shape, int nnodes)
{
    uint64_t all = shape->ngpus >= 64 ? UINT64_MAX : (UINT64_C(1) << shape->ngpus) - 1;

    memset(c, 0, sizeof(*c));
    c->shape = shape;
    c->nnodes = nnodes;
    c->free = calloc((size_t)nnodes, sizeof(*c->free));
    c->able[0] = calloc((size_t)nnodes, sizeof(bool));
    c->able[1] = calloc((size_t)nnodes, sizeof(bool));
    if (c->free == NULL || c->able[0] == NULL || c->able[1] == NULL)
        return -ENOMEM;
    for (int i = 0; i < nnodes; i++)
        set_free(c, i, all);
    return 0;
}

static void cluster_release(struct cluster *c)
{
    free(c->free);
    free(c->able[0]);
    free(c->able[1]);
}

/* Best fit: the node with the fewest free GPUs that has k, lowest index first; -1 if none. */
static int pick_node(const uint64_t *free_masks, int nnodes, int k)
{
    int best = -1, best_free = GS_GPUSET_MAX + 1;

    for (int i = 0; i < nnodes; i++) {
        int f = __builtin_popcountll(free_masks[i]);

        if (f >= k && f < best_free) {
            best = i;
            best_free = f;
            if (f == k)
                break;
        }
    }
    return best;
}

/* ---- the replay ---- */

struct replay {
    struct cluster c;
    struct heap running;
    enum gs_gpuset_affinity aff;
    bool slow;
    struct result *r;
};

/* Adds the interval [from, to), cut at the last arrival, to the time averages. */
static void integrate(struct replay *p, double from, double to, double horizon)
{
    double dt = fmin(to, horizon) - fmin(from, horizon);

    if (dt <= 0)
        return;
    p->r->area_free += (double)p->c.free_gpus * dt;
    for (int s = 0; s < 2; s++)
        p->r->area_stranded[s] += (double)p->c.stranded[s] * dt;
}

/* Starts job j now if a node has room; false if it must wait. */
static bool try_start(struct replay *p, const struct job *j, double now)
{
    struct gs_gpuset_choice ch;
    int node = pick_node(p->c.free, p->c.nnodes, j->gpus);
    int si = size_index(j->gpus);
    int best_cls = gs_gpuset_best_possible(p->c.shape, j->gpus);
    double run;

    if (node < 0 || gs_gpuset_choose(p->c.shape, p->c.free[node], j->gpus, p->aff, &ch) < 0)
        return false;
    p->r->jobs[si]++;
    if (ch.worst == best_cls)
        p->r->best[si]++;
    p->r->wait_sum += now - j->arrival;
    p->r->started++;
    run = j->run * (p->slow ? slowdown[ch.worst] / slowdown[best_cls] : 1.0);
    heap_push(&p->running, (struct running){now + run, node, ch.mask});
    set_free(&p->c, node, p->c.free[node] & ~ch.mask);
    return true;
}

static int replay(const struct gs_gpuset_node *shape, int nnodes, const struct job *jobs,
                  size_t njobs, enum gs_gpuset_affinity aff, bool slow, struct result *r)
{
    struct replay p = {.aff = aff, .slow = slow, .r = r};
    double now = 0, horizon = jobs[njobs - 1].arrival;
    size_t next = 0, head = 0; /* jobs [head, next) have arrived and wait, in order */
    int rc = cluster_init(&p.c, shape, nnodes);

    p.running.v = calloc(njobs, sizeof(*p.running.v));
    r->snapshot = calloc((size_t)nnodes, sizeof(*r->snapshot));
    if (rc < 0 || p.running.v == NULL || r->snapshot == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    while (head < njobs) {
        double t_arrive = next < njobs ? jobs[next].arrival : INFINITY;
        double t_end = p.running.len > 0 ? p.running.v[0].end : INFINITY;
        double t = fmin(t_arrive, t_end);

        integrate(&p, now, t, horizon);
        now = t;
        if (t_end <= t_arrive) {
            struct running done = heap_pop(&p.running);

            set_free(&p.c, done.node, p.c.free[done.node] | done.mask);
        } else {
            next++;
        }
        while (head < next && try_start(&p, &jobs[head], now)) {
            if (++head == njobs / 2)
                memcpy(r->snapshot, p.c.free, (size_t)nnodes * sizeof(*r->snapshot));
        }
    }
out:
    free(p.running.v);
    cluster_release(&p.c);
    return rc;
}

/* ---- decision cost ---- */

static volatile uint64_t sink; /* keeps the timed work from being optimised away */

/* One decision (node scan + choice) per request of the stream, on the snapshot state. */
static void time_decisions(const struct gs_gpuset_node *shape, const uint64_t *snapshot, int nnodes,
                           const struct job *jobs, size_t njobs, enum gs_gpuset_affinity aff,
                           struct result *r)
{
    struct gs_gpuset_choice ch = {0};
    uint64_t acc = 0, t0 = gs_clock_mono_ns();

    for (int i = 0; i < TIMED_DECISIONS; i++) {
        int k = jobs[(size_t)i % njobs].gpus;
        int node = pick_node(snapshot, nnodes, k);

        if (node >= 0 && gs_gpuset_choose(shape, snapshot[node], k, aff, &ch) == 0)
            acc += ch.mask;
    }
    r->decision_us = (double)(gs_clock_mono_ns() - t0) / 1e3 / TIMED_DECISIONS;
    sink = acc;
}

/* The GPU choice alone, over (free mask, k) pairs of the snapshot that can be served. */
static int time_choices(const struct gs_gpuset_node *shape, const uint64_t *snapshot, int nnodes,
                        const struct job *jobs, size_t njobs, enum gs_gpuset_affinity aff,
                        struct result *r)
{
    enum { NCASES = 4096 };
    uint64_t *masks = calloc(NCASES, sizeof(*masks)), acc = 0, t0;
    int *ks = calloc(NCASES, sizeof(*ks)), ncases = 0;
    struct gs_gpuset_choice ch = {0};

    for (size_t i = 0; masks != NULL && ks != NULL && i < njobs && ncases < NCASES; i++) {
        uint64_t f = snapshot[i % (size_t)nnodes];

        if (__builtin_popcountll(f) >= jobs[i].gpus) {
            masks[ncases] = f;
            ks[ncases++] = jobs[i].gpus;
        }
    }
    t0 = gs_clock_mono_ns();
    for (int i = 0; i < TIMED_CHOICES && ncases > 0; i++) {
        if (gs_gpuset_choose(shape, masks[i % ncases], ks[i % ncases], aff, &ch) == 0)
            acc += ch.mask;
    }
    r->choice_ns = (double)(gs_clock_mono_ns() - t0) / TIMED_CHOICES;
    sink = acc;
    free(masks);
    free(ks);
    return ncases > 0 ? 0 : -ENOMEM;
}

/* ---- output ---- */

static void row(const char *what, double ff, double gs, int decimals)
{
    printf("  %-44s %12.*f %12.*f %8.3f\n", what, decimals, ff, decimals, gs,
           ff > 0 ? gs / ff : NAN);
}

/* Share of the started jobs of sizes [from, to) that got the best class for their size. */
static double best_share(const struct result *r, int from, int to)
{
    long jobs = 0, best = 0;

    for (int i = from; i < to; i++) {
        jobs += r->jobs[i];
        best += r->best[i];
    }
    return jobs > 0 ? (double)best / (double)jobs : NAN;
}

static void print_best_classes(const struct shape *sh, const struct gs_gpuset_node *n)
{
    uint64_t all = (UINT64_C(1) << sh->ngpus) - 1;
    char name[GS_GPUSET_NAME_MAX];

    printf("  best worst-link class on an empty node:");
    for (int i = 1; i < NSIZES && sizes[i] <= sh->ngpus; i++) {
        struct gs_gpuset_choice ch;

        if (gs_gpuset_choose(n, all, sizes[i], GS_GPUSET_PREFER, &ch) == 0)
            printf(" %d GPUs %s;", sizes[i],
                   gs_gpuset_class_name(ch.worst, ch.worst_nvlinks, name, sizeof(name)));
    }
    printf("\n");
}

/*
 * Stranded free GPUs for size s: the share of free GPU-time (up to the last arrival) spent on
 * nodes where an s-GPU job could not start now at the best class an empty node gives for s
 * (gs_gpuset_choose STRICT fails): free capacity that an s-GPU job cannot use well.
 */
static void print_shape(const struct shape *sh, const struct gs_gpuset_node *n, int nnodes,
                        const struct result *ff, const struct result *gs)
{
    char label[64];

    printf("\n%s: %s\n", sh->name, sh->what);
    print_best_classes(sh, n);
    printf("  %-44s %12s %12s %8s\n", "", "first-fit", "gpuset", "ratio");
    for (int i = 1; i < NSIZES && sizes[i] <= sh->ngpus; i++) {
        snprintf(label, sizeof(label), "jobs at best class, %d-GPU", sizes[i]);
        row(label, best_share(ff, i, i + 1), best_share(gs, i, i + 1), 3);
    }
    row("jobs at best class, all multi-GPU", best_share(ff, 1, NSIZES), best_share(gs, 1, NSIZES),
        3);
    for (int s = 0; s < 2; s++) {
        if (stranded_size[s] > sh->ngpus)
            continue;
        snprintf(label, sizeof(label), "stranded free GPUs, %d-GPU job", stranded_size[s]);
        row(label, ff->area_stranded[s] / ff->area_free, gs->area_stranded[s] / gs->area_free, 3);
    }
    row("avg queueing delay, s", ff->wait_sum / (double)ff->started,
        gs->wait_sum / (double)gs->started, 1);
    snprintf(label, sizeof(label), "us per decision, %d nodes", nnodes);
    row(label, ff->decision_us, gs->decision_us, 3);
    row("ns per GPU choice alone", ff->choice_ns, gs->choice_ns, 0);
}

/* ---- driver ---- */

static int run_shape(const struct shape *sh, int nnodes, size_t njobs, double load, uint64_t seed,
                     bool slow)
{
    struct gs_gpuset_link links[8 * 8] = {{0, 0}};
    struct gs_gpuset_node *node = malloc(sizeof(*node));
    struct result ff, gs;
    struct job *jobs = make_stream(njobs, sh->ngpus, nnodes, load, seed);
    int rc = node == NULL || jobs == NULL ? -ENOMEM : 0;

    memset(&ff, 0, sizeof(ff));
    memset(&gs, 0, sizeof(gs));
    if (rc < 0)
        goto out;
    sh->fill(links);
    rc = gs_gpuset_init(node, sh->ngpus, links);
    if (rc == 0)
        rc = replay(node, nnodes, jobs, njobs, GS_GPUSET_ANY, slow, &ff);
    if (rc == 0)
        rc = replay(node, nnodes, jobs, njobs, GS_GPUSET_PREFER, slow, &gs);
    if (rc < 0)
        goto out;
    /* both timed on one state, gpuset's, so that the node scans cost the same */
    time_decisions(node, gs.snapshot, nnodes, jobs, njobs, GS_GPUSET_ANY, &ff);
    time_decisions(node, gs.snapshot, nnodes, jobs, njobs, GS_GPUSET_PREFER, &gs);
    rc = time_choices(node, gs.snapshot, nnodes, jobs, njobs, GS_GPUSET_ANY, &ff);
    if (rc == 0)
        rc = time_choices(node, gs.snapshot, nnodes, jobs, njobs, GS_GPUSET_PREFER, &gs);
    if (rc == 0)
        print_shape(sh, node, nnodes, &ff, &gs);
out:
    free(ff.snapshot);
    free(gs.snapshot);
    free(jobs);
    free(node);
    return rc;
}

static void print_header(int nnodes, size_t njobs, double load, uint64_t seed, bool slow)
{
    printf("placement: nodes=%d jobs=%zu seed=%llu load=%.2f (of GPUs, before slowdown)\n", nnodes,
           njobs, (unsigned long long)seed, load);
    printf("requests: 1/2/4/8 GPUs at 40/25/20/15%% (no 8 on 4-GPU nodes), Poisson arrivals, "
           "exponential run times (mean %.0f s, min %.0f s), first come first served\n",
           MEAN_RUN_S, MIN_RUN_S);
    printf("node choice: best fit (fewest free GPUs that suffice) for both policies, so only the "
           "choice within a node differs\n");
    if (slow)
        printf("slowdown (assumed): run times hold for the best worst link a job's size allows on "
               "the shape; a worse one stretches them by f(worst)/f(best), f = NV 1.00, PIX %.2f, "
               "PXB %.2f, PHB %.2f, NODE %.2f, SYS %.2f\n",
               slowdown[GS_GPUSET_PIX], slowdown[GS_GPUSET_PXB], slowdown[GS_GPUSET_PHB],
               slowdown[GS_GPUSET_NODE], slowdown[GS_GPUSET_SYS]);
    else
        printf("slowdown: none (run times ignore placement: both policies start every job at "
               "the same time)\n");
    printf("ratio = gpuset / first-fit; both policies' decisions timed with clock_gettime over %d "
           "decisions on one cluster state (gpuset's when half the jobs had started)\n",
           TIMED_DECISIONS);
}

int main(int argc, char **argv)
{
    int nnodes = argc > 1 ? atoi(argv[1]) : 1000;
    long njobs = argc > 2 ? atol(argv[2]) : 100000;
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
    double load = argc > 4 ? atof(argv[4]) : 0.95;
    bool slow = argc > 5 ? atoi(argv[5]) != 0 : true;
    int rc = 0;

    if (argc > 6 || nnodes < 1 || njobs < 2 || !(load > 0)) {
        fprintf(stderr, "usage: placement [NODES [JOBS [SEED [LOAD [SLOWDOWN]]]]]\n");
        return 2;
    }
    print_header(nnodes, (size_t)njobs, load, seed, slow);
    for (size_t i = 0; rc == 0 && i < sizeof(shapes) / sizeof(shapes[0]); i++)
        rc = run_shape(&shapes[i], nnodes, (size_t)njobs, load, seed, slow);
    if (rc < 0) {
        fprintf(stderr, "placement: %s\n", strerror(-rc));
        return 1;
    }
    return 0;
}
