/*
 * test_gpu_bind.c: --gpu-bind read as srun(1) writes it, and the GPUs each task gets on a
 * node of 4 step GPUs, two on NUMA node 0 and two on node 1.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/gpu_bind.h"

static const int16_t numa[4] = {0, 0, 1, 1};

static struct gs_gpu_bind parse_ok(const char *text)
{
    struct gs_gpu_bind b;
    char why[256] = "";

    cr_assert_eq(gs_gpu_bind_parse(text, &b, why, sizeof(why)), 0, "%s: %s", text, why);
    return b;
}

static void parse_fails(const char *text, const char *want)
{
    struct gs_gpu_bind b;
    char why[256] = "";

    cr_assert_eq(gs_gpu_bind_parse(text, &b, why, sizeof(why)), -EINVAL, "accepted %s", text);
    cr_assert_not_null(strstr(why, want), "want '%s' in '%s'", want, why);
}

/* Task local's GPUs as "a,b" (step GPU indexes), peer its place among its NUMA set's. */
static const char *task_peer(const struct gs_gpu_bind *b, uint32_t local, uint32_t peer,
                             uint64_t task_numa)
{
    static char buf[64];
    uint32_t out[4];
    size_t n = 0, off = 0;
    char why[256] = "";

    cr_assert_eq(gs_gpu_bind_task(b, local, peer, 4, numa, task_numa, out, &n, why, sizeof(why)), 0,
                 "%s", why);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%u", i > 0 ? "," : "", out[i]);
    return buf;
}

static const char *task(const struct gs_gpu_bind *b, uint32_t local, uint64_t task_numa)
{
    return task_peer(b, local, local, task_numa);
}

Test(gpu_bind, none_and_empty_give_every_task_all_gpus)
{
    struct gs_gpu_bind b = parse_ok("none");

    cr_assert_str_eq(task(&b, 3, 1), "0,1,2,3");
    b = parse_ok("");
    cr_assert_eq(b.kind, GS_GPU_BIND_NONE);
    b = parse_ok("verbose");
    cr_assert(b.verbose);
    cr_assert_eq(b.kind, GS_GPU_BIND_NONE);
}

Test(gpu_bind, closest_follows_the_tasks_numa_node)
{
    struct gs_gpu_bind b = parse_ok("verbose,closest");

    cr_assert(b.verbose);
    cr_assert_str_eq(task(&b, 0, 1u << 0), "0,1");
    cr_assert_str_eq(task(&b, 1, 1u << 1), "2,3");
    cr_assert_str_eq(task(&b, 2, 3), "0,1,2,3", "cores on both nodes");
    cr_assert_str_eq(task(&b, 3, 0), "0,1,2,3", "NUMA unknown: all");
    cr_assert_str_eq(task(&b, 3, 1u << 5), "0,1,2,3", "no GPU on its node: all");
}

Test(gpu_bind, single_gives_k_tasks_each_gpu_among_the_closest)
{
    struct gs_gpu_bind b = parse_ok("single:1");

    cr_assert_str_eq(task_peer(&b, 0, 0, 1), "0");
    cr_assert_str_eq(task_peer(&b, 1, 1, 1), "1");
    cr_assert_str_eq(task_peer(&b, 2, 0, 2), "2", "the first task on NUMA node 1");
    cr_assert_str_eq(task_peer(&b, 3, 1, 2), "3");
    cr_assert_str_eq(task_peer(&b, 4, 2, 2), "2", "round again");
    b = parse_ok("single:2");
    cr_assert_str_eq(task(&b, 0, 1), "0");
    cr_assert_str_eq(task(&b, 1, 1), "0");
    cr_assert_str_eq(task(&b, 2, 1), "1");
}

Test(gpu_bind, per_task_hands_out_gpus_in_order)
{
    struct gs_gpu_bind b = parse_ok("per_task:2");

    cr_assert_str_eq(task(&b, 0, 0), "0,1");
    cr_assert_str_eq(task(&b, 1, 0), "2,3");
    cr_assert_str_eq(task(&b, 2, 0), "0,1", "wraps");
}

Test(gpu_bind, map_and_mask_lists_repeat_and_reuse)
{
    struct gs_gpu_bind b = parse_ok("map_gpu:3,1*2");

    cr_assert_eq(b.n, 3);
    cr_assert_str_eq(task(&b, 0, 0), "3");
    cr_assert_str_eq(task(&b, 1, 0), "1");
    cr_assert_str_eq(task(&b, 2, 0), "1");
    cr_assert_str_eq(task(&b, 3, 0), "3", "the list again from its start");
    b = parse_ok("mask_gpu:0x3,C");
    cr_assert_str_eq(task(&b, 0, 0), "0,1");
    cr_assert_str_eq(task(&b, 1, 0), "2,3");
}

Test(gpu_bind, ids_past_the_nodes_gpus_are_refused)
{
    struct gs_gpu_bind b = parse_ok("map_gpu:0,4");
    uint32_t out[4];
    size_t n;
    char why[256] = "";

    cr_assert_eq(gs_gpu_bind_task(&b, 1, 1, 4, numa, 0, out, &n, why, sizeof(why)), -ERANGE);
    cr_assert_not_null(strstr(why, "map_gpu id 4 names a GPU the step does not have"), "%s", why);
    b = parse_ok("mask_gpu:0x10");
    cr_assert_eq(gs_gpu_bind_task(&b, 0, 0, 4, numa, 0, out, &n, why, sizeof(why)), -ERANGE);
    cr_assert_not_null(strstr(why, "mask_gpu bit 4"), "%s", why);
}

Test(gpu_bind, typos_are_refused_by_name)
{
    parse_fails("closet", "'closet' is none of");
    parse_fails("single:0", "'0' is not a count");
    parse_fails("per_task:x", "'x' is not a count");
    parse_fails("map_gpu:", "an empty list");
    parse_fails("map_gpu:1,", "ends with a comma");
    parse_fails("map_gpu:a", "'a' is not a list");
    parse_fails("mask_gpu:0", "'0' is not a list");
    parse_fails("map_gpu:0*200", "more than 128");
    parse_fails("verbose,nonsense", "'nonsense' is none of");
}
