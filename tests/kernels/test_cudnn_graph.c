/*
 * test_cudnn_graph.c: cuDNN's fused attention graphs (kernels/attention_cudnn.cu) built
 * without a device. cuDNN checks each descriptor's attributes (types, counts, ranks, the
 * operands' shapes) when it is finalised, and its heuristics, asked for a described device
 * (an H100's properties, as cuDNN's deviceless builds take them), offer engines only for
 * graphs one of them runs: a graph of the wrong shape gets none. What needs a device (the
 * plans, the numbers) is test_gpu_gemm.c's. Built only where the build found cuDNN; the
 * heuristics test runs where tests/kernels/CMakeLists.txt found CUDA's libcuda stub (it sets
 * GSCHED_TEST_CUDA_STUB and puts the stub on the library path).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attention_cudnn.h"

/* An H100 SXM (sm_90, 132 SMs) as cuDNN 9.19 serialises a device's properties. */
static const char h100[] =
    "{\"maxGridSize\":[2147483647,65535,65535],\"maxBlockSize\":[1024,1024,64],"
    "\"regsPerBlock\":65536,\"multiProcessorCount\":132,\"warpSize\":32,"
    "\"maxSharedMemoryPerBlock\":49152,\"maxSharedMemoryPerBlockOptin\":232448,"
    "\"reservedSharedMemoryPerBlock\":1024,\"maxRegistersPerSM\":65536,\"maxCtasPerSM\":32,"
    "\"maxThreadsPerBlock\":1024,\"maxThreadsPerSM\":2048,\"pciDeviceId\":0,\"isTccDriver\":0,"
    "\"supportCoopLaunch\":1,\"smClockRateKHz\":1980000,\"memClockRateKHz\":2619000,"
    "\"l2CacheSize\":52428800,\"deviceName\":\"NVIDIA H100 80GB HBM3\","
    "\"totalGlobalMem\":85520809984,\"cudaDeviceId\":0,\"deviceVer\":900,\"driverVer\":13000}";

/* The graph builds; with a device description, the number of engines offered. */
static int graph_ok(int B, int T, int C, int NH, enum gs_kern_dtype dt, bool bwd, bool accum,
                    const char *device)
{
    char why[512];
    int64_t engines[8];
    int n = 8;
    int rc = gs_kern_cudnn_check_graph(B, T, C, NH, dt, bwd, accum, device, engines, &n, why,
                                       sizeof(why));

    cr_assert_eq(rc, 0, "B=%d T=%d C=%d NH=%d dt=%d bwd=%d accum=%d: %d (%s)", B, T, C, NH, (int)dt,
                 bwd, accum, rc, why);
    return n;
}

Test(cudnn_graph, forward_and_backward_descriptors_finalise)
{
    const enum gs_kern_dtype dts[] = {GS_KERN_BF16, GS_KERN_F16};

    for (int i = 0; i < 2; i++) {
        cr_assert_eq(graph_ok(4, 1024, 768, 12, dts[i], false, false, NULL), 0);
        graph_ok(4, 1024, 768, 12, dts[i], true, false, NULL); /* GPT-2 124M, hs 64 */
        graph_ok(4, 1024, 768, 12, dts[i], true, true, NULL);
        graph_ok(2, 67, 96, 3, dts[i], false, false, NULL); /* hs 32, T not a tile multiple */
        graph_ok(2, 67, 96, 3, dts[i], true, false, NULL);
        graph_ok(1, 130, 256, 2, dts[i], true, true, NULL); /* hs 128 */
    }
}

Test(cudnn_graph, sm90_heuristics_offer_engines_for_every_graph)
{
    const enum gs_kern_dtype dts[] = {GS_KERN_BF16, GS_KERN_F16};

    if (getenv("GSCHED_TEST_CUDA_STUB") == NULL)
        cr_skip_test("no libcuda stub: the heuristics cannot set up engines");
    for (int i = 0; i < 2; i++) {
        cr_expect_gt(graph_ok(4, 1024, 768, 12, dts[i], false, false, h100), 0, "forward");
        cr_expect_gt(graph_ok(4, 1024, 768, 12, dts[i], true, false, h100), 0, "backward");
        cr_expect_gt(graph_ok(4, 1024, 768, 12, dts[i], true, true, h100), 0,
                     "backward, dQ in fp32");
        cr_expect_gt(graph_ok(2, 67, 96, 3, dts[i], false, false, h100), 0, "forward, hs 32");
        cr_expect_gt(graph_ok(2, 67, 96, 3, dts[i], true, false, h100), 0, "backward, hs 32");
    }
}

Test(cudnn_graph, refuses_what_the_fused_engines_do_not_take)
{
    char why[512];
    int64_t engines[1];
    int n = 1;

    cr_assert_eq(gs_kern_cudnn_check_graph(2, 64, 96, 3, GS_KERN_F32, false, false, NULL, engines,
                                           &n, why, sizeof(why)),
                 -ENOTSUP);
    cr_assert(strstr(why, "bf16 or fp16") != NULL, "%s", why);
    cr_assert_eq(gs_kern_cudnn_check_graph(2, 64, 60, 3, GS_KERN_BF16, false, false, NULL, engines,
                                           &n, why, sizeof(why)),
                 -ENOTSUP); /* hs 20 */
    cr_assert(strstr(why, "multiples of 8") != NULL, "%s", why);
    cr_assert_eq(gs_kern_cudnn_check_graph(2, 64, 512, 2, GS_KERN_BF16, true, false, NULL, engines,
                                           &n, why, sizeof(why)),
                 -ENOTSUP); /* hs 256 */
    cr_assert_eq(gs_kern_cudnn_check_graph(2, 1, 96, 3, GS_KERN_BF16, false, false, NULL, engines,
                                           &n, why, sizeof(why)),
                 -ENOTSUP);
    cr_assert_eq(gs_kern_cudnn_check_graph(2, 64, 97, 3, GS_KERN_BF16, false, false, NULL, engines,
                                           &n, why, sizeof(why)),
                 -EINVAL);
}
