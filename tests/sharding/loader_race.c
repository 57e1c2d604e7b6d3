/*
 * loader_race.c: the loader's two threads under stress, as a plain program (Criterion aborts
 * under ThreadSanitizer, and this test is meant to be built with -fsanitize=thread too).
 * A deep ring against a consumer that sometimes outruns and sometimes lags the reader must
 * deliver exactly what prefetch = 1 delivers; loaders freed at every stage of the reader's
 * work (waiting for a slot, mid-read, done) must shut down cleanly; a shard cut short while
 * the reader runs must come back as an error. Exit 0 when all holds, 1 otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sharding/loader.h"

#define T 16
#define SHARDS 4
#define TOKENS 4001
#define STEPS 300
#define GB 8

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "loader_race: " __VA_ARGS__);                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static int make_dataset(const char *dir)
{
    struct shard_manifest *m = shard_manifest_new(dir);
    uint32_t *ids = malloc(TOKENS * sizeof(*ids));
    struct shard_header h;
    struct gs_error err;
    int rc = m == NULL || ids == NULL ? -ENOMEM : 0;

    for (unsigned s = 0; rc == 0 && s < SHARDS; s++) {
        char file[32], path[4200];

        for (unsigned i = 0; i < TOKENS; i++)
            ids[i] = s * 10000 + i;
        snprintf(file, sizeof(file), "train-%05u.bin", s);
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        rc = shard_write(path, SHARD_U16, 65536, ids, TOKENS, &h, &err);
        if (rc == 0)
            rc = shard_manifest_add(m, file, SHARD_SPLIT_TRAIN, &h, &err);
    }
    if (rc == 0)
        rc = shard_manifest_write(m, &err);
    if (rc < 0)
        fprintf(stderr, "loader_race: dataset: %s\n", err.msg);
    shard_manifest_free(m);
    free(ids);
    return rc;
}

static struct shard_loader *start(const struct shard_manifest *m, uint32_t prefetch)
{
    struct shard_loader_config cfg = {.manifest = m,
                                      .seq_len = T,
                                      .global_batch = GB,
                                      .world = 1,
                                      .seed = 99,
                                      .prefetch = prefetch};
    struct shard_loader *l = NULL;
    struct gs_error err;

    if (shard_loader_new(&cfg, &l, &err) < 0)
        fprintf(stderr, "loader_race: %s\n", err.msg);
    return l;
}

static void pause_us(long us)
{
    struct timespec ts = {0, us * 1000};

    nanosleep(&ts, NULL);
}

/* STEPS batches' inputs into out; the consumer pauses now and then so the ring fills. */
static int read_all(struct shard_loader *l, int32_t *out, bool jitter)
{
    struct shard_loader_batch b;
    struct gs_error err;

    for (int s = 0; s < STEPS; s++) {
        if (shard_loader_next(l, &b, &err) < 0) {
            fprintf(stderr, "loader_race: step %d: %s\n", s, err.msg);
            return -1;
        }
        memcpy(out + (size_t)s * GB * T, b.inputs, sizeof(int32_t) * GB * T);
        if (jitter && s % 17 == 0)
            pause_us(300); /* not synchronisation: only a lagging consumer */
    }
    return 0;
}

static void same_data_as_prefetch_one(const struct shard_manifest *m)
{
    size_t n = (size_t)STEPS * GB * T;
    int32_t *one = malloc(n * sizeof(*one)), *deep = malloc(n * sizeof(*deep));
    struct shard_loader *l = start(m, 1);

    CHECK(l != NULL && read_all(l, one, false) == 0, "prefetch 1 read");
    shard_loader_free(l);
    for (int round = 0; round < 4; round++) {
        l = start(m, 6);
        CHECK(l != NULL && read_all(l, deep, round % 2 == 1) == 0, "prefetch 6 read");
        CHECK(memcmp(one, deep, n * sizeof(*one)) == 0, "round %d: prefetch 6 differs", round);
        shard_loader_free(l);
    }
    free(one);
    free(deep);
}

static void free_at_every_stage(const struct shard_manifest *m)
{
    for (int i = 0; i < 50; i++) {
        struct shard_loader *l = start(m, 1 + i % 4);
        struct shard_loader_batch b;

        CHECK(l != NULL, "start");
        for (int s = 0; l != NULL && s < i % 5; s++)
            CHECK(shard_loader_next(l, &b, NULL) == 0, "next");
        shard_loader_free(l);
    }
}

static void error_while_reading(const struct shard_manifest *m)
{
    struct shard_loader *l = start(m, 3);
    struct shard_loader_batch b;
    struct gs_error err;
    int rc = 0;

    if (l == NULL)
        return;
    for (unsigned s = 0; s < SHARDS; s++)
        CHECK(truncate(m->shards[s].path, SHARD_HEADER_SIZE) == 0, "truncate");
    for (int s = 0; s < STEPS && rc == 0; s++)
        rc = shard_loader_next(l, &b, &err);
    CHECK(rc == -EIO && strstr(err.msg, "train-0000") != NULL, "error %d: %s", rc,
          rc < 0 ? err.msg : "");
    shard_loader_free(l);
}

static void remove_dataset(const char *dir, const struct shard_manifest *m)
{
    char manifest[4200];

    for (size_t i = 0; i < m->nshards; i++)
        unlink(m->shards[i].path);
    snprintf(manifest, sizeof(manifest), "%s/%s", dir, SHARD_MANIFEST_FILE);
    unlink(manifest);
    rmdir(dir);
}

int main(void)
{
    char dir[] = "/tmp/gs-loader-race-XXXXXX";
    struct shard_manifest *m = NULL;
    struct gs_error err;

    if (mkdtemp(dir) == NULL || make_dataset(dir) < 0)
        return 1;
    if (shard_manifest_load(dir, &m, &err) < 0) {
        fprintf(stderr, "loader_race: %s\n", err.msg);
        return 1;
    }
    same_data_as_prefetch_one(m);
    free_at_every_stage(m);
    error_while_reading(m);
    remove_dataset(dir, m);
    shard_manifest_free(m);
    if (failures > 0)
        return 1;
    puts("loader_race: ok");
    return 0;
}
