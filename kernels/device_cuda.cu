/*
 * device_cuda.cu: device.h on the CUDA runtime. Each call maps its cudaError_t through
 * gs_kern_dev_check() (a cuBLASLt status through gs_kern_dev_check_blas()), which keeps the
 * error text per thread for the caller's log line.
 */
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cublasLt.h>
#include <cuda_runtime.h>

extern "C" {
#include "kernels/device.h"
#include "kernels/device_internal.h"
}

static thread_local char last_error[512];

/* Keeps "NAME: text" for gs_kern_dev_last_error() and gives the error code every caller maps
 * a CUDA or cuBLASLt failure to. */
static int keep_error(const char *name, const char *text)
{
    snprintf(last_error, sizeof(last_error), "%s: %s", name, text);
    return -EIO;
}

extern "C" int gs_kern_dev_fail(int rc, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return rc;
}

extern "C" int gs_kern_dev_check(int cuda_status)
{
    cudaError_t status = (cudaError_t)cuda_status;

    if (status == cudaSuccess)
        return 0;
    return keep_error(cudaGetErrorName(status), cudaGetErrorString(status));
}

extern "C" int gs_kern_dev_check_blas(int cublas_status)
{
    cublasStatus_t status = (cublasStatus_t)cublas_status;

    if (status == CUBLAS_STATUS_SUCCESS)
        return 0;
    return keep_error(cublasLtGetStatusName(status), cublasLtGetStatusString(status));
}

extern "C" bool gs_kern_cuda_built(void)
{
    return true;
}

extern "C" int gs_kern_dev_count(int *ret_count)
{
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);

    /* No driver or no device is an answer (zero devices), not a failure. */
    if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) {
        cudaGetLastError();
        *ret_count = 0;
        return 0;
    }
    if (status != cudaSuccess)
        return gs_kern_dev_check(status);
    *ret_count = count;
    return 0;
}

extern "C" int gs_kern_dev_alloc(size_t bytes, void **ret_ptr)
{
    void *p = NULL;
    int rc = gs_kern_dev_check(cudaMalloc(&p, bytes));

    if (rc < 0)
        return rc == -EIO && bytes > 0 ? -ENOMEM : rc;
    *ret_ptr = p;
    return 0;
}

extern "C" void gs_kern_dev_free(void *ptr)
{
    if (ptr != NULL)
        cudaFree(ptr);
}

extern "C" int gs_kern_host_alloc(size_t bytes, void **ret_ptr)
{
    void *p = NULL;
    int rc = gs_kern_dev_check(cudaMallocHost(&p, bytes));

    if (rc < 0)
        return rc == -EIO && bytes > 0 ? -ENOMEM : rc;
    *ret_ptr = p;
    return 0;
}

extern "C" void gs_kern_host_free(void *ptr)
{
    if (ptr != NULL)
        cudaFreeHost(ptr);
}

extern "C" int gs_kern_dev_copy_to(void *dst_dev, const void *src_host, size_t bytes)
{
    return gs_kern_dev_check(cudaMemcpy(dst_dev, src_host, bytes, cudaMemcpyHostToDevice));
}

extern "C" int gs_kern_dev_copy_from(void *dst_host, const void *src_dev, size_t bytes)
{
    return gs_kern_dev_check(cudaMemcpy(dst_host, src_dev, bytes, cudaMemcpyDeviceToHost));
}

extern "C" int gs_kern_dev_sync(void)
{
    return gs_kern_dev_check(cudaDeviceSynchronize());
}

extern "C" const char *gs_kern_dev_last_error(void)
{
    return last_error;
}
