/*
 * warp_emu.cpp: the fiber scheduler and the warp-level primitives of warp_emu.h. A block's
 * threads are ucontext fibers run in thread order until each reaches a barrier; then the
 * barriers whose every thread arrived are released, and the next pass runs. Warp collectives
 * (shuffle, mma, ldmatrix) are two warp barriers around an exchange through each lane's
 * slot: the first so every lane's operand is there, the second so no lane overwrites its
 * slot with the next collective's operand while another still reads it.
 */
#include "warp_emu.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "kernels/dtype.h"

#define EMU_MAX_THREADS 1024
#define EMU_STACK (256 * 1024)
#define EMU_MAX_COPIES 256 /* cp.async a thread may have in flight */

enum lane_state { LANE_RUN, LANE_WARP, LANE_BLOCK, LANE_DONE };
enum coll_kind { COLL_SHFL, COLL_MMA, COLL_LDMATRIX };

struct emu_copy {
    void *dst;
    const void *src;
    int bytes, src_bytes;
    long group; /* the commit that closes it: the thread's commit count when issued */
};

struct lane {
    ucontext_t ctx;
    char *stack;
    enum lane_state state;
    enum coll_kind kind;    /* of the collective it waits at */
    unsigned long barriers; /* warp barriers entered: the same on every lane at a release */
    union {
        float f;
        const void *p;
        struct {
            uint32_t a[4], b[2];
        } mma;
    } slot;
    struct emu_copy copies[EMU_MAX_COPIES];
    int ncopies;
    long commits;
};

/* The one context of the emulator: the launch in progress and its fibers. */
static struct emu {
    enum gs_emu_copy_mode mode;
    struct gs_emu_dim3 grid, block;
    int nthreads, cur;
    struct lane *lanes;
    ucontext_t sched;
    void (*body)(void *);
    void *arg;
    bool failed;
    char error[512];
} emu;

static struct lane *me(void)
{
    return &emu.lanes[emu.cur];
}

static void yield(void)
{
    swapcontext(&me()->ctx, &emu.sched);
}

/* Records the first broken rule and leaves this fiber for good. */
static void fail(const char *fmt, ...)
{
    va_list ap;
    int n;

    if (!emu.failed) {
        n = snprintf(emu.error, sizeof(emu.error), "block (%u,%u,%u) thread %d: ", emu.block.x,
                     emu.block.y, emu.block.z, emu.cur);
        va_start(ap, fmt);
        vsnprintf(emu.error + n, sizeof(emu.error) - (size_t)n, fmt, ap);
        va_end(ap);
    }
    emu.failed = true;
    for (;;)
        yield();
}

void gs_emu_set_copy_mode(enum gs_emu_copy_mode mode)
{
    emu.mode = mode;
}

const char *gs_emu_error(void)
{
    return emu.error;
}

struct gs_emu_dim3 gs_emu_thread_idx(void)
{
    return (struct gs_emu_dim3){(unsigned)emu.cur, 0, 0};
}

struct gs_emu_dim3 gs_emu_block_idx(void)
{
    return emu.block;
}

struct gs_emu_dim3 gs_emu_grid_dim(void)
{
    return emu.grid;
}

void gs_emu_syncthreads(void)
{
    me()->state = LANE_BLOCK;
    yield();
}

static void warp_barrier(enum coll_kind kind)
{
    struct lane *l = me();

    l->state = LANE_WARP;
    l->kind = kind;
    l->barriers++;
    yield();
}

static struct lane *warp_lane(int lane)
{
    return &emu.lanes[(emu.cur & ~31) + lane];
}

float gs_emu_shfl_xor(float x, int lane_mask)
{
    float y;

    me()->slot.f = x;
    warp_barrier(COLL_SHFL);
    y = warp_lane((emu.cur & 31) ^ (lane_mask & 31))->slot.f;
    warp_barrier(COLL_SHFL);
    return y;
}

static float half_of(uint32_t word, int hi, bool bf16)
{
    uint16_t h = (uint16_t)(hi ? word >> 16 : word & 0xffffu);

    return bf16 ? gs_kern_bf16_to_f32(h) : gs_kern_f16_to_f32(h);
}

/* Element (row, k) of the warp's A operand (16 x 16) and (k, n) of its B operand (16 x 8),
 * from the lanes that hold them in the m16n8k16 fragment layouts. */
static float mma_a(int row, int k, bool bf16)
{
    struct lane *o = warp_lane((row % 8) * 4 + (k % 8) / 2);

    return half_of(o->slot.mma.a[(row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0)], k % 2, bf16);
}

static float mma_b(int k, int n, bool bf16)
{
    struct lane *o = warp_lane(n * 4 + (k % 8) / 2);

    return half_of(o->slot.mma.b[k >= 8 ? 1 : 0], k % 2, bf16);
}

void gs_emu_mma_16816(bool bf16, float *c, const uint32_t *a, const uint32_t *b)
{
    int lane = emu.cur & 31, g = lane / 4, t = lane % 4;
    float out[4];

    memcpy(me()->slot.mma.a, a, sizeof(me()->slot.mma.a));
    memcpy(me()->slot.mma.b, b, sizeof(me()->slot.mma.b));
    warp_barrier(COLL_MMA);
    for (int e = 0; e < 4; e++) {
        int row = g + (e >= 2 ? 8 : 0), col = 2 * t + (e & 1);
        float s = c[e];

        for (int k = 0; k < 16; k++)
            s += mma_a(row, k, bf16) * mma_b(k, col, bf16);
        out[e] = s;
    }
    warp_barrier(COLL_MMA);
    memcpy(c, out, sizeof(out));
}

void gs_emu_ldmatrix_x4(uint32_t *r, const void *p, bool trans)
{
    int lane = emu.cur & 31;

    if (((uintptr_t)p & 15u) != 0)
        fail("ldmatrix row address %p not 16-byte aligned", p);
    me()->slot.p = p;
    warp_barrier(COLL_LDMATRIX);
    for (int m = 0; m < 4; m++) {
        const uint16_t *row_lo, *row_hi;
        uint16_t lo, hi;

        if (!trans) { /* row lane / 4, columns 2 (lane % 4) and the next */
            row_lo = (const uint16_t *)warp_lane(8 * m + lane / 4)->slot.p;
            lo = row_lo[2 * (lane % 4)], hi = row_lo[2 * (lane % 4) + 1];
        } else { /* column lane / 4 of rows 2 (lane % 4) and the next */
            row_lo = (const uint16_t *)warp_lane(8 * m + 2 * (lane % 4))->slot.p;
            row_hi = (const uint16_t *)warp_lane(8 * m + 2 * (lane % 4) + 1)->slot.p;
            lo = row_lo[lane / 4], hi = row_hi[lane / 4];
        }
        r[m] = (uint32_t)lo | (uint32_t)hi << 16;
    }
    warp_barrier(COLL_LDMATRIX);
}

static void land(const struct emu_copy *c)
{
    memcpy(c->dst, c->src, (size_t)c->src_bytes);
    memset((char *)c->dst + c->src_bytes, 0, (size_t)(c->bytes - c->src_bytes));
}

void gs_emu_cp_async(void *dst, const void *src, int bytes, int src_bytes)
{
    struct lane *l = me();
    struct emu_copy c = {dst, src, bytes, src_bytes, l->commits};

    if (bytes != 4 && bytes != 8 && bytes != 16)
        fail("cp.async of %d bytes", bytes);
    if (src_bytes < 0 || src_bytes > bytes)
        fail("cp.async src-size %d of %d bytes", src_bytes, bytes);
    if (((uintptr_t)dst | (uintptr_t)src) % (uintptr_t)bytes != 0)
        fail("cp.async of %d bytes from %p to %p: not aligned", bytes, src, dst);
    if (emu.mode == GS_EMU_COPY_AT_ISSUE) {
        land(&c);
        return;
    }
    if (l->ncopies == EMU_MAX_COPIES)
        fail("more than %d cp.async in flight", EMU_MAX_COPIES);
    l->copies[l->ncopies++] = c;
}

void gs_emu_cp_async_commit(void)
{
    me()->commits++;
}

void gs_emu_cp_async_wait(int n)
{
    struct lane *l = me();
    int kept = 0;

    for (int i = 0; i < l->ncopies; i++) {
        if (l->copies[i].group < l->commits - n)
            land(&l->copies[i]);
        else
            l->copies[kept++] = l->copies[i];
    }
    l->ncopies = kept;
}

static void lane_main(void)
{
    struct lane *l;

    emu.body(emu.arg);
    l = me();
    if (l->ncopies > 0)
        fail("ended with %d cp.async never waited for", l->ncopies);
    l->state = LANE_DONE;
    /* returning resumes emu.sched through uc_link */
}

/* Releases the barriers every thread has reached: 1 when all threads are done, 0 when some
 * were released, -EPROTO (with the reason recorded) when none can go on. */
static int release(void)
{
    int n = emu.nthreads, done = 0, at_block = 0, released = 0;

    for (int w = 0; w < n / 32; w++) {
        struct lane *l0 = &emu.lanes[w * 32];
        int waiting = 0;

        for (int i = 0; i < 32; i++)
            waiting += l0[i].state == LANE_WARP;
        if (waiting != 32)
            continue;
        for (int i = 1; i < 32; i++)
            if (l0[i].kind != l0[0].kind || l0[i].barriers != l0[0].barriers) {
                snprintf(emu.error, sizeof(emu.error),
                         "block (%u,%u,%u) warp %d: lanes 0 and %d met at different warp "
                         "collectives (kinds %d/%d, counts %lu/%lu)",
                         emu.block.x, emu.block.y, emu.block.z, w, i, (int)l0[0].kind,
                         (int)l0[i].kind, l0[0].barriers, l0[i].barriers);
                return -EPROTO;
            }
        for (int i = 0; i < 32; i++)
            l0[i].state = LANE_RUN;
        released++;
    }
    for (int i = 0; i < n; i++) {
        done += emu.lanes[i].state == LANE_DONE;
        at_block += emu.lanes[i].state == LANE_BLOCK;
    }
    if (done == n)
        return 1;
    if (at_block == n) {
        for (int i = 0; i < n; i++)
            emu.lanes[i].state = LANE_RUN;
        return 0;
    }
    if (released > 0)
        return 0;
    snprintf(emu.error, sizeof(emu.error),
             "block (%u,%u,%u): no thread can go on: %d done, %d at __syncthreads, %d at a "
             "warp collective some lanes of their warp never reached",
             emu.block.x, emu.block.y, emu.block.z, done, at_block, n - done - at_block);
    return -EPROTO;
}

static int run_block(void)
{
    for (;;) {
        int rc;

        for (int i = 0; i < emu.nthreads; i++) {
            if (emu.lanes[i].state != LANE_RUN)
                continue;
            emu.cur = i;
            swapcontext(&emu.sched, &emu.lanes[i].ctx);
            if (emu.failed)
                return -EPROTO;
        }
        rc = release();
        if (rc != 0)
            return rc < 0 ? rc : 0;
    }
}

static int start_lane(struct lane *l)
{
    if (l->stack == NULL && (l->stack = (char *)malloc(EMU_STACK)) == NULL)
        return -ENOMEM;
    if (getcontext(&l->ctx) != 0)
        return -errno;
    l->ctx.uc_stack.ss_sp = l->stack;
    l->ctx.uc_stack.ss_size = EMU_STACK;
    l->ctx.uc_link = &emu.sched;
    makecontext(&l->ctx, lane_main, 0);
    l->state = LANE_RUN;
    l->barriers = 0;
    l->ncopies = 0;
    l->commits = 0;
    return 0;
}

int gs_emu_launch(struct gs_emu_dim3 grid, int threads, void (*body)(void *), void *arg)
{
    int rc = 0;

    emu.error[0] = '\0';
    emu.failed = false;
    if (threads <= 0 || threads % 32 != 0 || threads > EMU_MAX_THREADS) {
        snprintf(emu.error, sizeof(emu.error), "%d threads a block", threads);
        return -EINVAL;
    }
    if (emu.lanes == NULL &&
        (emu.lanes = (struct lane *)calloc(EMU_MAX_THREADS, sizeof(*emu.lanes))) == NULL)
        return -ENOMEM;
    emu.grid = grid, emu.nthreads = threads, emu.body = body, emu.arg = arg;
    for (unsigned z = 0; z < grid.z && rc == 0; z++)
        for (unsigned y = 0; y < grid.y && rc == 0; y++)
            for (unsigned x = 0; x < grid.x && rc == 0; x++) {
                emu.block = (struct gs_emu_dim3){x, y, z};
                for (int i = 0; i < threads && rc == 0; i++)
                    rc = start_lane(&emu.lanes[i]);
                if (rc == 0)
                    rc = run_block();
            }
    return rc;
}
