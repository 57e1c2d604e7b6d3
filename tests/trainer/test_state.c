/*
 * test_state.c: what a checkpoint holds (trainer/state.h), through a file image in memory:
 * the data position and its plan digest come back as saved, and a checkpoint written before
 * "data.plan" existed still loads, with digest 0.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/state.h"

static const struct trn_model_shape shape = {1, 1, 8, 4, 16};

static struct trn_model *model(void)
{
    struct trn_model *m = NULL;

    cr_assert_eq(trn_model_new(&shape, GS_KERN_F32, 1, &m), 0);
    trn_model_init(m, 5);
    cr_assert_eq(trn_model_sync(m), 0);
    return m;
}

static const struct trn_state saved = {
    .step = 12,
    .adam_t = 11,
    .data_epoch = 3,
    .data_sample = 80,
    .data_plan = UINT64_C(0x05936e9c35c15cdb),
    .scaler = {.scale = 1024, .growth = 2, .backoff = 0.5, .interval = 10},
    .rng = {{1, 2, 3, 4}},
};

/* The checkpoint image of m and saved; the caller frees *ret_buf. */
static struct trn_tf *save_with(struct trn_model *m, const struct trn_state *st,
                                const uint64_t *rest, void **ret_buf)
{
    size_t size = trn_state_size(m, st);
    void *buf = malloc(size);
    struct trn_tf *tf = NULL;

    cr_assert_not_null(buf);
    cr_assert_eq(trn_state_save(m, st, rest, buf, size), 0);
    cr_assert_eq(trn_tf_parse(buf, size, "ckpt", &tf, NULL), 0);
    *ret_buf = buf;
    return tf;
}

static struct trn_tf *save(struct trn_model *m, void **ret_buf)
{
    return save_with(m, &saved, NULL, ret_buf);
}

Test(trn_state, the_data_position_and_its_plan_digest_round_trip)
{
    struct trn_model *m = model();
    struct gs_buf err = GS_BUF_INIT;
    struct trn_state st = {0};
    void *buf;
    struct trn_tf *tf = save(m, &buf);

    cr_assert_not_null(trn_tf_find(tf, "data.plan"));
    cr_assert_null(trn_tf_find(tf, "data.rest"), "no rest: no tensor");
    cr_assert_eq(trn_state_load(tf, "ckpt", m, &st, NULL, &err), 0, "%s", err.data);
    cr_expect_eq(st.step, 12);
    cr_expect_eq(st.data_epoch, 3);
    cr_expect_eq(st.data_sample, 80);
    cr_expect_eq(st.data_plan, saved.data_plan);
    cr_expect_eq(st.rng.s[3], 4);
    trn_tf_close(tf);
    free(buf);
    gs_buf_release(&err);
    trn_model_free(m);
}

Test(trn_state, a_checkpoint_from_before_plan_digests_loads_with_none)
{
    struct trn_model *m = model();
    struct gs_buf err = GS_BUF_INIT;
    struct trn_state st = {.data_plan = 99};
    struct trn_tensor old[32];
    size_t n = 0, size;
    void *buf, *old_buf;
    struct trn_tf *tf = save(m, &buf), *old_tf = NULL;

    for (size_t i = 0; i < trn_tf_ntensors(tf); i++) {
        if (strcmp(trn_tf_at(tf, i)->name, "data.plan") != 0)
            old[n++] = *trn_tf_at(tf, i);
    }
    cr_assert_eq(n + 1, trn_tf_ntensors(tf));
    size = trn_tf_size(old, n);
    old_buf = malloc(size);
    cr_assert_not_null(old_buf);
    cr_assert_eq(trn_tf_serialize(old_buf, size, old, n), 0);
    cr_assert_eq(trn_tf_parse(old_buf, size, "old", &old_tf, NULL), 0);
    cr_assert_eq(trn_state_load(old_tf, "old", m, &st, NULL, &err), 0, "%s", err.data);
    cr_expect_eq(st.data_plan, 0);
    cr_expect_eq(st.data_sample, 80);
    trn_tf_close(old_tf);
    trn_tf_close(tf);
    free(old_buf);
    free(buf);
    gs_buf_release(&err);
    trn_model_free(m);
}

/* Inside the rest of an epoch begun after a change of assignment: its bitmap goes along. */
Test(trn_state, the_rest_of_an_epoch_round_trips_bit_for_bit)
{
    struct trn_model *m = model();
    struct gs_buf err = GS_BUF_INIT;
    struct trn_state with = saved, st = {0};
    uint64_t rest[3] = {UINT64_C(0x8000000000000001), 0, UINT64_C(0x5)}, *back = NULL;
    void *buf;
    struct trn_tf *tf;

    with.data_rest_bits = 131;
    tf = save_with(m, &with, rest, &buf);
    cr_assert_eq(trn_state_load(tf, "ckpt", m, &st, &back, &err), 0, "%s", err.data);
    cr_expect_eq(st.data_rest_bits, 131);
    cr_assert_not_null(back);
    cr_expect_eq(memcmp(back, rest, sizeof(rest)), 0);
    free(back);
    back = NULL;
    cr_assert_eq(trn_state_load(tf, "ckpt", m, &st, NULL, &err), 0, "%s", err.data);
    cr_expect_eq(st.data_rest_bits, 0, "a reader that does not ask for it: none");
    trn_tf_close(tf);
    free(buf);
    gs_buf_release(&err);
    trn_model_free(m);
}
