/*
 * fake_nvml.c: a stand-in libnvidia-ml.so.1 for gsched's tests, built into its own folder
 * (tests/common/fake-nvml/ under the build directory) and found through LD_LIBRARY_PATH.
 *
 * NVLinks, for test_topo_nvml: the four entry points common/topo_nvml.c uses besides init,
 * for the GPUs of two fixtures, as the real library would answer on those machines:
 *
 *   dgx-h100 (GPUs on buses 19 1a 59 5a 99 9a d9 da): 18 active links each, 5/4/4/5 of
 *     them to the NVSwitches at e4 e5 e6 e7;
 *   ws-4gpu (buses 17 31 65 b1): 4 links to the partner GPU (17-31, 65-b1), and on 17 a
 *     fifth link to 03:00.0, the BMC VGA, which must not count as an NVSwitch.
 *
 * Telemetry, for worker/nvml.c: device count and lookup by index, utilisation, memory,
 * power, temperature, SM clock, clocks-event reasons, ECC, compute processes and Xid events,
 * all answered from the script of fake_nvml_script.c (GSCHED_FAKE_NVML_SCRIPT; its format
 * is described there). Without a script: no device by index and NOT_SUPPORTED throughout.
 *
 * Built a second time with FAKE_NVML_OLD (tests/common/fake-nvml-old/): a library from
 * before driver 535 with fewer entry points: clocks reasons under their old name
 * nvmlDeviceGetCurrentClocksThrottleReasons, and no power reading and no events, so tests
 * see missing symbols handled.
 *
 * Bus ids other than the fixtures' and the script's are "not found". Handles are numbers
 * (fake_nvml.h). The structs are gsched's own (common/nvml_abi.h): this tests gsched's use
 * of NVML, not NVML's ABI.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_nvml.h"

#define MAX_SETS 4
#define MAX_SET_DEVICES 64

/* An event set: the devices registered with it. */
struct nvml_event_set {
    bool used;
    int ndevices;
    nvml_device_t devices[MAX_SET_DEVICES];
};

int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetCount_v2(unsigned int *ret_count);
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvml_device_t *ret_device);
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvml_device_t *ret_device);
int nvmlDeviceGetNvLinkState(nvml_device_t device, unsigned int link, int *ret_active);
int nvmlDeviceGetNvLinkRemotePciInfo_v2(nvml_device_t device, unsigned int link,
                                        struct nvml_pci_info *ret_pci);
int nvmlDeviceGetUtilizationRates(nvml_device_t device, struct nvml_utilization *ret_util);
int nvmlDeviceGetMemoryInfo(nvml_device_t device, struct nvml_memory *ret_memory);
int nvmlDeviceGetTemperature(nvml_device_t device, int sensor, unsigned int *ret_c);
int nvmlDeviceGetClockInfo(nvml_device_t device, int clock_type, unsigned int *ret_mhz);
int nvmlDeviceGetTotalEccErrors(nvml_device_t device, int error_type, int counter_type,
                                unsigned long long *ret_count);
int nvmlDeviceGetComputeRunningProcesses_v3(nvml_device_t device, unsigned int *inout_count,
                                            struct nvml_process_info *ret_infos);
#ifdef FAKE_NVML_OLD
int nvmlDeviceGetCurrentClocksThrottleReasons(nvml_device_t device,
                                              unsigned long long *ret_reasons);
#else
int nvmlDeviceGetCurrentClocksEventReasons(nvml_device_t device, unsigned long long *ret_reasons);
int nvmlDeviceGetPowerUsage(nvml_device_t device, unsigned int *ret_mw);
int nvmlEventSetCreate(nvml_event_set_t *ret_set);
int nvmlEventSetFree(nvml_event_set_t set);
int nvmlDeviceRegisterEvents(nvml_device_t device, unsigned long long types, nvml_event_set_t set);
int nvmlEventSetWait_v2(nvml_event_set_t set, struct nvml_event_data *ret_data,
                        unsigned int timeout_ms);
#endif

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
    static const unsigned switch_of_link[NVML_NVLINK_MAX_LINKS] = {
        0xe4, 0xe4, 0xe4, 0xe4, 0xe4, 0xe5, 0xe5, 0xe5, 0xe5,
        0xe6, 0xe6, 0xe6, 0xe6, 0xe7, 0xe7, 0xe7, 0xe7, 0xe7};

    if (is_dgx(bus))
        return switch_of_link[link];
    if (link < 4)
        return bus == 0x17 ? 0x31 : bus == 0x31 ? 0x17 : bus == 0x65 ? 0xb1 : 0x65;
    return bus == 0x17 && link == 4 ? 0x03 : 0;
}

int nvmlInit_v2(void)
{
    fake_script_start_clock();
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
        !(is_dgx(bus) || is_ws(bus) || fake_script_names_bus(bus)))
        return NVML_ERROR_NOT_FOUND;
    *ret_device = (nvml_device_t)(uintptr_t)(bus + 1);
    return NVML_SUCCESS;
}

int nvmlDeviceGetNvLinkState(nvml_device_t device, unsigned int link, int *ret_active)
{
    if (link >= NVML_NVLINK_MAX_LINKS)
        return NVML_ERROR_INVALID_ARGUMENT;
    *ret_active = remote_bus(bus_of(device), link) != 0;
    return NVML_SUCCESS;
}

int nvmlDeviceGetNvLinkRemotePciInfo_v2(nvml_device_t device, unsigned int link,
                                        struct nvml_pci_info *ret_pci)
{
    unsigned bus = link < NVML_NVLINK_MAX_LINKS ? remote_bus(bus_of(device), link) : 0;

    if (bus == 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(ret_pci, 0, sizeof(*ret_pci));
    ret_pci->bus = bus;
    snprintf(ret_pci->bus_id, sizeof(ret_pci->bus_id), "00000000:%02x:00.0", bus);
    return NVML_SUCCESS;
}

int nvmlDeviceGetCount_v2(unsigned int *ret_count)
{
    *ret_count = fake_script_count();
    return NVML_SUCCESS;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvml_device_t *ret_device)
{
    if (index >= fake_script_count())
        return NVML_ERROR_INVALID_ARGUMENT;
    *ret_device = (nvml_device_t)(uintptr_t)(FAKE_NVML_BY_INDEX + index);
    return NVML_SUCCESS;
}

/* The state in force for device when it sets one of fields, else NULL. */
static const struct fake_state *state_with(nvml_device_t device, unsigned fields)
{
    const struct fake_state *st = fake_script_current(device);

    return st != NULL && (st->fields & fields) != 0 ? st : NULL;
}

int nvmlDeviceGetUtilizationRates(nvml_device_t device, struct nvml_utilization *ret_util)
{
    const struct fake_state *st = state_with(device, FAKE_UTIL | FAKE_MEM_UTIL);

    if (st == NULL)
        return NVML_ERROR_NOT_SUPPORTED;
    ret_util->gpu = st->util;
    ret_util->memory = st->mem_util;
    return NVML_SUCCESS;
}

int nvmlDeviceGetMemoryInfo(nvml_device_t device, struct nvml_memory *ret_memory)
{
    const struct fake_state *st = state_with(device, FAKE_MEM_TOTAL);

    if (st == NULL)
        return NVML_ERROR_NOT_SUPPORTED;
    ret_memory->total = st->mem_total_mib << 20;
    ret_memory->used = st->mem_used_mib << 20;
    ret_memory->free = ret_memory->total - ret_memory->used;
    return NVML_SUCCESS;
}

int nvmlDeviceGetTemperature(nvml_device_t device, int sensor, unsigned int *ret_c)
{
    const struct fake_state *st = state_with(device, FAKE_TEMP);

    if (sensor != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (st == NULL)
        return NVML_ERROR_NOT_SUPPORTED;
    *ret_c = (unsigned)st->temp_c;
    return NVML_SUCCESS;
}

/* Only the SM clock (NVML_CLOCK_SM, 1) is scripted. */
int nvmlDeviceGetClockInfo(nvml_device_t device, int clock_type, unsigned int *ret_mhz)
{
    const struct fake_state *st = state_with(device, FAKE_CLOCK);

    if (st == NULL || clock_type != 1)
        return NVML_ERROR_NOT_SUPPORTED;
    *ret_mhz = st->sm_clock_mhz;
    return NVML_SUCCESS;
}

/* Only the volatile (0) count of uncorrected (1) errors is scripted. */
int nvmlDeviceGetTotalEccErrors(nvml_device_t device, int error_type, int counter_type,
                                unsigned long long *ret_count)
{
    const struct fake_state *st = state_with(device, FAKE_ECC);

    if (st == NULL || error_type != 1 || counter_type != 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *ret_count = st->ecc;
    return NVML_SUCCESS;
}

/* What fits is written; more than fits is INSUFFICIENT_SIZE with the count needed. */
int nvmlDeviceGetComputeRunningProcesses_v3(nvml_device_t device, unsigned int *inout_count,
                                            struct nvml_process_info *ret_infos)
{
    const struct fake_state *st = state_with(device, FAKE_PIDS);
    unsigned n;

    if (st == NULL)
        return NVML_ERROR_NOT_SUPPORTED;
    n = (unsigned)st->nprocs;
    for (unsigned i = 0; i < n && i < *inout_count; i++) {
        memset(&ret_infos[i], 0, sizeof(ret_infos[i]));
        ret_infos[i].pid = st->procs[i].pid;
        ret_infos[i].used_gpu_memory = st->procs[i].memory_mib << 20;
    }
    if (n > *inout_count) {
        *inout_count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    *inout_count = n;
    return NVML_SUCCESS;
}

static int clocks_reasons(nvml_device_t device, unsigned long long *ret_reasons)
{
    const struct fake_state *st = state_with(device, FAKE_THROTTLE);

    if (st == NULL)
        return NVML_ERROR_NOT_SUPPORTED;
    *ret_reasons = st->throttle;
    return NVML_SUCCESS;
}

#ifdef FAKE_NVML_OLD
int nvmlDeviceGetCurrentClocksThrottleReasons(nvml_device_t device, unsigned long long *ret_reasons)
{
    return clocks_reasons(device, ret_reasons);
}
#else
int nvmlDeviceGetCurrentClocksEventReasons(nvml_device_t device, unsigned long long *ret_reasons)
{
    return clocks_reasons(device, ret_reasons);
}

int nvmlDeviceGetPowerUsage(nvml_device_t device, unsigned int *ret_mw)
{
    const struct fake_state *st = state_with(device, FAKE_POWER);

    if (st == NULL)
        return NVML_ERROR_NOT_SUPPORTED;
    *ret_mw = st->power_w * 1000;
    return NVML_SUCCESS;
}

static struct nvml_event_set event_sets[MAX_SETS];

int nvmlEventSetCreate(nvml_event_set_t *ret_set)
{
    for (int i = 0; i < MAX_SETS; i++) {
        if (!event_sets[i].used) {
            memset(&event_sets[i], 0, sizeof(event_sets[i]));
            event_sets[i].used = true;
            *ret_set = &event_sets[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_SUPPORTED;
}

int nvmlEventSetFree(nvml_event_set_t set)
{
    set->used = false;
    return NVML_SUCCESS;
}

/* Without a script there are no events to register for. */
int nvmlDeviceRegisterEvents(nvml_device_t device, unsigned long long types, nvml_event_set_t set)
{
    if (getenv("GSCHED_FAKE_NVML_SCRIPT") == NULL ||
        (types & NVML_EVENT_TYPE_XID_CRITICAL_ERROR) == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    if (set->ndevices == MAX_SET_DEVICES)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    set->devices[set->ndevices++] = device;
    return NVML_SUCCESS;
}

/* Never waits: an Xid whose line is in force and not delivered yet, else TIMEOUT. */
int nvmlEventSetWait_v2(nvml_event_set_t set, struct nvml_event_data *ret_data,
                        unsigned int timeout_ms)
{
    (void)timeout_ms;
    for (int i = 0; i < set->ndevices; i++) {
        const struct fake_state *st = state_with(set->devices[i], FAKE_XID);

        if (st != NULL && fake_script_take_xid(st)) {
            memset(ret_data, 0, sizeof(*ret_data));
            ret_data->device = set->devices[i];
            ret_data->event_type = NVML_EVENT_TYPE_XID_CRITICAL_ERROR;
            ret_data->event_data = st->xid;
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_TIMEOUT;
}
#endif
