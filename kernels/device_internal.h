/*
 * device_internal.h: shared by the .cu files of kernels/ only. Maps a cudaError_t or a
 * cublasStatus_t (passed as int so that this header needs no CUDA include) to 0 or -EIO,
 * remembering its text for gs_kern_dev_last_error().
 */
#ifndef GS_KERN_DEVICE_INTERNAL_H
#define GS_KERN_DEVICE_INTERNAL_H

int gs_kern_dev_check(int cuda_status);
int gs_kern_dev_check_blas(int cublas_status);
/* Keeps the formatted text for gs_kern_dev_last_error() and returns rc: for failures that
 * are not a CUDA status (a library refusing a shape). */
int gs_kern_dev_fail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
