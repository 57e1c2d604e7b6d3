/*
 * layout.h: the GPU link matrices and NUMA maps the simulator gives its nodes, built from a
 * layout name, so that a trace that says nothing of a node's interconnect can still be
 * replayed on nodes where the choice of GPUs matters (scheduler/cluster.h places by
 * these matrices; common/gpuset.h names the classes):
 *
 *   nvswitch  every pair NVLink (12 links, through NVSwitch)
 *   pairs     GPUs 2i and 2i+1 NVLink (4 links); others PXB within a socket, SYS across
 *   pcie      GPUs 2i and 2i+1 under one PCIe switch (PIX); PXB within a socket, SYS across
 *
 * Nodes of 4 GPUs or more have two sockets: the first half of the GPUs and of the cores on
 * NUMA node 0, the second half on 1. Pure; caller-owned storage.
 */
#ifndef GS_SIM_LAYOUT_H
#define GS_SIM_LAYOUT_H

#include <stdint.h>

#include "common/gpuset.h"
#include "sim/trace.h"

/* "nvswitch", "pairs", "pcie" -> 0; else -EINVAL. */
int gs_sim_layout_parse(const char *name, enum gs_sim_links *ret);
const char *gs_sim_layout_name(enum gs_sim_links links);

/* Fills links (ngpus x ngpus, row-major; ngpus <= GS_GPUSET_MAX) for the layout. */
void gs_sim_layout_links(enum gs_sim_links layout, uint32_t ngpus, struct gs_gpuset_link *links);
/* The NUMA node of each GPU (ngpus entries) and each core (ncores entries). */
void gs_sim_layout_numa(uint32_t ngpus, uint32_t ncores, int *gpu_numa, int *core_numa);

#endif
