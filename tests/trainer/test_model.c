/*
 * test_model.c: the whole model against PyTorch (tests/reference/fixtures/tiny.gstf, float64):
 * logits, loss, every parameter gradient, and 10 AdamW steps with clipping, in fp32 (tight)
 * and bf16/fp16 (looser, per tensor). Tolerances are relative to the largest magnitude of
 * the reference tensor, so that a tensor of tiny gradients is not judged by its noise:
 *     fp32: max |c - ref| <= 2e-4 * max|ref|      (float32 vs float64 arithmetic)
 *     bf16: max |c - ref| <= 6e-2 * max|ref|      (8-bit mantissas on every stored value)
 *     fp16: max |c - ref| <= 2e-2 * max|ref|      (11-bit mantissas)
 * Also: the parameter layout (backward order, names, decay), memory sizing, and that the
 * initialisation is deterministic.
 *
 * The same fixtures judge the model on a GPU (kernels/gpu.h), with the same tolerances:
 * those tests skip themselves, counted as skipped, where no CUDA device is visible.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/device.h"
#include "kernels/gpu.h"
#include "trainer/model.h"
#include "trainer/tensorfile.h"

struct fixture {
    struct trn_tf *tf;
    struct trn_model_shape shape;
    uint32_t B, T;
    const int32_t *inputs, *targets;
};

static void open_fixture(struct fixture *fx)
{
    struct gs_buf err = GS_BUF_INIT, path = GS_BUF_INIT;
    const struct trn_tensor *c, *in, *tg;
    /* GSCHED_FIXTURES in the environment: the test binary was moved (bench/gpu_pack.sh). */
    const char *dir = getenv("GSCHED_FIXTURES") ? getenv("GSCHED_FIXTURES") : GSCHED_FIXTURES;

    cr_assert_eq(gs_buf_printf(&path, "%s/tiny.gstf", dir), 0);
    cr_assert_eq(trn_tf_open(path.data, &fx->tf, &err), 0, "%s", err.data);
    gs_buf_release(&path);
    c = trn_tf_expect(fx->tf, "config", TRN_TF_I32, 7, &err);
    cr_assert_not_null(c, "%s", err.data);
    const int32_t *v = c->data; /* L NH C T V Vp B */
    fx->shape = (struct trn_model_shape){(uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[2],
                                         (uint32_t)v[3], (uint32_t)v[4]};
    cr_assert_eq(trn_vocab_padded(fx->shape.vocab), (uint32_t)v[5]);
    fx->T = (uint32_t)v[3];
    fx->B = (uint32_t)v[6];
    in = trn_tf_expect(fx->tf, "inputs", TRN_TF_I32, (size_t)fx->B * fx->T, &err);
    tg = trn_tf_expect(fx->tf, "targets", TRN_TF_I32, (size_t)fx->B * fx->T, &err);
    cr_assert(in != NULL && tg != NULL, "%s", err.data);
    fx->inputs = in->data;
    fx->targets = tg->data;
    gs_buf_release(&err);
}

/* A GPU context on device 0, or the test skipped when there is none. */
static struct gs_kern_gpu *gpu_or_skip(void)
{
    struct gs_kern_gpu *g = NULL;
    int n = 0;

    if (!gs_kern_cuda_built() || gs_kern_dev_count(&n) < 0 || n == 0)
        cr_skip_test("no CUDA device");
    cr_assert_eq(gs_kern_gpu_new(0, &g), 0, "%s", gs_kern_dev_last_error());
    return g;
}

static struct trn_model *model_from_fixture(struct fixture *fx, enum gs_kern_dtype dt,
                                            struct gs_kern_gpu *gpu)
{
    struct gs_buf err = GS_BUF_INIT;
    struct trn_model *m = NULL;

    cr_assert_eq(trn_model_new_on(&fx->shape, dt, fx->B, gpu, &m), 0, "%s",
                 gpu != NULL ? gs_kern_dev_last_error() : "");
    for (size_t i = 0; i < trn_model_ntensors(m); i++) {
        const struct trn_param *p = trn_model_param(m, i);
        const struct trn_tensor *t = trn_tf_expect(fx->tf, p->name, TRN_TF_F32, p->count, &err);

        cr_assert_not_null(t, "%s", err.data);
        memcpy(trn_model_params(m) + p->offset, t->data, p->count * sizeof(float));
    }
    cr_assert_eq(trn_model_sync(m), 0);
    gs_buf_release(&err);
    return m;
}

/* max |a - ref| / max |ref| over n floats. */
static double rel_err(const float *a, const float *ref, size_t n)
{
    double worst = 0, scale = 0;

    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs((double)a[i] - (double)ref[i]));
        scale = fmax(scale, fabs((double)ref[i]));
    }
    return worst / fmax(scale, 1e-12);
}

static double tolerance(enum gs_kern_dtype dt)
{
    return dt == GS_KERN_F32 ? 2e-4 : dt == GS_KERN_BF16 ? 6e-2 : 2e-2;
}

static void check_forward_backward(enum gs_kern_dtype dt, struct gs_kern_gpu *gpu)
{
    struct fixture fx;
    struct trn_model *m;
    const struct trn_tensor *ref_loss, *ref_logits;
    double loss = 0, tol = tolerance(dt);
    float *row, *grads;
    uint32_t V;

    open_fixture(&fx);
    m = model_from_fixture(&fx, dt, gpu);
    V = fx.shape.vocab;

    /* Logits, without targets. */
    cr_assert_eq(trn_model_forward(m, fx.inputs, NULL, fx.B, fx.T, 0, false, NULL), 0);
    ref_logits = trn_tf_find(fx.tf, "logits");
    cr_assert_not_null(ref_logits);
    row = calloc((size_t)fx.B * fx.T * V, sizeof(float));
    for (uint32_t b = 0; b < fx.B; b++) {
        for (uint32_t t = 0; t < fx.T; t++)
            cr_assert_eq(trn_model_logits(m, b, t, row + ((size_t)b * fx.T + t) * V), 0);
    }
    cr_assert_leq(rel_err(row, ref_logits->data, (size_t)fx.B * fx.T * V), tol, "logits: %g",
                  rel_err(row, ref_logits->data, (size_t)fx.B * fx.T * V));
    free(row);

    /* Loss and gradients. */
    trn_model_zero_grads(m);
    cr_assert_eq(trn_model_forward(m, fx.inputs, fx.targets, fx.B, fx.T, 0, true, &loss), 0);
    ref_loss = trn_tf_find(fx.tf, "loss");
    cr_assert_float_eq(loss, *(const float *)ref_loss->data, tol * *(const float *)ref_loss->data,
                       "loss %.7f vs %.7f", loss, *(const float *)ref_loss->data);
    cr_assert_eq(trn_model_backward(m), 0);
    cr_assert_eq(trn_model_backward(m), -EINVAL, "one backward per forward");
    grads = malloc(trn_model_nparams(m) * sizeof(float));
    cr_assert_eq(trn_model_read_grads(m, grads), 0);
    for (size_t i = 0; i < trn_model_ntensors(m); i++) {
        const struct trn_param *p = trn_model_param(m, i);
        char name[48];
        const struct trn_tensor *g;
        double e;

        snprintf(name, sizeof(name), "grad.%s", p->name);
        g = trn_tf_find(fx.tf, name);
        cr_assert_not_null(g, "%s", name);
        e = rel_err(grads + p->offset, g->data, p->count);
        cr_assert_leq(e, tol, "%s: relative error %g > %g", name, e, tol);
    }
    free(grads);
    trn_model_free(m);
    trn_tf_close(fx.tf);
}

Test(model, matches_pytorch_fp32)
{
    check_forward_backward(GS_KERN_F32, NULL);
}

Test(model, matches_pytorch_bf16)
{
    check_forward_backward(GS_KERN_BF16, NULL);
}

Test(model, matches_pytorch_fp16)
{
    check_forward_backward(GS_KERN_F16, NULL);
}

Test(model, gpu_matches_pytorch_fp32)
{
    struct gs_kern_gpu *g = gpu_or_skip();

    check_forward_backward(GS_KERN_F32, g);
    gs_kern_gpu_free(g);
}

Test(model, gpu_matches_pytorch_bf16)
{
    struct gs_kern_gpu *g = gpu_or_skip();

    check_forward_backward(GS_KERN_BF16, g);
    gs_kern_gpu_free(g);
}

Test(model, gpu_matches_pytorch_fp16)
{
    struct gs_kern_gpu *g = gpu_or_skip();

    check_forward_backward(GS_KERN_F16, g);
    gs_kern_gpu_free(g);
}

static void check_adamw_steps(struct gs_kern_gpu *gpu)
{
    struct fixture fx;
    struct trn_model *m;
    const struct trn_tensor *losses, *norms, *hp;

    open_fixture(&fx);
    m = model_from_fixture(&fx, GS_KERN_F32, gpu);
    losses = trn_tf_find(fx.tf, "adamw.losses");
    norms = trn_tf_find(fx.tf, "adamw.grad_norms");
    hp = trn_tf_find(fx.tf, "adamw.hparams"); /* lr beta1 beta2 eps wd clip */
    cr_assert(losses != NULL && norms != NULL && hp != NULL);
    const float *h = hp->data;
    for (uint64_t step = 0; step < 10; step++) {
        struct trn_adamw a = {h[0], h[1], h[2], h[3], h[4], step + 1};
        double loss;
        float norm;
        bool bad;

        cr_assert_eq(trn_model_zero_grads(m), 0);
        cr_assert_eq(trn_model_forward(m, fx.inputs, fx.targets, fx.B, fx.T, 0, true, &loss), 0);
        cr_assert_eq(trn_model_backward(m), 0);
        cr_assert_eq(trn_model_grad_prepare(m, 1.0f, h[5], &norm, &bad), 0);
        cr_assert(!bad);
        cr_assert_float_eq(loss, ((const float *)losses->data)[step], 2e-4,
                           "step %llu: %.7f vs %.7f", (unsigned long long)step, loss,
                           ((const float *)losses->data)[step]);
        cr_assert_float_eq(norm, ((const float *)norms->data)[step],
                           2e-4 * ((const float *)norms->data)[step], "step %llu norm",
                           (unsigned long long)step);
        cr_assert_eq(trn_model_adamw(m, &a), 0);
    }
    cr_assert_eq(trn_model_fetch(m), 0); /* a GPU's weights to the host arrays */
    for (size_t i = 0; i < trn_model_ntensors(m); i++) {
        const struct trn_param *p = trn_model_param(m, i);
        char name[64];
        const struct trn_tensor *w;
        double e;

        snprintf(name, sizeof(name), "adamw.final.%s", p->name);
        w = trn_tf_find(fx.tf, name);
        cr_assert_not_null(w, "%s", name);
        if (strstr(p->name, "attn.qkv.b") != NULL) {
            /*
             * The k third of the qkv bias has a true gradient of zero (a constant added to
             * every score of a row leaves its softmax unchanged), so Adam, which divides by
             * the gradient's own size, moves it by up to lr per step in directions set by
             * either side's rounding noise. q and v are compared as usual; k against the
             * bound of those noise-driven steps, 10 * lr.
             */
            size_t C = fx.shape.channels;
            const float *ours = trn_model_params(m) + p->offset, *ref = w->data;

            cr_assert_leq(rel_err(ours, ref, C), 1e-4, "%s (q)", name);
            cr_assert_leq(rel_err(ours + 2 * C, ref + 2 * C, C), 1e-4, "%s (v)", name);
            for (size_t k = C; k < 2 * C; k++)
                cr_assert_leq(fabs(ours[k] - ref[k]), 10 * h[0], "%s (k) [%zu]", name, k);
            continue;
        }
        e = rel_err(trn_model_params(m) + p->offset, w->data, p->count);
        cr_assert_leq(e, 1e-4, "%s after 10 steps: %g", name, e);
    }
    trn_model_free(m);
    trn_tf_close(fx.tf);
}

Test(model, ten_adamw_steps_match_pytorch)
{
    check_adamw_steps(NULL);
}

Test(model, gpu_ten_adamw_steps_match_pytorch)
{
    struct gs_kern_gpu *g = gpu_or_skip();

    check_adamw_steps(g);
    gs_kern_gpu_free(g);
}

Test(model, gpu_without_cuda_is_refused)
{
    struct gs_kern_gpu *g = NULL;

    if (gs_kern_cuda_built())
        cr_skip_test("built with CUDA");
    cr_assert_eq(gs_kern_gpu_new(0, &g), -ENODEV);
}

Test(model, layout_is_backward_order_with_decay_on_matrices)
{
    struct trn_model_shape s = {.layers = 3, .heads = 2, .channels = 8, .context = 4, .vocab = 10};
    struct trn_model *m;
    size_t off = 0;

    cr_assert_eq(trn_model_new(&s, GS_KERN_F32, 2, &m), 0);
    cr_assert_str_eq(trn_model_param(m, 0)->name, "lnf.b");
    cr_assert_str_eq(trn_model_param(m, 2)->name, "h.2.mlp.proj.b");
    cr_assert_str_eq(trn_model_param(m, trn_model_ntensors(m) - 1)->name, "wte");
    cr_assert_eq(trn_model_find(m, "wte")->dims[0], 64, "vocabulary padded to 64");
    for (size_t i = 0; i < trn_model_ntensors(m); i++) {
        const struct trn_param *p = trn_model_param(m, i);

        cr_assert_eq(p->offset, off, "contiguous");
        off += p->count;
        cr_assert_eq(p->decay, p->rank == 2, "%s", p->name);
    }
    cr_assert_eq(off, trn_model_nparams(m));
    cr_assert_eq(trn_model_nparams(m), 3 * (12 * 64 + 13 * 8) + 16 + 4 * 8 + 64 * 8);
    cr_assert_gt(trn_model_bytes(&s, GS_KERN_F32, 2), 4 * trn_model_nparams(m) * sizeof(float));
    cr_assert_lt(trn_model_bytes(&s, GS_KERN_BF16, 2),
                 trn_model_bytes(&s, GS_KERN_F32, 2) + trn_model_nparams(m) * 2 + 64 * 64);
    trn_model_free(m);
    s.channels = 9; /* not a multiple of heads */
    cr_assert_eq(trn_model_new(&s, GS_KERN_F32, 2, &m), -EINVAL);
}

Test(model, init_is_deterministic_and_bad_tokens_are_refused)
{
    struct trn_model_shape s = {.layers = 2, .heads = 2, .channels = 8, .context = 4, .vocab = 10};
    struct trn_model *a, *b;
    int32_t tokens[4] = {1, 2, 3, 10}, targets[4] = {2, 3, 4, 5};
    double loss;

    cr_assert_eq(trn_model_new(&s, GS_KERN_BF16, 1, &a), 0);
    cr_assert_eq(trn_model_new(&s, GS_KERN_BF16, 1, &b), 0);
    trn_model_init(a, 42);
    trn_model_init(b, 42);
    cr_assert_eq(
        memcmp(trn_model_params(a), trn_model_params(b), trn_model_nparams(a) * sizeof(float)), 0);
    cr_assert_eq(trn_model_params(a)[trn_model_find(a, "lnf.w")->offset], 1.0f);
    cr_assert_eq(trn_model_params(a)[trn_model_find(a, "wte")->offset + 10 * 8], 0.0f, "padding");
    trn_model_init(b, 43);
    cr_assert_neq(
        memcmp(trn_model_params(a), trn_model_params(b), trn_model_nparams(a) * sizeof(float)), 0);
    cr_assert_eq(trn_model_sync(a), 0);
    cr_assert_eq(trn_model_forward(a, tokens, targets, 1, 4, 0, true, &loss), -EINVAL,
                 "token 10 is outside a vocabulary of 10");
    tokens[3] = 9;
    cr_assert_eq(trn_model_forward(a, tokens, targets, 1, 4, 0, true, &loss), 0);
    cr_assert(fabs(loss - log(10.0)) < 0.1, "about uniform at init: %g", loss);
    cr_assert_eq(trn_model_forward(a, tokens, targets, 2, 4, 0, true, &loss), -EINVAL, "B > 1");
    trn_model_free(a);
    trn_model_free(b);
}
