/*
 * server.h: the CLI on a login node: gschedd reached over TCP at $GSCHED_SERVER (HOST:PORT,
 * gschedd's scheduler.cli_port) instead of its Unix socket, the user proved to gschedd with
 * a MUNGE credential from this host's munged ($GSCHED_MUNGE_SOCKET, else libmunge's default
 * socket) bound to the connection (proto/cred.h). client.c chooses it: a target that starts
 * with CLI_SERVER_PREFIX is a server address, and an exchange on a TCP socket starts with
 * cli_server_hello instead of the plain handshake. Blocking calls, the CLI's thread.
 */
#ifndef GS_CLI_SERVER_H
#define GS_CLI_SERVER_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

/* How cli_socket_path marks $GSCHED_SERVER's address among socket paths. */
#define CLI_SERVER_PREFIX "tcp:"
/* cli_server_hello's code when it printed why itself: no credential could be made
 * ("munge: ..."), or the address is not a cli_port. */
#define CLI_ERR_LOGIN (-EKEYREJECTED)

/*
 * Splits "HOST:PORT" or "[IPV6]:PORT" into host and port (digits, 1-65535). 0, or -EINVAL
 * for anything else (no port, an IPv6 address without brackets), -ENAMETOOLONG when a part
 * does not fit.
 */
int cli_server_split(const char *addr, char *host, size_t host_size, char *port, size_t port_size);

/* cli_server_connect's code for a host name that does not resolve. */
#define CLI_ERR_NO_HOST (-ENXIO)

/* A TCP connection to addr ("HOST:PORT"), within timeout_ms: the socket, or -errno
 * (-EINVAL for a bad address, CLI_ERR_NO_HOST, -ECONNREFUSED, -ETIMEDOUT...). */
int cli_server_connect(const char *addr, int timeout_ms);

/* Whether fd is a TCP socket (then the exchange on it starts with cli_server_hello). */
bool cli_server_fd(int fd);

/*
 * The login handshake on fd: gschedd's Hello read first (its nonce; its protocol minor into
 * *ret_minor), a credential for it from munged, our Hello with it. 0, a GS_PROTO_ERR_* /
 * -errno of the exchange, or CLI_ERR_LOGIN after printing why to stderr ("gsched: munge: ...").
 */
int cli_server_hello(int fd, int timeout_ms, uint32_t *ret_minor);

#endif
