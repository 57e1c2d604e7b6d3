/*
 * attention_cudnn_none.cu: the cuDNN attention path (gpu.h, gpu_internal.h) for a CUDA build
 * that did not find cuDNN: it cannot be turned on, so attention.cu always runs the kernels
 * of our own, and it says why.
 */
#include <cerrno>

#include "kernels/gpu_internal.h"

extern "C" bool gs_kern_cudnn_built(void)
{
    return false;
}

extern "C" int gs_kern_gpu_set_attention_cudnn(struct gs_kern_gpu *g, bool on)
{
    if (g == NULL)
        return -EINVAL;
    if (!on)
        return 0;
    return gs_kern_dev_fail(-ENOTSUP, "this build has no cuDNN (cudnn.h and libcudnn were not "
                                      "found beside CUDA)");
}

extern "C" int gs_kern_gpu_attention_prepare(struct gs_kern_gpu *g, int, int, int, int,
                                             enum gs_kern_dtype)
{
    return gs_kern_gpu_set_attention_cudnn(g, true);
}

extern "C" bool gs_kern_gpu_attention_on_cudnn(const struct gs_kern_gpu *, int, int, int, int,
                                               enum gs_kern_dtype)
{
    return false;
}

extern "C" const char *gs_kern_gpu_attention_engine(const struct gs_kern_gpu *)
{
    return "";
}

extern "C" size_t gs_kern_gpu_attention_scratch_bytes(const struct gs_kern_gpu *)
{
    return 0;
}

bool gs_kern_gpu_cudnn_takes(const struct gs_kern_gpu *, int, int, int, int, enum gs_kern_dtype,
                             const void *const *, int)
{
    return false;
}

int gs_kern_gpu_cudnn_fwd(struct gs_kern_gpu *, void *, float *, const void *, int, int, int, int,
                          enum gs_kern_dtype)
{
    return -ENOTSUP;
}

int gs_kern_gpu_cudnn_bwd(struct gs_kern_gpu *, void *, const void *, const void *, const float *,
                          const void *, int, int, int, int, enum gs_kern_dtype)
{
    return -ENOTSUP;
}

void gs_kern_gpu_cudnn_free(struct gs_kern_gpu *)
{
}
