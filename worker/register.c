/*
 * register.c: topology to NodeRegister (see register.h). Every string, array and
 * sub-message is its own allocation, which is exactly what free_unpacked releases.
 * Link classes travel as the proto's LinkType: gpu_links for every GPU pair (a < b), and
 * per NIC how each GPU reaches it, so that `gsched nodes --topology` can draw the whole
 * `nvidia-smi topo -m` matrix from what the scheduler stored.
 */
#include "worker/register.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static char *dup_str(const char *s, int *rc)
{
    char *d = strdup(s != NULL ? s : "");

    if (d == NULL)
        *rc = -ENOMEM;
    return d;
}

static uint32_t *dup_cores(const int *cores, int n, size_t *ret_n, int *rc)
{
    uint32_t *v = malloc((n > 0 ? (size_t)n : 1) * sizeof(*v));

    if (v == NULL) {
        *rc = -ENOMEM;
        return NULL;
    }
    for (int i = 0; i < n; i++)
        v[i] = (uint32_t)cores[i];
    *ret_n = (size_t)n;
    return v;
}

/* gs_topo_link to the wire's LinkType; PXB has the value added last (see gsched.proto). */
static Gs__LinkType link_type(int link)
{
    switch (link) {
    case GS_TOPO_LINK_NVLINK:
        return GS__LINK_TYPE__LINK_TYPE_NVLINK;
    case GS_TOPO_LINK_PIX:
        return GS__LINK_TYPE__LINK_TYPE_PCIE_SWITCH;
    case GS_TOPO_LINK_PXB:
        return GS__LINK_TYPE__LINK_TYPE_PCIE_MULTI_SWITCH;
    case GS_TOPO_LINK_PHB:
        return GS__LINK_TYPE__LINK_TYPE_PCIE_HOST;
    case GS_TOPO_LINK_NODE:
        return GS__LINK_TYPE__LINK_TYPE_SAME_NUMA;
    case GS_TOPO_LINK_SYS:
        return GS__LINK_TYPE__LINK_TYPE_CROSS_SOCKET;
    default:
        return GS__LINK_TYPE__LINK_TYPE_UNSPECIFIED;
    }
}

static Gs__Gpu *build_gpu(const struct gs_topo *topo, const struct gs_topo_gpu *g, int *rc)
{
    Gs__Gpu *m = malloc(sizeof(*m));

    if (m == NULL) {
        *rc = -ENOMEM;
        return NULL;
    }
    gs__gpu__init(m);
    m->index = (uint32_t)g->index;
    m->uuid = dup_str(g->uuid, rc);
    m->model = dup_str(g->model, rc);
    m->pci_bus_id = dup_str(g->pci_bus_id, rc);
    m->numa_node = g->numa_node;
    m->socket = g->package;
    m->memory_mib = g->memory_mib;
    m->local_cores = dup_cores(g->local_cores, g->nlocal_cores, &m->n_local_cores, rc);
    m->nearest_nic = gs_topo_gpu_nearest_nic(topo, g->index);
    return m;
}

static Gs__Nic *build_nic(const struct gs_topo *topo, const struct gs_topo_nic *k, int *rc)
{
    Gs__Nic *m = malloc(sizeof(*m));
    int ngpus = gs_topo_ngpus(topo);

    if (m == NULL) {
        *rc = -ENOMEM;
        return NULL;
    }
    gs__nic__init(m);
    m->index = (uint32_t)k->index;
    m->name = dup_str(k->name, rc);
    m->ib_device = dup_str(k->ib_device, rc);
    m->pci_bus_id = dup_str(k->pci_bus_id, rc);
    m->numa_node = k->numa_node;
    m->socket = k->package;
    m->gpu_links = malloc((ngpus > 0 ? (size_t)ngpus : 1) * sizeof(*m->gpu_links));
    if (m->gpu_links == NULL) {
        *rc = -ENOMEM;
        return m;
    }
    for (int g = 0; g < ngpus; g++)
        m->gpu_links[g] = link_type(gs_topo_gpu_nic_link(topo, g, k->index));
    m->n_gpu_links = (size_t)ngpus;
    return m;
}

static Gs__GpuLink *build_gpu_link(const struct gs_topo *topo, int a, int b, int *rc)
{
    Gs__GpuLink *m = malloc(sizeof(*m));
    int nvlinks = 0;

    if (m == NULL) {
        *rc = -ENOMEM;
        return NULL;
    }
    gs__gpu_link__init(m);
    m->gpu_a = (uint32_t)a;
    m->gpu_b = (uint32_t)b;
    m->type = link_type(gs_topo_gpu_link(topo, a, b, &nvlinks));
    m->nvlink_count = (uint32_t)nvlinks;
    return m;
}

/* gpu_links for every pair a < b, and the nics with how each GPU reaches them. */
static void build_links(Gs__NodeTopology *t, const struct gs_topo *topo, int *rc)
{
    size_t ngpus = (size_t)gs_topo_ngpus(topo), nnics = (size_t)gs_topo_nnics(topo);

    t->gpu_links = calloc(ngpus * ngpus / 2 + 1, sizeof(*t->gpu_links));
    t->nics = calloc(nnics + 1, sizeof(*t->nics));
    if (t->gpu_links == NULL || t->nics == NULL) {
        *rc = -ENOMEM;
        return;
    }
    for (int a = 0; *rc == 0 && a < (int)ngpus; a++) {
        for (int b = a + 1; *rc == 0 && b < (int)ngpus; b++) {
            t->gpu_links[t->n_gpu_links] = build_gpu_link(topo, a, b, rc);
            t->n_gpu_links += t->gpu_links[t->n_gpu_links] != NULL;
        }
    }
    for (int k = 0; *rc == 0 && k < (int)nnics; k++) {
        t->nics[k] = build_nic(topo, gs_topo_nic(topo, k), rc);
        t->n_nics += t->nics[k] != NULL;
    }
}

/* The NUMA node's cores are those whose numa_node matches its OS index. */
static Gs__NumaNode *build_numa(const struct gs_topo *topo, int i, int *rc)
{
    Gs__NumaNode *m = malloc(sizeof(*m));
    int os = -1, ncores = gs_topo_ncores(topo), n = 0;
    int *cores = malloc((ncores > 0 ? (size_t)ncores : 1) * sizeof(int));

    if (m == NULL || cores == NULL) {
        free(m);
        free(cores);
        *rc = -ENOMEM;
        return NULL;
    }
    gs__numa_node__init(m);
    m->memory_mib = gs_topo_numa_memory_mib(topo, i, &os);
    m->os_index = (uint32_t)os;
    for (int c = 0; c < ncores; c++) {
        const struct gs_topo_core *core = gs_topo_core(topo, c);
        if (core->numa_node == os) {
            m->socket = (uint32_t)(core->package >= 0 ? core->package : 0);
            cores[n++] = c;
        }
    }
    m->cores = dup_cores(cores, n, &m->n_cores, rc);
    free(cores);
    return m;
}

static void build_lists(Gs__NodeTopology *t, const struct wrk_register_info *info, int *rc)
{
    const struct gs_topo *topo = info->topo;
    size_t nfeat = 0;

    t->gpus = calloc((size_t)gs_topo_ngpus(topo) + 1, sizeof(*t->gpus));
    t->numa_nodes = calloc((size_t)gs_topo_nnuma(topo) + 1, sizeof(*t->numa_nodes));
    while (info->features != NULL && info->features[nfeat] != NULL)
        nfeat++;
    t->features = calloc(nfeat + 1, sizeof(*t->features));
    if (t->gpus == NULL || t->numa_nodes == NULL || t->features == NULL) {
        *rc = -ENOMEM;
        return;
    }
    for (int i = 0; *rc == 0 && i < gs_topo_ngpus(topo); i++) {
        t->gpus[i] = build_gpu(topo, gs_topo_gpu(topo, i), rc);
        t->n_gpus += t->gpus[i] != NULL;
    }
    for (int i = 0; *rc == 0 && i < gs_topo_nnuma(topo); i++) {
        t->numa_nodes[i] = build_numa(topo, i, rc);
        t->n_numa_nodes += t->numa_nodes[i] != NULL;
    }
    for (size_t i = 0; *rc == 0 && i < nfeat; i++) {
        t->features[i] = dup_str(info->features[i], rc);
        t->n_features += t->features[i] != NULL;
    }
    if (*rc == 0)
        build_links(t, topo, rc);
}

int wrk_register_build(const struct wrk_register_info *info, Gs__NodeRegister **ret_msg)
{
    Gs__NodeRegister *msg = malloc(sizeof(*msg));
    Gs__NodeTopology *t = malloc(sizeof(*t));
    int rc = 0;

    if (msg == NULL || t == NULL) {
        free(msg);
        free(t);
        return -ENOMEM;
    }
    gs__node_register__init(msg);
    gs__node_topology__init(t);
    msg->topology = t;
    msg->worker_start_ms = info->worker_start_ms;
    t->node_name = dup_str(info->node_name, &rc);
    t->hostname = dup_str(gs_topo_hostname(info->topo), &rc);
    t->address = dup_str(info->address, &rc);
    t->sockets = (uint32_t)gs_topo_npackages(info->topo);
    t->cores = (uint32_t)gs_topo_ncores(info->topo);
    t->threads = (uint32_t)gs_topo_npus(info->topo);
    t->memory_mib = gs_topo_memory_mib(info->topo);
    t->tmp_disk_mib = info->tmp_disk_mib;
    if (rc == 0)
        build_lists(t, info, &rc);
    if (rc < 0) {
        wrk_register_free(msg);
        return rc;
    }
    *ret_msg = msg;
    return 0;
}

int wrk_register_add_running(Gs__NodeRegister *msg, uint64_t job_id, uint32_t step, uint32_t rank,
                             int32_t pid, uint64_t start_ms, uint32_t attempt)
{
    Gs__TaskRef **v = realloc(msg->running, (msg->n_running + 1) * sizeof(*v));
    Gs__TaskRef *t;

    if (v == NULL)
        return -ENOMEM;
    msg->running = v;
    t = malloc(sizeof(*t));
    if (t == NULL)
        return -ENOMEM;
    gs__task_ref__init(t);
    t->job_id = job_id;
    t->step = step;
    t->rank = rank;
    t->pid = pid;
    t->start_time_ms = start_ms;
    t->attempt = attempt;
    msg->running[msg->n_running++] = t;
    return 0;
}

void wrk_register_free(Gs__NodeRegister *msg)
{
    if (msg != NULL)
        gs__node_register__free_unpacked(msg, NULL);
}
