/*
 * topo.h: a node's hardware as gsched sees it: packages, NUMA nodes, cores, memory and NVIDIA
 * GPUs with their PCI bus ids, NUMA node and nearby cores. Read from hwloc (this machine, or
 * an hwloc XML file so tests can fake an 8-GPU server anywhere), or this machine with N
 * synthetic GPUs spread over its NUMA nodes (`gsched-workerd --gpus N`).
 *
 * hwloc stays behind this header: callers see plain structs. A GPU is counted by its PCI
 * identity (vendor 10de, display class 03xx), never by OS-device type, so DRM card/render
 * nodes and BMC VGAs are not GPUs. GPUs are numbered in PCI bus order, the order
 * CUDA_DEVICE_ORDER=PCI_BUS_ID gives, so index i is CUDA_VISIBLE_DEVICES entry i.
 * Cores are numbered by hwloc's logical index (0..ncores-1, package by package).
 *
 * A struct gs_topo is immutable once loaded and may be read from any thread. Whoever loads it
 * frees it with gs_topo_free().
 */
#ifndef GS_TOPO_H
#define GS_TOPO_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

#define GS_TOPO_BUSID_MAX 24 /* "0000:17:00.0", room for wide domains */

struct gs_topo_gpu {
    int index;                          /* 0-based, PCI bus order */
    char pci_bus_id[GS_TOPO_BUSID_MAX]; /* domain:bus:device.function, lowercase hex */
    uint16_t vendor_id;
    uint16_t device_id;
    int numa_node; /* OS index of the nearest NUMA node, -1 when unknown */
    int package;   /* OS index of the package it hangs off, -1 when unknown */
    char model[64];
    char uuid[64];       /* "GPU-..." when NVML reported it, else "" */
    uint64_t memory_mib; /* 0 when unknown */
    int nlocal_cores;
    const int *local_cores; /* logical core indices near this GPU, ascending */
};

struct gs_topo_core {
    int os_index;
    int package;
    int numa_node;
    int npus;
    const int *pus; /* OS indices of its hardware threads (what CPU binding uses) */
};

struct gs_topo;

struct gs_topo_opts {
    const char *xml_path; /* NULL: this machine */
    int fake_gpus;        /* > 0: replace the GPUs found by this many synthetic ones */
};

/*
 * Loads a topology. On failure returns a negative errno and fills err (a missing or invalid
 * XML file names the file); *ret_topo is written only on success.
 */
int gs_topo_load(const struct gs_topo_opts *opts, struct gs_topo **ret_topo, struct gs_error *err);
void gs_topo_free(struct gs_topo *topo);

const char *gs_topo_hostname(const struct gs_topo *topo); /* from the topology, may be "" */
int gs_topo_npackages(const struct gs_topo *topo);
int gs_topo_nnuma(const struct gs_topo *topo);
int gs_topo_ncores(const struct gs_topo *topo);
int gs_topo_npus(const struct gs_topo *topo);
uint64_t gs_topo_memory_mib(const struct gs_topo *topo);
/* Memory of one NUMA node by position 0..nnuma-1, with its OS index in *ret_os_index. */
uint64_t gs_topo_numa_memory_mib(const struct gs_topo *topo, int i, int *ret_os_index);
int gs_topo_ngpus(const struct gs_topo *topo);
/* Borrowed pointers into topo, valid until gs_topo_free(); NULL when i is out of range. */
const struct gs_topo_gpu *gs_topo_gpu(const struct gs_topo *topo, int i);
const struct gs_topo_core *gs_topo_core(const struct gs_topo *topo, int i);
/* True when the topology describes the machine we run on (binding is meaningful). */
bool gs_topo_is_this_system(const struct gs_topo *topo);

#endif
