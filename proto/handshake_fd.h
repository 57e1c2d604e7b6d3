/*
 * handshake_fd.h: the hello handshake of a keyed link (proto/auth.h) on a blocking socket,
 * for clients without an event loop that talk to a gs_proto_conn with a cluster key: a
 * worker's pool thread fetching a shard from another worker's data port (worker/peer_fetch.h).
 *
 * It sends exactly what conn.c sends and checks exactly what conn.c checks, in the same
 * order, so either side may be a gs_proto_conn:
 *   1. our Hello, with a fresh nonce when keyed;
 *   2. the peer's first frame: a Hello that gs_proto_hello_check() accepts, carrying a nonce
 *      of GS_PROTO_AUTH_NONCE_SIZE bytes other than ours when keyed (none expected when not);
 *   3. keyed: our AuthProof over (our role, our name, our nonce, the peer's nonce);
 *   4. keyed: the peer's next frame, its AuthProof, checked against (its role, its name, its
 *      nonce, our nonce).
 * A HelloReject at step 2 or 4 ends the handshake with GS_PROTO_ERR_REJECTED.
 *
 * No global state; any thread, one caller per descriptor.
 */
#ifndef GS_PROTO_HANDSHAKE_FD_H
#define GS_PROTO_HANDSHAKE_FD_H

#include <stdint.h>

#include "proto/auth.h"
#include "proto/frame.h"
#include "proto/seal.h"

/*
 * The handshake above on a connected socket (blocking or not). key NULL or of len 0: an
 * unkeyed handshake, as gs_proto_handshake_fd(), except that a peer whose Hello carries a
 * nonce (a keyed endpoint, which would refuse us) fails it with GS_PROTO_ERR_AUTH at once.
 * timeout_ms bounds each read and write (< 0: no bound).
 *
 * Returns 0, storing the peer's Hello envelope in *ret_peer when ret_peer is not NULL (the
 * caller frees it with gs_proto_envelope_free()) and, keyed, the link's seal in *ret_seal
 * (required then, zeroed or cleared before: every frame after the handshake goes through
 * gs_proto_write_fd_sealed / gs_proto_read_fd_sealed with it; the caller releases it with
 * gs_proto_seal_clear()); GS_PROTO_ERR_REJECTED when
 * the peer sent a HelloReject; GS_PROTO_ERR_HANDSHAKE when its first frame was not a Hello, or the
 * one after it neither an AuthProof nor a HelloReject; the errors of gs_proto_hello_check();
 * GS_PROTO_ERR_AUTH for a missing or echoed nonce, a nonce where none is expected, or a
 * wrong proof (another cluster key); GS_PROTO_ERR_VERSION, keyed, for a peer before 1.12; -EIO when
 * no nonce or proof could be made; or an error of gs_proto_write_fd() / gs_proto_read_fd(). After
 * an error the socket should be closed.
 */
int gs_proto_handshake_fd_keyed(int fd, Gs__Role role, const char *name, uint32_t accept_roles,
                                const struct gs_proto_auth_key *key, int timeout_ms,
                                Gs__Envelope **ret_peer, struct gs_proto_seal *ret_seal);

#endif
