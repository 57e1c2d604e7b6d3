/*
 * task_dist.h: Slurm's -m/--distribution for srun steps (and sbatch, whose value its steps
 * inherit through SLURM_DISTRIBUTION): which global ranks each node's tasks get (the node
 * level: block, cyclic, plane=N, arbitrary) and how a node's cores are dealt to its tasks
 * (the socket level: block, cyclic, fcyclic). How many tasks each node runs does not depend
 * on it, as in Slurm (arbitrary excepted, where the host list decides). The CLI parses the
 * text to refuse a typo before anything is sent; gschedd parses it again when it lays out
 * the step (scheduler/step_plan.c). Pure functions, no allocation; any thread.
 */
#ifndef GS_COMMON_TASK_DIST_H
#define GS_COMMON_TASK_DIST_H

#include <stddef.h>
#include <stdint.h>

enum gs_dist_nodes {
    GS_DIST_BLOCK = 0, /* consecutive ranks on a node: 0 1 2 | 3 4 | 5 6 */
    GS_DIST_CYCLIC,    /* round robin over the nodes: 0 3 5 | 1 4 | 2 6 */
    GS_DIST_PLANE,     /* blocks of plane ranks, round robin over the nodes */
    GS_DIST_ARBITRARY, /* rank r on the r-th host of a list (SLURM_HOSTFILE or -w) */
};

enum gs_dist_sockets {
    GS_DIST_SOCKETS_CYCLIC = 0, /* a task's cores from one socket, the next task's from the next */
    GS_DIST_SOCKETS_BLOCK,      /* a task's cores from one socket, the next task's after them */
    GS_DIST_SOCKETS_FCYCLIC,    /* each of a task's cores from the next socket in turn */
};

struct gs_dist {
    enum gs_dist_nodes nodes;
    uint32_t plane; /* GS_DIST_PLANE: ranks per block, >= 1 */
    enum gs_dist_sockets sockets;
};

/*
 * Parses Slurm's "NODES[:SOCKETS[:CORES]][,NoPack]", NODES one of * block cyclic
 * arbitrary plane=N, SOCKETS one of * block cyclic fcyclic; "*" and "" are the defaults,
 * Slurm's: block for the nodes, cyclic for the sockets (the zero values, so a struct gs_dist
 * of zeros is the default layout). A third level other than "*" and ",Pack" are refused (gsched
 * binds tasks to logical CPUs and always spreads tasks evenly), as are levels after plane=N, which
 * Slurm does not combine. Returns 0, or -EINVAL with why (one line naming the wrong part).
 */
int gs_dist_parse(const char *text, struct gs_dist *out, char *why, size_t why_size);

/*
 * The global rank of each task, nodes' tasks one node after the other (node i's local task
 * l at ranks[sum of counts[0..i) + l]), for counts[i] tasks on node i of n. Ranks rise with
 * l on every node. GS_DIST_ARBITRARY lays out as block: its ranks come from the host list.
 */
void gs_dist_ranks(const struct gs_dist *d, const uint32_t *counts, size_t n, uint32_t *ranks);

/*
 * Orders a node's cores for its tasks: task l binds to out[l*per .. l*per+per) for ntasks
 * tasks of per cores each (ntasks * per <= n; the cores left over end the list). socket[i]
 * is cores[i]'s socket (the same for all when unknown); cores need not be sorted. out has
 * room for n and must not alias cores.
 */
void gs_dist_cores(enum gs_dist_sockets how, const uint32_t *cores, const uint32_t *socket,
                   size_t n, uint32_t ntasks, uint32_t per, uint32_t *out);

#endif
