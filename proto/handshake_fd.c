/*
 * handshake_fd.c: the keyed hello handshake on a blocking socket (see handshake_fd.h).
 *
 * conn.c is the reference: its send_hello, check_nonce, send_proof and check_proof are done
 * here in the same order over gs_proto_write_fd / gs_proto_read_fd. Both sides send their
 * Hello without waiting, and each sends its proof on the peer's Hello, so the frames the
 * peer sends are always Hello then AuthProof, whichever side proves first. The nonce is
 * no secret (it goes out in our Hello); the key is only read, by gs_proto_auth_proof().
 *
 * No global state; any thread.
 */
#include "proto/handshake_fd.h"

#include <string.h>

static int send_hello(int fd, Gs__Role role, const char *name, uint8_t *nonce, int timeout_ms)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__Hello hello;

    gs_proto_hello_init(&hello, role, name);
    if (nonce != NULL) {
        hello.auth_nonce.data = nonce;
        hello.auth_nonce.len = GS_PROTO_AUTH_NONCE_SIZE;
    }
    env.body_case = GS__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    return gs_proto_write_fd(fd, &env, timeout_ms);
}

/* As conn.c's check_nonce; unkeyed (nonce NULL), a nonce means the peer wants a key. */
static int check_nonce(const Gs__Hello *hello, const uint8_t *nonce)
{
    if (nonce == NULL)
        return hello->auth_nonce.len == 0 ? 0 : GS_PROTO_ERR_AUTH;
    if (hello->protocol_minor < GS_PROTO_MINOR_CRYPT)
        return GS_PROTO_ERR_VERSION;
    if (hello->auth_nonce.len != GS_PROTO_AUTH_NONCE_SIZE ||
        memcmp(hello->auth_nonce.data, nonce, GS_PROTO_AUTH_NONCE_SIZE) == 0)
        return GS_PROTO_ERR_AUTH;
    return 0;
}

/* Reads the peer's first frame and accepts it as conn.c's handshake() does. */
static int read_hello(int fd, uint32_t accept_roles, const uint8_t *nonce, int timeout_ms,
                      Gs__Envelope **ret_peer)
{
    Gs__Envelope *peer = NULL;
    int rc = gs_proto_read_hello_fd(fd, accept_roles, timeout_ms, &peer);

    if (rc == 0)
        rc = check_nonce(peer->hello, nonce);
    if (rc == 0) {
        *ret_peer = peer;
        peer = NULL;
    }
    gs_proto_envelope_free(peer);
    return rc;
}

static int send_proof(int fd, const struct gs_proto_auth_key *key, Gs__Role role, const char *name,
                      const uint8_t *nonce, const Gs__Hello *peer, int timeout_ms)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__AuthProof proof = GS__AUTH_PROOF__INIT;
    uint8_t mac[GS_PROTO_AUTH_PROOF_SIZE];
    int rc;

    rc = gs_proto_auth_proof(key, role, name, nonce, peer->auth_nonce.data, mac);
    if (rc < 0)
        return rc;
    proof.mac.data = mac;
    proof.mac.len = sizeof(mac);
    env.body_case = GS__ENVELOPE__BODY_AUTH_PROOF;
    env.auth_proof = &proof;
    return gs_proto_write_fd(fd, &env, timeout_ms);
}

/* Reads the peer's AuthProof and checks it as conn.c's check_proof() does. */
static int check_proof(int fd, const struct gs_proto_auth_key *key, const uint8_t *nonce,
                       const Gs__Hello *peer, int timeout_ms)
{
    uint8_t want[GS_PROTO_AUTH_PROOF_SIZE];
    Gs__Envelope *env = NULL;
    int rc;

    rc = gs_proto_read_fd(fd, 0, timeout_ms, &env);
    if (rc < 0)
        goto out;
    if (env->body_case == GS__ENVELOPE__BODY_HELLO_REJECT) {
        rc = GS_PROTO_ERR_REJECTED;
        goto out;
    }
    if (env->body_case != GS__ENVELOPE__BODY_AUTH_PROOF ||
        env->auth_proof->mac.len != GS_PROTO_AUTH_PROOF_SIZE) {
        rc = GS_PROTO_ERR_AUTH;
        goto out;
    }
    rc = gs_proto_auth_proof(key, peer->role, peer->name, peer->auth_nonce.data, nonce, want);
    if (rc == 0 && !gs_proto_auth_equal(want, env->auth_proof->mac.data, sizeof(want)))
        rc = GS_PROTO_ERR_AUTH;
out:
    gs_proto_envelope_free(env);
    return rc;
}

int gs_proto_handshake_fd_keyed(int fd, Gs__Role role, const char *name, uint32_t accept_roles,
                                const struct gs_proto_auth_key *key, int timeout_ms,
                                Gs__Envelope **ret_peer, struct gs_proto_seal *ret_seal)
{
    uint8_t nonce_bytes[GS_PROTO_AUTH_NONCE_SIZE];
    uint8_t *nonce = NULL;
    Gs__Envelope *peer = NULL;
    int rc;

    if (key != NULL && key->len > 0) {
        rc = gs_proto_auth_nonce(nonce_bytes);
        if (rc < 0)
            goto out;
        nonce = nonce_bytes;
    }
    rc = send_hello(fd, role, name, nonce, timeout_ms);
    if (rc == 0)
        rc = read_hello(fd, accept_roles, nonce, timeout_ms, &peer);
    if (rc < 0 || nonce == NULL)
        goto out;
    if (ret_seal == NULL) {
        rc = -EINVAL; /* a keyed link's frames after the handshake are sealed */
        goto out;
    }
    rc = send_proof(fd, key, role, name, nonce, peer->hello, timeout_ms);
    if (rc == 0)
        rc = check_proof(fd, key, nonce, peer->hello, timeout_ms);
    if (rc == 0)
        rc = gs_proto_seal_init(ret_seal, key, nonce, peer->hello->auth_nonce.data);
    if (rc == 0)
        ret_seal->sending = ret_seal->receiving = true;
out:
    if (rc == 0 && ret_peer != NULL) {
        *ret_peer = peer;
        peer = NULL;
    }
    gs_proto_envelope_free(peer);
    return rc;
}
