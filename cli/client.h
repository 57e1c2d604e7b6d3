/*
 * client.h: the CLI's connection to gschedd: a blocking Unix socket, one request and one
 * reply per connection. The socket path is --socket, else $GSCHED_SOCKET, else
 * $GSCHED_SERVER (HOST:PORT: TCP to gschedd's scheduler.cli_port from a login node, with a
 * MUNGE credential, server.h), else ./.gsched/gschedd.sock when the current directory holds
 * a local cluster (`gsched up`), else the configuration's scheduler.socket
 * (GS_CONFIG_DEFAULT_PATH when present). $GSCHED_SOCKET wins over $GSCHED_SERVER so that
 * inside a job (whose environment may carry the login shell's) the node's worker is asked.
 */
#ifndef GS_CLI_CLIENT_H
#define GS_CLI_CLIENT_H

#include "proto/frame.h"

#define CLI_TIMEOUT_MS 30000
/* Where `gsched up` keeps a local cluster by default, relative to the current directory. */
#define CLI_LOCAL_STATE_DIR ".gsched"
#define CLI_LOCAL_SOCKET "gschedd.sock"

/* The socket path to use, into out ("tcp:HOST:PORT" for $GSCHED_SERVER). Returns 0 or
 * prints why not and returns < 0. */
int cli_socket_path(const char *option, char *out, size_t size);
/* What to call a target in messages: the path, or HOST:PORT. */
const char *cli_target(const char *socket_path);

/*
 * Sends req (its request_id is set here) and reads the reply into *ret_reply (free with
 * gs_proto_envelope_free). An ErrorReply is returned as its code, with its message printed.
 * Other failures print "gsched: cannot reach gschedd at PATH: why". Returns 0 or < 0.
 */
int cli_request(const char *socket_path, Gs__Envelope *req, Gs__Envelope **ret_reply);

/*
 * cli_request without printing anything, each step limited to timeout_ms, for callers that
 * poll a daemon still starting (`gsched up`): a missing socket is -ENOENT, a refused
 * connection -ECONNREFUSED, an ErrorReply its code.
 */
int cli_request_quiet(const char *socket_path, Gs__Envelope *req, int timeout_ms,
                      Gs__Envelope **ret_reply);

/*
 * cli_request that returns an ErrorReply as the reply (rc 0), for callers that word the
 * error themselves; a connection failure is still printed.
 */
int cli_request_raw(const char *socket_path, Gs__Envelope *req, Gs__Envelope **ret_reply);

/*
 * cli_request_raw for a request that is safe to send again (a submit with its client key):
 * when the exchange fails after the request may have reached gschedd (the connection reset,
 * no reply), or gschedd answers -EAGAIN, it is sent again, after 0.1 s, 0.2 s, ... up to 1 s
 * apart, for at most retry_ms. A gschedd that cannot be reached at the first try fails at
 * once (nothing was sent). Failures are printed as cli_request_raw prints them.
 */
int cli_request_retried(const char *socket_path, Gs__Envelope *req, uint64_t retry_ms,
                        Gs__Envelope **ret_reply);

/*
 * The two halves of a request, for a caller that keeps the connection afterwards (srun
 * reads its step's output on it). Neither prints. cli_connect returns the connected
 * socket or -errno (-ENAMETOOLONG for a path sun_path cannot hold). cli_exchange
 * introduces the CLI to the scheduler, sends req (its request_id is set here) and reads
 * one reply into *ret_reply, each step limited to timeout_ms; it returns 0 or a
 * GS_PROTO_ERR_* / -errno (gs_proto_reason words it). A field an older peer goes without
 * (StepLaunchRequest.launch_key) is cleared in req for it.
 */
int cli_connect(const char *socket_path); /* "tcp:HOST:PORT": as cli_server_connect */
int cli_exchange(int fd, Gs__Envelope *req, int timeout_ms, Gs__Envelope **ret_reply);

#endif
