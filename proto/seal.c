/*
 * seal.c: sealing and opening the frames of keyed links (seal.h) with AES-256-GCM from
 * OpenSSL's libcrypto, as auth.c's proofs use its HMAC. GCM because x86 and Arm servers
 * run it in hardware (AES-NI, PCLMUL), so a frame costs well under a microsecond plus its
 * bytes at several GB/s. The nonce is the frame's number in its direction, so a replayed,
 * dropped or reordered frame fails like a changed one; a key never meets the same nonce
 * twice, since every connection derives fresh keys from both Hellos' random nonces and a
 * direction's counter only grows. OpenSSL compares the tag in constant time.
 */
#include "proto/seal.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "proto/frame.h"

#define SEAL_LABEL "gsched-seal-2" /* -1 was 1.12's HMAC tags, with keys of their own */
#define SEAL_IV_SIZE 12

static int derive(const struct gs_proto_auth_key *key, const uint8_t *from, const uint8_t *to,
                  uint8_t out[GS_PROTO_SEAL_KEY_SIZE])
{
    uint8_t msg[sizeof(SEAL_LABEL) - 1 + 2 * GS_PROTO_AUTH_NONCE_SIZE];
    unsigned int len = 0;

    memcpy(msg, SEAL_LABEL, sizeof(SEAL_LABEL) - 1);
    memcpy(msg + sizeof(SEAL_LABEL) - 1, from, GS_PROTO_AUTH_NONCE_SIZE);
    memcpy(msg + sizeof(SEAL_LABEL) - 1 + GS_PROTO_AUTH_NONCE_SIZE, to, GS_PROTO_AUTH_NONCE_SIZE);
    if (HMAC(EVP_sha256(), key->bytes, (int)key->len, msg, sizeof(msg), out, &len) == NULL ||
        len != GS_PROTO_SEAL_KEY_SIZE)
        return -EIO;
    return 0;
}

/* A cipher context holding the key of the direction (from, to), for encrypting (enc 1) or
 * decrypting: keyed once, so a frame only sets its nonce. */
static int keyed_cipher(const struct gs_proto_auth_key *key, const uint8_t *from, const uint8_t *to,
                        int enc, void **ret)
{
    uint8_t k[GS_PROTO_SEAL_KEY_SIZE];
    EVP_CIPHER_CTX *ctx;
    int rc = derive(key, from, to, k);

    if (rc < 0)
        return rc;
    ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL)
        rc = -ENOMEM;
    else if (!EVP_CipherInit_ex2(ctx, EVP_aes_256_gcm(), k, NULL, enc, NULL) ||
             EVP_CIPHER_CTX_get_iv_length(ctx) != SEAL_IV_SIZE)
        rc = -EIO;
    OPENSSL_cleanse(k, sizeof(k));
    if (rc < 0) {
        EVP_CIPHER_CTX_free(ctx);
        return rc;
    }
    *ret = ctx;
    return 0;
}

int gs_proto_seal_init(struct gs_proto_seal *s, const struct gs_proto_auth_key *key,
                       const uint8_t own_nonce[GS_PROTO_AUTH_NONCE_SIZE],
                       const uint8_t peer_nonce[GS_PROTO_AUTH_NONCE_SIZE])
{
    int rc;

    gs_proto_seal_clear(s);
    if (key == NULL || key->len == 0)
        return -EINVAL;
    rc = keyed_cipher(key, own_nonce, peer_nonce, 1, &s->send_ctx);
    if (rc == 0)
        rc = keyed_cipher(key, peer_nonce, own_nonce, 0, &s->recv_ctx);
    if (rc < 0)
        gs_proto_seal_clear(s);
    return rc;
}

void gs_proto_seal_clear(struct gs_proto_seal *s)
{
    EVP_CIPHER_CTX_free(s->send_ctx); /* wipes the key schedule */
    EVP_CIPHER_CTX_free(s->recv_ctx);
    memset(s, 0, sizeof(*s));
}

/* Starts a frame under ctx's key: its nonce is 4 zero bytes and seq, 8 bytes big-endian. */
static bool start_frame(EVP_CIPHER_CTX *ctx, int enc, uint64_t seq)
{
    uint8_t iv[SEAL_IV_SIZE] = {0};

    for (int i = 0; i < 8; i++)
        iv[4 + i] = (uint8_t)(seq >> (56 - 8 * i));
    return ctx != NULL && EVP_CipherInit_ex2(ctx, NULL, NULL, iv, enc, NULL);
}

int gs_proto_seal_frame(struct gs_proto_seal *s, struct gs_buf *out, size_t start)
{
    EVP_CIPHER_CTX *ctx = s->send_ctx;
    uint8_t tag[GS_PROTO_SEAL_TAG_SIZE], *frame, *payload;
    size_t len = out->len - start - GS_PROTO_HEADER_SIZE;
    int n = 0, fin = 0, rc;

    if (len + GS_PROTO_SEAL_TAG_SIZE > UINT32_MAX || len > INT_MAX)
        return -EMSGSIZE;
    /* Room for the tag first: past this point only OpenSSL itself can fail. */
    rc = gs_buf_reserve(out, GS_PROTO_SEAL_TAG_SIZE);
    if (rc < 0)
        return rc;
    payload = (uint8_t *)out->data + start + GS_PROTO_HEADER_SIZE;
    if (!start_frame(ctx, 1, s->send_seq) ||
        !EVP_EncryptUpdate(ctx, payload, &n, payload, (int)len) || (size_t)n != len ||
        !EVP_EncryptFinal_ex(ctx, payload + n, &fin) || fin != 0 ||
        !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, sizeof(tag), tag))
        return -EIO;
    rc = gs_buf_append(out, tag, sizeof(tag)); /* reserved above: cannot fail */
    if (rc < 0)
        return rc;
    frame = (uint8_t *)out->data + start;
    len += GS_PROTO_SEAL_TAG_SIZE;
    frame[0] = (uint8_t)(len >> 24), frame[1] = (uint8_t)(len >> 16);
    frame[2] = (uint8_t)(len >> 8), frame[3] = (uint8_t)len;
    s->send_seq++;
    return 0;
}

int gs_proto_seal_open(struct gs_proto_seal *s, uint8_t *payload, size_t len, size_t *ret_len)
{
    EVP_CIPHER_CTX *ctx = s->recv_ctx;
    uint8_t tag[GS_PROTO_SEAL_TAG_SIZE];
    int n = 0, fin = 0;

    if (len <= GS_PROTO_SEAL_TAG_SIZE || len - GS_PROTO_SEAL_TAG_SIZE > INT_MAX)
        return GS_PROTO_ERR_AUTH;
    len -= GS_PROTO_SEAL_TAG_SIZE;
    memcpy(tag, payload + len, sizeof(tag)); /* the ctrl takes a mutable pointer */
    if (!start_frame(ctx, 0, s->recv_seq) ||
        !EVP_DecryptUpdate(ctx, payload, &n, payload, (int)len) || (size_t)n != len ||
        !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, sizeof(tag), tag) ||
        EVP_DecryptFinal_ex(ctx, payload + n, &fin) <= 0)
        return GS_PROTO_ERR_AUTH;
    s->recv_seq++;
    *ret_len = len;
    return 0;
}
