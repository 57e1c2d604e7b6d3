/*
 * test_kv.c: the job's key/value store from inside a task (trainer/kv.h) against a fake
 * gschedd (fake_gschedd.h) that keeps one key: outside a job nothing is sent (-ENOENT); a
 * put sends the job's id, the key and the value's bytes; a get copies at most cap bytes and
 * says the whole length; gschedd's -ETIMEDOUT and refusals come back with its message; a
 * bad key or an oversized value is refused before anything is sent; a peer older than the
 * store is not sent the request at all (-EPROTONOSUPPORT).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_gschedd.h"
#include "trainer/kv.h"

/* The fake's store: one key, and what the last requests carried. */
struct store {
    int requests;
    uint64_t job_id;
    uint64_t timeout_ms;
    char key[TRN_KV_KEY_MAX + 1];
    unsigned char value[TRN_KV_VALUE_MAX];
    size_t len;
    bool set;
    int32_t refuse; /* answer every request with this ErrorReply code, when not 0 */
};

static void answer(struct fake_gschedd *f, const Gs__Envelope *req, Gs__Envelope *reply)
{
    static Gs__JobKvPutReply put_reply = GS__JOB_KV_PUT_REPLY__INIT;
    static Gs__JobKvValue value = GS__JOB_KV_VALUE__INIT;
    static Gs__ErrorReply err = GS__ERROR_REPLY__INIT;
    struct store *st = f->data;

    st->requests++;
    if (req->body_case == GS__ENVELOPE__BODY_JOB_KV_PUT && st->refuse == 0) {
        st->job_id = req->job_kv_put->job_id;
        snprintf(st->key, sizeof(st->key), "%s", req->job_kv_put->key);
        memcpy(st->value, req->job_kv_put->value.data, req->job_kv_put->value.len);
        st->len = req->job_kv_put->value.len;
        st->set = true;
        put_reply.job_id = st->job_id;
        put_reply.keys = 1;
        reply->body_case = GS__ENVELOPE__BODY_JOB_KV_PUT_REPLY;
        reply->job_kv_put_reply = &put_reply;
        return;
    }
    if (req->body_case == GS__ENVELOPE__BODY_JOB_KV_GET && st->refuse == 0 && st->set &&
        strcmp(req->job_kv_get->key, st->key) == 0) {
        value.job_id = req->job_kv_get->job_id;
        value.key = st->key;
        value.value.data = st->value;
        value.value.len = st->len;
        reply->body_case = GS__ENVELOPE__BODY_JOB_KV_VALUE;
        reply->job_kv_value = &value;
        return;
    }
    if (req->body_case == GS__ENVELOPE__BODY_JOB_KV_GET)
        st->timeout_ms = req->job_kv_get->timeout_ms;
    err.code = st->refuse != 0 ? st->refuse : -ETIMEDOUT;
    err.message = st->refuse != 0 ? "job 7: only its owner or root may use its key/value store"
                                  : "job 7: key 'x' is not set";
    reply->body_case = GS__ENVELOPE__BODY_ERROR;
    reply->error = &err;
}

Test(kv, outside_a_job_is_enoent_and_sends_nothing)
{
    char err[200], buf[8];
    size_t len = 99;

    unsetenv("GSCHED_JOB_ID");
    unsetenv("GSCHED_SOCKET");
    cr_assert_eq(trn_kv_put("id", "v", 1, err, sizeof(err)), -ENOENT);
    cr_assert(strstr(err, "not in a gsched job") != NULL, "%s", err);
    cr_assert_eq(trn_kv_get("id", buf, sizeof(buf), &len, 10, err, sizeof(err)), -ENOENT);
    cr_assert_eq(len, 99, "*ret_len written only on success");
    setenv("GSCHED_JOB_ID", "x7", 1);
    setenv("GSCHED_SOCKET", "/nonexistent.sock", 1);
    cr_assert_eq(trn_kv_put("id", "v", 1, NULL, 0), -ENOENT, "a job id that is not a number");
    unsetenv("GSCHED_JOB_ID");
    unsetenv("GSCHED_SOCKET");
}

Test(kv, a_put_is_got_back_byte_for_byte)
{
    struct store st = {0};
    struct fake_gschedd f;
    unsigned char id[128], back[128];
    char err[200];
    size_t len = 0;

    for (size_t i = 0; i < sizeof(id); i++)
        id[i] = (unsigned char)(255 - i); /* an ncclUniqueId's worth of bytes */
    fake_gschedd_start(&f, true, 0, answer, &st);
    cr_assert_eq(trn_kv_put("nccl", id, sizeof(id), err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(trn_kv_get("nccl", back, sizeof(back), &len, 5000, err, sizeof(err)), 0, "%s",
                 err);
    fake_gschedd_stop(&f);
    cr_assert_eq(st.job_id, 7, "the job GSCHED_JOB_ID names");
    cr_assert_str_eq(st.key, "nccl");
    cr_assert_eq(len, sizeof(id));
    cr_assert_eq(memcmp(back, id, sizeof(id)), 0);
    cr_assert_eq(st.requests, 2);
}

Test(kv, a_get_copies_at_most_cap_bytes_and_says_the_whole_length)
{
    struct store st = {.set = true, .key = "addr", .value = "10.0.0.1:29500", .len = 14};
    struct fake_gschedd f;
    char buf[8], err[200];
    size_t len = 0;

    memset(buf, '#', sizeof(buf));
    fake_gschedd_start(&f, true, 0, answer, &st);
    cr_assert_eq(trn_kv_get("addr", buf, 4, &len, 0, err, sizeof(err)), 0, "%s", err);
    fake_gschedd_stop(&f);
    cr_assert_eq(len, 14);
    cr_assert_eq(memcmp(buf, "10.0####", 8), 0, "4 bytes copied, no more");
}

Test(kv, a_key_not_set_in_time_is_etimedout_with_gscheds_message)
{
    struct store st = {0};
    struct fake_gschedd f;
    char buf[8], err[200];
    size_t len = 0;

    fake_gschedd_start(&f, true, 0, answer, &st);
    cr_assert_eq(trn_kv_get("x", buf, sizeof(buf), &len, 250, err, sizeof(err)), -ETIMEDOUT);
    cr_assert_eq(st.timeout_ms, 250, "gschedd is asked to wait the caller's timeout");
    cr_assert(strstr(err, "kv get 'x'") != NULL && strstr(err, "is not set") != NULL, "%s", err);
    cr_assert_eq(trn_kv_get("x", buf, sizeof(buf), &len, -1, err, sizeof(err)), -ETIMEDOUT);
    cr_assert_eq(st.timeout_ms, 0, "no waiting for a timeout below 1");
    fake_gschedd_stop(&f);
}

Test(kv, a_refusal_comes_back_as_its_code_and_message)
{
    struct store st = {.refuse = -EPERM};
    struct fake_gschedd f;
    char err[200];

    fake_gschedd_start(&f, true, 0, answer, &st);
    cr_assert_eq(trn_kv_put("id", "v", 1, err, sizeof(err)), -EPERM);
    fake_gschedd_stop(&f);
    cr_assert(strstr(err, "only its owner or root") != NULL, "%s", err);
}

Test(kv, bad_keys_and_oversized_values_are_refused_before_sending)
{
    static char big[TRN_KV_VALUE_MAX + 1];
    char key[TRN_KV_KEY_MAX + 2], err[200];
    struct store st = {0};
    struct fake_gschedd f;

    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    fake_gschedd_start(&f, true, 0, answer, &st);
    cr_assert_eq(trn_kv_put("", "v", 1, err, sizeof(err)), -EINVAL);
    cr_assert_eq(trn_kv_put(NULL, "v", 1, err, sizeof(err)), -EINVAL);
    cr_assert_eq(trn_kv_put(key, "v", 1, err, sizeof(err)), -EINVAL, "129 bytes");
    cr_assert_eq(trn_kv_put("big", big, sizeof(big), err, sizeof(err)), -EMSGSIZE);
    cr_assert(strstr(err, "4097 bytes") != NULL, "%s", err);
    fake_gschedd_stop(&f);
    cr_assert_eq(st.requests, 0);
}

Test(kv, a_peer_older_than_the_store_is_not_sent_the_request)
{
    struct store st = {0};
    struct fake_gschedd f;
    char err[200];

    fake_gschedd_start(&f, true, GS_PROTO_MINOR_JOB_KV - 1, answer, &st);
    cr_assert_eq(trn_kv_put("id", "v", 1, err, sizeof(err)), -EPROTONOSUPPORT);
    fake_gschedd_stop(&f);
    cr_assert(strstr(err, "speaks protocol 1.3") != NULL, "%s", err);
    cr_assert_eq(st.requests, 0);
}
