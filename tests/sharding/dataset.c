/*
 * dataset.c: the helpers of dataset.h. Failures abort the running Criterion test.
 */
#include "dataset.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void ds_tmpdir(char *buf, size_t size)
{
    const char *base = getenv("TMPDIR");

    snprintf(buf, size, "%s/gs-sharding-XXXXXX", base != NULL ? base : "/tmp");
    cr_assert_not_null(mkdtemp(buf), "mkdtemp %s", buf);
}

void ds_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

uint32_t ds_token(unsigned shard, uint64_t i)
{
    return (uint32_t)(shard * 100000u + i) % DS_VOCAB;
}

void ds_make(const char *dir, unsigned ntrain, unsigned nval, uint64_t tokens)
{
    struct shard_manifest *m = shard_manifest_new(dir);
    uint32_t *ids = malloc(tokens * sizeof(*ids));
    struct shard_header h;
    struct gs_error err;

    cr_assert(m != NULL && ids != NULL);
    for (unsigned s = 0; s < ntrain + nval; s++) {
        enum shard_split split = s < ntrain ? SHARD_SPLIT_TRAIN : SHARD_SPLIT_VAL;
        char file[64], path[4200];

        for (uint64_t i = 0; i < tokens; i++)
            ids[i] = ds_token(s, i);
        snprintf(file, sizeof(file), "%s-%05u.bin", shard_split_name(split), s);
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        cr_assert_eq(shard_write(path, SHARD_U32, DS_VOCAB, ids, tokens, &h, &err), 0, "%s",
                     err.msg);
        cr_assert_eq(shard_manifest_add(m, file, split, &h, &err), 0, "%s", err.msg);
    }
    cr_assert_eq(shard_manifest_write(m, &err), 0, "%s", err.msg);
    shard_manifest_free(m);
    free(ids);
}

struct shard_manifest *ds_load(const char *dir)
{
    struct shard_manifest *m = NULL;
    struct gs_error err;

    cr_assert_eq(shard_manifest_load(dir, &m, &err), 0, "%s", err.msg);
    return m;
}

void ds_patch(const char *path, long offset, const void *bytes, size_t len)
{
    FILE *f = fopen(path, "r+b");

    cr_assert_not_null(f, "open %s", path);
    cr_assert_eq(fseek(f, offset, SEEK_SET), 0);
    cr_assert_eq(fwrite(bytes, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}
