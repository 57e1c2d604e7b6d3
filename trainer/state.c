/*
 * state.c: checkpoint contents (see state.h). 64-bit counters travel as pairs of int32
 * (low, high) because tensor files hold 32-bit integers; the scaler's scale is a power of
 * two times its initial value, exact in a double, so it is stored as two int32 halves of
 * its bits too rather than rounded to float.
 */
#include "trainer/state.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT 1

static void put64(int32_t *out, uint64_t v)
{
    out[0] = (int32_t)(uint32_t)v;
    out[1] = (int32_t)(uint32_t)(v >> 32);
}

static uint64_t get64(const int32_t *in)
{
    return (uint64_t)(uint32_t)in[0] | (uint64_t)(uint32_t)in[1] << 32;
}

static uint64_t dbits(double d)
{
    uint64_t u;

    memcpy(&u, &d, sizeof(u));
    return u;
}

static double bitsd(uint64_t u)
{
    double d;

    memcpy(&d, &u, sizeof(d));
    return d;
}

/* The small integer tensors, filled from st (or read back into it). */
struct small {
    int32_t format[1], shape[6], step[2], adam_t[2], data[4], data_plan[2], scaler[10], rng[8];
};

enum { NSMALL = 8, NT = NSMALL + 3 };

static void describe(struct trn_tensor *t, struct small *s, struct trn_model *m)
{
    size_t P = trn_model_nparams(m);
    const struct {
        const char *name;
        int32_t *data;
        uint32_t n;
    } ints[NSMALL] = {
        {"gsched.ckpt", s->format, 1}, {"shape", s->shape, 6}, {"step", s->step, 2},
        {"adam_t", s->adam_t, 2},      {"data", s->data, 4},   {"data.plan", s->data_plan, 2},
        {"scaler", s->scaler, 10},     {"rng", s->rng, 8},
    };

    for (int i = 0; i < NSMALL; i++)
        t[i] = (struct trn_tensor){.name = ints[i].name,
                                   .dtype = TRN_TF_I32,
                                   .rank = 1,
                                   .dims = {ints[i].n},
                                   .data = ints[i].data};
    t[NSMALL] = (struct trn_tensor){.name = "params",
                                    .dtype = TRN_TF_F32,
                                    .rank = 1,
                                    .dims = {(uint32_t)P},
                                    .data = trn_model_params(m)};
    t[NSMALL + 1] = (struct trn_tensor){.name = "adam.m",
                                        .dtype = TRN_TF_F32,
                                        .rank = 1,
                                        .dims = {(uint32_t)P},
                                        .data = trn_model_adam_m(m)};
    t[NSMALL + 2] = (struct trn_tensor){.name = "adam.v",
                                        .dtype = TRN_TF_F32,
                                        .rank = 1,
                                        .dims = {(uint32_t)P},
                                        .data = trn_model_adam_v(m)};
}

/* "data.rest"'s int32 count for a bitmap of bits bits: the count, then the words, as pairs. */
static size_t rest_ints(uint64_t bits)
{
    return 2 + 2 * (size_t)((bits + 63) / 64);
}

static struct trn_tensor rest_tensor(uint64_t bits, int32_t *data)
{
    return (struct trn_tensor){.name = "data.rest",
                               .dtype = TRN_TF_I32,
                               .rank = 1,
                               .dims = {(uint32_t)rest_ints(bits)},
                               .data = data};
}

size_t trn_state_size(const struct trn_model *m, const struct trn_state *st)
{
    struct trn_tensor t[NT + 1];
    struct small s;
    size_t n = NT;

    describe(t, &s, (struct trn_model *)m); /* only sizes are read */
    if (st->data_rest_bits > 0)
        t[n++] = rest_tensor(st->data_rest_bits, NULL);
    return trn_tf_size(t, n);
}

int trn_state_save(struct trn_model *m, const struct trn_state *st, const uint64_t *rest, void *buf,
                   size_t size)
{
    const struct trn_model_shape *sh = trn_model_shape(m);
    struct trn_tensor t[NT + 1];
    struct small s = {.format = {FORMAT}};
    int32_t *ri = NULL;
    size_t n = NT;
    int rc;

    if (trn_model_nparams(m) > UINT32_MAX || rest_ints(st->data_rest_bits) > UINT32_MAX)
        return -EINVAL;
    s.shape[0] = (int32_t)sh->layers;
    s.shape[1] = (int32_t)sh->heads;
    s.shape[2] = (int32_t)sh->channels;
    s.shape[3] = (int32_t)sh->context;
    s.shape[4] = (int32_t)sh->vocab;
    s.shape[5] = (int32_t)trn_model_dtype(m);
    put64(s.step, st->step);
    put64(s.adam_t, st->adam_t);
    put64(s.data, st->data_epoch);
    put64(s.data + 2, st->data_sample);
    put64(s.data_plan, st->data_plan);
    put64(s.scaler, dbits(st->scaler.scale));
    put64(s.scaler + 2, dbits(st->scaler.growth));
    put64(s.scaler + 4, dbits(st->scaler.backoff));
    put64(s.scaler + 6, st->scaler.skipped);
    s.scaler[8] = (int32_t)st->scaler.interval;
    s.scaler[9] = (int32_t)st->scaler.clean_steps;
    for (int i = 0; i < 4; i++)
        put64(s.rng + 2 * i, st->rng.s[i]);
    describe(t, &s, m);
    if (st->data_rest_bits > 0) {
        ri = malloc(rest_ints(st->data_rest_bits) * sizeof(*ri));
        if (ri == NULL)
            return -ENOMEM;
        put64(ri, st->data_rest_bits);
        for (size_t w = 0; w < (st->data_rest_bits + 63) / 64; w++)
            put64(ri + 2 + 2 * w, rest[w]);
        t[n++] = rest_tensor(st->data_rest_bits, ri);
    }
    rc = trn_tf_serialize(buf, size, t, n);
    free(ri);
    return rc;
}

/* "data.rest" into *ret (NULL, 0 bits without it). 0, -EINVAL (malformed), -ENOMEM. */
static int load_rest(const struct trn_tf *tf, const char *path, uint64_t **ret, uint64_t *ret_bits,
                     struct gs_buf *err)
{
    const struct trn_tensor *t = trn_tf_find(tf, "data.rest");
    const int32_t *v;
    uint64_t bits, *words;

    *ret = NULL;
    *ret_bits = 0;
    if (t == NULL)
        return 0;
    v = t->data;
    bits = t->dtype == TRN_TF_I32 && trn_tensor_count(t) >= 2 ? get64(v) : 0;
    if (bits == 0 || bits > UINT64_MAX / 2 || trn_tensor_count(t) != rest_ints(bits)) {
        gs_buf_printf(err, "%s: tensor data.rest malformed", path);
        return -EINVAL;
    }
    words = malloc(((bits + 63) / 64) * sizeof(*words));
    if (words == NULL)
        return -ENOMEM;
    for (size_t w = 0; w < (bits + 63) / 64; w++)
        words[w] = get64(v + 2 + 2 * w);
    *ret = words;
    *ret_bits = bits;
    return 0;
}

static const int32_t *ints(const struct trn_tf *tf, const char *path, const char *name, size_t n,
                           struct gs_buf *err)
{
    const struct trn_tensor *t = trn_tf_find(tf, name);

    if (t != NULL && t->dtype == TRN_TF_I32 && trn_tensor_count(t) == n)
        return t->data;
    gs_buf_printf(err, "%s: not a gsched-train checkpoint (tensor %s %s)", path, name,
                  t == NULL ? "missing" : "malformed");
    return NULL;
}

int trn_state_shape(const struct trn_tf *tf, const char *path, struct trn_model_shape *shape,
                    enum gs_kern_dtype *dt, struct gs_buf *err)
{
    const int32_t *f = ints(tf, path, "gsched.ckpt", 1, err), *s;

    if (f == NULL)
        return -EINVAL;
    if (f[0] != FORMAT) {
        gs_buf_printf(err, "%s: checkpoint format %d, this gsched-train reads %d", path, f[0],
                      FORMAT);
        return -EINVAL;
    }
    s = ints(tf, path, "shape", 6, err);
    if (s == NULL)
        return -EINVAL;
    for (int i = 0; i < 6; i++) {
        if (s[i] < 0 || (i < 5 && s[i] == 0) || (i == 5 && s[i] > GS_KERN_F16)) {
            gs_buf_printf(err, "%s: bad model shape in the checkpoint", path);
            return -EINVAL;
        }
    }
    *shape = (struct trn_model_shape){(uint32_t)s[0], (uint32_t)s[1], (uint32_t)s[2],
                                      (uint32_t)s[3], (uint32_t)s[4]};
    *dt = (enum gs_kern_dtype)s[5];
    return 0;
}

/* "data.plan", or 0 from a checkpoint written before it existed. */
static uint64_t data_plan_of(const struct trn_tf *tf)
{
    const struct trn_tensor *t = trn_tf_find(tf, "data.plan");

    if (t == NULL || t->dtype != TRN_TF_I32 || trn_tensor_count(t) != 2)
        return 0;
    return get64(t->data);
}

int trn_state_load(const struct trn_tf *tf, const char *path, struct trn_model *m,
                   struct trn_state *st, uint64_t **ret_rest, struct gs_buf *err)
{
    const struct trn_model_shape *want = trn_model_shape(m);
    struct trn_model_shape have;
    enum gs_kern_dtype dt;
    const int32_t *step, *adam_t, *data, *sc, *rng;
    const char *names[3] = {"params", "adam.m", "adam.v"};
    float *dst[3] = {trn_model_params(m), trn_model_adam_m(m), trn_model_adam_v(m)};
    size_t P = trn_model_nparams(m);

    if (trn_state_shape(tf, path, &have, &dt, err) < 0)
        return -EINVAL;
    if (have.layers != want->layers || have.heads != want->heads ||
        have.channels != want->channels || have.context != want->context ||
        have.vocab != want->vocab) {
        gs_buf_printf(err,
                      "%s: the checkpoint's model (layers %u, heads %u, channels %u, context %u, "
                      "vocab %u) is not this run's (%u, %u, %u, %u, %u)",
                      path, have.layers, have.heads, have.channels, have.context, have.vocab,
                      want->layers, want->heads, want->channels, want->context, want->vocab);
        return -EINVAL;
    }
    step = ints(tf, path, "step", 2, err);
    adam_t = step ? ints(tf, path, "adam_t", 2, err) : NULL;
    data = adam_t ? ints(tf, path, "data", 4, err) : NULL;
    sc = data ? ints(tf, path, "scaler", 10, err) : NULL;
    rng = sc ? ints(tf, path, "rng", 8, err) : NULL;
    if (rng == NULL)
        return -EINVAL;
    for (int i = 0; i < 3; i++) {
        const struct trn_tensor *t = trn_tf_find(tf, names[i]);

        if (t == NULL || t->dtype != TRN_TF_F32 || trn_tensor_count(t) != P) {
            gs_buf_printf(err, "%s: tensor %s does not hold the model's %zu parameters", path,
                          names[i], P);
            return -EINVAL;
        }
    }
    for (int i = 0; i < 3; i++)
        memcpy(dst[i], trn_tf_find(tf, names[i])->data, P * sizeof(float));
    st->step = get64(step);
    st->adam_t = get64(adam_t);
    st->data_epoch = get64(data);
    st->data_sample = get64(data + 2);
    st->data_plan = data_plan_of(tf);
    st->scaler.scale = bitsd(get64(sc));
    st->scaler.growth = bitsd(get64(sc + 2));
    st->scaler.backoff = bitsd(get64(sc + 4));
    st->scaler.skipped = get64(sc + 6);
    st->scaler.interval = (uint32_t)sc[8];
    st->scaler.clean_steps = (uint32_t)sc[9];
    for (int i = 0; i < 4; i++)
        st->rng.s[i] = get64(rng + 2 * i);
    st->data_rest_bits = 0;
    if (ret_rest != NULL) {
        int rc = load_rest(tf, path, ret_rest, &st->data_rest_bits, err);

        if (rc < 0)
            return rc;
    }
    return trn_model_sync(m);
}
