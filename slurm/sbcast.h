/*
 * sbcast.h: what sbcast's two files share (cmd_sbcast.c: the command, its receivers and the
 * step that runs them; sbcast_serve.c: the sender's side, serving every node's receiver at
 * once).
 *
 * A receiver connects to the sender and writes the step's token and a newline; the sender
 * answers one header line, "SIZE MODE ATIME_S ATIME_NS MTIME_S MTIME_NS" (mode in octal),
 * then SIZE bytes of the file; the receiver answers "ok", or "error WHY", on a line.
 */
#ifndef GS_SLURM_SBCAST_H
#define GS_SLURM_SBCAST_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "proto/auth.h"

#define SBCAST_TOKEN_VAR "GSCHED_SBCAST_TOKEN"
#define SBCAST_TOKEN_HEX (2 * GS_PROTO_AUTH_NONCE_SIZE)
#define SBCAST_LINE_MAX 512

/*
 * Serves the receivers that connect to lfd (listening) with src (its stat in st) until the
 * process pid (the step of receivers) has ended, all at once: each in its own state, on
 * non-blocking sockets, so that a slow node or a stranger holding a connection open without
 * the token delays no other. A connection silent for timeout_s is dropped (a receiver that
 * proved the token then counts as failed). Returns 0 when the step exited 0 and every
 * receiver that proved the token answered ok, else 1 (each receiver says why on its own).
 */
int sbcast_serve(int lfd, pid_t pid, int src, const struct stat *st, const char *token,
                 unsigned timeout_s);

#endif
