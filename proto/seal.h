/*
 * seal.h: every frame of a keyed link after its handshake is encrypted and authenticated,
 * so that nobody without the cluster key can read it on the network (job specs,
 * environments, tokens) or act through it: a frame injected into the TCP stream, changed,
 * replayed, dropped from the middle or reordered closes the connection instead.
 *
 * Each direction has its own key, derived when both Hellos' nonces are known:
 *     k(sender -> receiver) = HMAC-SHA256(cluster key, "gsched-seal-2" | sender's nonce |
 *                                         receiver's nonce)
 * so a frame cannot be reflected back to its sender, nor taken from another connection. A
 * sealed frame is
 *     length | AES-256-GCM(k, nonce, payload) | tag,
 *     length = payload + GS_PROTO_SEAL_TAG_SIZE bytes, nonce = 4 zero bytes | seq, seq the
 *     frame's number in its direction from 0 as 8 bytes big-endian, tag GCM's 16 bytes,
 * from the first frame after the sender's AuthProof on (the handshake itself is in the
 * clear: it carries no secret). Both ends need protocol 1.13 (GS_PROTO_MINOR_CRYPT): a keyed
 * end refuses an older peer. The counters and keys are the connection's; one thread at a
 * time.
 */
#ifndef GS_PROTO_SEAL_H
#define GS_PROTO_SEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "proto/auth.h"

#define GS_PROTO_SEAL_TAG_SIZE 16
#define GS_PROTO_SEAL_KEY_SIZE 32

struct gs_proto_seal {
    void *send_ctx, *recv_ctx; /* OpenSSL cipher contexts keyed for each direction */
    uint64_t send_seq, recv_seq;
    bool sending;   /* tag what we send (after our AuthProof) */
    bool receiving; /* require tags on what we receive (after the peer's AuthProof) */
};

/* Derives both directions' keys; sending and receiving stay off. s must be zeroed, cleared
 * or initialised before (what it held is released). 0, -EINVAL without a key, -ENOMEM or
 * -EIO. */
int gs_proto_seal_init(struct gs_proto_seal *s, const struct gs_proto_auth_key *key,
                       const uint8_t own_nonce[GS_PROTO_AUTH_NONCE_SIZE],
                       const uint8_t peer_nonce[GS_PROTO_AUTH_NONCE_SIZE]);
/* Releases the keys (OpenSSL wipes them) and turns both directions off; s is then as
 * zeroed. */
void gs_proto_seal_clear(struct gs_proto_seal *s);

/*
 * Seals the frame at out->data + start (header and payload, as gs_proto_encode appended
 * it, ending at out->len): encrypts the payload in place, appends its tag and adds it to the
 * length. 0; -EMSGSIZE when the length would overflow or -ENOMEM, with out as it was; or
 * -EIO from OpenSSL, after which the frame must not be sent.
 */
int gs_proto_seal_frame(struct gs_proto_seal *s, struct gs_buf *out, size_t start);

/*
 * Opens a received payload of len bytes (its tag last) in place: 0 with the envelope's
 * bytes decrypted at payload and *ret_len their length, or GS_PROTO_ERR_AUTH when the tag
 * is missing or wrong (the bytes are then garbage, to be dropped with the connection).
 */
int gs_proto_seal_open(struct gs_proto_seal *s, uint8_t *payload, size_t len, size_t *ret_len);

#endif
