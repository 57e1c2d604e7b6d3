/*
 * test_job_kv.c: a running job's key/value store (scheduler/job_kv.h): a put is read back
 * byte for byte and a second put of the key replaces it; keys are 1 to 128 printable ASCII
 * characters, values at most 4096 bytes (empty ones too), at most 64 keys a job, and a
 * refused put leaves the store as it was; only a RUNNING job has a store, and it is gone
 * when the job ends, is requeued (the next attempt starts empty) or loses its node; jobs do
 * not see each other's keys.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "job_fixture.h"
#include "scheduler/job_kv.h"

TestSuite(job_kv, .init = job_fixture_setup, .fini = job_fixture_teardown);

/* Asserts key's value is the NUL-terminated text want. */
static void expect_value(const struct sched_job *job, const char *key, const char *want)
{
    const void *value = NULL;
    size_t len = 0;

    cr_assert_eq(sched_job_kv_get(job, key, &value, &len), 0, "key '%s' is set", key);
    cr_assert_eq(len, strlen(want), "key '%s': %zu bytes", key, len);
    cr_assert(len == 0 || memcmp(value, want, len) == 0, "key '%s' holds '%s'", key, want);
}

Test(job_kv, a_put_is_read_back_and_a_second_put_replaces_it)
{
    struct sched_job *job = fixture_running(1, 2);
    const void *value;
    size_t len;

    cr_assert_eq(sched_job_kv_get(job, "id", &value, &len), -ENOENT, "nothing before a put");
    cr_assert_eq(sched_job_kv_put(job, "id", "first", 5), 0);
    expect_value(job, "id", "first");
    cr_assert_eq(sched_job_kv_put(job, "id", "second value", 12), 0);
    expect_value(job, "id", "second value");
    cr_assert_eq(sched_job_kv_count(job), 1, "replaced, not added");
    cr_assert_eq(sched_job_kv_put(job, "other", "x", 1), 0);
    cr_assert_eq(sched_job_kv_count(job), 2);
    expect_value(job, "id", "second value");
}

Test(job_kv, values_are_bytes_and_may_be_empty)
{
    struct sched_job *job = fixture_running(1, 1);
    unsigned char unique_id[128];
    const void *value;
    size_t len;

    for (size_t i = 0; i < sizeof(unique_id); i++)
        unique_id[i] = (unsigned char)(i * 37); /* NULs and bytes above 0x7F */
    cr_assert_eq(sched_job_kv_put(job, "nccl", unique_id, sizeof(unique_id)), 0);
    cr_assert_eq(sched_job_kv_get(job, "nccl", &value, &len), 0);
    cr_assert_eq(len, sizeof(unique_id));
    cr_assert_eq(memcmp(value, unique_id, len), 0);
    cr_assert_eq(sched_job_kv_put(job, "empty", NULL, 0), 0);
    expect_value(job, "empty", "");
    cr_assert_eq(sched_job_kv_put(job, "nccl", "", 0), 0, "a value may shrink to nothing");
    expect_value(job, "nccl", "");
}

Test(job_kv, keys_are_1_to_128_printable_ascii_characters)
{
    struct sched_job *job = fixture_running(1, 1);
    char longest[SCHED_KV_KEY_MAX + 2];
    const void *value;
    size_t len;

    memset(longest, 'k', SCHED_KV_KEY_MAX);
    longest[SCHED_KV_KEY_MAX] = '\0';
    cr_assert(sched_job_kv_key_ok(longest));
    cr_assert(sched_job_kv_key_ok(" /torch.distributed/rank~0 "), "space to '~'");
    cr_assert_eq(sched_job_kv_put(job, longest, "v", 1), 0);
    longest[SCHED_KV_KEY_MAX] = 'k';
    longest[SCHED_KV_KEY_MAX + 1] = '\0';
    cr_assert_not(sched_job_kv_key_ok(longest), "129 characters");
    cr_assert_eq(sched_job_kv_put(job, longest, "v", 1), -EINVAL);
    cr_assert_eq(sched_job_kv_get(job, longest, &value, &len), -EINVAL);
    cr_assert_not(sched_job_kv_key_ok(""));
    cr_assert_not(sched_job_kv_key_ok(NULL));
    cr_assert_not(sched_job_kv_key_ok("a\nb"));
    cr_assert_not(sched_job_kv_key_ok("tab\there"));
    cr_assert_not(sched_job_kv_key_ok("del\x7f"));
    cr_assert_not(sched_job_kv_key_ok("caf\xc3\xa9"), "ASCII only");
    cr_assert_eq(sched_job_kv_put(job, "", "v", 1), -EINVAL);
    cr_assert_eq(sched_job_kv_count(job), 1, "refused keys are not kept");
}

Test(job_kv, values_over_4096_bytes_are_refused_and_the_old_one_kept)
{
    struct sched_job *job = fixture_running(1, 1);
    static char big[SCHED_KV_VALUE_MAX + 1];
    const void *value;
    size_t len;

    memset(big, 'v', sizeof(big));
    cr_assert_eq(sched_job_kv_put(job, "k", big, SCHED_KV_VALUE_MAX), 0, "4096 bytes fit");
    cr_assert_eq(sched_job_kv_get(job, "k", &value, &len), 0);
    cr_assert_eq(len, SCHED_KV_VALUE_MAX);
    cr_assert_eq(sched_job_kv_put(job, "k", "small", 5), 0);
    cr_assert_eq(sched_job_kv_put(job, "k", big, SCHED_KV_VALUE_MAX + 1), -EMSGSIZE);
    expect_value(job, "k", "small");
    cr_assert_eq(sched_job_kv_put(job, "new", big, SCHED_KV_VALUE_MAX + 1), -EMSGSIZE);
    cr_assert_eq(sched_job_kv_count(job), 1);
}

Test(job_kv, a_job_holds_at_most_64_keys_but_may_still_replace_them)
{
    struct sched_job *job = fixture_running(1, 1);
    char key[16];

    for (int i = 0; i < SCHED_KV_KEYS_MAX; i++) {
        snprintf(key, sizeof(key), "key%d", i);
        cr_assert_eq(sched_job_kv_put(job, key, key, strlen(key)), 0, "%s", key);
    }
    cr_assert_eq(sched_job_kv_count(job), SCHED_KV_KEYS_MAX);
    cr_assert_eq(sched_job_kv_put(job, "one-more", "x", 1), -ENOSPC);
    cr_assert_eq(sched_job_kv_put(job, "key17", "replaced", 8), 0, "a set key is no new one");
    expect_value(job, "key17", "replaced");
    expect_value(job, "key63", "key63");
    cr_assert_eq(sched_job_kv_count(job), SCHED_KV_KEYS_MAX);
}

Test(job_kv, only_a_running_job_has_a_store)
{
    struct sched_job *pending = fixture_add(1, 0);
    const void *value;
    size_t len;

    cr_assert_eq(sched_job_kv_put(pending, "k", "v", 1), -EINVAL);
    cr_assert_eq(sched_job_kv_get(pending, "k", &value, &len), -EINVAL);
    cr_assert_null(pending->kv, "nothing made for a refused put");
    cr_assert_eq(sched_job_kv_count(pending), 0);
}

Test(job_kv, the_store_goes_when_the_job_ends)
{
    struct sched_job *job = fixture_running(1, 2);
    const void *value;
    size_t len;

    cr_assert_eq(sched_job_kv_put(job, "id", "abc", 3), 0);
    cr_assert_not(sched_job_task_ended(job, 0, SCHED_TASK_EXITED, 0, 0, 6000));
    expect_value(job, "id", "abc"); /* one task is still running */
    cr_assert(sched_job_task_ended(job, 1, SCHED_TASK_EXITED, 0, 0, 6001));
    cr_assert_eq(job->state, SCHED_JOB_COMPLETED);
    cr_assert_null(job->kv, "freed with the allocation");
    cr_assert_eq(sched_job_kv_get(job, "id", &value, &len), -EINVAL);
    cr_assert_eq(sched_job_kv_put(job, "id", "late", 4), -EINVAL, "a late put finds no store");
    cr_assert_null(job->kv);
}

Test(job_kv, a_cancelled_job_loses_its_store_when_its_tasks_have_ended)
{
    struct sched_job *job = fixture_running(1, 1);

    cr_assert_eq(sched_job_kv_put(job, "id", "abc", 3), 0);
    cr_assert_not(sched_job_cancel(job, 6000));
    expect_value(job, "id", "abc"); /* its tasks are being ended */
    cr_assert(sched_job_task_ended(job, 0, SCHED_TASK_CANCELLED, 0, SIGTERM, 6100));
    cr_assert_eq(job->state, SCHED_JOB_CANCELLED);
    cr_assert_null(job->kv);
}

Test(job_kv, a_requeued_attempt_starts_empty)
{
    struct sched_job *job = fixture_running(1, 1);
    const void *value;
    size_t len;

    cr_assert_eq(sched_job_kv_put(job, "id", "attempt1", 8), 0);
    cr_assert_eq(sched_job_requeue(job, false, "requeue"), 0);
    cr_assert(sched_job_task_ended(job, 0, SCHED_TASK_CANCELLED, 0, SIGTERM, 6000));
    cr_assert_eq(job->state, SCHED_JOB_PENDING);
    cr_assert_null(job->kv);
    cr_assert_eq(sched_job_start(job, &one_node, 1, 7000), 0);
    cr_assert_eq(sched_job_kv_get(job, "id", &value, &len), -ENOENT, "the new attempt has none");
    cr_assert_eq(sched_job_kv_put(job, "id", "attempt2", 8), 0);
    expect_value(job, "id", "attempt2");
}

Test(job_kv, a_node_failure_drops_the_store_whether_requeued_or_not)
{
    struct sched_job *again = fixture_add(1, 1), *lost = fixture_running(2, 1);

    cr_assert_eq(sched_job_start(again, &one_node, 1, 5000), 0);
    cr_assert_eq(sched_job_kv_put(again, "id", "x", 1), 0);
    cr_assert_eq(sched_job_kv_put(lost, "id", "y", 1), 0);
    cr_assert_eq(sched_job_node_failed(again, 6000), SCHED_JOB_REQUEUED);
    cr_assert_eq(sched_job_node_failed(lost, 6000), SCHED_JOB_NODE_FAIL);
    cr_assert_null(again->kv);
    cr_assert_null(lost->kv);
}

Test(job_kv, jobs_do_not_share_keys)
{
    struct sched_job *a = fixture_running(1, 1), *b = fixture_running(2, 1);
    const void *value;
    size_t len;

    cr_assert_eq(sched_job_kv_put(a, "id", "a", 1), 0);
    cr_assert_eq(sched_job_kv_get(b, "id", &value, &len), -ENOENT);
    cr_assert_eq(sched_job_kv_put(b, "id", "b", 1), 0);
    expect_value(a, "id", "a");
    expect_value(b, "id", "b");
}
