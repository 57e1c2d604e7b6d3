/*
 * matmul.cu: the Linear layers' products on the GPU (gs_kern_gpu_matmul_fwd/bwd, gpu.h), the
 * twin of matmul_cpu.c, through cuBLASLt on the context's handle, stream and workspace (the
 * first GS_KERN_GPU_LT_WS_BYTES of g->ws).
 *
 * Row- to column-major. cuBLASLt is column-major; a row-major [R,K] array with row stride K is
 * the column-major K x R matrix with leading dimension K, i.e. its transpose. So each
 * row-major product is computed as its transpose, D = op(A) . op(B) with m x n x k:
 *   forward  out[N,OC] = inp[N,C] . W[OC,C]^T      ->  out^T (OC x N, ld OC) =
 *            W as stored (C x OC, ld C), TRANSPOSE  .  inp as stored (C x N, ld C), N;
 *            m = OC, n = N, k = C; the bias (length OC = D's rows) and pre_gelu (OC x N,
 *            ld OC) are per row of D, as cuBLASLt's epilogues want.
 *   dinp     dinp[N,C] = dout[N,OC] . W[OC,C]      ->  dinp^T (C x N, ld C) =
 *            W as stored (C x OC, ld C), N  .  dout as stored (OC x N, ld OC), N;
 *            m = C, n = N, k = OC; pre_gelu (C x N, ld C) is the DGELU epilogue's input.
 *   dW       dW[OC,C] += dout^T . inp              ->  dW^T (C x OC, ld C) +=
 *            inp as stored (C x N, ld C), N  .  dout as stored (OC x N, ld OC), TRANSPOSE;
 *            m = C, n = OC, k = N; C = D = dW in fp32 with beta = 1 (accumulating).
 *
 * Precision: bf16/fp16 operands as they are with fp32 accumulation (CUBLAS_COMPUTE_32F, fp32
 * scale), activations rounded once into the storage dtype, dW in fp32; fp32 operands in
 * full fp32 (CUBLAS_COMPUTE_32F) unless the context allows TF32 (_FAST_TF32). The GELU is
 * fused where cuBLASLt can: forward GELU_AUX(_BIAS) writes gelu(x) to out and x to pre_gelu;
 * backward DGELU multiplies dinp by gelu'(pre_gelu) before rounding. cuBLASLt's GELU is the
 * tanh approximation, 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), as pointwise_cpu.c's (the
 * cuBLASLt documentation says so in the notes to cublasLtEpilogue_t). Where
 * cuBLASLt has no algorithm for an epilogue (or the aux leading dimension is not a multiple
 * of 8, which it requires), the same result comes in steps: the bias pre-filled into the
 * output and added as C with beta = 1, a plain product, then pointwise.cu's GELU twins (the
 * CPU's order: one more rounding than the fused path).
 *
 * dbias[OC] += column sums of dout runs as two small kernels after the products (so it may
 * reuse the workspace from offset 0: the stream runs them in order): per-chunk partial sums
 * over fixed row chunks, then one thread per column adds its chunks in order.
 *
 * Determinism: no atomics here. cuBLAS promises the same bits on every run for one toolkit
 * version, architecture and SM count; its caveat for several active streams concerns the
 * workspaces the library picks for itself, while here every call passes the caller's
 * workspace and an explicit algorithm: the heuristic's first choice for the shapes, dtypes
 * and pointer alignments, the same on every call. The bias sums run in an order fixed by
 * the shapes alone. Descriptors are built and the heuristic asked on every call: cuBLASLt
 * keeps its own heuristics cache (8192 problems by default), so a repeat costs microseconds
 * of host time, and a CUDA Graph takes even that off the step.
 */
#include <cerrno>
#include <cstdint>

#include "kernels/gpu_internal.h"

static bool dtype_ok(enum gs_kern_dtype dt)
{
    return dt == GS_KERN_F32 || dt == GS_KERN_BF16 || dt == GS_KERN_F16;
}

static cudaDataType_t cuda_type(enum gs_kern_dtype dt)
{
    if (dt == GS_KERN_BF16)
        return CUDA_R_16BF;
    if (dt == GS_KERN_F16)
        return CUDA_R_16F;
    return CUDA_R_32F;
}

/* --- small kernels: bias fill, bias gradient ---------------------------------------------- */

/* out[r, c] = bias[c]: the C operand of the unfused path, added with beta = 1. */
static __global__ void fill_rows(void *out, const void *bias, int N, int OC, int dt)
{
    size_t n = (size_t)N * (size_t)OC;

    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        gs_dstore(out, i, dt, gs_dload(bias, i % (size_t)OC, dt));
}

#define BIAS_TX 32    /* columns per block (one warp's width: coalesced rows) */
#define BIAS_TY 8     /* row lanes per block */
#define BIAS_ROWS 256 /* rows per chunk, doubled while there would be > BIAS_MAX_CHUNKS */
#define BIAS_MAX_CHUNKS 65535

/* Chunks of rows for the bias gradient: a function of N alone. */
static int bias_chunk_rows(int N)
{
    int rows = BIAS_ROWS;

    while ((N + rows - 1) / rows > BIAS_MAX_CHUNKS)
        rows *= 2;
    return rows;
}

size_t gs_kern_gpu_bias_ws_bytes(int N, int OC)
{
    int rows;

    if (N <= 0 || OC <= 0)
        return 0;
    rows = bias_chunk_rows(N);
    return (size_t)((N + rows - 1) / rows) * (size_t)OC * sizeof(float);
}

/*
 * part[chunk, c] = sum of dout[r, c] over the chunk's rows: lane y of the block sums rows
 * r0 + y, r0 + y + BIAS_TY, ... in order, then lane 0 adds the BIAS_TY lanes in order.
 */
static __global__ void bias_partials(float *part, const void *dout, int N, int OC, int rows, int dt)
{
    __shared__ float lane[BIAS_TY][BIAS_TX];
    int col = blockIdx.x * BIAS_TX + threadIdx.x;
    int r0 = blockIdx.y * rows, r1 = r0 + rows < N ? r0 + rows : N;
    float sum = 0.0f;

    if (col < OC)
        for (int r = r0 + threadIdx.y; r < r1; r += BIAS_TY)
            sum += gs_dload(dout, (size_t)r * (size_t)OC + (size_t)col, dt);
    lane[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && col < OC) {
        float total = 0.0f;

        for (int y = 0; y < BIAS_TY; y++)
            total += lane[y][threadIdx.x];
        part[(size_t)blockIdx.y * (size_t)OC + (size_t)col] = total;
    }
}

/* dbias[c] += the chunks' partial sums of column c, in chunk order. */
static __global__ void bias_finish(float *dbias, const float *part, int chunks, int OC)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;

    if (col >= OC)
        return;
    for (int c = 0; c < chunks; c++)
        sum += part[(size_t)c * (size_t)OC + (size_t)col];
    dbias[col] += sum;
}

static int launched(void)
{
    return gs_kern_dev_check(cudaGetLastError());
}

static int bias_grad(struct gs_kern_gpu *g, float *dbias, const void *dout, int N, int OC,
                     enum gs_kern_dtype dt)
{
    int rows = bias_chunk_rows(N), chunks = (N + rows - 1) / rows;
    dim3 grid((unsigned)((OC + BIAS_TX - 1) / BIAS_TX), (unsigned)chunks);
    int rc;

    bias_partials<<<grid, dim3(BIAS_TX, BIAS_TY), 0, g->stream>>>((float *)g->ws, dout, N, OC, rows,
                                                                  dt);
    rc = launched();
    if (rc < 0)
        return rc;
    bias_finish<<<(unsigned)((OC + 255) / 256), 256, 0, g->stream>>>(dbias, (const float *)g->ws,
                                                                     chunks, OC);
    return launched();
}

/* The unfused path's GELU: pointwise.cu's twins, in place on a. */
static int elementwise(struct gs_kern_gpu *g, bool backward, void *a, const void *x, size_t n,
                       enum gs_kern_dtype dt)
{
    return backward ? gs_kern_gpu_gelu_bwd(g, a, x, a, n, dt)
                    : gs_kern_gpu_gelu_fwd(g, a, x, n, dt);
}

/* --- cuBLASLt ------------------------------------------------------------------------------ */

/* One column-major product D[m,n] = op(A) . op(B) + beta * D, with an optional epilogue. */
struct lt_gemm {
    uint64_t m, n, k;
    cublasOperation_t ta, tb;
    const void *a, *b;
    void *d; /* also C */
    int64_t lda, ldb, ldd;
    cudaDataType_t ab_type, d_type;
    float beta;
    cublasLtEpilogue_t epilogue;
    const void *bias; /* BIAS epilogues */
    const void *aux;  /* GELU_AUX (written) and DGELU (read) epilogues */
    int64_t aux_ld;
};

struct lt_plan {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t heur;
};

static void plan_release(struct lt_plan *p)
{
    if (p->pref != NULL)
        cublasLtMatmulPreferenceDestroy(p->pref);
    if (p->d != NULL)
        cublasLtMatrixLayoutDestroy(p->d);
    if (p->b != NULL)
        cublasLtMatrixLayoutDestroy(p->b);
    if (p->a != NULL)
        cublasLtMatrixLayoutDestroy(p->a);
    if (p->desc != NULL)
        cublasLtMatmulDescDestroy(p->desc);
}

static int set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                    const void *value, size_t bytes)
{
    return gs_kern_dev_check_blas(cublasLtMatmulDescSetAttribute(desc, attr, value, bytes));
}

static int plan_desc(struct lt_plan *p, const struct lt_gemm *q, bool tf32)
{
    cublasComputeType_t compute =
        q->ab_type == CUDA_R_32F && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    int rc = gs_kern_dev_check_blas(cublasLtMatmulDescCreate(&p->desc, compute, CUDA_R_32F));

    if (rc == 0)
        rc = set_desc(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &q->ta, sizeof(q->ta));
    if (rc == 0)
        rc = set_desc(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &q->tb, sizeof(q->tb));
    if (rc == 0)
        rc = set_desc(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &q->epilogue, sizeof(q->epilogue));
    if (rc == 0 && q->bias != NULL)
        rc = set_desc(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &q->bias, sizeof(q->bias));
    if (rc == 0 && q->aux != NULL)
        rc = set_desc(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &q->aux, sizeof(q->aux));
    if (rc == 0 && q->aux != NULL)
        rc = set_desc(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &q->aux_ld, sizeof(q->aux_ld));
    return rc;
}

static int plan_layouts(struct lt_plan *p, const struct lt_gemm *q)
{
    bool an = q->ta == CUBLAS_OP_N, bn = q->tb == CUBLAS_OP_N;
    int rc = gs_kern_dev_check_blas(
        cublasLtMatrixLayoutCreate(&p->a, q->ab_type, an ? q->m : q->k, an ? q->k : q->m, q->lda));

    if (rc == 0)
        rc = gs_kern_dev_check_blas(cublasLtMatrixLayoutCreate(&p->b, q->ab_type, bn ? q->k : q->n,
                                                               bn ? q->n : q->k, q->ldb));
    if (rc == 0)
        rc = gs_kern_dev_check_blas(
            cublasLtMatrixLayoutCreate(&p->d, q->d_type, q->m, q->n, q->ldd));
    return rc;
}

/* The largest power of two up to 256 that divides the address: the heuristic must only
 * offer kernels that can load from where the operands really are. */
static uint32_t alignment(const void *ptr)
{
    uintptr_t a = (uintptr_t)ptr;
    uint32_t align = 256;

    while (align > 1 && a % align != 0)
        align /= 2;
    return align;
}

static int set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                    const void *value, size_t bytes)
{
    return gs_kern_dev_check_blas(cublasLtMatmulPreferenceSetAttribute(pref, attr, value, bytes));
}

/*
 * -ENOTSUP when cuBLASLt has no algorithm for this problem: none found, or the heuristic
 * calls the combination unsupported or invalid (which it may do for an epilogue a dtype
 * lacks). The status text is kept either way, for when no fallback works either.
 */
static int plan_algo(struct lt_plan *p, const struct lt_gemm *q, cublasLtHandle_t lt,
                     uint64_t ws_bytes)
{
    uint32_t align_a = alignment(q->a), align_b = alignment(q->b), align_d = alignment(q->d);
    cublasStatus_t status;
    int found = 0;
    int rc = gs_kern_dev_check_blas(cublasLtMatmulPreferenceCreate(&p->pref));

    if (rc == 0)
        rc = set_pref(p->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                      sizeof(ws_bytes));
    if (rc == 0)
        rc = set_pref(p->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a,
                      sizeof(align_a));
    if (rc == 0)
        rc = set_pref(p->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b,
                      sizeof(align_b));
    if (rc == 0)
        rc = set_pref(p->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d,
                      sizeof(align_d));
    if (rc == 0)
        rc = set_pref(p->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d,
                      sizeof(align_d));
    if (rc < 0)
        return rc;
    status = cublasLtMatmulAlgoGetHeuristic(lt, p->desc, p->a, p->b, p->d, p->d, p->pref, 1,
                                            &p->heur, &found);
    if (status == CUBLAS_STATUS_SUCCESS && found == 0)
        status = CUBLAS_STATUS_NOT_SUPPORTED;
    rc = gs_kern_dev_check_blas(status);
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE)
        return -ENOTSUP;
    return rc;
}

/* Queues one product; -ENOTSUP when cuBLASLt has no algorithm for it (nothing queued). */
static int lt_run(struct gs_kern_gpu *g, const struct lt_gemm *q)
{
    struct lt_plan p = {};
    size_t ws_bytes = g->ws_bytes < GS_KERN_GPU_LT_WS_BYTES ? g->ws_bytes : GS_KERN_GPU_LT_WS_BYTES;
    const float alpha = 1.0f;
    int rc = plan_desc(&p, q, g->tf32);

    if (rc == 0)
        rc = plan_layouts(&p, q);
    if (rc == 0)
        rc = plan_algo(&p, q, g->lt, ws_bytes);
    if (rc == 0)
        rc = gs_kern_dev_check_blas(cublasLtMatmul(g->lt, p.desc, &alpha, q->a, p.a, q->b, p.b,
                                                   &q->beta, q->d, p.d, q->d, p.d, &p.heur.algo,
                                                   ws_bytes ? g->ws : NULL, ws_bytes, g->stream));
    plan_release(&p);
    return rc;
}

/* As lt_run, with "no algorithm" an error: -EIO, the heuristic's status kept as its text. */
static int lt_run_plain(struct gs_kern_gpu *g, const struct lt_gemm *q)
{
    int rc = lt_run(g, q);

    return rc == -ENOTSUP ? -EIO : rc;
}

/* --- the entry points ---------------------------------------------------------------------- */

static bool shape_bad(int N, int C, int OC, enum gs_kern_dtype dt)
{
    return N <= 0 || C <= 0 || OC <= 0 || !dtype_ok(dt);
}

static cublasLtEpilogue_t fwd_epilogue(bool bias, bool gelu)
{
    if (gelu)
        return bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
    return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

/* The unfused forward: bias pre-filled and added as C, the product into pre_gelu (or out),
 * then the GELU kernel. */
static int fwd_steps(struct gs_kern_gpu *g, struct lt_gemm *q, void *out, void *pre_gelu,
                     const void *bias, int N, int OC, enum gs_kern_dtype dt)
{
    void *target = pre_gelu != NULL ? pre_gelu : out;
    int rc;

    q->d = target;
    q->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    q->bias = NULL;
    q->aux = NULL;
    if (bias != NULL) {
        fill_rows<<<gs_kern_gpu_blocks((size_t)N * OC, 256, 65535), 256, 0, g->stream>>>(
            target, bias, N, OC, dt);
        rc = launched();
        if (rc < 0)
            return rc;
        q->beta = 1.0f;
    }
    rc = lt_run_plain(g, q);
    if (rc == 0 && pre_gelu != NULL)
        rc = elementwise(g, false, out, pre_gelu, (size_t)N * OC, dt);
    return rc;
}

extern "C" int gs_kern_gpu_matmul_fwd(struct gs_kern_gpu *g, void *out, void *pre_gelu,
                                      const void *inp, const void *w, const void *bias, int N,
                                      int C, int OC, enum gs_kern_dtype dt)
{
    struct lt_gemm q = {};
    int rc = -ENOTSUP;

    if (g == NULL || out == NULL || inp == NULL || w == NULL || shape_bad(N, C, OC, dt))
        return -EINVAL;
    q.m = (uint64_t)OC, q.n = (uint64_t)N, q.k = (uint64_t)C;
    q.ta = CUBLAS_OP_T, q.tb = CUBLAS_OP_N;
    q.a = w, q.lda = C;
    q.b = inp, q.ldb = C;
    q.d = out, q.ldd = OC;
    q.ab_type = q.d_type = cuda_type(dt);
    q.epilogue = fwd_epilogue(bias != NULL, pre_gelu != NULL);
    q.bias = bias;
    q.aux = pre_gelu, q.aux_ld = OC;
    /* cuBLASLt wants the GELU input's leading dimension a multiple of 8 */
    if (pre_gelu == NULL || OC % 8 == 0)
        rc = lt_run(g, &q);
    if (rc != -ENOTSUP)
        return rc;
    return fwd_steps(g, &q, out, pre_gelu, bias, N, OC, dt);
}

/* dinp = dout . W, times gelu'(pre_gelu) when given: DGELU where cuBLASLt has it, else a
 * plain product and the GELU backward kernel in place. */
static int bwd_dinp(struct gs_kern_gpu *g, void *dinp, const void *dout, const void *w,
                    const void *pre_gelu, int N, int C, int OC, enum gs_kern_dtype dt)
{
    struct lt_gemm q = {};
    int rc = -ENOTSUP;

    q.m = (uint64_t)C, q.n = (uint64_t)N, q.k = (uint64_t)OC;
    q.ta = CUBLAS_OP_N, q.tb = CUBLAS_OP_N;
    q.a = w, q.lda = C;
    q.b = dout, q.ldb = OC;
    q.d = dinp, q.ldd = C;
    q.ab_type = q.d_type = cuda_type(dt);
    q.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    if (pre_gelu != NULL && C % 8 == 0) {
        q.epilogue = CUBLASLT_EPILOGUE_DGELU;
        q.aux = pre_gelu, q.aux_ld = C;
        rc = lt_run(g, &q);
        if (rc != -ENOTSUP)
            return rc;
        q.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
        q.aux = NULL;
    }
    rc = lt_run_plain(g, &q);
    if (rc == 0 && pre_gelu != NULL)
        rc = elementwise(g, true, dinp, pre_gelu, (size_t)N * C, dt);
    return rc;
}

/* dW[OC,C] += dout^T . inp, fp32 C = D with beta = 1. */
static int bwd_dw(struct gs_kern_gpu *g, float *dw, const void *dout, const void *inp, int N, int C,
                  int OC, enum gs_kern_dtype dt)
{
    struct lt_gemm q = {};

    q.m = (uint64_t)C, q.n = (uint64_t)OC, q.k = (uint64_t)N;
    q.ta = CUBLAS_OP_N, q.tb = CUBLAS_OP_T;
    q.a = inp, q.lda = C;
    q.b = dout, q.ldb = OC;
    q.d = dw, q.ldd = C;
    q.ab_type = cuda_type(dt);
    q.d_type = CUDA_R_32F;
    q.beta = 1.0f;
    q.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    return lt_run_plain(g, &q);
}

extern "C" int gs_kern_gpu_matmul_bwd(struct gs_kern_gpu *g, void *dinp, float *dw, float *dbias,
                                      const void *dout, const void *inp, const void *w,
                                      const void *pre_gelu, int N, int C, int OC,
                                      enum gs_kern_dtype dt)
{
    int rc = 0;

    if (g == NULL || dw == NULL || dout == NULL || inp == NULL || w == NULL ||
        shape_bad(N, C, OC, dt))
        return -EINVAL;
    if (dbias != NULL && (g->ws == NULL || g->ws_bytes < gs_kern_gpu_bias_ws_bytes(N, OC)))
        return -ENOSPC;
    if (dinp != NULL)
        rc = bwd_dinp(g, dinp, dout, w, pre_gelu, N, C, OC, dt);
    if (rc == 0)
        rc = bwd_dw(g, dw, dout, inp, N, C, OC, dt);
    if (rc == 0 && dbias != NULL)
        rc = bias_grad(g, dbias, dout, N, OC, dt);
    return rc;
}
