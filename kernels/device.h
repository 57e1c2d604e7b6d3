/*
 * device.h: the little of the CUDA runtime the rest of gsched needs, behind gs_kern_ names so
 * that no file outside kernels/ includes a CUDA header. Built without CUDA, every function
 * returns -ENODEV and gs_kern_cuda_built() is false, so callers fall back to the CPU path.
 *
 * Memory from gs_kern_dev_alloc() is device memory, freed by gs_kern_dev_free() (NULL ok).
 * CUDA errors are mapped to -EIO, with the CUDA error string available via
 * gs_kern_dev_last_error() for the caller's log line. Thread-safe as the CUDA runtime is.
 */
#ifndef GS_KERN_DEVICE_H
#define GS_KERN_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

bool gs_kern_cuda_built(void);
/* Number of usable CUDA devices (0 when the driver finds none). -ENODEV without CUDA. */
int gs_kern_dev_count(int *ret_count);
int gs_kern_dev_alloc(size_t bytes, void **ret_ptr);
void gs_kern_dev_free(void *ptr);
/*
 * Page-locked host memory (cudaMallocHost): copies from it to a device run asynchronously
 * and at full bandwidth, which is why the data loader's batch buffers come from here when a
 * GPU is present. -ENODEV without CUDA, -ENOMEM (or -EIO) when the driver refuses.
 */
int gs_kern_host_alloc(size_t bytes, void **ret_ptr);
void gs_kern_host_free(void *ptr);
int gs_kern_dev_copy_to(void *dst_dev, const void *src_host, size_t bytes);
int gs_kern_dev_copy_from(void *dst_host, const void *src_dev, size_t bytes);
/* Waits for all work queued on the current device. */
int gs_kern_dev_sync(void);
/* Text of the last CUDA error seen by this thread, or "" . */
const char *gs_kern_dev_last_error(void);

#endif
