/*
 * manifest.c: DIR/manifest.toml, the list of a dataset's shards (format in manifest.h).
 *
 * Written by hand rather than through a TOML writer: the values are few and typed, and the
 * only free text, a shard's file name, goes through shard_toml_quote(), which escapes what a TOML
 * basic string cannot hold as is. Read with common/toml.h, strictly: unknown keys, missing
 * keys, wrong types, file names that leave the directory and duplicate names are errors at
 * their line:col, because a manifest that says something else than the shards is the one
 * thing a training run must not trust silently.
 */
#include "sharding/manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/toml.h"
#include "sharding/tomlfile.h"

const char *shard_split_name(enum shard_split split)
{
    return split == SHARD_SPLIT_VAL ? "val" : "train";
}

struct shard_manifest *shard_manifest_new(const char *dir)
{
    struct shard_manifest *m = calloc(1, sizeof(*m));

    if (m == NULL || (m->dir = strdup(dir)) == NULL) {
        free(m);
        return NULL;
    }
    return m;
}

void shard_manifest_free(struct shard_manifest *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->nshards; i++) {
        free(m->shards[i].file);
        free(m->shards[i].path);
    }
    free(m->shards);
    free(m->dir);
    free(m);
}

/* A name inside the directory: no '/', not "." or "..", no control characters. */
static bool plain_name(const char *name, size_t len)
{
    if (len == 0 || strlen(name) != len || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (name[i] == '/' || (unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return false;
    }
    return true;
}

/* Appends an entry (file and path copied); checks the name and the shared vocab. */
static int add_entry(struct shard_manifest *m, const struct shard_manifest_shard *e,
                     const char *where, struct gs_error *err)
{
    struct shard_manifest_shard *s;
    size_t path_len = strlen(m->dir) + strlen(e->file) + 2;

    if (!plain_name(e->file, strlen(e->file)))
        return gs_error_set(err, -EINVAL, 0, 0, "%sshard file '%s' is not a plain file name", where,
                            e->file);
    for (size_t i = 0; i < m->nshards; i++) {
        if (strcmp(m->shards[i].file, e->file) == 0)
            return gs_error_set(err, -EINVAL, 0, 0, "%sshard %s is listed twice", where, e->file);
    }
    if (m->nshards > 0 && e->vocab != m->vocab)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "%sshard %s has vocab %" PRIu32 ", the shards before it %" PRIu32,
                            where, e->file, e->vocab, m->vocab);
    if (m->nshards == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 16;
        struct shard_manifest_shard *grown = realloc(m->shards, cap * sizeof(*grown));

        if (grown == NULL)
            return gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
        m->shards = grown;
        m->cap = cap;
    }
    s = &m->shards[m->nshards];
    *s = *e;
    s->file = strdup(e->file);
    s->path = malloc(path_len);
    if (s->file == NULL || s->path == NULL) {
        free(s->file);
        free(s->path);
        return gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
    }
    snprintf(s->path, path_len, "%s/%s", m->dir, e->file);
    m->vocab = e->vocab;
    m->nshards++;
    return 0;
}

int shard_manifest_add(struct shard_manifest *m, const char *file, enum shard_split split,
                       const struct shard_header *h, struct gs_error *err)
{
    struct shard_manifest_shard e = {.file = (char *)file,
                                     .split = split,
                                     .tokens = h->tokens,
                                     .crc32c = h->crc32c,
                                     .dtype = h->dtype,
                                     .vocab = h->vocab};

    return add_entry(m, &e, "", err);
}

uint64_t shard_manifest_tokens(const struct shard_manifest *m, enum shard_split split)
{
    uint64_t n = 0;

    for (size_t i = 0; i < m->nshards; i++) {
        if (m->shards[i].split == split)
            n += m->shards[i].tokens;
    }
    return n;
}

/* s as a TOML basic string: quotes, backslashes and control characters escaped. */
static int format_manifest(const struct shard_manifest *m, struct gs_buf *out)
{
    int rc = gs_buf_printf(out,
                           "# gsched dataset manifest, written by `gsched shard build`.\n"
                           "# Shards in stream order; crc32c is of each shard's token bytes.\n"
                           "format = %d\n",
                           SHARD_MANIFEST_FORMAT);

    for (size_t i = 0; rc == 0 && i < m->nshards; i++) {
        const struct shard_manifest_shard *s = &m->shards[i];

        rc = gs_buf_append_str(out, "\n[[shard]]\nfile = ");
        if (rc == 0)
            rc = shard_toml_quote(out, s->file);
        if (rc == 0)
            rc = gs_buf_printf(out,
                               "\nsplit = \"%s\"\ntokens = %" PRIu64 "\ncrc32c = 0x%08" PRIX32
                               "\ndtype = \"%s\"\nvocab = %" PRIu32 "\n",
                               shard_split_name(s->split), s->tokens, s->crc32c,
                               shard_dtype_name(s->dtype), s->vocab);
    }
    return rc;
}

int shard_manifest_write(const struct shard_manifest *m, struct gs_error *err)
{
    struct gs_buf text = GS_BUF_INIT;
    char path[PATH_MAX];
    int rc;

    snprintf(path, sizeof(path), "%s/%s", m->dir, SHARD_MANIFEST_FILE);
    rc = format_manifest(m, &text);
    if (rc < 0)
        gs_error_set(err, rc, 0, 0, "%s: out of memory", path);
    else
        rc = shard_toml_write(path, &text, err);
    gs_buf_release(&text);
    return rc;
}

/* --- reading --- */

static int get_uint(struct shard_toml_reader *r, const struct gs_toml_value *t, const char *key,
                    uint64_t max, uint64_t *out)
{
    const struct gs_toml_value *v = gs_toml_get(t, key);
    int64_t x;

    if (v == NULL)
        return shard_toml_bad_at(r, t, "shard entry lacks '%s'", key);
    if (gs_toml_as_int(v, &x) < 0 || x < 0 || (uint64_t)x > max)
        return shard_toml_bad_at(r, v, "'%s' must be a non-negative integer in range", key);
    *out = (uint64_t)x;
    return 0;
}

static int get_string(struct shard_toml_reader *r, const struct gs_toml_value *t, const char *key,
                      const char **out, size_t *len)
{
    const struct gs_toml_value *v = gs_toml_get(t, key);

    if (v == NULL)
        return shard_toml_bad_at(r, t, "shard entry lacks '%s'", key);
    if (gs_toml_as_string(v, out, len) < 0)
        return shard_toml_bad_at(r, v, "'%s' must be a string", key);
    return 0;
}

/* One [[shard]] table into m. */
static int read_entry(struct shard_toml_reader *r, const struct gs_toml_value *t,
                      struct shard_manifest *m)
{
    static const char *const keys[] = {"file", "split", "tokens", "crc32c", "dtype", "vocab", NULL};
    struct shard_manifest_shard e = {0};
    const char *file, *split, *dtype;
    uint64_t crc = 0, vocab = 0; /* set when rc stays 0; GCC -O3 cannot tell */
    size_t file_len;
    char where[PATH_MAX + 32];
    int rc;

    if (gs_toml_type(t) != GS_TOML_TABLE)
        return shard_toml_bad_at(r, t, "%s must be a table of a shard's facts", "shard");
    rc = shard_toml_check_keys(r, t, keys);
    if (rc == 0)
        rc = get_string(r, t, "file", &file, &file_len);
    if (rc == 0 && !plain_name(file, file_len))
        rc = shard_toml_bad_at(r, gs_toml_get(t, "file"), "file '%s' is not a plain file name",
                               file);
    if (rc == 0)
        rc = get_string(r, t, "split", &split, NULL);
    if (rc == 0 && strcmp(split, "train") != 0 && strcmp(split, "val") != 0)
        rc =
            shard_toml_bad_at(r, gs_toml_get(t, "split"), "split is train or val, not '%s'", split);
    if (rc == 0)
        rc = get_uint(r, t, "tokens", INT64_MAX, &e.tokens);
    if (rc == 0)
        rc = get_uint(r, t, "crc32c", UINT32_MAX, &crc);
    if (rc == 0)
        rc = get_string(r, t, "dtype", &dtype, NULL);
    if (rc == 0 && shard_dtype_parse(dtype, &e.dtype) < 0)
        rc = shard_toml_bad_at(r, gs_toml_get(t, "dtype"), "dtype is u8, u16 or u32, not '%s'",
                               dtype);
    if (rc == 0)
        rc = get_uint(r, t, "vocab", UINT32_MAX, &vocab);
    if (rc == 0 && !shard_vocab_fits(e.dtype, vocab))
        rc = shard_toml_bad_at(r, gs_toml_get(t, "vocab"), "vocab does not fit dtype %s", dtype);
    if (rc < 0)
        return rc;
    e.file = (char *)file;
    e.split = strcmp(split, "val") == 0 ? SHARD_SPLIT_VAL : SHARD_SPLIT_TRAIN;
    e.crc32c = (uint32_t)crc;
    e.vocab = (uint32_t)vocab;
    snprintf(where, sizeof(where), "%s:%d:%d: ", r->path, gs_toml_line(t), gs_toml_col(t));
    return add_entry(m, &e, where, r->err);
}

static int read_doc(struct shard_toml_reader *r, const struct gs_toml_value *root,
                    struct shard_manifest *m)
{
    static const char *const keys[] = {"format", "shard", NULL};
    const struct gs_toml_value *format = gs_toml_get(root, "format");
    const struct gs_toml_value *shards = gs_toml_get(root, "shard");
    int64_t fmt;
    int rc = shard_toml_check_keys(r, root, keys);

    if (rc < 0)
        return rc;
    if (format == NULL)
        return gs_error_set(r->err, -EINVAL, 0, 0, "%s: no 'format' key: not a manifest", r->path);
    if (gs_toml_as_int(format, &fmt) < 0 || fmt != SHARD_MANIFEST_FORMAT)
        return shard_toml_bad_at(r, format, "format must be %s (this gsched's manifest format)",
                                 "1");
    if (shards != NULL && gs_toml_type(shards) != GS_TOML_ARRAY)
        return shard_toml_bad_at(r, shards, "%s must be an array of tables ([[shard]])", "shard");
    for (size_t i = 0; rc == 0 && i < gs_toml_count(shards); i++)
        rc = read_entry(r, gs_toml_at(shards, i), m);
    return rc;
}

int shard_manifest_read(const char *dir, struct shard_manifest **ret_manifest, struct gs_error *err)
{
    struct gs_toml_doc *doc = NULL;
    struct shard_manifest *m = shard_manifest_new(dir);
    char path[PATH_MAX];
    struct shard_toml_reader r = {path, err};
    int rc;

    snprintf(path, sizeof(path), "%s/%s", dir, SHARD_MANIFEST_FILE);
    if (m == NULL) {
        rc = gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
        goto out;
    }
    rc = gs_toml_parse_file(path, &doc, err);
    if (rc < 0)
        goto out;
    rc = read_doc(&r, gs_toml_root(doc), m);
    if (rc == 0) {
        *ret_manifest = m;
        m = NULL;
    }
out:
    shard_manifest_free(m);
    gs_toml_free(doc);
    return rc;
}

int shard_manifest_check_shard(const struct shard_manifest *m, size_t i, unsigned flags,
                               struct gs_error *err)
{
    const struct shard_manifest_shard *e = &m->shards[i];
    const struct shard_header *h;
    struct shard_file *s;
    int rc = shard_open(e->path, flags, &s, err);

    if (rc < 0)
        return rc;
    h = shard_header(s);
    if (h->tokens != e->tokens)
        rc = gs_error_set(err, -EBADMSG, 0, 0,
                          "shard %s: %" PRIu64 " tokens, the manifest says %" PRIu64, e->path,
                          h->tokens, e->tokens);
    else if (h->crc32c != e->crc32c)
        rc = gs_error_set(err, -EBADMSG, 0, 0,
                          "shard %s: crc32c %08" PRIx32 ", the manifest says %08" PRIx32, e->path,
                          h->crc32c, e->crc32c);
    else if (h->dtype != e->dtype)
        rc = gs_error_set(err, -EBADMSG, 0, 0, "shard %s: dtype %s, the manifest says %s", e->path,
                          shard_dtype_name(h->dtype), shard_dtype_name(e->dtype));
    else if (h->vocab != e->vocab)
        rc = gs_error_set(err, -EBADMSG, 0, 0,
                          "shard %s: vocab %" PRIu32 ", the manifest says %" PRIu32, e->path,
                          h->vocab, e->vocab);
    shard_close(s);
    return rc;
}

int shard_manifest_load(const char *dir, struct shard_manifest **ret_manifest, struct gs_error *err)
{
    struct shard_manifest *m = NULL;
    int rc = shard_manifest_read(dir, &m, err);

    for (size_t i = 0; rc == 0 && i < m->nshards; i++)
        rc = shard_manifest_check_shard(m, i, 0, err);
    if (rc < 0) {
        shard_manifest_free(m);
        return rc;
    }
    *ret_manifest = m;
    return 0;
}
