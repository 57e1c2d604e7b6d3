/*
 * test_step_alloc.c: steps of one job share its allocation as Slurm's do. One GPU per task
 * gives concurrent steps distinct GPUs until they run out, then the next one waits (-EBUSY)
 * and gets a GPU once one is given back; what the job could never hold is -ENOSPC; --overlap
 * takes nothing; cores are ntasks x cpus_per_task with -c/--exact, else all of the job's on
 * the node; GPUs prefer one NUMA node and cores sit near their GPUs.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "scheduler/step_alloc.h"

#define NCORES 8

static struct sched_step_alloc *alloc;

/* One node, 4 GPUs (0-3), 8 cores (0-7), unless a test builds its own. */
static struct sched_node_alloc node_of(uint64_t gpus, uint32_t ncores)
{
    struct sched_node_alloc n = {.node = 0, .gpus = gpus};

    for (uint32_t c = 0; c < ncores; c++)
        n.cores[c / 64] |= UINT64_C(1) << (c % 64);
    return n;
}

static void setup(void)
{
    struct sched_node_alloc n = node_of(0xf, NCORES);

    alloc = sched_step_alloc_new(&n, 1);
    cr_assert_not_null(alloc);
}

static void teardown(void)
{
    sched_step_alloc_free(alloc);
}

TestSuite(step_alloc, .init = setup, .fini = teardown);

static struct sched_step_ask gpu_task(void)
{
    return (struct sched_step_ask){.ntasks = 1, .exact_cores = true, .gpus = 1};
}

static uint32_t ncores_of(const struct sched_step_grant *g)
{
    uint32_t n = 0;

    for (size_t i = 0; i < SCHED_STEP_CORE_WORDS; i++)
        n += (uint32_t)__builtin_popcountll(g->cores[i]);
    return n;
}

Test(step_alloc, gives_concurrent_one_gpu_steps_distinct_gpus_and_cores)
{
    struct sched_step_ask ask = gpu_task();
    struct sched_step_grant g[4];
    uint64_t gpus = 0, cores = 0;

    for (int i = 0; i < 4; i++) {
        cr_assert_eq(sched_step_alloc_take(alloc, &ask, false, &g[i], NULL), 0, "step %d", i);
        cr_assert_eq(__builtin_popcountll(g[i].gpus), 1);
        cr_assert_eq(ncores_of(&g[i]), 1);
        cr_assert_eq(gpus & g[i].gpus, 0, "GPU given twice");
        cr_assert_eq(cores & g[i].cores[0], 0, "core given twice");
        cr_assert(g[i].held);
        gpus |= g[i].gpus;
        cores |= g[i].cores[0];
    }
    cr_assert_eq(gpus, 0xf);
    cr_assert_eq(g[0].gpus, 0x1, "lowest index first");
}

Test(step_alloc, makes_the_fifth_step_wait_until_a_gpu_is_given_back)
{
    struct sched_step_ask ask = gpu_task();
    struct sched_step_grant g[5];

    for (int i = 0; i < 4; i++)
        cr_assert_eq(sched_step_alloc_take(alloc, &ask, false, &g[i], NULL), 0);
    memset(&g[4], 0xaa, sizeof(g[4]));
    cr_assert_eq(sched_step_alloc_take(alloc, &ask, false, &g[4], NULL), -EBUSY);
    cr_assert_eq(g[4].gpus, UINT64_C(0xaaaaaaaaaaaaaaaa), "a refused take wrote its grant");
    sched_step_alloc_give_back(alloc, &g[2]);
    cr_assert_eq(sched_step_alloc_take(alloc, &ask, false, &g[4], NULL), 0);
    cr_assert_eq(g[4].gpus, g[2].gpus, "the GPU given back goes to the waiting step");
    cr_assert_eq(sched_step_alloc_take(alloc, &ask, false, &g[2], NULL), -EBUSY);
}

Test(step_alloc, refuses_what_the_job_could_never_hold)
{
    struct sched_step_ask ask = {.ntasks = 5, .exact_cores = true, .gpus = 5};
    struct sched_step_ask cores = {.ntasks = 3, .cpus_per_task = 3, .exact_cores = true};
    struct sched_step_ask tasks = {.ntasks = 9, .all_gpus = true};
    struct sched_step_grant g;
    uint32_t node = 99;

    cr_assert_eq(sched_step_alloc_take(alloc, &ask, false, &g, &node), -ENOSPC);
    cr_assert_eq(node, 0);
    cr_assert_eq(sched_step_alloc_take(alloc, &cores, false, &g, NULL), -ENOSPC);
    cr_assert_eq(sched_step_alloc_take(alloc, &tasks, false, &g, NULL), -ENOSPC,
                 "9 tasks on 8 cores");
    /* Never-fit wins over busy: a full job does not make it wait. */
    ask = gpu_task();
    ask.gpus = 4;
    cr_assert_eq(sched_step_alloc_take(alloc, &ask, false, &g, NULL), 0);
    ask.gpus = 5;
    cr_assert_eq(sched_step_alloc_take(alloc, &ask, false, &g, NULL), -ENOSPC);
}

Test(step_alloc, lets_an_overlap_step_see_everything_and_hold_nothing)
{
    struct sched_step_ask all = {.ntasks = 1, .all_gpus = true};
    struct sched_step_grant held, over, next;

    cr_assert_eq(sched_step_alloc_take(alloc, &all, false, &held, NULL), 0);
    cr_assert_eq(held.gpus, 0xf);
    cr_assert_eq(held.cores[0], 0xff);
    cr_assert_eq(sched_step_alloc_take(alloc, &all, false, &next, NULL), -EBUSY);
    cr_assert_eq(sched_step_alloc_take(alloc, &all, true, &over, NULL), 0, "overlap waits");
    cr_assert_eq(over.gpus, 0xf);
    cr_assert_eq(over.cores[0], 0xff);
    cr_assert_not(over.held);
    sched_step_alloc_give_back(alloc, &over); /* a no-op: the first step still holds all */
    cr_assert_not(sched_step_alloc_idle(alloc));
    cr_assert_eq(sched_step_alloc_take(alloc, &all, false, &next, NULL), -EBUSY);
    sched_step_alloc_give_back(alloc, &held);
    cr_assert(sched_step_alloc_idle(alloc));
}

Test(step_alloc, releases_every_gpu_and_core_a_step_held)
{
    struct sched_step_ask ask = {.ntasks = 2, .cpus_per_task = 2, .exact_cores = true, .gpus = 2};
    struct sched_step_ask one = gpu_task();
    struct sched_step_grant a, b;

    cr_assert_eq(sched_step_alloc_take(alloc, &ask, false, &a, NULL), 0);
    cr_assert_eq(ncores_of(&a), 4);
    cr_assert_eq(sched_step_alloc_take(alloc, &ask, false, &b, NULL), 0);
    cr_assert_eq(a.gpus | b.gpus, 0xf);
    cr_assert_eq(a.cores[0] | b.cores[0], 0xff);
    cr_assert_eq(sched_step_alloc_take(alloc, &one, false, &b, NULL), -EBUSY);
    sched_step_alloc_give_back(alloc, &a);
    sched_step_alloc_give_back(alloc, &b);
    cr_assert(sched_step_alloc_idle(alloc));
    ask.gpus = 4;
    ask.ntasks = 4;
    cr_assert_eq(sched_step_alloc_take(alloc, &ask, false, &a, NULL), 0, "all free again");
}

Test(step_alloc, takes_all_the_jobs_cores_without_exact)
{
    struct sched_step_ask plain = {.ntasks = 1, .gpus = 1};
    struct sched_step_ask exact = gpu_task();
    struct sched_step_grant a, b;

    cr_assert_eq(sched_step_alloc_take(alloc, &plain, false, &a, NULL), 0);
    cr_assert_eq(a.cores[0], 0xff, "Slurm's default: all non-GRES resources of the node");
    cr_assert_eq(__builtin_popcountll(a.gpus), 1);
    /* GPUs are left, cores are not: a second step without --exact waits, so does one with. */
    cr_assert_eq(sched_step_alloc_take(alloc, &plain, false, &b, NULL), -EBUSY);
    cr_assert_eq(sched_step_alloc_take(alloc, &exact, false, &b, NULL), -EBUSY);
    sched_step_alloc_give_back(alloc, &a);
    cr_assert_eq(sched_step_alloc_take(alloc, &exact, false, &a, NULL), 0);
    cr_assert_eq(sched_step_alloc_take(alloc, &plain, false, &b, NULL), -EBUSY,
                 "all cores wanted while one is held");
}

Test(step_alloc, counts_cores_per_task_with_c)
{
    struct sched_step_ask ask = {.ntasks = 3, .cpus_per_task = 2, .exact_cores = true};
    struct sched_step_grant a, b;

    cr_assert_eq(sched_step_alloc_take(alloc, &ask, false, &a, NULL), 0);
    cr_assert_eq(ncores_of(&a), 6);
    cr_assert_eq(a.gpus, 0, "neither GPUs nor all_gpus asked");
    cr_assert_eq(sched_step_alloc_take(alloc, &ask, false, &b, NULL), -EBUSY, "2 cores left");
    ask.ntasks = 1;
    cr_assert_eq(sched_step_alloc_take(alloc, &ask, false, &b, NULL), 0);
    cr_assert_eq(a.cores[0] & b.cores[0], 0);
    cr_assert_eq(a.cores[0] | b.cores[0], 0xff);
}

Test(step_alloc, takes_every_gpu_of_the_node_without_a_gpu_option)
{
    struct sched_step_ask all = {.ntasks = 1, .exact_cores = true, .all_gpus = true};
    struct sched_step_ask one = gpu_task();
    struct sched_step_grant a, b;

    cr_assert_eq(sched_step_alloc_take(alloc, &all, false, &a, NULL), 0);
    cr_assert_eq(a.gpus, 0xf);
    cr_assert_eq(sched_step_alloc_take(alloc, &one, false, &b, NULL), -EBUSY);
    all.all_gpus = false; /* a CPU-only step still fits beside it */
    cr_assert_eq(sched_step_alloc_take(alloc, &all, false, &b, NULL), 0);
    cr_assert_eq(b.gpus, 0);
}

Test(step_alloc, takes_only_the_nodes_of_the_step_and_needs_all_of_them)
{
    struct sched_node_alloc n[2] = {node_of(0x3, 4), node_of(0x3, 4)};
    struct sched_step_alloc *two = sched_step_alloc_new(n, 2);
    struct sched_step_ask first[2] = {{.ntasks = 2, .exact_cores = true, .gpus = 2}, {0}};
    struct sched_step_ask both[2] = {gpu_task(), gpu_task()};
    struct sched_step_grant g[2], h[2];

    cr_assert_not_null(two);
    cr_assert_eq(sched_step_alloc_take(two, first, false, g, NULL), 0);
    cr_assert_eq(g[0].gpus, 0x3);
    cr_assert_not(g[1].held);
    cr_assert_eq(g[1].gpus, 0);
    cr_assert_eq(sched_step_alloc_take(two, both, false, h, NULL), -EBUSY, "node 0 is full");
    both[0].ntasks = 0;
    cr_assert_eq(sched_step_alloc_take(two, both, false, h, NULL), 0, "node 1 alone fits");
    sched_step_alloc_give_back(two, g);
    sched_step_alloc_give_back(two, h);
    cr_assert(sched_step_alloc_idle(two));
    sched_step_alloc_free(two);
}

Test(step_alloc, prefers_gpus_of_one_numa_node_and_cores_near_them)
{
    /* GPUs 0,2 on NUMA 0, 1,3 on NUMA 1; cores 0-3 on NUMA 0, 4-7 on NUMA 1. */
    const int16_t gpu_numa[4] = {0, 1, 0, 1};
    const int16_t core_numa[NCORES] = {0, 0, 0, 0, 1, 1, 1, 1};
    struct sched_step_ask one = gpu_task(), two = {.ntasks = 1, .exact_cores = true, .gpus = 2};
    struct sched_step_grant a, b, c;

    sched_step_alloc_set_numa(alloc, 0, gpu_numa, 4, core_numa, NCORES);
    cr_assert_eq(sched_step_alloc_take(alloc, &one, false, &a, NULL), 0);
    cr_assert_eq(a.gpus, 0x1);
    cr_assert_eq(a.cores[0], 0x1);
    /* Two GPUs: 1 and 2 are the lowest free, but 1 and 3 share NUMA node 1. */
    cr_assert_eq(sched_step_alloc_take(alloc, &two, false, &b, NULL), 0);
    cr_assert_eq(b.gpus, 0xa);
    cr_assert_eq(b.cores[0], 0x10, "the first core on NUMA node 1");
    /* GPU 2 is left alone on NUMA 0: its cores come from there. */
    cr_assert_eq(sched_step_alloc_take(alloc, &one, false, &c, NULL), 0);
    cr_assert_eq(c.gpus, 0x4);
    cr_assert_eq(c.cores[0], 0x2);
}

Test(step_alloc, falls_back_to_lowest_indices_across_numa_nodes)
{
    const int16_t gpu_numa[4] = {0, 1, 0, 1};
    struct sched_step_ask three = {.ntasks = 1, .exact_cores = true, .gpus = 3};
    struct sched_step_grant a;

    sched_step_alloc_set_numa(alloc, 0, gpu_numa, 4, NULL, 0);
    cr_assert_eq(sched_step_alloc_take(alloc, &three, false, &a, NULL), 0);
    cr_assert_eq(a.gpus, 0x7);
}

/* A step kept over a gschedd restart holds again exactly what it held; a grant another step
 * holds part of is refused whole, and what was held goes back as from take(). */
Test(step_alloc, holds_a_kept_steps_grant_again_unless_another_holds_it)
{
    struct sched_step_ask ask = gpu_task();
    struct sched_step_grant kept = {.gpus = 0x4, .held = true}, other, clash, overlap = {0};

    kept.cores[0] = 0x30;
    cr_assert_eq(sched_step_alloc_hold(alloc, &kept), 0);
    cr_assert_not(sched_step_alloc_idle(alloc));
    cr_assert_eq(sched_step_alloc_take(alloc, &ask, false, &other, NULL), 0);
    cr_assert_eq(other.gpus & kept.gpus, 0, "a held GPU was given again");
    cr_assert_eq(other.cores[0] & kept.cores[0], 0, "a held core was given again");
    clash = (struct sched_step_grant){.gpus = 0x8 | other.gpus, .held = true};
    cr_assert_eq(sched_step_alloc_hold(alloc, &clash), -EBUSY);
    overlap.gpus = 0xf; /* --overlap: held nothing, holds nothing */
    cr_assert_eq(sched_step_alloc_hold(alloc, &overlap), 0);
    sched_step_alloc_give_back(alloc, &other);
    sched_step_alloc_give_back(alloc, &kept);
    cr_assert(sched_step_alloc_idle(alloc), "the refused hold took nothing");
}
