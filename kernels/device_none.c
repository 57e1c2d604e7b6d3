/*
 * device_none.c: device.h for builds without CUDA (gpu_none.c does gpu.h).
 * Every call reports -ENODEV so callers take their CPU path; nothing here pretends to work.
 */
#include "kernels/device.h"

#include <errno.h>

bool gs_kern_cuda_built(void)
{
    return false;
}

int gs_kern_dev_count(int *ret_count)
{
    (void)ret_count;
    return -ENODEV;
}

int gs_kern_dev_alloc(size_t bytes, void **ret_ptr)
{
    (void)bytes;
    (void)ret_ptr;
    return -ENODEV;
}

void gs_kern_dev_free(void *ptr)
{
    (void)ptr;
}

int gs_kern_host_alloc(size_t bytes, void **ret_ptr)
{
    (void)bytes;
    (void)ret_ptr;
    return -ENODEV;
}

void gs_kern_host_free(void *ptr)
{
    (void)ptr;
}

int gs_kern_dev_copy_to(void *dst_dev, const void *src_host, size_t bytes)
{
    (void)dst_dev;
    (void)src_host;
    (void)bytes;
    return -ENODEV;
}

int gs_kern_dev_copy_from(void *dst_host, const void *src_dev, size_t bytes)
{
    (void)dst_host;
    (void)src_dev;
    (void)bytes;
    return -ENODEV;
}

int gs_kern_dev_sync(void)
{
    return -ENODEV;
}

const char *gs_kern_dev_last_error(void)
{
    return "built without CUDA";
}
