/*
 * test_topo.c: topology discovery on the hwloc XML fixtures in tests/topologies/ (an 8-GPU
 * NVSwitch server, an 8-GPU PCIe server, a 4-GPU workstation, a CPU-only node), on this
 * machine, and with synthetic GPUs.
 */
#include <criterion/criterion.h>
#include <stdio.h>
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
