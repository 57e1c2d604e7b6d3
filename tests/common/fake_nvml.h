/*
 * fake_nvml.h: what the two halves of the fake libnvidia-ml.so.1 share: fake_nvml.c (init,
 * device handles, NVLinks) and fake_nvml_script.c (the telemetry entry points, answered
 * from a script file; its format is described there and in tests/README.md).
 *
 * A device handle is a number, never a pointer: bus number + 1 for a device found by PCI
 * bus id, FAKE_NVML_BY_INDEX + i for NVML device index i. Only gsched's tests load this
 * library, one thread at a time.
 */
#ifndef FAKE_NVML_H
#define FAKE_NVML_H

#include <stdbool.h>
#include <stdint.h>

#include "common/nvml_abi.h"

#define FAKE_NVML_BY_INDEX 0x10000u

/* The figures a script line sets; a figure not set is NOT_SUPPORTED. */
enum fake_field {
    FAKE_UTIL = 1 << 0,
    FAKE_MEM_UTIL = 1 << 1,
    FAKE_MEM_USED = 1 << 2,
    FAKE_MEM_TOTAL = 1 << 3,
    FAKE_POWER = 1 << 4,
    FAKE_TEMP = 1 << 5,
    FAKE_CLOCK = 1 << 6,
    FAKE_THROTTLE = 1 << 7,
    FAKE_ECC = 1 << 8,
    FAKE_XID = 1 << 9,
    FAKE_PIDS = 1 << 10,
};

#define FAKE_MAX_PIDS 128

struct fake_proc {
    unsigned int pid;
    unsigned long long memory_mib;
};

/* One `gpu I ...` or `bus=... ...` line of the script. */
struct fake_state {
    bool by_bus;        /* else by index */
    unsigned index;     /* by index */
    unsigned bus;       /* by bus id: its bus number */
    double at;          /* seconds after nvmlInit_v2 */
    unsigned fields;    /* enum fake_field bits */
    uint64_t text_hash; /* of the line, for "Xid delivered once" */
    unsigned util, mem_util, power_w, sm_clock_mhz, xid;
    int temp_c;
    unsigned long long mem_used_mib, mem_total_mib, throttle, ecc;
    int nprocs;
    struct fake_proc procs[FAKE_MAX_PIDS];
};

/* fake_nvml_script.c */
/* nvmlInit_v2: the script's clock starts at the first call. */
void fake_script_start_clock(void);
/* `count N` of the script; 0 without one. */
unsigned fake_script_count(void);
/* Whether a `bus=` line names this bus. */
bool fake_script_names_bus(unsigned bus);
/* The line in force for device now, or NULL. */
const struct fake_state *fake_script_current(nvml_device_t device);
/* Marks the line's Xid as delivered; false when it was already. */
bool fake_script_take_xid(const struct fake_state *state);

#endif
