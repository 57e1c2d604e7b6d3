/*
 * test_tensorfile.c: ".gstf" named-tensor files: a round trip through the writer, the
 * committed PyTorch fixture (version 1) read as the C tests will read it, and every kind of
 * damage (truncation at each byte, a flipped bit, bad magic, absurd dims) refused by name.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trainer/tensorfile.h"

static const float weights[6] = {1.5f, -2.0f, 0.25f, 3.0f, 1e-30f, -0.0f};
static const int32_t ids[3] = {7, -1, 65536};
static const struct trn_tensor tensors[] = {
    {.name = "w", .dtype = TRN_TF_F32, .rank = 2, .dims = {2, 3}, .data = weights},
    {.name = "ids", .dtype = TRN_TF_I32, .rank = 1, .dims = {3}, .data = ids},
    {.name = "scalar", .dtype = TRN_TF_F32, .rank = 0, .data = weights},
    {.name = "empty", .dtype = TRN_TF_U8, .rank = 1, .dims = {0}, .data = NULL},
};
#define NT (sizeof(tensors) / sizeof(tensors[0]))

static unsigned char *image(size_t *ret_len)
{
    size_t len = trn_tf_size(tensors, NT);
    unsigned char *buf = malloc(len);

    cr_assert_not_null(buf);
    cr_assert_eq(trn_tf_serialize(buf, len, tensors, NT), 0);
    *ret_len = len;
    return buf;
}

Test(tensorfile, round_trip)
{
    struct gs_buf err = GS_BUF_INIT;
    struct trn_tf *tf = NULL;
    size_t len;
    unsigned char *buf = image(&len);
    const struct trn_tensor *w, *i, *s;

    cr_assert_eq(trn_tf_parse(buf, len, "mem", &tf, &err), 0, "%s", err.data);
    cr_assert_eq(trn_tf_ntensors(tf), NT);
    w = trn_tf_expect(tf, "w", TRN_TF_F32, 6, &err);
    cr_assert_not_null(w, "%s", err.data);
    cr_assert_eq((uintptr_t)w->data % 64, 0, "aligned for vector loads");
    cr_assert_eq(memcmp(w->data, weights, sizeof(weights)), 0);
    cr_assert_eq(w->dims[0], 2);
    i = trn_tf_find(tf, "ids");
    cr_assert_eq(memcmp(i->data, ids, sizeof(ids)), 0);
    s = trn_tf_find(tf, "scalar");
    cr_assert_eq(trn_tensor_count(s), 1);
    cr_assert_float_eq(*(const float *)s->data, 1.5f, 0);
    cr_assert_eq(trn_tensor_count(trn_tf_find(tf, "empty")), 0);
    cr_assert_null(trn_tf_find(tf, "nope"));
    cr_assert_null(trn_tf_expect(tf, "w", TRN_TF_F32, 5, &err));
    cr_assert(strstr(err.data, "tensor w has 6 elements") != NULL, "%s", err.data);
    trn_tf_close(tf);
    gs_buf_release(&err);
    free(buf);
}

Test(tensorfile, every_truncation_and_bit_flip_is_refused)
{
    size_t len;
    unsigned char *buf = image(&len);

    for (size_t cut = 0; cut < len; cut++) {
        struct gs_buf err = GS_BUF_INIT;
        struct trn_tf *tf = NULL;

        cr_assert_eq(trn_tf_parse(buf, cut, "ckpt.gstf", &tf, &err), -EINVAL, "cut at %zu", cut);
        cr_assert(strncmp(err.data, "ckpt.gstf: ", 11) == 0, "%s", err.data);
        gs_buf_release(&err);
    }
    for (size_t at = 0; at < len; at++) {
        struct trn_tf *tf = NULL;

        buf[at] ^= 0x10;
        cr_assert_eq(trn_tf_parse(buf, len, "ckpt.gstf", &tf, NULL), -EINVAL, "flip at %zu", at);
        buf[at] ^= 0x10;
    }
    free(buf);
}

/* A version-1 image (no CRC) with one tensor of the given dims. */
static size_t v1_image(unsigned char *p, uint32_t rank, const uint32_t *dims)
{
    size_t off = 0;

    memcpy(p, "GSTF\1\0\0\0\1\0\0\0", 12);
    off = 12;
    p[off++] = 1;
    p[off++] = 0;
    p[off++] = 'x';
    p[off++] = TRN_TF_F32;
    p[off++] = (unsigned char)rank;
    for (uint32_t d = 0; d < rank; d++, off += 4)
        memcpy(p + off, &dims[d], 4);
    return off;
}

Test(tensorfile, absurd_dims_are_refused_without_overflow)
{
    unsigned char p[128] = {0};
    uint32_t huge[4] = {0x10000, 0x10000, 0x10000, 0x10000};
    struct gs_buf err = GS_BUF_INIT;
    struct trn_tf *tf = NULL;
    size_t len = v1_image(p, 4, huge);

    cr_assert_eq(trn_tf_parse(p, len + 16, "f", &tf, &err), -EINVAL);
    cr_assert(strstr(err.data, "larger than the file") != NULL, "%s", err.data);
    gs_buf_release(&err);
    memcpy(p, "GSTX", 4);
    cr_assert_eq(trn_tf_parse(p, len, "f", &tf, &err), -EINVAL);
    cr_assert(strstr(err.data, "no GSTF magic") != NULL, "%s", err.data);
    gs_buf_release(&err);
}

Test(tensorfile, durable_write_and_open)
{
    char dir[] = "/tmp/gstf-XXXXXX", path[64], tmp[72];
    struct gs_buf err = GS_BUF_INIT;
    struct trn_tf *tf = NULL;
    size_t len;
    unsigned char *buf = image(&len);

    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/a.gstf", dir);
    cr_assert_eq(trn_write_file_durably(path, buf, len), 0);
    cr_assert_eq(access(path, R_OK), 0);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    cr_assert_neq(access(tmp, F_OK), 0, "no temporary file left behind");
    cr_assert_eq(trn_tf_open(path, &tf, &err), 0, "%s", err.data);
    cr_assert_eq(trn_tf_ntensors(tf), NT);
    trn_tf_close(tf);
    cr_assert_eq(trn_tf_open("/nonexistent/x.gstf", &tf, &err), -ENOENT);
    cr_assert(strstr(err.data, "/nonexistent/x.gstf: ") != NULL, "%s", err.data);
    unlink(path);
    rmdir(dir);
    gs_buf_release(&err);
    free(buf);
}

Test(tensorfile, the_pytorch_fixture_reads)
{
    struct gs_buf err = GS_BUF_INIT;
    struct trn_tf *tf = NULL;
    const struct trn_tensor *cfg, *loss, *wte, *g;

    cr_assert_eq(trn_tf_open(GSCHED_FIXTURES "/tiny.gstf", &tf, &err), 0, "%s", err.data);
    cfg = trn_tf_expect(tf, "config", TRN_TF_I32, 7, &err);
    cr_assert_not_null(cfg, "%s", err.data);
    const int32_t *c = cfg->data; /* L NH C T V Vp B */
    cr_assert_eq(c[5] % 64, 0, "padded vocabulary");
    wte = trn_tf_expect(tf, "wte", TRN_TF_F32, (size_t)c[5] * (size_t)c[2], &err);
    cr_assert_not_null(wte, "%s", err.data);
    for (size_t i = (size_t)c[4] * (size_t)c[2]; i < (size_t)c[5] * (size_t)c[2]; i++)
        cr_assert_eq(((const float *)wte->data)[i], 0.0f, "padding rows are zero");
    loss = trn_tf_expect(tf, "loss", TRN_TF_F32, 1, &err);
    cr_assert_not_null(loss, "%s", err.data);
    cr_assert(*(const float *)loss->data > 3.0f && *(const float *)loss->data < 5.0f);
    g = trn_tf_expect(tf, "grad.h.1.mlp.proj.w", TRN_TF_F32, (size_t)c[2] * 4 * (size_t)c[2], &err);
    cr_assert_not_null(g, "%s", err.data);
    cr_assert_not_null(trn_tf_expect(tf, "adamw.losses", TRN_TF_F32, 10, &err), "%s", err.data);
    trn_tf_close(tf);
    gs_buf_release(&err);
}
