/*
 * topo_nvml.c: NVLink counts from NVML, for a machine whose hwloc has no "NVLinkBandwidth"
 * matrix (Debian's hwloc is built without its NVML backend). libnvidia-ml.so.1 is dlopen'd
 * on each call and the few entry points used are declared here (the types in nvml_abi.h),
 * so gsched builds without NVIDIA's headers and runs without the library or a driver: any failure
 * means "no NVLink known", never an error. Called by topo_load_links() on the loading thread.
 *
 * For each GPU, each active link's far end is either another of our GPUs (a direct link)
 * or an NVSwitch (an NVIDIA bridge-class PCI device in hwloc's tree). Two GPUs then have
 * their direct links plus the smaller of their two NVSwitch link counts, which is what
 * hwloc's transitive closure computes from its matrix, so both sources agree.
 */
#include "common/topo_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/dl.h"
#include "common/nvml_abi.h"

struct nvml_api {
    void *lib;
    int (*init)(void);
    int (*shutdown)(void);
    int (*handle_by_bus_id)(const char *bus_id, nvml_device_t *ret_device);
    int (*link_state)(nvml_device_t device, unsigned int link, int *ret_active);
    int (*remote_pci)(nvml_device_t device, unsigned int link, struct nvml_pci_info *ret_pci);
};

/*
 * RTLD_NODELETE for the reason topo.c keeps libpciaccess resident: NVML's allocations stay
 * reachable from its globals after dlclose() instead of turning into leak reports.
 */
static int open_nvml(struct nvml_api *api)
{
    memset(api, 0, sizeof(*api));
    api->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (api->lib == NULL)
        return -ENOENT;
    if (gs_dl_sym(api->lib, "nvmlInit_v2", &api->init, sizeof(api->init)) &&
        gs_dl_sym(api->lib, "nvmlShutdown", &api->shutdown, sizeof(api->shutdown)) &&
        gs_dl_sym(api->lib, "nvmlDeviceGetHandleByPciBusId_v2", &api->handle_by_bus_id,
                  sizeof(api->handle_by_bus_id)) &&
        gs_dl_sym(api->lib, "nvmlDeviceGetNvLinkState", &api->link_state,
                  sizeof(api->link_state)) &&
        gs_dl_sym(api->lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &api->remote_pci,
                  sizeof(api->remote_pci)) &&
        api->init() == NVML_SUCCESS)
        return 0;
    dlclose(api->lib);
    return -ENOENT;
}

static void close_nvml(struct nvml_api *api)
{
    api->shutdown();
    dlclose(api->lib);
}

static bool is_nvswitch(hwloc_topology_t ht, const struct nvml_pci_info *pci)
{
    hwloc_obj_t obj = hwloc_get_pcidev_by_busid(ht, pci->domain, pci->bus, pci->device, 0);

    return obj != NULL && obj->attr->pcidev.vendor_id == 0x10de &&
           (obj->attr->pcidev.class_id >> 8) == 0x06;
}

/* Counts GPU a's active links: to each GPU in direct[] (row a), to NVSwitches in *to_switch. */
static void count_links(hwloc_topology_t ht, const struct gs_topo *topo, const struct nvml_api *api,
                        int a, int *direct, int *to_switch)
{
    nvml_device_t dev;

    if (api->handle_by_bus_id(topo->gpus[a].pci_bus_id, &dev) != NVML_SUCCESS)
        return;
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; link++) {
        struct nvml_pci_info pci;
        int active = 0, peer;

        /* An error past the device's last link ends the list. */
        if (api->link_state(dev, link, &active) != NVML_SUCCESS)
            break;
        if (active != NVML_FEATURE_ENABLED || api->remote_pci(dev, link, &pci) != NVML_SUCCESS)
            continue;
        peer = topo_find_gpu(topo, pci.domain, pci.bus, pci.device);
        if (peer >= 0 && peer != a)
            direct[peer]++;
        else if (peer < 0 && is_nvswitch(ht, &pci))
            (*to_switch)++;
    }
}

int topo_nvml_add_nvlinks(hwloc_topology_t ht, struct gs_topo *topo)
{
    int ng = topo->ngpus;
    int *direct = calloc((size_t)ng * (size_t)ng + 1, sizeof(int));
    int *to_switch = calloc((size_t)ng + 1, sizeof(int));
    struct nvml_api api;
    int rc = -ENOMEM;

    if (direct == NULL || to_switch == NULL)
        goto out;
    rc = 0;
    if (open_nvml(&api) < 0)
        goto out;
    for (int a = 0; a < ng; a++)
        count_links(ht, topo, &api, a, &direct[a * ng], &to_switch[a]);
    close_nvml(&api);
    for (int a = 0; a < ng; a++) {
        for (int b = 0; b < ng; b++) {
            int d =
                direct[a * ng + b] > direct[b * ng + a] ? direct[a * ng + b] : direct[b * ng + a];
            int s = to_switch[a] < to_switch[b] ? to_switch[a] : to_switch[b];

            if (a != b)
                topo->nvlinks[a * ng + b] += d + s;
        }
    }
out:
    free(direct);
    free(to_switch);
    return rc;
}
