/*
 * encoder_cpu.c: token + position embedding lookup, and its backward scatter-add into the
 * float embedding gradients.
 *
 * The backward pass is a scatter (two rows may hit the same token), so it is split by
 * channel, not by row: each thread owns a range of channels and adds every (b,t) row into it
 * in order. The sums are therefore the same for any thread count, and no two threads write
 * the same float.
 */
#include "kernels/ops.h"

#include <errno.h>

#include "kernels/cpu_internal.h"

#define COLS 64

static int check_tokens(const int32_t *tokens, size_t n, int V)
{
    for (size_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return -EINVAL;
    return 0;
}

static bool args_bad(const int32_t *tokens, int B, int T, int C, int V, enum gs_kern_dtype dt)
{
    return tokens == NULL || B <= 0 || T <= 0 || C <= 0 || V <= 0 || !gs_kern_dtype_ok(dt);
}

int gs_kern_encoder_fwd(void *out, const int32_t *tokens, const void *wte, const void *wpe, int B,
                        int T, int C, int V, enum gs_kern_dtype dt)
{
    size_t rows = (size_t)B * (size_t)T;

    if (out == NULL || wte == NULL || wpe == NULL || args_bad(tokens, B, T, C, V, dt))
        return -EINVAL;
    if (check_tokens(tokens, rows, V) < 0)
        return -EINVAL;
    GS_OMP(parallel for schedule(static))
    for (size_t r = 0; r < rows; r++) {
        size_t te = (size_t)tokens[r] * (size_t)C, pe = (r % (size_t)T) * (size_t)C;

        for (int c = 0; c < C; c++) {
            float v = gs_kern_load(wte, te + (size_t)c, dt) + gs_kern_load(wpe, pe + (size_t)c, dt);

            gs_kern_store(out, r * (size_t)C + (size_t)c, dt, v);
        }
    }
    return 0;
}

static void scatter_cols(float *dwte, float *dwpe, const void *dout, const int32_t *tokens, int B,
                         int T, int C, int c0, enum gs_kern_dtype dt)
{
    int w = C - c0 < COLS ? C - c0 : COLS;

    for (int t = 0; t < T; t++) {
        float pos[COLS] = {0};

        for (int b = 0; b < B; b++) {
            size_t r = (size_t)b * (size_t)T + (size_t)t;
            float *te = dwte + (size_t)tokens[r] * (size_t)C + c0;

            for (int j = 0; j < w; j++) {
                float g = gs_kern_load(dout, r * (size_t)C + (size_t)(c0 + j), dt);

                pos[j] += g;
                te[j] += g;
            }
        }
        for (int j = 0; j < w; j++)
            dwpe[(size_t)t * (size_t)C + (size_t)(c0 + j)] += pos[j];
    }
}

int gs_kern_encoder_bwd(float *dwte, float *dwpe, const void *dout, const int32_t *tokens, int B,
                        int T, int C, int V, enum gs_kern_dtype dt)
{
    if (dwte == NULL || dwpe == NULL || dout == NULL || args_bad(tokens, B, T, C, V, dt))
        return -EINVAL;
    if (check_tokens(tokens, (size_t)B * (size_t)T, V) < 0)
        return -EINVAL;
    GS_OMP(parallel for schedule(static))
    for (int c0 = 0; c0 < C; c0 += COLS)
        scatter_cols(dwte, dwpe, dout, tokens, B, T, C, c0, dt);
    return 0;
}
