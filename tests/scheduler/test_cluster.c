/*
 * test_cluster.c: per-GPU, per-core and per-MiB accounting; gang placement is all nodes or
 * none; best fit keeps big nodes free; exclusive and constraint rules; cores are taken near
 * the job's GPUs first; node lists (allowed: the partition less --exclude; required:
 * --nodelist) bound placement and explain impossible requests.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "scheduler/cluster.h"

static struct sched_cluster *cluster;
static struct sched_alloc alloc;

static void setup(void)
{
    cluster = sched_cluster_new();
    cr_assert_not_null(cluster);
    sched_alloc_init(&alloc);
}

static void teardown(void)
{
    sched_alloc_release(&alloc);
    sched_cluster_free(cluster);
}

TestSuite(cluster, .init = setup, .fini = teardown);

/* A node of ngpus GPUs and 4 cores per GPU, GPUs split over two NUMA nodes. */
static int add(const char *name, uint32_t ngpus, const char *feature)
{
    static int gpu_numa[64], core_numa[256];
    const char *features[] = {feature};
    uint32_t ncores = ngpus > 0 ? 4 * ngpus : 8;
    struct sched_node_info info = {.name = name,
                                   .ngpus = ngpus,
                                   .ncores = ncores,
                                   .mem_mib = 65536,
                                   .gpu_numa = gpu_numa,
                                   .core_numa = core_numa,
                                   .features = features,
                                   .nfeatures = feature != NULL};

    for (uint32_t g = 0; g < ngpus; g++)
        gpu_numa[g] = g < ngpus / 2 ? 0 : 1;
    for (uint32_t c = 0; c < ncores; c++)
        core_numa[c] = c < ncores / 2 ? 0 : 1;
    return sched_cluster_add_node(cluster, &info);
}

#define REQ(n, g, c)                                                                               \
    (&(struct sched_req){.nodes = (n), .gpus_per_node = (g), .cores_per_node = (c)})

static struct sched_req req(uint32_t nodes, uint32_t gpus, uint32_t cores)
{
    return (struct sched_req){.nodes = nodes, .gpus_per_node = gpus, .cores_per_node = cores};
}

Test(cluster, take_and_give_back_account_gpus_cores_and_memory)
{
    struct sched_req r = req(1, 3, 5);

    cr_assert_eq(add("n1", 8, NULL), 0);
    r.mem_per_node_mib = 1000;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert_eq(alloc.nnodes, 1);
    cr_assert_eq(alloc.nodes[0].gpus, 0x7, "lowest free GPU indices");
    sched_cluster_take(cluster, &alloc);
    cr_assert_eq(sched_cluster_free_gpus(cluster, 0), 5);
    cr_assert_eq(sched_cluster_free_cores(cluster, 0), 27);
    cr_assert_eq(sched_cluster_free_mem(cluster, 0), 64536);
    sched_cluster_give_back(cluster, &alloc);
    cr_assert_eq(sched_cluster_free_gpus(cluster, 0), 8);
    cr_assert_eq(sched_cluster_free_cores(cluster, 0), 32);
    cr_assert_eq(sched_cluster_free_mem(cluster, 0), 65536);
}

Test(cluster, cores_come_from_the_gpus_numa_node_first)
{
    struct sched_alloc first;
    struct sched_req r = req(1, 4, 4);

    add("n1", 8, NULL); /* GPUs 0-3 and cores 0-15 on NUMA 0; 4-7 and 16-31 on NUMA 1 */
    sched_alloc_init(&first);
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &first), 0);
    sched_cluster_take(cluster, &first);
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert_eq(alloc.nodes[0].gpus, 0xf0);
    cr_assert_eq(alloc.nodes[0].cores[0], 0xfULL << 16, "cores 16-19 are near GPUs 4-7");
    sched_alloc_release(&first);
}

Test(cluster, gang_allocation_is_all_nodes_or_none)
{
    struct sched_req two = req(2, 4, 1), three = req(3, 4, 1);
    struct sched_alloc busy;

    add("n1", 8, NULL);
    add("n2", 8, NULL);
    add("n3", 8, NULL);
    sched_alloc_init(&busy);
    cr_assert_eq(sched_cluster_place(cluster, REQ(1, 8, 1), NULL, &busy), 0);
    sched_cluster_take(cluster, &busy);
    cr_assert_eq(sched_cluster_place(cluster, &three, NULL, &alloc), -EAGAIN);
    cr_assert_eq(sched_cluster_place(cluster, &two, NULL, &alloc), 0);
    cr_assert_eq(alloc.nnodes, 2);
    cr_assert_neq(alloc.nodes[0].node, busy.nodes[0].node);
    cr_assert_neq(alloc.nodes[1].node, busy.nodes[0].node);
    cr_assert_neq(alloc.nodes[0].node, alloc.nodes[1].node);
    sched_alloc_release(&busy);
}

Test(cluster, best_fit_keeps_whole_nodes_free)
{
    struct sched_alloc six;

    add("big", 8, NULL);
    add("part", 8, NULL);
    sched_alloc_init(&six);
    cr_assert_eq(sched_cluster_place(cluster, REQ(1, 6, 1), NULL, &six), 0);
    sched_cluster_take(cluster, &six);
    cr_assert_eq(sched_cluster_place(cluster, REQ(1, 2, 1), NULL, &alloc), 0);
    cr_assert_eq(alloc.nodes[0].node, six.nodes[0].node, "2 GPUs go to the partly used node");
    sched_alloc_release(&six);
}

Test(cluster, exclusive_jobs_need_and_hold_whole_nodes)
{
    struct sched_req excl = req(1, 1, 1), small = req(1, 1, 1);
    struct sched_alloc a;

    excl.exclusive = true;
    add("n1", 8, NULL);
    sched_alloc_init(&a);
    cr_assert_eq(sched_cluster_place(cluster, &small, NULL, &a), 0);
    sched_cluster_take(cluster, &a);
    cr_assert_eq(sched_cluster_place(cluster, &excl, NULL, &alloc), -EAGAIN);
    sched_cluster_give_back(cluster, &a);
    cr_assert_eq(sched_cluster_place(cluster, &excl, NULL, &alloc), 0);
    sched_cluster_take(cluster, &alloc);
    cr_assert_eq(sched_cluster_place(cluster, &small, NULL, &a), -EAGAIN);
    sched_cluster_give_back(cluster, &alloc);
    cr_assert_eq(sched_cluster_place(cluster, &small, NULL, &a), 0);
    sched_alloc_release(&a);
}

Test(cluster, constraint_selects_nodes_with_the_feature)
{
    struct sched_req r = req(1, 1, 1);

    add("a100", 8, "a100");
    add("h100", 8, "h100");
    r.constraint = "h100";
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert_str_eq(sched_cluster_node_name(cluster, alloc.nodes[0].node), "h100");
    r.constraint = "b200";
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), -EAGAIN);
}

/* "[r1|r2]": every node of a gang meets the same alternative, the first under which it fits. */
Test(cluster, a_matching_or_gives_every_node_the_same_alternative)
{
    struct sched_req r = req(2, 1, 1);
    struct sched_alloc held;
    char why[256];

    add("n0", 8, "r1");
    add("n1", 8, "r2");
    add("n2", 8, "r2");
    r.constraint = "r1|r2"; /* each node its own: the first two */
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert(alloc.nodes[0].node == 0 || alloc.nodes[1].node == 0, "r1|r2 would mix racks");
    r.constraint = "[r1|r2]"; /* r1 has one node: both on r2 */
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert_eq(alloc.nnodes, 2);
    cr_assert_str_eq(sched_cluster_node_name(cluster, alloc.nodes[0].node), "n1");
    cr_assert_str_eq(sched_cluster_node_name(cluster, alloc.nodes[1].node), "n2");
    cr_assert(sched_cluster_could_ever_fit(cluster, &r, why, sizeof(why)));
    /* n2 busy: r2 has one node free, and r1|r2 per node would still take n0 and n1 */
    sched_alloc_init(&held);
    r.nodes = 1;
    r.constraint = "n9|r2";
    r.exclusive = true;
    cr_assert_eq(sched_cluster_place(cluster, &r, (const uint64_t[]){0x3}, &held), 0);
    cr_assert_eq(held.nodes[0].node, 2);
    sched_cluster_take(cluster, &held);
    r = req(2, 1, 1);
    r.constraint = "[r1|r2]";
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), -EAGAIN);
    r.constraint = "r1|r2";
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    sched_cluster_give_back(cluster, &held);
    sched_alloc_release(&held);
    /* three nodes: no rack has them */
    r = req(3, 1, 1);
    r.constraint = "[r1|r2]";
    cr_assert_not(sched_cluster_could_ever_fit(cluster, &r, why, sizeof(why)));
    cr_assert(strstr(why, "no one alternative of [r1|r2] can ever hold all its nodes") != NULL,
              "%s", why);
    r.constraint = "[(r1|r2)|n9]"; /* one alternative covers both racks */
    cr_assert(sched_cluster_could_ever_fit(cluster, &r, why, sizeof(why)), "%s", why);
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
}

Test(cluster, down_and_avoided_nodes_are_not_used)
{
    uint64_t avoid = 0x1;

    add("n1", 8, NULL);
    add("n2", 8, NULL);
    sched_cluster_set_up(cluster, 1, false);
    cr_assert_not(sched_cluster_is_up(cluster, 1));
    cr_assert_eq(sched_cluster_place(cluster, REQ(1, 1, 1), &avoid, &alloc), -EAGAIN);
    cr_assert_eq(sched_cluster_place(cluster, REQ(1, 1, 1), NULL, &alloc), 0);
    cr_assert_eq(alloc.nodes[0].node, 0);
}

Test(cluster, could_ever_fit_explains_impossible_requests)
{
    char why[160];
    struct sched_req r = req(1, 9, 1);

    add("n1", 8, NULL);
    add("n2", 8, NULL);
    cr_assert_not(sched_cluster_could_ever_fit(cluster, &r, why, sizeof(why)));
    cr_assert_not_null(strstr(why, "9 GPU(s)"), "%s", why);
    r = req(3, 1, 1);
    cr_assert_not(sched_cluster_could_ever_fit(cluster, &r, why, sizeof(why)));
    cr_assert_not_null(strstr(why, "2 node(s)"), "%s", why);
    r = req(2, 8, 32);
    cr_assert(sched_cluster_could_ever_fit(cluster, &r, why, sizeof(why)));
}

Test(cluster, rejects_impossible_nodes)
{
    struct sched_node_info info = {.name = "x", .ngpus = 65, .ncores = 8};

    cr_assert_eq(sched_cluster_add_node(cluster, &info), -EINVAL);
    info.ngpus = 8;
    info.ncores = 0;
    cr_assert_eq(sched_cluster_add_node(cluster, &info), -EINVAL);
    info.ncores = 8;
    info.name = "";
    cr_assert_eq(sched_cluster_add_node(cluster, &info), -EINVAL);
}

/* A 4-GPU workstation's matrix: NVLink pairs 0-1 and 2-3 (nvl links each), NODE otherwise. */
static void ws_links(struct gs_gpuset_link links[16], uint8_t nvl)
{
    for (int a = 0; a < 4; a++) {
        for (int b = 0; b < 4; b++) {
            bool pair = a != b && a / 2 == b / 2;
            links[a * 4 + b] = (struct gs_gpuset_link){.cls = (uint8_t)(a == b ? GS_GPUSET_NVLINK
                                                                        : pair ? GS_GPUSET_NVLINK
                                                                               : GS_GPUSET_NODE),
                                                       .nvlinks = (uint8_t)(pair ? nvl : 0)};
        }
    }
}

/* A 4-GPU workstation (ws_links, NV4) on switch sw; its GPUs reach their nearest NIC by
 * class nic (0: no NIC known). */
static int add_ws_nic(const char *name, int sw, uint8_t nic)
{
    struct gs_gpuset_link links[16];
    uint8_t nic_class[4] = {nic, nic, nic, nic};
    struct sched_node_info info = {.name = name,
                                   .ngpus = 4,
                                   .ncores = 16,
                                   .mem_mib = 65536,
                                   .links = links,
                                   .switch_id = sw,
                                   .gpu_nic_class = nic_class};

    ws_links(links, 4);
    return sched_cluster_add_node(cluster, &info);
}

static int add_ws(const char *name, int sw)
{
    return add_ws_nic(name, sw, 0);
}

static void place_take(struct sched_req r, uint64_t want_gpus, uint32_t want_node)
{
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert_eq(alloc.nodes[0].gpus, want_gpus, "GPUs %#llx, not %#llx",
                 (unsigned long long)alloc.nodes[0].gpus, (unsigned long long)want_gpus);
    cr_assert_eq(alloc.nodes[0].node, want_node);
    sched_cluster_take(cluster, &alloc);
}

/* Marks GPUs of a node busy, as a job placed there by hand. */
static void busy(uint32_t node, uint64_t gpus)
{
    struct sched_node_alloc na = {.node = node, .gpus = gpus};
    struct sched_alloc a = {.nnodes = 1, .nodes = &na, .cap = 1};

    sched_cluster_take(cluster, &a);
}

Test(cluster, gpus_are_chosen_by_link_class_and_do_not_break_free_pairs)
{
    struct sched_gpu_quality q;

    cr_assert_eq(add_ws("ws", 0), 0);
    place_take(req(1, 1, 1), 0x1, 0);
    place_take(req(1, 1, 1), 0x2, 0); /* GPU 1, not 2: the pair 2-3 stays whole */
    place_take(req(1, 2, 1), 0xc, 0);
    sched_cluster_gpu_quality(cluster, 0, 0xc, &q);
    cr_assert_eq(q.worst, GS_GPUSET_NVLINK);
    cr_assert_eq(q.nvlinks, 4);
    sched_cluster_gpu_quality(cluster, 0, 0x5, &q);
    cr_assert_eq(q.worst, GS_GPUSET_NODE);
}

/* What GPU reservations keep: the best pair of the node, then the best pair of what is
 * left (the other NVLink pair, not a split one), and nothing when too few are left; the
 * node's busy GPUs do not matter (it is chosen as if empty). */
Test(cluster, best_gpus_among_those_other_reservations_leave)
{
    cr_assert_eq(add_ws("ws", 0), 0);
    cr_assert_eq(add("plain", 4, NULL), 1);
    busy(0, 0x3);
    cr_assert_eq(sched_cluster_best_gpus(cluster, 0, 2, ~UINT64_C(0)), 0x3);
    cr_assert_eq(sched_cluster_best_gpus(cluster, 0, 2, ~UINT64_C(0x3)), 0xc);
    cr_assert_eq(sched_cluster_best_gpus(cluster, 0, 2, 0x6), 0x6, "the only two left");
    cr_assert_eq(sched_cluster_best_gpus(cluster, 0, 2, 0x4), 0, "one left, two asked");
    cr_assert_eq(sched_cluster_best_gpus(cluster, 0, 5, ~UINT64_C(0)), 0);
    cr_assert_eq(sched_cluster_best_gpus(cluster, 1, 2, 0xa), 0xa, "no links: the lowest of among");
    cr_assert_eq(sched_cluster_best_gpus(cluster, 1, 1, 0xa), 0x2);
}

Test(cluster, a_node_that_can_give_a_better_link_wins_over_best_fit)
{
    struct sched_req r = req(1, 2, 1);

    cr_assert_eq(add_ws("a", 0), 0);
    cr_assert_eq(add_ws("b", 0), 1);
    place_take(req(1, 1, 1), 0x1, 0); /* a: 1, 2, 3 free: only the pair 2-3 is NVLink */
    place_take(req(1, 1, 1), 0x2, 0); /* a: 2, 3 free */
    place_take(req(1, 1, 1), 0x4, 0); /* a: 3 free */
    r.affinity = GS_GPUSET_STRICT;
    place_take(r, 0x3, 1); /* b, NV4: a has one GPU */
    place_take(r, 0xc, 1);
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), -EAGAIN, "only GPU a3 is free");
}

Test(cluster, strict_waits_for_a_set_as_good_as_an_empty_node)
{
    struct sched_req r = req(1, 2, 1);

    cr_assert_eq(add_ws("ws", 0), 0);
    busy(0, 0x5); /* 1 and 3 free: a NODE pair only */
    r.affinity = GS_GPUSET_STRICT;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), -EAGAIN);
    r.affinity = GS_GPUSET_PREFER;
    place_take(r, 0xa, 0);
}

Test(cluster, multi_node_jobs_stay_under_one_switch)
{
    /* Best fit alone would take n3 and n1 (most loaded first): they are on two switches. */
    cr_assert_eq(add_ws("n1", 1), 0);
    cr_assert_eq(add_ws("n2", 2), 1);
    cr_assert_eq(add_ws("n3", 2), 2);
    cr_assert_eq(add_ws("n4", 1), 3);
    busy(0, 0x1); /* n1: 3 free, 1 left after the job */
    busy(2, 0x3); /* n3: 2 free, none left: ranked first */
    cr_assert_eq(sched_cluster_place(cluster, REQ(2, 2, 1), NULL, &alloc), 0);
    cr_assert_eq(alloc.nnodes, 2);
    cr_assert_eq(alloc.nodes[0].node, 2, "n3 first (least free), then its switch-mate n2");
    cr_assert_eq(alloc.nodes[1].node, 1);
}

/* sbatch --switches=N: a gang's nodes under at most N switches, else it waits (-EAGAIN). */
static void switch_count(uint32_t nodes, uint32_t max, int want_rc, int want_switches)
{
    struct sched_req r = req(nodes, 1, 1);
    uint32_t seen = 0;

    r.max_switches = max;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), want_rc, "%u nodes, at most %u",
                 nodes, max);
    if (want_rc != 0)
        return;
    for (uint32_t k = 0; k < alloc.nnodes; k++) { /* switches 1-3 by bit, n6 (none) as bit 4 */
        uint32_t n = alloc.nodes[k].node;
        seen |= n == 5 ? 16u : 1u << (n / 2 + 1);
    }
    cr_assert_eq((int)__builtin_popcount(seen), want_switches, "%u nodes, at most %u: %#x", nodes,
                 max, seen);
}

Test(cluster, a_switch_count_keeps_a_gang_under_that_many_switches)
{
    add_ws("n1", 1);
    add_ws("n2", 1);
    add_ws("n3", 2);
    add_ws("n4", 2);
    add_ws("n5", 3);
    add_ws("n6", 0); /* under no switch: one of its own */
    switch_count(2, 1, 0, 1);
    switch_count(3, 1, -EAGAIN, 0);
    switch_count(3, 2, 0, 2);
    switch_count(5, 3, 0, 3);
    switch_count(6, 3, -EAGAIN, 0);
    switch_count(6, 4, 0, 4);
    busy(0, 0x1); /* n1 and n3 full: one free node per switch */
    busy(0, 0xe);
    busy(2, 0xf);
    switch_count(2, 1, -EAGAIN, 0);
    switch_count(2, 0, 0, 2);
    switch_count(3, 2, -EAGAIN, 0);
    switch_count(3, 3, 0, 3);
    switch_count(4, 4, 0, 4);
}

Test(cluster, multi_node_jobs_prefer_gpus_near_a_nic)
{
    cr_assert_eq(add_ws_nic("n1", 0, GS_GPUSET_PIX), 0);
    cr_assert_eq(add_ws_nic("n2", 0, GS_GPUSET_SYS), 1);
    cr_assert_eq(add_ws_nic("n3", 0, GS_GPUSET_PHB), 2);
    cr_assert_eq(sched_cluster_place(cluster, REQ(2, 2, 1), NULL, &alloc), 0);
    cr_assert_eq(alloc.nodes[0].node, 0);
    cr_assert_eq(alloc.nodes[1].node, 2, "n3's GPUs are closer to a NIC than n2's");
    cr_assert_eq(sched_cluster_place(cluster, REQ(1, 2, 1), NULL, &alloc), 0);
    cr_assert_eq(alloc.nodes[0].node, 0, "a one-node job does not care");
}

/* An NVSwitch node: 8 GPUs, every pair NV18; GPUs 0-3 on NUMA node 0 and far from a NIC
 * (SYS), 4-7 on NUMA node 1 with a NIC on their PCIe switch (PIX). */
static int add_nvswitch(const char *name)
{
    static struct gs_gpuset_link links[64];
    static int gpu_numa[8] = {0, 0, 0, 0, 1, 1, 1, 1}, core_numa[32];
    static uint8_t nic[8] = {GS_GPUSET_SYS, GS_GPUSET_SYS, GS_GPUSET_SYS, GS_GPUSET_SYS,
                             GS_GPUSET_PIX, GS_GPUSET_PIX, GS_GPUSET_PIX, GS_GPUSET_PIX};
    struct sched_node_info info = {.name = name,
                                   .ngpus = 8,
                                   .ncores = 32,
                                   .mem_mib = 1024,
                                   .gpu_numa = gpu_numa,
                                   .core_numa = core_numa,
                                   .links = links,
                                   .gpu_nic_class = nic};

    for (int i = 0; i < 64; i++)
        links[i] = (struct gs_gpuset_link){GS_GPUSET_NVLINK, 18};
    for (int c = 0; c < 32; c++)
        core_numa[c] = c < 16 ? 0 : 1;
    return sched_cluster_add_node(cluster, &info);
}

Test(cluster, nvswitch_ties_are_broken_by_numa_node_then_nic)
{
    cr_assert_eq(add_nvswitch("dgx"), 0);
    /* Both NUMA nodes hold 2: the one whose GPUs sit by a NIC. */
    place_take(req(1, 2, 1), 0x30, 0);
    /* NUMA 0 has 4 free, NUMA 1 has 2: the best fit keeps NUMA 0's four together. */
    place_take(req(1, 2, 1), 0xc0, 0);
    /* Only NUMA 0 is left: 3 of its 4. */
    place_take(req(1, 3, 1), 0x07, 0);
    sched_alloc_release(&alloc);
    sched_alloc_init(&alloc);
    busy(0, 0x08); /* all taken */
    cr_assert_eq(sched_cluster_place(cluster, REQ(1, 1, 1), NULL, &alloc), -EAGAIN);
}

Test(cluster, a_set_wider_than_a_numa_node_spans_as_few_as_it_can)
{
    cr_assert_eq(add_nvswitch("dgx"), 0);
    busy(0, 0x01 | 0x10); /* 3 free on each */
    /* 5 GPUs: one NUMA node's 3 (NUMA 1 first: its NICs), then 2 of the other's. */
    place_take(req(1, 5, 1), 0xe0 | 0x06, 0);
    /* gpu_affinity = "any": the lowest free indices, as asked. */
    sched_alloc_release(&alloc);
    sched_alloc_init(&alloc);
    cr_assert_eq(sched_cluster_place(cluster,
                                     &(struct sched_req){.nodes = 1,
                                                         .gpus_per_node = 1,
                                                         .cores_per_node = 1,
                                                         .affinity = GS_GPUSET_ANY},
                                     NULL, &alloc),
                 0);
    cr_assert_eq(alloc.nodes[0].gpus, 0x08);
}

/* A node bitmap (bit i: cluster node i) of the nodes given, for struct sched_req. */
#define BITS(...) bits_of((const uint32_t[]){__VA_ARGS__}, sizeof((uint32_t[]){__VA_ARGS__}) / 4)

static uint64_t bits_of(const uint32_t *nodes, size_t n)
{
    uint64_t b = 0;

    for (size_t i = 0; i < n; i++)
        b |= 1ULL << nodes[i];
    return b;
}

static bool alloc_has(const struct sched_alloc *a, uint32_t node)
{
    for (uint32_t k = 0; k < a->nnodes; k++) {
        if (a->nodes[k].node == node)
            return true;
    }
    return false;
}

Test(cluster, placement_never_uses_a_node_outside_allowed)
{
    uint64_t allowed = BITS(2, 3), none = 0;
    struct sched_req r = req(1, 2, 1);

    for (int i = 0; i < 4; i++)
        cr_assert_eq(add((const char *[]){"n1", "n2", "n3", "n4"}[i], 8, NULL), i);
    busy(0, 0x3f); /* n1 has 2 GPUs free: best fit would pick it first */
    r.allowed = &allowed;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert(alloc.nodes[0].node == 2 || alloc.nodes[0].node == 3, "node %u", alloc.nodes[0].node);
    r.nodes = 2;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert(alloc_has(&alloc, 2) && alloc_has(&alloc, 3));
    r.nodes = 3;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), -EAGAIN,
                 "four nodes free, two allowed");
    r.nodes = 1;
    r.allowed = &none;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), -EAGAIN, "no node allowed");
    r.allowed = NULL;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert_eq(alloc.nodes[0].node, 0, "without a list best fit picks n1 again");
}

Test(cluster, allowed_nodes_beyond_the_first_word_count)
{
    uint64_t allowed[2] = {0, 1ULL << (66 - 64)};
    struct sched_req r = req(1, 1, 1);
    char name[16];

    for (int i = 0; i < 70; i++) {
        snprintf(name, sizeof(name), "n%d", i);
        cr_assert_eq(add(name, 8, NULL), i);
    }
    r.allowed = allowed;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert_eq(alloc.nodes[0].node, 66);
}

Test(cluster, required_nodes_are_always_in_the_allocation_and_the_rest_go_by_rank)
{
    uint64_t required = BITS(3), both = BITS(0, 3);
    struct sched_req r = req(2, 2, 1);

    for (int i = 0; i < 4; i++)
        cr_assert_eq(add((const char *[]){"n1", "n2", "n3", "n4"}[i], 8, NULL), i);
    busy(1, 0x3f); /* n2 ranks first (fewest GPUs left), n4 would come last */
    r.required = &required;
    r.nrequired = 1;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert_eq(alloc.nnodes, 2);
    cr_assert(alloc_has(&alloc, 3), "the named node n4");
    cr_assert(alloc_has(&alloc, 1), "the best ranked of the others, n2");

    r.required = &both;
    r.nrequired = 2;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert(alloc_has(&alloc, 0) && alloc_has(&alloc, 3), "exactly the named nodes");

    r = req(1, 1, 1);
    r.required = &required;
    r.nrequired = 1;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert_eq(alloc.nodes[0].node, 3, "over best fit's n2");
}

Test(cluster, a_busy_or_down_required_node_means_wait)
{
    uint64_t required = BITS(2);
    struct sched_req r = req(2, 4, 1);

    for (int i = 0; i < 3; i++)
        cr_assert_eq(add((const char *[]){"n1", "n2", "n3"}[i], 8, NULL), i);
    r.required = &required;
    r.nrequired = 1;
    busy(2, 0x1f); /* n3: 3 GPUs free, the job wants 4 there */
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), -EAGAIN,
                 "n1 and n2 are free but n3 is a must");
    r.gpus_per_node = 3;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert(alloc_has(&alloc, 2));
    sched_cluster_set_up(cluster, 2, false);
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), -EAGAIN, "n3 is down");
    sched_cluster_set_up(cluster, 2, true);
    cr_assert_eq(sched_cluster_place(cluster, &r, &required, &alloc), -EAGAIN, "n3 is avoided");
}

Test(cluster, a_required_node_outside_allowed_is_never_used)
{
    uint64_t required = BITS(0), allowed = BITS(1, 2);
    struct sched_req r = req(2, 1, 1);
    char why[200];

    for (int i = 0; i < 3; i++)
        cr_assert_eq(add((const char *[]){"n1", "n2", "n3"}[i], 8, NULL), i);
    r.required = &required;
    r.nrequired = 1;
    r.allowed = &allowed;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), -EAGAIN);
    cr_assert_not(sched_cluster_could_ever_fit(cluster, &r, why, sizeof(why)));
    cr_assert_not_null(strstr(why, "node n1 can never hold the job"), "%s", why);
    cr_assert_not_null(strstr(why, "not in the job's partition"), "%s", why);
}

Test(cluster, could_ever_fit_explains_node_list_problems)
{
    uint64_t small = BITS(2), two = BITS(0, 2), one = BITS(1), with_small = BITS(0, 2);
    struct sched_req r = req(1, 8, 1);
    char why[200];

    cr_assert_eq(add("n1", 8, NULL), 0);
    cr_assert_eq(add("n2", 8, NULL), 1);
    cr_assert_eq(add("small", 4, NULL), 2);

    r.required = &small;
    r.nrequired = 1;
    cr_assert_not(sched_cluster_could_ever_fit(cluster, &r, why, sizeof(why)));
    cr_assert_not_null(strstr(why, "node small can never hold the job"), "%s", why);
    cr_assert_null(strstr(why, "partition"), "%s", why);

    r = req(1, 1, 1);
    r.required = &two;
    r.nrequired = 2;
    cr_assert_not(sched_cluster_could_ever_fit(cluster, &r, why, sizeof(why)));
    cr_assert_not_null(strstr(why, "names 2 node(s) to run on but asks for 1"), "%s", why);
    r.nodes = 2;
    cr_assert(sched_cluster_could_ever_fit(cluster, &r, why, sizeof(why)));

    r = req(2, 1, 1);
    r.allowed = &one;
    cr_assert_not(sched_cluster_could_ever_fit(cluster, &r, why, sizeof(why)));
    cr_assert_not_null(strstr(why, "may use 1 node(s)"), "%s", why);
    cr_assert_not_null(strstr(why, "it asks for 2"), "%s", why);
    r.nodes = 1;
    cr_assert(sched_cluster_could_ever_fit(cluster, &r, why, sizeof(why)));

    /* Enough allowed nodes, but one of them is too small: the GPU count is the reason. */
    r = req(2, 8, 1);
    r.allowed = &with_small;
    cr_assert_not(sched_cluster_could_ever_fit(cluster, &r, why, sizeof(why)));
    cr_assert_not_null(strstr(why, "only 1 node(s) can ever hold 8 GPU(s)"), "%s", why);
    r.allowed = NULL;
    cr_assert(sched_cluster_could_ever_fit(cluster, &r, why, sizeof(why)), "n1 and n2");
}

Test(cluster, the_free_capacity_index_follows_every_change)
{
    struct sched_cluster *copy;

    cr_assert_eq(add("n1", 4, NULL), 0);
    cr_assert_eq(add("n2", 8, NULL), 1);
    cr_assert(sched_cluster_index_ok(cluster));
    place_take(req(1, 8, 1), 0xff, 1);
    cr_assert(sched_cluster_index_ok(cluster));
    /* No node has 5 free GPUs now: refused at once, whatever else. */
    cr_assert_eq(sched_cluster_place(cluster, REQ(1, 5, 1), NULL, &alloc), -EAGAIN);
    cr_assert_eq(sched_cluster_place(cluster, REQ(2, 1, 1), NULL, &alloc), -EAGAIN,
                 "two nodes with a free GPU: only n1 has any");
    sched_cluster_set_up(cluster, 0, false);
    cr_assert(sched_cluster_index_ok(cluster));
    cr_assert_eq(sched_cluster_place(cluster, REQ(1, 1, 1), NULL, &alloc), -EAGAIN, "n1 down");
    sched_cluster_set_up(cluster, 0, true);
    copy = sched_cluster_copy(cluster);
    cr_assert_not_null(copy);
    sched_cluster_give_back(copy, &alloc);
    cr_assert(sched_cluster_index_ok(copy));
    cr_assert(sched_cluster_index_ok(cluster), "the copy's change stays in the copy");
    cr_assert_eq(sched_cluster_place(copy, REQ(1, 8, 1), NULL, &alloc), 0);
    sched_cluster_free(copy);
}

/*
 * Alike nodes share one link hierarchy and its cache of GPU choices; every choice is still
 * the one gs_gpuset_choose() makes for that node's free GPUs at that moment, through a long
 * run of placements and releases that revisits the same free masks again and again.
 */
Test(cluster, alike_nodes_share_a_shape_and_every_choice_stays_exact)
{
    struct gs_gpuset_link nv4[16], nv2[16];
    struct gs_gpuset_node ref[2];
    struct sched_alloc held[64];
    size_t nheld = 0;
    uint32_t seed = 12345;
    char names[8][8];

    ws_links(nv4, 4);
    ws_links(nv2, 2);
    cr_assert_eq(gs_gpuset_init(&ref[0], 4, nv4), 0);
    cr_assert_eq(gs_gpuset_init(&ref[1], 4, nv2), 0);
    for (int i = 0; i < 8; i++) { /* even nodes NV4, odd NV2 */
        struct sched_node_info info = {.name = names[i],
                                       .ngpus = 4,
                                       .ncores = 64,
                                       .mem_mib = 65536,
                                       .links = i % 2 == 0 ? nv4 : nv2};

        snprintf(names[i], sizeof(names[i]), "n%d", i);
        cr_assert_eq(sched_cluster_add_node(cluster, &info), i);
    }
    cr_assert_eq(sched_cluster_nshapes(cluster), 2, "two matrices, two hierarchies");
    for (int step = 0; step < 2000; step++) {
        uint64_t before[8];
        uint32_t k;
        struct gs_gpuset_choice want;
        struct sched_req r;
        int rc;

        seed = seed * 1103515245 + 12345;
        k = 1 + (seed >> 16) % 3;
        if (nheld > 0 && ((seed >> 8) % 3 == 0 || nheld == 64)) { /* give one back */
            size_t at = (seed >> 20) % nheld;

            sched_cluster_give_back(cluster, &held[at]);
            sched_alloc_release(&held[at]);
            held[at] = held[--nheld];
            continue;
        }
        for (uint32_t n = 0; n < 8; n++)
            before[n] = sched_cluster_free_gpu_mask(cluster, n);
        r = req(1, k, 1);
        sched_alloc_init(&held[nheld]);
        rc = sched_cluster_place(cluster, &r, NULL, &held[nheld]);
        if (rc == -EAGAIN) {
            sched_alloc_release(&held[nheld]);
            continue;
        }
        cr_assert_eq(rc, 0);
        {
            uint32_t n = held[nheld].nodes[0].node;

            cr_assert_eq(gs_gpuset_choose(&ref[n % 2], before[n], (int)k, GS_GPUSET_PREFER, &want),
                         0);
            cr_assert_eq(held[nheld].nodes[0].gpus, want.mask,
                         "step %d: node %u free %#llx k %u: got %#llx, the hierarchy says %#llx",
                         step, n, (unsigned long long)before[n], k,
                         (unsigned long long)held[nheld].nodes[0].gpus,
                         (unsigned long long)want.mask);
        }
        sched_cluster_take(cluster, &held[nheld++]);
    }
    for (size_t i = 0; i < nheld; i++)
        sched_alloc_release(&held[i]);
}

/*
 * A random run's step that is not a placement, as seed says: one of nnodes nodes goes down
 * or comes back (one step in down_every), or one of the nheld allocations is given back (a
 * third of the rest, and always when cap are held). Whether it was one.
 */
static bool churn(uint32_t seed, uint32_t nnodes, uint32_t down_every, struct sched_alloc *held,
                  size_t *nheld, size_t cap)
{
    if ((seed >> 9) % down_every == 0) {
        uint32_t node = (seed >> 13) % nnodes;

        sched_cluster_set_up(cluster, node, !sched_cluster_is_up(cluster, node));
        return true;
    }
    if (*nheld > 0 && ((seed >> 8) % 3 == 0 || *nheld == cap)) {
        size_t at = (seed >> 20) % *nheld;

        sched_cluster_give_back(cluster, &held[at]);
        sched_alloc_release(&held[at]);
        held[at] = held[--*nheld];
        return true;
    }
    return false;
}

/* sched_cluster_place without the candidate index: on a copy, which has none. */
static int place_scanning(const struct sched_req *r, const uint64_t *avoid, struct sched_alloc *a)
{
    struct sched_cluster *copy = sched_cluster_copy(cluster);
    int rc;

    cr_assert_not_null(copy);
    rc = sched_cluster_place(copy, r, avoid, a);
    sched_cluster_free(copy);
    return rc;
}

/*
 * The candidate index answers a one-node job exactly as the scan of every node does: through
 * a long random run of placements (GPUs, cores, memory), releases and nodes going down and
 * up, on nodes of two link matrices, one without a matrix and of several sizes, each request
 * is placed both ways (a copy of the cluster has no index: it scans) and the two allocations
 * must be the same node and GPUs.
 */
Test(cluster, the_candidate_index_places_one_node_jobs_as_the_scan_does)
{
    struct gs_gpuset_link nv4[16], nv2[16];
    struct sched_alloc held[96];
    size_t nheld = 0;
    uint32_t seed = 777;
    char names[10][8];

    ws_links(nv4, 4);
    ws_links(nv2, 2);
    for (int i = 0; i < 10; i++) {
        struct sched_node_info info = {.name = names[i],
                                       .ngpus = 4,
                                       .ncores = (uint32_t)(8 + 4 * (i % 3)),
                                       .mem_mib = (uint64_t)(1024 * (1 + i % 2)),
                                       .links = i == 9       ? NULL
                                                : i % 2 == 0 ? nv4
                                                             : nv2};

        snprintf(names[i], sizeof(names[i]), "n%d", i);
        cr_assert_eq(sched_cluster_add_node(cluster, &info), i);
    }
    for (int step = 0; step < 4000; step++) {
        struct sched_alloc scan, idx;
        struct sched_req r;
        int rc_scan, rc_idx;

        seed = seed * 1103515245 + 12345;
        if (churn(seed, 10, 17, held, &nheld, 96))
            continue;
        r = req(1, (seed >> 16) % 4, 1 + (seed >> 24) % 6);
        r.mem_per_node_mib = (seed >> 4) % 4 == 0 ? 600 : 0;
        r.affinity = (seed >> 28) % 4 == 0 ? GS_GPUSET_STRICT : GS_GPUSET_PREFER;
        sched_alloc_init(&scan);
        sched_alloc_init(&idx);
        rc_scan = place_scanning(&r, NULL, &scan);
        rc_idx = sched_cluster_place(cluster, &r, NULL, &idx);
        cr_assert_eq(rc_idx, rc_scan, "step %d: index %d, scan %d", step, rc_idx, rc_scan);
        if (rc_scan == 0) {
            cr_assert_eq(idx.nodes[0].node, scan.nodes[0].node, "step %d: node %u, scan %u", step,
                         idx.nodes[0].node, scan.nodes[0].node);
            cr_assert_eq(idx.nodes[0].gpus, scan.nodes[0].gpus, "step %d", step);
            cr_assert_eq(
                memcmp(idx.nodes[0].cores, scan.nodes[0].cores, sizeof(idx.nodes[0].cores)), 0,
                "step %d: cores", step);
            sched_cluster_take(cluster, &idx);
            held[nheld++] = idx;
        } else {
            sched_alloc_release(&idx);
        }
        sched_alloc_release(&scan);
    }
    for (size_t i = 0; i < nheld; i++)
        sched_alloc_release(&held[i]);
}

/* A random node for the gang run below: one of three kinds (NVSwitch with NUMA nodes and
 * NICs, NV4 workstation, no matrix), a switch (0: none) and its cores and memory. */
static void add_random_node(uint32_t i, uint32_t seed, int switches)
{
    static struct gs_gpuset_link nvs[64], nv4[16];
    static int numa8[8] = {0, 0, 0, 0, 1, 1, 1, 1}, core_numa[64];
    static uint8_t nic8[8] = {GS_GPUSET_SYS, GS_GPUSET_SYS, GS_GPUSET_PHB, GS_GPUSET_SYS,
                              GS_GPUSET_PIX, GS_GPUSET_PIX, GS_GPUSET_SYS, GS_GPUSET_PIX};
    static const char *ib[] = {"ib"};
    char name[16];
    uint32_t kind = seed % 3;
    struct sched_node_info info = {.name = name,
                                   .features = ib,
                                   .nfeatures = (seed >> 20) % 3 != 0,
                                   .ngpus = kind == 0 ? 8 : 4,
                                   .ncores = 8 + 8 * ((seed >> 4) % 3),
                                   .mem_mib = 1024 * (1 + (seed >> 8) % 2),
                                   .gpu_numa = kind == 0 ? numa8 : NULL,
                                   .core_numa = core_numa,
                                   .links = kind == 0   ? nvs
                                            : kind == 1 ? nv4
                                                        : NULL,
                                   .gpu_nic_class = kind == 0 && (seed >> 12) % 2 ? nic8 : NULL,
                                   .switch_id =
                                       switches > 0 ? (int)((seed >> 16) % (switches + 1)) : 0};

    for (int k = 0; k < 64; k++) {
        nvs[k] = (struct gs_gpuset_link){GS_GPUSET_NVLINK, 18};
        core_numa[k] = k % 2;
    }
    ws_links(nv4, 4);
    snprintf(name, sizeof(name), "n%u", i);
    cr_assert_eq(sched_cluster_add_node(cluster, &info), (int)i);
}

/*
 * The candidate index ranks a gang's nodes as the scan of every node does, with switches
 * (under_one_switch's choice from a prefix of the ranking) and without: random runs of gang
 * and one-node placements, some with allowed nodes, avoided nodes, a constraint,
 * --exclusive, reservations' GPU masks (all GPUs on most nodes, a few taken out on some), a
 * reservation's preferred nodes and GPUs, a dataset some nodes hold (tie-break or before
 * fit), or nodes it must have (--nodelist), releases and nodes going down and up over 40 nodes of
 * three kinds, each request placed both ways (on a copy, which scans), the two allocations the same
 * nodes in the same order, GPUs and cores.
 */
static void gangs_as_the_scan(int switches, uint32_t seed)
{
    struct sched_alloc held[128];
    size_t nheld = 0;

    for (uint32_t i = 0; i < 40; i++) {
        seed = seed * 1103515245 + 12345;
        add_random_node(i, seed >> 8, switches);
    }
    for (int step = 0; step < 3000; step++) {
        struct sched_alloc scan, idx;
        struct sched_req r;
        uint64_t allowed[1], avoid[1], gpu_masks[41], preferred[1], gpu_prefer[41], data[41];
        uint64_t required[1];
        uint32_t data_nodes[41], ndata = 0;
        int rc_scan, rc_idx;
        bool avoiding;

        seed = seed * 1103515245 + 12345;
        if (churn(seed, 40, 29, held, &nheld, 128))
            continue;
        r = req(1 + (seed >> 12) % 6, (seed >> 16) % 5, 1 + (seed >> 24) % 8);
        r.mem_per_node_mib = (seed >> 4) % 4 == 0 ? 1500 : 0;
        r.affinity = (seed >> 28) % 4 == 0 ? GS_GPUSET_STRICT : GS_GPUSET_PREFER;
        seed = seed * 1103515245 + 12345;
        allowed[0] = (uint64_t)seed * 0x9e3779b97f4a7c15ull | 0xff; /* about 5/8 of them */
        avoid[0] = (uint64_t)(seed >> 3) * 0xbf58476d1ce4e5b9ull & 0x00f0f0f0f0ull;
        r.allowed = seed % 4 == 0 ? allowed : NULL;
        avoiding = (seed >> 2) % 4 == 0;
        r.constraint = (seed >> 4) % 5 == 0 ? "ib" : NULL;
        r.exclusive = (seed >> 7) % 6 == 0;
        for (uint32_t i = 0; i < 41; i++) /* GPUs 1 and 2 of every fifth node reserved */
            gpu_masks[i] = (i + (seed >> 9)) % 5 == 0 ? ~UINT64_C(0x6) : ~UINT64_C(0);
        r.gpu_masks = (seed >> 11) % 4 == 0 ? gpu_masks : NULL;
        preferred[0] = UINT64_C(0x00f000f00f) << ((seed >> 13) % 4); /* a FLEX one's nodes */
        for (uint32_t i = 0; i < 41; i++) /* ... and its GPUs 0 and 3 there */
            gpu_prefer[i] = (preferred[0] >> i) & 1 ? UINT64_C(0x9) : 0;
        r.preferred = (seed >> 15) % 4 == 0 ? preferred : NULL;
        r.gpu_prefer = r.preferred != NULL && (seed >> 17) % 2 ? gpu_prefer : NULL;
        for (uint32_t i = 0; i < 41; i++) /* every seventh node holds some of it, by degrees */
            data[i] = (i + (seed >> 19)) % 7 == 0 ? (uint64_t)(1 + i % 3) << 30 : 0;
        r.data_bytes = (seed >> 21) % 4 == 0 ? data : NULL;
        for (uint32_t i = 0; i < 41; i++) /* the caller's list of them, half the time */
            if (data[i] != 0)
                data_nodes[ndata++] = i;
        r.data_nodes = r.data_bytes != NULL && (seed >> 5) % 2 ? data_nodes : NULL;
        r.ndata_nodes = ndata;
        r.data_first = (seed >> 23) % 2 == 0;
        required[0] = (UINT64_C(1) << ((seed >> 24) % 40)) | (UINT64_C(1) << ((seed >> 26) % 40));
        r.required = (seed >> 29) % 5 == 0 ? required : NULL;
        r.max_switches = (seed >> 1) % 4 == 0 ? 1 + (seed >> 3) % 3 : 0;
        r.nrequired = r.required != NULL ? (uint32_t)__builtin_popcountll(required[0]) : 0;
        sched_alloc_init(&scan);
        sched_alloc_init(&idx);
        rc_scan = place_scanning(&r, avoiding ? avoid : NULL, &scan);
        rc_idx = sched_cluster_place(cluster, &r, avoiding ? avoid : NULL, &idx);
        cr_assert_eq(rc_idx, rc_scan, "step %d: index %d, scan %d", step, rc_idx, rc_scan);
        if (rc_scan != 0) {
            sched_alloc_release(&idx);
            sched_alloc_release(&scan);
            continue;
        }
        cr_assert_eq(idx.nnodes, scan.nnodes);
        for (uint32_t k = 0; k < scan.nnodes; k++) {
            cr_assert_eq(idx.nodes[k].node, scan.nodes[k].node,
                         "step %d (%u nodes): #%u: %u, scan %u", step, r.nodes, k,
                         idx.nodes[k].node, scan.nodes[k].node);
            cr_assert_eq(idx.nodes[k].gpus, scan.nodes[k].gpus, "step %d #%u", step, k);
            cr_assert_eq(
                memcmp(idx.nodes[k].cores, scan.nodes[k].cores, sizeof(idx.nodes[k].cores)), 0,
                "step %d #%u: cores", step, k);
        }
        sched_cluster_take(cluster, &idx);
        held[nheld++] = idx;
        sched_alloc_release(&scan);
    }
    for (size_t i = 0; i < nheld; i++)
        sched_alloc_release(&held[i]);
}

Test(cluster, the_candidate_index_ranks_gangs_as_the_scan_does_under_switches)
{
    gangs_as_the_scan(3, 4242);
}

Test(cluster, the_candidate_index_ranks_gangs_as_the_scan_does_without_switches)
{
    gangs_as_the_scan(0, 99);
}

Test(cluster, the_candidate_index_ranks_gangs_as_the_scan_does_over_many_switches)
{
    gangs_as_the_scan(12, 2026);
}

Test(cluster, nodes_holding_the_jobs_data_go_first_among_equals)
{
    uint64_t data[4] = {0, 500, 0, 900};
    struct sched_req r = req(2, 2, 1);
    struct sched_alloc six;

    for (int i = 0; i < 4; i++) {
        char name[8];

        snprintf(name, sizeof(name), "n%d", i);
        cr_assert_eq(add(name, 8, NULL), i);
    }
    r.data_bytes = data;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert_eq(alloc.nnodes, 2);
    cr_assert_eq(alloc.nodes[0].node, 3, "most of the data first");
    cr_assert_eq(alloc.nodes[1].node, 1);
    sched_alloc_release(&alloc);
    sched_alloc_init(&alloc);
    /* One node: the same rule, outside the candidate index. */
    r.nodes = 1;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert_eq(alloc.nodes[0].node, 3);
    sched_alloc_release(&alloc);
    sched_alloc_init(&alloc);
    /* Best fit still comes first: a partly used node (fewer GPUs left) beats the data. */
    sched_alloc_init(&six);
    cr_assert_eq(sched_cluster_place(cluster, REQ(1, 6, 1), NULL, &six), 0);
    cr_assert_eq(six.nodes[0].node, 0, "no data: the first node");
    sched_cluster_take(cluster, &six);
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert_eq(alloc.nodes[0].node, 0, "the fragment left on n0 over n3's data");
    sched_alloc_release(&alloc);
    sched_alloc_init(&alloc);
    /* scheduler.data_locality = "prefer": the data before the fit. */
    r.data_first = true;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert_eq(alloc.nodes[0].node, 3, "n3's data over the fragment on n0");
    sched_alloc_release(&six);
}

Test(cluster, heterogeneous_components_get_distinct_nodes_all_or_none)
{
    struct sched_req big = req(1, 8, 32), het[1] = {req(2, 0, 2)};
    struct sched_req r = req(1, 4, 1);
    struct sched_alloc busy;
    char why[200];

    add("n1", 8, NULL);
    add("n2", 8, NULL);
    add("n3", 8, NULL);
    r.het = het;
    r.nhet = 1;
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), 0);
    cr_assert_eq(alloc.nnodes, 3, "component 0's node, then component 1's two");
    cr_assert_eq(__builtin_popcountll(alloc.nodes[0].gpus), 4);
    cr_assert_eq(alloc.nodes[1].gpus, 0, "component 1 asked for no GPUs");
    cr_assert_eq(alloc.nodes[2].gpus, 0);
    cr_assert_neq(alloc.nodes[0].node, alloc.nodes[1].node);
    cr_assert_neq(alloc.nodes[0].node, alloc.nodes[2].node);
    cr_assert_neq(alloc.nodes[1].node, alloc.nodes[2].node);
    /* One node held: component 0 alone would fit, the whole job does not. */
    sched_alloc_init(&busy);
    cr_assert_eq(sched_cluster_place(cluster, &big, NULL, &busy), 0);
    sched_cluster_take(cluster, &busy);
    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &alloc), -EAGAIN);
    sched_cluster_give_back(cluster, &busy);
    sched_alloc_release(&busy);
    cr_assert(sched_cluster_could_ever_fit(cluster, &r, why, sizeof(why)), "%s", why);
    het[0].nodes = 3;
    cr_assert_not(sched_cluster_could_ever_fit(cluster, &r, why, sizeof(why)));
    cr_assert_str_eq(why, "the cluster has 3 node(s), the job's components ask for 4");
    het[0] = req(1, 9, 1);
    cr_assert_not(sched_cluster_could_ever_fit(cluster, &r, why, sizeof(why)));
    cr_assert(strncmp(why, "het component 1: ", 17) == 0, "%s", why);
}

static void assert_same_nodes(const struct sched_cluster *a, const struct sched_cluster *b)
{
    cr_assert_eq(sched_cluster_nnodes(a), sched_cluster_nnodes(b));
    for (uint32_t i = 0; i < sched_cluster_nnodes(a); i++) {
        cr_assert_eq(sched_cluster_free_gpu_mask(a, i), sched_cluster_free_gpu_mask(b, i),
                     "node %u", i);
        cr_assert_eq(sched_cluster_free_cores(a, i), sched_cluster_free_cores(b, i));
        cr_assert_eq(sched_cluster_free_mem(a, i), sched_cluster_free_mem(b, i));
        cr_assert_eq(sched_cluster_node_jobs(a, i), sched_cluster_node_jobs(b, i));
    }
    cr_assert(sched_cluster_index_ok(a));
}

/*
 * A what-if copy, changed by a simulation (jobs taken and given back on it alone) while
 * the cluster starts jobs (taken on both), is the cluster again after a sync: with a few of
 * its nodes changed (copied back one by one) and with most (copied whole).
 */
Test(cluster, a_synced_copy_is_the_cluster_again)
{
    struct sched_alloc held[16], sim[16];
    struct sched_cluster *copy;
    char name[8];

    for (int i = 0; i < 16; i++) {
        snprintf(name, sizeof(name), "n%d", i);
        cr_assert_eq(add(name, 4, NULL), i);
        sched_alloc_init(&held[i]);
        sched_alloc_init(&sim[i]);
    }
    for (int i = 0; i < 8; i++) { /* running jobs, one a node */
        cr_assert_eq(sched_cluster_place(cluster, REQ(1, 3, 2), NULL, &held[i]), 0);
        sched_cluster_take(cluster, &held[i]);
    }
    copy = sched_cluster_copy(cluster);
    cr_assert_not_null(copy);
    for (int changed = 1; changed <= 16; changed += 15) {
        for (int i = 0; i < changed && i < 8; i++) /* a simulation: ends, then starts */
            sched_cluster_give_back(copy, &held[i]);
        for (int i = 0; i < changed; i++) {
            if (sched_cluster_place(copy, REQ(1, 2, 1), NULL, &sim[i]) == 0)
                sched_cluster_take(copy, &sim[i]);
        }
        /* A job the pass starts meanwhile: on the cluster and the copy alike. */
        cr_assert_eq(sched_cluster_place(cluster, REQ(1, 1, 1), NULL, &held[8 + changed / 8]), 0);
        sched_cluster_take(cluster, &held[8 + changed / 8]);
        sched_cluster_take(copy, &held[8 + changed / 8]);
        sched_cluster_sync(copy, cluster);
        assert_same_nodes(copy, cluster);
    }
    cr_assert_eq(sched_cluster_place(copy, REQ(1, 4, 1), NULL, &alloc), 0);
    cr_assert_eq(sched_cluster_place(copy, REQ(9, 4, 1), NULL, &sim[0]), -EAGAIN,
                 "eight whole nodes are left, as on the cluster");
    sched_cluster_free(copy);
    for (int i = 0; i < 16; i++) {
        sched_alloc_release(&held[i]);
        sched_alloc_release(&sim[i]);
    }
}
