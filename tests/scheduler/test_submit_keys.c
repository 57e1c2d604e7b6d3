/*
 * test_submit_keys.c: the clients' submit keys (submit_keys.h): a key made one job per
 * user, other users' keys are their own, a dropped key is gone while the keys that probed
 * past it stay found, the table grows, and what counts as a key.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>

#include "scheduler/submit_keys.h"

Test(submit_keys, a_key_names_one_job_per_user)
{
    struct sched_submit_keys *k = sched_submit_keys_new();

    cr_assert_not_null(k);
    cr_assert_eq(sched_submit_keys_get(k, 1000, "abc"), 0);
    cr_assert_eq(sched_submit_keys_put(k, 1000, "abc", 42), 0);
    cr_assert_eq(sched_submit_keys_put(k, 1000, "abc", 43), -EEXIST);
    cr_assert_eq(sched_submit_keys_put(k, 1001, "abc", 44), 0, "another user's key");
    cr_assert_eq(sched_submit_keys_get(k, 1000, "abc"), 42);
    cr_assert_eq(sched_submit_keys_get(k, 1001, "abc"), 44);
    cr_assert_eq(sched_submit_keys_count(k), 2);
    sched_submit_keys_drop(k, 1000, "abc");
    cr_assert_eq(sched_submit_keys_get(k, 1000, "abc"), 0);
    cr_assert_eq(sched_submit_keys_get(k, 1001, "abc"), 44);
    sched_submit_keys_drop(k, 1000, "never");
    cr_assert_eq(sched_submit_keys_count(k), 1);
    sched_submit_keys_free(k);
}

Test(submit_keys, grows_and_finds_every_key_after_drops)
{
    struct sched_submit_keys *k = sched_submit_keys_new();
    char key[32];

    for (uint64_t i = 1; i <= 5000; i++) {
        snprintf(key, sizeof(key), "key-%llu", (unsigned long long)i);
        cr_assert_eq(sched_submit_keys_put(k, (uint32_t)(i % 7), key, i), 0);
    }
    for (uint64_t i = 1; i <= 5000; i += 3) {
        snprintf(key, sizeof(key), "key-%llu", (unsigned long long)i);
        sched_submit_keys_drop(k, (uint32_t)(i % 7), key);
    }
    for (uint64_t i = 1; i <= 5000; i++) {
        snprintf(key, sizeof(key), "key-%llu", (unsigned long long)i);
        cr_assert_eq(sched_submit_keys_get(k, (uint32_t)(i % 7), key), i % 3 == 1 ? 0 : i, "%s",
                     key);
        cr_assert_eq(sched_submit_keys_get(k, (uint32_t)(i % 7 + 1), key), 0);
    }
    cr_assert_eq(sched_submit_keys_count(k), 5000 - 1667);
    sched_submit_keys_free(k);
}

Test(submit_keys, a_key_is_1_to_64_printable_characters)
{
    cr_assert(sched_submit_key_ok("0f3a9c"));
    cr_assert(sched_submit_key_ok("retry:job/7"));
    cr_assert_not(sched_submit_key_ok(""));
    cr_assert_not(sched_submit_key_ok(NULL));
    cr_assert_not(sched_submit_key_ok("with space"));
    cr_assert_not(sched_submit_key_ok("tab\there"));
    cr_assert(
        sched_submit_key_ok("0123456789012345678901234567890123456789012345678901234567890123"));
    cr_assert_not(
        sched_submit_key_ok("01234567890123456789012345678901234567890123456789012345678901234"));
}
