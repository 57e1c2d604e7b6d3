/*
 * gpu_context.cu: the execution context of the CUDA twins (gpu.h) and the plumbing around it:
 * the context itself (a device, a non-blocking compute stream, a cuBLASLt handle, the
 * caller's workspace, the TF32 switch), device facts, the workspace size every kernel's
 * shapes need, extra streams and events, asynchronous copies, and CUDA Graph capture.
 *
 * Nothing here computes: every kernel lives in its own .cu file and only reads the context.
 * Work is split by stream order alone: every twin enqueues on g->stream, so kernels run one
 * after another and each may use the workspace from its start (gpu_internal.h); the graph
 * calls capture exactly that stream. A context belongs to one thread at a time (gpu.h).
 *
 * There is no arithmetic in this file, so nothing here bears on determinism or on a
 * row-/column-major mapping (matmul.cu has that). Every CUDA status goes through
 * gs_kern_dev_check() (cuBLASLt's through gs_kern_dev_check_blas()): -EIO with the text kept
 * for gs_kern_dev_last_error(). A capture the driver refuses is -ENOTSUP, its reason kept
 * the same way, and the thread's last-error state is cleared so the next launch check does
 * not report it again.
 */
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "kernels/gpu_internal.h"

/* --- the context ------------------------------------------------------------------------- */

/* cudaErrorInvalidDevice and friends mean "no such device", which callers treat as such. */
static int set_device(int device)
{
    cudaError_t status = cudaSetDevice(device);

    if (status == cudaErrorInvalidDevice || status == cudaErrorNoDevice ||
        status == cudaErrorInsufficientDriver) {
        gs_kern_dev_check(status);
        cudaGetLastError();
        return -ENODEV;
    }
    return gs_kern_dev_check(status);
}

extern "C" int gs_kern_gpu_new(int device, struct gs_kern_gpu **ret)
{
    struct gs_kern_gpu *g;
    int rc;

    if (ret == NULL || device < 0)
        return -EINVAL;
    rc = set_device(device);
    if (rc < 0)
        return rc;
    g = (struct gs_kern_gpu *)calloc(1, sizeof(*g));
    if (g == NULL)
        return -ENOMEM;
    g->device = device;
    rc = gs_kern_dev_check(
        cudaDeviceGetAttribute(&g->cc_major, cudaDevAttrComputeCapabilityMajor, device));
    if (rc < 0)
        goto out_free;
    rc = gs_kern_dev_check(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    if (rc < 0)
        goto out_free;
    rc = gs_kern_dev_check_blas(cublasLtCreate(&g->lt));
    if (rc < 0)
        goto out_stream;
    *ret = g;
    return 0;

out_stream:
    cudaStreamDestroy(g->stream);
out_free:
    free(g);
    return rc;
}

extern "C" void gs_kern_gpu_free(struct gs_kern_gpu *g)
{
    if (g == NULL)
        return;
    gs_kern_gpu_cudnn_free(g);
    if (g->lt != NULL)
        cublasLtDestroy(g->lt);
    if (g->stream != NULL)
        cudaStreamDestroy(g->stream);
    free(g);
}

extern "C" int gs_kern_gpu_device(const struct gs_kern_gpu *g)
{
    return g == NULL ? -EINVAL : g->device;
}

extern "C" void *gs_kern_gpu_stream(const struct gs_kern_gpu *g)
{
    return g == NULL ? NULL : (void *)g->stream;
}

/*
 * Dense (no sparsity) bf16 Tensor Core peaks from the vendors' datasheets, matched on the
 * device name; the first entry contained in the name wins, so the more specific names come
 * first. An unknown device gets 0, which callers print as "unknown" rather than guess.
 */
static const struct {
    const char *name;
    double flops;
} bf16_peaks[] = {
    {"H100 PCIe", 756e12}, {"H100 NVL", 835e12}, {"H200", 989e12},
    {"H100", 989e12},      {"A100", 312e12},     {"L40S", 362e12},
};

static double bf16_peak(const char *name)
{
    for (size_t i = 0; i < sizeof(bf16_peaks) / sizeof(bf16_peaks[0]); i++)
        if (strstr(name, bf16_peaks[i].name) != NULL)
            return bf16_peaks[i].flops;
    return 0.0;
}

/* cudaMemGetInfo answers for the current device: make it g's for the call, then restore. */
static int mem_info(int device, size_t *free_bytes, size_t *total_bytes)
{
    int prev = 0, rc;

    rc = gs_kern_dev_check(cudaGetDevice(&prev));
    if (rc < 0)
        return rc;
    if (prev != device && (rc = gs_kern_dev_check(cudaSetDevice(device))) < 0)
        return rc;
    rc = gs_kern_dev_check(cudaMemGetInfo(free_bytes, total_bytes));
    if (prev != device)
        cudaSetDevice(prev);
    return rc;
}

extern "C" int gs_kern_gpu_info(const struct gs_kern_gpu *g, struct gs_kern_gpu_info *ret)
{
    struct gs_kern_gpu_info info;
    cudaDeviceProp prop;
    size_t free_bytes = 0, total_bytes = 0;
    int rc;

    if (g == NULL || ret == NULL)
        return -EINVAL;
    rc = gs_kern_dev_check(cudaGetDeviceProperties(&prop, g->device));
    if (rc < 0)
        return rc;
    rc = mem_info(g->device, &free_bytes, &total_bytes);
    if (rc < 0)
        return rc;
    memset(&info, 0, sizeof(info));
    /* a longer name is cut (info is zeroed, so it stays terminated) */
    memcpy(info.name, prop.name, strnlen(prop.name, sizeof(info.name) - 1));
    info.major = prop.major;
    info.minor = prop.minor;
    info.sms = prop.multiProcessorCount;
    info.total_bytes = total_bytes;
    info.free_bytes = free_bytes;
    info.bf16_peak_flops = bf16_peak(prop.name);
    *ret = info;
    return 0;
}

extern "C" void gs_kern_gpu_set_workspace(struct gs_kern_gpu *g, void *ws, size_t bytes)
{
    if (g == NULL)
        return;
    g->ws = ws;
    g->ws_bytes = ws == NULL ? 0 : bytes;
}

extern "C" void gs_kern_gpu_set_tf32(struct gs_kern_gpu *g, bool allow)
{
    if (g != NULL)
        g->tf32 = allow;
}

extern "C" void gs_kern_gpu_set_attention_simt(struct gs_kern_gpu *g, bool simt)
{
    if (g != NULL)
        g->att_simt = simt;
}

extern "C" int gs_kern_gpu_sync(struct gs_kern_gpu *g)
{
    if (g == NULL)
        return -EINVAL;
    return gs_kern_dev_check(cudaStreamSynchronize(g->stream));
}

static size_t max_size(size_t a, size_t b)
{
    return a > b ? a : b;
}

extern "C" size_t gs_kern_gpu_ws_bytes(int B, int T, int C, int NH, int Vp, size_t n_grads)
{
    size_t bytes = GS_KERN_GPU_LT_WS_BYTES;
    int widest; /* the widest Linear output that may carry a bias: the MLP's 4C, the head */

    if (B <= 0 || T <= 0 || C <= 0 || NH <= 0 || Vp <= 0)
        return 0;
    widest = Vp > 4 * C ? Vp : 4 * C;
    bytes = max_size(bytes, gs_kern_gpu_attention_ws_bytes(B, T, NH));
    bytes = max_size(bytes, gs_kern_gpu_bias_ws_bytes(B * T, widest));
    return max_size(bytes, gs_kern_gpu_reduce_ws_bytes(B, T, C, Vp, n_grads));
}

/* --- streams, events, copies --------------------------------------------------------------- */

extern "C" int gs_kern_gpu_stream_new(void **ret)
{
    cudaStream_t stream;
    int rc;

    if (ret == NULL)
        return -EINVAL;
    rc = gs_kern_dev_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if (rc == 0)
        *ret = (void *)stream;
    return rc;
}

extern "C" void gs_kern_gpu_stream_free(void *stream)
{
    if (stream != NULL)
        cudaStreamDestroy((cudaStream_t)stream);
}

extern "C" int gs_kern_gpu_event_new(bool timing, void **ret)
{
    cudaEvent_t event;
    int rc;

    if (ret == NULL)
        return -EINVAL;
    rc = gs_kern_dev_check(
        cudaEventCreateWithFlags(&event, timing ? cudaEventDefault : cudaEventDisableTiming));
    if (rc == 0)
        *ret = (void *)event;
    return rc;
}

extern "C" void gs_kern_gpu_event_free(void *event)
{
    if (event != NULL)
        cudaEventDestroy((cudaEvent_t)event);
}

extern "C" int gs_kern_gpu_event_record(void *event, void *stream)
{
    if (event == NULL)
        return -EINVAL;
    return gs_kern_dev_check(cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream));
}

extern "C" int gs_kern_gpu_stream_wait(void *stream, void *event)
{
    if (event == NULL)
        return -EINVAL;
    return gs_kern_dev_check(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0));
}

extern "C" int gs_kern_gpu_event_sync(void *event)
{
    if (event == NULL)
        return -EINVAL;
    return gs_kern_dev_check(cudaEventSynchronize((cudaEvent_t)event));
}

extern "C" int gs_kern_gpu_event_ms(void *start, void *end, float *ret_ms)
{
    float ms = 0.0f;
    int rc;

    if (start == NULL || end == NULL || ret_ms == NULL)
        return -EINVAL;
    rc = gs_kern_dev_check(cudaEventElapsedTime(&ms, (cudaEvent_t)start, (cudaEvent_t)end));
    if (rc == 0)
        *ret_ms = ms;
    return rc;
}

extern "C" int gs_kern_gpu_stream_sync(void *stream)
{
    return gs_kern_dev_check(cudaStreamSynchronize((cudaStream_t)stream));
}

extern "C" int gs_kern_gpu_copy_async(void *dst, const void *src, size_t bytes, void *stream)
{
    if (bytes == 0)
        return 0;
    if (dst == NULL || src == NULL)
        return -EINVAL;
    return gs_kern_dev_check(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream));
}

extern "C" int gs_kern_gpu_memset_async(void *dst, int byte, size_t bytes, void *stream)
{
    if (bytes == 0)
        return 0;
    if (dst == NULL)
        return -EINVAL;
    return gs_kern_dev_check(cudaMemsetAsync(dst, byte, bytes, (cudaStream_t)stream));
}

/* --- CUDA Graphs --------------------------------------------------------------------------- */

/*
 * Thread-local mode: only this thread's own unsafe calls (a synchronising copy, say) break
 * the capture, so another thread's context working beside it cannot.
 */
extern "C" int gs_kern_gpu_capture_begin(struct gs_kern_gpu *g)
{
    if (g == NULL)
        return -EINVAL;
    return gs_kern_dev_check(cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal));
}

/* The reason is kept (gs_kern_dev_check) and the thread's last error cleared: a refused
 * capture leaves nothing behind that the next launch check would take for its own. */
static int refused(cudaError_t status)
{
    gs_kern_dev_check(status);
    cudaGetLastError();
    return -ENOTSUP;
}

extern "C" int gs_kern_gpu_capture_end(struct gs_kern_gpu *g, void **ret_graph)
{
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaError_t status;

    if (g == NULL || ret_graph == NULL)
        return -EINVAL;
    /* Ends the capture whatever happened inside it, so the stream is usable again. */
    status = cudaStreamEndCapture(g->stream, &graph);
    if (status == cudaSuccess && graph == NULL) /* invalidated: the documented NULL graph */
        status = cudaErrorStreamCaptureInvalidated;
    if (status != cudaSuccess) {
        if (graph != NULL)
            cudaGraphDestroy(graph);
        return refused(status);
    }
    status = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (status != cudaSuccess)
        return refused(status);
    *ret_graph = (void *)exec;
    return 0;
}

extern "C" int gs_kern_gpu_graph_launch(struct gs_kern_gpu *g, void *graph)
{
    if (g == NULL || graph == NULL)
        return -EINVAL;
    return gs_kern_dev_check(cudaGraphLaunch((cudaGraphExec_t)graph, g->stream));
}

extern "C" void gs_kern_gpu_graph_free(void *graph)
{
    if (graph != NULL)
        cudaGraphExecDestroy((cudaGraphExec_t)graph);
}
