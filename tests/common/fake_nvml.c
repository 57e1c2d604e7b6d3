/*
 * fake_nvml.c: a stand-in libnvidia-ml.so.1 for test_topo_nvml, built into its own folder
 * and found through LD_LIBRARY_PATH. It answers the five entry points common/topo_nvml.c
 * uses, for the GPUs of two fixtures, as the real library would on those machines:
 *
 *   dgx-h100 (GPUs on buses 19 1a 59 5a 99 9a d9 da): 18 active links each, 5/4/4/5 of
 *     them to the NVSwitches at e4 e5 e6 e7;
 *   ws-4gpu (buses 17 31 65 b1): 4 links to the partner GPU (17-31, 65-b1), and on 17 a
 *     fifth link to 03:00.0, the BMC VGA, which must not count as an NVSwitch.
 *
 * Any other bus id is "not found". A device handle is its bus number plus one. The structs
 * are those of topo_nvml.c: this tests gsched's use of NVML, not NVML's ABI.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_FOUND 6
#define MAX_LINKS 18

typedef struct nvml_device *nvml_device_t;

struct nvml_pci_info {
    char bus_id_legacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pci_device_id;
    unsigned int pci_subsystem_id;
    char bus_id[32];
};

int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvml_device_t *ret_device);
int nvmlDeviceGetNvLinkState(nvml_device_t device, unsigned int link, int *ret_active);
int nvmlDeviceGetNvLinkRemotePciInfo_v2(nvml_device_t device, unsigned int link,
                                        struct nvml_pci_info *ret_pci);

static const unsigned dgx_buses[] = {0x19, 0x1a, 0x59, 0x5a, 0x99, 0x9a, 0xd9, 0xda};
static const unsigned ws_buses[] = {0x17, 0x31, 0x65, 0xb1};

static bool in(unsigned bus, const unsigned *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == bus)
            return true;
    return false;
}

static bool is_dgx(unsigned bus)
{
    return in(bus, dgx_buses, sizeof(dgx_buses) / sizeof(dgx_buses[0]));
}

static bool is_ws(unsigned bus)
{
    return in(bus, ws_buses, sizeof(ws_buses) / sizeof(ws_buses[0]));
}

static unsigned bus_of(nvml_device_t device)
{
    return (unsigned)((uintptr_t)device - 1);
}

/* The bus at the far end of a link, or 0 when the link is down. */
static unsigned remote_bus(unsigned bus, unsigned link)
{
    static const unsigned switch_of_link[MAX_LINKS] = {0xe4, 0xe4, 0xe4, 0xe4, 0xe4, 0xe5,
                                                       0xe5, 0xe5, 0xe5, 0xe6, 0xe6, 0xe6,
                                                       0xe6, 0xe7, 0xe7, 0xe7, 0xe7, 0xe7};

    if (is_dgx(bus))
        return switch_of_link[link];
    if (link < 4)
        return bus == 0x17 ? 0x31 : bus == 0x31 ? 0x17 : bus == 0x65 ? 0xb1 : 0x65;
    return bus == 0x17 && link == 4 ? 0x03 : 0;
}

int nvmlInit_v2(void)
{
    return NVML_SUCCESS;
}

int nvmlShutdown(void)
{
    return NVML_SUCCESS;
}

int nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvml_device_t *ret_device)
{
    unsigned domain, bus, dev, func;

    if (sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &func) != 4 ||
        !(is_dgx(bus) || is_ws(bus)))
        return NVML_ERROR_NOT_FOUND;
    *ret_device = (nvml_device_t)(uintptr_t)(bus + 1);
    return NVML_SUCCESS;
}

int nvmlDeviceGetNvLinkState(nvml_device_t device, unsigned int link, int *ret_active)
{
    if (link >= MAX_LINKS)
        return NVML_ERROR_INVALID_ARGUMENT;
    *ret_active = remote_bus(bus_of(device), link) != 0;
    return NVML_SUCCESS;
}

int nvmlDeviceGetNvLinkRemotePciInfo_v2(nvml_device_t device, unsigned int link,
                                        struct nvml_pci_info *ret_pci)
{
    unsigned bus = link < MAX_LINKS ? remote_bus(bus_of(device), link) : 0;

    if (bus == 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(ret_pci, 0, sizeof(*ret_pci));
    ret_pci->bus = bus;
    snprintf(ret_pci->bus_id, sizeof(ret_pci->bus_id), "00000000:%02x:00.0", bus);
    return NVML_SUCCESS;
}
