/*
 * test_cpu_bind.c: --cpu-bind read as srun(1) writes it, and the cores each task gets on a
 * node where the step holds cores 0-3 (socket 0, NUMA node 0) and 8-11 (socket 1, NUMA 1).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/cpu_bind.h"

static const uint32_t cores[8] = {0, 1, 2, 3, 8, 9, 10, 11};
static const uint32_t sockets[8] = {0, 0, 0, 0, 1, 1, 1, 1};
static const struct gs_cpu_bind_node node = {cores, sockets, sockets, 8};

static struct gs_cpu_bind parse_ok(const char *text)
{
    struct gs_cpu_bind b;
    char why[256] = "";

    cr_assert_eq(gs_cpu_bind_parse(text, &b, why, sizeof(why)), 0, "%s: %s", text, why);
    return b;
}

static void parse_fails(const char *text, const char *want)
{
    struct gs_cpu_bind b;
    char why[256] = "";

    cr_assert_eq(gs_cpu_bind_parse(text, &b, why, sizeof(why)), -EINVAL, "accepted %s", text);
    cr_assert_not_null(strstr(why, want), "want '%s' in '%s'", want, why);
}

/* Task local's cores under text as "a,b", given it was dealt own (n of them). */
static const char *task(const char *text, uint32_t local, const uint32_t *own, size_t n)
{
    static char buf[128];
    struct gs_cpu_bind b = parse_ok(text);
    uint32_t out[8];
    size_t nout = 0, at = 0;
    char why[256] = "";

    cr_assert_eq(gs_cpu_bind_task(&b, local, &node, own, n, out, &nout, why, sizeof(why)), 0,
                 "%s: %s", text, why);
    buf[0] = '\0';
    for (size_t i = 0; i < nout; i++)
        at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%u", i > 0 ? "," : "", out[i]);
    return buf;
}

static void task_fails(const char *text, uint32_t local, const char *want)
{
    struct gs_cpu_bind b = parse_ok(text);
    uint32_t out[8];
    size_t nout = 0;
    char why[256] = "";

    cr_assert_eq(gs_cpu_bind_task(&b, local, &node, cores, 1, out, &nout, why, sizeof(why)),
                 -ERANGE, "%s bound", text);
    cr_assert_not_null(strstr(why, want), "want '%s' in '%s'", want, why);
}

Test(cpu_bind, parses_slurm_forms)
{
    struct gs_cpu_bind b = parse_ok("");

    cr_assert_eq(b.kind, GS_CPU_BIND_CORES);
    cr_assert_not(b.verbose);
    b = parse_ok("verbose");
    cr_assert(b.verbose);
    cr_assert_eq(b.kind, GS_CPU_BIND_CORES);
    b = parse_ok("quiet,none");
    cr_assert_eq(b.kind, GS_CPU_BIND_NONE);
    b = parse_ok("verbose,map_cpu:3,9*2");
    cr_assert_eq(b.kind, GS_CPU_BIND_MAP_CPU);
    cr_assert_eq(b.n, 3);
    cr_assert_eq(b.list[2], 9);
    b = parse_ok("mask_cpu:0x3,c");
    cr_assert_eq(b.list[1], 0xc);
    cr_assert_eq(parse_ok("no").kind, GS_CPU_BIND_NONE);
    cr_assert_eq(parse_ok("rank_ldom").kind, GS_CPU_BIND_RANK_LDOM);
}

Test(cpu_bind, refuses_what_it_cannot_do)
{
    parse_fails("thread", "'thread' is none of");
    parse_fails("threads", "threads is not supported");
    parse_fails("map_cpu:", "an empty list");
    parse_fails("map_cpu:1,", "ends with a comma");
    parse_fails("mask_cpu:0", "not a list of core ids or masks");
    parse_fails("map_ldom:x", "not a list of NUMA node ids or masks");
}

Test(cpu_bind, each_kind)
{
    const uint32_t own0[2] = {0, 1}, own2[2] = {8, 9};

    cr_assert_str_eq(task("", 0, own0, 2), "0,1", "the default keeps what was dealt");
    cr_assert_str_eq(task("none", 0, own0, 2), "");
    cr_assert_str_eq(task("sockets", 0, own0, 2), "0,1,2,3");
    cr_assert_str_eq(task("sockets", 2, own2, 2), "8,9,10,11");
    cr_assert_str_eq(task("ldoms", 2, own2, 2), "8,9,10,11");
    cr_assert_str_eq(task("rank", 5, own0, 2), "9");
    cr_assert_str_eq(task("rank", 9, own0, 2), "1", "wrapping");
    cr_assert_str_eq(task("rank_ldom", 1, own0, 2), "8,9,10,11");
    cr_assert_str_eq(task("map_cpu:3,9", 0, own0, 2), "3");
    cr_assert_str_eq(task("map_cpu:3,9", 3, own0, 2), "9");
    cr_assert_str_eq(task("mask_cpu:0x3,0x300", 1, own0, 2), "8,9");
    cr_assert_str_eq(task("map_ldom:1", 0, own0, 2), "8,9,10,11");
    cr_assert_str_eq(task("mask_ldom:0x3", 0, own0, 2), "0,1,2,3,8,9,10,11");
}

Test(cpu_bind, names_what_the_step_lacks)
{
    task_fails("map_cpu:4", 0, "map_cpu core 4 names no core the step has on the node");
    task_fails("mask_cpu:0x30", 0, "mask_cpu bit 4");
    task_fails("map_ldom:2", 0, "map_ldom NUMA node 2");
    task_fails("mask_ldom:0x5", 0, "mask_ldom NUMA node 2");
}
