/*
 * attention_cudnn.h: what tests see of attention_cudnn.cu beyond gpu.h (built only where
 * cuDNN was found: GSCHED_HAVE_CUDNN). Plain C, no CUDA headers.
 */
#ifndef GS_KERN_ATTENTION_CUDNN_H
#define GS_KERN_ATTENTION_CUDNN_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/dtype.h"

#include <stdint.h>

/*
 * Builds and finalises, without a device, the forward graph (or the backward graph, in its
 * direct or dq_accum form) that gs_kern_gpu_attention_prepare() hands to cuDNN for these
 * shapes: every tensor and operation, and the operation graph. With device_json (cuDNN's
 * serialised device properties, as cuDNN 9.8+ takes them for deviceless builds), also asks
 * cuDNN's heuristics for that device: up to *ret_nengines of the engines they offer go to
 * engines, best first, their count to *ret_nengines (0 when device_json is NULL; setting up
 * the engines needs libcuda.so.1, a stub will do). 0, or -ENOTSUP / -EINVAL with the reason
 * in why (n bytes).
 */
int gs_kern_cudnn_check_graph(int B, int T, int C, int NH, enum gs_kern_dtype dt, bool bwd,
                              bool dq_accum, const char *device_json, int64_t *engines,
                              int *ret_nengines, char *why, size_t n);

#endif
