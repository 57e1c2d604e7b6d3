/*
 * topo.c: struct gs_topo from hwloc. Loads the hwloc topology (system or XML), copies what
 * gsched needs into plain arrays (cores, GPUs, NICs, then the link matrices of
 * topo_links.c), and destroys the hwloc handle before returning, so the rest of gsched
 * never touches hwloc and a gs_topo is cheap to keep and share read-only.
 *
 * I/O objects (PCI devices, OS devices) appear only when an I/O type filter is set before
 * the load; KEEP_ALL keeps the PCIe switches too, which placement needs for link classes.
 */
#include "common/topo_internal.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sort.h"

#define FAKE_GPUS_MAX 64
#define FAKE_GPU_MIB 81920

static void free_gpus(struct gs_topo *topo)
{
    for (int i = 0; topo->gpus != NULL && i < topo->ngpus; i++) {
        free((int *)topo->gpus[i].local_cores);
        free((struct gs_topo_bridge *)topo->gpus[i].pci_path);
    }
    free(topo->gpus);
    topo->gpus = NULL;
    topo->ngpus = 0;
}

void gs_topo_free(struct gs_topo *topo)
{
    if (topo == NULL)
        return;
    for (int i = 0; topo->cores != NULL && i < topo->ncores; i++)
        free((int *)topo->cores[i].pus);
    free_gpus(topo);
    for (int i = 0; topo->nics != NULL && i < topo->nnics; i++)
        free((struct gs_topo_bridge *)topo->nics[i].pci_path);
    free(topo->numa);
    free(topo->cores);
    free(topo->nics);
    free(topo->gpu_links);
    free(topo->nvlinks);
    free(topo->nic_links);
    free(topo);
}

static int os_index_of_ancestor(hwloc_obj_t obj, hwloc_obj_type_t type)
{
    hwloc_obj_t a = obj->type == type ? obj : hwloc_get_ancestor_obj_by_type(NULL, type, obj);

    return a != NULL ? (int)a->os_index : -1;
}

static int first_node(hwloc_const_nodeset_t nodeset)
{
    return nodeset != NULL ? hwloc_bitmap_first(nodeset) : -1;
}

/* Copies the OS indices of the PUs inside cpuset into a new array. */
static int collect_pus(hwloc_topology_t ht, hwloc_const_cpuset_t cpuset, struct gs_topo_core *core)
{
    int n = hwloc_get_nbobjs_inside_cpuset_by_type(ht, cpuset, HWLOC_OBJ_PU), i = 0;
    int *pus = calloc(n > 0 ? (size_t)n : 1, sizeof(int));
    hwloc_obj_t pu = NULL;

    if (pus == NULL)
        return -ENOMEM;
    while (i < n &&
           (pu = hwloc_get_next_obj_inside_cpuset_by_type(ht, cpuset, HWLOC_OBJ_PU, pu)) != NULL)
        pus[i++] = (int)pu->os_index;
    core->pus = pus;
    core->npus = i;
    return 0;
}

/* Cores, or PUs standing in for cores on machines where hwloc reports none. */
static int load_cores(hwloc_topology_t ht, struct gs_topo *topo)
{
    hwloc_obj_type_t type = HWLOC_OBJ_CORE;
    int n = hwloc_get_nbobjs_by_type(ht, type);

    if (n <= 0) {
        type = HWLOC_OBJ_PU;
        n = hwloc_get_nbobjs_by_type(ht, type);
    }
    if (n <= 0)
        return -ENODEV;
    topo->cores = calloc((size_t)n, sizeof(*topo->cores));
    if (topo->cores == NULL)
        return -ENOMEM;
    for (int i = 0; i < n; i++) {
        hwloc_obj_t obj = hwloc_get_obj_by_type(ht, type, (unsigned)i);
        struct gs_topo_core *core = &topo->cores[i];
        int rc;

        core->os_index = (int)obj->os_index;
        core->package = os_index_of_ancestor(obj, HWLOC_OBJ_PACKAGE);
        core->numa_node = first_node(obj->nodeset);
        topo->ncores = i + 1;
        rc = collect_pus(ht, obj->cpuset, core);
        if (rc < 0)
            return rc;
    }
    topo->npus = hwloc_get_nbobjs_by_type(ht, HWLOC_OBJ_PU);
    return 0;
}

static int load_numa(hwloc_topology_t ht, struct gs_topo *topo)
{
    int n = hwloc_get_nbobjs_by_type(ht, HWLOC_OBJ_NUMANODE);

    topo->numa = calloc(n > 0 ? (size_t)n : 1, sizeof(*topo->numa));
    if (topo->numa == NULL)
        return -ENOMEM;
    for (int i = 0; i < n; i++) {
        hwloc_obj_t obj = hwloc_get_obj_by_type(ht, HWLOC_OBJ_NUMANODE, (unsigned)i);

        topo->numa[i].os_index = (int)obj->os_index;
        topo->numa[i].memory_mib = obj->attr->numanode.local_memory >> 20;
        topo->memory_mib += topo->numa[i].memory_mib;
    }
    topo->nnuma = n > 0 ? n : 0;
    topo->npackages = hwloc_get_nbobjs_by_type(ht, HWLOC_OBJ_PACKAGE);
    if (topo->npackages < 0)
        topo->npackages = 0;
    return 0;
}

static bool is_nvidia_gpu(hwloc_obj_t obj)
{
    return obj->attr->pcidev.vendor_id == 0x10de && (obj->attr->pcidev.class_id >> 8) == 0x03;
}

/* Logical indices of the cores whose PUs all lie in cpuset, or the cores of numa_node. */
static int select_cores(const struct gs_topo *topo, hwloc_topology_t ht,
                        hwloc_const_cpuset_t cpuset, int numa_node, struct gs_topo_gpu *gpu)
{
    int *list = calloc((size_t)topo->ncores, sizeof(int)), n = 0;

    if (list == NULL)
        return -ENOMEM;
    for (int i = 0; i < topo->ncores; i++) {
        bool near = cpuset == NULL ? topo->cores[i].numa_node == numa_node : false;

        if (cpuset != NULL) {
            hwloc_obj_t c = hwloc_get_obj_by_type(ht, HWLOC_OBJ_CORE, (unsigned)i);
            if (c == NULL)
                c = hwloc_get_obj_by_type(ht, HWLOC_OBJ_PU, (unsigned)i);
            near = c != NULL && hwloc_bitmap_isincluded(c->cpuset, cpuset);
        }
        if (near)
            list[n++] = i;
    }
    gpu->local_cores = list;
    gpu->nlocal_cores = n;
    return 0;
}

/* Model, UUID and memory come from the CUDA/NVML OS devices under the PCI device. */
static void describe_gpu(hwloc_obj_t pci, struct gs_topo_gpu *gpu)
{
    const char *pci_name = hwloc_obj_get_info_by_name(pci, "PCIDevice");

    snprintf(gpu->model, sizeof(gpu->model), "NVIDIA [10de:%04x]", gpu->device_id);
    if (pci_name != NULL)
        snprintf(gpu->model, sizeof(gpu->model), "%s", pci_name);
    for (hwloc_obj_t os = pci->io_first_child; os != NULL; os = os->next_sibling) {
        const char *model = hwloc_obj_get_info_by_name(os, "GPUModel");
        const char *uuid = hwloc_obj_get_info_by_name(os, "NVIDIAUUID");
        const char *kib = hwloc_obj_get_info_by_name(os, "CUDAGlobalMemorySize");

        if (model != NULL)
            snprintf(gpu->model, sizeof(gpu->model), "%s", model);
        if (uuid != NULL)
            snprintf(gpu->uuid, sizeof(gpu->uuid), "%s", uuid);
        if (kib != NULL)
            gpu->memory_mib = strtoull(kib, NULL, 10) / 1024;
    }
}

static int compare_gpu_bus(const void *a, const void *b)
{
    /* Fixed-width lowercase hex, so string order is bus order. */
    return strcmp(((const struct gs_topo_gpu *)a)->pci_bus_id,
                  ((const struct gs_topo_gpu *)b)->pci_bus_id);
}

static int compare_nic_bus(const void *a, const void *b)
{
    return strcmp(((const struct gs_topo_nic *)a)->pci_bus_id,
                  ((const struct gs_topo_nic *)b)->pci_bus_id);
}

static void format_bus_id(hwloc_obj_t pci, char out[GS_TOPO_BUSID_MAX])
{
    const struct hwloc_pcidev_attr_s *a = &pci->attr->pcidev;

    snprintf(out, GS_TOPO_BUSID_MAX, "%04x:%02x:%02x.%x", (unsigned)a->domain, a->bus, a->dev,
             a->func);
}

static int fill_gpu(hwloc_topology_t ht, struct gs_topo *topo, hwloc_obj_t pci,
                    struct gs_topo_gpu *gpu)
{
    hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(ht, pci);
    int rc;

    format_bus_id(pci, gpu->pci_bus_id);
    gpu->vendor_id = pci->attr->pcidev.vendor_id;
    gpu->device_id = pci->attr->pcidev.device_id;
    gpu->package = near != NULL ? os_index_of_ancestor(near, HWLOC_OBJ_PACKAGE) : -1;
    gpu->numa_node = near != NULL ? first_node(near->nodeset) : -1;
    describe_gpu(pci, gpu);
    rc = topo_pci_path(pci, &gpu->pci_path, &gpu->npci_path);
    if (rc < 0)
        return rc;
    return select_cores(topo, ht, near != NULL ? near->cpuset : NULL, gpu->numa_node, gpu);
}

static int load_gpus(hwloc_topology_t ht, struct gs_topo *topo)
{
    hwloc_obj_t pci = NULL;
    int n = 0, rc;

    while ((pci = hwloc_get_next_pcidev(ht, pci)) != NULL)
        n += is_nvidia_gpu(pci);
    topo->gpus = calloc(n > 0 ? (size_t)n : 1, sizeof(*topo->gpus));
    if (topo->gpus == NULL)
        return -ENOMEM;
    while ((pci = hwloc_get_next_pcidev(ht, pci)) != NULL) {
        if (!is_nvidia_gpu(pci))
            continue;
        rc = fill_gpu(ht, topo, pci, &topo->gpus[topo->ngpus]);
        topo->ngpus++;
        if (rc < 0)
            return rc;
    }
    gs_sort(topo->gpus, (size_t)topo->ngpus, sizeof(*topo->gpus), compare_gpu_bus);
    for (int i = 0; i < topo->ngpus; i++)
        topo->gpus[i].index = i;
    return 0;
}

/*
 * A NIC is a PCI function with a network or OpenFabrics OS device below it; its names are
 * those of the first of each kind (an IPoIB child interface comes after its parent). Returns
 * whether pci is one, with the names filled in when nic is not NULL.
 */
static bool describe_nic(hwloc_obj_t pci, struct gs_topo_nic *nic)
{
    bool found = false;

    for (hwloc_obj_t os = pci->io_first_child; os != NULL; os = os->next_sibling) {
        char *dest = NULL;

        if (os->type != HWLOC_OBJ_OS_DEVICE || os->name == NULL)
            continue;
        if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK)
            dest = nic != NULL ? nic->name : NULL;
        else if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS)
            dest = nic != NULL ? nic->ib_device : NULL;
        else
            continue;
        found = true;
        if (dest != NULL && dest[0] == '\0')
            snprintf(dest, GS_TOPO_NAME_MAX, "%s", os->name);
    }
    return found;
}

static int fill_nic(hwloc_topology_t ht, hwloc_obj_t pci, struct gs_topo_nic *nic)
{
    hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(ht, pci);

    format_bus_id(pci, nic->pci_bus_id);
    nic->package = near != NULL ? os_index_of_ancestor(near, HWLOC_OBJ_PACKAGE) : -1;
    nic->numa_node = near != NULL ? first_node(near->nodeset) : -1;
    describe_nic(pci, nic);
    return topo_pci_path(pci, &nic->pci_path, &nic->npci_path);
}

static int load_nics(hwloc_topology_t ht, struct gs_topo *topo)
{
    hwloc_obj_t pci = NULL;
    int n = 0, rc;

    while ((pci = hwloc_get_next_pcidev(ht, pci)) != NULL)
        n += describe_nic(pci, NULL);
    topo->nics = calloc(n > 0 ? (size_t)n : 1, sizeof(*topo->nics));
    if (topo->nics == NULL)
        return -ENOMEM;
    while ((pci = hwloc_get_next_pcidev(ht, pci)) != NULL) {
        if (!describe_nic(pci, NULL))
            continue;
        rc = fill_nic(ht, pci, &topo->nics[topo->nnics]);
        topo->nnics++;
        if (rc < 0)
            return rc;
    }
    gs_sort(topo->nics, (size_t)topo->nnics, sizeof(*topo->nics), compare_nic_bus);
    for (int i = 0; i < topo->nnics; i++)
        topo->nics[i].index = i;
    return 0;
}

/* n synthetic GPUs, spread evenly over the NUMA nodes, each near that node's cores. */
static int make_fake_gpus(struct gs_topo *topo, int n)
{
    free_gpus(topo);
    topo->gpus = calloc((size_t)n, sizeof(*topo->gpus));
    if (topo->gpus == NULL)
        return -ENOMEM;
    for (int i = 0; i < n; i++) {
        struct gs_topo_gpu *gpu = &topo->gpus[i];
        int numa = topo->nnuma > 0 ? topo->numa[i * topo->nnuma / n].os_index : -1;
        int rc;

        gpu->index = i;
        snprintf(gpu->pci_bus_id, sizeof(gpu->pci_bus_id), "0000:%02x:00.0",
                 (unsigned)(0x10 + 2 * i) & 0xffu);
        gpu->vendor_id = 0x10de;
        gpu->numa_node = numa;
        gpu->package = -1;
        gpu->memory_mib = FAKE_GPU_MIB;
        snprintf(gpu->model, sizeof(gpu->model), "fake GPU %d", i);
        topo->ngpus = i + 1;
        rc = select_cores(topo, NULL, NULL, numa, gpu);
        if (rc < 0)
            return rc;
        if (gpu->nlocal_cores > 0)
            gpu->package = topo->cores[gpu->local_cores[0]].package;
    }
    return 0;
}

/*
 * hwloc's PCI plugin is dlopen'd for each load of this machine and unloaded after, and the
 * libpciaccess state it sets up is reachable only from that library's globals: once the
 * library is unmapped LeakSanitizer reports it as lost. Keeping libpciaccess resident (as a
 * program linked with it would) keeps that state reachable and saves remapping it on every
 * reload. A machine without libpciaccess simply has no PCI plugin; the failure is ignored.
 */
static void keep_pciaccess_resident(void)
{
    (void)dlopen("libpciaccess.so.0", RTLD_NOW | RTLD_NODELETE);
}

/* Keeps the PUs of list (OS indices, "0-3,8"), which must all exist, and I/O devices. */
/*
 * Every PU and NUMA node has an OS index that fits an int: tasks are bound to those
 * numbers, and gs_topo keeps them as ints. hwloc loads a file whose PU lacks os_index
 * (HWLOC_UNKNOWN_INDEX), and gsched would have bound tasks to CPU -1.
 */
static int check_os_indices(hwloc_topology_t ht, const char *where, struct gs_error *err)
{
    static const hwloc_obj_type_t types[] = {HWLOC_OBJ_PU, HWLOC_OBJ_NUMANODE};

    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        int n = hwloc_get_nbobjs_by_type(ht, types[t]);

        for (int i = 0; i < n; i++) {
            hwloc_obj_t obj = hwloc_get_obj_by_type(ht, types[t], (unsigned)i);

            if (obj->os_index == HWLOC_UNKNOWN_INDEX)
                return gs_error_set(err, -EINVAL, 0, 0, "%s: %s L#%d has no os_index", where,
                                    hwloc_obj_type_string(types[t]), i);
            if (obj->os_index > INT_MAX)
                return gs_error_set(err, -EINVAL, 0, 0, "%s: %s L#%d: os_index %u is too large",
                                    where, hwloc_obj_type_string(types[t]), i, obj->os_index);
        }
    }
    return 0;
}

static int restrict_cpus(hwloc_topology_t ht, const char *list, struct gs_error *err)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(ht);
    int rc = 0;

    if (set == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
    if (strspn(list, "0123456789,-") != strlen(list) || hwloc_bitmap_list_sscanf(set, list) < 0 ||
        hwloc_bitmap_iszero(set) || hwloc_bitmap_weight(set) < 0)
        rc = gs_error_set(err, -EINVAL, 0, 0,
                          "cpus '%s': expected a list of CPU numbers such as 0-3,8", list);
    else if (!hwloc_bitmap_isincluded(set, all))
        rc = gs_error_set(err, -EINVAL, 0, 0,
                          "cpus '%s': names CPUs this topology does not have (it has %d)", list,
                          hwloc_bitmap_weight(all));
    else if (hwloc_topology_restrict(
                 ht, set, HWLOC_RESTRICT_FLAG_ADAPT_IO | HWLOC_RESTRICT_FLAG_ADAPT_MISC) < 0)
        rc = gs_error_set(err, -errno != 0 ? -errno : -EINVAL, 0, 0,
                          "cpus '%s': hwloc could not restrict the topology", list);
    hwloc_bitmap_free(set);
    return rc;
}

static int open_hwloc(const struct gs_topo_opts *opts, hwloc_topology_t *ret_ht,
                      struct gs_error *err)
{
    hwloc_topology_t ht;
    struct stat st;
    int rc;

    if (opts->xml_path != NULL && stat(opts->xml_path, &st) < 0)
        return gs_error_set(err, -errno, 0, 0, "%s: %s", opts->xml_path, gs_strerror(-errno));
    if (opts->xml_path == NULL)
        keep_pciaccess_resident();
    else if ((rc = topo_trial_load_xml(opts->xml_path, err)) < 0)
        return rc;
    if (hwloc_topology_init(&ht) < 0)
        return gs_error_set(err, -ENOMEM, 0, 0, "hwloc: cannot initialise a topology");
    hwloc_topology_set_io_types_filter(ht, HWLOC_TYPE_FILTER_KEEP_ALL);
    if (opts->xml_path != NULL && hwloc_topology_set_xml(ht, opts->xml_path) < 0) {
        hwloc_topology_destroy(ht);
        return gs_error_set(err, -EINVAL, 0, 0, "%s: not an hwloc XML topology", opts->xml_path);
    }
    if (hwloc_topology_load(ht) < 0) {
        hwloc_topology_destroy(ht);
        return gs_error_set(err, -EINVAL, 0, 0, "%s: hwloc could not load the topology",
                            opts->xml_path != NULL ? opts->xml_path : "this machine");
    }
    rc = check_os_indices(ht, opts->xml_path != NULL ? opts->xml_path : "this machine", err);
    if (rc < 0) {
        hwloc_topology_destroy(ht);
        return rc;
    }
    if (opts->cpus != NULL) {
        rc = restrict_cpus(ht, opts->cpus, err);
        if (rc < 0) {
            hwloc_topology_destroy(ht);
            return rc;
        }
    }
    *ret_ht = ht;
    return 0;
}

static void load_hostname(hwloc_topology_t ht, struct gs_topo *topo)
{
    const char *name = hwloc_obj_get_info_by_name(hwloc_get_root_obj(ht), "HostName");

    if (topo->this_system && gethostname(topo->hostname, sizeof(topo->hostname) - 1) == 0)
        return;
    snprintf(topo->hostname, sizeof(topo->hostname), "%s", name != NULL ? name : "");
}

int gs_topo_load(const struct gs_topo_opts *opts, struct gs_topo **ret_topo, struct gs_error *err)
{
    struct gs_topo *topo = NULL;
    hwloc_topology_t ht = NULL;
    int rc;

    gs_error_clear(err);
    if (opts == NULL || opts->fake_gpus < 0 || opts->fake_gpus > FAKE_GPUS_MAX)
        return gs_error_set(err, -EINVAL, 0, 0, "fake GPU count must be 0..%d", FAKE_GPUS_MAX);
    rc = open_hwloc(opts, &ht, err);
    if (rc < 0)
        return rc;
    topo = calloc(1, sizeof(*topo));
    rc = -ENOMEM;
    if (topo == NULL)
        goto out;
    topo->this_system = opts->xml_path == NULL && hwloc_topology_is_thissystem(ht);
    load_hostname(ht, topo);
    rc = load_numa(ht, topo);
    if (rc == 0)
        rc = load_cores(ht, topo);
    if (rc == 0)
        rc = load_gpus(ht, topo);
    if (rc == 0)
        rc = load_nics(ht, topo);
    if (rc == 0 && opts->fake_gpus > 0)
        rc = make_fake_gpus(topo, opts->fake_gpus);
    if (rc == 0)
        rc = topo_load_links(ht, topo, opts->fake_gpus == 0);
out:
    hwloc_topology_destroy(ht);
    if (rc < 0) {
        gs_topo_free(topo);
        if (err != NULL && err->code == 0)
            gs_error_set(err, rc, 0, 0, "topology: %s", gs_strerror(rc));
        return rc;
    }
    *ret_topo = topo;
    return 0;
}

const char *gs_topo_hostname(const struct gs_topo *topo)
{
    return topo->hostname;
}

int gs_topo_npackages(const struct gs_topo *topo)
{
    return topo->npackages;
}

int gs_topo_nnuma(const struct gs_topo *topo)
{
    return topo->nnuma;
}

int gs_topo_ncores(const struct gs_topo *topo)
{
    return topo->ncores;
}

int gs_topo_npus(const struct gs_topo *topo)
{
    return topo->npus;
}

uint64_t gs_topo_memory_mib(const struct gs_topo *topo)
{
    return topo->memory_mib;
}

uint64_t gs_topo_numa_memory_mib(const struct gs_topo *topo, int i, int *ret_os_index)
{
    if (i < 0 || i >= topo->nnuma)
        return 0;
    if (ret_os_index != NULL)
        *ret_os_index = topo->numa[i].os_index;
    return topo->numa[i].memory_mib;
}

int gs_topo_ngpus(const struct gs_topo *topo)
{
    return topo->ngpus;
}

const struct gs_topo_gpu *gs_topo_gpu(const struct gs_topo *topo, int i)
{
    return i >= 0 && i < topo->ngpus ? &topo->gpus[i] : NULL;
}

const struct gs_topo_core *gs_topo_core(const struct gs_topo *topo, int i)
{
    return i >= 0 && i < topo->ncores ? &topo->cores[i] : NULL;
}

int gs_topo_core_threads(const struct gs_topo_core *core, uint32_t threads_per_core)
{
    return threads_per_core == 0 || threads_per_core > (uint32_t)core->npus ? core->npus
                                                                            : (int)threads_per_core;
}

bool gs_topo_is_this_system(const struct gs_topo *topo)
{
    return topo->this_system;
}

int gs_topo_nnics(const struct gs_topo *topo)
{
    return topo->nnics;
}

const struct gs_topo_nic *gs_topo_nic(const struct gs_topo *topo, int i)
{
    return i >= 0 && i < topo->nnics ? &topo->nics[i] : NULL;
}
