/*
 * kref.h: what the kernel tests share: a deterministic random source, float64 <-> storage
 * conversions, central finite differences, tolerance checks, and the OpenMP thread count
 * switch for the determinism tests. Test code only.
 */
#ifndef GS_TEST_KREF_H
#define GS_TEST_KREF_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/dtype.h"

/* Uniform in [lo, hi), from a 64-bit LCG: the same values on every run and machine. */
double kref_uniform(uint64_t *state, double lo, double hi);
/* n floats in [-1, 1) scaled by `scale`. */
void kref_fill(float *x, size_t n, float scale, uint64_t seed);

double *kref_to_f64(const float *x, size_t n); /* malloc'ed; aborts the test on ENOMEM */
/* A tensor of dtype dt holding x rounded, malloc'ed; and the values it holds, as floats. */
void *kref_to_dtype(const float *x, size_t n, enum gs_kern_dtype dt);
void kref_round_inplace(float *x, size_t n, enum gs_kern_dtype dt);
float *kref_from_dtype(const void *x, size_t n, enum gs_kern_dtype dt);

/* The scalar loss whose gradient a backward test checks: sum(r * y) for the reference
 * forward output y, recomputed from ctx each call. */
typedef double (*kref_loss_fn)(void *ctx);
/* Asserts got[j] ~ dL/dx[j] by central differences (x perturbed in place, restored), within
 * tol * max(1, max |dL/dx|). */
void kref_check_fd(kref_loss_fn loss, void *ctx, double *x, size_t n, const float *got, double tol,
                   const char *what);
/* Asserts |got - want| <= tol * max(1, max |want|) element-wise. */
void kref_check_close(const float *got, const double *want, size_t n, double tol, const char *what);
/* Asserts two 16-bit tensors differ by at most `ulps` units in the last place. */
void kref_check_ulps(const void *got, const void *want, size_t n, enum gs_kern_dtype dt, int ulps,
                     const char *what);

void kref_set_threads(int n); /* no-op without OpenMP */

/* Causal attention's log-sum-exp from qkv [B,T,3C] in float64: [B,NH,T] of
 * log(sum_j exp(q_t . k_j / sqrt(hs))) over j <= t, malloc'ed (aborts the test on ENOMEM). */
double *kref_attention_lse(const float *qkv, int B, int T, int C, int NH);

#endif
