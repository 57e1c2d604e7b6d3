/*
 * nvml.h: the worker's view of NVML, NVIDIA's management library: one sample of every GPU's
 * figures (utilisation, memory, power, temperature, clock, throttle reasons, ECC, compute
 * processes, Xid errors) as plain structs, for worker/telemetry.c to summarise.
 *
 * libnvidia-ml.so.1 is dlopen'd at run time and the few types and entry points used are
 * declared in nvml.c, so the worker builds without NVIDIA's headers and runs without the
 * library: wrk_nvml_open() then returns -ENOENT and the node is a CPU node (or its GPUs are
 * synthetic). Every entry point but nvmlInit_v2 is optional: a missing one, or an error
 * such as NOT_SUPPORTED, leaves that figure unknown (encodings below), never fails a sample.
 *
 * gsched GPU i is found by its PCI bus id when the caller knows one, else as NVML device
 * index i (synthetic GPUs of `gsched-workerd --gpus N` on a machine with real ones). Xid
 * errors come through an NVML event set registered for critical Xids on every GPU found,
 * read without waiting at each sample.
 *
 * Threads: open and close on any thread; wrk_nvml_sample() on one thread at a time (the
 * worker calls it from libuv's pool, one sample in flight). The object is the caller's to
 * close.
 */
#ifndef WRK_NVML_H
#define WRK_NVML_H

#include <stdbool.h>
#include <stdint.h>

/* Most compute processes kept per GPU and sample; further ones are dropped. */
#define WRK_NVML_MAX_PROCS 64

struct wrk_nvml_proc {
    uint32_t pid;        /* in the host's pid namespace */
    uint64_t memory_mib; /* 0 when NVML does not say (e.g. under MIG) */
};

/*
 * One GPU at one moment. Unknown figures: util_pct, mem_util_pct, temperature_c and nprocs
 * -1; mem_total_mib, power_w and sm_clock_mhz 0 (mem_used_mib is then 0 too). No reasons
 * and no ECC error read the same as unknown ones: 0.
 */
struct wrk_nvml_sample {
    bool found;       /* NVML knows this GPU; false: every figure is unknown */
    int util_pct;     /* SM busy, 0-100, over NVML's last sample period */
    int mem_util_pct; /* memory controller busy, 0-100 */
    uint64_t mem_used_mib;
    uint64_t mem_total_mib;
    uint32_t power_w;  /* board power draw */
    int temperature_c; /* GPU core */
    uint32_t sm_clock_mhz;
    uint64_t throttle_reasons; /* NVML clocks-event reason bits */
    uint64_t ecc_uncorrected;  /* volatile: since the driver loaded */
    uint32_t xid_last;         /* latest Xid read in this sample, 0 none */
    uint32_t xid_count;        /* Xids read in this sample */
    int nprocs;                /* entries of procs used, -1 unknown */
    struct wrk_nvml_proc procs[WRK_NVML_MAX_PROCS];
};

struct wrk_nvml;

/*
 * Loads library (NULL: "libnvidia-ml.so.1"), initialises NVML and finds each of ngpus gsched
 * GPUs: bus_ids[i] is GPU i's PCI bus id ("0000:19:00.0") or "" for a synthetic GPU (bus_ids
 * may be NULL: all synthetic). A GPU NVML does not find is sampled as not found. Returns 0,
 * -ENOENT when the library, nvmlInit_v2 or a driver is missing (*ret_nvml untouched), or
 * -ENOMEM. Blocks for as long as nvmlInit_v2 takes.
 */
int wrk_nvml_open(const char *library, const char *const *bus_ids, int ngpus,
                  struct wrk_nvml **ret_nvml);
/* Shuts NVML down (the library stays mapped, see nvml.c). Accepts NULL. */
void wrk_nvml_close(struct wrk_nvml *nvml);

int wrk_nvml_ngpus(const struct wrk_nvml *nvml);
/* How many of the GPUs NVML found. */
int wrk_nvml_found(const struct wrk_nvml *nvml);

/* Fills out[0..ngpus-1] with one sample of every GPU and the Xids pending since the last
 * call. Returns 0: a figure NVML cannot give is left unknown rather than failing. */
int wrk_nvml_sample(struct wrk_nvml *nvml, struct wrk_nvml_sample *out);

#endif
