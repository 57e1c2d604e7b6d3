/*
 * test_register.c: the NodeRegister a worker sends describes its topology (GPUs with bus
 * ids, NUMA nodes with their cores, features) and its running tasks, and survives packing.
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
    cr_assert_eq(wrk_register_add_running(msg, 7, 3, 4242, 99, 1), 0);
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
    cr_assert_eq(msg->topology->n_features, 0);
    cr_assert_eq(msg->topology->cores, 16);
    wrk_register_free(msg);
    gs_topo_free(topo);
}
