/*
 * nvml_abi.h: the parts of NVIDIA's nvml.h (NVML API 11/12) gsched uses, declared here so
 * that gsched builds without NVIDIA's headers: return codes, constants and the structs of
 * the versioned entry points common/topo_nvml.c (NVLinks) and worker/nvml.c (telemetry)
 * call through dlsym (common/dl.h), and which tests/common/fake_nvml.c answers.
 *
 * Enums are passed as int, which is what the C ABI makes of them. Handles are opaque.
 * Declarations only: nothing here links against NVML.
 */
#ifndef GS_NVML_ABI_H
#define GS_NVML_ABI_H

/* nvmlReturn_t */
#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_TIMEOUT 10

#define NVML_FEATURE_ENABLED 1
#define NVML_NVLINK_MAX_LINKS 18
#define NVML_TEMPERATURE_GPU 0               /* nvmlTemperatureSensors_t */
#define NVML_CLOCK_SM 1                      /* nvmlClockType_t */
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1 /* nvmlMemoryErrorType_t */
#define NVML_VOLATILE_ECC 0                  /* nvmlEccCounterType_t */
#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x8ull
#define NVML_VALUE_NOT_AVAILABLE (~0ull)

typedef struct nvml_device *nvml_device_t;
typedef struct nvml_event_set *nvml_event_set_t;

/* nvmlPciInfo_t as the _v2 and later entry points fill it. */
struct nvml_pci_info {
    char bus_id_legacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pci_device_id; /* device id << 16 | vendor id */
    unsigned int pci_subsystem_id;
    char bus_id[32];
};

/* nvmlUtilization_t: percent of the last sample period. */
struct nvml_utilization {
    unsigned int gpu;
    unsigned int memory;
};

/* nvmlMemory_t, in bytes. */
struct nvml_memory {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
};

/* nvmlProcessInfo_t as the _v3 process lists fill it. */
struct nvml_process_info {
    unsigned int pid;
    unsigned long long used_gpu_memory; /* bytes, or NVML_VALUE_NOT_AVAILABLE */
    unsigned int gpu_instance_id;
    unsigned int compute_instance_id;
};

/* nvmlEventData_t. */
struct nvml_event_data {
    nvml_device_t device;
    unsigned long long event_type;
    unsigned long long event_data; /* the Xid, for a critical Xid event */
    unsigned int gpu_instance_id;
    unsigned int compute_instance_id;
};

#endif
