/*
 * layout.c: link matrices and NUMA maps for the simulator's node layouts (see layout.h).
 * The classes are what `nvidia-smi topo -m` prints on machines of those shapes: an HGX
 * board (NVSwitch), a PCIe server with NVLink bridges over GPU pairs, a PCIe-only server.
 */
#include "sim/layout.h"

#include <errno.h>
#include <string.h>

static const char *const names[] = {"nvswitch", "pairs", "pcie"};

int gs_sim_layout_parse(const char *name, enum gs_sim_links *ret)
{
    for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++) {
        if (strcmp(name, names[i]) == 0) {
            *ret = (enum gs_sim_links)i;
            return 0;
        }
    }
    return -EINVAL;
}

const char *gs_sim_layout_name(enum gs_sim_links links)
{
    return (int)links >= 0 && links <= GS_SIM_LINKS_PCIE ? names[links] : "unknown";
}

/* Socket of GPU i: two sockets from 4 GPUs up, the first half on 0. */
static int socket_of(uint32_t i, uint32_t ngpus)
{
    return ngpus >= 4 && i >= ngpus / 2 ? 1 : 0;
}

static struct gs_gpuset_link pair_link(enum gs_sim_links layout, uint32_t i, uint32_t j,
                                       uint32_t ngpus)
{
    if (layout == GS_SIM_LINKS_NVSWITCH)
        return (struct gs_gpuset_link){GS_GPUSET_NVLINK, 12};
    if (i / 2 == j / 2)
        return layout == GS_SIM_LINKS_PAIRS ? (struct gs_gpuset_link){GS_GPUSET_NVLINK, 4}
                                            : (struct gs_gpuset_link){GS_GPUSET_PIX, 0};
    if (socket_of(i, ngpus) == socket_of(j, ngpus))
        return (struct gs_gpuset_link){GS_GPUSET_PXB, 0};
    return (struct gs_gpuset_link){GS_GPUSET_SYS, 0};
}

void gs_sim_layout_links(enum gs_sim_links layout, uint32_t ngpus, struct gs_gpuset_link *links)
{
    for (uint32_t i = 0; i < ngpus; i++) {
        for (uint32_t j = 0; j < ngpus; j++)
            links[i * ngpus + j] = i == j ? (struct gs_gpuset_link){GS_GPUSET_NVLINK, 0}
                                          : pair_link(layout, i, j, ngpus);
    }
}

void gs_sim_layout_numa(uint32_t ngpus, uint32_t ncores, int *gpu_numa, int *core_numa)
{
    for (uint32_t i = 0; i < ngpus; i++)
        gpu_numa[i] = socket_of(i, ngpus);
    for (uint32_t i = 0; i < ncores; i++)
        core_numa[i] = ngpus >= 4 && i >= ncores / 2 ? 1 : 0;
}
