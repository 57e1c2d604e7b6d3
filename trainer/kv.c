/*
 * kv.c: the job's key/value store from inside a task (see kv.h). Each call is one exchange
 * through trn_gschedd_call (gschedd.h); a get asks gschedd to wait timeout_ms for the key,
 * and gives the exchange that long plus TRN_KV_EXCHANGE_MS, so that gschedd's own answer
 * (the value, or -ETIMEDOUT) normally comes first.
 */
#define _POSIX_C_SOURCE 200809L

#include "trainer/kv.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "trainer/gschedd.h"

/* The job and its socket, with what is wrong with key or len first. */
static int kv_begin(const char *key, size_t len, uint64_t *ret_job_id, char *sock, char *err,
                    size_t errlen)
{
    size_t n = key != NULL ? strnlen(key, TRN_KV_KEY_MAX + 1) : 0;

    if (n == 0 || n > TRN_KV_KEY_MAX) {
        snprintf(err, errlen, "key must be 1 to %d bytes", TRN_KV_KEY_MAX);
        return -EINVAL;
    }
    if (len > TRN_KV_VALUE_MAX) {
        snprintf(err, errlen, "value of %zu bytes: at most %d are kept", len, TRN_KV_VALUE_MAX);
        return -EMSGSIZE;
    }
    if (trn_gschedd_job(ret_job_id, sock, TRN_GSCHEDD_PATH_MAX) < 0) {
        snprintf(err, errlen, "not in a gsched job (GSCHED_JOB_ID or GSCHED_SOCKET unset)");
        return -ENOENT;
    }
    return 0;
}

int trn_kv_put(const char *key, const void *val, size_t len, char *err, size_t errlen)
{
    Gs__JobKvPut put = GS__JOB_KV_PUT__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    char sock[TRN_GSCHEDD_PATH_MAX], why[256];
    int rc;

    rc = kv_begin(key, len, &put.job_id, sock, why, sizeof(why));
    if (rc == 0) {
        put.key = (char *)key;
        put.value.data = (uint8_t *)val;
        put.value.len = len;
        env.body_case = GS__ENVELOPE__BODY_JOB_KV_PUT;
        env.job_kv_put = &put;
        rc =
            trn_gschedd_call(sock, &env, GS__ENVELOPE__BODY_JOB_KV_PUT_REPLY, GS_PROTO_MINOR_JOB_KV,
                             TRN_KV_EXCHANGE_MS, &reply, NULL, why, sizeof(why));
    }
    if (rc < 0 && err != NULL)
        snprintf(err, errlen, "kv put '%.*s': %s", TRN_KV_KEY_MAX, key != NULL ? key : "", why);
    gs_proto_envelope_free(reply);
    return rc;
}

int trn_kv_get(const char *key, void *val, size_t cap, size_t *ret_len, int timeout_ms, char *err,
               size_t errlen)
{
    Gs__JobKvGet get = GS__JOB_KV_GET__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    char sock[TRN_GSCHEDD_PATH_MAX], why[256];
    int wait_ms = timeout_ms > 0 ? timeout_ms : 0, rc;
    const ProtobufCBinaryData *v;

    rc = kv_begin(key, 0, &get.job_id, sock, why, sizeof(why));
    if (rc == 0) {
        get.key = (char *)key;
        get.timeout_ms = (uint64_t)wait_ms;
        env.body_case = GS__ENVELOPE__BODY_JOB_KV_GET;
        env.job_kv_get = &get;
        rc = trn_gschedd_call(sock, &env, GS__ENVELOPE__BODY_JOB_KV_VALUE, GS_PROTO_MINOR_JOB_KV,
                              wait_ms > INT_MAX - TRN_KV_EXCHANGE_MS ? INT_MAX
                                                                     : wait_ms + TRN_KV_EXCHANGE_MS,
                              &reply, NULL, why, sizeof(why));
    }
    if (rc < 0) {
        if (err != NULL)
            snprintf(err, errlen, "kv get '%.*s': %s", TRN_KV_KEY_MAX, key != NULL ? key : "", why);
        goto out;
    }
    v = &reply->job_kv_value->value;
    if (v->len > 0 && cap > 0)
        memcpy(val, v->data, v->len < cap ? v->len : cap);
    *ret_len = v->len;
out:
    gs_proto_envelope_free(reply);
    return rc;
}
