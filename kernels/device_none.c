/*
 * device_none.c: device.h and the CUDA entry points of kernels/ for builds without CUDA.
 * Every call reports -ENODEV so callers take their CPU path; nothing here pretends to work.
 */
#include "kernels/adamw.h"
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

int gs_kern_adamw_cuda(float *d_param, const float *d_grad, float *d_m, float *d_v, size_t n,
                       const struct gs_kern_adamw *hp, void *stream)
{
    (void)d_param;
    (void)d_grad;
    (void)d_m;
    (void)d_v;
    (void)n;
    (void)hp;
    (void)stream;
    return -ENODEV;
}
