/*
 * test_loader.c: the batch loader (sharding/loader.h): windows inside shards, the seeded
 * epoch order, ranks that together read what one rank reads, resume at a position, the
 * prefetch ring, the caller's allocator, and read errors that reach the consumer by name.
 *
 * The datasets come from dataset.h: token i of shard s is s * 100000 + i, so a window tells
 * which shard and offset it came from.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "sharding/loader.h"

#define T 8

static char dir[4096];
static struct shard_manifest *manifest;

static void setup(void)
{
    ds_tmpdir(dir, sizeof(dir));
    /* Shards of 85 tokens: (85 - 1) / 8 = 10 samples each, the last 4 tokens too few for
     * another window. Three train shards (30 samples), one val shard (10). */
    ds_make(dir, 3, 1, 85);
    manifest = ds_load(dir);
}

static void teardown(void)
{
    shard_manifest_free(manifest);
    ds_rmdir(dir);
}

TestSuite(loader, .init = setup, .fini = teardown);

static struct shard_loader_config config(uint32_t global_batch, uint32_t rank, uint32_t world)
{
    return (struct shard_loader_config){.manifest = manifest,
                                        .split = SHARD_SPLIT_TRAIN,
                                        .seq_len = T,
                                        .global_batch = global_batch,
                                        .rank = rank,
                                        .world = world,
                                        .seed = 1234,
                                        .prefetch = 3};
}

static struct shard_loader *start(const struct shard_loader_config *cfg)
{
    struct shard_loader *l = NULL;
    struct gs_error err;

    cr_assert_eq(shard_loader_new(cfg, &l, &err), 0, "%s", err.msg);
    return l;
}

/* Reads steps batches of samples x T inputs into out (steps * samples * T ids). */
static void read_steps(struct shard_loader *l, unsigned steps, int32_t *out, uint32_t samples)
{
    struct shard_loader_batch b;
    struct gs_error err;

    for (unsigned s = 0; s < steps; s++) {
        cr_assert_eq(shard_loader_next(l, &b, &err), 0, "%s", err.msg);
        cr_assert_eq(b.samples, samples);
        memcpy(out + (size_t)s * samples * T, b.inputs, (size_t)samples * T * sizeof(*out));
    }
}

/* The global sample id a window starting with token `first` is (3 shards of 10). */
static unsigned sample_of(int32_t first)
{
    unsigned shard = (unsigned)first / 100000, offset = (unsigned)first % 100000;

    cr_assert_eq(offset % T, 0, "windows start every T tokens (token %d)", first);
    return shard * 10 + offset / T;
}

Test(loader, permutation_is_deterministic_and_a_permutation)
{
    uint64_t a[1000], b[1000], c[1000];
    unsigned char seen[1000] = {0};
    int moved = 0;

    shard_loader_permutation(7, 3, 1000, a);
    shard_loader_permutation(7, 3, 1000, b);
    cr_expect_eq(memcmp(a, b, sizeof(a)), 0, "same seed and epoch: same order");
    for (int i = 0; i < 1000; i++) {
        cr_assert_lt(a[i], 1000);
        cr_assert_eq(seen[a[i]]++, 0, "%llu twice", (unsigned long long)a[i]);
        moved += a[i] != (uint64_t)i;
    }
    cr_expect_gt(moved, 900, "shuffled");
    shard_loader_permutation(7, 4, 1000, c);
    cr_expect_neq(memcmp(a, c, sizeof(a)), 0, "another epoch: another order");
    shard_loader_permutation(8, 3, 1000, c);
    cr_expect_neq(memcmp(a, c, sizeof(a)), 0, "another seed: another order");
}

Test(loader, samples_are_windows_inside_one_shard)
{
    struct shard_loader_config cfg = config(5, 0, 1);
    struct shard_loader *l = start(&cfg);
    struct shard_loader_batch b;
    struct gs_error err;
    unsigned seen[30] = {0};

    cr_expect_eq(shard_loader_samples(l), 30);
    for (int step = 0; step < 6; step++) { /* one epoch */
        cr_assert_eq(shard_loader_next(l, &b, &err), 0, "%s", err.msg);
        cr_expect_eq(b.epoch, 0);
        cr_expect_eq(b.sample, (uint64_t)step * 5);
        for (uint32_t j = 0; j < b.samples; j++) {
            const int32_t *in = b.inputs + j * T, *tg = b.targets + j * T;

            seen[sample_of(in[0])]++;
            for (int k = 0; k < T; k++) {
                cr_assert_eq(in[k], in[0] + k, "consecutive tokens of one shard");
                cr_assert_eq(tg[k], in[k] + 1, "targets are the inputs shifted by one");
            }
        }
    }
    for (int i = 0; i < 30; i++)
        cr_expect_eq(seen[i], 1, "sample %d seen once in the epoch", i);
    cr_assert_eq(shard_loader_next(l, &b, &err), 0, "%s", err.msg);
    cr_expect_eq(b.epoch, 1);
    cr_expect_eq(b.sample, 0);
    shard_loader_free(l);
}

Test(loader, epochs_skip_the_remainder_and_reshuffle)
{
    struct shard_loader_config cfg = config(7, 0, 1); /* 30 = 4 * 7 + 2 */
    struct shard_loader *l = start(&cfg);
    int32_t e0[4 * 7 * T], e1[4 * 7 * T];
    struct shard_loader_batch b;
    struct gs_error err;

    read_steps(l, 4, e0, 7);
    read_steps(l, 4, e1, 7);
    cr_expect_neq(memcmp(e0, e1, sizeof(e0)), 0, "epoch 1 in another order");
    cr_assert_eq(shard_loader_next(l, &b, &err), 0, "%s", err.msg);
    cr_expect_eq(b.epoch, 2);
    cr_expect_eq(b.sample, 0);
    shard_loader_free(l);
}

Test(loader, ranks_together_read_what_one_rank_reads)
{
    enum { STEPS = 9, GB = 8 }; /* crosses two epoch ends */
    int32_t *whole = malloc(STEPS * GB * T * sizeof(*whole));
    struct shard_loader_config cfg = config(GB, 0, 1);
    struct shard_loader *l = start(&cfg);

    read_steps(l, STEPS, whole, GB);
    shard_loader_free(l);
    for (uint32_t world = 2; world <= 4; world *= 2) {
        uint32_t per = GB / world;

        for (uint32_t r = 0; r < world; r++) {
            int32_t *part = malloc(STEPS * per * T * sizeof(*part));

            cfg = config(GB, r, world);
            l = start(&cfg);
            read_steps(l, STEPS, part, per);
            for (unsigned s = 0; s < STEPS; s++)
                cr_assert_eq(memcmp(part + (size_t)s * per * T,
                                    whole + ((size_t)s * GB + r * per) * T,
                                    per * T * sizeof(int32_t)),
                             0, "world %u rank %u step %u", world, r, s);
            shard_loader_free(l);
            free(part);
        }
    }
    free(whole);
}

Test(loader, resuming_at_a_position_equals_continuing)
{
    enum { BEFORE = 5, AFTER = 6, GB = 4 };
    int32_t straight[(BEFORE + AFTER) * GB * T], resumed[AFTER * GB * T];
    struct shard_loader_config cfg = config(GB, 0, 1);
    struct shard_loader *l = start(&cfg);
    struct shard_loader_batch b;
    struct gs_error err;
    uint64_t epoch = 0, sample = 0;

    for (int s = 0; s < BEFORE + AFTER; s++) {
        cr_assert_eq(shard_loader_next(l, &b, &err), 0, "%s", err.msg);
        memcpy(straight + s * GB * T, b.inputs, sizeof(int32_t) * GB * T);
        if (s == BEFORE - 1) {
            epoch = b.next_epoch;
            sample = b.next_sample;
        }
    }
    shard_loader_free(l);
    cr_expect_eq(epoch, 0);
    cr_expect_eq(sample, BEFORE * GB);
    /* Resumed with two ranks instead of one: together they read the same samples. */
    for (uint32_t r = 0; r < 2; r++) {
        int32_t part[AFTER * (GB / 2) * T];

        cfg = config(GB, r, 2);
        cfg.epoch = epoch;
        cfg.sample = sample;
        l = start(&cfg);
        read_steps(l, AFTER, part, GB / 2);
        shard_loader_free(l);
        for (int s = 0; s < AFTER; s++)
            memcpy(resumed + (s * GB + r * (GB / 2)) * T, part + s * (GB / 2) * T,
                   sizeof(int32_t) * (GB / 2) * T);
    }
    cr_expect_eq(memcmp(resumed, straight + BEFORE * GB * T, sizeof(resumed)), 0);
}

Test(loader, prefetch_ring_delivers_what_prefetch_one_does)
{
    enum { STEPS = 40, GB = 6 };
    int32_t *one = malloc(STEPS * GB * T * sizeof(*one)), *ring = malloc(STEPS * GB * T * 4);
    struct shard_loader_config cfg = config(GB, 0, 1);
    struct shard_loader *l;

    cfg.prefetch = 1;
    l = start(&cfg);
    read_steps(l, STEPS, one, GB);
    shard_loader_free(l);
    cfg.prefetch = 8;
    l = start(&cfg);
    read_steps(l, STEPS, ring, GB);
    cr_expect_gt(shard_loader_wait_ns(l), 0, "the consumer's wait is measured");
    shard_loader_free(l);
    cr_expect_eq(memcmp(one, ring, STEPS * GB * T * sizeof(int32_t)), 0);
    free(one);
    free(ring);
}

struct counting_alloc {
    int allocs, releases;
    size_t bytes;
};

static void *count_alloc(size_t size, void *data)
{
    struct counting_alloc *c = data;

    c->allocs++;
    c->bytes = size;
    return malloc(size);
}

static void count_release(void *ptr, void *data)
{
    struct counting_alloc *c = data;

    c->releases++;
    free(ptr);
}

Test(loader, batch_buffers_come_from_the_callers_allocator)
{
    struct counting_alloc c = {0};
    struct shard_loader_config cfg = config(4, 1, 2);
    struct shard_loader *l;
    struct shard_loader_batch b;

    cfg.alloc = count_alloc;
    cfg.release = count_release;
    cfg.alloc_data = &c;
    cfg.prefetch = 5;
    l = start(&cfg);
    cr_expect_eq(c.allocs, 5);
    cr_expect_eq(c.bytes, 2 * 2 * T * sizeof(int32_t), "inputs and targets of 2 samples");
    cr_assert_eq(shard_loader_next(l, &b, NULL), 0);
    shard_loader_free(l);
    cr_expect_eq(c.releases, 5);
}

static void *fail_third_alloc(size_t size, void *data)
{
    struct counting_alloc *c = data;

    return ++c->allocs == 3 ? NULL : malloc(size);
}

Test(loader, a_failing_allocator_is_an_error_and_frees_what_it_gave)
{
    struct counting_alloc c = {0};
    struct shard_loader_config cfg = config(4, 0, 1);
    struct shard_loader *l = NULL;
    struct gs_error err;

    cfg.alloc = fail_third_alloc;
    cfg.release = count_release;
    cfg.alloc_data = &c;
    cfg.prefetch = 4;
    cr_expect_eq(shard_loader_new(&cfg, &l, &err), -ENOMEM);
    cr_expect_null(l);
    cr_expect(strstr(err.msg, "batch buffers") != NULL, "%s", err.msg);
    cr_expect_eq(c.releases, 2, "the two buffers it got are given back");
}

Test(loader, refuses_a_batch_that_does_not_divide_by_the_world)
{
    struct shard_loader_config cfg = config(6, 0, 4);
    struct shard_loader *l = NULL;
    struct gs_error err;

    cr_expect_eq(shard_loader_new(&cfg, &l, &err), -EINVAL);
    cr_expect_null(l);
    cr_expect(strstr(err.msg, "global_batch 6 does not divide by world 4") != NULL, "%s", err.msg);
    cfg = config(4, 4, 4);
    cr_expect_eq(shard_loader_new(&cfg, &l, &err), -EINVAL);
    cr_expect(strstr(err.msg, "rank 4") != NULL, "%s", err.msg);
    cfg = config(31, 0, 1);
    cr_expect_eq(shard_loader_new(&cfg, &l, &err), -EINVAL, "more than the 30 samples");
    cfg = config(4, 0, 1);
    cfg.sample = 31;
    cr_expect_eq(shard_loader_new(&cfg, &l, &err), -EINVAL);
    cr_expect(strstr(err.msg, "position") != NULL, "%s", err.msg);
}

/* Reads until an error (within 200 steps), which must be code and name the shard. */
static void expect_error_naming(struct shard_loader *l, int code, const char *shard)
{
    struct shard_loader_batch b;
    struct gs_error err;
    int rc = 0;

    for (int step = 0; step < 200 && rc == 0; step++)
        rc = shard_loader_next(l, &b, &err);
    cr_assert_eq(rc, code, "error %d (%s)", rc, rc < 0 ? err.msg : "none");
    cr_expect(strstr(err.msg, shard) != NULL, "names %s: %s", shard, err.msg);
    memset(&err, 0, sizeof(err));
    cr_expect_eq(shard_loader_next(l, &b, &err), code, "and again on the next call");
    cr_expect(strstr(err.msg, shard) != NULL, "%s", err.msg);
}

Test(loader, a_shard_cut_short_reaches_the_consumer_as_an_error)
{
    struct shard_loader_config cfg = config(3, 0, 1);
    struct shard_loader *l = start(&cfg);

    cr_assert_eq(truncate(manifest->shards[1].path, SHARD_HEADER_SIZE), 0);
    expect_error_naming(l, -EIO, "train-00001.bin");
    shard_loader_free(l);
}

Test(loader, a_damaged_token_reaches_the_consumer_as_an_error)
{
    struct shard_loader_config cfg = config(3, 1, 3);
    struct shard_loader *l;
    unsigned char bad[4] = {0xff, 0xff, 0xff, 0x7f};

    cfg.prefetch = 1;
    l = start(&cfg);
    for (int i = 0; i < 80; i += 8)
        ds_patch(manifest->shards[2].path, SHARD_HEADER_SIZE + 4 * i, bad, 4);
    expect_error_naming(l, -EBADMSG, "train-00002.bin");
    shard_loader_free(l);
}

Test(loader, eval_is_one_sequential_pass_split_over_ranks)
{
    enum { GB = 4 }; /* the val shard's 10 samples: steps of 4, 4, 2 */
    unsigned expect_next = 0;

    for (uint32_t world = 1; world <= 2; world++) {
        unsigned got[10] = {0}, n = 0;

        for (uint32_t r = 0; r < world; r++) {
            struct shard_loader_config cfg = config(GB, r, world);
            struct shard_loader *l;
            struct shard_loader_batch b;
            struct gs_error err;
            int steps = 0;

            cfg.split = SHARD_SPLIT_VAL;
            l = start(&cfg);
            cr_expect_eq(shard_loader_samples(l), 10);
            for (;;) {
                cr_assert_eq(shard_loader_next(l, &b, &err), 0, "%s", err.msg);
                if (b.end)
                    break;
                steps++;
                for (uint32_t j = 0; j < b.samples; j++) {
                    unsigned id = (unsigned)(b.inputs[j * T] - 300000) / T;

                    cr_assert_lt(id, 10);
                    if (world == 1)
                        cr_expect_eq(id, expect_next++, "in order");
                    got[id]++;
                    n++;
                }
            }
            cr_expect_eq(steps, 3);
            cr_assert_eq(shard_loader_next(l, &b, &err), 0, "%s", err.msg);
            cr_expect(b.end, "the end stays the end");
            shard_loader_free(l);
        }
        cr_expect_eq(n, 10, "world %u", world);
        for (int i = 0; i < 10; i++)
            cr_expect_eq(got[i], 1, "world %u: val sample %d once", world, i);
    }
}
