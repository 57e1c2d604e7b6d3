/*
 * topo_links.c: how a node's GPUs reach each other and its NICs (topo.h has the rules).
 * Runs at the end of gs_topo_load(), while the hwloc handle is still open: PCI paths are
 * copied out of hwloc's tree per device, NVLink counts come from hwloc's "NVLinkBandwidth"
 * distances or, on this machine without them, from NVML (topo_nvml.c). The classes then
 * follow from the copied paths alone, so they are the same for an XML fixture and for the
 * machine it was taken from.
 */
#include "common/topo_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVLINK_MBPS 25000 /* one NVLink 2-4 link, one direction, as hwloc counts it */

/* The facts about one device that its link classes depend on. */
struct endpoint {
    const struct gs_topo_bridge *path;
    int npath;
    int numa_node;
    int package;
};

static void describe_bridge(hwloc_obj_t obj, struct gs_topo_bridge *b)
{
    const struct hwloc_bridge_attr_s *a = &obj->attr->bridge;

    b->host = a->upstream_type == HWLOC_OBJ_BRIDGE_HOST;
    if (b->host)
        snprintf(b->id, sizeof(b->id), "%04x:[%02x-%02x]", (unsigned)a->downstream.pci.domain,
                 a->downstream.pci.secondary_bus, a->downstream.pci.subordinate_bus);
    else
        snprintf(b->id, sizeof(b->id), "%04x:%02x:%02x.%x", (unsigned)a->upstream.pci.domain,
                 a->upstream.pci.bus, a->upstream.pci.dev, a->upstream.pci.func);
}

int topo_pci_path(hwloc_obj_t pci, const struct gs_topo_bridge **ret_path, int *ret_n)
{
    struct gs_topo_bridge *path;
    hwloc_obj_t b;
    int n = 0;

    for (b = pci->parent; b != NULL && b->type == HWLOC_OBJ_BRIDGE; b = b->parent)
        n++;
    path = calloc(n > 0 ? (size_t)n : 1, sizeof(*path));
    if (path == NULL)
        return -ENOMEM;
    n = 0;
    for (b = pci->parent; b != NULL && b->type == HWLOC_OBJ_BRIDGE; b = b->parent)
        describe_bridge(b, &path[n++]);
    *ret_path = path;
    *ret_n = n;
    return 0;
}

int topo_find_gpu(const struct gs_topo *topo, unsigned domain, unsigned bus, unsigned dev)
{
    char prefix[GS_TOPO_BUSID_MAX];
    int len = snprintf(prefix, sizeof(prefix), "%04x:%02x:%02x.", domain, bus, dev);

    for (int i = 0; i < topo->ngpus; i++)
        if (strncmp(topo->gpus[i].pci_bus_id, prefix, (size_t)len) == 0)
            return i;
    return -1;
}

static bool same_numa(const struct endpoint *a, const struct endpoint *b)
{
    if (a->numa_node >= 0 || b->numa_node >= 0)
        return a->numa_node == b->numa_node;
    return a->package >= 0 && a->package == b->package;
}

/* The PCIe class of two devices (topo.h): from the deepest bridge their paths share. */
static int pcie_link(const struct endpoint *a, const struct endpoint *b)
{
    int shared = 0, below;

    /* Paths end at the host bridge, so shared bridges are a common tail. */
    while (shared < a->npath && shared < b->npath &&
           strcmp(a->path[a->npath - 1 - shared].id, b->path[b->npath - 1 - shared].id) == 0)
        shared++;
    if (shared == 0)
        return same_numa(a, b) ? GS_TOPO_LINK_NODE : GS_TOPO_LINK_SYS;
    if (a->path[a->npath - shared].host)
        return GS_TOPO_LINK_PHB;
    below = (a->npath > b->npath ? a->npath : b->npath) - shared;
    return below <= 1 ? GS_TOPO_LINK_PIX : GS_TOPO_LINK_PXB;
}

static struct endpoint gpu_endpoint(const struct gs_topo_gpu *g)
{
    return (struct endpoint){g->pci_path, g->npci_path, g->numa_node, g->package};
}

static struct endpoint nic_endpoint(const struct gs_topo_nic *n)
{
    return (struct endpoint){n->pci_path, n->npci_path, n->numa_node, n->package};
}

/* The GPU that a matrix object stands for: its NVML/CUDA OS device or its PCI device. */
static int gpu_of_obj(const struct gs_topo *topo, hwloc_obj_t obj)
{
    hwloc_obj_t pci = obj != NULL && obj->type == HWLOC_OBJ_OS_DEVICE ? obj->parent : obj;

    if (pci == NULL || pci->type != HWLOC_OBJ_PCI_DEVICE)
        return -1;
    return topo_find_gpu(topo, (unsigned)pci->attr->pcidev.domain, pci->attr->pcidev.bus,
                         pci->attr->pcidev.dev);
}

/* Adds the GPU-to-GPU bandwidths of d into bw (ngpus x ngpus, MB/s). */
static void add_gpu_bandwidth(const struct gs_topo *topo, const struct hwloc_distances_s *d,
                              const int *gpu_of, uint64_t *bw)
{
    for (unsigned i = 0; i < d->nbobjs; i++) {
        for (unsigned j = i + 1; j < d->nbobjs; j++) {
            uint64_t ij = d->values[i * d->nbobjs + j], ji = d->values[j * d->nbobjs + i];
            int a = gpu_of[i], b = gpu_of[j];

            if (a < 0 || b < 0 || a == b)
                continue;
            bw[a * topo->ngpus + b] += ij > ji ? ij : ji;
            bw[b * topo->ngpus + a] = bw[a * topo->ngpus + b];
        }
    }
}

/*
 * NVLink bandwidth from hwloc's matrix into bw. Behind NVSwitches the matrix holds GPU to
 * switch bandwidth only (GPU pairs 0); the transitive closure rewrites each GPU pair as
 * min(bandwidth of each to all switches), overwriting any direct value, so direct links are
 * added first. On a matrix without switches the closure would zero every pair: it is only
 * applied to heterogeneous ones. Returns whether there was a matrix, or -ENOMEM.
 */
static int nvlink_bandwidth_from_hwloc(hwloc_topology_t ht, const struct gs_topo *topo,
                                       uint64_t *bw)
{
    enum hwloc_distances_transform_e closure = HWLOC_DISTANCES_TRANSFORM_TRANSITIVE_CLOSURE;
    struct hwloc_distances_s *d = NULL;
    unsigned nr = 1;
    bool switched;
    int *gpu_of;

    if (hwloc_distances_get_by_name(ht, "NVLinkBandwidth", &nr, &d, 0) < 0 || nr == 0)
        return 0;
    gpu_of = calloc(d->nbobjs + 1, sizeof(*gpu_of));
    if (gpu_of == NULL) {
        hwloc_distances_release(ht, d);
        return -ENOMEM;
    }
    for (unsigned i = 0; i < d->nbobjs; i++)
        gpu_of[i] = gpu_of_obj(topo, d->objs[i]);
    add_gpu_bandwidth(topo, d, gpu_of, bw);
    switched = (d->kind & HWLOC_DISTANCES_KIND_HETEROGENEOUS_TYPES) != 0;
    if (switched && hwloc_distances_transform(ht, d, closure, NULL, 0) == 0)
        add_gpu_bandwidth(topo, d, gpu_of, bw);
    free(gpu_of);
    hwloc_distances_release(ht, d);
    return 1;
}

static int load_nvlinks(hwloc_topology_t ht, struct gs_topo *topo)
{
    size_t n = (size_t)topo->ngpus * (size_t)topo->ngpus;
    uint64_t *bw = calloc(n > 0 ? n : 1, sizeof(*bw));
    int rc;

    if (bw == NULL)
        return -ENOMEM;
    rc = nvlink_bandwidth_from_hwloc(ht, topo, bw);
    for (size_t i = 0; rc > 0 && i < n; i++)
        topo->nvlinks[i] = (int)((bw[i] + NVLINK_MBPS - 1) / NVLINK_MBPS);
    free(bw);
    if (rc == 0 && topo->this_system)
        rc = topo_nvml_add_nvlinks(ht, topo);
    return rc < 0 ? rc : 0;
}

static void classify(struct gs_topo *topo)
{
    int ng = topo->ngpus;

    for (int a = 0; a < ng; a++) {
        struct endpoint ea = gpu_endpoint(&topo->gpus[a]);

        for (int b = 0; b < ng; b++) {
            struct endpoint eb = gpu_endpoint(&topo->gpus[b]);

            if (a == b)
                topo->gpu_links[a * ng + b] = 0;
            else if (topo->nvlinks[a * ng + b] > 0)
                topo->gpu_links[a * ng + b] = GS_TOPO_LINK_NVLINK;
            else
                topo->gpu_links[a * ng + b] = pcie_link(&ea, &eb);
        }
        for (int k = 0; k < topo->nnics; k++) {
            struct endpoint ek = nic_endpoint(&topo->nics[k]);

            topo->nic_links[a * topo->nnics + k] = pcie_link(&ea, &ek);
        }
    }
}

int topo_load_links(hwloc_topology_t ht, struct gs_topo *topo, bool with_nvlink)
{
    size_t ng = (size_t)topo->ngpus, nk = (size_t)topo->nnics;
    int rc = 0;

    topo->gpu_links = calloc(ng * ng + 1, sizeof(int));
    topo->nvlinks = calloc(ng * ng + 1, sizeof(int));
    topo->nic_links = calloc(ng * nk + 1, sizeof(int));
    if (topo->gpu_links == NULL || topo->nvlinks == NULL || topo->nic_links == NULL)
        return -ENOMEM;
    if (with_nvlink && ng > 1)
        rc = load_nvlinks(ht, topo);
    if (rc == 0)
        classify(topo);
    return rc;
}

int gs_topo_gpu_link(const struct gs_topo *topo, int a, int b, int *ret_nvlinks)
{
    if (a < 0 || b < 0 || a >= topo->ngpus || b >= topo->ngpus || a == b)
        return -EINVAL;
    if (ret_nvlinks != NULL)
        *ret_nvlinks = topo->nvlinks[a * topo->ngpus + b];
    return topo->gpu_links[a * topo->ngpus + b];
}

int gs_topo_gpu_nic_link(const struct gs_topo *topo, int gpu, int nic)
{
    if (gpu < 0 || nic < 0 || gpu >= topo->ngpus || nic >= topo->nnics)
        return -EINVAL;
    return topo->nic_links[gpu * topo->nnics + nic];
}

int gs_topo_gpu_nearest_nic(const struct gs_topo *topo, int gpu)
{
    int best = -1;

    for (int k = 0; gpu >= 0 && gpu < topo->ngpus && k < topo->nnics; k++)
        if (best < 0 || gs_topo_gpu_nic_link(topo, gpu, k) < gs_topo_gpu_nic_link(topo, gpu, best))
            best = k;
    return best;
}

const char *gs_topo_link_name(int link)
{
    switch (link) {
    case GS_TOPO_LINK_NVLINK:
        return "NV";
    case GS_TOPO_LINK_PIX:
        return "PIX";
    case GS_TOPO_LINK_PXB:
        return "PXB";
    case GS_TOPO_LINK_PHB:
        return "PHB";
    case GS_TOPO_LINK_NODE:
        return "NODE";
    case GS_TOPO_LINK_SYS:
        return "SYS";
    default:
        return "?";
    }
}
