/*
 * seal_cost.c: what sealing a keyed link's frames (proto/seal.h, AES-256-GCM) costs next to
 * the work every frame does anyway, packing and unpacking its envelope, and next to the
 * HMAC-SHA256 tag protocol 1.12 put on frames in the clear.
 *
 *     seal_cost [REPS]                                       default 20000
 *
 * For a heartbeat (~40 bytes) and a log chunk of 4 KiB and 64 KiB (LogsReply, the largest
 * frames gschedd relays), each case runs REPS times and prints the best of five runs in ns
 * per frame: pack, pack + seal, pack + HMAC tag, unpack, open + unpack; then the ratios
 * (pack+seal)/pack and seal/HMAC. All in one process, one after the other, so the ratios
 * are between runs on the same core minutes apart at most.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/params.h>

#include "common/clock.h"
#include "proto/frame.h"
#include "proto/seal.h"

enum op { PACK, PACK_SEAL, PACK_HMAC, UNPACK, OPEN_UNPACK, NOPS };

static const char *const op_names[NOPS] = {"pack", "pack+seal", "pack+hmac", "unpack",
                                           "open+unpack"};

struct ctx {
    Gs__Envelope env;
    Gs__Heartbeat hb;
    Gs__LogsReply lr;
    struct gs_proto_seal tx, rx;
    EVP_MAC_CTX *mac;
    struct gs_buf frame, sealed_frames; /* sealed_frames: REPS frames in order, for opening */
    size_t sealed_len;                  /* bytes of one sealed frame */
};

static void die(const char *what)
{
    fprintf(stderr, "seal_cost: %s failed\n", what);
    exit(1);
}

static void pack(struct ctx *c)
{
    gs_buf_reset(&c->frame);
    if (gs_proto_encode(&c->env, &c->frame) < 0)
        die("gs_proto_encode");
}

/* The 1.12 tag: HMAC-SHA256 over seq | payload, as seal.c computed it then. */
static void hmac_tag(struct ctx *c, uint64_t seq)
{
    uint8_t be[8], out[EVP_MAX_MD_SIZE];
    size_t n;

    for (int i = 0; i < 8; i++)
        be[i] = (uint8_t)(seq >> (56 - 8 * i));
    if (!EVP_MAC_init(c->mac, NULL, 0, NULL) || !EVP_MAC_update(c->mac, be, 8) ||
        !EVP_MAC_update(c->mac, (uint8_t *)c->frame.data + GS_PROTO_HEADER_SIZE,
                        c->frame.len - GS_PROTO_HEADER_SIZE) ||
        !EVP_MAC_final(c->mac, out, &n, sizeof(out)) || gs_buf_append(&c->frame, out, 16) < 0)
        die("HMAC");
}

static void unpack(const uint8_t *p, size_t len)
{
    Gs__Envelope *env = NULL;

    if (gs_proto_decode(p, len, &env) < 0)
        die("gs_proto_decode");
    gs_proto_envelope_free(env);
}

/* Seals reps frames one after the other into sealed_frames, for OPEN_UNPACK to open in turn. */
static void prepare_open(struct ctx *c, int reps)
{
    gs_buf_reset(&c->sealed_frames);
    c->rx.recv_seq = c->tx.send_seq; /* the earlier cases sealed frames nobody opened */
    for (int i = 0; i < reps; i++) {
        pack(c);
        if (gs_proto_seal_frame(&c->tx, &c->frame, 0) < 0 ||
            gs_buf_append(&c->sealed_frames, c->frame.data, c->frame.len) < 0)
            die("sealing");
        c->sealed_len = c->frame.len;
    }
}

/* ns per frame for reps frames of op. */
static double run(struct ctx *c, enum op op, int reps)
{
    uint64_t t0;
    size_t plen = 0;

    pack(c);
    if (op == UNPACK)
        gs_buf_reset(&c->sealed_frames),
            gs_buf_append(&c->sealed_frames, c->frame.data, c->frame.len);
    if (op == OPEN_UNPACK)
        prepare_open(c, reps);
    t0 = gs_clock_mono_ns();
    for (int i = 0; i < reps; i++) {
        uint8_t *p = (uint8_t *)c->sealed_frames.data + GS_PROTO_HEADER_SIZE;

        switch (op) {
        case PACK:
            pack(c);
            break;
        case PACK_SEAL:
            pack(c);
            if (gs_proto_seal_frame(&c->tx, &c->frame, 0) < 0)
                die("gs_proto_seal_frame");
            break;
        case PACK_HMAC:
            pack(c);
            hmac_tag(c, (uint64_t)i);
            break;
        case UNPACK:
            unpack(p, c->sealed_frames.len - GS_PROTO_HEADER_SIZE);
            break;
        case OPEN_UNPACK:
            p = (uint8_t *)c->sealed_frames.data + (size_t)i * c->sealed_len + GS_PROTO_HEADER_SIZE;
            if (gs_proto_seal_open(&c->rx, p, c->sealed_len - GS_PROTO_HEADER_SIZE, &plen) != 0)
                die("gs_proto_seal_open");
            unpack(p, plen);
            break;
        default:
            break;
        }
    }
    return (double)(gs_clock_mono_ns() - t0) / reps;
}

static void setup(struct ctx *c)
{
    static const uint8_t na[GS_PROTO_AUTH_NONCE_SIZE] = {1}, nb[GS_PROTO_AUTH_NONCE_SIZE] = {2};
    struct gs_proto_auth_key key = {.len = 32};
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0),
                           OSSL_PARAM_construct_end()};
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);

    memset(key.bytes, 7, 32);
    if (gs_proto_seal_init(&c->tx, &key, na, nb) < 0 ||
        gs_proto_seal_init(&c->rx, &key, nb, na) < 0)
        die("gs_proto_seal_init");
    c->tx.sending = c->rx.receiving = true;
    c->mac = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    if (c->mac == NULL || !EVP_MAC_init(c->mac, key.bytes, 32, params))
        die("HMAC setup");
    EVP_MAC_free(mac);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {0, 4096, 65536};
    int reps = argc > 1 ? atoi(argv[1]) : 20000;
    struct ctx c = {.env = GS__ENVELOPE__INIT,
                    .hb = GS__HEARTBEAT__INIT,
                    .lr = GS__LOGS_REPLY__INIT,
                    .frame = GS_BUF_INIT,
                    .sealed_frames = GS_BUF_INIT};
    uint8_t *data = malloc(65536);

    if (reps < 1 || data == NULL) {
        fprintf(stderr, "usage: seal_cost [REPS]\n");
        return 2;
    }
    for (size_t i = 0; i < 65536; i++)
        data[i] = (uint8_t)("0123456789 log line\n"[i % 20]);
    setup(&c);
    printf("%-10s %8s %10s %10s %10s %10s %12s %10s %9s\n", "frame", "bytes", op_names[0],
           op_names[1], op_names[2], op_names[3], op_names[4], "seal/pack", "seal/hmac");
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        double best[NOPS];
        int n = sizes[s] >= 65536 ? reps / 16 + 1 : reps;

        if (sizes[s] == 0) {
            c.hb.node_name = "node-0042", c.hb.seq = 123456;
            c.env.body_case = GS__ENVELOPE__BODY_HEARTBEAT, c.env.heartbeat = &c.hb;
        } else {
            c.lr.data.data = data, c.lr.data.len = sizes[s];
            c.lr.node_name = "node-0042", c.lr.path = "/var/lib/gsched/logs/job-7/rank-0.out";
            c.env.body_case = GS__ENVELOPE__BODY_LOGS_REPLY, c.env.logs_reply = &c.lr;
        }
        for (int op = 0; op < NOPS; op++) {
            best[op] = 1e30;
            for (int k = 0; k < 5; k++) {
                double t = run(&c, (enum op)op, n);

                best[op] = t < best[op] ? t : best[op];
            }
        }
        pack(&c);
        printf("%-10s %8zu %10.0f %10.0f %10.0f %10.0f %12.0f %10.2f %9.2f\n",
               sizes[s] == 0 ? "heartbeat" : "log chunk", c.frame.len, best[PACK], best[PACK_SEAL],
               best[PACK_HMAC], best[UNPACK], best[OPEN_UNPACK], best[PACK_SEAL] / best[PACK],
               (best[PACK_SEAL] - best[PACK]) / (best[PACK_HMAC] - best[PACK]));
    }
    gs_proto_seal_clear(&c.tx);
    gs_proto_seal_clear(&c.rx);
    EVP_MAC_CTX_free(c.mac);
    gs_buf_release(&c.frame);
    gs_buf_release(&c.sealed_frames);
    free(data);
    return 0;
}
