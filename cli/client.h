/*
 * client.h: the CLI's connection to gschedd: a blocking Unix socket, one request and one
 * reply per connection. The socket path is --socket, else $GSCHED_SOCKET, else the
 * configuration's scheduler.socket (GS_CONFIG_DEFAULT_PATH when present).
 */
#ifndef GS_CLI_CLIENT_H
#define GS_CLI_CLIENT_H

#include "proto/frame.h"

#define CLI_TIMEOUT_MS 30000

/* The socket path to use, into out. Returns 0 or prints why not and returns < 0. */
int cli_socket_path(const char *option, char *out, size_t size);

/*
 * Sends req (its request_id is set here) and reads the reply into *ret_reply (free with
 * gs_proto_envelope_free). An ErrorReply is returned as its code, with its message printed.
 * Other failures print "gsched: cannot reach gschedd at PATH: why". Returns 0 or < 0.
 */
int cli_request(const char *socket_path, Gs__Envelope *req, Gs__Envelope **ret_reply);

#endif
