/*
 * cpu_bind.h: Slurm's --cpu-bind for srun steps (or SLURM_CPU_BIND): which of a node's step
 * cores each task is bound to. gsched binds tasks to whole cores (a core's hardware threads
 * together), numbered as the worker's topology numbers them (GSCHED_CPUS), so map_cpu ids
 * and mask_cpu bits name those cores, not Slurm's abstract CPU ids. The CLI parses the text
 * to refuse a typo before anything is sent; gschedd parses it again and gives each task its
 * cores when it builds the step's launch (scheduler/step_cpu_bind.c). Pure functions, no
 * allocation; any thread.
 */
#ifndef GS_COMMON_CPU_BIND_H
#define GS_COMMON_CPU_BIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/bind_list.h"

enum gs_cpu_bind_kind {
    GS_CPU_BIND_CORES = 0, /* the task's own cores, as the step deals them (the default) */
    GS_CPU_BIND_NONE,      /* unbound: any of the step's cores on the node */
    GS_CPU_BIND_SOCKETS,   /* the step's cores on the sockets of the task's own cores */
    GS_CPU_BIND_LDOMS,     /* the step's cores on the NUMA nodes of the task's own cores */
    GS_CPU_BIND_RANK,      /* task i: the i-th of the step's cores there (wrapping) */
    GS_CPU_BIND_RANK_LDOM, /* task i: the step's cores on the i-th of its NUMA nodes there */
    GS_CPU_BIND_MAP_CPU,   /* task i: core list[i % n] */
    GS_CPU_BIND_MASK_CPU,  /* task i: the cores of mask list[i % n] (cores 0-63) */
    GS_CPU_BIND_MAP_LDOM,  /* task i: the step's cores on NUMA node list[i % n] */
    GS_CPU_BIND_MASK_LDOM, /* task i: the step's cores on the NUMA nodes of mask list[i % n] */
};

struct gs_cpu_bind {
    enum gs_cpu_bind_kind kind;
    bool verbose;
    uint32_t n; /* entries in list */
    uint64_t list[GS_BIND_LIST_MAX];
};

/*
 * Parses "[quiet,|verbose,]TYPE": none (or no), cores, sockets, ldoms, rank, rank_ldom,
 * map_cpu:L, mask_cpu:L, map_ldom:L, mask_ldom:L, L as bind_list.h reads it; "" and a
 * bare verbose or quiet keep the default, cores. threads and boards are refused (gsched
 * binds whole cores; nodes have one board). Returns 0, or -EINVAL with why.
 */
int gs_cpu_bind_parse(const char *text, struct gs_cpu_bind *out, char *why, size_t why_size);

/* A node's cores for one step: its cores there in index order, with each one's socket and
 * NUMA node (0 when unknown). */
struct gs_cpu_bind_node {
    const uint32_t *cores;
    const uint32_t *socket;
    const uint32_t *numa;
    size_t n;
};

/*
 * The cores task `local` (0-based on its node) binds to under b, written to out (room for
 * node->n) and counted in *nout (0: unbound); own/nown are the cores the step dealt it.
 * Returns 0, or -ERANGE with why when b names a core or NUMA node the step has no core of
 * there (map_cpu:20 where it holds 0-15).
 */
int gs_cpu_bind_task(const struct gs_cpu_bind *b, uint32_t local,
                     const struct gs_cpu_bind_node *node, const uint32_t *own, size_t nown,
                     uint32_t *out, size_t *nout, char *why, size_t why_size);

#endif
