/*
 * peer_fetch.h: the client half of worker-to-worker shard transfer (worker/peer.h is the
 * server): byte ranges of a shard file read from another worker's data port, blocking, for
 * a pool thread staging a shard into the node's cache.
 *
 * A wrk_peer_fetch is one TCP connection to one peer, handshaken as a worker (authenticated
 * with the cluster key when one is given, proto/handshake_fd.h). Reads on it may name any
 * dataset, file and offset; the connection keeps the range it last asked for, so reads
 * that follow each other in a file take the data already on its way, and a new ShardRead
 * goes out only for a window (WRK_PEER_FETCH_WINDOW, or a larger len) at a time. A read
 * elsewhere first drains what is left of the window in flight (at most one window), since
 * the server answers one ShardRead at a time. The checksum and resuming are the caller's:
 * it verifies the finished file and resumes a partial one by reading from its size.
 *
 * Errors are negative errno values, each with one line in err naming the peer:
 *     -ENOENT, -EINVAL, -ERANGE (and any other code)  the peer's ErrorReply; the connection
 *                                                     stays usable
 *     -ETIMEDOUT                                      no frame within timeout_ms
 *     -ECONNRESET, -EPIPE                             the peer closed or reset the connection
 *     -EPROTO                                         a frame out of order or of another kind
 *     -ECONNREFUSED                                   the peer refused our Hello
 *     -EKEYREJECTED                                   the cluster key does not match
 * After any error but the peer's ErrorReply, the connection is out of step: later reads
 * return -ENOTCONN and the caller opens a new one.
 *
 * No libuv and no global state: one thread uses a wrk_peer_fetch at a time. The process
 * need not ignore SIGPIPE (writes use MSG_NOSIGNAL).
 */
#ifndef WRK_PEER_FETCH_H
#define WRK_PEER_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "proto/auth.h"

#define WRK_PEER_FETCH_WINDOW (16u * 1024u * 1024u) /* bytes asked for at least per ShardRead */
#define WRK_PEER_FETCH_TIMEOUT_DEFAULT_MS 30000

struct wrk_peer_fetch;

/*
 * Connects to host:port (a numeric address or a name, resolved with getaddrinfo, whose wait
 * timeout_ms does not bound) and runs the hello handshake as a worker named our_name,
 * authenticated with key when key is not NULL and has a length. timeout_ms bounds the
 * connect, each step of the handshake and later each frame awaited; 0 means
 * WRK_PEER_FETCH_TIMEOUT_DEFAULT_MS, < 0 no bound.
 *
 * Returns 0 with the connection in *ret (freed with wrk_peer_fetch_close()), or a negative
 * errno with err set: -EINVAL for a host that does not resolve, -ETIMEDOUT, -ECONNREFUSED
 * (nobody listens, or the peer refused our Hello), -EKEYREJECTED (another cluster key, or
 * only one side has one), -EPROTONOSUPPORT for a peer older than protocol 1.9, -EPROTO for a
 * peer that is not a gsched worker, -ENOMEM, or another -errno of connect.
 */
int wrk_peer_fetch_open(const char *host, uint16_t port, const struct gs_proto_auth_key *key,
                        const char *our_name, int timeout_ms, struct wrk_peer_fetch **ret,
                        struct gs_error *err);

/*
 * Reads up to len bytes of the peer's ROOT/dataset/file from offset into buf and stores the
 * count in *ret_got: len bytes, fewer only at the end of the file, and 0 at its end. Errors
 * as above; *ret_got is written only on success.
 */
int wrk_peer_fetch_read(struct wrk_peer_fetch *f, const char *dataset, const char *file,
                        uint64_t offset, void *buf, size_t len, size_t *ret_got,
                        struct gs_error *err);

/* The size of the file last read, as the peer reported it; UINT64_MAX before any data. */
uint64_t wrk_peer_fetch_file_size(const struct wrk_peer_fetch *f);

/* The peer, "host:port (name)", for messages. */
const char *wrk_peer_fetch_peer(const struct wrk_peer_fetch *f);

/* Closes the connection and frees f; NULL allowed. */
void wrk_peer_fetch_close(struct wrk_peer_fetch *f);

/*
 * An adapter to the shard cache's reader callback (sharding/cache.h, shard_cache_read_fn),
 *     int (*read)(uint64_t offset, void *buf, size_t len, size_t *ret_got,
 *                 struct gs_error *err, void *data)
 * with data a struct wrk_peer_fetch_reader naming the file; every member is borrowed.
 */
struct wrk_peer_fetch_reader {
    struct wrk_peer_fetch *fetch;
    const char *dataset;
    const char *file;
};

/* wrk_peer_fetch_read() of the file data (a struct wrk_peer_fetch_reader *) names. */
int wrk_peer_fetch_reader(uint64_t offset, void *buf, size_t len, size_t *ret_got,
                          struct gs_error *err, void *data);

#endif
