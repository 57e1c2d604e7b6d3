/*
 * topo.h: a node's hardware as gsched sees it: packages, NUMA nodes, cores, memory, NVIDIA
 * GPUs with their PCI bus ids, NUMA node and nearby cores, network adapters, and how each
 * GPU reaches every other GPU and every NIC (the `nvidia-smi topo -m` matrix), which is what
 * topology-aware placement ranks GPU sets by. Read from hwloc (this machine, or an hwloc XML
 * file so tests can fake an 8-GPU server anywhere), or this machine with N synthetic GPUs
 * spread over its NUMA nodes (`gsched-workerd --gpus N`).
 *
 * hwloc stays behind this header: callers see plain structs. A GPU is counted by its PCI
 * identity (vendor 10de, display class 03xx), never by OS-device type, so DRM card/render
 * nodes and BMC VGAs are not GPUs. GPUs are numbered in PCI bus order, the order
 * CUDA_DEVICE_ORDER=PCI_BUS_ID gives, so index i is CUDA_VISIBLE_DEVICES entry i.
 * Cores are numbered by hwloc's logical index (0..ncores-1, package by package). A NIC is a
 * PCI function with a network interface (eth0, ib0) or an OpenFabrics device (mlx5_0), or
 * both; NICs are numbered in PCI bus order too.
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
#define GS_TOPO_NAME_MAX 64

/*
 * How two devices reach each other, named as `nvidia-smi topo -m` names it. The values are
 * ranks: lower is closer. PCIe classes come from the two devices' PCI paths (below), and
 * NUMA nodes where the paths share nothing. Let C be the deepest bridge both paths share:
 *
 *   PIX   C is a PCI-PCI bridge and neither device has more than one bridge between itself
 *         and C: both sit under one PCIe switch. hwloc shows a switch as its upstream port
 *         (C) with one bridge per downstream port, hence the one bridge allowed per side.
 *   PXB   C is a PCI-PCI bridge and a device has two or more bridges below it: the way
 *         crosses several switches, never the host bridge.
 *   PHB   C is a host bridge: the way goes up through the root complex (the CPU).
 *   NODE  no shared bridge (different host bridges), same NUMA node; with NUMA unknown on
 *         both, same package.
 *   SYS   no shared bridge and different (or unknown) NUMA nodes: the SMP interconnect
 *         between NUMA nodes (UPI, Infinity Fabric).
 *
 * NVLINK (NV#) beats all of them for a GPU pair with at least one NVLink, directly or through
 * NVSwitches. The count is the pair's NVLink bandwidth over 25000 MB/s per link, rounded up
 * (so NVLink 1's 20000 MB/s links count right too), from hwloc's "NVLinkBandwidth" distances:
 * direct GPU-GPU entries plus, in a matrix with NVSwitches, hwloc's transitive closure (the
 * smaller of the two GPUs' bandwidths to all switches). Where hwloc has no such matrix and
 * the topology is this machine, NVML (libnvidia-ml.so.1, dlopen'd; absent is fine) gives
 * the same: active links to the other GPU plus the smaller of the two GPUs' link counts to
 * NVSwitches. Synthetic GPUs have no PCI path and no NVLink: NODE or SYS by NUMA node.
 */
enum gs_topo_link {
    GS_TOPO_LINK_NVLINK = 1,
    GS_TOPO_LINK_PIX = 2,
    GS_TOPO_LINK_PXB = 3,
    GS_TOPO_LINK_PHB = 4,
    GS_TOPO_LINK_NODE = 5,
    GS_TOPO_LINK_SYS = 6,
};

/* One bridge on a device's PCI path: the bridges from the device up to its host bridge. */
struct gs_topo_bridge {
    /* A PCI-PCI bridge (root port, switch port): its bus id, "0000:18:00.0". A host bridge
     * has none: "0000:[16-1b]", its domain and the buses below it, which is unique too. */
    char id[GS_TOPO_BUSID_MAX];
    bool host; /* a host bridge: always the last entry */
};

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
    int npci_path;
    const struct gs_topo_bridge *pci_path; /* nearest bridge first; none for synthetic GPUs */
};

struct gs_topo_nic {
    int index;                        /* 0-based, PCI bus order */
    char name[GS_TOPO_NAME_MAX];      /* network interface ("ibp27s0", "ens1f0"), or "" */
    char ib_device[GS_TOPO_NAME_MAX]; /* OpenFabrics (RDMA) device ("mlx5_0"), or "" */
    char pci_bus_id[GS_TOPO_BUSID_MAX];
    int numa_node; /* OS index of the nearest NUMA node, -1 when unknown */
    int package;   /* OS index of the package it hangs off, -1 when unknown */
    int npci_path;
    const struct gs_topo_bridge *pci_path; /* nearest bridge first */
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
    /* NULL: every CPU. Else an OS PU list ("0-3,8"): the topology keeps only the cores of
     * those PUs (a worker offering part of a machine); GPUs and NICs stay. */
    const char *cpus;
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
/* How many of core's hardware threads a task bound to it uses: its first threads_per_core
 * (sbatch --threads-per-core, --hint=nomultithread), or all of them when that is 0 or more
 * than it has. */
int gs_topo_core_threads(const struct gs_topo_core *core, uint32_t threads_per_core);
/* True when the topology describes the machine we run on (binding is meaningful). */
bool gs_topo_is_this_system(const struct gs_topo *topo);

int gs_topo_nnics(const struct gs_topo *topo);
/* Borrowed pointer into topo, valid until gs_topo_free(); NULL when i is out of range. */
const struct gs_topo_nic *gs_topo_nic(const struct gs_topo *topo, int i);
/*
 * How GPUs a and b reach each other: an enum gs_topo_link, or -EINVAL when a or b is out of
 * range or a == b. *ret_nvlinks (may be NULL) gets the NVLinks between them, 0 unless the
 * class is GS_TOPO_LINK_NVLINK.
 */
int gs_topo_gpu_link(const struct gs_topo *topo, int a, int b, int *ret_nvlinks);
/* How a GPU reaches a NIC (a PCIe class: never NVLINK), or -EINVAL when out of range. */
int gs_topo_gpu_nic_link(const struct gs_topo *topo, int gpu, int nic);
/* The NIC closest to a GPU (lowest class, the lower index on a tie), or -1 when there is
 * no NIC or gpu is out of range. */
int gs_topo_gpu_nearest_nic(const struct gs_topo *topo, int gpu);
/* "NV", "PIX", "PXB", "PHB", "NODE", "SYS"; "?" for anything else. */
const char *gs_topo_link_name(int link);

#endif
