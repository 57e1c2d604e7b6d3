/*
 * gschedd.h: what a task of a gsched job needs to talk to the scheduler from inside the
 * job, shared by progress reports (report.h) and the job's key/value store (kv.h).
 *
 * A task finds its job in its environment: GSCHED_JOB_ID names the job, GSCHED_SOCKET the
 * CLI socket its node's worker relays to gschedd (worker/relay.h). Each exchange is its own
 * connection, as every gsched CLI request is: hello, one request, one reply, all within one
 * deadline. No global state; any thread, but a call blocks its caller up to its timeout.
 */
#ifndef TRN_GSCHEDD_H
#define TRN_GSCHEDD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/frame.h"

/* Room for a socket path (sun_path's size). */
#define TRN_GSCHEDD_PATH_MAX 108

/*
 * The gsched job this process is a task of: its id into *ret_job_id and GSCHED_SOCKET into
 * socket_path (size bytes, at most TRN_GSCHEDD_PATH_MAX are needed). Returns 0, or -ENOENT
 * when either variable is unset or unusable (not a job id, a path no Unix socket can have):
 * the process is not in a job. Nothing is written on failure.
 */
int trn_gschedd_job(uint64_t *ret_job_id, char *socket_path, size_t size);

/*
 * One request to the gschedd (or worker relay) at socket_path, the whole exchange within
 * timeout_ms: req (its request_id is set here) is sent once the peer's Hello says it speaks
 * at least protocol 1.min_minor (0: any), and the reply, which must be of kind want, goes
 * to *ret_reply (free with gs_proto_envelope_free). Returns 0; when gschedd refused, the
 * ErrorReply's code with its message in why and *ret_refused (may be NULL) set; else -errno
 * or a GS_PROTO_ERR_* (-EPROTONOSUPPORT for a peer too old) with what failed in why.
 */
int trn_gschedd_call(const char *socket_path, Gs__Envelope *req, Gs__Envelope__BodyCase want,
                     uint32_t min_minor, int timeout_ms, Gs__Envelope **ret_reply,
                     bool *ret_refused, char *why, size_t size);

#endif
