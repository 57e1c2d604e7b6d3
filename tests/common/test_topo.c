/*
 * test_topo.c: topology discovery on the hwloc XML fixtures in tests/topologies/ (an 8-GPU
 * NVSwitch server, an 8-GPU PCIe server, a 4-GPU workstation, a CPU-only node), on this
 * machine, and with synthetic GPUs.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/topo.h"

static struct gs_topo *load_fixture(const char *name, int fake_gpus)
{
    char path[512];
    struct gs_topo_opts opts = {.xml_path = path, .fake_gpus = fake_gpus};
    struct gs_topo *topo = NULL;
    struct gs_error err;
    int rc;

    snprintf(path, sizeof(path), "%s/%s", GSCHED_TOPOLOGIES, name);
    rc = gs_topo_load(&opts, &topo, &err);
    cr_assert_eq(rc, 0, "%s: %s", name, err.msg);
    return topo;
}

static void assert_cores_are_range(const struct gs_topo_gpu *gpu, int first, int count)
{
    cr_assert_eq(gpu->nlocal_cores, count, "gpu %d has %d local cores", gpu->index,
                 gpu->nlocal_cores);
    for (int i = 0; i < count; i++)
        cr_assert_eq(gpu->local_cores[i], first + i);
}

Test(topo, reads_nvswitch_server_sockets_cores_memory_and_gpus)
{
    struct gs_topo *topo = load_fixture("dgx-h100.xml", 0);
    const struct gs_topo_gpu *g0 = gs_topo_gpu(topo, 0), *g4 = gs_topo_gpu(topo, 4);

    cr_assert_eq(gs_topo_npackages(topo), 2);
    cr_assert_eq(gs_topo_nnuma(topo), 2);
    cr_assert_eq(gs_topo_ncores(topo), 112);
    cr_assert_eq(gs_topo_npus(topo), 224);
    cr_assert_eq(gs_topo_memory_mib(topo), 2 * 1024 * 1024);
    cr_assert_str_eq(gs_topo_hostname(topo), "dgx-h100");
    cr_assert_eq(gs_topo_ngpus(topo), 8, "NVSwitches and the BMC VGA are not GPUs");
    cr_assert_str_eq(g0->pci_bus_id, "0000:19:00.0");
    cr_assert_str_eq(g0->model, "NVIDIA H100 80GB HBM3");
    cr_assert_eq(g0->memory_mib, 81559);
    cr_assert_eq(strncmp(g0->uuid, "GPU-", 4), 0);
    cr_assert_eq(g0->device_id, 0x2330);
    cr_assert_eq(g0->numa_node, 0);
    cr_assert_eq(g0->package, 0);
    assert_cores_are_range(g0, 0, 56);
    cr_assert_eq(g4->numa_node, 1);
    cr_assert_eq(g4->package, 1);
    assert_cores_are_range(g4, 56, 56);
    gs_topo_free(topo);
}

Test(topo, numbers_gpus_in_pci_bus_order)
{
    struct gs_topo *topo = load_fixture("pcie-8gpu.xml", 0);
    const char *want[] = {"0000:21:00.0", "0000:22:00.0", "0000:61:00.0", "0000:62:00.0",
                          "0000:a1:00.0", "0000:a2:00.0", "0000:e1:00.0", "0000:e2:00.0"};

    cr_assert_eq(gs_topo_ngpus(topo), 8);
    for (int i = 0; i < 8; i++) {
        const struct gs_topo_gpu *g = gs_topo_gpu(topo, i);
        cr_assert_eq(g->index, i);
        cr_assert_str_eq(g->pci_bus_id, want[i]);
        cr_assert_eq(g->numa_node, i < 4 ? 0 : 1);
    }
    cr_assert_null(gs_topo_gpu(topo, 8));
    cr_assert_null(gs_topo_gpu(topo, -1));
    gs_topo_free(topo);
}

Test(topo, core_lists_its_hardware_threads)
{
    struct gs_topo *topo = load_fixture("dgx-h100.xml", 0);
    const struct gs_topo_core *c0 = gs_topo_core(topo, 0), *c60 = gs_topo_core(topo, 60);

    cr_assert_eq(c0->npus, 2);
    cr_assert_eq(c0->pus[0], 0);
    cr_assert_eq(c0->pus[1], 112);
    cr_assert_eq(gs_topo_core_threads(c0, 1), 1, "--threads-per-core=1: its first thread");
    cr_assert_eq(gs_topo_core_threads(c0, 0), 2, "all of them");
    cr_assert_eq(gs_topo_core_threads(c0, 4), 2, "no more than it has");
    cr_assert_eq(c60->package, 1);
    cr_assert_eq(c60->numa_node, 1);
    cr_assert_null(gs_topo_core(topo, 112));
    gs_topo_free(topo);
}

Test(topo, workstation_and_cpu_only_node)
{
    struct gs_topo *ws = load_fixture("ws-4gpu.xml", 0);
    struct gs_topo *cpu = load_fixture("cpu-only.xml", 0);
    int os = -1;

    cr_assert_eq(gs_topo_ngpus(ws), 4);
    assert_cores_are_range(gs_topo_gpu(ws, 3), 0, 16);
    cr_assert_eq(gs_topo_ngpus(cpu), 0, "a BMC VGA is not a GPU");
    cr_assert_eq(gs_topo_ncores(cpu), 16);
    cr_assert_eq(gs_topo_numa_memory_mib(cpu, 1, &os), 64 * 1024);
    cr_assert_eq(os, 1);
    gs_topo_free(ws);
    gs_topo_free(cpu);
}

Test(topo, fake_gpus_spread_over_numa_nodes)
{
    struct gs_topo *topo = load_fixture("cpu-only.xml", 4);

    cr_assert_eq(gs_topo_ngpus(topo), 4);
    for (int i = 0; i < 4; i++) {
        const struct gs_topo_gpu *g = gs_topo_gpu(topo, i);
        cr_assert_eq(g->numa_node, i < 2 ? 0 : 1);
        assert_cores_are_range(g, i < 2 ? 0 : 8, 8);
        for (int j = 0; j < i; j++)
            cr_assert_str_neq(g->pci_bus_id, gs_topo_gpu(topo, j)->pci_bus_id);
    }
    gs_topo_free(topo);
}

Test(topo, loads_this_machine)
{
    struct gs_topo_opts opts = {.fake_gpus = 2};
    struct gs_topo *topo = NULL;
    struct gs_error err;
    char host[256] = "";

    cr_assert_eq(gs_topo_load(&opts, &topo, &err), 0, "%s", err.msg);
    cr_assert_geq(gs_topo_ncores(topo), 1);
    cr_assert_geq(gs_topo_npus(topo), gs_topo_ncores(topo));
    cr_assert_gt(gs_topo_memory_mib(topo), 0);
    cr_assert_eq(gs_topo_ngpus(topo), 2);
    cr_assert_gt(gs_topo_gpu(topo, 0)->nlocal_cores, 0);
    cr_assert(gs_topo_is_this_system(topo));
    gethostname(host, sizeof(host) - 1);
    cr_assert_str_eq(gs_topo_hostname(topo), host);
    gs_topo_free(topo);
    /* A second load (the worker reloads on SIGHUP) must work the same and leak nothing. */
    cr_assert_eq(gs_topo_load(&opts, &topo, &err), 0, "%s", err.msg);
    cr_assert_eq(gs_topo_ngpus(topo), 2);
    gs_topo_free(topo);
}

Test(topo, rejects_missing_or_invalid_files_naming_them)
{
    struct gs_topo_opts opts = {.xml_path = "/nonexistent/node.xml"};
    struct gs_topo *topo = (struct gs_topo *)0x1;
    struct gs_error err;
    char bad[] = "/tmp/gsched-topo-XXXXXX";
    int fd;

    cr_assert_eq(gs_topo_load(&opts, &topo, &err), -ENOENT);
    cr_assert_not_null(strstr(err.msg, "/nonexistent/node.xml"));
    cr_assert_eq(topo, (struct gs_topo *)0x1);
    fd = mkstemp(bad);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "<topology><garbage", 18), 18);
    close(fd);
    opts.xml_path = bad;
    cr_assert_eq(gs_topo_load(&opts, &topo, &err), -EINVAL);
    cr_assert_not_null(strstr(err.msg, bad));
    unlink(bad);
    opts.xml_path = NULL;
    opts.fake_gpus = 65;
    cr_assert_eq(gs_topo_load(&opts, &topo, &err), -EINVAL);
    gs_topo_free(NULL);
}

/* Files hwloc 2.9.0 itself crashes on (tests/fuzz/hwloc-crashes/: a cpuset without its
 * complete_cpuset, the nodeset twins, a set that is not hex, a DOCTYPE without a system id,
 * a NUMA node without a cpuset, also when its type is written "NUM4"):
 * an error naming the file, and this process goes on. Where a later hwloc loads them, they
 * must still load cleanly. */
Test(topo, a_file_hwloc_crashes_on_is_an_error_not_a_crash)
{
    static const char *names[] = {"pu-without-complete-cpuset.xml",
                                  "numa-without-complete-nodeset.xml",
                                  "nodeset-not-hex.xml",
                                  "doctype-without-system-id.xml",
                                  "machine-complete-cpuset-not-hex.xml",
                                  "numa-without-cpuset.xml",
                                  "numa-typed-num4.xml"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char path[512];
        struct gs_topo_opts opts = {.xml_path = path};
        struct gs_topo *topo = NULL;
        struct gs_error err;
        int rc;

        snprintf(path, sizeof(path), "%s/../fuzz/hwloc-crashes/%s", GSCHED_TOPOLOGIES, names[i]);
        rc = gs_topo_load(&opts, &topo, &err);
        if (rc == 0) {
            gs_topo_free(topo);
            continue;
        }
        cr_assert_eq(rc, -EINVAL, "%s: %d %s", names[i], rc, err.msg);
        cr_assert_not_null(strstr(err.msg, names[i]), "%s", err.msg);
        cr_assert_null(topo);
    }
}

/* cpu-only.xml with from replaced by to, loaded from a temporary file: rc, and err. */
static int load_edited(const char *from, const char *to, struct gs_error *err)
{
    char src[512], path[] = "/tmp/gsched-topo-XXXXXX", *text = NULL, *at;
    struct gs_topo_opts opts = {.xml_path = path};
    struct gs_topo *topo = NULL;
    FILE *f;
    long len;
    int fd, rc;

    snprintf(src, sizeof(src), "%s/cpu-only.xml", GSCHED_TOPOLOGIES);
    f = fopen(src, "rb");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    len = ftell(f);
    rewind(f);
    text = calloc(1, (size_t)len + 1);
    cr_assert_not_null(text);
    cr_assert_eq(fread(text, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    at = strstr(text, from);
    cr_assert_not_null(at, "%s is not in cpu-only.xml", from);
    fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    f = fdopen(fd, "w");
    cr_assert_not_null(f);
    fprintf(f, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    fclose(f);
    free(text);
    rc = gs_topo_load(&opts, &topo, err);
    unlink(path);
    if (rc == 0)
        gs_topo_free(topo);
    else
        cr_assert_null(topo);
    return rc;
}

/* Tasks are bound to PU numbers: a PU or NUMA node without a usable one is refused. */
Test(topo, pus_and_numa_nodes_need_an_os_index_that_fits)
{
    struct gs_error err;

    cr_assert_eq(
        load_edited("type=\"NUMANode\" os_index=\"1\"", "type=\"NUMANode\" os_index=\"7\"", &err),
        0, "%s", err.msg);
    cr_assert_eq(load_edited("type=\"PU\" os_index=\"0\" ", "type=\"PU\" ", &err), -EINVAL);
    cr_assert_not_null(strstr(err.msg, "PU L#0 has no os_index"), "%s", err.msg);
    cr_assert_eq(load_edited("type=\"NUMANode\" os_index=\"1\"",
                             "type=\"NUMANode\" os_index=\"3000000000\"", &err),
                 -EINVAL);
    cr_assert_not_null(strstr(err.msg, "NUMANode L#1: os_index 3000000000 is too large"), "%s",
                       err.msg);
}

/* Every pair's class (and NVLinks) against a matrix: NV is GS_TOPO_LINK_NVLINK. */
static void assert_gpu_link(const struct gs_topo *topo, int a, int b, int want, int want_nvlinks)
{
    int nvlinks = -1, ba = -1;

    cr_assert_eq(gs_topo_gpu_link(topo, a, b, &nvlinks), want, "gpu %d-%d is %s, want %s", a, b,
                 gs_topo_link_name(gs_topo_gpu_link(topo, a, b, NULL)), gs_topo_link_name(want));
    cr_assert_eq(nvlinks, want_nvlinks, "gpu %d-%d has %d NVLinks", a, b, nvlinks);
    cr_assert_eq(gs_topo_gpu_link(topo, b, a, &ba), want, "links are symmetric");
    cr_assert_eq(ba, want_nvlinks);
}

static void assert_nic(const struct gs_topo_nic *nic, const char *name, const char *ib,
                       const char *bus_id, int numa)
{
    cr_assert_not_null(nic);
    cr_assert_str_eq(nic->name, name);
    cr_assert_str_eq(nic->ib_device, ib);
    cr_assert_str_eq(nic->pci_bus_id, bus_id);
    cr_assert_eq(nic->numa_node, numa);
}

Test(topo, nvswitch_server_has_every_gpu_pair_on_18_nvlinks)
{
    struct gs_topo *topo = load_fixture("dgx-h100.xml", 0);

    for (int a = 0; a < 8; a++)
        for (int b = a + 1; b < 8; b++)
            assert_gpu_link(topo, a, b, GS_TOPO_LINK_NVLINK, 18);
    gs_topo_free(topo);
}

Test(topo, nvswitch_server_nics_sit_beside_their_gpu_pairs)
{
    struct gs_topo *topo = load_fixture("dgx-h100.xml", 0);

    cr_assert_eq(gs_topo_nnics(topo), 4);
    assert_nic(gs_topo_nic(topo, 0), "ibp27s0", "mlx5_0", "0000:1b:00.0", 0);
    assert_nic(gs_topo_nic(topo, 3), "ibp219s0", "mlx5_3", "0000:db:00.0", 1);
    cr_assert_eq(gs_topo_nic(topo, 2)->index, 2);
    cr_assert_null(gs_topo_nic(topo, 4));
    for (int g = 0; g < 8; g++)
        cr_assert_eq(gs_topo_gpu_nearest_nic(topo, g), g / 2, "gpu %d", g);
    cr_assert_eq(gs_topo_gpu_nic_link(topo, 0, 0), GS_TOPO_LINK_PIX);
    cr_assert_eq(gs_topo_gpu_nic_link(topo, 0, 1), GS_TOPO_LINK_NODE);
    cr_assert_eq(gs_topo_gpu_nic_link(topo, 0, 2), GS_TOPO_LINK_SYS);
    cr_assert_eq(gs_topo_gpu_nic_link(topo, 7, 3), GS_TOPO_LINK_PIX);
    gs_topo_free(topo);
}

Test(topo, pci_path_runs_from_the_gpu_up_to_its_host_bridge)
{
    struct gs_topo *topo = load_fixture("dgx-h100.xml", 0);
    const struct gs_topo_gpu *g1 = gs_topo_gpu(topo, 1);
    const char *want[] = {"0000:18:01.0", "0000:17:00.0", "0000:16:01.0", "0000:[16-1b]"};

    cr_assert_eq(g1->npci_path, 4);
    for (int i = 0; i < 4; i++) {
        cr_assert_str_eq(g1->pci_path[i].id, want[i]);
        cr_assert_eq(g1->pci_path[i].host, i == 3);
    }
    cr_assert_eq(gs_topo_nic(topo, 0)->npci_path, 4);
    cr_assert_str_eq(gs_topo_nic(topo, 0)->pci_path[0].id, "0000:18:02.0");
    gs_topo_free(topo);
}

Test(topo, pcie_server_classes_follow_its_switch_tree)
{
    struct gs_topo *topo = load_fixture("pcie-8gpu.xml", 0);

    assert_gpu_link(topo, 0, 1, GS_TOPO_LINK_PIX, 0);
    assert_gpu_link(topo, 2, 3, GS_TOPO_LINK_PIX, 0);
    assert_gpu_link(topo, 0, 2, GS_TOPO_LINK_PXB, 0);
    assert_gpu_link(topo, 1, 3, GS_TOPO_LINK_PXB, 0);
    assert_gpu_link(topo, 5, 6, GS_TOPO_LINK_PXB, 0);
    assert_gpu_link(topo, 0, 7, GS_TOPO_LINK_SYS, 0);
    assert_gpu_link(topo, 3, 4, GS_TOPO_LINK_SYS, 0);
    cr_assert_eq(gs_topo_nnics(topo), 2);
    assert_nic(gs_topo_nic(topo, 1), "ens1f0", "mlx5_1", "0000:90:00.0", 1);
    for (int g = 0; g < 8; g++) {
        cr_assert_eq(gs_topo_gpu_nearest_nic(topo, g), g < 4 ? 0 : 1, "gpu %d", g);
        cr_assert_eq(gs_topo_gpu_nic_link(topo, g, g < 4 ? 0 : 1), GS_TOPO_LINK_PHB);
        cr_assert_eq(gs_topo_gpu_nic_link(topo, g, g < 4 ? 1 : 0), GS_TOPO_LINK_SYS);
    }
    gs_topo_free(topo);
}

Test(topo, workstation_nvlink_bridges_pair_gpus_over_separate_host_bridges)
{
    struct gs_topo *topo = load_fixture("ws-4gpu.xml", 0);

    assert_gpu_link(topo, 0, 1, GS_TOPO_LINK_NVLINK, 4);
    assert_gpu_link(topo, 2, 3, GS_TOPO_LINK_NVLINK, 4);
    assert_gpu_link(topo, 0, 2, GS_TOPO_LINK_NODE, 0);
    assert_gpu_link(topo, 1, 3, GS_TOPO_LINK_NODE, 0);
    cr_assert_eq(gs_topo_nnics(topo), 0);
    cr_assert_eq(gs_topo_gpu_nearest_nic(topo, 0), -1, "no NIC: none is nearest");
    gs_topo_free(topo);
}

Test(topo, cpu_only_node_lists_its_nic)
{
    struct gs_topo *topo = load_fixture("cpu-only.xml", 0);

    cr_assert_eq(gs_topo_nnics(topo), 1);
    assert_nic(gs_topo_nic(topo, 0), "ens1f0", "mlx5_0", "0000:41:00.0", 0);
    cr_assert_eq(gs_topo_nic(topo, 0)->package, 0);
    gs_topo_free(topo);
}

Test(topo, fake_gpus_are_node_or_sys_by_numa_without_nvlink)
{
    struct gs_topo *topo = load_fixture("dgx-h100.xml", 4);

    cr_assert_eq(gs_topo_gpu(topo, 0)->npci_path, 0);
    assert_gpu_link(topo, 0, 1, GS_TOPO_LINK_NODE, 0);
    assert_gpu_link(topo, 0, 2, GS_TOPO_LINK_SYS, 0);
    /* The real NICs stay; a synthetic GPU shares no bridge with them. */
    cr_assert_eq(gs_topo_nnics(topo), 4);
    cr_assert_eq(gs_topo_gpu_nic_link(topo, 0, 0), GS_TOPO_LINK_NODE);
    cr_assert_eq(gs_topo_gpu_nearest_nic(topo, 3), 2);
    gs_topo_free(topo);
}

Test(topo, link_queries_reject_out_of_range_and_self)
{
    struct gs_topo *topo = load_fixture("ws-4gpu.xml", 0);
    int nvlinks = 7;

    cr_assert_eq(gs_topo_gpu_link(topo, 1, 1, &nvlinks), -EINVAL);
    cr_assert_eq(gs_topo_gpu_link(topo, 0, 4, &nvlinks), -EINVAL);
    cr_assert_eq(gs_topo_gpu_link(topo, -1, 0, &nvlinks), -EINVAL);
    cr_assert_eq(nvlinks, 7, "not written on failure");
    cr_assert_eq(gs_topo_gpu_nic_link(topo, 0, 0), -EINVAL);
    cr_assert_eq(gs_topo_gpu_nearest_nic(topo, 9), -1);
    cr_assert_str_eq(gs_topo_link_name(GS_TOPO_LINK_PXB), "PXB");
    cr_assert_str_eq(gs_topo_link_name(0), "?");
    gs_topo_free(topo);
}

static int load_cpus(const char *name, const char *cpus, struct gs_topo **ret, struct gs_error *err)
{
    char path[512];
    struct gs_topo_opts opts = {.xml_path = path, .cpus = cpus};

    snprintf(path, sizeof(path), "%s/%s", GSCHED_TOPOLOGIES, name);
    return gs_topo_load(&opts, ret, err);
}

/* A worker offering part of a machine (worker.cpus): its cores shrink, its devices stay. */
Test(topo, cpus_keep_their_cores_and_every_device)
{
    struct gs_topo *topo = NULL;
    struct gs_error err;

    cr_assert_eq(load_cpus("dgx-h100.xml", "56-59", &topo, &err), 0, "%s", err.msg);
    cr_assert_eq(gs_topo_ncores(topo), 4);
    for (int i = 0; i < gs_topo_ncores(topo); i++) {
        cr_assert_eq(gs_topo_core(topo, i)->package, 1, "core %d", i);
        cr_assert_eq(gs_topo_core(topo, i)->npus, 1, "only the listed hardware thread");
    }
    cr_assert_eq(gs_topo_ngpus(topo), 8, "GPUs stay");
    cr_assert_eq(gs_topo_nnics(topo) > 0, true, "NICs stay");
    gs_topo_free(topo);
    topo = NULL;
    cr_assert_eq(load_cpus("ws-4gpu.xml", "0-3", &topo, &err), 0, "%s", err.msg);
    cr_assert_eq(gs_topo_ncores(topo), 4);
    cr_assert_eq(gs_topo_ngpus(topo), 4);
    gs_topo_free(topo);
    topo = NULL;
    cr_assert_eq(load_cpus("ws-4gpu.xml", "0-3,999", &topo, &err), -EINVAL);
    cr_assert(strstr(err.msg, "cpus '0-3,999': names CPUs this topology does not have") != NULL,
              "%s", err.msg);
    cr_assert_null(topo);
    cr_assert_eq(load_cpus("ws-4gpu.xml", "two", &topo, &err), -EINVAL);
    cr_assert(strstr(err.msg, "expected a list of CPU numbers") != NULL, "%s", err.msg);
    cr_assert_eq(load_cpus("ws-4gpu.xml", "", &topo, &err), -EINVAL);
    cr_assert_null(topo);
}
