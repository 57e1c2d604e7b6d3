/*
 * test_comm_gpu.c: the communicator's GPU mode (trainer/comm.h, comm_nccl.c) in one process.
 * Anywhere: trn_comm_new_gpu refuses cleanly without NCCL or a GPU (-ENOTSUP / -ENODEV with
 * a message), a bad RANK / WORLD_SIZE is refused before any device is touched, the local rank
 * comes from the right launcher variable, and a CPU communicator has no GPU times. With NCCL
 * and a GPU (tests/gpu_check.sh on a GPU machine): a one-rank NCCL communicator all-reduces
 * device and host buffers, broadcasts, passes a barrier and reports times, and data-parallel
 * buckets over a GPU model leave one rank's gradients as they were; those tests skip
 * themselves elsewhere. Two ranks need two GPUs (NCCL takes one per rank):
 * bootstrap_check under mpirun covers the start-up without them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gsched_config.h"
#include "kernels/device.h"
#include "kernels/gpu.h"
#include "trainer/comm.h"
#include "trainer/ddp.h"
#include "trainer/model.h"

static void clear_launch_env(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE",
                          "OMPI_COMM_WORLD_RANK",
                          "OMPI_COMM_WORLD_LOCAL_RANK",
                          "WORLD_SIZE",
                          "RANK",
                          "LOCAL_RANK"};

    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
}

static bool have_gpu(void)
{
    int n = 0;

    return GSCHED_HAVE_NCCL && gs_kern_dev_count(&n) == 0 && n > 0;
}

static struct trn_comm *gpu_comm(void)
{
    struct trn_comm *c = NULL;
    int rc;

    if (!have_gpu())
        cr_skip_test("needs NCCL and a GPU");
    clear_launch_env();
    rc = trn_comm_new_gpu(0, NULL, &c);
    cr_assert_eq(rc, 0, "trn_comm_new_gpu: %d %s", rc, c ? trn_comm_error(c) : "");
    return c;
}

Test(comm_gpu, refused_cleanly_without_nccl_or_a_device)
{
    struct trn_comm *c = NULL;
    int rc;

    if (have_gpu())
        cr_skip_test("NCCL and a GPU are here: the one-rank tests run instead");
    clear_launch_env();
    rc = trn_comm_new_gpu(0, NULL, &c);
    cr_assert_not_null(c, "a communicator to read the error from");
    cr_assert_eq(rc, GSCHED_HAVE_NCCL ? -ENODEV : -ENOTSUP, "%d: %s", rc, trn_comm_error(c));
    cr_assert_gt(strlen(trn_comm_error(c)), 0);
    cr_assert(trn_comm_on_gpu(c));
    trn_comm_free(c);
}

Test(comm_gpu, rank_outside_the_world_is_refused_before_the_device)
{
    struct trn_comm *c = NULL;
    const char *bad[][2] = {{"2", "2"}, {"2", "-1"}, {"x", "0"}, {"2", NULL}};

    if (!GSCHED_HAVE_NCCL)
        cr_skip_test("built without NCCL");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc;

        clear_launch_env();
        setenv("WORLD_SIZE", bad[i][0], 1);
        if (bad[i][1] != NULL)
            setenv("RANK", bad[i][1], 1);
        rc = trn_comm_new_gpu(0, NULL, &c);
        cr_assert_eq(rc, -EINVAL, "WORLD_SIZE=%s RANK=%s: %d %s", bad[i][0],
                     bad[i][1] ? bad[i][1] : "(unset)", rc, trn_comm_error(c));
        cr_assert_not_null(strstr(trn_comm_error(c), "WORLD_SIZE"), "%s", trn_comm_error(c));
        trn_comm_free(c);
    }
    clear_launch_env();
}

Test(comm_gpu, local_rank_comes_from_the_launcher)
{
    clear_launch_env();
    cr_assert_eq(trn_comm_local_rank(), 0);
    setenv("SLURM_LOCALID", "5", 1);
    cr_assert_eq(trn_comm_local_rank(), 5);
    setenv("LOCAL_RANK", "3", 1);
    cr_assert_eq(trn_comm_local_rank(), 3);
    /* Under mpirun a LOCAL_RANK is mpirun's own, inherited by every rank. */
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    cr_assert_eq(trn_comm_local_rank(), 1);
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
    cr_assert_eq(trn_comm_local_rank(), 0);
    unsetenv("OMPI_COMM_WORLD_SIZE");
    setenv("LOCAL_RANK", "-2", 1);
    cr_assert_eq(trn_comm_local_rank(), 0);
    setenv("LOCAL_RANK", "2x", 1);
    cr_assert_eq(trn_comm_local_rank(), 0);
    clear_launch_env();
}

Test(comm_gpu, cpu_communicator_has_no_gpu_times)
{
    struct trn_model_shape s = {.layers = 1, .heads = 2, .channels = 8, .context = 4, .vocab = 10};
    struct trn_ddp_opts o = {.overlap = true, .bf16 = true};
    struct trn_ddp_stats st = {.comm_ns = 7, .exposed_ns = 9};
    struct trn_comm *c = NULL;
    struct trn_model *m = NULL;
    struct trn_ddp *d = NULL;
    uint64_t busy = 1, exposed = 1;

    clear_launch_env();
    cr_assert_eq(trn_comm_new(&c), 0);
    cr_assert_not(trn_comm_on_gpu(c));
    cr_assert_eq(trn_comm_gpu_times(c, &busy, &exposed), -EINVAL);
    cr_assert_eq(trn_model_new(&s, GS_KERN_F32, 1, &m), 0);
    cr_assert_eq(trn_ddp_new(c, m, &o, &d), 0, "bf16 stays allowed on the CPU");
    cr_assert_eq(trn_ddp_gpu_stats(d, &st), 0);
    cr_assert(st.comm_ns == 7 && st.exposed_ns == 9, "a CPU ddp's stats are left alone");
    trn_ddp_free(d);
    trn_model_free(m);
    trn_comm_free(c);
}

Test(comm_gpu, one_rank_all_reduces_device_and_host_buffers)
{
    struct trn_comm *c = gpu_comm();
    size_t n = (size_t)1 << 20, big = (size_t)3 << 20;
    float *h = malloc(n * sizeof(float)), *back = malloc(n * sizeof(float));
    float *host_big = malloc(big * sizeof(float));
    double scalars[3] = {1.5, -2.0, 1e300};
    uint16_t *hb = malloc(n * sizeof(uint16_t)), *hb_back = malloc(n * sizeof(uint16_t));
    void *d = NULL, *db = NULL;
    struct trn_comm_req *r1, *r2, *r3, *r4;
    uint64_t busy = 0, exposed = 0, waited = 0;

    cr_assert(h && back && host_big && hb && hb_back);
    cr_assert_str_eq(trn_comm_backend(c), "nccl");
    cr_assert(trn_comm_rank(c) == 0 && trn_comm_size(c) == 1);
    for (size_t i = 0; i < n; i++) {
        h[i] = (float)(i % 97) - 48.0f;
        hb[i] = gs_kern_f32_to_bf16((float)(i % 13));
    }
    for (size_t i = 0; i < big; i++)
        host_big[i] = (float)i;
    cr_assert_eq(gs_kern_dev_alloc(n * sizeof(float), &d), 0);
    cr_assert_eq(gs_kern_dev_alloc(n * sizeof(uint16_t), &db), 0);
    cr_assert_eq(gs_kern_dev_copy_to(d, h, n * sizeof(float)), 0);
    cr_assert_eq(gs_kern_dev_copy_to(db, hb, n * sizeof(uint16_t)), 0);

    /* Device buffers (sum, average; fp32, bf16) and host ones (F64 scalars, a staged fp32
     * buffer larger than a request's first staging), all in flight at once. */
    cr_assert_eq(trn_comm_allreduce(c, d, n, TRN_COMM_F32, true, &r1), 0, "%s", trn_comm_error(c));
    cr_assert_eq(trn_comm_allreduce(c, db, n, TRN_COMM_BF16, false, &r2), 0, "%s",
                 trn_comm_error(c));
    cr_assert_eq(trn_comm_allreduce(c, scalars, 3, TRN_COMM_F64, false, &r3), 0, "%s",
                 trn_comm_error(c));
    cr_assert_eq(trn_comm_allreduce(c, host_big, big, TRN_COMM_F32, true, &r4), 0, "%s",
                 trn_comm_error(c));
    busy = waited = 99;
    cr_assert_eq(trn_comm_wait(c, r1, &busy, &waited), 0, "%s", trn_comm_error(c));
    cr_assert(busy == 0 && waited == 0, "a device wait does not know its times yet");
    cr_assert_eq(trn_comm_wait(c, r2, NULL, NULL), 0, "%s", trn_comm_error(c));
    cr_assert_eq(trn_comm_wait(c, r3, &busy, &waited), 0, "%s", trn_comm_error(c));
    cr_assert_eq(trn_comm_wait(c, r4, NULL, NULL), 0, "%s", trn_comm_error(c));
    cr_assert(scalars[0] == 1.5 && scalars[1] == -2.0 && scalars[2] == 1e300, "one rank's sum");
    for (size_t i = 0; i < big; i++)
        cr_assert_eq(host_big[i], (float)i, "staged [%zu]", i);

    /* The legacy stream (the compute stream here) waited for the all-reduces. */
    cr_assert_eq(gs_kern_dev_copy_from(back, d, n * sizeof(float)), 0);
    cr_assert_eq(gs_kern_dev_copy_from(hb_back, db, n * sizeof(uint16_t)), 0);
    cr_assert_eq(memcmp(back, h, n * sizeof(float)), 0, "an average over one rank");
    cr_assert_eq(memcmp(hb_back, hb, n * sizeof(uint16_t)), 0, "a bf16 sum over one rank");
    cr_assert_eq(gs_kern_dev_sync(), 0);
    cr_assert_eq(trn_comm_gpu_times(c, &busy, &exposed), 0, "%s", trn_comm_error(c));
    cr_assert_eq(trn_comm_gpu_times(c, &busy, &exposed), 0);
    cr_assert(busy == 0 && exposed == 0, "times are of the waits since the last call");

    gs_kern_dev_free(d);
    gs_kern_dev_free(db);
    free(h);
    free(back);
    free(host_big);
    free(hb);
    free(hb_back);
    trn_comm_free(c);
}

Test(comm_gpu, one_rank_broadcasts_and_passes_barriers)
{
    struct trn_comm *c = gpu_comm();
    size_t big = (size_t)20 << 20; /* more than one staging piece */
    unsigned char *host = malloc(big), small[40], *back = malloc(4096);
    void *d = NULL;

    cr_assert(host && back);
    for (size_t i = 0; i < big; i++)
        host[i] = (unsigned char)(i * 7);
    memset(small, 0x5A, sizeof(small));
    memset(back, 0x33, 4096);
    cr_assert_eq(gs_kern_dev_alloc(4096, &d), 0);
    cr_assert_eq(gs_kern_dev_copy_to(d, back, 4096), 0);
    cr_assert_eq(trn_comm_broadcast(c, host, big, 0), 0, "%s", trn_comm_error(c));
    cr_assert_eq(trn_comm_broadcast(c, small, sizeof(small), 0), 0, "%s", trn_comm_error(c));
    cr_assert_eq(trn_comm_broadcast(c, d, 4096, 0), 0, "%s", trn_comm_error(c));
    cr_assert_eq(trn_comm_broadcast(c, small, sizeof(small), 1), -EINVAL, "no rank 1");
    cr_assert_eq(trn_comm_barrier(c), 0, "%s", trn_comm_error(c));
    cr_assert_eq(trn_comm_barrier(c), 0, "%s", trn_comm_error(c));
    for (size_t i = 0; i < big; i++)
        cr_assert_eq(host[i], (unsigned char)(i * 7), "[%zu]", i);
    cr_assert_eq(small[39], 0x5A);
    memset(back, 0, 4096);
    cr_assert_eq(gs_kern_dev_copy_from(back, d, 4096), 0);
    cr_assert_eq(back[4095], 0x33);
    gs_kern_dev_free(d);
    free(host);
    free(back);
    trn_comm_free(c);
}

/* Forward and backward of one micro-batch on m, with d's buckets when d is not NULL. */
static void step(struct trn_model *m, struct trn_ddp *d, float *grads)
{
    int32_t tokens[2 * 8], targets[2 * 8];
    struct trn_ddp_stats st;

    for (int i = 0; i < 16; i++) {
        tokens[i] = (i * 5 + 1) % 10;
        targets[i] = (i * 3 + 2) % 10;
    }
    cr_assert_eq(trn_model_zero_grads(m), 0);
    cr_assert_eq(trn_model_forward(m, tokens, targets, 2, 8, 1.0f / 16, true, NULL), 0);
    if (d != NULL)
        trn_ddp_arm(d);
    cr_assert_eq(trn_model_backward(m), 0);
    if (d != NULL) {
        cr_assert_eq(trn_ddp_finish(d, &st), 0);
        cr_assert(st.comm_ns == 0 && st.exposed_ns == 0, "GPU times come later");
        cr_assert_eq(gs_kern_gpu_sync(trn_model_gpu(m)), 0);
        cr_assert_eq(trn_ddp_gpu_stats(d, &st), 0);
        cr_assert_gt(st.buckets, 1);
    }
    cr_assert_eq(gs_kern_gpu_sync(trn_model_gpu(m)), 0);
    cr_assert_eq(trn_model_read_grads(m, grads), 0);
}

Test(comm_gpu, one_rank_buckets_leave_gpu_gradients_as_they_were)
{
    struct trn_model_shape s = {.layers = 2, .heads = 2, .channels = 16, .context = 8, .vocab = 10};
    struct trn_ddp_opts o = {.bucket_bytes = 4096, .first_bucket_bytes = 1024, .overlap = true};
    struct trn_comm *c = NULL;
    struct gs_kern_gpu *g = NULL;
    struct trn_model *m = NULL;
    struct trn_ddp *d = NULL;
    float *alone, *bucketed;
    int rc;

    if (!have_gpu())
        cr_skip_test("needs NCCL and a GPU");
    rc = gs_kern_gpu_new(0, &g);
    if (rc < 0)
        cr_skip_test("no GPU context: %d %s", rc, gs_kern_dev_last_error());
    clear_launch_env();
    cr_assert_eq(trn_comm_new_gpu(0, gs_kern_gpu_stream(g), &c), 0, "%s", trn_comm_error(c));
    cr_assert_eq(trn_model_new_on(&s, GS_KERN_F32, 2, g, &m), 0);
    trn_model_init(m, 7);
    cr_assert_eq(trn_model_sync(m), 0);
    o.bf16 = true;
    cr_assert_eq(trn_ddp_new(c, m, &o, &d), -ENOTSUP, "bf16 all-reduce is refused on a GPU");
    o.bf16 = false;
    cr_assert_eq(trn_ddp_new(c, m, &o, &d), 0);
    alone = malloc(trn_model_nparams(m) * sizeof(float));
    bucketed = malloc(trn_model_nparams(m) * sizeof(float));
    cr_assert(alone && bucketed);
    step(m, NULL, alone);
    step(m, d, bucketed);
    cr_assert_eq(memcmp(alone, bucketed, trn_model_nparams(m) * sizeof(float)), 0,
                 "an average over one rank changes nothing");
    free(alone);
    free(bucketed);
    trn_ddp_free(d);
    trn_model_free(m);
    trn_comm_free(c);
    gs_kern_gpu_free(g);
}
