/*
 * test_held.c: a cache's holdings on the wire (proto/held.h). Every shape of holding reads
 * back as it was sent, whichever form the sender chose; the shorter form is the one chosen;
 * an old receiver always gets the bitmap; holdings that do not read are refused; and a
 * launch for 1,000 nodes of a 100,000-shard dataset, each holding its share, takes a small
 * part of a frame, where bitmaps take 12.5 MB.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "proto/frame.h"
#include "proto/held.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static void set(uint8_t *bits, uint32_t i)
{
    bits[i / 8] |= (uint8_t)(1u << (i % 8));
}

/* What the runs of bits pack to, counted the plain way: the spec of the choice. */
static size_t runs_bytes(const uint8_t *bits, uint32_t shards)
{
    size_t bytes = 0;
    uint32_t end = 0;

    for (uint32_t i = 0; i < shards; i++) {
        uint32_t start = i;

        if (!(bits[i / 8] >> (i % 8) & 1))
            continue;
        while (i < shards && (bits[i / 8] >> (i % 8) & 1))
            i++;
        for (uint32_t v = start - end;; v >>= 7) { /* the gap's varint */
            bytes++;
            if (v < 0x80)
                break;
        }
        for (uint32_t v = i - start;; v >>= 7) { /* the length's */
            bytes++;
            if (v < 0x80)
                break;
        }
        end = i;
    }
    return bytes;
}

/* Sends bits as a DatasetHolding through an envelope's packing and reads it back. */
static void round_trip(const uint8_t *bits, uint32_t shards, bool runs_ok, bool want_runs)
{
    size_t len = ((size_t)shards + 7) / 8;
    struct gs_held_wire w;
    Gs__DatasetHolding h = GS__DATASET_HOLDING__INIT, *ph = &h;
    Gs__DataHoldings m = GS__DATA_HOLDINGS__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *got = NULL;
    struct gs_buf frame = GS_BUF_INIT;
    uint8_t *back = malloc(len + 1);

    cr_assert_eq(gs_held_wire_init(&w, bits, shards, runs_ok), 0);
    cr_assert_eq(w.bits.len == 0, want_runs, "shards=%u: runs %s", shards,
                 want_runs ? "expected" : "not expected");
    h.dataset = "d";
    h.shards = shards;
    h.held = w.bits;
    h.n_held_runs = w.nruns;
    h.held_runs = w.runs;
    m.n_datasets = 1;
    m.datasets = &ph;
    env.body_case = GS__ENVELOPE__BODY_DATA_HOLDINGS;
    env.data_holdings = &m;
    cr_assert_eq(gs_proto_encode(&env, &frame), 0);
    cr_assert_eq(
        gs_proto_decode(frame.data + GS_PROTO_HEADER_SIZE, frame.len - GS_PROTO_HEADER_SIZE, &got),
        0);
    const Gs__DatasetHolding *g = got->data_holdings->datasets[0];
    cr_assert_eq(gs_held_read(&g->held, g->held_runs, g->n_held_runs, g->shards, back), 0);
    cr_assert(len == 0 || memcmp(back, bits, len) == 0, "shards=%u: read back differs", shards);
    gs_proto_envelope_free(got);
    gs_buf_release(&frame);
    gs_held_wire_release(&w);
    free(back);
}

Test(held, every_shape_reads_back_as_sent_in_the_shorter_form)
{
    enum { N = 10000 };
    uint8_t *bits = calloc(N / 8 + 1, 1);

    round_trip(bits, N, true, true); /* nothing held: no runs at all */
    round_trip(bits, N, false, false);
    memset(bits, 0xff, N / 8);
    round_trip(bits, N, true, true); /* everything: one run */
    memset(bits, 0, N / 8 + 1);
    for (uint32_t i = 0; i < N; i += 1000) /* sparse */
        set(bits, i);
    round_trip(bits, N, true, true);
    round_trip(bits, N, false, false);
    memset(bits, 0, N / 8 + 1);
    for (uint32_t i = 0; i < N; i++) { /* half, at random: the bitmap is shorter */
        if (next_u32() & 1)
            set(bits, i);
    }
    round_trip(bits, N, true, false);
    memset(bits, 0, N / 8 + 1);
    for (uint32_t i = 0; i < N; i += 2) /* every other: runs would be 16 times longer */
        set(bits, i);
    round_trip(bits, N, true, false);
    memset(bits, 0, N / 8 + 1);
    set(bits, N - 1); /* the last shard alone, and odd sizes */
    round_trip(bits, N, true, true);
    for (uint32_t shards = 1; shards < 70; shards++) {
        memset(bits, 0, N / 8 + 1);
        for (uint32_t i = 0; i < shards; i++) {
            if (next_u32() % 3 == 0)
                set(bits, i);
        }
        round_trip(bits, shards, true, runs_bytes(bits, shards) < (shards + 7) / 8);
    }
    free(bits);
}

Test(held, holdings_that_do_not_read_are_refused)
{
    uint8_t bits[4], one = 0x01, high = 0x80;
    ProtobufCBinaryData none = {0}, b1 = {1, &one}, bhigh = {1, &high};
    uint32_t odd[] = {0}, empty_run[] = {2, 0}, past[] = {5, 6}, later_past[] = {0, 4, 3, 2},
             fits[] = {1, 2, 3, 4}, huge[] = {UINT32_MAX, UINT32_MAX};

    cr_assert_eq(gs_held_read(&none, fits, 4, 10, bits), 0);
    cr_assert_eq(bits[0], 0xc6, "shards 1-2 and 6-9: %#x", bits[0]);
    cr_assert_eq(bits[1], 0x03);
    cr_assert_eq(gs_held_read(&none, fits, 4, 9, bits), -EINVAL, "a run past the last shard");
    cr_assert_eq(gs_held_read(&none, odd, 1, 10, bits), -EINVAL, "a gap without its length");
    cr_assert_eq(gs_held_read(&none, empty_run, 2, 10, bits), -EINVAL, "an empty run");
    cr_assert_eq(gs_held_read(&none, past, 2, 10, bits), -EINVAL);
    cr_assert_eq(gs_held_read(&none, later_past, 4, 8, bits), -EINVAL);
    cr_assert_eq(gs_held_read(&none, huge, 2, 10, bits), -EINVAL, "runs that overflow 32 bits");
    cr_assert_eq(gs_held_read(&b1, fits, 4, 8, bits), -EINVAL, "both forms at once");
    cr_assert_eq(gs_held_read(&b1, NULL, 0, 9, bits), -EINVAL, "a bitmap of another size");
    cr_assert_eq(gs_held_read(&bhigh, NULL, 0, 7, bits), -EINVAL, "a bit past the last shard");
    cr_assert_eq(gs_held_read(&bhigh, NULL, 0, 8, bits), 0);
    cr_assert_eq(bits[0], 0x80);
    cr_assert_eq(gs_held_read(&none, NULL, 0, GS_HELD_MAX_SHARDS + 1, bits), -EINVAL,
                 "more shards than any holding may have");
    cr_assert_eq(gs_held_read(&none, NULL, 0, 30, bits), 0, "nothing known: nothing held");
    cr_assert_eq(bits[0] | bits[1] | bits[2] | bits[3], 0);

    uint8_t *own = (uint8_t *)&one; /* overwritten either way */
    cr_assert_eq(gs_held_read_new(&none, NULL, 0, UINT32_MAX, &own), -EINVAL);
    cr_assert_null(own, "refused before any allocation");
    cr_assert_eq(gs_held_read_new(&none, odd, 1, 10, &own), -EINVAL);
    cr_assert_null(own);
    cr_assert_eq(gs_held_read_new(&none, fits, 4, 10, &own), 0);
    cr_assert(own[0] == 0xc6 && own[1] == 0x03, "%#x %#x", own[0], own[1]);
    free(own);
}

/*
 * A job of 1,000 nodes on a dataset of 100,000 shards, each node holding its 100 (every
 * 1,000th shard from its own offset) and a block of 1,000 in a row: the launch's holdings
 * as runs take under a 32nd of a frame; as bitmaps they take 12.5 MB of its 16 MiB.
 */
Test(held, a_launch_for_a_thousand_nodes_fits_a_frame)
{
    enum { NODES = 1000, SHARDS = 100000 };
    size_t len = SHARDS / 8;
    uint8_t *bits = calloc((size_t)NODES * len, 1);
    struct gs_held_wire *w = calloc(NODES, sizeof(*w));
    Gs__DatasetHolding *h = calloc(NODES, sizeof(*h));
    Gs__DatasetHolding **ptrs = calloc(NODES, sizeof(*ptrs));
    Gs__JobLaunchData ld = GS__JOB_LAUNCH_DATA__INIT;
    Gs__LaunchTasks lt = GS__LAUNCH_TASKS__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *got = NULL;
    struct gs_buf frame = GS_BUF_INIT;
    uint8_t *back = malloc(len);

    for (int runs_ok = 1; runs_ok >= 0; runs_ok--) {
        for (uint32_t n = 0; n < NODES; n++) {
            uint8_t *b = bits + (size_t)n * len;

            for (uint32_t s = n; s < SHARDS; s += NODES)
                set(b, s);
            for (uint32_t s = (n * 97u) % (SHARDS - 1000); s < (n * 97u) % (SHARDS - 1000) + 1000;
                 s++)
                set(b, s);
            cr_assert_eq(gs_held_wire_init(&w[n], b, SHARDS, runs_ok != 0), 0);
            gs__dataset_holding__init(&h[n]);
            h[n].dataset = "d";
            h[n].shards = SHARDS;
            h[n].held = w[n].bits;
            h[n].n_held_runs = w[n].nruns;
            h[n].held_runs = w[n].runs;
            ptrs[n] = &h[n];
        }
        ld.n_holdings = NODES;
        ld.holdings = ptrs;
        lt.data = &ld;
        env.body_case = GS__ENVELOPE__BODY_LAUNCH_TASKS;
        env.launch_tasks = &lt;
        gs_buf_reset(&frame);
        cr_assert_eq(gs_proto_encode(&env, &frame), 0);
        if (!runs_ok) {
            cr_assert_geq(frame.len, (size_t)NODES * len, "bitmaps: %zu bytes", frame.len);
            break;
        }
        cr_assert_lt(frame.len, GS_PROTO_MAX_FRAME_DEFAULT / 32, "runs: %zu bytes", frame.len);
        cr_log_info("a launch's holdings for %d nodes of %d shards: %zu bytes as runs", NODES,
                    SHARDS, frame.len);
        cr_assert_eq(gs_proto_decode(frame.data + GS_PROTO_HEADER_SIZE,
                                     frame.len - GS_PROTO_HEADER_SIZE, &got),
                     0);
        for (uint32_t n = 0; n < NODES; n++) {
            const Gs__DatasetHolding *g = got->launch_tasks->data->holdings[n];

            cr_assert_eq(gs_held_read(&g->held, g->held_runs, g->n_held_runs, SHARDS, back), 0);
            cr_assert(memcmp(back, bits + (size_t)n * len, len) == 0, "node %u differs", n);
        }
        gs_proto_envelope_free(got);
        for (uint32_t n = 0; n < NODES; n++)
            gs_held_wire_release(&w[n]);
    }
    for (uint32_t n = 0; n < NODES; n++)
        gs_held_wire_release(&w[n]);
    gs_buf_release(&frame);
    free(back);
    free(bits);
    free(w);
    free(h);
    free(ptrs);
}
