/*
 * test_shard.c: the shard format (sharding/shard.h) and the dataset manifest
 * (sharding/manifest.h): round trips for each dtype, and every kind of damage a shard or a
 * manifest can carry reported by name, never read silently.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "sharding/manifest.h"
#include "sharding/shard.h"

static char dir[4096];
static char path[4200];

static void setup(void)
{
    ds_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/s.bin", dir);
}

static void teardown(void)
{
    ds_rmdir(dir);
}

TestSuite(shard, .init = setup, .fini = teardown);
TestSuite(manifest, .init = setup, .fini = teardown);

/* Writes n tokens i * step % vocab (the last one vocab - 1) and returns them. */
static uint32_t *write_shard(enum shard_dtype dtype, uint32_t vocab, size_t n)
{
    uint32_t *ids = malloc(n * sizeof(*ids));
    struct gs_error err;

    cr_assert_not_null(ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = (uint32_t)((i * 2654435761u) % vocab);
    ids[n - 1] = vocab - 1;
    cr_assert_eq(shard_write(path, dtype, vocab, ids, n, NULL, &err), 0, "%s", err.msg);
    return ids;
}

static void round_trip(enum shard_dtype dtype, uint32_t vocab)
{
    size_t n = 70000; /* more than one write buffer of any width */
    uint32_t *ids = write_shard(dtype, vocab, n);
    int32_t *got = malloc(n * sizeof(*got));
    const struct shard_header *h;
    struct shard_file *s;
    struct gs_error err;
    struct stat st;

    cr_assert_eq(shard_open(path, SHARD_VERIFY, &s, &err), 0, "%s", err.msg);
    h = shard_header(s);
    cr_expect_eq(h->version, SHARD_VERSION);
    cr_expect_eq(h->dtype, dtype);
    cr_expect_eq(h->vocab, vocab);
    cr_expect_eq(h->tokens, n);
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq((uint64_t)st.st_size, SHARD_HEADER_SIZE + n * (size_t)dtype);
    cr_assert_eq(shard_read(s, 0, n, got, &err), 0, "%s", err.msg);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq((uint32_t)got[i], ids[i], "token %zu", i);
    cr_assert_eq(shard_read(s, n - 3, 3, got, &err), 0, "%s", err.msg);
    cr_expect_eq((uint32_t)got[2], vocab - 1);
    cr_expect_eq(shard_read(s, n - 2, 3, got, &err), -ERANGE);
    shard_close(s);
    free(ids);
    free(got);
}

Test(shard, round_trips_u8)
{
    round_trip(SHARD_U8, 256);
}

Test(shard, round_trips_u16)
{
    round_trip(SHARD_U16, 50257);
}

Test(shard, round_trips_u32)
{
    round_trip(SHARD_U32, UINT32_C(1) << 31);
}

Test(shard, checksum_is_crc32c_of_token_bytes)
{
    uint32_t ids[9];
    struct shard_header h;
    struct gs_error err;

    for (int i = 0; i < 9; i++)
        ids[i] = (uint32_t)('1' + i);
    cr_assert_eq(shard_write(path, SHARD_U8, 256, ids, 9, &h, &err), 0, "%s", err.msg);
    cr_expect_eq(h.crc32c, 0xE3069283u); /* CRC-32C("123456789") */
}

Test(shard, commit_leaves_only_the_final_file)
{
    DIR *d;
    struct dirent *e;
    int files = 0;

    free(write_shard(SHARD_U16, 1000, 10));
    d = opendir(dir);
    cr_assert_not_null(d);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        cr_expect_str_eq(e->d_name, "s.bin");
        files++;
    }
    closedir(d);
    cr_expect_eq(files, 1);
}

Test(shard, writer_refuses_ids_outside_the_vocab)
{
    uint32_t ids[] = {1, 2, 300};
    struct gs_error err;

    cr_expect_eq(shard_write(path, SHARD_U16, 300, ids, 3, NULL, &err), -EINVAL);
    cr_expect(strstr(err.msg, "300") != NULL, "%s", err.msg);
    cr_expect_neq(access(path, F_OK), 0, "no shard left behind");
    cr_expect_eq(shard_write(path, SHARD_U8, 257, ids, 2, NULL, &err), -EINVAL);
    cr_expect(strstr(err.msg, "does not fit u8") != NULL, "%s", err.msg);
}

/* Opening (with flags) fails with code and a message naming the shard and holding what. */
static void expect_open_fails(unsigned flags, int code, const char *what)
{
    struct shard_file *s = NULL;
    struct gs_error err;

    cr_assert_eq(shard_open(path, flags, &s, &err), code, "%s", err.msg);
    cr_expect_null(s);
    cr_expect(strstr(err.msg, path) != NULL, "names the shard: %s", err.msg);
    cr_expect(strstr(err.msg, what) != NULL, "says '%s': %s", what, err.msg);
}

Test(shard, rejects_a_truncated_file)
{
    free(write_shard(SHARD_U16, 1000, 100));
    cr_assert_eq(truncate(path, SHARD_HEADER_SIZE + 199), 0);
    expect_open_fails(0, -EBADMSG, "truncated");
    cr_assert_eq(truncate(path, 10), 0);
    expect_open_fails(0, -EBADMSG, "truncated");
}

Test(shard, rejects_trailing_bytes)
{
    FILE *f;

    free(write_shard(SHARD_U8, 256, 100));
    f = fopen(path, "ab");
    cr_assert_not_null(f);
    fputc('x', f);
    fclose(f);
    expect_open_fails(0, -EBADMSG, "bytes after");
}

Test(shard, rejects_a_bad_magic)
{
    free(write_shard(SHARD_U8, 256, 100));
    ds_patch(path, 0, "X", 1);
    expect_open_fails(0, -EBADMSG, "bad magic");
}

Test(shard, rejects_a_damaged_header)
{
    unsigned char vocab_byte = 0x7f;

    free(write_shard(SHARD_U16, 1000, 100));
    ds_patch(path, 16, &vocab_byte, 1);
    expect_open_fails(0, -EBADMSG, "header checksum");
}

Test(shard, rejects_a_bad_checksum_when_verifying)
{
    unsigned char b = 0x55;
    struct shard_file *s;
    struct gs_error err;

    free(write_shard(SHARD_U16, 65536, 100)); /* every u16 is an id: only the crc tells */
    ds_patch(path, SHARD_HEADER_SIZE + 7, &b, 1);
    cr_assert_eq(shard_open(path, 0, &s, &err), 0, "%s", err.msg);
    shard_close(s);
    expect_open_fails(SHARD_VERIFY, -EBADMSG, "checksum mismatch");
}

Test(shard, rejects_a_token_not_below_the_vocab)
{
    unsigned char id[2] = {0x2c, 0x01}; /* 300 */
    struct shard_file *s;
    struct gs_error err;
    int32_t got[4], before[50];

    free(write_shard(SHARD_U16, 300, 100));
    ds_patch(path, SHARD_HEADER_SIZE + 2 * 50, id, 2);
    expect_open_fails(SHARD_VERIFY, -EBADMSG, "token 50 is id 300");
    cr_assert_eq(shard_open(path, 0, &s, &err), 0, "%s", err.msg);
    cr_expect_eq(shard_read(s, 48, 4, got, &err), -EBADMSG);
    cr_expect(strstr(err.msg, path) != NULL && strstr(err.msg, "not below vocab 300") != NULL, "%s",
              err.msg);
    cr_expect_eq(shard_read(s, 0, 50, before, &err), 0, "the tokens before it read");
    shard_close(s);
}

Test(shard, read_of_a_file_cut_after_open_is_an_error)
{
    struct shard_file *s;
    struct gs_error err;
    int32_t got[10];

    free(write_shard(SHARD_U32, 1000, 100));
    cr_assert_eq(shard_open(path, 0, &s, &err), 0, "%s", err.msg);
    cr_assert_eq(truncate(path, SHARD_HEADER_SIZE + 40), 0);
    cr_expect_eq(shard_read(s, 0, 10, got, &err), 0);
    cr_expect_eq(shard_read(s, 5, 10, got, &err), -EIO);
    cr_expect(strstr(err.msg, path) != NULL, "%s", err.msg);
    shard_close(s);
}

Test(shard, missing_file_is_named)
{
    expect_open_fails(0, -ENOENT, "cannot open");
}

/* --- manifest --- */

static char manifest_path[4200];

static void manifest_at(void)
{
    snprintf(manifest_path, sizeof(manifest_path), "%s/%s", dir, SHARD_MANIFEST_FILE);
}

/* Replaces the first occurrence of from in the manifest with to. */
static void edit_manifest(const char *from, const char *to)
{
    char text[8192], *at;
    FILE *f;
    size_t n;

    manifest_at();
    f = fopen(manifest_path, "rb");
    cr_assert_not_null(f);
    n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    at = strstr(text, from);
    cr_assert_not_null(at, "'%s' in the manifest", from);
    f = fopen(manifest_path, "wb");
    cr_assert_not_null(f);
    fwrite(text, 1, (size_t)(at - text), f);
    fputs(to, f);
    fputs(at + strlen(from), f);
    fclose(f);
}

static void expect_load_fails(const char *what1, const char *what2)
{
    struct shard_manifest *m = NULL;
    struct gs_error err;

    cr_assert_lt(shard_manifest_load(dir, &m, &err), 0);
    cr_expect_null(m);
    cr_expect(strstr(err.msg, what1) != NULL, "says '%s': %s", what1, err.msg);
    cr_expect(strstr(err.msg, what2) != NULL, "says '%s': %s", what2, err.msg);
}

Test(manifest, round_trips_the_shard_list)
{
    struct shard_manifest *m;

    ds_make(dir, 3, 1, 1000);
    m = ds_load(dir);
    cr_assert_eq(m->nshards, 4);
    cr_expect_eq(m->vocab, DS_VOCAB);
    cr_expect_str_eq(m->shards[0].file, "train-00000.bin");
    cr_expect_str_eq(m->shards[3].file, "val-00003.bin");
    cr_expect_eq(m->shards[3].split, SHARD_SPLIT_VAL);
    cr_expect_eq(m->shards[1].tokens, 1000);
    cr_expect_eq(m->shards[1].dtype, SHARD_U32);
    cr_expect_eq(shard_manifest_tokens(m, SHARD_SPLIT_TRAIN), 3000);
    cr_expect_eq(shard_manifest_tokens(m, SHARD_SPLIT_VAL), 1000);
    for (size_t i = 0; i < m->nshards; i++)
        cr_expect_eq(shard_manifest_check_shard(m, i, SHARD_VERIFY, NULL), 0);
    shard_manifest_free(m);
}

Test(manifest, quotes_file_names)
{
    struct shard_manifest *m = shard_manifest_new(dir), *back;
    const char *name = "we\"ird\\name \xc3\xa9.bin";
    struct shard_header h;
    struct gs_error err;
    uint32_t ids[] = {1, 2, 3};
    char p[4300];

    snprintf(p, sizeof(p), "%s/%s", dir, name);
    cr_assert_eq(shard_write(p, SHARD_U8, 256, ids, 3, &h, &err), 0, "%s", err.msg);
    cr_assert_eq(shard_manifest_add(m, name, SHARD_SPLIT_TRAIN, &h, &err), 0, "%s", err.msg);
    cr_assert_eq(shard_manifest_write(m, &err), 0, "%s", err.msg);
    back = ds_load(dir);
    cr_assert_eq(back->nshards, 1);
    cr_expect_str_eq(back->shards[0].file, name);
    shard_manifest_free(back);
    shard_manifest_free(m);
}

Test(manifest, refuses_a_token_count_the_shard_does_not_have)
{
    ds_make(dir, 2, 0, 1000);
    edit_manifest("tokens = 1000", "tokens = 999");
    expect_load_fails("train-00000.bin", "the manifest says 999");
}

Test(manifest, refuses_a_checksum_the_shard_does_not_have)
{
    struct shard_manifest *m;
    char from[64], to[64];

    ds_make(dir, 2, 0, 1000);
    m = ds_load(dir);
    snprintf(from, sizeof(from), "crc32c = 0x%08X", m->shards[0].crc32c);
    snprintf(to, sizeof(to), "crc32c = 0x%08X", m->shards[0].crc32c ^ 1u);
    shard_manifest_free(m);
    edit_manifest(from, to);
    expect_load_fails("train-00000.bin", "crc32c");
}

Test(manifest, names_a_missing_shard)
{
    char p[4300];

    ds_make(dir, 2, 0, 100);
    snprintf(p, sizeof(p), "%s/train-00001.bin", dir);
    cr_assert_eq(unlink(p), 0);
    expect_load_fails("train-00001.bin", "cannot open");
}

Test(manifest, names_a_truncated_shard)
{
    char p[4300];

    ds_make(dir, 2, 0, 100);
    snprintf(p, sizeof(p), "%s/train-00001.bin", dir);
    cr_assert_eq(truncate(p, 100), 0);
    expect_load_fails("train-00001.bin", "truncated");
}

Test(manifest, refuses_file_names_outside_the_directory)
{
    ds_make(dir, 1, 0, 100);
    edit_manifest("file = \"train-00000.bin\"", "file = \"../train-00000.bin\"");
    expect_load_fails("manifest.toml:6:", "not a plain file name");
}

Test(manifest, refuses_unknown_keys_and_bad_splits)
{
    ds_make(dir, 1, 0, 100);
    edit_manifest("split = \"train\"", "split = \"test\"");
    expect_load_fails("manifest.toml:7:", "train or val");
    edit_manifest("split = \"test\"", "split = \"train\"\nsplits = 1");
    expect_load_fails("manifest.toml:8:", "unknown key 'splits'");
}

Test(manifest, refuses_syntax_errors_with_their_place)
{
    ds_make(dir, 1, 0, 100);
    edit_manifest("format = 1", "format = ");
    expect_load_fails("manifest.toml:3:", "");
}
