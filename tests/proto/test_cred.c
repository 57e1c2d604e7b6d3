/*
 * test_cred.c: login-node credentials (proto/cred.h) without a munged: the payload binds a
 * credential to one nonce (label and length included), libmunge's codes map to the faults
 * gschedd logs, a credential that is empty or not text is refused before munged is asked,
 * and a munged that is not there is "unreachable" with libmunge's reason naming the socket.
 * Decoding real credentials (another key, replayed, another connection's) is
 * tests/netns/login.sh's, which runs munged.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gsched_config.h"
#include "proto/cred.h"

#if GSCHED_HAVE_MUNGE
#include <munge.h>
#endif

#define NO_SOCKET "/nonexistent/gsched-test/munge.socket"

static void nonce_fill(uint8_t *nonce, uint8_t seed)
{
    for (size_t i = 0; i < GS_PROTO_AUTH_NONCE_SIZE; i++)
        nonce[i] = (uint8_t)(seed + i * 7);
}

Test(cred, payload_is_the_label_then_the_nonce)
{
    uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE], payload[GS_PROTO_CRED_PAYLOAD_SIZE];

    nonce_fill(nonce, 3);
    gs_proto_cred_payload(nonce, payload);
    cr_assert(memcmp(payload, "gsched-cli-1", 12) == 0);
    cr_assert(memcmp(payload + 12, nonce, sizeof(nonce)) == 0);
    cr_assert(gs_proto_cred_payload_ok(payload, sizeof(payload), nonce));
}

Test(cred, payload_for_another_nonce_is_refused)
{
    uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE], other[GS_PROTO_AUTH_NONCE_SIZE];
    uint8_t payload[GS_PROTO_CRED_PAYLOAD_SIZE];

    nonce_fill(nonce, 3);
    nonce_fill(other, 3);
    other[GS_PROTO_AUTH_NONCE_SIZE - 1] ^= 1;
    gs_proto_cred_payload(other, payload);
    cr_assert_not(gs_proto_cred_payload_ok(payload, sizeof(payload), nonce));
}

Test(cred, payload_of_another_length_or_label_is_refused)
{
    uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE], payload[GS_PROTO_CRED_PAYLOAD_SIZE + 1];

    nonce_fill(nonce, 9);
    gs_proto_cred_payload(nonce, payload);
    payload[GS_PROTO_CRED_PAYLOAD_SIZE] = 0;
    cr_assert_not(gs_proto_cred_payload_ok(payload, sizeof(payload), nonce));
    cr_assert_not(gs_proto_cred_payload_ok(payload, sizeof(payload) - 2, nonce));
    cr_assert_not(gs_proto_cred_payload_ok(NULL, 0, nonce));
    payload[0] = 'G'; /* another service's payload with the same nonce */
    cr_assert_not(gs_proto_cred_payload_ok(payload, GS_PROTO_CRED_PAYLOAD_SIZE, nonce));
}

Test(cred, faults_have_log_words)
{
    cr_assert_str_eq(gs_proto_cred_fault_name(GS_PROTO_CRED_REPLAYED), "replayed");
    cr_assert_str_eq(gs_proto_cred_fault_name(GS_PROTO_CRED_MISSING), "no_credential");
    cr_assert_str_eq(gs_proto_cred_fault_name(GS_PROTO_CRED_UNBOUND), "not_for_this_connection");
    cr_assert_str_eq(gs_proto_cred_fault_name(GS_PROTO_CRED_UNREACHABLE), "munged_unreachable");
    cr_assert_str_eq(gs_proto_cred_fault_name((enum gs_proto_cred_fault)99), "munge_error");
}

Test(cred, munge_codes_map_to_faults)
{
#if GSCHED_HAVE_MUNGE
    cr_assert_eq(gs_proto_cred_fault_of(EMUNGE_SUCCESS), GS_PROTO_CRED_OK);
    cr_assert_eq(gs_proto_cred_fault_of(EMUNGE_CRED_REPLAYED), GS_PROTO_CRED_REPLAYED);
    cr_assert_eq(gs_proto_cred_fault_of(EMUNGE_CRED_EXPIRED), GS_PROTO_CRED_EXPIRED);
    cr_assert_eq(gs_proto_cred_fault_of(EMUNGE_CRED_REWOUND), GS_PROTO_CRED_REWOUND);
    cr_assert_eq(gs_proto_cred_fault_of(EMUNGE_CRED_INVALID), GS_PROTO_CRED_INVALID);
    cr_assert_eq(gs_proto_cred_fault_of(EMUNGE_BAD_MAC), GS_PROTO_CRED_INVALID);
    cr_assert_eq(gs_proto_cred_fault_of(EMUNGE_SOCKET), GS_PROTO_CRED_UNREACHABLE);
    cr_assert_eq(gs_proto_cred_fault_of(EMUNGE_CRED_UNAUTHORIZED), GS_PROTO_CRED_UNAUTHORIZED);
    cr_assert_eq(gs_proto_cred_fault_of(EMUNGE_NO_MEMORY), GS_PROTO_CRED_ERROR);
#else
    cr_assert_eq(gs_proto_cred_fault_of(1), GS_PROTO_CRED_ERROR);
#endif
}

Test(cred, empty_or_binary_credentials_are_refused_unasked)
{
    uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE];
    struct gs_proto_cred_id id = {7, 7};
    enum gs_proto_cred_fault fault;
    char why[128];

    if (!gs_proto_cred_available())
        cr_skip_test("built without libmunge");
    nonce_fill(nonce, 1);
    cr_assert_eq(gs_proto_cred_decode(NO_SOCKET, "", 0, nonce, &id, &fault, why, sizeof(why)),
                 -EACCES);
    cr_assert_eq(fault, GS_PROTO_CRED_MISSING);
    cr_assert_eq(
        gs_proto_cred_decode(NO_SOCKET, "MUNGE:\0x:", 9, nonce, &id, &fault, why, sizeof(why)),
        -EACCES);
    cr_assert_eq(fault, GS_PROTO_CRED_INVALID);
    cr_assert_eq(id.uid, 7, "the id is written only on success");
}

Test(cred, a_munged_not_there_is_unreachable)
{
    uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE];
    struct gs_proto_cred_id id;
    enum gs_proto_cred_fault fault;
    char why[256] = "", *cred = NULL;
    int rc;

    nonce_fill(nonce, 5);
    rc = gs_proto_cred_encode(NO_SOCKET, nonce, &cred, why, sizeof(why));
    if (!gs_proto_cred_available()) {
        cr_assert_eq(rc, -EPROTONOSUPPORT);
        return;
    }
    cr_assert_eq(rc, -EHOSTUNREACH, "%d %s", rc, why);
    cr_assert_null(cred);
    cr_assert(strstr(why, NO_SOCKET) != NULL, "%s", why);
    why[0] = '\0';
    rc = gs_proto_cred_decode(NO_SOCKET, "MUNGE:AAAA:", 11, nonce, &id, &fault, why, sizeof(why));
    cr_assert_eq(rc, -EHOSTUNREACH, "%d %s", rc, why);
    cr_assert_eq(fault, GS_PROTO_CRED_UNREACHABLE);
}
