/*
 * test_seal.c: the sealed frames of a keyed link (proto/seal.h) between two ends that
 * derived their seals from the same key and nonces: a frame's envelope cannot be read on
 * the wire; it opens at the other end, in order; it does not open reflected to its sender,
 * under another key or other nonces, changed in any byte, out of turn, or cut short.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
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

#define NODE_NAME "node-with-a-name-worth-hiding"

/* A heartbeat frame in the clear into out (reset first). */
static void plain(struct gs_buf *out, uint64_t hb_seq)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__Heartbeat hb = GS__HEARTBEAT__INIT;

    hb.node_name = NODE_NAME;
    hb.seq = hb_seq;
    env.body_case = GS__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    gs_buf_reset(out);
    cr_assert_eq(gs_proto_encode(&env, out), 0);
}

/* The same sealed by s. */
static void sealed(struct gs_proto_seal *s, struct gs_buf *out, uint64_t hb_seq)
{
    plain(out, hb_seq);
    cr_assert_eq(gs_proto_seal_frame(s, out, 0), 0);
}

/* Opens the frame in f with s: its result, and the heartbeat's seq in *hb_seq when it opened.
 * Opening decrypts in place, so it works on a copy and f can be opened again. */
static int open_frame(struct gs_proto_seal *s, const struct gs_buf *f, uint64_t *hb_seq)
{
    const uint8_t *h = (const uint8_t *)f->data;
    size_t len = f->len - GS_PROTO_HEADER_SIZE, plen = 0;
    uint32_t announced = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
    uint8_t *p = malloc(len);
    Gs__Envelope *env = NULL;
    int rc;

    cr_assert_not_null(p);
    cr_assert_eq(announced, len, "the length counts the tag");
    memcpy(p, h + GS_PROTO_HEADER_SIZE, len);
    rc = gs_proto_seal_open(s, p, len, &plen);
    if (rc == 0) {
        cr_assert_eq(gs_proto_decode(p, plen, &env), 0);
        cr_assert_str_eq(env->heartbeat->node_name, NODE_NAME);
        *hb_seq = env->heartbeat->seq;
        gs_proto_envelope_free(env);
    }
    free(p);
    return rc;
}

/* Whether the n bytes at needle occur in hay. */
static bool contains(const struct gs_buf *hay, const void *needle, size_t n)
{
    for (size_t i = 0; i + n <= hay->len; i++)
        if (memcmp(hay->data + i, needle, n) == 0)
            return true;
    return false;
}

/* What the envelope says is not on the wire: neither its text nor its packed bytes, and the
 * same envelope sent twice looks different each time. */
Test(seal, the_envelope_cannot_be_read_on_the_wire)
{
    struct gs_buf f0 = GS_BUF_INIT, f1 = GS_BUF_INIT, clear = GS_BUF_INIT;
    size_t n;

    sealed(&a, &f0, 5);
    sealed(&a, &f1, 5);
    cr_assert_not(contains(&f0, "worth-hiding", 12));
    cr_assert_not(contains(&f0, "node", 4));
    plain(&clear, 5);
    n = clear.len - GS_PROTO_HEADER_SIZE;
    cr_assert(contains(&clear, NODE_NAME, strlen(NODE_NAME)), "the test's text is in the envelope");
    cr_assert_eq(f0.len, clear.len + GS_PROTO_SEAL_TAG_SIZE);
    for (size_t i = 0; i + 8 <= n; i += 8)
        cr_assert_not(contains(&f0, clear.data + GS_PROTO_HEADER_SIZE + i, 8),
                      "packed bytes %zu.. on the wire", i);
    cr_assert_neq(memcmp(f0.data + GS_PROTO_HEADER_SIZE, f1.data + GS_PROTO_HEADER_SIZE, n), 0,
                  "the second frame under the next nonce");
    gs_buf_release(&f0);
    gs_buf_release(&f1);
    gs_buf_release(&clear);
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
    cr_assert_eq(gs_proto_seal_open(&b, (uint8_t *)f1.data + GS_PROTO_HEADER_SIZE,
                                    GS_PROTO_SEAL_TAG_SIZE, &plen),
                 GS_PROTO_ERR_AUTH, "a tag alone");
    gs_buf_release(&f0);
    gs_buf_release(&f1);
}
