/*
 * relay.h: gsched-workerd's CLI socket. A gsched CLI run inside a job (srun, scontrol,
 * squeue, sbatch...) finds it through $GSCHED_SOCKET, which the worker sets for its tasks
 * (worker/env.h): on a real cluster gschedd's own socket is on another host. The relay
 * answers the CLI's Hello as gschedd would (role scheduler), reads the caller's uid and gid
 * from the kernel (SO_PEERCRED, never from a message), and carries every frame of the
 * session to gschedd and back inside CliRelay envelopes (proto/gsched.proto) on the
 * worker's own connection, so the CLI needs no change and gschedd serves the session as if
 * the CLI were local. gschedd trusts the uid the worker vouches for, as slurmctld trusts
 * slurmd's; the socket is world-connectable (0666) like gschedd's, since every request is
 * judged by that uid.
 *
 * A session ends when either side closes it (CliRelay.close tells the other), when its
 * frames are malformed (one log line, then that session alone is closed), or when the
 * worker's connection to gschedd drops (every session ends: the CLI sees its socket close
 * and reports an error). While the worker is not registered, a request is answered with an
 * ErrorReply (-ENOTCONN) and closed; likewise with the error of the send function when it
 * refuses (-EPROTONOSUPPORT: a gschedd older than CliRelay).
 *
 * Loop thread only. wrk_relay_close() ends every session and the listener, then calls back.
 */
#ifndef WRK_RELAY_H
#define WRK_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "common/error.h"
#include "proto/frame.h"

/* Sends env to gschedd: 0, or < 0 when not registered or the connection refuses it. */
struct gs_proto_conn;
typedef int (*wrk_relay_send_fn)(const Gs__Envelope *env, void *data);
/*
 * A CLI frame the worker answers itself (a job's DataFetchRequest): returns true when it
 * took the frame (and answered on conn), false to relay it to gschedd. uid is the peer's,
 * from SO_PEERCRED.
 */
typedef bool (*wrk_relay_local_fn)(struct gs_proto_conn *conn, const Gs__Envelope *env,
                                   uint32_t uid, void *data);

struct wrk_relay_opts {
    const char *path;      /* where to listen (copied); a stale socket there is replaced */
    const char *node_name; /* for logs and messages (copied) */
    wrk_relay_send_fn send;
    wrk_relay_local_fn local; /* NULL: every frame is relayed */
    void *data;
};

struct wrk_relay;

/*
 * Listens on opts->path (mode 0666). NULL with err set when the path is too long, another
 * process listens there already, or binding fails.
 */
struct wrk_relay *wrk_relay_new(uv_loop_t *loop, const struct wrk_relay_opts *opts,
                                struct gs_error *err);
/* Whether frames can go to gschedd now (the worker registered), or not (it lost it). */
void wrk_relay_set_connected(struct wrk_relay *r, bool connected);
/* A CliRelay from gschedd (borrowed). */
void wrk_relay_from_scheduler(struct wrk_relay *r, const Gs__CliRelay *msg);
/* Sessions open now. */
size_t wrk_relay_sessions(const struct wrk_relay *r);
const char *wrk_relay_path(const struct wrk_relay *r);
/*
 * Closes every session and the listener, removes the socket file, and calls closed(data)
 * once the last handle is closed; r is freed right after. NULL r: nothing happens.
 */
void wrk_relay_close(struct wrk_relay *r, void (*closed)(void *data), void *data);

#endif
