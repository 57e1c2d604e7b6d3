/*
 * test_register.c: the NodeRegister a worker sends describes its topology (GPUs with bus
 * ids, NUMA nodes with their cores, features, GPU pair links, NICs with how each GPU reaches
 * them) and its running tasks, and survives packing.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "worker/register.h"

Test(register, describes_the_node_and_survives_the_wire)
{
    struct gs_topo_opts opts = {.xml_path = GSCHED_TOPOLOGIES "/dgx-h100.xml"};
    char *features[] = {"h100", "ib", NULL};
    struct wrk_register_info info = {
        .node_name = "node1", .address = "10.0.0.1", .features = features, .worker_start_ms = 123};
    struct gs_topo *topo = NULL;
    struct gs_error err;
    Gs__NodeRegister *msg = NULL, *back;
    uint8_t *buf;
    size_t len;

    cr_assert_eq(gs_topo_load(&opts, &topo, &err), 0, "%s", err.msg);
    info.topo = topo;
    cr_assert_eq(wrk_register_build(&info, &msg), 0);
    cr_assert_eq(wrk_register_add_running(msg, 7, 2, 3, 4242, 99, 1), 0);
    len = gs__node_register__get_packed_size(msg);
    buf = malloc(len);
    gs__node_register__pack(msg, buf);
    back = gs__node_register__unpack(NULL, len, buf);
    free(buf);
    cr_assert_not_null(back);
    cr_assert_str_eq(back->topology->node_name, "node1");
    cr_assert_str_eq(back->topology->hostname, "dgx-h100");
    cr_assert_eq(back->topology->sockets, 2);
    cr_assert_eq(back->topology->cores, 112);
    cr_assert_eq(back->topology->threads, 224);
    cr_assert_eq(back->topology->n_gpus, 8);
    cr_assert_str_eq(back->topology->gpus[4]->pci_bus_id, "0000:99:00.0");
    cr_assert_eq(back->topology->gpus[4]->numa_node, 1);
    cr_assert_eq(back->topology->gpus[4]->n_local_cores, 56);
    cr_assert_eq(back->topology->gpus[4]->local_cores[0], 56);
    cr_assert_eq(back->topology->n_numa_nodes, 2);
    cr_assert_eq(back->topology->numa_nodes[1]->socket, 1);
    cr_assert_eq(back->topology->numa_nodes[1]->n_cores, 56);
    cr_assert_eq(back->topology->n_features, 2);
    cr_assert_str_eq(back->topology->features[1], "ib");
    cr_assert_eq(back->n_running, 1);
    cr_assert_eq(back->running[0]->job_id, 7);
    cr_assert_eq(back->running[0]->pid, 4242);
    cr_assert_eq(back->running[0]->step, 2, "a step task says which step");
    cr_assert_eq(back->running[0]->rank, 3);
    cr_assert_eq(back->worker_start_ms, 123);
    gs__node_register__free_unpacked(back, NULL);
    wrk_register_free(msg);
    gs_topo_free(topo);
}

Test(register, cpu_only_node_without_features)
{
    struct gs_topo_opts opts = {.xml_path = GSCHED_TOPOLOGIES "/cpu-only.xml"};
    struct wrk_register_info info = {.node_name = "n9", .address = "n9"};
    struct gs_topo *topo = NULL;
    Gs__NodeRegister *msg = NULL;

    cr_assert_eq(gs_topo_load(&opts, &topo, NULL), 0);
    info.topo = topo;
    cr_assert_eq(wrk_register_build(&info, &msg), 0);
    cr_assert_eq(msg->topology->n_gpus, 0);
    cr_assert_eq(msg->topology->n_gpu_links, 0);
    cr_assert_eq(msg->topology->n_nics, 1);
    cr_assert_eq(msg->topology->nics[0]->n_gpu_links, 0);
    cr_assert_eq(msg->topology->n_features, 0);
    cr_assert_eq(msg->topology->cores, 16);
    wrk_register_free(msg);
    gs_topo_free(topo);
}

static Gs__NodeRegister *build_fixture(const char *name, struct gs_topo **ret_topo)
{
    char path[512];
    struct gs_topo_opts opts = {.xml_path = path};
    struct wrk_register_info info = {.node_name = "n1", .address = "n1"};
    Gs__NodeRegister *msg = NULL;

    snprintf(path, sizeof(path), "%s/%s", GSCHED_TOPOLOGIES, name);
    cr_assert_eq(gs_topo_load(&opts, ret_topo, NULL), 0, "%s", name);
    info.topo = *ret_topo;
    cr_assert_eq(wrk_register_build(&info, &msg), 0);
    return msg;
}

static const Gs__GpuLink *pair(const Gs__NodeTopology *t, uint32_t a, uint32_t b)
{
    for (size_t i = 0; i < t->n_gpu_links; i++)
        if (t->gpu_links[i]->gpu_a == a && t->gpu_links[i]->gpu_b == b)
            return t->gpu_links[i];
    cr_assert_fail("no link %u-%u", a, b);
    return NULL;
}

Test(register, sends_every_gpu_pair_once_and_the_nics)
{
    struct gs_topo *topo = NULL;
    Gs__NodeRegister *msg = build_fixture("dgx-h100.xml", &topo);
    const Gs__NodeTopology *t = msg->topology;

    cr_assert_eq(t->n_gpu_links, 28, "8 GPUs: 28 pairs");
    for (size_t i = 0; i < t->n_gpu_links; i++) {
        cr_assert_lt(t->gpu_links[i]->gpu_a, t->gpu_links[i]->gpu_b);
        cr_assert_eq(t->gpu_links[i]->type, GS__LINK_TYPE__LINK_TYPE_NVLINK);
        cr_assert_eq(t->gpu_links[i]->nvlink_count, 18);
    }
    cr_assert_eq(pair(t, 0, 7)->gpu_a, 0);
    cr_assert_eq(t->n_nics, 4);
    cr_assert_str_eq(t->nics[1]->name, "ibp91s0");
    cr_assert_str_eq(t->nics[1]->ib_device, "mlx5_1");
    cr_assert_str_eq(t->nics[1]->pci_bus_id, "0000:5b:00.0");
    cr_assert_eq(t->nics[1]->numa_node, 0);
    cr_assert_eq(t->nics[3]->socket, 1);
    cr_assert_eq(t->nics[0]->n_gpu_links, 8);
    cr_assert_eq(t->nics[0]->gpu_links[1], GS__LINK_TYPE__LINK_TYPE_PCIE_SWITCH);
    cr_assert_eq(t->nics[0]->gpu_links[2], GS__LINK_TYPE__LINK_TYPE_SAME_NUMA);
    cr_assert_eq(t->nics[0]->gpu_links[4], GS__LINK_TYPE__LINK_TYPE_CROSS_SOCKET);
    for (size_t g = 0; g < t->n_gpus; g++)
        cr_assert_eq(t->gpus[g]->nearest_nic, (int32_t)g / 2);
    wrk_register_free(msg);
    gs_topo_free(topo);
}

Test(register, maps_each_pcie_class_to_its_link_type)
{
    struct gs_topo *topo = NULL;
    Gs__NodeRegister *msg = build_fixture("pcie-8gpu.xml", &topo);
    const Gs__NodeTopology *t = msg->topology;

    cr_assert_eq(pair(t, 0, 1)->type, GS__LINK_TYPE__LINK_TYPE_PCIE_SWITCH);
    cr_assert_eq(pair(t, 0, 2)->type, GS__LINK_TYPE__LINK_TYPE_PCIE_MULTI_SWITCH);
    cr_assert_eq(pair(t, 0, 4)->type, GS__LINK_TYPE__LINK_TYPE_CROSS_SOCKET);
    cr_assert_eq(pair(t, 0, 1)->nvlink_count, 0);
    cr_assert_eq(t->nics[1]->gpu_links[5], GS__LINK_TYPE__LINK_TYPE_PCIE_HOST);
    cr_assert_eq(t->gpus[5]->nearest_nic, 1);
    wrk_register_free(msg);
    gs_topo_free(topo);
    msg = build_fixture("ws-4gpu.xml", &topo);
    t = msg->topology;
    cr_assert_eq(t->n_gpu_links, 6);
    cr_assert_eq(pair(t, 2, 3)->type, GS__LINK_TYPE__LINK_TYPE_NVLINK);
    cr_assert_eq(pair(t, 2, 3)->nvlink_count, 4);
    cr_assert_eq(pair(t, 1, 2)->type, GS__LINK_TYPE__LINK_TYPE_SAME_NUMA);
    cr_assert_eq(t->n_nics, 0);
    cr_assert_eq(t->gpus[0]->nearest_nic, -1);
    wrk_register_free(msg);
    gs_topo_free(topo);
}
