/*
 * test_mem_bind.c: --mem-bind read as srun(1) writes it, and the NUMA nodes each task gets
 * on a node of NUMA nodes 0 and 1.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "common/mem_bind.h"

static struct gs_mem_bind parse_ok(const char *text)
{
    struct gs_mem_bind b;
    char why[256] = "";

    cr_assert_eq(gs_mem_bind_parse(text, &b, why, sizeof(why)), 0, "%s: %s", text, why);
    return b;
}

static void parse_fails(const char *text, const char *want)
{
    struct gs_mem_bind b;
    char why[256] = "";

    cr_assert_eq(gs_mem_bind_parse(text, &b, why, sizeof(why)), -EINVAL, "accepted %s", text);
    cr_assert_not_null(strstr(why, want), "want '%s' in '%s'", want, why);
}

/* Task local's NUMA mask under text, its cores on task_numa, on a node of NUMA 0 and 1. */
static uint64_t task(const char *text, uint32_t local, uint64_t task_numa)
{
    struct gs_mem_bind b = parse_ok(text);
    uint64_t mask = 99;
    char why[256] = "";

    cr_assert_eq(gs_mem_bind_task(&b, local, task_numa, 0x3, &mask, why, sizeof(why)), 0, "%s: %s",
                 text, why);
    return mask;
}

Test(mem_bind, parses_slurm_forms)
{
    struct gs_mem_bind b = parse_ok("");

    cr_assert_eq(b.kind, GS_MEM_BIND_DEFAULT);
    b = parse_ok("verbose,local");
    cr_assert(b.verbose);
    cr_assert_eq(b.kind, GS_MEM_BIND_LOCAL);
    b = parse_ok("p,map_mem:1,0*2");
    cr_assert(b.prefer);
    cr_assert_eq(b.kind, GS_MEM_BIND_MAP);
    cr_assert_eq(b.n, 3);
    cr_assert_eq(b.list[2], 0);
    b = parse_ok("q,nosort,mask_mem:0x2");
    cr_assert_eq(b.kind, GS_MEM_BIND_MASK);
    cr_assert_eq(b.list[0], 2);
    cr_assert_eq(parse_ok("prefer").kind, GS_MEM_BIND_LOCAL, "prefer alone: its own nodes");
    cr_assert_eq(parse_ok("no").kind, GS_MEM_BIND_NONE);
}

Test(mem_bind, refuses_what_it_cannot_do)
{
    parse_fails("lcoal", "'lcoal' is none of");
    parse_fails("local,rank", "names two of");
    parse_fails("none,map_mem:0", "names two of");
    parse_fails("prefer,none", "prefers nothing");
    parse_fails("local,", "ends with a comma");
    parse_fails("map_mem:", "an empty list");
    parse_fails("mask_mem:0", "not a list of NUMA node ids or masks");
}

Test(mem_bind, each_kind)
{
    cr_assert_eq(task("", 0, 0x1), 0, "the default is the worker's");
    cr_assert_eq(task("none", 0, 0x1), 0);
    cr_assert_eq(task("local", 0, 0x2), 0x2);
    cr_assert_eq(task("rank", 0, 0x2), 0x1);
    cr_assert_eq(task("rank", 3, 0x2), 0x2, "wrapping over the node's two");
    cr_assert_eq(task("map_mem:1,0", 0, 0x1), 0x2);
    cr_assert_eq(task("map_mem:1,0", 3, 0x1), 0x1);
    cr_assert_eq(task("mask_mem:0x3", 0, 0x1), 0x3);
}

Test(mem_bind, names_a_node_the_node_lacks)
{
    struct gs_mem_bind b = parse_ok("mask_mem:0x5");
    uint64_t mask;
    char why[256] = "";

    cr_assert_eq(gs_mem_bind_task(&b, 0, 0x1, 0x3, &mask, why, sizeof(why)), -ERANGE);
    cr_assert_not_null(strstr(why, "mask_mem NUMA node 2 is not one of the node's"), "%s", why);
    b = parse_ok("map_mem:64");
    cr_assert_eq(gs_mem_bind_task(&b, 0, 0x1, 0x3, &mask, why, sizeof(why)), -ERANGE);
}
