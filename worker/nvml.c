/*
 * nvml.c: NVML's figures of each GPU (see nvml.h). NVML's structs and constants come from
 * common/nvml_abi.h (no NVIDIA header is needed); they are those of the versioned entry
 * points named in the table below.
 *
 * Entry points are resolved once, at open, into struct nvml_fns through a table of names
 * and offsets: a name missing from the library leaves its pointer NULL, and every figure
 * that needs it unknown. nvmlDeviceGetCurrentClocksEventReasons (driver 535 and later) is
 * tried before the older name of the same call, nvmlDeviceGetCurrentClocksThrottleReasons.
 *
 * The library is opened with RTLD_NODELETE for the reason common/topo_nvml.c gives: NVML's
 * allocations stay reachable from its globals after dlclose() instead of turning into leak
 * reports.
 */
#include "worker/nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/dl.h"
#include "common/log.h"
#include "common/nvml_abi.h"

#define DEFAULT_LIBRARY "libnvidia-ml.so.1"
#define MIB (1024ull * 1024ull)
/* Events read per sample at most, so that a GPU flooding Xids cannot hold a sample up. */
#define MAX_EVENTS 64

/* The entry points used, as common/nvml_abi.h declares their types. */
struct nvml_fns {
    int (*init)(void);
    int (*shutdown)(void);
    int (*by_bus_id)(const char *bus_id, nvml_device_t *ret_device);
    int (*by_index)(unsigned int index, nvml_device_t *ret_device);
    int (*utilization)(nvml_device_t device, struct nvml_utilization *ret_util);
    int (*memory)(nvml_device_t device, struct nvml_memory *ret_memory);
    int (*power)(nvml_device_t device, unsigned int *ret_mw);
    int (*temperature)(nvml_device_t device, int sensor, unsigned int *ret_c);
    int (*clock)(nvml_device_t device, int clock_type, unsigned int *ret_mhz);
    int (*clock_events)(nvml_device_t device, unsigned long long *ret_reasons);
    int (*ecc)(nvml_device_t device, int error_type, int counter_type,
               unsigned long long *ret_count);
    int (*processes)(nvml_device_t device, unsigned int *inout_count,
                     struct nvml_process_info *ret_infos);
    int (*event_set_create)(nvml_event_set_t *ret_set);
    int (*event_set_free)(nvml_event_set_t set);
    int (*register_events)(nvml_device_t device, unsigned long long types, nvml_event_set_t set);
    int (*event_wait)(nvml_event_set_t set, struct nvml_event_data *ret_data,
                      unsigned int timeout_ms);
};

/* Which symbol fills which pointer; the first name found for a pointer wins. */
static const struct {
    const char *name;
    size_t offset;
} symbols[] = {
    {"nvmlInit_v2", offsetof(struct nvml_fns, init)},
    {"nvmlShutdown", offsetof(struct nvml_fns, shutdown)},
    {"nvmlDeviceGetHandleByPciBusId_v2", offsetof(struct nvml_fns, by_bus_id)},
    {"nvmlDeviceGetHandleByIndex_v2", offsetof(struct nvml_fns, by_index)},
    {"nvmlDeviceGetUtilizationRates", offsetof(struct nvml_fns, utilization)},
    {"nvmlDeviceGetMemoryInfo", offsetof(struct nvml_fns, memory)},
    {"nvmlDeviceGetPowerUsage", offsetof(struct nvml_fns, power)},
    {"nvmlDeviceGetTemperature", offsetof(struct nvml_fns, temperature)},
    {"nvmlDeviceGetClockInfo", offsetof(struct nvml_fns, clock)},
    {"nvmlDeviceGetCurrentClocksEventReasons", offsetof(struct nvml_fns, clock_events)},
    {"nvmlDeviceGetCurrentClocksThrottleReasons", offsetof(struct nvml_fns, clock_events)},
    {"nvmlDeviceGetTotalEccErrors", offsetof(struct nvml_fns, ecc)},
    {"nvmlDeviceGetComputeRunningProcesses_v3", offsetof(struct nvml_fns, processes)},
    {"nvmlEventSetCreate", offsetof(struct nvml_fns, event_set_create)},
    {"nvmlEventSetFree", offsetof(struct nvml_fns, event_set_free)},
    {"nvmlDeviceRegisterEvents", offsetof(struct nvml_fns, register_events)},
    {"nvmlEventSetWait_v2", offsetof(struct nvml_fns, event_wait)},
};

struct wrk_nvml {
    void *lib;
    struct nvml_fns fn;
    nvml_event_set_t events; /* NULL: Xids are not watched */
    int ngpus;
    nvml_device_t *devices; /* per gsched GPU; NULL: not found */
};

static void resolve_all(struct wrk_nvml *n)
{
    for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
        char *slot = (char *)&n->fn + symbols[i].offset;
        void *set = NULL;

        memcpy(&set, slot, sizeof(set));
        if (set == NULL && !gs_dl_sym(n->lib, symbols[i].name, slot, sizeof(n->fn.init)))
            GS_LOG(GS_LOG_DEBUG, "symbol=%s not in nvml", symbols[i].name);
    }
}

/* The library and nvmlInit_v2, or -ENOENT with nothing left open. */
static int load(struct wrk_nvml *n, const char *library)
{
    const char *name = library != NULL ? library : DEFAULT_LIBRARY;

    n->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (n->lib == NULL) {
        GS_LOG(GS_LOG_DEBUG, "library=%s error=\"%s\" nvml not loaded", name, dlerror());
        return -ENOENT;
    }
    resolve_all(n);
    if (n->fn.init != NULL && n->fn.init() == NVML_SUCCESS)
        return 0;
    GS_LOG(GS_LOG_DEBUG, "library=%s nvml did not initialise", name);
    dlclose(n->lib);
    n->lib = NULL;
    return -ENOENT;
}

static nvml_device_t find_device(const struct nvml_fns *fn, int index, const char *bus_id)
{
    nvml_device_t dev = NULL;
    int rc = -1;

    if (bus_id != NULL && bus_id[0] != '\0') {
        if (fn->by_bus_id != NULL)
            rc = fn->by_bus_id(bus_id, &dev);
    } else if (fn->by_index != NULL) {
        rc = fn->by_index((unsigned)index, &dev);
    }
    return rc == NVML_SUCCESS ? dev : NULL;
}

/* An event set for critical Xids of every GPU found, when NVML has events at all. */
static void watch_xids(struct wrk_nvml *n)
{
    const struct nvml_fns *fn = &n->fn;
    int registered = 0;

    if (fn->event_set_create == NULL || fn->event_set_free == NULL || fn->register_events == NULL ||
        fn->event_wait == NULL || fn->event_set_create(&n->events) != NVML_SUCCESS) {
        n->events = NULL;
        return;
    }
    for (int i = 0; i < n->ngpus; i++) {
        if (n->devices[i] != NULL &&
            fn->register_events(n->devices[i], NVML_EVENT_TYPE_XID_CRITICAL_ERROR, n->events) ==
                NVML_SUCCESS)
            registered++;
    }
    if (registered == 0) {
        fn->event_set_free(n->events);
        n->events = NULL;
    }
}

int wrk_nvml_open(const char *library, const char *const *bus_ids, int ngpus,
                  struct wrk_nvml **ret_nvml)
{
    struct wrk_nvml *n = calloc(1, sizeof(*n));
    int rc = -ENOMEM;

    if (n == NULL || ngpus < 0)
        goto out;
    n->ngpus = ngpus;
    n->devices = calloc((size_t)ngpus + 1, sizeof(*n->devices));
    if (n->devices == NULL)
        goto out;
    rc = load(n, library);
    if (rc < 0)
        goto out;
    for (int i = 0; i < ngpus; i++)
        n->devices[i] = find_device(&n->fn, i, bus_ids != NULL ? bus_ids[i] : NULL);
    watch_xids(n);
    *ret_nvml = n;
    n = NULL;
out:
    if (n != NULL)
        free(n->devices);
    free(n);
    return rc;
}

void wrk_nvml_close(struct wrk_nvml *nvml)
{
    if (nvml == NULL)
        return;
    if (nvml->events != NULL)
        nvml->fn.event_set_free(nvml->events);
    if (nvml->fn.shutdown != NULL)
        nvml->fn.shutdown();
    dlclose(nvml->lib);
    free(nvml->devices);
    free(nvml);
}

int wrk_nvml_ngpus(const struct wrk_nvml *nvml)
{
    return nvml->ngpus;
}

int wrk_nvml_found(const struct wrk_nvml *nvml)
{
    int found = 0;

    for (int i = 0; i < nvml->ngpus; i++)
        found += nvml->devices[i] != NULL;
    return found;
}

static void read_utilization(const struct nvml_fns *fn, nvml_device_t dev,
                             struct wrk_nvml_sample *s)
{
    struct nvml_utilization util;
    struct nvml_memory mem;

    if (fn->utilization != NULL && fn->utilization(dev, &util) == NVML_SUCCESS) {
        s->util_pct = util.gpu > 100 ? 100 : (int)util.gpu;
        s->mem_util_pct = util.memory > 100 ? 100 : (int)util.memory;
    }
    if (fn->memory != NULL && fn->memory(dev, &mem) == NVML_SUCCESS && mem.total > 0) {
        s->mem_used_mib = mem.used / MIB;
        s->mem_total_mib = mem.total / MIB;
    }
}

static void read_scalars(const struct nvml_fns *fn, nvml_device_t dev, struct wrk_nvml_sample *s)
{
    unsigned long long reasons, ecc;
    unsigned int value;

    if (fn->power != NULL && fn->power(dev, &value) == NVML_SUCCESS)
        s->power_w = (value + 500) / 1000;
    if (fn->temperature != NULL &&
        fn->temperature(dev, NVML_TEMPERATURE_GPU, &value) == NVML_SUCCESS)
        s->temperature_c = (int)value;
    if (fn->clock != NULL && fn->clock(dev, NVML_CLOCK_SM, &value) == NVML_SUCCESS)
        s->sm_clock_mhz = value;
    if (fn->clock_events != NULL && fn->clock_events(dev, &reasons) == NVML_SUCCESS)
        s->throttle_reasons = reasons;
    if (fn->ecc != NULL &&
        fn->ecc(dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &ecc) == NVML_SUCCESS)
        s->ecc_uncorrected = ecc;
}

/*
 * NVML answers INSUFFICIENT_SIZE when more processes run than the array holds; what it
 * wrote is kept (the array starts zeroed, so entries it left alone have pid 0 and are
 * skipped).
 */
static void read_processes(const struct nvml_fns *fn, nvml_device_t dev, struct wrk_nvml_sample *s)
{
    struct nvml_process_info infos[WRK_NVML_MAX_PROCS];
    unsigned int count = WRK_NVML_MAX_PROCS;
    int rc;

    if (fn->processes == NULL)
        return;
    memset(infos, 0, sizeof(infos));
    rc = fn->processes(dev, &count, infos);
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE || count > WRK_NVML_MAX_PROCS)
        count = WRK_NVML_MAX_PROCS;
    else if (rc != NVML_SUCCESS)
        return;
    s->nprocs = 0;
    for (unsigned int i = 0; i < count; i++) {
        struct wrk_nvml_proc *p = &s->procs[s->nprocs];

        if (infos[i].pid == 0)
            continue;
        p->pid = infos[i].pid;
        p->memory_mib = infos[i].used_gpu_memory == NVML_VALUE_NOT_AVAILABLE
                            ? 0
                            : infos[i].used_gpu_memory / MIB;
        s->nprocs++;
    }
}

static void sample_device(const struct nvml_fns *fn, nvml_device_t dev, struct wrk_nvml_sample *s)
{
    memset(s, 0, sizeof(*s));
    s->util_pct = s->mem_util_pct = s->temperature_c = s->nprocs = -1;
    s->found = dev != NULL;
    if (!s->found)
        return;
    read_utilization(fn, dev, s);
    read_scalars(fn, dev, s);
    read_processes(fn, dev, s);
}

static int device_index(const struct wrk_nvml *n, nvml_device_t dev)
{
    for (int i = 0; i < n->ngpus; i++)
        if (dev != NULL && n->devices[i] == dev)
            return i;
    return -1;
}

/* The Xids pending in the event set, without waiting (TIMEOUT: none left). */
static void read_xids(struct wrk_nvml *n, struct wrk_nvml_sample *out)
{
    for (int k = 0; n->events != NULL && k < MAX_EVENTS; k++) {
        struct nvml_event_data ev;
        int i;

        memset(&ev, 0, sizeof(ev));
        if (n->fn.event_wait(n->events, &ev, 0) != NVML_SUCCESS)
            break;
        i = device_index(n, ev.device);
        if (i < 0 || (ev.event_type & NVML_EVENT_TYPE_XID_CRITICAL_ERROR) == 0)
            continue;
        out[i].xid_last = (uint32_t)ev.event_data;
        out[i].xid_count++;
    }
}

int wrk_nvml_sample(struct wrk_nvml *nvml, struct wrk_nvml_sample *out)
{
    for (int i = 0; i < nvml->ngpus; i++)
        sample_device(&nvml->fn, nvml->devices[i], &out[i]);
    read_xids(nvml, out);
    return 0;
}
