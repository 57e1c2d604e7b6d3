/*
 * frame.h: gsched's wire format: length-prefixed protobuf frames, each one Gs__Envelope
 * (proto/gsched.proto), and the pieces every endpoint needs to speak it.
 *
 *     frame  = length payload
 *     length = 4 bytes, big-endian, unsigned: the payload's size, 1..max_frame
 *     payload = a packed Gs__Envelope whose body is set
 *
 * Each side's first frame is a Hello (magic GS_PROTO_MAGIC, protocol version); the versions
 * are compatible when their majors are equal. Everything here is plain code over memory or a
 * blocking file descriptor, usable without an event loop; proto/conn.h runs the same format
 * over a libuv stream.
 *
 * This header is the edge of protobuf-c: callers build and read the generated Gs__* structs
 * (with their GS__*__INIT macros), but pack, unpack and free only through gs_proto_
 * functions. An envelope returned by a decoder is owned by the caller, who frees it with
 * gs_proto_envelope_free(). Envelopes passed in are borrowed.
 *
 * Errors are negative errno values. The protocol's own failures have names, so that callers
 * and tests need not remember which errno stands for what; gs_proto_reason() turns any of
 * them into the word logs use (reason=oversized_frame).
 *
 * Threading: no global state; a decoder belongs to one thread at a time.
 */
#ifndef GS_PROTO_FRAME_H
#define GS_PROTO_FRAME_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "proto/gsched.pb-c.h"

#define GS_PROTO_MAGIC 0x47534348u /* "GSCH" */
#define GS_PROTO_VERSION_MAJOR 1u  /* bump on an incompatible change */
#define GS_PROTO_VERSION_MINOR 30u /* bump when adding fields or body cases */
/* The first minor whose peers know JobKvPut and JobKvGet (a client checks the peer's Hello). */
#define GS_PROTO_MINOR_JOB_KV 4u
/* The first minor whose workers know JobLimitUpdate (a running job's new time limit). */
#define GS_PROTO_MINOR_JOB_LIMIT 8u
/* The first minor that knows datasets: DataHoldings, DataCommand, JobDataReport, ShardRead. */
#define GS_PROTO_MINOR_DATA 9u
/* The first minor that knows allocations (AllocRequest, salloc) and StepInput (srun's stdin). */
#define GS_PROTO_MINOR_ALLOC 10u
/* The first minor that knows heterogeneous jobs (JobSpec.het, StepLaunchRequest.het_groups). */
#define GS_PROTO_MINOR_HET 11u
/* The first minor that encrypts a keyed link's frames (proto/seal.h); keyed ends require it.
 * (1.12 tagged them with HMAC-SHA256 in the clear; no end speaks that any more.) */
#define GS_PROTO_MINOR_CRYPT 13u
/* The first minor that reads a holding's shards as runs (DatasetHolding.held_runs). */
#define GS_PROTO_MINOR_HELD_RUNS 15u
/* The first minor whose workers serve srun --mpi=pmi2 steps (LaunchTasks.mpi "pmi2"). */
#define GS_PROTO_MINOR_PMI 27u
/* The first minor that knows srun's input modes (StepLaunchRequest.input_all, input_rank,
 * stdin_pattern; LaunchTasks.step_input_all, step_input_rank) and StepInputAck. */
#define GS_PROTO_MINOR_INPUT 28u
/* The first minor that knows StepLaunchRequest.no_gpus (srun --gres=none), ntasks_per_gpu and
 * cpus_per_gpu, keeps what a step was given (StepInfo.cpus, gpus, time_limit_s), and keeps
 * running steps over a gschedd restart (StepAttach, StepOutputResume). */
#define GS_PROTO_MINOR_STEP_GRES 29u
/* The first minor that knows StepLaunchRequest.launch_key (srun sends a request again after
 * losing its connection before the reply; clients leave the key out for older peers) and
 * StepInput.end and resent (srun sends its stdin in flight again after reattaching), and
 * PmixFence.done (workers send their fences under way again when they register). */
#define GS_PROTO_MINOR_STEP_KEY 30u
#define GS_PROTO_HEADER_SIZE 4u
#define GS_PROTO_MAX_FRAME_DEFAULT (16u * 1024u * 1024u)

/*
 * Unpacking a payload may allocate at most GS_PROTO_UNPACK_FACTOR times its size plus
 * GS_PROTO_UNPACK_SLACK bytes. Real messages stay far below (strings unpack to about their
 * size, small repeated messages to under 10x); a frame packed with empty submessages would
 * otherwise turn 16 MiB on the wire into more than a GiB of memory.
 */
#define GS_PROTO_UNPACK_FACTOR 16u
#define GS_PROTO_UNPACK_SLACK (1u << 20)

/* Protocol failures, as negative errno values. */
#define GS_PROTO_ERR_OVERSIZED (-EMSGSIZE)      /* length above max_frame */
#define GS_PROTO_ERR_EMPTY (-ENODATA)           /* length 0 */
#define GS_PROTO_ERR_MALFORMED (-EBADMSG)       /* payload is not a valid Envelope */
#define GS_PROTO_ERR_UNKNOWN (-ENOMSG)          /* Envelope without a body we know */
#define GS_PROTO_ERR_TRUNCATED (-ECONNABORTED)  /* the stream ended inside a frame */
#define GS_PROTO_ERR_PEER_CLOSED (-ESHUTDOWN)   /* the stream ended between frames */
#define GS_PROTO_ERR_HANDSHAKE (-EPROTO)        /* bad magic, no Hello first, Hello twice */
#define GS_PROTO_ERR_VERSION (-EPROTONOSUPPORT) /* protocol majors differ */
#define GS_PROTO_ERR_ROLE (-EACCES)             /* the peer's role is not accepted here */
#define GS_PROTO_ERR_REJECTED (-ECONNREFUSED)   /* the peer sent a HelloReject */
#define GS_PROTO_ERR_TIMEOUT (-ETIMEDOUT)       /* no Hello (or no progress) in time */
#define GS_PROTO_ERR_AUTH (-EKEYREJECTED)       /* no nonce, or a wrong or missing AuthProof */

/*
 * The log word for a code: "oversized_frame", "empty_frame", "malformed_frame",
 * "unknown_message", "truncated_frame", "peer_closed", "bad_hello", "version_mismatch",
 * "role_refused", "rejected_by_peer", "timeout", "auth_failed", "no_memory", "closed" for 0, and
 * "io_error" for anything else. Never NULL.
 */
const char *gs_proto_reason(int code);

/* True when body is a body case this build knows. */
bool gs_proto_body_known(Gs__Envelope__BodyCase body);
/* The body's field name ("hello", "submit_request"), "none" when unset, "unknown" else. */
const char *gs_proto_body_name(Gs__Envelope__BodyCase body);
/*
 * The protocol minor that first knew body: a peer whose Hello says less closes the
 * connection on it (an unknown body), so it must not be sent one (hello.c). 0 for the bodies
 * of 1.0 to 1.3, and for a body this build does not know.
 */
uint32_t gs_proto_body_minor(Gs__Envelope__BodyCase body);

/*
 * Appends one whole frame (header and packed env) to out. Returns 0; -EINVAL when env has
 * no known body or its body pointer is NULL; -EMSGSIZE when the payload does not fit the
 * 32-bit length; -ENOMEM. On failure out is unchanged. Usable by blocking clients as is.
 */
int gs_proto_encode(const Gs__Envelope *env, struct gs_buf *out);

/*
 * Fills a CliRelay's frame with inner, encoded without its length prefix, in *packed (the
 * caller's, released after the relay is sent: relay->frame borrows from it); inner NULL
 * leaves the frame empty and sets close. Returns 0 or an error of gs_proto_encode().
 */
int gs_proto_relay_pack(Gs__CliRelay *relay, const Gs__Envelope *inner, struct gs_buf *packed);

/*
 * Unpacks one payload (no header). On success stores the envelope in *ret_env, which the
 * caller frees with gs_proto_envelope_free(), and returns 0. Else returns
 * GS_PROTO_ERR_EMPTY, GS_PROTO_ERR_MALFORMED (including a payload that would unpack beyond
 * the GS_PROTO_UNPACK_FACTOR budget), GS_PROTO_ERR_UNKNOWN or -ENOMEM.
 */
int gs_proto_decode(const void *payload, size_t len, Gs__Envelope **ret_env);

/* A deep copy of ex (packed and unpacked again: owned, freed with
 * gs__task_exit__free_unpacked), NULL when out of memory. */
Gs__TaskExit *gs_proto_task_exit_copy(const Gs__TaskExit *ex);

/*
 * Whether msg, or a message inside it, holds a field this build's gsched.proto does not
 * know; the field numbers leading to the first such one from msg go to path ("7.29": field
 * 29 of the message in msg's field 7), or "" when there is none. A newer peer sets a new
 * request field only for an option that asks for what the field does, so a request holding
 * one cannot be served as sent (gsched.proto, "Conventions").
 */
bool gs_proto_unknown_field(const ProtobufCMessage *msg, char *path, size_t size);

/*
 * Names a path of field numbers from gs_proto_unknown_field, read from messages of type
 * desc, in out: "step_launch_request.threads_per_core", or with numbers
 * "step_launch_request (7).threads_per_core (29)". A number not known here stays a number,
 * and the rest of the path after it too.
 */
void gs_proto_field_names(const ProtobufCMessageDescriptor *desc, const char *path, bool numbers,
                          char *out, size_t size);

/* Frees an envelope from gs_proto_decode() or a decoder; NULL allowed. */
void gs_proto_envelope_free(Gs__Envelope *env);

/*
 * Incremental decoder: fed a byte stream in chunks of any size, it yields whole envelopes.
 * Caller-owned storage: gs_proto_decoder_init() before use, gs_proto_decoder_release() after.
 * It holds at most one partial frame: the 4 header bytes and at most max_frame payload
 * bytes, the latter grown as bytes arrive rather than when a length is announced. The
 * fields are private except where said.
 */
struct gs_proto_seal;

struct gs_proto_decoder {
    /* Settable: frames are opened with it (proto/seal.h) while its receiving is on, a bad
     * tag failing the stream with GS_PROTO_ERR_AUTH. NULL (the default): none. */
    struct gs_proto_seal *seal;
    uint32_t max_frame;
    uint32_t frame_len; /* readable: the announced length, also after OVERSIZED */
    uint8_t header[GS_PROTO_HEADER_SIZE];
    uint8_t header_len;
    uint8_t *payload;
    size_t payload_len;
    size_t payload_cap;
    int error; /* readable: the first error, sticky; 0 while healthy */
};

/* max_frame 0 means GS_PROTO_MAX_FRAME_DEFAULT. */
void gs_proto_decoder_init(struct gs_proto_decoder *dec, uint32_t max_frame);
/* Frees what the decoder holds; NULL allowed. The decoder may be initialised again. */
void gs_proto_decoder_release(struct gs_proto_decoder *dec);

/*
 * Consumes bytes from *data (advancing *data and decreasing *len) until one frame is
 * complete or the input is used up. Returns 1 with the frame's envelope in *ret_env (the
 * caller frees it), 0 when all input was consumed without completing a frame, or a negative
 * error: GS_PROTO_ERR_OVERSIZED, GS_PROTO_ERR_EMPTY, GS_PROTO_ERR_MALFORMED,
 * GS_PROTO_ERR_UNKNOWN, GS_PROTO_ERR_AUTH (a sealed stream's bad tag), -ENOMEM. Errors are sticky:
 * the stream cannot be resynchronised, so every later call returns the same error. Call in a loop
 * while it returns 1.
 */
int gs_proto_decoder_next(struct gs_proto_decoder *dec, const uint8_t **data, size_t *len,
                          Gs__Envelope **ret_env);

/*
 * For end of stream: returns 0 when the decoder is between frames, GS_PROTO_ERR_TRUNCATED
 * when it holds part of one, or its sticky error.
 */
int gs_proto_decoder_finish(const struct gs_proto_decoder *dec);

/* Bytes of the current partial frame held, header included. */
size_t gs_proto_decoder_buffered(const struct gs_proto_decoder *dec);

/* Bit of a role in an accept_roles mask; for the Gs__Role values (all below 32). */
#define GS_PROTO_ROLE_BIT(role) (1u << (unsigned)(role))

/*
 * Fills hello with this build's magic, protocol and software version, role and name.
 * name is borrowed: it must outlive the packing of hello.
 */
void gs_proto_hello_init(Gs__Hello *hello, Gs__Role role, const char *name);

/*
 * Checks a peer's Hello: returns 0, GS_PROTO_ERR_HANDSHAKE for a wrong magic,
 * GS_PROTO_ERR_VERSION for another protocol major, GS_PROTO_ERR_ROLE for a role that is not
 * scheduler, worker or cli, or not in accept_roles (a mask of GS_PROTO_ROLE_BIT(); 0 takes
 * every role).
 */
int gs_proto_hello_check(const Gs__Hello *hello, uint32_t accept_roles);

/* "scheduler", "worker", "cli" or "unknown". */
const char *gs_proto_role_name(Gs__Role role);

/*
 * Blocking helpers for a connected socket (the CLI's Unix socket); the descriptor may be
 * blocking or not. timeout_ms bounds the whole call, < 0 waits forever. Neither raises
 * SIGPIPE on a socket.
 *
 * gs_proto_write_fd() writes one frame. Returns 0, an error of gs_proto_encode(),
 * -ETIMEDOUT, or -errno of the write (-EPIPE when the peer has gone).
 */
int gs_proto_write_fd(int fd, const Gs__Envelope *env, int timeout_ms);

/*
 * Reads one frame of at most max_frame payload bytes (0: the default). On success stores
 * the envelope in *ret_env (the caller frees it) and returns 0. Else returns
 * GS_PROTO_ERR_PEER_CLOSED (end of stream before any byte), GS_PROTO_ERR_TRUNCATED,
 * GS_PROTO_ERR_OVERSIZED, an error of gs_proto_decode(), -ETIMEDOUT or -errno. After an
 * error the stream is out of step and should be closed.
 */
int gs_proto_read_fd(int fd, uint32_t max_frame, int timeout_ms, Gs__Envelope **ret_env);

/* The same on a keyed link after its handshake (proto/handshake_fd.h): the frame written is
 * sealed, the frame read is opened (GS_PROTO_ERR_AUTH for a bad tag), each once the seal's
 * direction is on; seal NULL: as the plain calls. */
int gs_proto_write_fd_sealed(int fd, const Gs__Envelope *env, int timeout_ms,
                             struct gs_proto_seal *seal);
int gs_proto_read_fd_sealed(int fd, uint32_t max_frame, int timeout_ms, struct gs_proto_seal *seal,
                            Gs__Envelope **ret_env);

/*
 * The hello handshake on a blocking socket: sends our Hello, reads the peer's first frame
 * and checks it as gs_proto_hello_check() does. timeout_ms bounds each of the two steps.
 * Returns 0, storing the peer's Hello envelope in *ret_peer when ret_peer is not NULL (the
 * caller frees it); GS_PROTO_ERR_REJECTED when the peer answered with a HelloReject;
 * GS_PROTO_ERR_HANDSHAKE when it sent something else; or an error of the calls above.
 */
int gs_proto_handshake_fd(int fd, Gs__Role role, const char *name, uint32_t accept_roles,
                          int timeout_ms, Gs__Envelope **ret_peer);

/*
 * The reading half of the handshake: the peer's first frame, accepted as
 * gs_proto_hello_check() accepts it. 0 with *ret_peer (the caller frees it), or the errors
 * of gs_proto_handshake_fd().
 */
int gs_proto_read_hello_fd(int fd, uint32_t accept_roles, int timeout_ms, Gs__Envelope **ret_peer);

#endif
