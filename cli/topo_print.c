/*
 * topo_print.c: the `nvidia-smi topo -m` matrix of one node (see topo_print.h). GPU pairs
 * arrive as a list (gpu_a < gpu_b) and each NIC lists how every GPU reaches it; cells are
 * looked up from those, so a pair the worker did not report shows "-" rather than a guess.
 * Row and column i are the GPU at position i, which is Gpu.index: workers send them in
 * index order.
 */
#include "cli/topo_print.h"

#include <stdio.h>

#include "cli/job_print.h"
#include "cli/table.h"

#define CELL_MAX 24
#define TRAILING_COLUMNS 3 /* CPU Affinity, NUMA Affinity, Nearest NIC */

static const char LEGEND[] =
    "Legend:\n"
    "\n"
    "  X    = the GPU itself\n"
    "  NV#  = a bonded set of # NVLinks, direct or through NVSwitches\n"
    "  PIX  = PCIe through at most one bridge: the same PCIe switch\n"
    "  PXB  = PCIe through several bridges (switches) but no host bridge\n"
    "  PHB  = PCIe through a PCIe host bridge (the CPU's root complex)\n"
    "  NODE = PCIe and the link between host bridges within one NUMA node\n"
    "  SYS  = PCIe and the interconnect between NUMA nodes (UPI, Infinity Fabric)\n"
    "\n"
    "  CPU Affinity: the GPU's local cores, as gsched numbers cores (0..cores-1)\n";

const char *cli_link_name(Gs__LinkType type)
{
    switch (type) {
    case GS__LINK_TYPE__LINK_TYPE_NVLINK:
        return "NV";
    case GS__LINK_TYPE__LINK_TYPE_PCIE_SWITCH:
        return "PIX";
    case GS__LINK_TYPE__LINK_TYPE_PCIE_MULTI_SWITCH:
        return "PXB";
    case GS__LINK_TYPE__LINK_TYPE_PCIE_HOST:
        return "PHB";
    case GS__LINK_TYPE__LINK_TYPE_SAME_NUMA:
        return "NODE";
    case GS__LINK_TYPE__LINK_TYPE_CROSS_SOCKET:
        return "SYS";
    default:
        return "-";
    }
}

static const Gs__GpuLink *find_link(const Gs__NodeTopology *t, size_t a, size_t b)
{
    size_t lo = a < b ? a : b, hi = a < b ? b : a;

    for (size_t i = 0; i < t->n_gpu_links; i++)
        if (t->gpu_links[i]->gpu_a == lo && t->gpu_links[i]->gpu_b == hi)
            return t->gpu_links[i];
    return NULL;
}

char *cli_topo_gpu_cell(const Gs__NodeTopology *t, size_t a, size_t b, char *out, size_t size)
{
    const Gs__GpuLink *link = a == b ? NULL : find_link(t, a, b);

    if (a == b)
        snprintf(out, size, "X");
    else if (link != NULL && link->type == GS__LINK_TYPE__LINK_TYPE_NVLINK)
        snprintf(out, size, "NV%u", link->nvlink_count);
    else
        snprintf(out, size, "%s", link != NULL ? cli_link_name(link->type) : "-");
    return out;
}

static const char *nic_cell(const Gs__Nic *nic, size_t gpu)
{
    return gpu < nic->n_gpu_links ? cli_link_name(nic->gpu_links[gpu]) : "-";
}

/* The name NCCL_IB_HCA (or NCCL_SOCKET_IFNAME without RDMA) would take. */
static const char *nic_label(const Gs__Nic *nic)
{
    if (nic->ib_device[0] != '\0')
        return nic->ib_device;
    return nic->name[0] != '\0' ? nic->name : nic->pci_bus_id;
}

static const Gs__Nic *nearest_nic(const Gs__NodeTopology *t, const Gs__Gpu *g)
{
    if (g->nearest_nic < 0 || (size_t)g->nearest_nic >= t->n_nics)
        return NULL;
    return t->nics[g->nearest_nic];
}

static int add_header(struct cli_table *tab, const Gs__NodeTopology *t)
{
    char cell[CELL_MAX];
    int rc = cli_table_add(tab, "");

    for (size_t g = 0; rc == 0 && g < t->n_gpus; g++) {
        snprintf(cell, sizeof(cell), "GPU%zu", g);
        rc = cli_table_add(tab, cell);
    }
    for (size_t k = 0; rc == 0 && k < t->n_nics; k++) {
        snprintf(cell, sizeof(cell), "NIC%zu", k);
        rc = cli_table_add(tab, cell);
    }
    if (rc == 0)
        rc = cli_table_add(tab, "CPU Affinity");
    if (rc == 0)
        rc = cli_table_add(tab, "NUMA Affinity");
    if (rc == 0)
        rc = cli_table_add(tab, "Nearest NIC");
    return rc;
}

/* The CPU Affinity, NUMA Affinity and Nearest NIC cells of GPU a. */
static int add_affinity(struct cli_table *tab, const Gs__NodeTopology *t, size_t a)
{
    const Gs__Gpu *g = t->gpus[a];
    const Gs__Nic *near = nearest_nic(t, g);
    struct gs_buf cores = GS_BUF_INIT;
    char numa[CELL_MAX] = "-";
    int rc;

    rc = cli_format_indices(&cores, g->local_cores, g->n_local_cores);
    if (rc == 0)
        rc = cli_table_add(tab, cores.len > 0 ? cores.data : "-");
    if (g->numa_node >= 0)
        snprintf(numa, sizeof(numa), "%d", g->numa_node);
    if (rc == 0)
        rc = cli_table_add(tab, numa);
    if (rc == 0)
        rc = cli_table_add(tab, near != NULL ? nic_label(near) : "-");
    gs_buf_release(&cores);
    return rc;
}

static int add_gpu_row(struct cli_table *tab, const Gs__NodeTopology *t, size_t a)
{
    char cell[CELL_MAX];
    int rc;

    snprintf(cell, sizeof(cell), "GPU%zu", a);
    rc = cli_table_add(tab, cell);
    for (size_t b = 0; rc == 0 && b < t->n_gpus; b++)
        rc = cli_table_add(tab, cli_topo_gpu_cell(t, a, b, cell, sizeof(cell)));
    for (size_t k = 0; rc == 0 && k < t->n_nics; k++)
        rc = cli_table_add(tab, nic_cell(t->nics[k], a));
    if (rc == 0)
        rc = add_affinity(tab, t, a);
    return rc;
}

static int print_matrix(const Gs__NodeTopology *t, struct gs_buf *out)
{
    struct cli_table tab;
    int rc;

    cli_table_init(&tab, 1 + t->n_gpus + t->n_nics + TRAILING_COLUMNS);
    rc = add_header(&tab, t);
    for (size_t a = 0; rc == 0 && a < t->n_gpus; a++)
        rc = add_gpu_row(&tab, t, a);
    if (rc == 0)
        rc = cli_table_render(&tab, out);
    cli_table_release(&tab);
    return rc;
}

static int print_nic_legend(const Gs__NodeTopology *t, struct gs_buf *out)
{
    int rc = gs_buf_printf(out, "\nNIC Legend:\n\n");

    for (size_t k = 0; rc == 0 && k < t->n_nics; k++) {
        const Gs__Nic *nic = t->nics[k];

        rc = gs_buf_printf(out, "  NIC%zu: %s (", k, nic_label(nic));
        if (rc == 0 && nic->ib_device[0] != '\0' && nic->name[0] != '\0')
            rc = gs_buf_printf(out, "%s, ", nic->name);
        if (rc == 0 && nic->numa_node >= 0)
            rc = gs_buf_printf(out, "%s, NUMA %d)\n", nic->pci_bus_id, nic->numa_node);
        else if (rc == 0)
            rc = gs_buf_printf(out, "%s)\n", nic->pci_bus_id);
    }
    return rc;
}

int cli_topo_legend(struct gs_buf *out)
{
    return gs_buf_printf(out, "%s", LEGEND);
}

int cli_topo_print(const Gs__NodeTopology *t, struct gs_buf *out)
{
    int rc;

    if (t->n_gpus > 0)
        rc = print_matrix(t, out);
    else
        rc = gs_buf_printf(out, "no GPUs\n");
    if (rc == 0 && t->n_nics > 0)
        rc = print_nic_legend(t, out);
    return rc;
}

static void json_uint_array(struct gs_json *j, const char *key, const uint32_t *v, size_t n)
{
    gs_json_key(j, key);
    gs_json_array_begin(j);
    for (size_t i = 0; i < n; i++)
        gs_json_uint(j, v[i]);
    gs_json_array_end(j);
}

/* Row a of the matrix: "links" (cells to every GPU), "nvlinks", "nic_links". */
static void json_gpu_links(struct gs_json *j, const Gs__NodeTopology *t, size_t a)
{
    char cell[CELL_MAX];

    gs_json_key(j, "links");
    gs_json_array_begin(j);
    for (size_t b = 0; b < t->n_gpus; b++)
        gs_json_string(j, cli_topo_gpu_cell(t, a, b, cell, sizeof(cell)));
    gs_json_array_end(j);
    gs_json_key(j, "nvlinks");
    gs_json_array_begin(j);
    for (size_t b = 0; b < t->n_gpus; b++) {
        const Gs__GpuLink *link = a == b ? NULL : find_link(t, a, b);
        bool nv = link != NULL && link->type == GS__LINK_TYPE__LINK_TYPE_NVLINK;

        gs_json_uint(j, nv ? link->nvlink_count : 0);
    }
    gs_json_array_end(j);
    gs_json_key(j, "nic_links");
    gs_json_array_begin(j);
    for (size_t k = 0; k < t->n_nics; k++)
        gs_json_string(j, nic_cell(t->nics[k], a));
    gs_json_array_end(j);
}

static void json_gpu(struct gs_json *j, const Gs__NodeTopology *t, size_t a)
{
    const Gs__Gpu *g = t->gpus[a];

    gs_json_object_begin(j);
    gs_json_kv_uint(j, "index", g->index);
    gs_json_kv_string(j, "uuid", g->uuid);
    gs_json_kv_string(j, "model", g->model);
    gs_json_kv_string(j, "pci_bus_id", g->pci_bus_id);
    gs_json_kv_int(j, "numa_node", g->numa_node);
    gs_json_kv_int(j, "socket", g->socket);
    gs_json_kv_uint(j, "memory_mib", g->memory_mib);
    json_uint_array(j, "local_cores", g->local_cores, g->n_local_cores);
    gs_json_kv_int(j, "nearest_nic", nearest_nic(t, g) != NULL ? g->nearest_nic : -1);
    json_gpu_links(j, t, a);
    gs_json_object_end(j);
}

static void json_nic(struct gs_json *j, const Gs__Nic *nic)
{
    gs_json_object_begin(j);
    gs_json_kv_uint(j, "index", nic->index);
    gs_json_kv_string(j, "name", nic->name);
    gs_json_kv_string(j, "ib_device", nic->ib_device);
    gs_json_kv_string(j, "pci_bus_id", nic->pci_bus_id);
    gs_json_kv_int(j, "numa_node", nic->numa_node);
    gs_json_kv_int(j, "socket", nic->socket);
    gs_json_key(j, "gpu_links");
    gs_json_array_begin(j);
    for (size_t g = 0; g < nic->n_gpu_links; g++)
        gs_json_string(j, nic_cell(nic, g));
    gs_json_array_end(j);
    gs_json_object_end(j);
}

void cli_topo_json(struct gs_json *j, const Gs__NodeTopology *t)
{
    gs_json_object_begin(j);
    gs_json_kv_string(j, "hostname", t->hostname);
    gs_json_kv_uint(j, "sockets", t->sockets);
    gs_json_kv_uint(j, "cores", t->cores);
    gs_json_kv_uint(j, "threads", t->threads);
    gs_json_key(j, "gpus");
    gs_json_array_begin(j);
    for (size_t a = 0; a < t->n_gpus; a++)
        json_gpu(j, t, a);
    gs_json_array_end(j);
    gs_json_key(j, "nics");
    gs_json_array_begin(j);
    for (size_t k = 0; k < t->n_nics; k++)
        json_nic(j, t->nics[k]);
    gs_json_array_end(j);
    gs_json_object_end(j);
}
