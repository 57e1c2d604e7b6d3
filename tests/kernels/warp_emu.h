/*
 * warp_emu.h: runs CUDA kernel code on the CPU, one fiber per GPU thread, so the warp-level
 * code of kernels/attention_tc.cu (mma.sync, ldmatrix, cp.async, shuffles) can be tested on
 * machines without a GPU. Test code only (C++, built when the CUDA headers are there).
 *
 * A test includes this header, defines the CUDA keywords as below, then includes the .cu
 * file with GS_KERN_EMULATE defined: the kernel's primitives then call gs_emu_* instead of
 * their inline PTX. gs_emu_launch runs a grid one block at a time; a block's threads are
 * fibers (ucontext) switched only at barriers, in thread order, so a run is deterministic.
 *
 * What it checks on the way (each a test failure with a message, never a hang):
 *  - __syncthreads reached by every thread of the block, warp collectives by all 32 lanes of
 *    the warp, and in the same order (the n-th collective of each lane is the same kind);
 *  - cp.async data is read only after cp.async.wait_group: in GS_EMU_COPY_AT_WAIT mode a copy
 *    lands only when its thread waits for its group, in GS_EMU_COPY_AT_ISSUE mode at once
 *    (which shows a copy overwriting a buffer another thread still reads).
 * The products sum in fp32 over k in order; Tensor Cores sum otherwise, so results agree to
 * fp32 rounding, not bit for bit.
 */
#ifndef GS_TEST_WARP_EMU_H
#define GS_TEST_WARP_EMU_H

#include <stdint.h>

struct gs_emu_dim3 {
    unsigned x, y, z;
};

enum gs_emu_copy_mode {
    GS_EMU_COPY_AT_WAIT,  /* a cp.async lands when its thread waits for its group */
    GS_EMU_COPY_AT_ISSUE, /* a cp.async lands when it is issued */
};

void gs_emu_set_copy_mode(enum gs_emu_copy_mode mode);

/* Runs body(arg) on every thread of every block of grid (blocks of `threads` threads, a
 * multiple of 32, one after another). Returns 0, or -EPROTO with a message in
 * gs_emu_error() when a thread broke a rule above (the rest of that block is abandoned). */
int gs_emu_launch(struct gs_emu_dim3 grid, int threads, void (*body)(void *), void *arg);
const char *gs_emu_error(void);

/* The running thread's indices, as threadIdx, blockIdx, gridDim. */
struct gs_emu_dim3 gs_emu_thread_idx(void);
struct gs_emu_dim3 gs_emu_block_idx(void);
struct gs_emu_dim3 gs_emu_grid_dim(void);

void gs_emu_syncthreads(void);
/* __shfl_xor_sync over the whole warp. */
float gs_emu_shfl_xor(float x, int lane_mask);
/* mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32, c in place. */
void gs_emu_mma_16816(bool bf16, float *c, const uint32_t *a, const uint32_t *b);
/* ldmatrix.sync.aligned.m8n8.x4{.trans}.shared.b16: p is this lane's row address. */
void gs_emu_ldmatrix_x4(uint32_t *r, const void *p, bool trans);
/* cp.async of `bytes` (4, 8 or 16) with src-size src_bytes (the rest zero-filled). */
void gs_emu_cp_async(void *dst, const void *src, int bytes, int src_bytes);
void gs_emu_cp_async_commit(void);
void gs_emu_cp_async_wait(int n);

#endif
