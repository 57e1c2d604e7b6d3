/*
 * test_topo_print.c: `gsched nodes --topology` output from a hand-built NodeTopology: the
 * `nvidia-smi topo -m` matrix with GPU and NIC columns, core ranges, NUMA node and nearest
 * NIC; "-" where an older worker left a class out; the NIC legend; and the JSON form.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "cli/topo_print.h"

#define NV GS__LINK_TYPE__LINK_TYPE_NVLINK
#define PIX GS__LINK_TYPE__LINK_TYPE_PCIE_SWITCH
#define PXB GS__LINK_TYPE__LINK_TYPE_PCIE_MULTI_SWITCH
#define SYS GS__LINK_TYPE__LINK_TYPE_CROSS_SOCKET

/* Three GPUs and two NICs; the pair 1-2 is missing, and NIC1 knows only two GPUs. */
struct fixture {
    Gs__NodeTopology topo;
    Gs__Gpu gpus[3], *gpu_ptrs[3];
    Gs__GpuLink links[2], *link_ptrs[2];
    Gs__Nic nics[2], *nic_ptrs[2];
    uint32_t cores0[8], cores1[2];
    Gs__LinkType nic0_links[3], nic1_links[2];
};

static void gpu(struct fixture *f, int i, int numa, int32_t nearest, uint32_t *cores, size_t n)
{
    gs__gpu__init(&f->gpus[i]);
    f->gpus[i].index = (uint32_t)i;
    f->gpus[i].numa_node = numa;
    f->gpus[i].nearest_nic = nearest;
    f->gpus[i].local_cores = cores;
    f->gpus[i].n_local_cores = n;
    f->gpu_ptrs[i] = &f->gpus[i];
}

static void link(struct fixture *f, int i, uint32_t a, uint32_t b, Gs__LinkType type,
                 uint32_t nvlinks)
{
    gs__gpu_link__init(&f->links[i]);
    f->links[i].gpu_a = a;
    f->links[i].gpu_b = b;
    f->links[i].type = type;
    f->links[i].nvlink_count = nvlinks;
    f->link_ptrs[i] = &f->links[i];
}

static void nic(struct fixture *f, int i, char *name, char *ib, char *bus, Gs__LinkType *links,
                size_t n)
{
    gs__nic__init(&f->nics[i]);
    f->nics[i].index = (uint32_t)i;
    f->nics[i].name = name;
    f->nics[i].ib_device = ib;
    f->nics[i].pci_bus_id = bus;
    f->nics[i].numa_node = i;
    f->nics[i].gpu_links = links;
    f->nics[i].n_gpu_links = n;
    f->nic_ptrs[i] = &f->nics[i];
}

static void build(struct fixture *f)
{
    static const uint32_t cores0[] = {0, 1, 2, 3, 8, 9, 10, 11};

    memset(f, 0, sizeof(*f));
    gs__node_topology__init(&f->topo);
    memcpy(f->cores0, cores0, sizeof(cores0));
    f->cores1[0] = 4;
    f->cores1[1] = 5;
    gpu(f, 0, 0, 0, f->cores0, 8);
    gpu(f, 1, 0, 0, f->cores1, 2);
    gpu(f, 2, -1, 5, NULL, 0); /* nearest_nic past the list: none */
    link(f, 0, 0, 1, NV, 4);
    link(f, 1, 0, 2, PXB, 0);
    f->nic0_links[0] = PIX;
    f->nic0_links[1] = PIX;
    f->nic0_links[2] = SYS;
    f->nic1_links[0] = SYS;
    f->nic1_links[1] = SYS;
    nic(f, 0, "ibp27s0", "mlx5_0", "0000:1b:00.0", f->nic0_links, 3);
    nic(f, 1, "eth1", "", "0000:9b:00.0", f->nic1_links, 2);
    f->topo.gpus = f->gpu_ptrs;
    f->topo.n_gpus = 3;
    f->topo.gpu_links = f->link_ptrs;
    f->topo.n_gpu_links = 2;
    f->topo.nics = f->nic_ptrs;
    f->topo.n_nics = 2;
}

Test(topo_print, draws_the_matrix_with_nic_columns_and_affinity)
{
    struct fixture f;
    struct gs_buf out = GS_BUF_INIT;
    const char *want =
        "      GPU0  GPU1  GPU2  NIC0  NIC1  CPU Affinity  NUMA Affinity  Nearest NIC\n"
        "GPU0  X     NV4   PXB   PIX   SYS   0-3,8-11      0              mlx5_0\n"
        "GPU1  NV4   X     -     PIX   SYS   4,5           0              mlx5_0\n"
        "GPU2  PXB   -     X     SYS   -     -             -              -\n"
        "\n"
        "NIC Legend:\n"
        "\n"
        "  NIC0: mlx5_0 (ibp27s0, 0000:1b:00.0, NUMA 0)\n"
        "  NIC1: eth1 (0000:9b:00.0, NUMA 1)\n";

    build(&f);
    cr_assert_eq(cli_topo_print(&f.topo, &out), 0);
    cr_assert_str_eq(out.data, want);
    gs_buf_release(&out);
}

Test(topo_print, node_without_gpus_lists_only_its_nics)
{
    struct fixture f;
    struct gs_buf out = GS_BUF_INIT;

    build(&f);
    f.topo.n_gpus = 0;
    f.topo.n_nics = 1;
    cr_assert_eq(cli_topo_print(&f.topo, &out), 0);
    cr_assert_str_eq(out.data, "no GPUs\n\nNIC Legend:\n\n"
                               "  NIC0: mlx5_0 (ibp27s0, 0000:1b:00.0, NUMA 0)\n");
    gs_buf_release(&out);
}

Test(topo_print, names_cells_and_the_legend_explains_them)
{
    struct fixture f;
    static const char *const names[] = {"X ", "NV#", "PIX", "PXB", "PHB", "NODE", "SYS"};
    struct gs_buf out = GS_BUF_INIT;
    char cell[16];

    build(&f);
    cr_assert_str_eq(cli_topo_gpu_cell(&f.topo, 1, 0, cell, sizeof(cell)), "NV4");
    cr_assert_str_eq(cli_topo_gpu_cell(&f.topo, 2, 2, cell, sizeof(cell)), "X");
    cr_assert_str_eq(cli_link_name(GS__LINK_TYPE__LINK_TYPE_PCIE_HOST), "PHB");
    cr_assert_str_eq(cli_link_name(GS__LINK_TYPE__LINK_TYPE_SAME_NUMA), "NODE");
    cr_assert_str_eq(cli_link_name(GS__LINK_TYPE__LINK_TYPE_UNSPECIFIED), "-");
    cr_assert_str_eq(cli_link_name((Gs__LinkType)99), "-");
    cr_assert_eq(cli_topo_legend(&out), 0);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        cr_assert_not_null(strstr(out.data, names[i]), "legend lacks %s", names[i]);
    gs_buf_release(&out);
}

Test(topo_print, json_carries_the_matrix_and_the_nics)
{
    struct fixture f;
    struct gs_buf out = GS_BUF_INIT;
    struct gs_json j;

    build(&f);
    gs_json_init(&j, &out);
    cli_topo_json(&j, &f.topo);
    cr_assert_eq(gs_json_finish(&j), 0);
    cr_assert_not_null(strstr(out.data, "\"links\":[\"X\",\"NV4\",\"PXB\"]"), "%s", out.data);
    cr_assert_not_null(strstr(out.data, "\"nvlinks\":[4,0,0]"), "%s", out.data);
    cr_assert_not_null(strstr(out.data, "\"nic_links\":[\"SYS\",\"-\"]"), "%s", out.data);
    cr_assert_not_null(strstr(out.data, "\"local_cores\":[4,5],\"nearest_nic\":0"), "%s", out.data);
    cr_assert_not_null(strstr(out.data, "\"nearest_nic\":-1"), "%s", out.data);
    cr_assert_not_null(strstr(out.data, "{\"index\":1,\"name\":\"eth1\",\"ib_device\":\"\","
                                        "\"pci_bus_id\":\"0000:9b:00.0\",\"numa_node\":1,"
                                        "\"socket\":0,\"gpu_links\":[\"SYS\",\"SYS\"]}"),
                       "%s", out.data);
    gs_buf_release(&out);
}
