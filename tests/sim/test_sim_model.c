/*
 * test_sim_model.c: the simulator's run-time model and node layouts: link matrices per
 * layout, the factor of each link class, the stretch of allocations within a node and
 * across nodes and switches, time limits.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "sim/layout.h"
#include "sim/model.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

static struct sched_cluster *cluster;
static struct gs_sim_node nodes[3];

static void add(int i, uint32_t ngpus, enum gs_sim_links links, int switch_id)
{
    struct gs_gpuset_link m[GS_GPUSET_MAX * GS_GPUSET_MAX];
    struct sched_node_info info = {.ngpus = ngpus, .ncores = 16, .mem_mib = 1024, .links = m};

    nodes[i] = (struct gs_sim_node){.ngpus = ngpus, .switch_id = switch_id, .links = links};
    snprintf(nodes[i].name, sizeof(nodes[i].name), "n%d", i);
    info.name = nodes[i].name;
    info.switch_id = switch_id;
    gs_sim_layout_links(links, ngpus, m);
    cr_assert_eq(sched_cluster_add_node(cluster, &info), i);
}

static void setup(void)
{
    cluster = sched_cluster_new();
    cr_assert_not_null(cluster);
    add(0, 8, GS_SIM_LINKS_PAIRS, 1);
    add(1, 8, GS_SIM_LINKS_NVSWITCH, 1);
    add(2, 8, GS_SIM_LINKS_PCIE, 2);
}

static void teardown(void)
{
    sched_cluster_free(cluster);
}

TestSuite(sim_model, .init = setup, .fini = teardown);

/* The stretch of GPUs (bit masks) on the given nodes. */
static double stretch(uint32_t n, const uint32_t *node, const uint64_t *gpus)
{
    struct sched_node_alloc na[3];
    struct sched_alloc alloc = {.nnodes = n, .nodes = na, .cap = 3};

    memset(na, 0, sizeof(na));
    for (uint32_t i = 0; i < n; i++) {
        na[i].node = node[i];
        na[i].gpus = gpus[i];
    }
    return gs_sim_stretch(cluster, &alloc, nodes);
}

Test(sim_model, layouts_give_symmetric_matrices_of_their_classes)
{
    struct gs_gpuset_link m[64];

    gs_sim_layout_links(GS_SIM_LINKS_PAIRS, 8, m);
    cr_assert_eq(m[0 * 8 + 1].cls, GS_GPUSET_NVLINK);
    cr_assert_eq(m[0 * 8 + 2].cls, GS_GPUSET_PXB);
    cr_assert_eq(m[0 * 8 + 5].cls, GS_GPUSET_SYS);
    for (int i = 0; i < 8; i++) {
        for (int j = 0; j < 8; j++)
            cr_assert_eq(m[i * 8 + j].cls, m[j * 8 + i].cls);
    }
    gs_sim_layout_links(GS_SIM_LINKS_PCIE, 8, m);
    cr_assert_eq(m[6 * 8 + 7].cls, GS_GPUSET_PIX);
    gs_sim_layout_links(GS_SIM_LINKS_NVSWITCH, 8, m);
    cr_assert_eq(m[0 * 8 + 7].cls, GS_GPUSET_NVLINK);
}

Test(sim_model, halves_of_gpus_and_cores_sit_on_two_sockets)
{
    int gpu[8], core[16];

    gs_sim_layout_numa(8, 16, gpu, core);
    cr_assert_eq(gpu[3], 0);
    cr_assert_eq(gpu[4], 1);
    cr_assert_eq(core[7], 0);
    cr_assert_eq(core[8], 1);
    gs_sim_layout_numa(2, 16, gpu, core);
    cr_assert_eq(gpu[1], 0, "small nodes have one socket");
    cr_assert_eq(core[15], 0);
}

Test(sim_model, link_factors_follow_the_classes)
{
    cr_assert(NEAR(gs_sim_link_factor(GS_GPUSET_NONE), 1.0));
    cr_assert(NEAR(gs_sim_link_factor(GS_GPUSET_NVLINK), 1.0));
    cr_assert(NEAR(gs_sim_link_factor(GS_GPUSET_PIX), 1.1));
    cr_assert(NEAR(gs_sim_link_factor(GS_GPUSET_PXB), 1.1));
    cr_assert(NEAR(gs_sim_link_factor(GS_GPUSET_PHB), 1.2));
    cr_assert(NEAR(gs_sim_link_factor(GS_GPUSET_NODE), 1.2));
    cr_assert(NEAR(gs_sim_link_factor(GS_GPUSET_SYS), 1.3));
}

Test(sim_model, one_node_pays_its_worst_gpu_pair)
{
    uint32_t n0 = 0, n1 = 1, n2 = 2;
    uint64_t pair = 0x3, same_socket = 0x5, across = 0x11, one = 0x4, all = 0xff;

    cr_assert(NEAR(stretch(1, &n0, &one), 1.0), "one GPU talks to nobody");
    cr_assert(NEAR(stretch(1, &n0, &pair), 1.0), "an NVLink pair");
    cr_assert(NEAR(stretch(1, &n0, &same_socket), 1.1));
    cr_assert(NEAR(stretch(1, &n0, &across), 1.3));
    cr_assert(NEAR(stretch(1, &n1, &all), 1.0), "NVSwitch");
    cr_assert(NEAR(stretch(1, &n2, &pair), 1.1), "PCIe switch");
}

Test(sim_model, nodes_pay_the_network_or_their_worst_link_whichever_is_worse)
{
    uint32_t same[] = {0, 1}, cross[] = {1, 2};
    uint64_t pairs[] = {0x3, 0x3}, spread[] = {0x11, 0x3};

    cr_assert(NEAR(stretch(2, same, pairs), GS_SIM_FACTOR_SAME_SWITCH));
    cr_assert(NEAR(stretch(2, cross, pairs), GS_SIM_FACTOR_CROSS_SWITCH));
    cr_assert(NEAR(stretch(2, same, spread), 1.3), "a socket crossing outweighs the switch");
}

Test(sim_model, limits_are_one_and_a_half_times_the_run_rounded_up)
{
    cr_assert_eq(gs_sim_time_limit_s(100000), 150);
    cr_assert_eq(gs_sim_time_limit_s(1000), 2);
    cr_assert_eq(gs_sim_run_ms(100000, 1.3), 130000);
    cr_assert_eq(gs_sim_run_ms(0, 1.3), 1);
    cr_assert_lt(gs_sim_run_ms(1000, GS_SIM_FACTOR_CROSS_SWITCH), gs_sim_time_limit_s(1000) * 1000,
                 "the worst stretch stays within the limit");
}
