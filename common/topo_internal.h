/*
 * topo_internal.h: struct gs_topo itself, shared by the files that build it: topo.c (the
 * hwloc load, cores, GPUs, NICs, accessors), topo_links.c (PCI paths, link classes, NVLink
 * from hwloc's distances) and topo_nvml.c (NVLink from NVML on this machine). They run
 * while the hwloc handle is open, on the loading thread; afterwards the struct is read-only.
 * Nothing outside common/topo*.c includes this header.
 */
#ifndef GS_TOPO_INTERNAL_H
#define GS_TOPO_INTERNAL_H

#include <hwloc.h>

#include "common/topo.h"

struct topo_numa {
    int os_index;
    uint64_t memory_mib;
};

struct gs_topo {
    char hostname[256];
    int npackages;
    int nnuma;
    int ncores;
    int npus;
    int ngpus;
    int nnics;
    bool this_system;
    uint64_t memory_mib;
    struct topo_numa *numa;
    struct gs_topo_core *cores;
    struct gs_topo_gpu *gpus;
    struct gs_topo_nic *nics;
    int *gpu_links; /* ngpus x ngpus enum gs_topo_link, row-major; 0 on the diagonal */
    int *nvlinks;   /* ngpus x ngpus NVLink counts, symmetric */
    int *nic_links; /* ngpus x nnics enum gs_topo_link */
};

/* The bridges above a PCI device into a new array (*ret_path, the caller frees). */
int topo_pci_path(hwloc_obj_t pci, const struct gs_topo_bridge **ret_path, int *ret_n);
/* Index of the GPU at domain:bus:dev (any function), or -1. */
int topo_find_gpu(const struct gs_topo *topo, unsigned domain, unsigned bus, unsigned dev);
/*
 * Fills gpu_links, nvlinks and nic_links once GPUs and NICs are final. NVLinks are looked
 * for only when with_nvlink (not for synthetic GPUs, whose bus ids are made up).
 * Returns 0 or -ENOMEM.
 */
int topo_load_links(hwloc_topology_t ht, struct gs_topo *topo, bool with_nvlink);
/* Adds the NVLinks NVML reports between this machine's GPUs into topo->nvlinks; does
 * nothing without the library, a driver or NVLink. Returns 0 or -ENOMEM. */
int topo_nvml_add_nvlinks(hwloc_topology_t ht, struct gs_topo *topo);

/* Loads the hwloc XML file path in a child process first (topo_trial.c): 0 when hwloc
 * loads it there, else -EINVAL (or -ETIMEDOUT) with err naming the file, also when hwloc
 * crashed on it. */
int topo_trial_load_xml(const char *path, struct gs_error *err);

#endif
