/*
 * cred.h: the MUNGE credential a gsched CLI on a login node presents to gschedd's TCP port
 * (scheduler.cli_port), the way Slurm's commands authenticate to slurmctld.
 *
 * The exchange: gschedd's Hello on that port carries a fresh 32-byte nonce (auth_nonce, as
 * on keyed links); the CLI reads it first, asks its host's munged for a credential whose
 * payload is GS_PROTO_CRED_LABEL followed by that nonce, and sends it in its own Hello
 * (Hello.credential); gschedd has its own munged decode it, and the uid and gid munged
 * vouches for become the connection's caller, as SO_PEERCRED's are on the Unix socket. A
 * credential is good once (munged's replay cache), for its time to live (munged's default
 * 300 s), and only on the connection whose nonce it names: one read off the wire and raced
 * to gschedd on another connection names the wrong nonce.
 *
 * libmunge stays behind this header, in libgs_cred (linked by gsched and gschedd only). A
 * build without libmunge (GSCHED_HAVE_MUNGE 0) has the same functions: encoding and
 * decoding then fail with -EPROTONOSUPPORT. The payload functions are pure. Encoding and
 * decoding block on munged's socket: any thread (gschedd runs decode on libuv's pool).
 */
#ifndef GS_PROTO_CRED_H
#define GS_PROTO_CRED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/auth.h"

#define GS_PROTO_CRED_LABEL "gsched-cli-1"
#define GS_PROTO_CRED_LABEL_LEN (sizeof(GS_PROTO_CRED_LABEL) - 1)
#define GS_PROTO_CRED_PAYLOAD_SIZE (GS_PROTO_CRED_LABEL_LEN + GS_PROTO_AUTH_NONCE_SIZE)
/* The longest credential gschedd reads: a payload this small encodes to a few hundred bytes. */
#define GS_PROTO_CRED_MAX 4096

/* Why a credential was refused, for logs and the CLI's message. */
enum gs_proto_cred_fault {
    GS_PROTO_CRED_OK = 0,
    GS_PROTO_CRED_MISSING,      /* the Hello carried none */
    GS_PROTO_CRED_INVALID,      /* not a credential of this munged's key (or corrupt) */
    GS_PROTO_CRED_EXPIRED,      /* older than its time to live */
    GS_PROTO_CRED_REWOUND,      /* made in the future: the clocks disagree */
    GS_PROTO_CRED_REPLAYED,     /* decoded before */
    GS_PROTO_CRED_UNBOUND,      /* decodes, but not for this connection's nonce */
    GS_PROTO_CRED_UNAUTHORIZED, /* restricted to another uid or gid */
    GS_PROTO_CRED_UNREACHABLE,  /* munged could not be asked */
    GS_PROTO_CRED_ERROR,        /* anything else (memory, a libmunge fault, no libmunge) */
};

/* Whether this build has libmunge. */
bool gs_proto_cred_available(void);

/* The payload for nonce into out (GS_PROTO_CRED_PAYLOAD_SIZE bytes). */
void gs_proto_cred_payload(const uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE],
                           uint8_t out[GS_PROTO_CRED_PAYLOAD_SIZE]);
/* Whether a decoded payload is the one for nonce (its length included). */
bool gs_proto_cred_payload_ok(const void *payload, size_t len,
                              const uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE]);

/* The fault for one of munge.h's munge_err_t codes (EMUNGE_CRED_REPLAYED ...). */
enum gs_proto_cred_fault gs_proto_cred_fault_of(int munge_err);
/* The fault as a log word ("replayed", "munged_unreachable", ...). */
const char *gs_proto_cred_fault_name(enum gs_proto_cred_fault f);

/*
 * A credential for nonce from the munged at socket_path (NULL: libmunge's default socket),
 * NUL-terminated text for the caller to free. 0, or a negative errno with libmunge's
 * one-line reason in why: -EHOSTUNREACH when munged could not be asked, -EPROTONOSUPPORT
 * without libmunge, else -EIO (-ENOMEM).
 */
int gs_proto_cred_encode(const char *socket_path, const uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE],
                         char **ret_cred, char *why, size_t why_size);

/* Who a credential speaks for. */
struct gs_proto_cred_id {
    uint32_t uid;
    uint32_t gid;
};

/*
 * Decodes cred (len bytes, not NUL-terminated) with the munged at socket_path (NULL: the
 * default) and checks it is for nonce. 0 with *ret_id set, else a negative errno, the
 * fault in *ret_fault and libmunge's reason (or ours) in why: -EACCES for a credential
 * refused (invalid, expired, rewound, replayed, unbound, unauthorized), -EHOSTUNREACH when
 * munged could not be asked, -EPROTONOSUPPORT without libmunge, -EIO (-ENOMEM) otherwise.
 */
int gs_proto_cred_decode(const char *socket_path, const void *cred, size_t len,
                         const uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE],
                         struct gs_proto_cred_id *ret_id, enum gs_proto_cred_fault *ret_fault,
                         char *why, size_t why_size);

#endif
