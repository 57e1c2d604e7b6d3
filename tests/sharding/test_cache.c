/*
 * test_cache.c: the node-local shard cache (sharding/cache.h) on real files in a temporary
 * directory: dataset ids, the scan of a cache root after a restart, staging (copy, verify,
 * resume, rate limit, refusal of a damaged source), LRU trimming under a cap with pins,
 * eviction, the holdings bitmap and the generations a worker's reports follow.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dataset.h"
#include "sharding/cache.h"
#include "sharding/manifest.h"

#define TOKENS 1000                                  /* per shard of the small datasets */
#define SHARD_BYTES (SHARD_HEADER_SIZE + 4 * TOKENS) /* u32 tokens */
#define T0 UINT64_C(1700000000000)                   /* a wall-clock ms for touch */

static char base[4096];
static char src[4200];  /* a source dataset */
static char root[4200]; /* the cache root */

/* rm -r for the test's own trees (directories and plain files only). */
static void rm_tree(const char *path)
{
    struct stat st;
    DIR *d;
    struct dirent *e;
    char sub[8192];

    if (lstat(path, &st) < 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        unlink(path);
        return;
    }
    d = opendir(path);
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
        rm_tree(sub);
    }
    if (d != NULL)
        closedir(d);
    rmdir(path);
}

static void setup(void)
{
    ds_tmpdir(base, sizeof(base));
    snprintf(src, sizeof(src), "%s/src", base);
    snprintf(root, sizeof(root), "%s/cache", base);
    cr_assert_eq(mkdir(src, 0755), 0);
}

static void teardown(void)
{
    rm_tree(base);
}

TestSuite(shard_cache, .init = setup, .fini = teardown);

static bool exists(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0;
}

static uint64_t file_size(const char *path)
{
    struct stat st;

    cr_assert_eq(stat(path, &st), 0, "stat %s", path);
    return (uint64_t)st.st_size;
}

/* The whole file, malloc'd; *len its size. */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long n;

    cr_assert_not_null(f, "open %s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    rewind(f);
    buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Writes len bytes to path. */
static void spit(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");

    cr_assert_not_null(f, "create %s", path);
    cr_assert_eq(fwrite(buf, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

static struct shard_cache *open_cache(uint64_t cap)
{
    struct shard_cache *c = NULL;
    struct gs_error err;

    cr_assert_eq(shard_cache_open(root, cap, &c, &err), 0, "%s", err.msg);
    return c;
}

static size_t add(struct shard_cache *c, const char *dir)
{
    struct gs_error err;
    size_t ds = SIZE_MAX;

    cr_assert_eq(shard_cache_add_dataset(c, dir, &ds, &err), 0, "%s", err.msg);
    return ds;
}

/* The source file of shard i of the dataset in dir. */
static void source_of(const char *dir, size_t i, char *out, size_t size)
{
    struct shard_manifest *m = NULL;
    struct gs_error err;

    cr_assert_eq(shard_manifest_read(dir, &m, &err), 0, "%s", err.msg);
    snprintf(out, size, "%s", m->shards[i].path);
    shard_manifest_free(m);
}

/* Stages shard i from dir through the three steps; returns copy_run's job results. */
static struct shard_cache_copy stage(struct shard_cache *c, size_t ds, size_t i, const char *dir,
                                     uint64_t rate)
{
    struct shard_cache_copy job, seen;
    struct gs_error err;
    char path[8192];

    source_of(dir, i, path, sizeof(path));
    cr_assert_eq(shard_cache_stage_begin(c, ds, i, &job, &err), 0, "%s", err.msg);
    job.source_path = path;
    job.rate_bytes_per_s = rate;
    cr_assert_eq(shard_cache_copy_run(&job, &err), 0, "%s", err.msg);
    seen = job;
    seen.path = seen.part_path = NULL; /* freed by stage_end */
    shard_cache_stage_end(c, &job, 0);
    return seen;
}

/* The path of shard i in the cache's copy of dataset ds. */
static const char *cached_path(struct shard_cache *c, size_t ds, size_t i)
{
    struct shard_cache_dataset_info info;

    cr_assert_eq(shard_cache_dataset(c, ds, &info), 0);
    return info.manifest->shards[i].path;
}

static uint64_t generation_of(struct shard_cache *c, size_t ds)
{
    struct shard_cache_dataset_info info;

    cr_assert_eq(shard_cache_dataset(c, ds, &info), 0);
    return info.generation;
}

/* --- ids --- */

Test(shard_cache, dataset_id_is_stable_and_follows_the_manifest)
{
    char id1[SHARD_DATASET_ID_SIZE], id2[SHARD_DATASET_ID_SIZE], id3[SHARD_DATASET_ID_SIZE];
    char path[8192], other[8192];
    unsigned char *bytes;
    size_t len;
    struct gs_error err;

    ds_make(src, 2, 1, TOKENS);
    cr_assert_eq(shard_dataset_id(src, id1, &err), 0, "%s", err.msg);
    cr_assert_eq(shard_dataset_id(src, id2, &err), 0, "%s", err.msg);
    cr_expect_str_eq(id1, id2);
    cr_expect(shard_dataset_id_valid(id1));
    snprintf(path, sizeof(path), "%s/%s", src, SHARD_MANIFEST_FILE);
    bytes = slurp(path, &len);
    cr_assert_eq(shard_dataset_id_bytes(bytes, len, id3), 0);
    cr_expect_str_eq(id1, id3);
    /* SHA-256("abc") begins ba7816bf 8f01cfea 414140de 5dae2223. */
    cr_assert_eq(shard_dataset_id_bytes("abc", 3, id3), 0);
    cr_expect_str_eq(id3, "ba7816bf8f01cfea414140de5dae2223");

    snprintf(other, sizeof(other), "%s/other", base);
    cr_assert_eq(mkdir(other, 0755), 0);
    ds_make(other, 2, 2, TOKENS); /* one shard more: another manifest */
    cr_assert_eq(shard_dataset_id(other, id2, &err), 0, "%s", err.msg);
    cr_expect_str_neq(id1, id2);
    bytes[len - 1] ^= 1; /* any byte of the manifest changes the id */
    cr_assert_eq(shard_dataset_id_bytes(bytes, len, id3), 0);
    cr_expect_str_neq(id1, id3);
    free(bytes);
    cr_expect_eq(shard_dataset_id(base, id3, &err), -ENOENT);
}

Test(shard_cache, dataset_id_valid_takes_exactly_32_lowercase_hex_digits)
{
    cr_expect(shard_dataset_id_valid("0123456789abcdef0123456789abcdef"));
    cr_expect_not(shard_dataset_id_valid("0123456789ABCDEF0123456789abcdef"));
    cr_expect_not(shard_dataset_id_valid("0123456789abcdef0123456789abcde"));
    cr_expect_not(shard_dataset_id_valid("0123456789abcdef0123456789abcdef0"));
    cr_expect_not(shard_dataset_id_valid("0123456789abcdef0123456789abcdeg"));
    cr_expect_not(shard_dataset_id_valid(""));
    cr_expect_not(shard_dataset_id_valid(NULL));
}

/* --- open and add --- */

Test(shard_cache, open_creates_a_missing_root)
{
    struct shard_cache *c;

    snprintf(root, sizeof(root), "%s/a/b/cache", base);
    c = open_cache(0);
    cr_expect(exists(root));
    cr_expect_eq(shard_cache_count(c), 0);
    cr_expect_eq(shard_cache_bytes_used(c), 0);
    cr_expect_eq(shard_cache_scan_stats(c)->datasets, 0);
    shard_cache_close(c);
    shard_cache_close(NULL);
}

Test(shard_cache, add_dataset_copies_the_manifest_and_is_idempotent)
{
    char id[SHARD_DATASET_ID_SIZE], a[8192], b[8192];
    struct shard_cache_dataset_info info;
    struct shard_cache *c;
    unsigned char *x, *y;
    size_t ds, xl, yl, again;
    struct gs_error err;

    ds_make(src, 3, 1, TOKENS);
    c = open_cache(0);
    ds = add(c, src);
    again = add(c, src);
    cr_expect_eq(again, ds);
    cr_expect_eq(shard_cache_count(c), 1);
    cr_assert_eq(shard_cache_dataset(c, ds, &info), 0);
    cr_assert_eq(shard_dataset_id(src, id, &err), 0, "%s", err.msg);
    cr_expect_str_eq(info.id, id);
    snprintf(a, sizeof(a), "%s/%s", root, id);
    cr_expect_str_eq(info.dir, a);
    {
        struct stat st;

        cr_assert_eq(stat(a, &st), 0);
        cr_expect_eq(st.st_mode & 07777, 0700, "closed until its readers are known: %o",
                     (unsigned)(st.st_mode & 07777));
    }
    cr_expect_eq(info.nshards, 4);
    cr_expect_eq(info.shards_held, 0);
    cr_expect_eq(info.bytes_total, 4 * SHARD_BYTES);
    cr_expect_eq(info.manifest->nshards, 4);
    snprintf(a, sizeof(a), "%s/%s", src, SHARD_MANIFEST_FILE);
    snprintf(b, sizeof(b), "%s/%s/%s", root, id, SHARD_MANIFEST_FILE);
    x = slurp(a, &xl);
    y = slurp(b, &yl);
    cr_assert_eq(xl, yl);
    cr_expect_eq(memcmp(x, y, xl), 0, "the copy is byte for byte");
    cr_expect_eq(shard_cache_find(c, id, &again), 0);
    cr_expect_eq(again, ds);
    cr_expect_eq(shard_cache_find(c, "0123456789abcdef0123456789abcdef", &again), -ENOENT);
    /* A manifest's bytes from a peer name the same dataset. */
    cr_assert_eq(shard_cache_add_manifest_bytes(c, x, xl, &again, &err), 0, "%s", err.msg);
    cr_expect_eq(again, ds);
    cr_expect_eq(shard_cache_count(c), 1);
    free(x);
    free(y);
    shard_cache_close(c);
}

Test(shard_cache, add_refuses_a_bad_manifest_and_leaves_nothing)
{
    static const char bad[] = "format = 1\n[[shard]]\nfile = \"x.bin\"\n";
    struct shard_cache *c = open_cache(0);
    struct gs_error err;
    char path[8192];
    size_t ds;
    DIR *d;
    struct dirent *e;
    int entries = 0;

    cr_expect_eq(shard_cache_add_manifest_bytes(c, bad, sizeof(bad) - 1, &ds, &err), -EINVAL);
    snprintf(path, sizeof(path), "%s/%s", src, SHARD_MANIFEST_FILE);
    spit(path, bad, sizeof(bad) - 1);
    cr_expect_eq(shard_cache_add_dataset(c, src, &ds, &err), -EINVAL);
    cr_expect(strstr(err.msg, src) != NULL, "names the source: %s", err.msg);
    cr_expect_eq(shard_cache_add_dataset(c, base, &ds, &err), -ENOENT);
    cr_expect_eq(shard_cache_count(c), 0);
    d = opendir(root);
    cr_assert_not_null(d);
    while ((e = readdir(d)) != NULL)
        entries += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    cr_expect_eq(entries, 0);
    shard_cache_close(c);
}

/* --- staging --- */

Test(shard_cache, stage_from_a_path_copies_and_verifies)
{
    struct shard_cache *c;
    struct shard_cache_copy job;
    struct shard_cache_dataset_info info;
    struct gs_error err;
    char source[8192], part[8300];
    unsigned char *x, *y;
    size_t ds, xl, yl;
    uint64_t gen;

    ds_make(src, 2, 0, TOKENS);
    c = open_cache(0);
    ds = add(c, src);
    gen = generation_of(c, ds);
    job = stage(c, ds, 1, src, 0);
    cr_expect_eq(job.bytes, SHARD_BYTES);
    cr_expect_eq(job.bytes_copied, SHARD_BYTES);
    cr_expect_eq(job.resumed_from, 0);
    cr_expect(shard_cache_holds(c, ds, 1));
    cr_expect_not(shard_cache_holds(c, ds, 0));
    cr_expect_eq(shard_cache_bytes_used(c), SHARD_BYTES);
    cr_expect_eq(shard_cache_bytes_reserved(c), 0);
    cr_expect_gt(generation_of(c, ds), gen);
    cr_assert_eq(shard_cache_dataset(c, ds, &info), 0);
    cr_expect_eq(info.shards_held, 1);
    cr_expect_eq(info.bytes_held, SHARD_BYTES);
    cr_expect_eq(info.pins, 0);
    cr_expect_eq(info.last_used_ms, shard_cache_shard_last_used(c, ds, 1));
    cr_expect_gt(info.last_used_ms, T0); /* the file's mtime: now */
    source_of(src, 1, source, sizeof(source));
    x = slurp(source, &xl);
    y = slurp(cached_path(c, ds, 1), &yl);
    cr_assert_eq(xl, yl);
    cr_expect_eq(memcmp(x, y, xl), 0);
    snprintf(part, sizeof(part), "%s%s", cached_path(c, ds, 1), SHARD_CACHE_PART_SUFFIX);
    cr_expect_not(exists(part));
    cr_expect_eq(shard_manifest_check_shard(info.manifest, 1, SHARD_VERIFY, &err), 0, "%s",
                 err.msg);
    /* A held shard is not staged again. */
    cr_expect_eq(shard_cache_stage_begin(c, ds, 1, &job, &err), -EEXIST);
    free(x);
    free(y);
    shard_cache_close(c);
}

Test(shard_cache, a_corrupt_source_is_refused_and_leaves_nothing)
{
    struct shard_cache *c;
    struct shard_cache_copy job;
    struct gs_error err;
    char source[8192], final[8192], part[8300];
    unsigned char flip = 0xff;
    size_t ds;
    uint64_t gen;

    ds_make(src, 2, 0, TOKENS);
    c = open_cache(0);
    ds = add(c, src);
    gen = generation_of(c, ds);
    source_of(src, 0, source, sizeof(source));
    ds_patch(source, SHARD_HEADER_SIZE + 40, &flip, 1); /* same size, token checksum wrong */
    cr_assert_eq(shard_cache_stage_begin(c, ds, 0, &job, &err), 0, "%s", err.msg);
    snprintf(final, sizeof(final), "%s", job.path);
    snprintf(part, sizeof(part), "%s", job.part_path);
    cr_expect_eq(shard_cache_bytes_reserved(c), SHARD_BYTES);
    job.source_path = source;
    cr_expect_eq(shard_cache_copy_run(&job, &err), -EBADMSG);
    cr_expect(strstr(err.msg, "train-00000.bin") != NULL, "names the shard: %s", err.msg);
    cr_expect_not(exists(part));
    cr_expect_not(exists(final));
    shard_cache_stage_end(c, &job, -EBADMSG);
    cr_expect_not(shard_cache_holds(c, ds, 0));
    cr_expect_eq(shard_cache_bytes_used(c), 0);
    cr_expect_eq(shard_cache_bytes_reserved(c), 0);
    cr_expect_eq(generation_of(c, ds), gen, "no change of holdings");
    cr_expect_null(job.path, "stage_end zeroes the job");

    /* A source of the wrong size is refused before anything is written. */
    source_of(src, 1, source, sizeof(source));
    cr_assert_eq(truncate(source, SHARD_BYTES - 4), 0);
    cr_assert_eq(shard_cache_stage_begin(c, ds, 1, &job, &err), 0, "%s", err.msg);
    job.source_path = source;
    cr_expect_eq(shard_cache_copy_run(&job, &err), -EBADMSG);
    cr_expect(strstr(err.msg, "train-00001.bin") != NULL, "%s", err.msg);
    cr_expect_not(exists(job.part_path));
    cr_expect_not(exists(job.path));
    cr_expect_eq(job.bytes_copied, 0);
    shard_cache_stage_end(c, &job, -EBADMSG);
    shard_cache_close(c);
}

/* The source path is the job user's: a FIFO there must not hold a pool thread in open()
 * waiting for a writer (the timeout turns that wait into a failure). */
Test(shard_cache, a_source_that_is_not_a_regular_file_is_refused_without_waiting, .timeout = 30)
{
    struct shard_cache *c;
    struct shard_cache_copy job;
    struct gs_error err;
    char source[8192];
    size_t ds;

    ds_make(src, 1, 0, TOKENS);
    c = open_cache(0);
    ds = add(c, src);
    source_of(src, 0, source, sizeof(source));
    cr_assert_eq(unlink(source), 0);
    cr_assert_eq(mkfifo(source, 0644), 0);
    cr_assert_eq(shard_cache_stage_begin(c, ds, 0, &job, &err), 0, "%s", err.msg);
    job.source_path = source;
    cr_expect_eq(shard_cache_copy_run(&job, &err), -EINVAL);
    cr_expect(strstr(err.msg, "is not a regular file") != NULL, "%s", err.msg);
    cr_expect_not(exists(job.part_path));
    cr_expect_eq(job.bytes_copied, 0);
    shard_cache_stage_end(c, &job, -EINVAL);
    cr_expect_not(shard_cache_holds(c, ds, 0));
    cr_expect_eq(shard_cache_bytes_reserved(c), 0);
    shard_cache_close(c);
}

Test(shard_cache, a_copy_resumes_from_its_part)
{
    struct shard_cache *c;
    struct shard_cache_copy job;
    struct gs_error err;
    char source[8192];
    unsigned char *x;
    size_t ds, xl, half = SHARD_BYTES / 2 + 3;

    ds_make(src, 1, 0, TOKENS);
    c = open_cache(0);
    ds = add(c, src);
    source_of(src, 0, source, sizeof(source));
    x = slurp(source, &xl);
    cr_assert_eq(shard_cache_stage_begin(c, ds, 0, &job, &err), 0, "%s", err.msg);
    spit(job.part_path, x, half); /* an earlier run stopped here */
    job.source_path = source;
    cr_assert_eq(shard_cache_copy_run(&job, &err), 0, "%s", err.msg);
    cr_expect_eq(job.resumed_from, half);
    cr_expect_eq(job.bytes_copied, SHARD_BYTES - half, "only the rest is copied");
    cr_expect_not(exists(job.part_path));
    shard_cache_stage_end(c, &job, 0);
    cr_expect(shard_cache_holds(c, ds, 0));
    cr_expect_eq(file_size(cached_path(c, ds, 0)), SHARD_BYTES);
    cr_expect_eq(shard_cache_evict(c, ds, 0, &err), 0, "%s", err.msg);

    /* A .part that does not start like the shard is started again. */
    cr_assert_eq(shard_cache_stage_begin(c, ds, 0, &job, &err), 0, "%s", err.msg);
    x[0] ^= 1;
    spit(job.part_path, x, half);
    job.source_path = source;
    cr_assert_eq(shard_cache_copy_run(&job, &err), 0, "%s", err.msg);
    cr_expect_eq(job.resumed_from, 0);
    cr_expect_eq(job.bytes_copied, SHARD_BYTES);
    shard_cache_stage_end(c, &job, 0);
    cr_expect_eq(shard_cache_evict(c, ds, 0, &err), 0, "%s", err.msg);

    /* So is a .part longer than the shard. */
    cr_assert_eq(shard_cache_stage_begin(c, ds, 0, &job, &err), 0, "%s", err.msg);
    x[0] ^= 1;
    spit(job.part_path, x, xl);
    cr_assert_eq(truncate(job.part_path, SHARD_BYTES + 100), 0);
    job.source_path = source;
    cr_assert_eq(shard_cache_copy_run(&job, &err), 0, "%s", err.msg);
    cr_expect_eq(job.resumed_from, 0);
    cr_expect_eq(job.bytes_copied, SHARD_BYTES);
    shard_cache_stage_end(c, &job, 0);
    cr_expect_eq(file_size(cached_path(c, ds, 0)), SHARD_BYTES);
    free(x);
    shard_cache_close(c);
}

Test(shard_cache, a_rate_limit_slows_the_copy)
{
    struct shard_cache *c;
    struct shard_cache_copy job;
    struct timespec t0, t1;
    double elapsed;
    size_t ds;

    ds_make(src, 1, 0, 65536); /* 256 KiB of tokens */
    c = open_cache(0);
    ds = add(c, src);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    job = stage(c, ds, 0, src, 1u << 20); /* 1 MiB/s: at least 250 ms */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    elapsed = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_expect_eq(job.bytes_copied, SHARD_HEADER_SIZE + 4 * 65536);
    cr_expect_geq(elapsed, 0.200, "elapsed %.3f s", elapsed);
    cr_expect(shard_cache_holds(c, ds, 0));
    shard_cache_close(c);
}

/* A source in memory handed out at most 777 bytes a call; short when its limit is set. */
struct mem_source {
    const unsigned char *bytes;
    size_t len;
    unsigned calls;
};

static int mem_read(uint64_t offset, void *buf, size_t len, size_t *ret_got, struct gs_error *err,
                    void *data)
{
    struct mem_source *m = data;
    size_t n = offset < m->len ? m->len - (size_t)offset : 0;

    (void)err;
    if (n > len)
        n = len;
    if (n > 777)
        n = 777;
    memcpy(buf, m->bytes + offset, n);
    *ret_got = n;
    m->calls++;
    return 0;
}

Test(shard_cache, stage_through_a_read_callback)
{
    struct shard_cache *c;
    struct shard_cache_copy job;
    struct gs_error err;
    struct mem_source m;
    char source[8192];
    unsigned char *x;
    size_t ds, xl;

    ds_make(src, 2, 0, TOKENS);
    c = open_cache(0);
    ds = add(c, src);
    source_of(src, 0, source, sizeof(source));
    x = slurp(source, &xl);
    m = (struct mem_source){x, xl, 0};
    cr_assert_eq(shard_cache_stage_begin(c, ds, 0, &job, &err), 0, "%s", err.msg);
    job.read = mem_read;
    job.read_data = &m;
    cr_assert_eq(shard_cache_copy_run(&job, &err), 0, "%s", err.msg);
    cr_expect_eq(job.bytes_copied, SHARD_BYTES);
    cr_expect_geq(m.calls, SHARD_BYTES / 777);
    shard_cache_stage_end(c, &job, 0);
    cr_expect(shard_cache_holds(c, ds, 0));

    /* A source that ends early is a mismatch: nothing is kept. */
    m = (struct mem_source){x, 100, 0};
    cr_assert_eq(shard_cache_stage_begin(c, ds, 1, &job, &err), 0, "%s", err.msg);
    job.read = mem_read;
    job.read_data = &m;
    cr_expect_eq(shard_cache_copy_run(&job, &err), -EBADMSG);
    cr_expect_not(exists(job.part_path));
    /* Two sources, or none, are a caller's mistake. */
    job.source_path = source;
    cr_expect_eq(shard_cache_copy_run(&job, &err), -EINVAL);
    job.source_path = NULL;
    job.read = NULL;
    cr_expect_eq(shard_cache_copy_run(&job, &err), -EINVAL);
    shard_cache_stage_end(c, &job, -EINVAL);
    cr_expect_not(shard_cache_holds(c, ds, 1));
    free(x);
    shard_cache_close(c);
}

Test(shard_cache, a_shard_being_staged_is_busy)
{
    struct shard_cache *c;
    struct shard_cache_copy job, second;
    struct shard_cache_dataset_info info;
    struct gs_error err;
    size_t ds;

    ds_make(src, 2, 0, TOKENS);
    c = open_cache(0);
    ds = add(c, src);
    cr_assert_eq(shard_cache_stage_begin(c, ds, 0, &job, &err), 0, "%s", err.msg);
    cr_expect_eq(shard_cache_stage_begin(c, ds, 0, &second, &err), -EBUSY);
    cr_assert_eq(shard_cache_dataset(c, ds, &info), 0);
    cr_expect_eq(info.pins, 1, "a copy in flight pins its dataset");
    cr_expect_eq(shard_cache_evict(c, ds, SHARD_CACHE_ALL, &err), -EBUSY);
    cr_expect_eq(shard_cache_evict(c, ds, 0, &err), -EBUSY);
    cr_expect_eq(shard_cache_stage_begin(c, ds, 2, &second, &err), -EINVAL);
    cr_expect_eq(shard_cache_stage_begin(c, ds + 1, 0, &second, &err), -EINVAL);
    shard_cache_stage_end(c, &job, -ECANCELED);
    cr_assert_eq(shard_cache_dataset(c, ds, &info), 0);
    cr_expect_eq(info.pins, 0);
    cr_expect_eq(shard_cache_evict(c, ds, 0, &err), -ENOENT);
    shard_cache_close(c);
}

/* --- the scan --- */

Test(shard_cache, scan_finds_held_shards_removes_bad_ones_and_ignores_junk)
{
    const struct shard_cache_scan_stats *st;
    struct shard_cache *c;
    char junk[8192], fake[8192], file[8192], bad[8192], part[8300];
    size_t ds;

    ds_make(src, 3, 1, TOKENS);
    c = open_cache(0);
    ds = add(c, src);
    stage(c, ds, 0, src, 0);
    stage(c, ds, 1, src, 0);
    stage(c, ds, 3, src, 0);
    snprintf(bad, sizeof(bad), "%s", cached_path(c, ds, 1));
    snprintf(part, sizeof(part), "%s%s", cached_path(c, ds, 2), SHARD_CACHE_PART_SUFFIX);
    shard_cache_close(c);

    cr_assert_eq(truncate(bad, SHARD_BYTES - 8), 0); /* damaged while the worker was down */
    spit(part, "GSSHARD", 8);                        /* a copy that was cut short */
    snprintf(junk, sizeof(junk), "%s/lost+found", root);
    cr_assert_eq(mkdir(junk, 0755), 0);
    snprintf(fake, sizeof(fake), "%s/0123456789abcdef0123456789abcdef", root); /* no manifest */
    cr_assert_eq(mkdir(fake, 0755), 0);
    snprintf(file, sizeof(file), "%s/README", root);
    spit(file, "x", 1);

    c = open_cache(0);
    st = shard_cache_scan_stats(c);
    cr_expect_eq(st->datasets, 1);
    cr_expect_eq(st->shards_held, 2);
    cr_expect_eq(st->bytes_held, 2 * SHARD_BYTES);
    cr_expect_eq(st->files_removed, 1);
    cr_expect_eq(st->parts, 1);
    cr_expect_eq(st->ignored, 3);
    cr_assert_eq(shard_cache_count(c), 1);
    cr_expect(shard_cache_holds(c, 0, 0));
    cr_expect_not(shard_cache_holds(c, 0, 1));
    cr_expect_not(shard_cache_holds(c, 0, 2));
    cr_expect(shard_cache_holds(c, 0, 3));
    cr_expect_eq(shard_cache_bytes_used(c), 2 * SHARD_BYTES);
    cr_expect_not(exists(bad), "the damaged shard is removed");
    cr_expect(exists(part), "a .part is kept for a resumed copy");
    cr_expect(exists(junk) && exists(fake) && exists(file), "junk is left alone");
    shard_cache_close(c);
}

Test(shard_cache, a_dataset_directory_whose_manifest_has_another_id_is_not_a_dataset)
{
    struct shard_cache *c;
    char dir[8192], from[8192], to[8300];
    unsigned char *bytes;
    size_t len;

    ds_make(src, 1, 0, TOKENS);
    snprintf(dir, sizeof(dir), "%s/0123456789abcdef0123456789abcdef", root);
    cr_assert_eq(mkdir(root, 0755), 0);
    cr_assert_eq(mkdir(dir, 0755), 0);
    snprintf(from, sizeof(from), "%s/%s", src, SHARD_MANIFEST_FILE);
    snprintf(to, sizeof(to), "%s/%s", dir, SHARD_MANIFEST_FILE);
    bytes = slurp(from, &len);
    spit(to, bytes, len);
    free(bytes);
    c = open_cache(0);
    cr_expect_eq(shard_cache_count(c), 0);
    cr_expect_eq(shard_cache_scan_stats(c)->ignored, 1);
    cr_expect(exists(to), "left alone");
    shard_cache_close(c);
}

/* --- LRU, cap, pins, eviction --- */

struct evictions {
    size_t n;
    size_t ds[16], shard[16];
};

static void on_evicted(struct shard_cache *c, size_t ds, size_t shard, void *data)
{
    struct evictions *ev = data;

    (void)c;
    cr_assert_lt(ev->n, 16);
    ev->ds[ev->n] = ds;
    ev->shard[ev->n++] = shard;
}

Test(shard_cache, trim_evicts_the_least_recently_used_first)
{
    struct shard_cache *c;
    struct shard_cache_copy job;
    struct evictions ev = {0};
    struct gs_error err;
    size_t ds, n = 99;

    ds_make(src, 4, 0, TOKENS);
    c = open_cache(3 * SHARD_BYTES);
    ds = add(c, src);
    for (size_t i = 0; i < 3; i++)
        stage(c, ds, i, src, 0);
    cr_expect_eq(shard_cache_bytes_used(c), 3 * SHARD_BYTES);
    cr_expect_eq(shard_cache_stage_begin(c, ds, 3, &job, &err), -ENOSPC, "full: trim first");
    cr_expect_eq(shard_cache_touch(c, ds, 0, T0 + 3000, &err), 0, "%s", err.msg);
    cr_expect_eq(shard_cache_touch(c, ds, 1, T0 + 1000, &err), 0, "%s", err.msg);
    cr_expect_eq(shard_cache_touch(c, ds, 2, T0 + 2000, &err), 0, "%s", err.msg);
    cr_expect_eq(shard_cache_touch(c, ds, 3, T0, &err), -ENOENT);
    cr_expect_eq(shard_cache_shard_last_used(c, ds, 1), T0 + 1000);

    cr_assert_eq(shard_cache_trim(c, 0, on_evicted, &ev, &n, &err), 0, "%s", err.msg);
    cr_expect_eq(n, 0, "under the cap: nothing to do");
    cr_assert_eq(shard_cache_trim(c, SHARD_BYTES, on_evicted, &ev, &n, &err), 0, "%s", err.msg);
    cr_expect_eq(n, 1);
    cr_assert_eq(ev.n, 1);
    cr_expect_eq(ev.shard[0], 1, "the oldest goes first");
    cr_expect_not(shard_cache_holds(c, ds, 1));
    cr_expect_not(exists(cached_path(c, ds, 1)));
    cr_assert_eq(shard_cache_trim(c, 2 * SHARD_BYTES, on_evicted, &ev, &n, &err), 0, "%s", err.msg);
    cr_expect_eq(n, 1);
    cr_expect_eq(ev.shard[1], 2);
    cr_expect(shard_cache_holds(c, ds, 0), "the newest stays");
    cr_expect_eq(shard_cache_bytes_used(c), SHARD_BYTES);
    cr_expect_eq(shard_cache_trim(c, 4 * SHARD_BYTES, NULL, NULL, NULL, &err), -ENOSPC,
                 "more than the cap");
    cr_expect(shard_cache_holds(c, ds, 0));
    shard_cache_close(c);
}

Test(shard_cache, trim_respects_pins_and_is_all_or_nothing)
{
    struct shard_cache *c;
    struct evictions ev = {0};
    struct gs_error err;
    char other[8192];
    size_t a, b, n = 99;

    snprintf(other, sizeof(other), "%s/other", base);
    cr_assert_eq(mkdir(other, 0755), 0);
    ds_make(src, 2, 0, TOKENS);
    ds_make(other, 3, 0, TOKENS);
    c = open_cache(4 * SHARD_BYTES);
    a = add(c, src);
    b = add(c, other);
    stage(c, a, 0, src, 0);
    stage(c, a, 1, src, 0);
    stage(c, b, 0, other, 0);
    stage(c, b, 1, other, 0);
    cr_assert_eq(shard_cache_touch(c, a, 0, T0 + 1, &err), 0, "%s", err.msg);
    cr_assert_eq(shard_cache_touch(c, a, 1, T0 + 2, &err), 0, "%s", err.msg);
    cr_assert_eq(shard_cache_touch(c, b, 0, T0 + 3, &err), 0, "%s", err.msg);
    cr_assert_eq(shard_cache_touch(c, b, 1, T0 + 4, &err), 0, "%s", err.msg);

    cr_assert_eq(shard_cache_pin_dataset(c, a), 0);
    cr_assert_eq(shard_cache_pin_dataset(c, a), 0);
    cr_expect_eq(shard_cache_evict(c, a, 0, &err), -EBUSY);
    cr_expect_eq(shard_cache_trim(c, 3 * SHARD_BYTES, on_evicted, &ev, &n, &err), -ENOSPC,
                 "only b's two shards may go");
    cr_expect_eq(ev.n, 0, "nothing is evicted when room cannot be made");
    cr_expect_eq(shard_cache_bytes_used(c), 4 * SHARD_BYTES);
    cr_assert_eq(shard_cache_trim(c, SHARD_BYTES, on_evicted, &ev, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(ev.n, 1);
    cr_expect_eq(ev.ds[0], b, "a is older but pinned");
    cr_expect_eq(ev.shard[0], 0);
    cr_assert_eq(shard_cache_unpin_dataset(c, a), 0);
    cr_assert_eq(shard_cache_unpin_dataset(c, a), 0);
    cr_expect_eq(shard_cache_unpin_dataset(c, a), -EINVAL);
    cr_assert_eq(shard_cache_trim(c, 2 * SHARD_BYTES, on_evicted, &ev, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(ev.n, 2);
    cr_expect_eq(ev.ds[1], a);
    cr_expect_eq(ev.shard[1], 0);
    cr_expect_eq(shard_cache_bytes_used(c), 2 * SHARD_BYTES);
    shard_cache_close(c);
}

Test(shard_cache, evict_removes_a_shard_or_the_whole_dataset)
{
    struct shard_cache_dataset_info info;
    struct shard_cache *c;
    struct gs_error err;
    char id[SHARD_DATASET_ID_SIZE], popped[SHARD_DATASET_ID_SIZE], dir[8192], manifest[8300];
    size_t ds;
    uint64_t gen;

    ds_make(src, 3, 0, TOKENS);
    c = open_cache(0);
    ds = add(c, src);
    stage(c, ds, 0, src, 0);
    stage(c, ds, 2, src, 0);
    cr_assert_eq(shard_cache_dataset(c, ds, &info), 0);
    snprintf(id, sizeof(id), "%s", info.id);
    snprintf(dir, sizeof(dir), "%s", info.dir);
    snprintf(manifest, sizeof(manifest), "%s/%s", dir, SHARD_MANIFEST_FILE);

    gen = generation_of(c, ds);
    cr_assert_eq(shard_cache_evict(c, ds, 0, &err), 0, "%s", err.msg);
    cr_expect_not(shard_cache_holds(c, ds, 0));
    cr_expect_gt(generation_of(c, ds), gen);
    cr_expect_eq(shard_cache_evict(c, ds, 0, &err), -ENOENT);
    cr_assert_eq(shard_cache_evict(c, ds, 2, &err), 0, "%s", err.msg);
    cr_expect_eq(shard_cache_count(c), 1, "an empty dataset is still known");
    cr_expect(exists(manifest));
    cr_expect_eq(shard_cache_bytes_used(c), 0);
    cr_expect_not(shard_cache_pop_removed(c, popped));

    stage(c, ds, 1, src, 0);
    gen = shard_cache_generation(c);
    cr_assert_eq(shard_cache_evict(c, ds, SHARD_CACHE_ALL, &err), 0, "%s", err.msg);
    cr_expect_eq(shard_cache_count(c), 0);
    cr_expect_not(exists(dir));
    cr_expect_eq(shard_cache_bytes_used(c), 0);
    cr_expect_gt(shard_cache_generation(c), gen);
    cr_assert(shard_cache_pop_removed(c, popped));
    cr_expect_str_eq(popped, id);
    cr_expect_not(shard_cache_pop_removed(c, popped));
    cr_expect_eq(shard_cache_evict(c, ds, SHARD_CACHE_ALL, &err), -EINVAL);

    /* Added again, it comes back with a generation it never had. */
    ds = add(c, src);
    cr_expect_gt(generation_of(c, ds), gen);
    shard_cache_close(c);
    c = open_cache(0);
    cr_expect_eq(shard_cache_count(c), 1);
    shard_cache_close(c);
}

Test(shard_cache, bitmap_sets_bit_i_for_held_shard_i)
{
    struct shard_cache *c;
    uint8_t bits[4];
    size_t ds;

    ds_make(src, 10, 0, 100);
    c = open_cache(0);
    ds = add(c, src);
    stage(c, ds, 0, src, 0);
    stage(c, ds, 3, src, 0);
    stage(c, ds, 9, src, 0);
    memset(bits, 0xee, sizeof(bits));
    cr_assert_eq(shard_cache_bitmap(c, ds, bits, sizeof(bits)), 0);
    cr_expect_eq(bits[0], 0x09);
    cr_expect_eq(bits[1], 0x02);
    cr_expect_eq(bits[2], 0);
    cr_expect_eq(bits[3], 0);
    cr_expect_eq(shard_cache_bitmap(c, ds, bits, 1), -ENOBUFS);
    cr_expect_eq(shard_cache_bitmap(c, ds + 1, bits, sizeof(bits)), -EINVAL);
    shard_cache_close(c);
}

Test(shard_cache, generation_moves_with_holdings_only)
{
    struct shard_cache *c;
    struct shard_cache_copy job;
    struct gs_error err;
    char other[8192];
    size_t a, b;
    uint64_t ga, gb, g;

    snprintf(other, sizeof(other), "%s/other", base);
    cr_assert_eq(mkdir(other, 0755), 0);
    ds_make(src, 2, 0, TOKENS);
    ds_make(other, 2, 0, TOKENS); /* the same manifest: the same dataset */
    c = open_cache(0);
    a = add(c, src);
    cr_expect_eq(add(c, other), a);
    ds_make(other, 2, 1, TOKENS);
    b = add(c, other);
    cr_expect_neq(a, b);
    ga = generation_of(c, a);
    gb = generation_of(c, b);
    cr_expect_neq(ga, gb);
    stage(c, a, 0, src, 0);
    cr_expect_gt(generation_of(c, a), gb, "drawn from the cache-wide counter");
    cr_expect_eq(generation_of(c, b), gb, "b did not change");
    g = generation_of(c, a);
    cr_assert_eq(shard_cache_touch(c, a, 0, T0, &err), 0, "%s", err.msg);
    cr_expect_eq(generation_of(c, a), g, "recency is not a holdings change");
    cr_assert_eq(shard_cache_stage_begin(c, a, 1, &job, &err), 0, "%s", err.msg);
    shard_cache_stage_end(c, &job, -EIO);
    cr_expect_eq(generation_of(c, a), g, "a failed copy changes nothing");
    cr_expect_eq(shard_cache_generation(c), g);
    shard_cache_close(c);
}

Test(shard_cache, reopen_sees_the_same_holdings_and_lru_order)
{
    struct shard_cache *c;
    struct evictions ev = {0};
    struct gs_error err;
    uint8_t before[1], after[1];
    size_t ds;

    ds_make(src, 5, 0, TOKENS);
    c = open_cache(0);
    ds = add(c, src);
    for (size_t i = 0; i < 4; i++)
        stage(c, ds, i, src, 0);
    cr_assert_eq(shard_cache_touch(c, ds, 0, T0 + 40, &err), 0, "%s", err.msg);
    cr_assert_eq(shard_cache_touch(c, ds, 1, T0 + 10, &err), 0, "%s", err.msg);
    cr_assert_eq(shard_cache_touch(c, ds, 2, T0 + 30, &err), 0, "%s", err.msg);
    cr_assert_eq(shard_cache_touch(c, ds, 3, T0 + 20, &err), 0, "%s", err.msg);
    cr_assert_eq(shard_cache_bitmap(c, ds, before, 1), 0);
    shard_cache_close(c);

    c = open_cache(4 * SHARD_BYTES);
    cr_assert_eq(shard_cache_count(c), 1);
    cr_assert_eq(shard_cache_bitmap(c, 0, after, 1), 0);
    cr_expect_eq(after[0], before[0]);
    cr_expect_eq(after[0], 0x0f);
    cr_expect_eq(shard_cache_bytes_used(c), 4 * SHARD_BYTES);
    cr_expect_eq(shard_cache_shard_last_used(c, 0, 0), T0 + 40);
    cr_expect_eq(shard_cache_shard_last_used(c, 0, 1), T0 + 10);
    cr_expect_eq(shard_cache_shard_last_used(c, 0, 2), T0 + 30);
    cr_expect_eq(shard_cache_shard_last_used(c, 0, 3), T0 + 20);
    cr_assert_eq(shard_cache_trim(c, 3 * SHARD_BYTES, on_evicted, &ev, NULL, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(ev.n, 3);
    cr_expect_eq(ev.shard[0], 1);
    cr_expect_eq(ev.shard[1], 3);
    cr_expect_eq(ev.shard[2], 2);
    cr_expect(shard_cache_holds(c, 0, 0));
    shard_cache_close(c);
}
