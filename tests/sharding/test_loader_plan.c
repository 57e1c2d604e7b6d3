/*
 * test_loader_plan.c: the loader's plan mode (sharding/loader.h, issue 19): each rank reads
 * only the train shards the data plan gives it, ranks together read every train sample at
 * most once, every rank agrees on the steps of an epoch without talking, the order is a
 * function of (seed, epoch, rank), a position resumes exactly, a different assignment moves
 * the start to the next epoch, and a rank reads from a directory holding only its shards.
 * The rest of an epoch (rest.h): the samples a first assignment read are worked out
 * exactly, a second reads only the others in that epoch, resumes inside that rest, and a
 * third change adds its reads to the set.
 * Stream mode: a rank whose shards arrive while it reads (a fetch callback standing in for
 * the worker copies each from the full dataset) delivers the same batches, byte for byte,
 * hints each missing shard fetch_ahead steps before the step that first reads it, waits only
 * for shards not there, never asks for one that was, and fails with the callback's error.
 *
 * Dataset (dataset.h): six train shards 0-5 and one val shard 6 of 85 tokens, so 10 samples
 * of T + 1 = 9 tokens each; token i of shard s is s * 100000 + i.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "sharding/loader.h"
#include "sharding/planfile.h"
#include "sharding/rest.h"

#define T 8
#define NTRAIN 6

static char dir[4096];
static char part[4096]; /* stream mode's node cache, when a test made one */
static struct shard_manifest *manifest;
static struct gs_error err;

static void setup(void)
{
    ds_tmpdir(dir, sizeof(dir));
    ds_make(dir, NTRAIN, 1, 85);
    manifest = ds_load(dir);
    part[0] = '\0';
}

static void teardown(void)
{
    shard_manifest_free(manifest);
    ds_rmdir(dir);
    if (part[0] != '\0')
        ds_rmdir(part);
}

TestSuite(loader_plan, .init = setup, .fini = teardown);

/* A plan for the dataset: ranks on nodes as given, node k holding holds[k]. */
static struct shard_planfile *plan_of(const char *ranks, const char *holds0, const char *holds1,
                                      double tolerance)
{
    char id[SHARD_DATASET_ID_SIZE], path[4200];
    struct shard_planfile *pf = NULL;
    FILE *f;

    cr_assert_eq(shard_dataset_id(dir, id, &err), 0, "%s", err.msg);
    snprintf(path, sizeof(path), "%s/plan.toml", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "format = 1\ndataset = \"%s\"\nseed = 3\ntolerance = %g\nranks = %s\n"
            "[[node]]\nname = \"n0\"\nholds = \"%s\"\n[[node]]\nname = \"n1\"\nholds = \"%s\"\n",
            id, tolerance, ranks, holds0, holds1);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(shard_planfile_read(path, &pf, &err), 0, "%s", err.msg);
    unlink(path);
    return pf;
}

/* Two ranks, one per node; node 0 holds shards 0-2, node 1 shards 3-5; both the val shard. */
static struct shard_planfile *halves(void)
{
    return plan_of("[0, 1]", "0-2,6", "3-6", 0.05);
}

static struct shard_loader_config config(const struct shard_planfile *pf, uint32_t gb,
                                         uint32_t rank, uint32_t world)
{
    return (struct shard_loader_config){.manifest = manifest,
                                        .split = SHARD_SPLIT_TRAIN,
                                        .seq_len = T,
                                        .global_batch = gb,
                                        .rank = rank,
                                        .world = world,
                                        .seed = 1234,
                                        .prefetch = 3,
                                        .plan = pf};
}

static struct shard_loader *start(const struct shard_loader_config *cfg)
{
    struct shard_loader *l = NULL;

    cr_assert_eq(shard_loader_new(cfg, &l, &err), 0, "%s", err.msg);
    return l;
}

/* The global sample id (shard * 10 + window) of a window starting with token first. */
static unsigned sample_of(int32_t first)
{
    unsigned shard = (unsigned)first / 100000, offset = (unsigned)first % 100000;

    cr_assert_eq(offset % T, 0, "windows start every T tokens (token %d)", first);
    return shard * 10 + offset / T;
}

/* steps batches of the loader: sample ids into ids (steps x per), positions checked. */
static void read_ids(struct shard_loader *l, unsigned steps, uint32_t per, unsigned *ids,
                     struct shard_loader_batch *last)
{
    struct shard_loader_batch b;

    for (unsigned s = 0; s < steps; s++) {
        cr_assert_eq(shard_loader_next(l, &b, &err), 0, "%s", err.msg);
        cr_assert_eq(b.samples, per);
        for (uint32_t j = 0; j < per; j++) {
            const int32_t *in = b.inputs + (size_t)j * T, *tg = b.targets + (size_t)j * T;

            cr_assert_eq(tg[0], in[0] + 1, "targets are the inputs shifted by one");
            ids[s * per + j] = sample_of(in[0]);
        }
    }
    if (last != NULL)
        *last = b;
}

Test(loader_plan, ranks_read_their_own_shards_and_together_every_sample_once)
{
    struct shard_planfile *pf = halves();
    unsigned seen[NTRAIN * 10] = {0}, ids[15 * 2];
    struct shard_loader_info info[2];

    for (uint32_t r = 0; r < 2; r++) {
        struct shard_loader_config cfg = config(pf, 4, r, 2);
        struct shard_loader *l = start(&cfg);
        struct shard_loader_batch b;

        shard_loader_info(l, &info[r]);
        cr_expect_eq(info[r].shards, 3);
        cr_expect_eq(info[r].local_shards, 3, "each shard is on its reader's node");
        cr_expect_eq(info[r].samples, 30);
        cr_expect_eq(shard_loader_samples(l), 30);
        cr_expect_eq(info[r].steps_per_epoch, 15, "30 samples, 2 a step");
        cr_expect_neq(info[r].digest, 0);
        cr_expect_eq(info[r].moved, false);
        read_ids(l, 15, 2, ids, &b);
        cr_expect_eq(b.next_epoch, 1, "the 15th step ends the epoch");
        cr_expect_eq(b.next_sample, 0);
        for (unsigned i = 0; i < 30; i++) {
            cr_expect_eq(ids[i] / 30, r, "rank %u read sample %u of another rank's shard", r,
                         ids[i]);
            cr_expect_eq(seen[ids[i]]++, 0, "sample %u twice", ids[i]);
        }
        cr_assert_eq(shard_loader_next(l, &b, &err), 0, "%s", err.msg);
        cr_expect_eq(b.epoch, 1);
        cr_expect_eq(b.sample, 0);
        shard_loader_free(l);
    }
    for (unsigned i = 0; i < NTRAIN * 10; i++)
        cr_expect_eq(seen[i], 1, "sample %u read %u times in the epoch", i, seen[i]);
    cr_expect_eq(info[0].digest, info[1].digest, "one assignment, one digest");
    shard_planfile_free(pf);
}

Test(loader_plan, every_rank_takes_the_steps_of_the_smallest)
{
    /* With a wide band nothing moves: rank 0 reads shards 0-3 (40 samples), rank 1 shards 4-5
     * (20). At 3 samples a rank a step, both ranks have floor(20 / 3) = 6 steps an epoch. */
    struct shard_planfile *pf = plan_of("[0, 1]", "0-3", "4-6", 1.0);

    for (uint32_t r = 0; r < 2; r++) {
        struct shard_loader_config cfg = config(pf, 6, r, 2);
        struct shard_loader *l = start(&cfg);
        struct shard_loader_info info;
        struct shard_loader_batch b;
        unsigned ids[6 * 3];

        shard_loader_info(l, &info);
        cr_expect_eq(info.samples, r == 0 ? 40 : 20);
        cr_expect_eq(info.steps_per_epoch, 6, "rank %u", r);
        read_ids(l, 6, 3, ids, &b);
        cr_expect_eq(b.sample, 30, "the 6th step starts at global sample 5 x 6");
        cr_expect_eq(b.next_epoch, 1, "rank %u: the epoch ends after 6 steps", r);
        cr_assert_eq(shard_loader_next(l, &b, &err), 0, "%s", err.msg);
        cr_expect_eq(b.epoch, 1);
        shard_loader_free(l);
    }
    shard_planfile_free(pf);
}

Test(loader_plan, the_order_is_a_function_of_seed_epoch_and_rank)
{
    struct shard_planfile *pf = halves();
    struct shard_loader_config cfg = config(pf, 4, 0, 2);
    unsigned a[30 * 2], b[30 * 2], c[30];
    struct shard_loader *l = start(&cfg);

    read_ids(l, 30, 2, a, NULL); /* two epochs */
    shard_loader_free(l);
    l = start(&cfg);
    read_ids(l, 30, 2, b, NULL);
    shard_loader_free(l);
    cr_expect_eq(memcmp(a, b, sizeof(a)), 0, "the same configuration: the same batches");
    cr_expect_neq(memcmp(a, a + 30, 30 * sizeof(*a)), 0, "epoch 1 in another order");
    cfg.seed = 99;
    l = start(&cfg);
    read_ids(l, 15, 2, c, NULL);
    shard_loader_free(l);
    cr_expect_neq(memcmp(a, c, sizeof(c)), 0, "another seed: another order");
    shard_planfile_free(pf);
}

Test(loader_plan, rank_permutations_differ_by_rank_and_are_permutations)
{
    uint64_t a[100], b[100];
    unsigned char seen[100] = {0};

    shard_loader_rank_permutation(5, 2, 0, 100, a);
    shard_loader_rank_permutation(5, 2, 1, 100, b);
    cr_expect_neq(memcmp(a, b, sizeof(a)), 0);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(seen[a[i]]++, 0);
    shard_loader_rank_permutation(5, 2, 0, 100, b);
    cr_expect_eq(memcmp(a, b, sizeof(a)), 0);
}

Test(loader_plan, resuming_at_a_position_with_the_same_plan_is_exact)
{
    enum { BEFORE = 12, AFTER = 8, PER = 2 }; /* crosses the end of epoch 0 at 15 */
    struct shard_planfile *pf = halves();

    for (uint32_t r = 0; r < 2; r++) {
        struct shard_loader_config cfg = config(pf, 2 * PER, r, 2);
        struct shard_loader *l = start(&cfg);
        struct shard_loader_batch b;
        struct shard_loader_info info;
        unsigned straight[(BEFORE + AFTER) * PER], resumed[AFTER * PER];

        shard_loader_info(l, &info);
        read_ids(l, BEFORE, PER, straight, &b);
        read_ids(l, AFTER, PER, straight + BEFORE * PER, NULL);
        shard_loader_free(l);
        cr_expect_eq(b.next_epoch, 0);
        cr_expect_eq(b.next_sample, BEFORE * 2 * PER, "global samples consumed");
        cfg.epoch = b.next_epoch;
        cfg.sample = b.next_sample;
        cfg.position_digest = info.digest;
        l = start(&cfg);
        shard_loader_info(l, &info);
        cr_expect_eq(info.moved, false);
        read_ids(l, AFTER, PER, resumed, NULL);
        shard_loader_free(l);
        cr_expect_eq(memcmp(resumed, straight + BEFORE * PER, sizeof(resumed)), 0, "rank %u", r);
    }
    shard_planfile_free(pf);
}

Test(loader_plan, another_assignment_resumes_at_the_next_epoch)
{
    struct shard_planfile *pf = halves();
    struct shard_loader_config cfg = config(pf, 4, 1, 2);
    struct shard_loader *l = start(&cfg);
    struct shard_loader_info info;
    struct shard_loader_batch b;
    uint64_t digest;

    shard_loader_info(l, &info);
    digest = info.digest;
    shard_loader_free(l);
    cfg.epoch = 3;
    cfg.sample = 8;
    cfg.position_digest = digest ^ 1;
    l = start(&cfg);
    shard_loader_info(l, &info);
    cr_expect_eq(info.moved, true);
    cr_expect_eq(info.epoch, 4);
    cr_expect_eq(info.sample, 0);
    cr_assert_eq(shard_loader_next(l, &b, &err), 0, "%s", err.msg);
    cr_expect_eq(b.epoch, 4);
    cr_expect_eq(b.sample, 0);
    shard_loader_free(l);
    /* At an epoch's start nothing is lost: it stays. */
    cfg.sample = 0;
    l = start(&cfg);
    shard_loader_info(l, &info);
    cr_expect_eq(info.moved, false);
    cr_expect_eq(info.epoch, 3);
    shard_loader_free(l);
    /* A checkpoint from a run without a plan (digest 0) resumed with one, and back. */
    cfg.sample = 8;
    cfg.position_digest = 0;
    l = start(&cfg);
    shard_loader_info(l, &info);
    cr_expect_eq(info.moved, true);
    shard_loader_free(l);
    cfg.plan = NULL;
    cfg.rank = 0;
    cfg.world = 1;
    cfg.position_digest = digest;
    l = start(&cfg);
    shard_loader_info(l, &info);
    cr_expect_eq(info.digest, 0);
    cr_expect_eq(info.moved, true);
    cr_expect_eq(info.epoch, 4);
    shard_loader_free(l);
    shard_planfile_free(pf);
}

Test(loader_plan, the_digest_follows_the_assignment_not_the_file)
{
    struct shard_planfile *a = halves(), *b = plan_of("[0, 1]", "0-2", "3-5", 0.05);
    struct shard_planfile *swapped = plan_of("[1, 0]", "0-2,6", "3-6", 0.05);
    struct shard_loader_info ia, ib, is;
    struct shard_loader_config cfg = config(a, 4, 0, 2);
    struct shard_loader *l = start(&cfg);

    shard_loader_info(l, &ia);
    shard_loader_free(l);
    cfg.plan = b;
    l = start(&cfg);
    shard_loader_info(l, &ib);
    shard_loader_free(l);
    cfg.plan = swapped;
    l = start(&cfg);
    shard_loader_info(l, &is);
    shard_loader_free(l);
    cr_expect_eq(ia.digest, ib.digest, "val holdings do not change the train assignment");
    cr_expect_neq(ia.digest, is.digest, "rank 0 now reads shards 3-5");
    shard_planfile_free(a);
    shard_planfile_free(b);
    shard_planfile_free(swapped);
}

/* Removes dir's shard file of manifest shard i. */
static void remove_shard(size_t i)
{
    cr_assert_eq(unlink(manifest->shards[i].path), 0, "%s", manifest->shards[i].path);
}

Test(loader_plan, a_rank_needs_only_its_own_shard_files)
{
    struct shard_planfile *pf = halves();
    struct shard_loader_config cfg = config(pf, 4, 0, 2);
    struct shard_loader *l;
    struct shard_loader_batch b;
    struct shard_manifest *partial = NULL;

    /* Node 0's cache: shards 0-2 and the val shard; the manifest read without opening any. */
    for (size_t i = 3; i < NTRAIN; i++)
        remove_shard(i);
    cr_assert_eq(shard_manifest_read(dir, &partial, &err), 0, "%s", err.msg);
    cfg.manifest = partial;
    l = start(&cfg);
    for (int s = 0; s < 20; s++)
        cr_assert_eq(shard_loader_next(l, &b, &err), 0, "%s", err.msg);
    shard_loader_free(l);
    /* Rank 1 lives on node 1: its shards are not here, and it says which. */
    cfg.rank = 1;
    cr_expect_eq(shard_loader_new(&cfg, &l, &err), -ENOENT);
    cr_expect_not_null(strstr(err.msg, "train-00003.bin"), "%s", err.msg);
    /* The val pass opens only val shards, plan or not. */
    cfg.split = SHARD_SPLIT_VAL;
    l = start(&cfg);
    cr_assert_eq(shard_loader_next(l, &b, &err), 0, "%s", err.msg);
    cr_expect_eq(b.samples, 2);
    cr_expect_eq(sample_of(b.inputs[0]), 60 + 2, "val is the sequential pass: rank 1's half");
    shard_loader_free(l);
    shard_manifest_free(partial);
    shard_planfile_free(pf);
}

Test(loader_plan, the_world_must_be_the_plans)
{
    struct shard_planfile *pf = halves();
    struct shard_loader_config cfg = config(pf, 4, 0, 1);
    struct shard_loader *l = NULL;

    cr_expect_eq(shard_loader_new(&cfg, &l, &err), -EINVAL);
    cr_expect_not_null(strstr(err.msg, "world 1 is not the data plan's 2 ranks"), "%s", err.msg);
    cfg = config(pf, 4, 0, 4);
    cr_expect_eq(shard_loader_new(&cfg, &l, &err), -EINVAL);
    cr_expect_not_null(strstr(err.msg, "world 4 is not the data plan's 2 ranks"), "%s", err.msg);
    cr_expect_null(l);
    shard_planfile_free(pf);
}

Test(loader_plan, a_rank_with_less_than_a_step_is_refused)
{
    /* Four ranks on two nodes share six shards: some rank has one shard, 10 samples. */
    struct shard_planfile *pf = plan_of("[0, 0, 1, 1]", "0-2", "3-5", 0.05);
    struct shard_loader_config cfg = config(pf, 4 * 11, 2, 4);
    struct shard_loader *l = NULL;

    cr_expect_eq(shard_loader_new(&cfg, &l, &err), -EINVAL);
    cr_expect_not_null(strstr(err.msg, "fewer than the 11 a step takes on each rank"), "%s",
                       err.msg);
    cr_expect_null(l);
    cfg = config(pf, 4 * 10, 2, 4);
    l = start(&cfg);
    shard_loader_free(l);
    shard_planfile_free(pf);
}

Test(loader_plan, a_position_past_the_epoch_is_refused)
{
    struct shard_planfile *pf = halves();
    struct shard_loader_config cfg = config(pf, 4, 0, 2);
    struct shard_loader *l = NULL;
    struct shard_loader_info info;

    l = start(&cfg);
    shard_loader_info(l, &info);
    shard_loader_free(l);
    l = NULL;
    cfg.position_digest = info.digest;
    cfg.sample = 62; /* 60 global samples an epoch */
    cr_expect_eq(shard_loader_new(&cfg, &l, &err), -EINVAL);
    cr_expect_not_null(strstr(err.msg, "past the 60 samples"), "%s", err.msg);
    cfg.sample = 7;
    cr_expect_eq(shard_loader_new(&cfg, &l, &err), -EINVAL);
    cr_expect_not_null(strstr(err.msg, "does not divide by world 2"), "%s", err.msg);
    cr_expect_null(l);
    shard_planfile_free(pf);
}

/* --- stream mode --- */

/* Copies file name from src to dst (a directory) through a temporary file and a rename, as
 * the worker puts a shard in place. */
static void copy_in(const char *src, const char *dst, const char *name)
{
    char from[4200], tmp[4200], to[4200], buf[4096];
    FILE *in, *out;
    size_t n;

    snprintf(from, sizeof(from), "%s/%s", src, name);
    snprintf(tmp, sizeof(tmp), "%s/%s.part", dst, name);
    snprintf(to, sizeof(to), "%s/%s", dst, name);
    in = fopen(from, "rb");
    out = fopen(tmp, "wb");
    cr_assert(in != NULL && out != NULL, "%s -> %s", from, tmp);
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        cr_assert_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    cr_assert_eq(fclose(out), 0);
    cr_assert_eq(rename(tmp, to), 0, "%s", to);
}

/* A node's cache of the dataset in part: its manifest.toml and the train shards of keep
 * (manifest indices, nkeep of them), no val shard; its manifest read without opening any. */
static struct shard_manifest *cache_of(const unsigned *keep, size_t nkeep)
{
    struct shard_manifest *m = NULL;

    ds_tmpdir(part, sizeof(part));
    copy_in(dir, part, SHARD_MANIFEST_FILE);
    for (size_t k = 0; k < nkeep; k++)
        copy_in(dir, part, manifest->shards[keep[k]].file);
    cr_assert_eq(shard_manifest_read(part, &m, &err), 0, "%s", err.msg);
    return m;
}

/* The worker, as the loader sees it: what was asked, on which step. */
struct fetcher {
    const struct shard_manifest *cache;
    bool copy_on_hint; /* a quick worker: the file is in place once hinted */
    int fail_rc;       /* wait=true for shard fail_index returns this, when not 0 */
    uint32_t fail_index;
    const char *fail_msg; /* the callback's err; NULL leaves it empty */
    atomic_uint filling;  /* the step the consumer waits for: with prefetch 1, the one filled */
    unsigned ncalls;
    struct call {
        uint32_t index;
        bool wait;
        unsigned step;
    } calls[64];
    unsigned nopens; /* the reader's on_open reports */
    struct shard_loader_open opens[64];
};

static void open_cb(const struct shard_loader_open *o, void *data)
{
    struct fetcher *f = data;

    cr_assert_lt(f->nopens, 64);
    f->opens[f->nopens++] = *o;
}

static int fetch_cb(uint32_t index, bool wait, struct gs_error *e, void *data)
{
    struct fetcher *f = data;

    cr_assert_lt(f->ncalls, 64);
    f->calls[f->ncalls++] = (struct call){index, wait, atomic_load(&f->filling)};
    if (wait && f->fail_rc != 0 && index == f->fail_index) {
        if (f->fail_msg != NULL)
            gs_error_set(e, f->fail_rc, 0, 0, "%s", f->fail_msg);
        return f->fail_rc;
    }
    if (wait || f->copy_on_hint)
        copy_in(dir, part, f->cache->shards[index].file);
    return 0;
}

/* steps batches' tokens, each step's inputs then targets, into out; f->filling follows. */
static void read_tokens(struct shard_loader *l, unsigned steps, uint32_t per, int32_t *out,
                        struct fetcher *f)
{
    size_t n = (size_t)per * T;
    struct shard_loader_batch b;

    for (unsigned s = 0; s < steps; s++) {
        if (f != NULL)
            atomic_store(&f->filling, s);
        cr_assert_eq(shard_loader_next(l, &b, &err), 0, "step %u: %s", s, err.msg);
        cr_assert_eq(b.samples, per);
        memcpy(out + 2 * n * s, b.inputs, n * sizeof(*out));
        memcpy(out + 2 * n * s + n, b.targets, n * sizeof(*out));
    }
}

/* The first step (of steps) that reads each train shard in tokens (read_tokens'), or UINT_MAX. */
static void first_steps(const int32_t *tokens, unsigned steps, uint32_t per, unsigned *first)
{
    for (unsigned i = 0; i < NTRAIN; i++)
        first[i] = UINT_MAX;
    for (unsigned s = steps; s-- > 0;) {
        for (uint32_t j = 0; j < per; j++)
            first[tokens[2 * (size_t)per * T * s + (size_t)j * T] / 100000] = s;
    }
}

/*
 * Streams steps steps of cfg (prefetch 1) from a cache holding the train shards of keep, and
 * checks them against the same loader reading dir: the same bytes; calls only for shards
 * the cache lacked; each one read hinted once, on the step fetch_ahead before the one that
 * first reads it (at the start for the first steps' shards), before its one wait on that
 * step; one open report for each, saying whether it waited. Returns the loader's info; *f
 * gets the calls.
 */
static struct shard_loader_info stream_and_compare(struct shard_loader_config cfg, unsigned steps,
                                                   const unsigned *keep, size_t nkeep,
                                                   struct fetcher *f)
{
    uint32_t per = cfg.global_batch / cfg.world, ahead = cfg.fetch_ahead ? cfg.fetch_ahead : 2;
    size_t len = 2 * (size_t)per * T * steps;
    int32_t *want = calloc(len, sizeof(*want)), *got = calloc(len, sizeof(*got));
    struct shard_manifest *cache = cache_of(keep, nkeep);
    unsigned first[NTRAIN], waits = 0, absent = 0;
    struct shard_loader_info info;
    struct shard_loader *l;

    cr_assert(want != NULL && got != NULL);
    cfg.prefetch = 1;
    l = start(&cfg);
    read_tokens(l, steps, per, want, NULL);
    shard_loader_free(l);
    first_steps(want, steps, per, first);

    f->cache = cache;
    cfg.manifest = cache;
    cfg.fetch = fetch_cb;
    cfg.fetch_data = f;
    cfg.on_open = open_cb;
    cfg.fill_data = f;
    l = start(&cfg);
    read_tokens(l, steps, per, got, f);
    shard_loader_info(l, &info);
    shard_loader_free(l);
    cr_expect_eq(memcmp(want, got, len * sizeof(*got)), 0, "streamed batches differ");

    for (unsigned c = 0; c < f->ncalls; c++) {
        const struct call *k = &f->calls[c];
        unsigned expect = first[k->index] > ahead ? first[k->index] - ahead : 0;

        for (size_t i = 0; i < nkeep; i++)
            cr_expect_neq(k->index, keep[i], "shard %u was there, yet fetched", k->index);
        if (k->wait) {
            waits++;
            cr_expect_eq(k->step, first[k->index], "shard %u waited for on step %u", k->index,
                         k->step);
            continue;
        }
        if (first[k->index] == UINT_MAX) /* first read after the steps run */
            cr_expect_geq(k->step + ahead, steps, "shard %u hinted on step %u", k->index, k->step);
        else
            cr_expect_eq(k->step, expect, "shard %u (first read on step %u) hinted on step %u",
                         k->index, first[k->index], k->step);
        for (unsigned d = 0; d < c; d++)
            cr_expect_neq(f->calls[d].index, k->index, "shard %u hinted twice or late", k->index);
    }
    for (unsigned i = 0; i < NTRAIN; i++) {
        bool held = false, hinted = false, waited = false;

        for (size_t j = 0; j < nkeep; j++)
            held |= keep[j] == i;
        for (unsigned c = 0; c < f->ncalls; c++) {
            if (f->calls[c].index == i) {
                cr_expect(!waited, "shard %u: a call after its wait", i);
                hinted |= !f->calls[c].wait;
                waited |= f->calls[c].wait;
            }
        }
        if (held || first[i] == UINT_MAX)
            continue;
        absent++;
        cr_expect(hinted, "shard %u read on step %u without a hint", i, first[i]);
        cr_expect(waited || f->copy_on_hint, "shard %u read without its file", i);
    }
    cr_expect_eq(info.fetch_waits, waits);
    cr_expect_eq(info.fetched_shards, absent);
    cr_expect_eq(f->nopens, absent, "one open report a streamed shard");
    for (unsigned o = 0; o < f->nopens; o++) {
        const struct shard_loader_open *x = &f->opens[o];
        bool waited = false;

        for (unsigned c = 0; c < f->ncalls; c++)
            waited |= f->calls[c].index == x->shard && f->calls[c].wait;
        cr_expect_eq(x->waited, waited, "shard %u: waited %d", x->shard, x->waited);
        cr_expect_leq(x->start_ns, x->end_ns);
        for (unsigned p = 0; p < o; p++)
            cr_expect_neq(f->opens[p].shard, x->shard, "shard %u opened twice", x->shard);
    }
    cr_expect_eq(info.fetch_wait_ns > 0, waits > 0);
    shard_manifest_free(cache);
    free(want);
    free(got);
    return info;
}

/* One rank reading all six train shards, a sample a step: shards first read on many steps. */
static struct shard_planfile *one_rank(void)
{
    return plan_of("[0]", "0-6", "", 0.05);
}

Test(loader_plan, streamed_shards_give_the_same_batches_hinted_ahead)
{
    struct shard_planfile *pf = one_rank();
    const unsigned keep[] = {2};

    for (uint32_t ahead = 1; ahead <= 4; ahead += 3) {
        struct fetcher f = {0};
        struct shard_loader_config cfg = config(pf, 1, 0, 1);
        struct shard_loader_info info;

        cfg.fetch_ahead = ahead;
        info = stream_and_compare(cfg, 60, keep, 1, &f);
        cr_expect_eq(info.shards, NTRAIN);
        cr_expect_eq(info.absent_shards, NTRAIN - 1, "all but shard 2 streamed");
        cr_expect_eq(info.fetch_waits, NTRAIN - 1);
        ds_rmdir(part);
        part[0] = '\0';
    }
    shard_planfile_free(pf);
}

Test(loader_plan, two_ranks_stream_their_own_shards_only)
{
    struct shard_planfile *pf = halves();
    const unsigned keep[] = {1, 4};

    for (uint32_t r = 0; r < 2; r++) {
        struct fetcher f = {0};
        struct shard_loader_info info = stream_and_compare(config(pf, 4, r, 2), 20, keep, 2, &f);

        cr_expect_eq(info.absent_shards, 2, "rank %u: two of its three shards streamed", r);
        for (unsigned c = 0; c < f.ncalls; c++)
            cr_expect_eq(f.calls[c].index / 3, r, "rank %u asked for shard %u", r,
                         f.calls[c].index);
        ds_rmdir(part);
        part[0] = '\0';
    }
    shard_planfile_free(pf);
}

Test(loader_plan, hints_cross_into_the_next_epoch)
{
    /* Resumed at the epoch's last step: the hints ahead are the next epoch's order. */
    struct shard_planfile *pf = one_rank();
    struct shard_loader_config cfg = config(pf, 1, 0, 1);
    struct shard_loader *l = start(&cfg);
    struct shard_loader_info info;
    struct fetcher f;

    shard_loader_info(l, &info);
    shard_loader_free(l);
    cfg.epoch = 2;
    cfg.position_digest = info.digest;
    for (cfg.sample = 56; cfg.sample < 60; cfg.sample++) {
        for (cfg.fetch_ahead = 3; cfg.fetch_ahead <= 6; cfg.fetch_ahead += 3) {
            f = (struct fetcher){0};
            info = stream_and_compare(cfg, 30, NULL, 0, &f);
            cr_expect_eq(info.moved, false);
            cr_expect_eq(info.absent_shards, NTRAIN);
            ds_rmdir(part);
            part[0] = '\0';
        }
    }
    shard_planfile_free(pf);
}

Test(loader_plan, a_shard_that_arrives_after_its_hint_is_read_without_waiting)
{
    struct shard_planfile *pf = one_rank();
    struct fetcher f = {.copy_on_hint = true};
    struct shard_loader_info info = stream_and_compare(config(pf, 1, 0, 1), 60, NULL, 0, &f);

    cr_expect_eq(info.fetch_waits, 0);
    cr_expect_eq(info.fetch_wait_ns, 0);
    cr_expect_eq(info.fetched_shards, NTRAIN);
    cr_expect_eq(f.ncalls, NTRAIN, "one hint a shard, nothing else");
    shard_planfile_free(pf);
}

/* Streams cfg from a cache without train shards until the reader fails; returns its error. */
static int stream_until_error(struct shard_loader_config cfg, struct fetcher *f)
{
    struct shard_manifest *cache = cache_of(NULL, 0);
    struct shard_loader_batch b;
    struct shard_loader *l;
    int rc = 0;

    f->cache = cache;
    cfg.manifest = cache;
    cfg.fetch = fetch_cb;
    cfg.fetch_data = f;
    l = start(&cfg);
    for (int s = 0; s < 100 && rc == 0; s++)
        rc = shard_loader_next(l, &b, &err);
    cr_expect_eq(shard_loader_next(l, &b, &err), rc, "the error again on the next call");
    shard_loader_free(l);
    shard_manifest_free(cache);
    return rc;
}

Test(loader_plan, a_fetch_error_ends_the_reader_with_it)
{
    struct shard_planfile *pf = one_rank();
    struct fetcher f = {.fail_rc = -ETIMEDOUT, .fail_index = 3, .fail_msg = "shard 3 never came"};

    cr_expect_eq(stream_until_error(config(pf, 1, 0, 1), &f), -ETIMEDOUT);
    cr_expect_str_eq(err.msg, "shard 3 never came");
    cr_expect(f.ncalls > 0 && f.calls[f.ncalls - 1].index == 3 && f.calls[f.ncalls - 1].wait,
              "the reader stops at the failed wait");
    ds_rmdir(part);
    /* A callback that says nothing: the loader names the shard. */
    f = (struct fetcher){.fail_rc = -EIO, .fail_index = 5};
    cr_expect_eq(stream_until_error(config(pf, 1, 0, 1), &f), -EIO);
    cr_expect_not_null(strstr(err.msg, "train-00005.bin"), "%s", err.msg);
    shard_planfile_free(pf);
}

/* A worker that says the shard is there when it is not. */
static int lying_fetch(uint32_t index, bool wait, struct gs_error *e, void *data)
{
    (void)index;
    (void)wait;
    (void)e;
    (void)data;
    return 0;
}

Test(loader_plan, a_shard_still_missing_after_its_fetch_is_an_error_naming_it)
{
    struct shard_planfile *pf = one_rank();
    struct shard_manifest *cache = cache_of(NULL, 0);
    struct shard_loader_config cfg = config(pf, 1, 0, 1);
    struct shard_loader_batch b;
    struct shard_loader *l;

    cfg.manifest = cache;
    cfg.fetch = lying_fetch;
    l = start(&cfg);
    cr_expect_eq(shard_loader_next(l, &b, &err), -ENOENT);
    cr_expect_not_null(strstr(err.msg, part), "%s", err.msg);
    shard_loader_free(l);
    /* Without a fetch callback nothing changes: a missing shard fails the start. */
    cfg.fetch = NULL;
    cr_expect_eq(shard_loader_new(&cfg, &l, &err), -ENOENT);
    /* Nor does the val loader stream: it needs its shards there. */
    cfg.fetch = lying_fetch;
    cfg.split = SHARD_SPLIT_VAL;
    cr_expect_eq(shard_loader_new(&cfg, &l, &err), -ENOENT);
    cr_expect_not_null(strstr(err.msg, "val-00006.bin"), "%s", err.msg);
    shard_manifest_free(cache);
    shard_planfile_free(pf);
}

/* --- the rest of an epoch after a change of assignment --- */

static bool has(const uint64_t *bits, unsigned id)
{
    return (bits[id / 64] >> (id % 64)) & 1;
}

static unsigned count_bits(const uint64_t *bits, uint64_t n)
{
    unsigned c = 0;

    for (uint64_t g = 0; g < n; g++)
        c += has(bits, (unsigned)g);
    return c;
}

Test(loader_plan, a_new_assignment_mid_epoch_reads_the_rest_of_that_epoch)
{
    enum { PER = 2, BEFORE = 5, IN_REST = 2 };
    struct shard_planfile *a = halves();
    /* Node 0 holds shards 0-3, node 1 shards 4-5; a wide band keeps them there (40 and 20). */
    struct shard_planfile *b = plan_of("[0, 1]", "0-3,6", "4-6", 1.0);
    unsigned first[2][BEFORE * PER], rest[2][40], again[40];
    uint64_t *done = NULL, *done2 = NULL, nbits = 0, digest_a, digest_b;
    struct shard_loader_info info[2];
    struct shard_loader_batch last;
    bool seen[60] = {false};

    for (uint32_t r = 0; r < 2; r++) { /* assignment a: five steps of 2 x 2 samples */
        struct shard_loader_config cfg = config(a, 2 * PER, r, 2);
        struct shard_loader *l = start(&cfg);

        shard_loader_info(l, &info[r]);
        read_ids(l, BEFORE, PER, first[r], &last);
        shard_loader_free(l);
    }
    digest_a = info[0].digest;
    cr_assert_eq(last.next_sample, BEFORE * 2 * PER);
    cr_assert_eq(
        shard_rest_consumed(manifest, a, T, 1234, 0, BEFORE * 2 * PER, NULL, &done, &nbits, &err),
        0, "%s", err.msg);
    cr_assert_eq(nbits, 60, "six train shards of 10 samples");
    cr_assert_eq(count_bits(done, nbits), 2 * BEFORE * PER, "exactly what was read");
    for (uint32_t r = 0; r < 2; r++) {
        for (unsigned i = 0; i < BEFORE * PER; i++) {
            cr_assert(has(done, first[r][i]), "sample %u read by rank %u", first[r][i], r);
            seen[first[r][i]] = true;
        }
    }
    for (uint32_t r = 0; r < 2; r++) { /* assignment b, from (0, 0) with those as read */
        struct shard_loader_config cfg = config(b, 2 * PER, r, 2);
        struct shard_loader *l;

        cfg.consumed = done;
        l = start(&cfg);
        shard_loader_info(l, &info[r]);
        cr_assert_eq(info[r].epoch, 0);
        cr_assert_gt(info[r].rest_steps, 0);
        read_ids(l, (unsigned)info[r].rest_steps, PER, rest[r], &last);
        cr_expect_eq(last.next_epoch, 1, "after the rest, the next epoch");
        cr_expect_eq(last.next_sample, 0);
        shard_loader_free(l);
    }
    digest_b = info[0].digest;
    cr_assert_neq(digest_a, digest_b, "another assignment");
    cr_assert_eq(info[0].rest_steps, info[1].rest_steps, "every rank takes the same steps");
    cr_expect_eq(info[0].rest_samples + info[1].rest_samples, 60 - 2 * BEFORE * PER);
    cr_expect_eq(info[0].rest_steps,
                 (info[0].rest_samples < info[1].rest_samples ? info[0].rest_samples
                                                              : info[1].rest_samples) /
                     PER);
    for (uint32_t r = 0; r < 2; r++) {
        for (unsigned i = 0; i < info[r].rest_steps * PER; i++) {
            cr_assert_not(seen[rest[r][i]], "sample %u read twice in epoch 0", rest[r][i]);
            seen[rest[r][i]] = true;
            cr_assert((r == 0) == (rest[r][i] < 40), "rank %u reads only its shards", r);
        }
    }
    { /* resumed inside the rest with the same assignment: where it left off */
        struct shard_loader_config cfg = config(b, 2 * PER, 0, 2);
        struct shard_loader *l;

        cfg.consumed = done;
        cfg.sample = IN_REST * 2 * PER;
        cfg.position_digest = digest_b;
        l = start(&cfg);
        read_ids(l, (unsigned)info[0].rest_steps - IN_REST, PER, again, NULL);
        shard_loader_free(l);
        cr_expect_eq(memcmp(again, rest[0] + IN_REST * PER,
                            (info[0].rest_steps - IN_REST) * PER * sizeof(unsigned)),
                     0);
    }
    /* A third change inside the rest: what b read is added to the set. */
    cr_assert_eq(
        shard_rest_consumed(manifest, b, T, 1234, 0, IN_REST * 2 * PER, done, &done2, &nbits, &err),
        0, "%s", err.msg);
    cr_expect_eq(count_bits(done2, nbits), 2 * BEFORE * PER + IN_REST * 2 * PER);
    for (uint32_t r = 0; r < 2; r++) {
        for (unsigned i = 0; i < IN_REST * PER; i++)
            cr_expect(has(done2, rest[r][i]));
    }
    free(done2);
    /* Positions no loader of that plan reached are refused. */
    cr_expect_eq(shard_rest_consumed(manifest, a, T, 1234, 0, 21, NULL, &done2, &nbits, &err),
                 -EINVAL);
    cr_expect(strstr(err.msg, "not one of the old plan's 2 ranks' positions") != NULL, "%s",
              err.msg);
    free(done);
    shard_planfile_free(a);
    shard_planfile_free(b);
}

Test(loader_plan, without_a_plan_the_first_positions_of_the_seeded_order_were_read)
{
    struct shard_loader_config cfg = config(NULL, 4, 0, 1);
    struct shard_loader *l = start(&cfg);
    unsigned ids[12];
    uint64_t *done = NULL, nbits = 0;

    read_ids(l, 3, 4, ids, NULL);
    shard_loader_free(l);
    cr_assert_eq(shard_rest_consumed(manifest, NULL, T, 1234, 0, 12, NULL, &done, &nbits, &err), 0,
                 "%s", err.msg);
    cr_expect_eq(count_bits(done, nbits), 12);
    for (unsigned i = 0; i < 12; i++)
        cr_expect(has(done, ids[i]), "sample %u", ids[i]);
    free(done);
}

Test(loader_plan, from_a_plan_to_none_mid_epoch_reads_the_rest_and_back_again)
{
    enum { PER = 2, BEFORE = 5, IN_REST = 3, LEFT = 60 - 2 * BEFORE * PER };
    struct shard_planfile *a = halves();
    unsigned first[2][BEFORE * PER], rest[2][LEFT / 2], again[LEFT / 2];
    uint64_t *done = NULL, *done2 = NULL, nbits = 0;
    struct shard_loader_info info;
    struct shard_loader_batch last;
    unsigned seen[60] = {0};

    for (uint32_t r = 0; r < 2; r++) { /* under plan a: five steps of 2 x 2 samples */
        struct shard_loader_config cfg = config(a, 2 * PER, r, 2);
        struct shard_loader *l = start(&cfg);

        read_ids(l, BEFORE, PER, first[r], NULL);
        shard_loader_free(l);
        for (unsigned i = 0; i < BEFORE * PER; i++)
            seen[first[r][i]]++;
    }
    cr_assert_eq(
        shard_rest_consumed(manifest, a, T, 1234, 0, BEFORE * 2 * PER, NULL, &done, &nbits, &err),
        0, "%s", err.msg);
    for (uint32_t r = 0; r < 2; r++) { /* then without a plan, from (0, 0) with those read */
        struct shard_loader_config cfg = config(NULL, 2 * PER, r, 2);
        struct shard_loader *l;

        cfg.consumed = done;
        l = start(&cfg);
        shard_loader_info(l, &info);
        cr_assert_eq(info.digest, 0);
        cr_assert_eq(info.epoch, 0);
        cr_assert_eq(info.rest_samples, LEFT, "every rank sees the whole rest");
        cr_assert_eq(info.rest_steps, LEFT / (2 * PER));
        read_ids(l, LEFT / (2 * PER), PER, rest[r], &last);
        cr_expect_eq(last.next_epoch, 1, "after the rest, the next epoch");
        cr_expect_eq(last.next_sample, 0);
        shard_loader_free(l);
        for (unsigned i = 0; i < LEFT / 2; i++)
            seen[rest[r][i]]++;
    }
    for (unsigned g = 0; g < 60; g++)
        cr_assert_eq(seen[g], 1, "sample %u read %u times in epoch 0", g, seen[g]);
    { /* resumed inside the rest, still without a plan: where it left off */
        struct shard_loader_config cfg = config(NULL, 2 * PER, 1, 2);
        struct shard_loader *l;

        cfg.consumed = done;
        cfg.sample = IN_REST * 2 * PER;
        l = start(&cfg);
        read_ids(l, LEFT / (2 * PER) - IN_REST, PER, again, NULL);
        shard_loader_free(l);
        cr_expect_eq(
            memcmp(again, rest[1] + IN_REST * PER, (LEFT / 2 - IN_REST * PER) * sizeof(unsigned)),
            0);
    }
    /* Back under a plan inside that rest: what the planless run read is added. */
    cr_assert_eq(shard_rest_consumed(manifest, NULL, T, 1234, 0, IN_REST * 2 * PER, done, &done2,
                                     &nbits, &err),
                 0, "%s", err.msg);
    cr_expect_eq(count_bits(done2, nbits), 2 * BEFORE * PER + IN_REST * 2 * PER);
    for (uint32_t r = 0; r < 2; r++) {
        for (unsigned i = 0; i < IN_REST * PER; i++)
            cr_expect(has(done2, rest[r][i]), "sample %u", rest[r][i]);
    }
    free(done2);
    cr_expect_eq(
        shard_rest_consumed(manifest, NULL, T, 1234, 0, LEFT + 4, done, &done2, &nbits, &err),
        -EINVAL, "past the rest");
    cr_expect(strstr(err.msg, "train samples the epoch had to read") != NULL, "%s", err.msg);
    free(done);
    shard_planfile_free(a);
}

Test(loader_plan, a_rest_of_less_than_a_step_moves_to_the_next_epoch)
{
    struct shard_planfile *pf = halves();
    struct shard_loader_config cfg = config(pf, 4, 0, 2);
    struct shard_loader *l;
    struct shard_loader_info info;
    uint64_t done[1] = {~UINT64_C(0) >> 4}; /* all 60 read: none left */

    cfg.consumed = done;
    cfg.epoch = 2;
    l = start(&cfg);
    shard_loader_info(l, &info);
    cr_expect_eq(info.rest_steps, 0);
    cr_expect_eq(info.epoch, 3);
    cr_expect_eq(info.sample, 0);
    shard_loader_free(l);
    shard_planfile_free(pf);
}
