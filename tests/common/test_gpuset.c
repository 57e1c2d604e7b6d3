/*
 * test_gpuset.c: the GPUs chosen within a node on hand-built link matrices: an 8-GPU NVSwitch
 * node, an 8-GPU PCIe server (4 switches of 2 GPUs over 2 sockets), a 4-GPU workstation with
 * two NVLink bridges, DGX-1's NVLink hybrid cube mesh and a 16-GPU NVLink ring (the greedy
 * path); STRICT and the error cases; and, on random free masks, the chosen set against a
 * brute-force optimum over every subset (brute force only here, never in the module).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/gpuset.h"

#define NV GS_GPUSET_NVLINK
#define PIX GS_GPUSET_PIX
#define PHB GS_GPUSET_PHB
#define NODE GS_GPUSET_NODE
#define SYS GS_GPUSET_SYS

static struct gs_gpuset_link links[GS_GPUSET_MAX * GS_GPUSET_MAX];
static struct gs_gpuset_node node;

static void fill(int ngpus, int cls, int nvlinks)
{
    for (int i = 0; i < ngpus * ngpus; i++)
        links[i] = (struct gs_gpuset_link){(uint8_t)cls, (uint8_t)nvlinks};
}

static void pair(int ngpus, int i, int j, int cls, int nvlinks)
{
    links[i * ngpus + j] = (struct gs_gpuset_link){(uint8_t)cls, (uint8_t)nvlinks};
    links[j * ngpus + i] = links[i * ngpus + j];
}

static const struct gs_gpuset_node *build(int ngpus)
{
    cr_assert_eq(gs_gpuset_init(&node, ngpus, links), 0);
    return &node;
}

/* DGX/HGX with NVSwitch: every pair 18 NVLinks. */
static const struct gs_gpuset_node *nvswitch8(void)
{
    fill(8, NV, 18);
    return build(8);
}

/* PCIe server: pairs (0,1) (2,3) (4,5) (6,7) under one switch each; GPUs 0-3 on socket 0. */
static const struct gs_gpuset_node *pcie8(void)
{
    fill(8, SYS, 0);
    for (int i = 0; i < 8; i++) {
        for (int j = 0; j < 8; j++) {
            if (i / 4 == j / 4)
                pair(8, i, j, i / 2 == j / 2 ? PIX : NODE, 0);
        }
    }
    return build(8);
}

/* Workstation: NVLink bridges on 0-1 and 2-3 (4 links each), everything else through PHB. */
static const struct gs_gpuset_node *workstation4(void)
{
    fill(4, PHB, 0);
    pair(4, 0, 1, NV, 4);
    pair(4, 2, 3, NV, 4);
    return build(4);
}

/* DGX-1V, as `nvidia-smi topo -m` prints it: an NVLink hybrid cube mesh, SYS elsewhere. */
static const struct gs_gpuset_node *dgx1(void)
{
    static const int nv[8][8] = {
        {0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0},
        {2, 1, 2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
        {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0},
    };

    fill(8, SYS, 0);
    for (int i = 0; i < 8; i++) {
        for (int j = 0; j < 8; j++) {
            if (nv[i][j] > 0)
                pair(8, i, j, NV, nv[i][j]);
        }
    }
    return build(8);
}

static struct gs_gpuset_choice choose(const struct gs_gpuset_node *n, uint64_t free_mask, int k,
                                      enum gs_gpuset_affinity aff)
{
    struct gs_gpuset_choice c;
    int rc = gs_gpuset_choose(n, free_mask, k, aff, &c);

    cr_assert_eq(rc, 0, "choose(free=%#llx, k=%d) rc=%d", (unsigned long long)free_mask, k, rc);
    cr_assert_eq(c.mask & ~free_mask, 0, "took a busy GPU");
    cr_assert_eq(__builtin_popcountll(c.mask), k);
    cr_assert_eq(c.ngpus, k);
    return c;
}

static uint64_t pick(const struct gs_gpuset_node *n, uint64_t free_mask, int k)
{
    return choose(n, free_mask, k, GS_GPUSET_PREFER).mask;
}

Test(gpuset, nvswitch_node_takes_lowest_free_indices_at_nv18)
{
    const struct gs_gpuset_node *n = nvswitch8();
    struct gs_gpuset_choice c = choose(n, 0xff, 4, GS_GPUSET_PREFER);
    char name[GS_GPUSET_NAME_MAX];

    cr_assert_eq(c.mask, 0x0f);
    cr_assert_eq(c.worst, NV);
    cr_assert_eq(c.worst_nvlinks, 18);
    cr_assert_eq(c.total, 6);
    cr_assert_eq(c.nvlinks, 6 * 18);
    cr_assert_str_eq(gs_gpuset_class_name(c.worst, c.worst_nvlinks, name, sizeof(name)), "NV18");
    cr_assert_eq(pick(n, 0xb6, 3), 0x16); /* free 1,2,4,5,7: takes 1,2,4 */
    for (int k = 2; k <= 8; k++)
        cr_assert_eq(gs_gpuset_best_possible(n, k), NV);
}

Test(gpuset, pcie_server_two_gpus_share_a_switch)
{
    const struct gs_gpuset_node *n = pcie8();
    struct gs_gpuset_choice c = choose(n, 0xff, 2, GS_GPUSET_PREFER);

    cr_assert_eq(c.mask, 0x03);
    cr_assert_eq(c.worst, PIX);
    cr_assert_eq(c.total, PIX);
    cr_assert_eq(pick(n, 0xfe, 2), 0x0c, "GPU 0 busy: the next whole switch, on socket 0");
}

Test(gpuset, pcie_server_four_gpus_take_two_switches_on_one_socket)
{
    const struct gs_gpuset_node *n = pcie8();
    struct gs_gpuset_choice c = choose(n, 0xff, 4, GS_GPUSET_PREFER);

    cr_assert_eq(c.mask, 0x0f);
    cr_assert_eq(c.worst, NODE);
    cr_assert_eq(c.total, 2 * PIX + 4 * NODE);
}

Test(gpuset, pcie_server_four_after_two_does_not_split_the_second_pair)
{
    const struct gs_gpuset_node *n = pcie8();
    uint64_t first = pick(n, 0xff, 2);
    uint64_t four = pick(n, 0xff & ~first, 4);

    cr_assert_eq(first, 0x03);
    cr_assert_eq(four, 0xf0, "GPUs 2,3 stay together; socket 1 whole");
    cr_assert_eq(choose(n, 0xff & ~first, 4, GS_GPUSET_ANY).worst, SYS, "first fit crosses");
}

Test(gpuset, pcie_server_two_after_two_fills_the_used_socket)
{
    const struct gs_gpuset_node *n = pcie8();

    cr_assert_eq(pick(n, 0xfc, 2), 0x0c, "socket 1 stays whole for a 4-GPU job");
}

Test(gpuset, pcie_server_single_gpu_is_best_fit)
{
    const struct gs_gpuset_node *n = pcie8();

    cr_assert_eq(pick(n, 0xfe, 1), 0x02, "GPU 0 busy: its switch partner");
    cr_assert_eq(pick(n, 0xfc, 1), 0x04, "switch 0 busy: socket 0, not socket 1");
    cr_assert_eq(pick(n, 0xdf, 1), 0x10, "GPU 5 busy: GPU 4, leaving socket 0 whole");
    cr_assert_eq(pick(n, 0x5d, 1), 0x10, "free 0,2,3 | 4,6: the socket with fewer free");
}

Test(gpuset, pcie_server_three_gpus_go_where_three_are_free)
{
    const struct gs_gpuset_node *n = pcie8();
    struct gs_gpuset_choice c = choose(n, 0xef, 3, GS_GPUSET_PREFER);

    cr_assert_eq(c.mask, 0xe0, "GPU 4 busy: 5,6,7, socket 0 stays whole");
    cr_assert_eq(c.worst, NODE);
    cr_assert_eq(pick(n, 0xff, 3), 0x07);
}

Test(gpuset, pcie_server_best_possible_per_size)
{
    const struct gs_gpuset_node *n = pcie8();
    static const int want[9] = {
        GS_GPUSET_NONE, GS_GPUSET_NONE, PIX, NODE, NODE, SYS, SYS, SYS, SYS};

    for (int k = 0; k <= 8; k++)
        cr_assert_eq(gs_gpuset_best_possible(n, k), want[k], "k=%d", k);
    cr_assert_eq(gs_gpuset_best_possible(n, 9), -EINVAL);
    cr_assert_eq(gs_gpuset_best_possible(n, -1), -EINVAL);
    cr_assert_eq(choose(n, 0xff, 8, GS_GPUSET_PREFER).worst, SYS);
}

Test(gpuset, strict_waits_when_no_switch_pair_is_free)
{
    const struct gs_gpuset_node *n = pcie8();
    struct gs_gpuset_choice c, untouched;

    memset(&c, 0x5a, sizeof(c));
    untouched = c;
    cr_assert_eq(gs_gpuset_choose(n, 0x55, 2, GS_GPUSET_STRICT, &c), -EAGAIN);
    cr_assert_eq(memcmp(&c, &untouched, sizeof(c)), 0, "output written on failure");
    c = choose(n, 0x55, 2, GS_GPUSET_PREFER);
    cr_assert_eq(c.mask, 0x05);
    cr_assert_eq(c.worst, NODE);
    cr_assert_eq(choose(n, 0x5d, 2, GS_GPUSET_STRICT).mask, 0x0c);
    cr_assert_eq(choose(n, 0x55, 1, GS_GPUSET_STRICT).mask, 0x01);
}

Test(gpuset, workstation_keeps_nvlink_pairs_whole)
{
    const struct gs_gpuset_node *n = workstation4();
    struct gs_gpuset_choice c = choose(n, 0x0f, 2, GS_GPUSET_PREFER);

    cr_assert_eq(pick(n, 0x0e, 1), 0x02, "GPU 0 busy: a 1-GPU job takes 1, not 2");
    cr_assert_eq(c.mask, 0x03);
    cr_assert_eq(c.worst, NV);
    cr_assert_eq(c.worst_nvlinks, 4);
    cr_assert_eq(pick(n, 0x0e, 2), 0x0c);
    cr_assert_eq(choose(n, 0x0e, 2, GS_GPUSET_ANY).mask, 0x06, "first fit breaks the bridge");
    cr_assert_eq(choose(n, 0x0e, 2, GS_GPUSET_ANY).worst, PHB);
    c = choose(n, 0x0f, 3, GS_GPUSET_PREFER);
    cr_assert_eq(c.mask, 0x07);
    cr_assert_eq(c.total, NV + 2 * PHB);
    cr_assert_eq(gs_gpuset_best_possible(n, 2), NV);
    cr_assert_eq(gs_gpuset_best_possible(n, 3), PHB);
}

Test(gpuset, dgx1_mesh_prefers_double_links_and_nvlink_quads)
{
    const struct gs_gpuset_node *n = dgx1();
    struct gs_gpuset_choice c = choose(n, 0xff, 2, GS_GPUSET_PREFER);

    cr_assert_eq(c.mask, 0x09, "0-3 has two links, 0-1 one");
    cr_assert_eq(c.worst_nvlinks, 2);
    c = choose(n, 0xff, 4, GS_GPUSET_PREFER);
    cr_assert_eq(c.mask, 0x0f);
    cr_assert_eq(c.worst, NV);
    cr_assert_eq(c.worst_nvlinks, 1);
    cr_assert_eq(pick(n, 0xff, 3), 0x0d, "0,2,3: five links, the most of any triangle");
    cr_assert_eq(pick(n, 0xf0, 4), 0xf0);
    cr_assert_eq(gs_gpuset_best_possible(n, 4), NV);
    cr_assert_eq(gs_gpuset_best_possible(n, 5), SYS, "no NVLink clique of five");
    cr_assert_eq(gs_gpuset_choose(n, 0x77, 4, GS_GPUSET_STRICT, &c), -EAGAIN);
}

Test(gpuset, large_irregular_group_is_grown_greedily)
{
    struct gs_gpuset_choice c;

    fill(16, SYS, 0);
    for (int i = 0; i < 16; i++)
        pair(16, i, (i + 1) % 16, NV, 2);
    c = choose(build(16), 0xffff, 2, GS_GPUSET_PREFER);
    cr_assert_eq(c.mask, 0x0003);
    cr_assert_eq(c.worst, NV);
    c = choose(&node, 0xffff, 3, GS_GPUSET_PREFER);
    cr_assert_eq(c.mask, 0x0007, "a path of two links: the best a ring allows");
    cr_assert_eq(c.total, 2 * NV + SYS);
    cr_assert_eq(gs_gpuset_best_possible(&node, 3), SYS);
}

Test(gpuset, edge_cases_of_k_and_masks)
{
    const struct gs_gpuset_node *n = pcie8();
    struct gs_gpuset_choice c;

    c = choose(n, 0xff, 0, GS_GPUSET_STRICT);
    cr_assert_eq(c.mask, 0);
    cr_assert_eq(c.worst, GS_GPUSET_NONE);
    cr_assert_eq(c.frag, 0);
    cr_assert_eq(choose(n, 0, 0, GS_GPUSET_PREFER).mask, 0);
    cr_assert_eq(gs_gpuset_choose(n, 0x07, 4, GS_GPUSET_PREFER, &c), -EAGAIN);
    cr_assert_eq(gs_gpuset_choose(n, 0x07, 4, GS_GPUSET_ANY, &c), -EAGAIN);
    cr_assert_eq(gs_gpuset_choose(n, 0, 1, GS_GPUSET_PREFER, &c), -EAGAIN);
    cr_assert_eq(gs_gpuset_choose(n, 0xff, 9, GS_GPUSET_PREFER, &c), -EINVAL);
    cr_assert_eq(gs_gpuset_choose(n, 0xff, -1, GS_GPUSET_PREFER, &c), -EINVAL);
    cr_assert_eq(gs_gpuset_choose(n, 0x1ff, 1, GS_GPUSET_PREFER, &c), -EINVAL);
    cr_assert_eq(gs_gpuset_choose(n, 0xff, 1, (enum gs_gpuset_affinity)7, &c), -EINVAL);
    cr_assert_eq(choose(n, 0xff, 1, GS_GPUSET_PREFER).worst, GS_GPUSET_NONE);
}

Test(gpuset, init_rejects_bad_matrices_without_touching_the_node)
{
    struct gs_gpuset_node before;

    memset(&node, 0x77, sizeof(node));
    before = node;
    fill(4, PHB, 0);
    pair(4, 0, 1, NV, 4);
    links[1 * 4 + 0].cls = PIX;
    cr_assert_eq(gs_gpuset_init(&node, 4, links), -EINVAL, "asymmetric class");
    pair(4, 0, 1, NV, 4);
    links[1 * 4 + 0].nvlinks = 2;
    cr_assert_eq(gs_gpuset_init(&node, 4, links), -EINVAL, "asymmetric link count");
    pair(4, 0, 1, 0, 0);
    cr_assert_eq(gs_gpuset_init(&node, 4, links), -EINVAL, "class 0");
    pair(4, 0, 1, SYS + 1, 0);
    cr_assert_eq(gs_gpuset_init(&node, 4, links), -EINVAL, "class past SYS");
    cr_assert_eq(gs_gpuset_init(&node, GS_GPUSET_MAX + 1, links), -EINVAL);
    cr_assert_eq(gs_gpuset_init(&node, -1, links), -EINVAL);
    cr_assert_eq(gs_gpuset_init(&node, 4, NULL), -EINVAL);
    cr_assert_eq(memcmp(&node, &before, sizeof(node)), 0);
}

Test(gpuset, nodes_of_zero_one_and_sixty_four_gpus)
{
    struct gs_gpuset_choice c;

    cr_assert_eq(gs_gpuset_init(&node, 0, NULL), 0);
    cr_assert_eq(choose(&node, 0, 0, GS_GPUSET_PREFER).mask, 0);
    cr_assert_eq(gs_gpuset_choose(&node, 0, 1, GS_GPUSET_PREFER, &c), -EINVAL);
    fill(1, SYS, 0);
    cr_assert_eq(choose(build(1), 1, 1, GS_GPUSET_PREFER).mask, 1);
    /* 64 GPUs: 8 sockets of 4 switches of 2 */
    fill(64, SYS, 0);
    for (int i = 0; i < 64; i++) {
        for (int j = 0; j < 64; j++) {
            if (i != j && i / 8 == j / 8)
                pair(64, i, j, i / 2 == j / 2 ? PIX : NODE, 0);
        }
    }
    c = choose(build(64), UINT64_MAX & ~UINT64_C(1), 8, GS_GPUSET_PREFER);
    cr_assert_eq(c.mask, UINT64_C(0xff00), "socket 0 is partly used: the next whole one");
    cr_assert_eq(c.worst, NODE);
    cr_assert_eq(choose(&node, UINT64_MAX, 64, GS_GPUSET_PREFER).mask, UINT64_MAX);
    cr_assert_eq(choose(&node, UINT64_MAX & ~UINT64_C(1), 2, GS_GPUSET_PREFER).mask, 0x0c);
}

Test(gpuset, class_names)
{
    char b[GS_GPUSET_NAME_MAX];

    cr_assert_str_eq(gs_gpuset_class_name(NV, 18, b, sizeof(b)), "NV18");
    cr_assert_str_eq(gs_gpuset_class_name(NV, 0, b, sizeof(b)), "NV");
    cr_assert_str_eq(gs_gpuset_class_name(PIX, 0, b, sizeof(b)), "PIX");
    cr_assert_str_eq(gs_gpuset_class_name(GS_GPUSET_PXB, 0, b, sizeof(b)), "PXB");
    cr_assert_str_eq(gs_gpuset_class_name(PHB, 3, b, sizeof(b)), "PHB", "count ignored");
    cr_assert_str_eq(gs_gpuset_class_name(NODE, 0, b, sizeof(b)), "NODE");
    cr_assert_str_eq(gs_gpuset_class_name(SYS, 0, b, sizeof(b)), "SYS");
    cr_assert_str_eq(gs_gpuset_class_name(GS_GPUSET_NONE, 0, b, sizeof(b)), "X");
    cr_assert_str_eq(gs_gpuset_class_name(9, 0, b, sizeof(b)), "?");
    cr_assert_str_eq(gs_gpuset_class_name(NV, 255, b, sizeof(b)), "NV255");
    cr_assert_str_eq(gs_gpuset_class_name(NODE, 0, b, 3), "NO");
}

/* ---- property: the choice against every subset ---- */

struct optimum {
    int worst, total, nvlinks;
};

static struct optimum brute_force(const struct gs_gpuset_node *n, uint64_t free_mask, int k)
{
    struct optimum best = {99, 0, 0};

    for (uint64_t s = 0; s < (UINT64_C(1) << n->ngpus); s++) {
        struct gs_gpuset_choice c;

        if ((s & ~free_mask) != 0 || __builtin_popcountll(s) != k)
            continue;
        /* ANY on exactly the set s describes s itself */
        cr_assert_eq(gs_gpuset_choose(n, s, k, GS_GPUSET_ANY, &c), 0);
        if (c.worst < best.worst || (c.worst == best.worst && c.total < best.total) ||
            (c.worst == best.worst && c.total == best.total && c.nvlinks > best.nvlinks))
            best = (struct optimum){c.worst, c.total, c.nvlinks};
    }
    return best;
}

static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static void check_against_brute_force(const struct gs_gpuset_node *n, int rounds, uint64_t seed)
{
    uint64_t all = (UINT64_C(1) << n->ngpus) - 1;

    for (int r = 0; r < rounds; r++) {
        uint64_t free_mask = next_random(&seed) & all;

        for (int k = 1; k <= __builtin_popcountll(free_mask); k++) {
            struct gs_gpuset_choice c = choose(n, free_mask, k, GS_GPUSET_PREFER), s;
            struct optimum best = brute_force(n, free_mask, k);
            int strict = gs_gpuset_choose(n, free_mask, k, GS_GPUSET_STRICT, &s);

            cr_assert_eq(c.worst, best.worst, "free=%#llx k=%d", (unsigned long long)free_mask, k);
            cr_assert_eq(c.total, best.total, "free=%#llx k=%d", (unsigned long long)free_mask, k);
            cr_assert_eq(c.nvlinks, best.nvlinks, "free=%#llx k=%d", (unsigned long long)free_mask,
                         k);
            cr_assert_eq(strict == 0, best.worst == gs_gpuset_best_possible(n, k));
        }
    }
}

Test(gpuset, pcie_server_choice_matches_brute_force_on_random_masks)
{
    check_against_brute_force(pcie8(), 200, 1);
}

Test(gpuset, dgx1_and_workstation_choices_match_brute_force)
{
    check_against_brute_force(dgx1(), 100, 2);
    check_against_brute_force(workstation4(), 16, 3);
}
