/*
 * test_task_dist.c: --distribution read as srun(1) writes it, the ranks each level gives a
 * step's tasks over uneven nodes, and how a two-socket node's cores are dealt to its tasks.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/task_dist.h"

static struct gs_dist parse_ok(const char *text)
{
    struct gs_dist d;
    char why[256] = "";

    cr_assert_eq(gs_dist_parse(text, &d, why, sizeof(why)), 0, "%s: %s", text, why);
    return d;
}

static void parse_fails(const char *text, const char *want)
{
    struct gs_dist d;
    char why[256] = "";

    cr_assert_eq(gs_dist_parse(text, &d, why, sizeof(why)), -EINVAL, "accepted %s", text);
    cr_assert_not_null(strstr(why, want), "want '%s' in '%s'", want, why);
}

/* The ranks as "a b|c d" (node by node). */
static const char *ranks_of(const char *text, const uint32_t *counts, size_t n)
{
    static char buf[256];
    struct gs_dist d = parse_ok(text);
    uint32_t ranks[64];
    size_t off = 0, at = 0;

    gs_dist_ranks(&d, counts, n, ranks);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        for (uint32_t l = 0; l < counts[i]; l++)
            at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%u",
                                   l > 0   ? " "
                                   : i > 0 ? "|"
                                           : "",
                                   ranks[off + l]);
        off += counts[i];
    }
    return buf;
}

Test(task_dist, parses_slurm_forms)
{
    struct gs_dist d = parse_ok("");

    cr_assert_eq(d.nodes, GS_DIST_BLOCK);
    cr_assert_eq(d.sockets, GS_DIST_SOCKETS_CYCLIC, "Slurm's default: block:cyclic");
    d = parse_ok("cyclic");
    cr_assert_eq(d.nodes, GS_DIST_CYCLIC);
    cr_assert_eq(d.sockets, GS_DIST_SOCKETS_CYCLIC);
    d = parse_ok("block:*");
    cr_assert_eq(d.sockets, GS_DIST_SOCKETS_CYCLIC);
    d = parse_ok("cyclic:block");
    cr_assert_eq(d.sockets, GS_DIST_SOCKETS_BLOCK);
    d = parse_ok("block:cyclic");
    cr_assert_eq(d.nodes, GS_DIST_BLOCK);
    cr_assert_eq(d.sockets, GS_DIST_SOCKETS_CYCLIC);
    d = parse_ok("*:fcyclic:*");
    cr_assert_eq(d.sockets, GS_DIST_SOCKETS_FCYCLIC);
    d = parse_ok("plane=4");
    cr_assert_eq(d.nodes, GS_DIST_PLANE);
    cr_assert_eq(d.plane, 4);
    d = parse_ok("Cyclic:Block,NoPack");
    cr_assert_eq(d.nodes, GS_DIST_CYCLIC);
    d = parse_ok("arbitrary");
    cr_assert_eq(d.nodes, GS_DIST_ARBITRARY);
}

Test(task_dist, refuses_what_it_cannot_do)
{
    parse_fails("cyclc", "'cyclc' is not a node distribution");
    parse_fails("block:round", "'round' is not a socket distribution");
    parse_fails("plane", "plane=N");
    parse_fails("plane=0", "whole number >= 1");
    parse_fails("plane=4x", "whole number >= 1");
    parse_fails("plane=2:cyclic", "no socket or core level");
    parse_fails("block:block:cyclic", "core level 'cyclic' is not supported");
    parse_fails("block:block:block:block", "more than three levels");
    parse_fails("cyclic,Pack", "Pack is not supported");
    parse_fails("cyclic,Tight", "only ,NoPack");
}

Test(task_dist, ranks_per_level)
{
    const uint32_t even[2] = {3, 3}, uneven[3] = {3, 2, 2};

    cr_assert_str_eq(ranks_of("block", even, 2), "0 1 2|3 4 5");
    cr_assert_str_eq(ranks_of("cyclic", even, 2), "0 2 4|1 3 5");
    cr_assert_str_eq(ranks_of("block", uneven, 3), "0 1 2|3 4|5 6");
    cr_assert_str_eq(ranks_of("cyclic", uneven, 3), "0 3 6|1 4|2 5");
    /* plane: blocks of 2 in turn; the node with more takes its last one in the next round */
    cr_assert_str_eq(ranks_of("plane=2", uneven, 3), "0 1 6|2 3|4 5");
    cr_assert_str_eq(ranks_of("plane=4", (const uint32_t[]){5, 5}, 2), "0 1 2 3 8|4 5 6 7 9");
    cr_assert_str_eq(ranks_of("plane=1", uneven, 3), ranks_of("cyclic", uneven, 3));
    cr_assert_str_eq(ranks_of("cyclic", (const uint32_t[]){1, 0, 2}, 3), "0|1 2");
}

/* Node cores 0-3 on socket 0 and 4-7 on socket 1, given interleaved to show order does not
 * matter; the tasks' cores as "a b|c d". */
static const char *cores_of(enum gs_dist_sockets how, uint32_t ntasks, uint32_t per)
{
    static char buf[128];
    const uint32_t cores[8] = {4, 0, 5, 1, 6, 2, 7, 3};
    uint32_t socket[8], out[8];
    size_t at = 0;

    for (size_t i = 0; i < 8; i++)
        socket[i] = cores[i] / 4;
    gs_dist_cores(how, cores, socket, 8, ntasks, per, out);
    for (size_t i = 0; i < 8; i++)
        at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%u",
                               i == 0                              ? ""
                               : i % per == 0 && i / per <= ntasks ? "|"
                                                                   : " ",
                               out[i]);
    return buf;
}

Test(task_dist, socket_levels)
{
    cr_assert_str_eq(cores_of(GS_DIST_SOCKETS_BLOCK, 4, 2), "0 1|2 3|4 5|6 7");
    cr_assert_str_eq(cores_of(GS_DIST_SOCKETS_CYCLIC, 4, 2), "0 1|4 5|2 3|6 7");
    cr_assert_str_eq(cores_of(GS_DIST_SOCKETS_FCYCLIC, 4, 2), "0 4|1 5|2 6|3 7");
    /* three tasks of two: the two cores nobody binds to end the list */
    cr_assert_str_eq(cores_of(GS_DIST_SOCKETS_CYCLIC, 3, 2), "0 1|4 5|2 3|6 7");
    /* a task wider than a socket's cores left takes the rest from the next one */
    cr_assert_str_eq(cores_of(GS_DIST_SOCKETS_CYCLIC, 2, 3), "0 1 2|4 5 6|3 7");
    cr_assert_str_eq(cores_of(GS_DIST_SOCKETS_CYCLIC, 1, 6), "0 1 2 3 4 5|6 7");
}

Test(task_dist, one_socket_keeps_index_order)
{
    const uint32_t cores[4] = {3, 1, 2, 0}, socket[4] = {0, 0, 0, 0};
    uint32_t out[4];

    gs_dist_cores(GS_DIST_SOCKETS_FCYCLIC, cores, socket, 4, 2, 2, out);
    cr_assert_arr_eq(out, ((uint32_t[]){0, 1, 2, 3}), sizeof(out));
}
