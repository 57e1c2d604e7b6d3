/*
 * test_buf.c: the growable buffer keeps its NUL terminator, grows across many appends,
 * consumes from the front and hands its storage over on detach.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

Test(buf, starts_empty_and_release_is_idempotent)
{
    struct gs_buf b = GS_BUF_INIT;

    cr_assert_eq(b.len, 0);
    cr_assert_null(b.data);
    gs_buf_release(&b);
    gs_buf_release(&b);
    gs_buf_release(NULL);
}

Test(buf, appends_keep_content_nul_terminated)
{
    struct gs_buf b;

    gs_buf_init(&b);
    cr_assert_eq(gs_buf_append_str(&b, "job="), 0);
    cr_assert_eq(gs_buf_printf(&b, "%d", 42), 0);
    cr_assert_eq(gs_buf_putc(&b, ' '), 0);
    cr_assert_eq(gs_buf_append(&b, "placed", 6), 0);
    cr_assert_str_eq(b.data, "job=42 placed");
    cr_assert_eq(b.len, strlen("job=42 placed"));
    gs_buf_release(&b);
}

Test(buf, grows_across_many_appends_and_long_printf)
{
    struct gs_buf b = GS_BUF_INIT;
    char big[5000];

    for (int i = 0; i < 10000; i++)
        cr_assert_eq(gs_buf_putc(&b, (char)('a' + i % 26)), 0);
    cr_assert_eq(b.len, 10000);
    cr_assert_eq(b.data[9999], 'a' + 9999 % 26);
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    gs_buf_reset(&b);
    cr_assert_eq(gs_buf_printf(&b, "<%s>", big), 0);
    cr_assert_eq(b.len, sizeof(big) + 1);
    cr_assert_eq(b.data[0], '<');
    cr_assert_eq(b.data[b.len - 1], '>');
    cr_assert_eq(b.data[b.len], '\0');
    gs_buf_release(&b);
}

Test(buf, holds_binary_data_with_nuls)
{
    struct gs_buf b = GS_BUF_INIT;
    const char bin[] = {'a', '\0', 'b', '\0'};

    cr_assert_eq(gs_buf_append(&b, bin, sizeof(bin)), 0);
    cr_assert_eq(b.len, 4);
    cr_assert_eq(memcmp(b.data, bin, 4), 0);
    gs_buf_release(&b);
}

Test(buf, consume_drops_bytes_from_the_front)
{
    struct gs_buf b = GS_BUF_INIT;

    gs_buf_append_str(&b, "headerpayload");
    gs_buf_consume(&b, 6);
    cr_assert_str_eq(b.data, "payload");
    gs_buf_consume(&b, 100);
    cr_assert_eq(b.len, 0);
    cr_assert_str_eq(b.data, "");
    gs_buf_release(&b);
}

Test(buf, truncate_shortens_only)
{
    struct gs_buf b = GS_BUF_INIT;

    gs_buf_append_str(&b, "abcdef");
    gs_buf_truncate(&b, 10);
    cr_assert_str_eq(b.data, "abcdef");
    gs_buf_truncate(&b, 3);
    cr_assert_str_eq(b.data, "abc");
    gs_buf_release(&b);
}

Test(buf, detach_transfers_ownership_and_leaves_buffer_empty)
{
    struct gs_buf b = GS_BUF_INIT;
    size_t len = 0;
    char *s;

    s = gs_buf_detach(&b, &len);
    cr_assert_not_null(s);
    cr_assert_str_eq(s, "");
    free(s);
    gs_buf_append_str(&b, "mine");
    s = gs_buf_detach(&b, &len);
    cr_assert_str_eq(s, "mine");
    cr_assert_eq(len, 4);
    cr_assert_null(b.data);
    cr_assert_eq(b.len, 0);
    free(s);
}

Test(buf, reserve_refuses_sizes_that_would_overflow)
{
    struct gs_buf b = GS_BUF_INIT;

    gs_buf_append_str(&b, "x");
    cr_assert_eq(gs_buf_reserve(&b, SIZE_MAX), -ENOMEM);
    cr_assert_eq(gs_buf_append(&b, "y", SIZE_MAX - 1), -ENOMEM);
    cr_assert_str_eq(b.data, "x");
    gs_buf_release(&b);
}

/* A formatter writes a whole record and checks once: after the first failure nothing more
 * is written, every append returns that failure, and reset starts afresh. */
Test(buf, the_first_failure_sticks_until_reset)
{
    struct gs_buf b = GS_BUF_INIT;

    cr_assert_eq(gs_buf_error(&b), 0);
    cr_assert_eq(gs_buf_append_str(&b, "a"), 0);
    cr_assert_eq(gs_buf_reserve(&b, SIZE_MAX), -ENOMEM);
    cr_assert_eq(gs_buf_error(&b), -ENOMEM);
    cr_assert_eq(gs_buf_append_str(&b, "b"), -ENOMEM);
    cr_assert_eq(gs_buf_printf(&b, "%d", 7), -ENOMEM);
    cr_assert_eq(gs_buf_putc(&b, 'c'), -ENOMEM);
    cr_assert_eq(gs_buf_fail(&b, -EIO), -ENOMEM, "the first code stays");
    cr_assert_str_eq(b.data, "a");
    gs_buf_reset(&b);
    cr_assert_eq(gs_buf_error(&b), 0);
    cr_assert_eq(gs_buf_append_str(&b, "d"), 0);
    cr_assert_str_eq(b.data, "d");
    cr_assert_eq(gs_buf_fail(&b, -EIO), -EIO);
    cr_assert_eq(gs_buf_append_str(&b, "e"), -EIO);
    cr_assert_null(gs_buf_detach(&b, NULL), "a failed buffer hands over no cut record");
    cr_assert_null(b.data);
    cr_assert_eq(gs_buf_error(&b), 0);
}
