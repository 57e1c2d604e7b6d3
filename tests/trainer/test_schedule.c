/*
 * test_schedule.c: the learning-rate schedule (warmup, cosine, floor) and the fp16 loss
 * scaler's rules (initial 65536, x2 after 2000 clean steps, x0.5 and skip on inf/nan).
 */
#include <criterion/criterion.h>
#include <math.h>

#include "trainer/schedule.h"

Test(lr, warmup_is_linear_then_cosine_to_the_floor)
{
    struct trn_lr_schedule s = {.lr = 1e-3, .min_lr = 1e-4, .warmup_steps = 10, .steps = 110};

    cr_assert_float_eq(trn_lr_at(&s, 0), 1e-4, 1e-15);
    cr_assert_float_eq(trn_lr_at(&s, 4), 5e-4, 1e-15);
    cr_assert_float_eq(trn_lr_at(&s, 9), 1e-3, 1e-15);
    cr_assert_float_eq(trn_lr_at(&s, 10), 1e-3, 1e-15, "the peak right after warmup");
    cr_assert_float_eq(trn_lr_at(&s, 60), 5.5e-4, 1e-12, "halfway: the mean of lr and min_lr");
    cr_assert_float_eq(trn_lr_at(&s, 110), 1e-4, 1e-15);
    cr_assert_float_eq(trn_lr_at(&s, 5000), 1e-4, 1e-15);
    for (uint64_t i = 10; i < 110; i++)
        cr_assert(trn_lr_at(&s, i + 1) <= trn_lr_at(&s, i), "decreasing at %llu",
                  (unsigned long long)i);
}

Test(lr, no_warmup_starts_at_the_peak)
{
    struct trn_lr_schedule s = {.lr = 2.0, .min_lr = 0.0, .warmup_steps = 0, .steps = 4};

    cr_assert_float_eq(trn_lr_at(&s, 0), 2.0, 1e-15);
    cr_assert_float_eq(trn_lr_at(&s, 2), 1.0, 1e-12);
    cr_assert_float_eq(trn_lr_at(&s, 4), 0.0, 1e-15);
}

Test(lr, warmup_as_long_as_the_run)
{
    struct trn_lr_schedule s = {.lr = 1.0, .min_lr = 0.5, .warmup_steps = 4, .steps = 4};

    cr_assert_float_eq(trn_lr_at(&s, 3), 1.0, 1e-15);
    cr_assert_float_eq(trn_lr_at(&s, 4), 0.5, 1e-15);
}

Test(loss_scaler, backs_off_and_skips_on_overflow)
{
    struct trn_loss_scaler ls;

    trn_loss_scaler_init(&ls, 65536, 2, 0.5, 2000);
    cr_assert(!trn_loss_scaler_update(&ls, true));
    cr_assert_float_eq(ls.scale, 32768, 0);
    cr_assert_eq(ls.skipped, 1);
    cr_assert(trn_loss_scaler_update(&ls, false));
    cr_assert_eq(ls.clean_steps, 1);
    cr_assert(!trn_loss_scaler_update(&ls, true));
    cr_assert_eq(ls.clean_steps, 0, "an overflow restarts the count");
    cr_assert_float_eq(ls.scale, 16384, 0);
}

Test(loss_scaler, grows_after_interval_clean_steps)
{
    struct trn_loss_scaler ls;

    trn_loss_scaler_init(&ls, 65536, 2, 0.5, 2000);
    for (int i = 0; i < 1999; i++)
        cr_assert(trn_loss_scaler_update(&ls, false));
    cr_assert_float_eq(ls.scale, 65536, 0);
    cr_assert(trn_loss_scaler_update(&ls, false));
    cr_assert_float_eq(ls.scale, 131072, 0, "x2 at the 2000th clean step");
    cr_assert_eq(ls.clean_steps, 0);
}

Test(loss_scaler, never_below_one)
{
    struct trn_loss_scaler ls;

    trn_loss_scaler_init(&ls, 2, 2, 0.5, 10);
    for (int i = 0; i < 5; i++)
        trn_loss_scaler_update(&ls, true);
    cr_assert_float_eq(ls.scale, 1, 0);
    cr_assert_eq(ls.skipped, 5);
}
