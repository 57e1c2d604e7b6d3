/*
 * stage_copy.c: how fast a worker's shard cache fills (sharding/cache.h), one copy at a
 * time against K at once, as worker.data_copies runs them: K threads each take the next
 * shard, shard_cache_copy_run it (read, verify the CRC-32C and every id, fsync, rename),
 * the bookkeeping (stage_begin/stage_end) under a lock as the worker's loop would do it.
 * Both runs copy the same dataset from the same source into fresh caches in the same
 * process, so their ratio is what concurrency buys on this disk.
 *
 *     stage_copy DIR [SHARDS [TOKENS [K...]]]     defaults 256 65536 1 2 4
 *
 * DIR is scratch space (a source dataset and one cache per run are made under it, then
 * removed). Shards are u16, TOKENS tokens each (65,536: 128 KiB + 64 bytes). One line per
 * K: seconds, MiB/s, shards/s, and the speed relative to K = 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "sharding/cache.h"
#include "sharding/manifest.h"
#include "sharding/shard.h"

struct run {
    pthread_mutex_t lock;
    struct shard_cache *cache;
    const char *source;
    size_t ds, next, nshards;
    int rc;
};

static int make_source(const char *dir, size_t nshards, size_t tokens)
{
    struct shard_manifest *m = shard_manifest_new(dir);
    uint32_t *ids = malloc(tokens * sizeof(*ids));
    struct gs_error err = {0};
    uint64_t x = 88172645463325252ull;
    int rc = m != NULL && ids != NULL ? 0 : -ENOMEM;

    if (rc == 0 && mkdir(dir, 0755) < 0 && errno != EEXIST)
        rc = -errno;
    for (size_t s = 0; rc == 0 && s < nshards; s++) {
        struct shard_header h;
        char path[4400], file[64];

        for (size_t i = 0; i < tokens; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            ids[i] = (uint32_t)(x % 50257);
        }
        snprintf(file, sizeof(file), "train-%05zu.bin", s);
        snprintf(path, sizeof(path), "%.4200s/%s", dir, file);
        rc = shard_write(path, SHARD_U16, 50257, ids, tokens, &h, &err);
        if (rc == 0)
            rc = shard_manifest_add(m, file, SHARD_SPLIT_TRAIN, &h, &err);
    }
    if (rc == 0)
        rc = shard_manifest_write(m, &err);
    if (rc < 0)
        fprintf(stderr, "stage_copy: source: %s\n", err.msg[0] ? err.msg : strerror(-rc));
    shard_manifest_free(m);
    free(ids);
    return rc;
}

/* One copier: the next shard, begun and ended under the lock, copied outside it. */
static void *copier(void *arg)
{
    struct run *r = arg;

    for (;;) {
        struct shard_cache_copy job;
        struct shard_cache_dataset_info info;
        struct gs_error err = {0};
        char src[4200];
        size_t s;
        int rc;

        pthread_mutex_lock(&r->lock);
        s = r->next++;
        rc = s < r->nshards ? shard_cache_stage_begin(r->cache, r->ds, s, &job, &err) : 1;
        if (rc == 0)
            shard_cache_dataset(r->cache, r->ds, &info);
        pthread_mutex_unlock(&r->lock);
        if (rc != 0) {
            if (rc < 0)
                r->rc = rc;
            return NULL;
        }
        snprintf(src, sizeof(src), "%.4000s/%.150s", r->source, info.manifest->shards[s].file);
        job.source_path = src;
        rc = shard_cache_copy_run(&job, &err);
        pthread_mutex_lock(&r->lock);
        shard_cache_stage_end(r->cache, &job, rc);
        if (rc < 0)
            r->rc = rc;
        pthread_mutex_unlock(&r->lock);
        if (rc < 0)
            return NULL;
    }
}

static int run_k(const char *base, const char *source, size_t nshards, unsigned k, double *ret_s)
{
    struct run r = {.source = source, .nshards = nshards};
    struct gs_error err = {0};
    pthread_t t[64];
    char root[4300], cmd[4400];
    uint64_t t0;
    int rc;

    snprintf(root, sizeof(root), "%.4200s/cache-%u", base, k);
    pthread_mutex_init(&r.lock, NULL);
    rc = shard_cache_open(root, 0, &r.cache, &err);
    if (rc == 0)
        rc = shard_cache_add_dataset(r.cache, source, &r.ds, &err);
    if (rc < 0) {
        fprintf(stderr, "stage_copy: cache: %s\n", err.msg);
        goto out;
    }
    t0 = gs_clock_mono_ms();
    for (unsigned i = 0; i < k; i++)
        pthread_create(&t[i], NULL, copier, &r);
    for (unsigned i = 0; i < k; i++)
        pthread_join(t[i], NULL);
    *ret_s = (double)(gs_clock_mono_ms() - t0) / 1000.0;
    rc = r.rc;
out:
    shard_cache_close(r.cache);
    pthread_mutex_destroy(&r.lock);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "stage_copy: could not remove %s\n", root);
    return rc;
}

int main(int argc, char **argv)
{
    size_t nshards = argc > 2 ? strtoul(argv[2], NULL, 10) : 256;
    size_t tokens = argc > 3 ? strtoul(argv[3], NULL, 10) : 65536;
    unsigned ks[16] = {1, 2, 4};
    size_t nk = 3;
    char source[4200], cmd[4300];
    double base_s = 0;
    int rc;

    if (argc < 2 || nshards == 0 || tokens < 2) {
        fprintf(stderr, "usage: stage_copy DIR [SHARDS [TOKENS [K...]]]\n");
        return 2;
    }
    if (argc > 4) {
        nk = 0;
        for (int i = 4; i < argc && nk < 16; i++) {
            unsigned k = (unsigned)strtoul(argv[i], NULL, 10);

            if (k >= 1 && k <= 64)
                ks[nk++] = k;
        }
    }
    snprintf(source, sizeof(source), "%.4000s/source", argv[1]);
    rc = make_source(source, nshards, tokens);
    for (size_t i = 0; rc == 0 && i < nk; i++) {
        double s = 0, mib = (double)nshards * (64.0 + 2.0 * (double)tokens) / 1048576.0;

        rc = run_k(argv[1], source, nshards, ks[i], &s);
        if (rc < 0)
            break;
        if (i == 0)
            base_s = s;
        printf("copies=%u shards=%zu seconds=%.2f mib_s=%.1f shards_s=%.0f speed_vs_first=%.2f\n",
               ks[i], nshards, s, s > 0 ? mib / s : 0, s > 0 ? (double)nshards / s : 0,
               s > 0 ? base_s / s : 0);
    }
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", source);
    if (system(cmd) != 0)
        fprintf(stderr, "stage_copy: could not remove %s\n", source);
    return rc < 0 ? 1 : 0;
}
