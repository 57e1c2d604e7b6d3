/*
 * comm_nonccl.c: for builds without NCCL (no CUDA, or no libnccl found): there is no GPU
 * backend, so trn_comm_new_gpu() refuses with -ENOTSUP and ranks run on the CPU.
 */
#include <stddef.h>

#include "trainer/comm_internal.h"

const struct trn_comm_gpu_backend *const trn_comm_nccl_backend = NULL;
