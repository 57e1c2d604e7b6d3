/*
 * cred.c: login-node CLI credentials through libmunge (see cred.h): the payload that binds a
 * credential to one connection, munge_encode for the CLI, munge_decode for gschedd, and
 * libmunge's error codes turned into the faults gschedd logs and answers with.
 *
 * Each call makes its own munge context (the socket option lives there), so calls on
 * different threads share nothing. Without libmunge the payload functions remain and the
 * rest refuses, so callers need no conditional code.
 */
#include "proto/cred.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gsched_config.h"

#if GSCHED_HAVE_MUNGE
#include <munge.h>
#endif

static const char *const fault_names[] = {
    [GS_PROTO_CRED_OK] = "ok",
    [GS_PROTO_CRED_MISSING] = "no_credential",
    [GS_PROTO_CRED_INVALID] = "invalid",
    [GS_PROTO_CRED_EXPIRED] = "expired",
    [GS_PROTO_CRED_REWOUND] = "rewound",
    [GS_PROTO_CRED_REPLAYED] = "replayed",
    [GS_PROTO_CRED_UNBOUND] = "not_for_this_connection",
    [GS_PROTO_CRED_UNAUTHORIZED] = "unauthorized",
    [GS_PROTO_CRED_UNREACHABLE] = "munged_unreachable",
    [GS_PROTO_CRED_ERROR] = "munge_error",
};

bool gs_proto_cred_available(void)
{
    return GSCHED_HAVE_MUNGE;
}

void gs_proto_cred_payload(const uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE],
                           uint8_t out[GS_PROTO_CRED_PAYLOAD_SIZE])
{
    memcpy(out, GS_PROTO_CRED_LABEL, GS_PROTO_CRED_LABEL_LEN);
    memcpy(out + GS_PROTO_CRED_LABEL_LEN, nonce, GS_PROTO_AUTH_NONCE_SIZE);
}

bool gs_proto_cred_payload_ok(const void *payload, size_t len,
                              const uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE])
{
    uint8_t want[GS_PROTO_CRED_PAYLOAD_SIZE];

    if (payload == NULL || len != sizeof(want))
        return false;
    gs_proto_cred_payload(nonce, want);
    /* The nonce is public (it crossed the wire in gschedd's Hello): no need for a
     * constant-time compare. */
    return memcmp(payload, want, sizeof(want)) == 0;
}

const char *gs_proto_cred_fault_name(enum gs_proto_cred_fault f)
{
    if ((size_t)f >= sizeof(fault_names) / sizeof(fault_names[0]))
        return "munge_error";
    return fault_names[f];
}

#if GSCHED_HAVE_MUNGE

enum gs_proto_cred_fault gs_proto_cred_fault_of(int munge_err)
{
    switch (munge_err) {
    case EMUNGE_SUCCESS:
        return GS_PROTO_CRED_OK;
    case EMUNGE_SOCKET:
    case EMUNGE_TIMEOUT:
        return GS_PROTO_CRED_UNREACHABLE;
    case EMUNGE_BAD_CRED:
    case EMUNGE_BAD_VERSION:
    case EMUNGE_BAD_CIPHER:
    case EMUNGE_BAD_MAC:
    case EMUNGE_BAD_ZIP:
    case EMUNGE_BAD_REALM:
    case EMUNGE_CRED_INVALID:
        return GS_PROTO_CRED_INVALID;
    case EMUNGE_CRED_EXPIRED:
        return GS_PROTO_CRED_EXPIRED;
    case EMUNGE_CRED_REWOUND:
        return GS_PROTO_CRED_REWOUND;
    case EMUNGE_CRED_REPLAYED:
        return GS_PROTO_CRED_REPLAYED;
    case EMUNGE_CRED_UNAUTHORIZED:
        return GS_PROTO_CRED_UNAUTHORIZED;
    default:
        return GS_PROTO_CRED_ERROR;
    }
}

static int errno_of(enum gs_proto_cred_fault f, int munge_err)
{
    if (f == GS_PROTO_CRED_UNREACHABLE)
        return -EHOSTUNREACH;
    if (f == GS_PROTO_CRED_ERROR)
        return munge_err == EMUNGE_NO_MEMORY ? -ENOMEM : -EIO;
    return -EACCES;
}

/* A context talking to socket_path (NULL: libmunge's default); NULL with why set. */
static munge_ctx_t context(const char *socket_path, char *why, size_t why_size)
{
    munge_ctx_t ctx = munge_ctx_create();
    munge_err_t err;

    if (ctx == NULL) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    if (socket_path == NULL)
        return ctx;
    err = munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket_path);
    if (err == EMUNGE_SUCCESS)
        return ctx;
    snprintf(why, why_size, "%s", munge_strerror(err));
    munge_ctx_destroy(ctx);
    return NULL;
}

int gs_proto_cred_encode(const char *socket_path, const uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE],
                         char **ret_cred, char *why, size_t why_size)
{
    uint8_t payload[GS_PROTO_CRED_PAYLOAD_SIZE];
    munge_ctx_t ctx = context(socket_path, why, why_size);
    char *cred = NULL;
    munge_err_t err;
    int rc = 0;

    if (ctx == NULL)
        return -ENOMEM;
    gs_proto_cred_payload(nonce, payload);
    err = munge_encode(&cred, ctx, payload, (int)sizeof(payload));
    if (err != EMUNGE_SUCCESS) {
        const char *detail = munge_ctx_strerror(ctx);

        snprintf(why, why_size, "%s", detail != NULL ? detail : munge_strerror(err));
        rc = errno_of(gs_proto_cred_fault_of((int)err), (int)err);
        free(cred);
        goto out;
    }
    *ret_cred = cred;
out:
    munge_ctx_destroy(ctx);
    return rc;
}

/* cred as the NUL-terminated text munge_decode takes, or NULL with *fault and why set: a
 * credential empty, too long or not text is refused before munged is asked. */
static char *cred_text(const void *cred, size_t len, enum gs_proto_cred_fault *fault, char *why,
                       size_t why_size)
{
    char *text;

    if (len == 0 || len > GS_PROTO_CRED_MAX || memchr(cred, '\0', len) != NULL) {
        *fault = len == 0 ? GS_PROTO_CRED_MISSING : GS_PROTO_CRED_INVALID;
        snprintf(why, why_size, "%s", len == 0 ? "no credential" : "not a credential");
        return NULL;
    }
    text = malloc(len + 1);
    if (text == NULL) {
        *fault = GS_PROTO_CRED_ERROR;
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    memcpy(text, cred, len);
    text[len] = '\0';
    return text;
}

int gs_proto_cred_decode(const char *socket_path, const void *cred, size_t len,
                         const uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE],
                         struct gs_proto_cred_id *ret_id, enum gs_proto_cred_fault *ret_fault,
                         char *why, size_t why_size)
{
    char *text = cred_text(cred, len, ret_fault, why, why_size);
    munge_ctx_t ctx = NULL;
    void *payload = NULL;
    int payload_len = 0, rc = 0;
    uid_t uid;
    gid_t gid;
    munge_err_t err;

    if (text == NULL) {
        rc = *ret_fault == GS_PROTO_CRED_ERROR ? -ENOMEM : -EACCES;
        goto out;
    }
    ctx = context(socket_path, why, why_size);
    if (ctx == NULL) {
        *ret_fault = GS_PROTO_CRED_ERROR;
        rc = -ENOMEM;
        goto out;
    }
    err = munge_decode(text, ctx, &payload, &payload_len, &uid, &gid);
    *ret_fault = gs_proto_cred_fault_of((int)err);
    if (err != EMUNGE_SUCCESS) {
        const char *detail = munge_ctx_strerror(ctx);

        snprintf(why, why_size, "%s", detail != NULL ? detail : munge_strerror(err));
        rc = errno_of(*ret_fault, (int)err);
        goto out;
    }
    if (!gs_proto_cred_payload_ok(payload, (size_t)payload_len, nonce)) {
        *ret_fault = GS_PROTO_CRED_UNBOUND;
        snprintf(why, why_size, "credential not made for this connection");
        rc = -EACCES;
        goto out;
    }
    ret_id->uid = (uint32_t)uid;
    ret_id->gid = (uint32_t)gid;
out:
    free(payload);
    free(text);
    if (ctx != NULL)
        munge_ctx_destroy(ctx);
    return rc;
}

#else /* !GSCHED_HAVE_MUNGE */

enum gs_proto_cred_fault gs_proto_cred_fault_of(int munge_err)
{
    return munge_err == 0 ? GS_PROTO_CRED_OK : GS_PROTO_CRED_ERROR;
}

int gs_proto_cred_encode(const char *socket_path, const uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE],
                         char **ret_cred, char *why, size_t why_size)
{
    (void)socket_path;
    (void)nonce;
    (void)ret_cred;
    snprintf(why, why_size, "this gsched was built without libmunge");
    return -EPROTONOSUPPORT;
}

int gs_proto_cred_decode(const char *socket_path, const void *cred, size_t len,
                         const uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE],
                         struct gs_proto_cred_id *ret_id, enum gs_proto_cred_fault *ret_fault,
                         char *why, size_t why_size)
{
    (void)socket_path;
    (void)cred;
    (void)len;
    (void)nonce;
    (void)ret_id;
    *ret_fault = GS_PROTO_CRED_ERROR;
    snprintf(why, why_size, "this gschedd was built without libmunge");
    return -EPROTONOSUPPORT;
}

#endif
