/*
 * test_seal.c: the tags of a keyed link's frames (proto/seal.h) between two ends that derived
 * their seals from the same key and nonces: a frame opens at the other end, in order; it
 * does not open reflected to its sender, under another key or other nonces, changed in any
 * byte, out of turn, or cut short.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "proto/frame.h"
#include "proto/seal.h"

static struct gs_proto_auth_key key;
static struct gs_proto_seal a, b; /* the two ends */
static const uint8_t na[GS_PROTO_AUTH_NONCE_SIZE] = {1, 2, 3}, nb[GS_PROTO_AUTH_NONCE_SIZE] = {9};

static void setup(void)
{
    memset(&key, 0, sizeof(key));
    memset(key.bytes, 0x5c, 32);
    key.len = 32;
    cr_assert_eq(gs_proto_seal_init(&a, &key, na, nb), 0);
    cr_assert_eq(gs_proto_seal_init(&b, &key, nb, na), 0);
    a.sending = a.receiving = b.sending = b.receiving = true;
}

static void teardown(void)
{
    gs_proto_seal_clear(&a);
    gs_proto_seal_clear(&b);
}

TestSuite(seal, .init = setup, .fini = teardown);

/* A sealed heartbeat frame from s into out (reset first). */
static void sealed(struct gs_proto_seal *s, struct gs_buf *out, uint64_t hb_seq)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__Heartbeat hb = GS__HEARTBEAT__INIT;

    hb.node_name = "n1";
    hb.seq = hb_seq;
    env.body_case = GS__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    gs_buf_reset(out);
    cr_assert_eq(gs_proto_encode(&env, out), 0);
    cr_assert_eq(gs_proto_seal_frame(s, out, 0), 0);
}

/* Opens the frame in f with s: its result, and the heartbeat's seq in *hb_seq when it opened. */
static int open_frame(struct gs_proto_seal *s, const struct gs_buf *f, uint64_t *hb_seq)
{
    const uint8_t *p = (const uint8_t *)f->data + GS_PROTO_HEADER_SIZE;
    size_t len = f->len - GS_PROTO_HEADER_SIZE, plen = 0;
    uint32_t announced =
        (uint32_t)p[-4] << 24 | (uint32_t)p[-3] << 16 | (uint32_t)p[-2] << 8 | (uint32_t)p[-1];
    Gs__Envelope *env = NULL;
    int rc;

    cr_assert_eq(announced, len, "the length counts the tag");
    rc = gs_proto_seal_open(s, p, len, &plen);
    if (rc == 0) {
        cr_assert_eq(gs_proto_decode(p, plen, &env), 0);
        *hb_seq = env->heartbeat->seq;
        gs_proto_envelope_free(env);
    }
    return rc;
}

Test(seal, frames_open_at_the_other_end_in_order)
{
    struct gs_buf f = GS_BUF_INIT;
    uint64_t got = 0;

    for (uint64_t i = 1; i <= 3; i++) {
        sealed(&a, &f, i);
        cr_assert_eq(open_frame(&b, &f, &got), 0);
        cr_assert_eq(got, i);
        sealed(&b, &f, 10 * i); /* and the other way */
        cr_assert_eq(open_frame(&a, &f, &got), 0);
        cr_assert_eq(got, 10 * i);
    }
    gs_buf_release(&f);
}

Test(seal, a_frame_reflected_to_its_sender_does_not_open)
{
    struct gs_buf f = GS_BUF_INIT;
    uint64_t got;

    sealed(&a, &f, 1);
    cr_assert_eq(open_frame(&a, &f, &got), GS_PROTO_ERR_AUTH);
    gs_buf_release(&f);
}

Test(seal, another_key_or_other_nonces_do_not_open_it)
{
    struct gs_proto_auth_key other = key;
    uint8_t n2[GS_PROTO_AUTH_NONCE_SIZE];
    struct gs_proto_seal c = {0};
    struct gs_buf f = GS_BUF_INIT;
    uint64_t got;

    other.bytes[0] ^= 1;
    sealed(&a, &f, 1);
    cr_assert_eq(gs_proto_seal_init(&c, &other, nb, na), 0);
    c.receiving = true;
    cr_assert_eq(open_frame(&c, &f, &got), GS_PROTO_ERR_AUTH);
    memcpy(n2, na, sizeof(n2));
    n2[5] ^= 1; /* another connection's nonce */
    cr_assert_eq(gs_proto_seal_init(&c, &key, nb, n2), 0);
    c.receiving = true;
    cr_assert_eq(open_frame(&c, &f, &got), GS_PROTO_ERR_AUTH);
    cr_assert_eq(open_frame(&b, &f, &got), 0, "the right end still opens it");
    gs_proto_seal_clear(&c);
    gs_buf_release(&f);
}

Test(seal, any_changed_byte_fails_it)
{
    struct gs_buf f = GS_BUF_INIT;
    uint64_t got;

    sealed(&a, &f, 7);
    for (size_t i = GS_PROTO_HEADER_SIZE; i < f.len; i++) {
        f.data[i] ^= 0x80;
        cr_assert_eq(open_frame(&b, &f, &got), GS_PROTO_ERR_AUTH, "byte %zu changed", i);
        f.data[i] ^= 0x80;
    }
    cr_assert_eq(open_frame(&b, &f, &got), 0);
    gs_buf_release(&f);
}

Test(seal, a_frame_out_of_turn_or_cut_short_fails)
{
    struct gs_buf f0 = GS_BUF_INIT, f1 = GS_BUF_INIT;
    size_t plen;
    uint64_t got;

    sealed(&a, &f0, 1);
    sealed(&a, &f1, 2);
    cr_assert_eq(open_frame(&b, &f1, &got), GS_PROTO_ERR_AUTH, "the second before the first");
    cr_assert_eq(open_frame(&b, &f0, &got), 0);
    cr_assert_eq(open_frame(&b, &f0, &got), GS_PROTO_ERR_AUTH, "the first again");
    cr_assert_eq(open_frame(&b, &f1, &got), 0);
    cr_assert_eq(gs_proto_seal_open(&b, (const uint8_t *)f1.data + GS_PROTO_HEADER_SIZE,
                                    GS_PROTO_SEAL_TAG_SIZE, &plen),
                 GS_PROTO_ERR_AUTH, "a tag alone");
    gs_buf_release(&f0);
    gs_buf_release(&f1);
}
