/*
 * conn.h: one protocol connection over a libuv stream (TCP or a Unix/socketpair pipe): the
 * hello handshake, then envelopes in both directions.
 *
 * Life of a connection:
 *   1. gs_proto_conn_new() creates it with its stream handle inside (initialised, not yet
 *      connected). The owner connects or accepts on gs_proto_conn_stream(), or opens an fd
 *      on it (uv_pipe_open), then calls gs_proto_conn_start().
 *   2. start sends our Hello and reads. The peer's first frame must be a Hello of the same
 *      protocol major from an accepted role; then on_ready runs, and every later envelope
 *      goes to on_message. Envelopes may be sent as soon as start has returned: they follow
 *      our Hello on the wire, and the peer reads them only after accepting it.
 *      With a cluster key (opts.auth_key), our Hello carries a nonce, the peer's must too,
 *      and both sides prove they hold the key (proto/auth.h) before on_ready; until our
 *      proof is out (on the peer's Hello), gs_proto_conn_send() refuses with -ENOTCONN.
 *   3. A malformed, oversized, empty, truncated or unknown frame, a bad Hello, a HelloReject,
 *      a handshake timeout or an I/O error closes this connection alone, with one log line
 *      (GS_LOG_WARN, "peer=... reason=... closing"); when the peer's Hello is refused, a
 *      HelloReject is sent first. gs_proto_conn_close() closes it on request.
 *   4. Closing stops reading, flushes what is queued for writing (bounded by
 *      close_timeout_ms), then closes the handles. on_close runs exactly once, from the last
 *      close callback, with the reason: 0 for gs_proto_conn_close(), else a negative code
 *      (frame.h's GS_PROTO_ERR_*, or a libuv/errno code of a failed read or write). The
 *      connection is freed right after on_close returns.
 *
 * Callbacks get the connection first and opts.data last; they may send, and may call
 * gs_proto_conn_close(), after which no further on_message is delivered. Envelopes passed
 * to on_ready/on_message are borrowed for the call's duration: copy what must outlive it.
 *
 * libuv writes with write(2): the process must ignore SIGPIPE (daemons do at start-up).
 * Threading: the loop's thread only.
 */
#ifndef GS_PROTO_CONN_H
#define GS_PROTO_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "proto/auth.h"
#include "proto/frame.h"

#define GS_PROTO_HANDSHAKE_TIMEOUT_DEFAULT_MS 10000u
#define GS_PROTO_CLOSE_TIMEOUT_DEFAULT_MS 5000u
#define GS_PROTO_WRITE_QUEUE_DEFAULT (64u * 1024u * 1024u)

enum gs_proto_transport {
    GS_PROTO_TCP = 0,  /* uv_tcp_t */
    GS_PROTO_PIPE = 1, /* uv_pipe_t: Unix socket, socketpair, pipe */
};

struct gs_proto_conn;

typedef void (*gs_proto_ready_cb)(struct gs_proto_conn *conn, const Gs__Hello *peer, void *data);
typedef void (*gs_proto_message_cb)(struct gs_proto_conn *conn, const Gs__Envelope *env,
                                    void *data);
typedef void (*gs_proto_close_cb)(struct gs_proto_conn *conn, int status, void *data);

struct gs_proto_conn_opts {
    Gs__Role role;         /* what we are, sent in our Hello */
    const char *name;      /* our name in the Hello; copied */
    const char *peer_name; /* for logs ("10.0.0.3:7000"); copied. NULL: the TCP peer address,
                              or "local" for a pipe */
    uint32_t accept_roles; /* GS_PROTO_ROLE_BIT() mask of peer roles taken; 0: any role */
    uint32_t max_frame;    /* largest payload received or sent; 0: GS_PROTO_MAX_FRAME_DEFAULT */
    uint32_t handshake_timeout_ms;  /* 0: GS_PROTO_HANDSHAKE_TIMEOUT_DEFAULT_MS */
    uint32_t close_timeout_ms;      /* flush limit when closing; 0: the default */
    size_t max_write_queue;         /* bytes queued before send fails; 0: the default */
    gs_proto_ready_cb on_ready;     /* may be NULL */
    gs_proto_message_cb on_message; /* NULL: messages are dropped */
    gs_proto_close_cb on_close;     /* may be NULL */
    /* The cluster key (borrowed for gs_proto_conn_new, which copies it); NULL or len 0: the
     * link is not authenticated (the CLI's Unix sockets, where SO_PEERCRED says who). */
    const struct gs_proto_auth_key *auth_key;
    /* Without a key: our Hello still carries a fresh nonce, a challenge the peer binds its
     * credential to (gschedd's login-node port, proto/cred.h); gs_proto_conn_nonce(). */
    bool hello_nonce;
    void *data;
};

/* Creates a connection on loop with its stream handle initialised. NULL on failure. */
struct gs_proto_conn *gs_proto_conn_new(uv_loop_t *loop, enum gs_proto_transport transport,
                                        const struct gs_proto_conn_opts *opts);

/* The stream handle inside conn, to uv_accept() into, uv_tcp_connect() or uv_pipe_open(). */
uv_stream_t *gs_proto_conn_stream(struct gs_proto_conn *conn);

/*
 * Starts the handshake on a connected stream: sends our Hello, starts reading and the
 * handshake timer. Returns 0 or a negative libuv/errno code; on failure nothing has been
 * closed, and the owner ends the connection with gs_proto_conn_close().
 */
int gs_proto_conn_start(struct gs_proto_conn *conn);

/*
 * Queues env (borrowed: it is packed before this returns). Returns 0; -ENOTCONN before
 * start, or on a keyed connection before the peer's Hello; -EPIPE once closing; -EINVAL for a
 * Hello, HelloReject or AuthProof (the connection sends those) or an envelope without a known body;
 * -EMSGSIZE above max_frame; -ENOBUFS when more than max_write_queue bytes already wait (a peer
 * that does not read); -ENOMEM; or a libuv write error. A failed send leaves the connection open.
 */
int gs_proto_conn_send(struct gs_proto_conn *conn, const Gs__Envelope *env);

/* Closes conn (see above); on_close gets status 0. Safe to call again and from callbacks. */
void gs_proto_conn_close(struct gs_proto_conn *conn);
/*
 * The same, but the handles close only once the peer has ended its side too (or the close
 * timeout passed), reading and dropping what it still sends meanwhile. A socket closed with
 * unread data in it is reset, and a TCP reset can discard what was written last but had
 * not reached the peer yet: a connection whose peer may still be sending as it ends (srun's
 * acknowledgements, its input) closes this way, so that its last frames arrive.
 */
void gs_proto_conn_close_linger(struct gs_proto_conn *conn);

/* True once the peer's Hello was accepted and until closing starts. */
bool gs_proto_conn_is_ready(const struct gs_proto_conn *conn);
/* The peer's Hello once accepted, else NULL; valid until on_close returns. */
const Gs__Hello *gs_proto_conn_peer_hello(const struct gs_proto_conn *conn);
/* The nonce our Hello carried (GS_PROTO_AUTH_NONCE_SIZE bytes), or NULL when it carried none;
 * valid until on_close returns. */
const uint8_t *gs_proto_conn_nonce(const struct gs_proto_conn *conn);
/* The peer's name for logs; valid until on_close returns. */
const char *gs_proto_conn_peer(const struct gs_proto_conn *conn);
/* Replaces the data pointer callbacks receive (e.g. once a worker says which node it is). */
void gs_proto_conn_set_data(struct gs_proto_conn *conn, void *data);

#endif
