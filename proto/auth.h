/*
 * auth.h: mutual authentication of worker <-> gschedd connections with a shared cluster key
 * (the key file every daemon holds, as MUNGE's munge.key; docs/security.md says how to make
 * and deploy it).
 *
 * The exchange, run by conn.c when a connection has a key (gs_proto_conn_opts.auth_key):
 *   1. each side's Hello carries a fresh 32-byte nonce (Hello.auth_nonce);
 *   2. on the peer's Hello each side sends an AuthProof: HMAC-SHA256 under the key of the
 *      label "gsched-auth-1", its own role and name, its own nonce and the peer's nonce;
 *   3. each side checks the peer's proof against what it computes from the peer's Hello and
 *      its own nonce; only then is the connection ready (on_ready). A missing nonce is
 *      answered with HelloReject(REJECT_REASON_AUTH), a wrong proof closes the connection.
 * A proof cannot be replayed (it covers the receiver's fresh nonce) nor reflected (it covers
 * the sender's role and nonce; equal nonces are refused). Every frame after the handshake is
 * sealed with keys derived from the same key and nonces (proto/seal.h), so one injected or
 * changed on the way closes the connection; frames are not encrypted.
 */
#ifndef GS_PROTO_AUTH_H
#define GS_PROTO_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "proto/gsched.pb-c.h"

#define GS_PROTO_AUTH_NONCE_SIZE 32
#define GS_PROTO_AUTH_PROOF_SIZE 32 /* SHA-256 */
#define GS_PROTO_AUTH_KEY_MIN 16    /* bytes a key file holds at least ... */
#define GS_PROTO_AUTH_KEY_MAX 1024  /* ... and at most */
#define GS_PROTO_AUTH_KEY_CREATE 32 /* what gs_proto_auth_key_create writes */

struct gs_proto_auth_key {
    uint8_t bytes[GS_PROTO_AUTH_KEY_MAX];
    size_t len; /* 0: no key */
};

/*
 * Reads the key at path after checking it is a regular file (not through a symbolic link)
 * owned by root or the effective uid, with no group or other permission bits, holding
 * GS_PROTO_AUTH_KEY_MIN..MAX bytes; a file directly in $CREDENTIALS_DIRECTORY (systemd's copy
 * for this service, LoadCredential) is taken whatever its mode and owner. 0, or a negative errno
 * with a one-line reason naming the path appended to err (-EPERM for the permissions). key is
 * cleared on failure.
 */
int gs_proto_auth_key_load(const char *path, struct gs_proto_auth_key *key, struct gs_buf *err);

/* Creates a new key file at path (mode 0600, fails with -EEXIST if there is one) of
 * GS_PROTO_AUTH_KEY_CREATE random bytes, fsynced. */
int gs_proto_auth_key_create(const char *path);

/* Wipes the key's bytes. */
void gs_proto_auth_key_clear(struct gs_proto_auth_key *key);

/* A fresh nonce. 0 or -EIO. */
int gs_proto_auth_nonce(uint8_t out[GS_PROTO_AUTH_NONCE_SIZE]);

/* The proof a sender of this role and name makes for this pair of nonces. 0, -EINVAL
 * without a key, -ENOMEM or -EIO. */
int gs_proto_auth_proof(const struct gs_proto_auth_key *key, Gs__Role role, const char *name,
                        const uint8_t *sender_nonce, const uint8_t *receiver_nonce,
                        uint8_t out[GS_PROTO_AUTH_PROOF_SIZE]);

/* a and b equal, in time independent of where they differ. */
bool gs_proto_auth_equal(const uint8_t *a, const uint8_t *b, size_t len);

#endif
