/*
 * peer.h: a worker's data port, the server half of worker-to-worker shard transfer
 * (issue 19). A worker that misses a shard of a job's dataset stages it from a worker that
 * holds it (worker/peer_fetch.h is the client, run in a pool thread) instead of from the
 * dataset's source directory.
 *
 * What is served: the node-local shard cache at ROOT (worker.data_dir),
 *     ROOT/<dataset id>/manifest.toml
 *     ROOT/<dataset id>/<shard file>
 * with dataset ids of 32 lowercase hex digits and plain file names. Partial copies
 * ("*.part"), hidden names and anything outside ROOT/<id>/ are never served; neither is a
 * symbolic link (the dataset directory and the file are opened with O_NOFOLLOW) nor anything
 * but a regular file.
 *
 * The wire (proto/gsched.proto, protocol 1.9): each connection is a gs_proto_conn on TCP,
 * role worker, taking worker peers only, keyed with the cluster key when there is one (the
 * handshake then authenticates both sides, proto/auth.h). After it the peer sends one
 * ShardRead {dataset, file, offset, length (0: to the end)} at a time; the answer is
 * ShardData frames of at most WRK_PEER_CHUNK bytes, in order, each with the file's size,
 * the last one with eof set (empty when the range is), all with the request's request_id;
 * or one ErrorReply with the same id:
 *     -EINVAL  a dataset id or file name that is not one (a path, ".x", "a.part", "x/y")
 *     -ENOENT  not held here: may_serve said no, no such file, not a regular file
 *     -ERANGE  offset beyond the end of the file
 *     -EIO     the file could not be read
 * and the connection takes the next ShardRead. A ShardRead while one is being answered, or
 * any other message, closes the connection, as a malformed frame does (gs_proto_conn).
 *
 * Memory and fairness: a file is read in WRK_PEER_CHUNK pieces in libuv's thread pool, never
 * on the loop, and the next piece is read only once the connection's write queue has drained
 * below one piece, so a connection holds at most about two pieces however slowly its peer
 * reads. Past max_connections a new connection is closed as soon as it is accepted.
 *
 * Loop thread only. One log line per transfer served or refused, and per connection refused.
 */
#ifndef WRK_PEER_H
#define WRK_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/error.h"
#include "proto/auth.h"

#define WRK_PEER_CHUNK (1024u * 1024u) /* data bytes in one ShardData at most */
/* The largest frame either side sends or takes: a full ShardData with its other fields. */
#define WRK_PEER_MAX_FRAME (WRK_PEER_CHUNK + 4096u)
#define WRK_PEER_MAX_CONNECTIONS_DEFAULT 16u

/* Whether this worker holds dataset's file, complete, to serve (the cache's view). Called on
 * the loop thread with validated names (dataset: 32 lowercase hex digits; file: a plain
 * name); data is wrk_peer_opts.data. */
typedef bool (*wrk_peer_may_serve_fn)(const char *dataset, const char *file, void *data);

struct wrk_peer_opts {
    const char *bind_address; /* "0.0.0.0", "127.0.0.1", "::"; NULL: "0.0.0.0" */
    uint16_t port;            /* 0: an ephemeral port (wrk_peer_server_port() says which) */
    const char *root;         /* the cache directory (copied) */
    const char *node_name;    /* our Hello's name and log lines (copied) */
    /* The cluster key (copied); NULL or len 0: connections are not authenticated. */
    const struct gs_proto_auth_key *auth_key;
    /* NULL: any regular file with a valid name is served. */
    wrk_peer_may_serve_fn may_serve;
    unsigned max_connections; /* 0: WRK_PEER_MAX_CONNECTIONS_DEFAULT */
    void *data;               /* for may_serve */
};

struct wrk_peer_server;

/*
 * Listens on opts->bind_address:opts->port. Returns the server, or NULL with err set when
 * the address does not parse, the port is taken or listening fails, or memory runs out
 * (what was made is then freed by the loop as its handles close). Freed by
 * wrk_peer_server_close() alone.
 */
struct wrk_peer_server *wrk_peer_server_new(uv_loop_t *loop, const struct wrk_peer_opts *opts,
                                            struct gs_error *err);

/* The port listened on (the one the kernel chose for port 0). */
uint16_t wrk_peer_server_port(const struct wrk_peer_server *server);

/* Connections open now (handshaking, idle or transferring). */
size_t wrk_peer_server_connections(const struct wrk_peer_server *server);

/*
 * Stops listening and closes every connection (a transfer in progress ends where it is; a
 * read in the pool is waited for). closed(data) runs once every handle is closed and every
 * request has finished; server is freed right after. closed may be NULL; so may server.
 * Call once.
 */
void wrk_peer_server_close(struct wrk_peer_server *server, void (*closed)(void *data), void *data);

#endif
