/*
 * threads_cpu.c: the kernels' thread count, for callers that must not include omp.h (the
 * trainer sets it from its `threads` setting before it sizes any workspace).
 */
#include "kernels/cpu_internal.h"
#include "kernels/ops.h"

int gs_kern_set_threads(int n)
{
#ifdef _OPENMP
    if (n >= 1)
        omp_set_num_threads(n);
#else
    (void)n;
#endif
    return gs_kern_max_threads();
}

int gs_kern_threads(void)
{
    return gs_kern_max_threads();
}
