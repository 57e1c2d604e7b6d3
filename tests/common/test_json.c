/*
 * test_json.c: the JSON writer places commas and colons itself, escapes what JSON requires,
 * and reports misuse and unclosed containers instead of writing broken JSON.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>

#include "common/json.h"

static struct gs_buf out;
static struct gs_json j;

static void setup(void)
{
    gs_buf_init(&out);
    gs_json_init(&j, &out);
}

static void teardown(void)
{
    gs_buf_release(&out);
}

TestSuite(json, .init = setup, .fini = teardown);

Test(json, nests_objects_and_arrays_with_separators)
{
    gs_json_object_begin(&j);
    gs_json_key(&j, "id");
    gs_json_uint(&j, 42);
    gs_json_key(&j, "gpus");
    gs_json_array_begin(&j);
    gs_json_int(&j, 0);
    gs_json_int(&j, -1);
    gs_json_array_end(&j);
    gs_json_key(&j, "node");
    gs_json_object_begin(&j);
    gs_json_key(&j, "up");
    gs_json_bool(&j, true);
    gs_json_key(&j, "reason");
    gs_json_null(&j);
    gs_json_object_end(&j);
    gs_json_key(&j, "empty");
    gs_json_array_begin(&j);
    gs_json_array_end(&j);
    gs_json_object_end(&j);
    cr_assert_eq(gs_json_finish(&j), 0);
    cr_assert_str_eq(
        out.data,
        "{\"id\":42,\"gpus\":[0,-1],\"node\":{\"up\":true,\"reason\":null},\"empty\":[]}");
}

Test(json, escapes_quotes_backslashes_and_control_characters)
{
    gs_json_array_begin(&j);
    gs_json_string(&j, "a\"b\\c\nd\te\r\x01\x7f");
    gs_json_string(&j, "h\xc3\xa9llo");
    gs_json_stringn(&j, "x\0y", 3);
    gs_json_string(&j, NULL);
    gs_json_array_end(&j);
    cr_assert_eq(gs_json_finish(&j), 0);
    cr_assert_str_eq(out.data, "[\"a\\\"b\\\\c\\nd\\te\\r\\u0001\\u007f\",\"h\xc3\xa9llo\","
                               "\"x\\u0000y\",null]");
}

Test(json, numbers_round_trip_and_non_finite_is_null)
{
    gs_json_array_begin(&j);
    gs_json_double(&j, 0.1);
    gs_json_double(&j, INFINITY);
    gs_json_uint(&j, UINT64_MAX);
    gs_json_int(&j, INT64_MIN);
    gs_json_array_end(&j);
    cr_assert_eq(gs_json_finish(&j), 0);
    cr_assert_str_eq(out.data,
                     "[0.10000000000000001,null,18446744073709551615,-9223372036854775808]");
}

Test(json, value_without_key_in_object_is_an_error)
{
    gs_json_object_begin(&j);
    gs_json_int(&j, 1);
    gs_json_object_end(&j);
    cr_assert_eq(gs_json_finish(&j), -EINVAL);
}

Test(json, unclosed_or_mismatched_containers_are_errors)
{
    gs_json_array_begin(&j);
    cr_assert_eq(gs_json_finish(&j), -EINVAL);
    gs_buf_reset(&out);
    gs_json_init(&j, &out);
    gs_json_array_begin(&j);
    gs_json_object_end(&j);
    cr_assert_eq(gs_json_finish(&j), -EINVAL);
    gs_buf_reset(&out);
    gs_json_init(&j, &out);
    gs_json_object_begin(&j);
    gs_json_key(&j, "k");
    gs_json_object_end(&j);
    cr_assert_eq(gs_json_finish(&j), -EINVAL, "a key without its value");
}

Test(json, only_one_top_level_value)
{
    gs_json_int(&j, 1);
    gs_json_int(&j, 2);
    cr_assert_eq(gs_json_finish(&j), -EINVAL);
}

Test(json, key_value_helpers_write_a_member_each)
{
    gs_json_object_begin(&j);
    gs_json_kv_string(&j, "name", "n1");
    gs_json_kv_int(&j, "delta", -2);
    gs_json_kv_uint(&j, "gpus", 8);
    gs_json_kv_bool(&j, "up", false);
    gs_json_kv_string(&j, "reason", NULL);
    gs_json_object_end(&j);
    cr_assert_eq(gs_json_finish(&j), 0);
    cr_assert_str_eq(out.data,
                     "{\"name\":\"n1\",\"delta\":-2,\"gpus\":8,\"up\":false,\"reason\":null}");
}
