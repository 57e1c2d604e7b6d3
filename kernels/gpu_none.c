/*
 * gpu_none.c: gpu.h for builds without CUDA. Every call that would touch a device reports
 * -ENODEV, so callers take their CPU path; nothing here pretends to work. (Built with
 * -Wno-unused-parameter: the arguments exist only to match gpu.h.)
 */
#include "kernels/gpu.h"

#include <errno.h>

int gs_kern_gpu_new(int device, struct gs_kern_gpu **ret)
{
    return -ENODEV;
}

void gs_kern_gpu_free(struct gs_kern_gpu *g)
{
}

int gs_kern_gpu_device(const struct gs_kern_gpu *g)
{
    return -ENODEV;
}

void *gs_kern_gpu_stream(const struct gs_kern_gpu *g)
{
    return NULL;
}

int gs_kern_gpu_info(const struct gs_kern_gpu *g, struct gs_kern_gpu_info *ret)
{
    return -ENODEV;
}

void gs_kern_gpu_set_workspace(struct gs_kern_gpu *g, void *ws, size_t bytes)
{
}

void gs_kern_gpu_set_tf32(struct gs_kern_gpu *g, bool allow)
{
}

bool gs_kern_cudnn_built(void)
{
    return false;
}

int gs_kern_gpu_set_attention_cudnn(struct gs_kern_gpu *g, bool on)
{
    return -ENODEV;
}

int gs_kern_gpu_attention_prepare(struct gs_kern_gpu *g, int B, int T, int C, int NH,
                                  enum gs_kern_dtype dt)
{
    return -ENODEV;
}

bool gs_kern_gpu_attention_on_cudnn(const struct gs_kern_gpu *g, int B, int T, int C, int NH,
                                    enum gs_kern_dtype dt)
{
    return false;
}

const char *gs_kern_gpu_attention_engine(const struct gs_kern_gpu *g)
{
    return "";
}

size_t gs_kern_gpu_attention_scratch_bytes(const struct gs_kern_gpu *g)
{
    return 0;
}

void gs_kern_gpu_set_attention_simt(struct gs_kern_gpu *g, bool simt)
{
}

int gs_kern_gpu_sync(struct gs_kern_gpu *g)
{
    return -ENODEV;
}

size_t gs_kern_gpu_ws_bytes(int B, int T, int C, int NH, int Vp, size_t n_grads)
{
    return 0;
}

int gs_kern_gpu_stream_new(void **ret)
{
    return -ENODEV;
}

void gs_kern_gpu_stream_free(void *stream)
{
}

int gs_kern_gpu_event_new(bool timing, void **ret)
{
    return -ENODEV;
}

void gs_kern_gpu_event_free(void *event)
{
}

int gs_kern_gpu_event_record(void *event, void *stream)
{
    return -ENODEV;
}

int gs_kern_gpu_stream_wait(void *stream, void *event)
{
    return -ENODEV;
}

int gs_kern_gpu_event_sync(void *event)
{
    return -ENODEV;
}

int gs_kern_gpu_event_ms(void *start, void *end, float *ret_ms)
{
    return -ENODEV;
}

int gs_kern_gpu_stream_sync(void *stream)
{
    return -ENODEV;
}

int gs_kern_gpu_copy_async(void *dst, const void *src, size_t bytes, void *stream)
{
    return -ENODEV;
}

int gs_kern_gpu_memset_async(void *dst, int byte, size_t bytes, void *stream)
{
    return -ENODEV;
}

int gs_kern_gpu_capture_begin(struct gs_kern_gpu *g)
{
    return -ENODEV;
}

int gs_kern_gpu_capture_end(struct gs_kern_gpu *g, void **ret_graph)
{
    return -ENODEV;
}

int gs_kern_gpu_graph_launch(struct gs_kern_gpu *g, void *graph)
{
    return -ENODEV;
}

void gs_kern_gpu_graph_free(void *graph)
{
}

int gs_kern_gpu_encoder_fwd(struct gs_kern_gpu *g, void *out, const int32_t *tokens,
                            const void *wte, const void *wpe, int B, int T, int C, int V,
                            enum gs_kern_dtype dt)
{
    return -ENODEV;
}

int gs_kern_gpu_encoder_bwd(struct gs_kern_gpu *g, float *dwte, float *dwpe, const void *dout,
                            const int32_t *tokens, const int32_t *order, const int32_t *starts,
                            int nuniq, int B, int T, int C, int V, enum gs_kern_dtype dt)
{
    return -ENODEV;
}

int gs_kern_gpu_layernorm_fwd(struct gs_kern_gpu *g, void *out, float *mean, float *rstd,
                              const void *inp, const void *weight, const void *bias, int N, int C,
                              enum gs_kern_dtype dt)
{
    return -ENODEV;
}

int gs_kern_gpu_residual_layernorm_fwd(struct gs_kern_gpu *g, void *res, void *out, float *mean,
                                       float *rstd, const void *a, const void *b,
                                       const void *weight, const void *bias, int N, int C,
                                       enum gs_kern_dtype dt)
{
    return -ENODEV;
}

int gs_kern_gpu_layernorm_bwd(struct gs_kern_gpu *g, void *dinp, float *dweight, float *dbias,
                              const void *dout, const void *inp, const void *weight,
                              const float *mean, const float *rstd, int N, int C,
                              enum gs_kern_dtype dt)
{
    return -ENODEV;
}

int gs_kern_gpu_matmul_fwd(struct gs_kern_gpu *g, void *out, void *pre_gelu, const void *inp,
                           const void *w, const void *bias, int N, int C, int OC,
                           enum gs_kern_dtype dt)
{
    return -ENODEV;
}

int gs_kern_gpu_matmul_bwd(struct gs_kern_gpu *g, void *dinp, float *dw, float *dbias,
                           const void *dout, const void *inp, const void *w, const void *pre_gelu,
                           int N, int C, int OC, enum gs_kern_dtype dt)
{
    return -ENODEV;
}

int gs_kern_gpu_attention_fwd(struct gs_kern_gpu *g, void *out, float *lse, const void *qkv, int B,
                              int T, int C, int NH, enum gs_kern_dtype dt)
{
    return -ENODEV;
}

int gs_kern_gpu_attention_bwd(struct gs_kern_gpu *g, void *dqkv, const void *dout, const void *out,
                              const float *lse, const void *qkv, int B, int T, int C, int NH,
                              enum gs_kern_dtype dt)
{
    return -ENODEV;
}

int gs_kern_gpu_gelu_fwd(struct gs_kern_gpu *g, void *out, const void *inp, size_t n,
                         enum gs_kern_dtype dt)
{
    return -ENODEV;
}

int gs_kern_gpu_gelu_bwd(struct gs_kern_gpu *g, void *dinp, const void *inp, const void *dout,
                         size_t n, enum gs_kern_dtype dt)
{
    return -ENODEV;
}

int gs_kern_gpu_residual_fwd(struct gs_kern_gpu *g, void *out, const void *a, const void *b,
                             size_t n, enum gs_kern_dtype dt)
{
    return -ENODEV;
}

int gs_kern_gpu_residual_bwd(struct gs_kern_gpu *g, void *da, void *db, const void *dout, size_t n,
                             enum gs_kern_dtype dt)
{
    return -ENODEV;
}

int gs_kern_gpu_classifier(struct gs_kern_gpu *g, void *logits, float *losses,
                           const int32_t *targets, int N, int V, int Vp, float scale, bool backward,
                           enum gs_kern_dtype dt)
{
    return -ENODEV;
}

int gs_kern_gpu_sum_losses(struct gs_kern_gpu *g, float *acc, const float *losses,
                           const int32_t *targets, int N)
{
    return -ENODEV;
}

int gs_kern_gpu_grad_stats(struct gs_kern_gpu *g, float *grad, size_t n, float inv_scale,
                           float *out)
{
    return -ENODEV;
}

int gs_kern_gpu_adamw(struct gs_kern_gpu *g, float *param, const float *grad, float *m, float *v,
                      size_t n, const struct gs_kern_adamw *hp, float grad_scale, void *copy,
                      enum gs_kern_dtype dt)
{
    return -ENODEV;
}

int gs_kern_gpu_cast(struct gs_kern_gpu *g, void *dst, enum gs_kern_dtype dt, const void *src,
                     enum gs_kern_dtype st, size_t n)
{
    return -ENODEV;
}
