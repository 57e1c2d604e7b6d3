/*
 * seal.c: per-frame tags of keyed links (seal.h), HMAC-SHA256 from OpenSSL's libcrypto as
 * auth.c's proofs are. The tag covers the frame's number, so a replayed, dropped or
 * reordered frame fails like a changed one; the check takes the same time wherever a tag
 * differs.
 */
#include "proto/seal.h"

#include <errno.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>

#include "proto/frame.h"

#define SEAL_LABEL "gsched-seal-1"

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

/* An HMAC-SHA256 context keyed with the direction's key derived from (from, to): keyed once,
 * so a frame's tag costs the hashing alone. */
static int keyed_mac(EVP_MAC *mac, const struct gs_proto_auth_key *key, const uint8_t *from,
                     const uint8_t *to, void **ret)
{
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    uint8_t k[GS_PROTO_SEAL_KEY_SIZE];
    EVP_MAC_CTX *ctx;
    int rc = derive(key, from, to, k);

    if (rc < 0)
        return rc;
    ctx = EVP_MAC_CTX_new(mac);
    if (ctx == NULL)
        rc = -ENOMEM;
    else if (!EVP_MAC_init(ctx, k, sizeof(k), params))
        rc = -EIO;
    OPENSSL_cleanse(k, sizeof(k));
    if (rc < 0) {
        EVP_MAC_CTX_free(ctx);
        return rc;
    }
    *ret = ctx;
    return 0;
}

int gs_proto_seal_init(struct gs_proto_seal *s, const struct gs_proto_auth_key *key,
                       const uint8_t own_nonce[GS_PROTO_AUTH_NONCE_SIZE],
                       const uint8_t peer_nonce[GS_PROTO_AUTH_NONCE_SIZE])
{
    EVP_MAC *mac;
    int rc;

    gs_proto_seal_clear(s);
    if (key == NULL || key->len == 0)
        return -EINVAL;
    mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (mac == NULL)
        return -EIO;
    rc = keyed_mac(mac, key, own_nonce, peer_nonce, &s->send_mac);
    if (rc == 0)
        rc = keyed_mac(mac, key, peer_nonce, own_nonce, &s->recv_mac);
    EVP_MAC_free(mac); /* the contexts hold their own references */
    if (rc < 0)
        gs_proto_seal_clear(s);
    return rc;
}

void gs_proto_seal_clear(struct gs_proto_seal *s)
{
    EVP_MAC_CTX_free(s->send_mac);
    EVP_MAC_CTX_free(s->recv_mac);
    memset(s, 0, sizeof(*s));
}

/* The full HMAC of seq | payload, with ctx's key. */
static int tag_of(void *ctx, uint64_t seq, const uint8_t *payload, size_t len,
                  uint8_t out[EVP_MAX_MD_SIZE])
{
    uint8_t be[8];
    size_t n = 0;

    for (int i = 0; i < 8; i++)
        be[i] = (uint8_t)(seq >> (56 - 8 * i));
    if (ctx == NULL || !EVP_MAC_init(ctx, NULL, 0, NULL) || !EVP_MAC_update(ctx, be, sizeof(be)) ||
        !EVP_MAC_update(ctx, payload, len) || !EVP_MAC_final(ctx, out, &n, EVP_MAX_MD_SIZE) ||
        n < GS_PROTO_SEAL_TAG_SIZE)
        return -EIO;
    return 0;
}

int gs_proto_seal_frame(struct gs_proto_seal *s, struct gs_buf *out, size_t start)
{
    uint8_t tag[EVP_MAX_MD_SIZE], *frame;
    size_t len = out->len - start - GS_PROTO_HEADER_SIZE;
    int rc;

    if (len + GS_PROTO_SEAL_TAG_SIZE > UINT32_MAX)
        return -EMSGSIZE;
    rc = tag_of(s->send_mac, s->send_seq, (const uint8_t *)out->data + start + GS_PROTO_HEADER_SIZE,
                len, tag);
    if (rc == 0)
        rc = gs_buf_append(out, tag, GS_PROTO_SEAL_TAG_SIZE);
    if (rc < 0)
        return rc;
    frame = (uint8_t *)out->data + start;
    len += GS_PROTO_SEAL_TAG_SIZE;
    frame[0] = (uint8_t)(len >> 24), frame[1] = (uint8_t)(len >> 16);
    frame[2] = (uint8_t)(len >> 8), frame[3] = (uint8_t)len;
    s->send_seq++;
    return 0;
}

int gs_proto_seal_open(struct gs_proto_seal *s, const uint8_t *payload, size_t len, size_t *ret_len)
{
    uint8_t tag[EVP_MAX_MD_SIZE];

    if (len <= GS_PROTO_SEAL_TAG_SIZE)
        return GS_PROTO_ERR_AUTH;
    len -= GS_PROTO_SEAL_TAG_SIZE;
    if (tag_of(s->recv_mac, s->recv_seq, payload, len, tag) < 0 ||
        CRYPTO_memcmp(tag, payload + len, GS_PROTO_SEAL_TAG_SIZE) != 0)
        return GS_PROTO_ERR_AUTH;
    s->recv_seq++;
    *ret_len = len;
    return 0;
}
