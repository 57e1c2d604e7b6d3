/*
 * seal.h: a tag on every frame of a keyed link after its handshake, so that a frame nobody
 * holding the cluster key sent (injected into the TCP stream), or one changed, replayed,
 * dropped from the middle or reordered, closes the connection instead of being acted on.
 *
 * Each direction has its own key, derived when both Hellos' nonces are known:
 *     k(sender -> receiver) = HMAC-SHA256(cluster key, "gsched-seal-1" | sender's nonce |
 *                                         receiver's nonce)
 * so a frame cannot be reflected back to its sender, nor taken from another connection. A
 * sealed frame is
 *     length | payload | tag,   length = payload + GS_PROTO_SEAL_TAG_SIZE bytes,
 *     tag = the first 16 bytes of HMAC-SHA256(k, seq | payload), seq the frame's number in
 *     its direction from 0, as 8 bytes big-endian,
 * from the first frame after the sender's AuthProof on. The frames themselves are not
 * encrypted. Both ends need protocol 1.12 (GS_PROTO_MINOR_SEAL): a keyed end refuses an
 * older peer. The counters and keys are the connection's; one thread at a time.
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
    void *send_mac, *recv_mac; /* OpenSSL HMAC contexts keyed for each direction */
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
 * it, ending at out->len): appends its tag and adds it to the length. 0, -EMSGSIZE when the
 * length would overflow, -ENOMEM or -EIO; on failure out is as it was.
 */
int gs_proto_seal_frame(struct gs_proto_seal *s, struct gs_buf *out, size_t start);

/*
 * Opens a received payload of len bytes (its tag last): 0 with *ret_len the length of the
 * payload without the tag, or GS_PROTO_ERR_AUTH when the tag is missing or wrong.
 */
int gs_proto_seal_open(struct gs_proto_seal *s, const uint8_t *payload, size_t len,
                       size_t *ret_len);

#endif
