/*
 * shard.c: the shard file format, its writer and its validating reader (shard.h).
 *
 * Layout, all integers little-endian, 64-byte header then the tokens:
 *
 *     offset size  field
 *          0    8  magic "GSSHARD\0"
 *          8    4  format version (1)
 *         12    1  dtype: bytes per token, 1 (u8), 2 (u16) or 4 (u32)
 *         13    3  zero
 *         16    4  vocab: every token id is below it (1 .. 2^31, and fits the dtype)
 *         20    4  zero
 *         24    8  token count
 *         32    4  CRC-32C (common/crc32c.h) of the token bytes exactly as stored
 *         36   24  zero
 *         60    4  CRC-32C of header bytes 0..59
 *         64  ...  token count x width bytes of token ids; nothing after them
 *
 * The header has its own checksum so that a flipped bit in the count or the vocab is told
 * apart from a damaged token area (and is caught without reading the tokens). The file size
 * must be exactly 64 + count x width: a shorter file is truncated, a longer one has trailing
 * garbage, and both are errors. Ids are capped at 2^31 - 1 so that readers can deliver them
 * as int32 whatever the dtype.
 *
 * The writer encodes into a 64 KiB buffer (checksumming what it writes), reserves the header
 * with zeros, and fills it in at commit; the temporary file (PATH.tmp-XXXXXX, mkstemp) is
 * fsynced, renamed to PATH and the directory fsynced, so a crash leaves either no shard or a
 * complete one, never a short file under the final name.
 */
#include "sharding/shard.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc32c.h"

#define WRITE_BUF_SIZE 65536
#define READ_CHUNK_TOKENS 16384
#define VOCAB_MAX (UINT32_C(1) << 31)

struct shard_writer {
    char *path;
    char *tmp_path;
    int fd;
    enum shard_dtype dtype;
    uint32_t vocab;
    uint64_t tokens;
    uint32_t crc;
    size_t used; /* bytes waiting in buf */
    unsigned char buf[WRITE_BUF_SIZE];
};

struct shard_file {
    char *path;
    int fd;
    struct shard_header hdr;
};

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const unsigned char *p)
{
    return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

const char *shard_dtype_name(enum shard_dtype dtype)
{
    switch (dtype) {
    case SHARD_U8:
        return "u8";
    case SHARD_U16:
        return "u16";
    case SHARD_U32:
        return "u32";
    }
    return "?";
}

int shard_dtype_parse(const char *name, enum shard_dtype *ret_dtype)
{
    static const enum shard_dtype all[] = {SHARD_U8, SHARD_U16, SHARD_U32};

    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (strcmp(name, shard_dtype_name(all[i])) == 0) {
            *ret_dtype = all[i];
            return 0;
        }
    }
    return -EINVAL;
}

enum shard_dtype shard_dtype_for_vocab(uint64_t vocab)
{
    if (vocab <= 256)
        return SHARD_U8;
    if (vocab <= 65536)
        return SHARD_U16;
    return SHARD_U32;
}

bool shard_vocab_fits(enum shard_dtype dtype, uint64_t vocab)
{
    if (vocab < 1 || vocab > VOCAB_MAX)
        return false;
    switch (dtype) {
    case SHARD_U8:
        return vocab <= 256;
    case SHARD_U16:
        return vocab <= 65536;
    case SHARD_U32:
        return true;
    }
    return false;
}

static void encode_header(const struct shard_header *h, unsigned char *p)
{
    memset(p, 0, SHARD_HEADER_SIZE);
    memcpy(p, SHARD_MAGIC, 8);
    put_le32(p + 8, h->version);
    p[12] = (unsigned char)h->dtype;
    put_le32(p + 16, h->vocab);
    put_le64(p + 24, h->tokens);
    put_le32(p + 32, h->crc32c);
    put_le32(p + 60, gs_crc32c(0, p, 60));
}

/* Writes all of len bytes at offset; a short write is retried, an error is -errno. */
static int pwrite_all(int fd, const void *data, size_t len, off_t offset)
{
    const unsigned char *p = data;

    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, offset);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        p += n;
        len -= (size_t)n;
        offset += n;
    }
    return 0;
}

/* Reads all of len bytes at offset. -EIO when the file ends first. */
static int pread_all(int fd, void *data, size_t len, off_t offset)
{
    unsigned char *p = data;

    while (len > 0) {
        ssize_t n = pread(fd, p, len, offset);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -EIO;
        p += n;
        len -= (size_t)n;
        offset += n;
    }
    return 0;
}

/* fsync of the directory holding path, so that a rename into it is durable. */
static int fsync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    int fd, rc = 0;

    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -errno;
    if (fsync(fd) < 0 && errno != EINVAL) /* some file systems cannot sync directories */
        rc = -errno;
    close(fd);
    return rc;
}

static void writer_free(struct shard_writer *w)
{
    if (w == NULL)
        return;
    if (w->fd >= 0)
        close(w->fd);
    free(w->path);
    free(w->tmp_path);
    free(w);
}

int shard_writer_open(const char *path, enum shard_dtype dtype, uint32_t vocab,
                      struct shard_writer **ret_writer, struct gs_error *err)
{
    static const unsigned char zeros[SHARD_HEADER_SIZE];
    struct shard_writer *w;
    size_t tmp_len = strlen(path) + sizeof(".tmp-XXXXXX");
    int rc;

    if (!shard_vocab_fits(dtype, vocab))
        return gs_error_set(err, -EINVAL, 0, 0, "shard %s: vocab %" PRIu32 " does not fit %s", path,
                            vocab, shard_dtype_name(dtype));
    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "shard %s: out of memory", path);
    w->fd = -1;
    w->dtype = dtype;
    w->vocab = vocab;
    w->path = strdup(path);
    w->tmp_path = malloc(tmp_len);
    if (w->path == NULL || w->tmp_path == NULL) {
        rc = gs_error_set(err, -ENOMEM, 0, 0, "shard %s: out of memory", path);
        goto out_free;
    }
    snprintf(w->tmp_path, tmp_len, "%s.tmp-XXXXXX", path);
    w->fd = mkstemp(w->tmp_path);
    if (w->fd < 0) {
        rc = -errno;
        gs_error_set(err, rc, 0, 0, "shard %s: cannot create: %s", path, gs_strerror(rc));
        goto out_free;
    }
    /* Readable like any file the user writes: mkstemp makes it 0600. */
    if (fchmod(w->fd, 0644) < 0 || pwrite_all(w->fd, zeros, sizeof(zeros), 0) < 0) {
        rc = -errno;
        gs_error_set(err, rc, 0, 0, "shard %s: cannot write: %s", path, gs_strerror(rc));
        goto out_abort;
    }
    *ret_writer = w;
    return 0;
out_abort:
    unlink(w->tmp_path);
out_free:
    writer_free(w);
    return rc;
}

static int flush_buf(struct shard_writer *w, struct gs_error *err)
{
    off_t offset = (off_t)(SHARD_HEADER_SIZE + w->tokens * (uint64_t)w->dtype - w->used);
    int rc;

    if (w->used == 0)
        return 0;
    rc = pwrite_all(w->fd, w->buf, w->used, offset);
    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "shard %s: cannot write: %s", w->path, gs_strerror(rc));
    w->crc = gs_crc32c(w->crc, w->buf, w->used);
    w->used = 0;
    return 0;
}

int shard_writer_append(struct shard_writer *w, const uint32_t *tokens, size_t n,
                        struct gs_error *err)
{
    size_t width = (size_t)w->dtype;
    int rc;

    for (size_t i = 0; i < n; i++) {
        if (tokens[i] >= w->vocab)
            return gs_error_set(err, -EINVAL, 0, 0,
                                "shard %s: token id %" PRIu32 " is not below vocab %" PRIu32,
                                w->path, tokens[i], w->vocab);
    }
    for (size_t i = 0; i < n; i++) {
        if (w->used + width > sizeof(w->buf)) {
            rc = flush_buf(w, err);
            if (rc < 0)
                return rc;
        }
        for (size_t b = 0; b < width; b++)
            w->buf[w->used++] = (unsigned char)(tokens[i] >> (8 * b));
        w->tokens++;
    }
    return 0;
}

uint64_t shard_writer_tokens(const struct shard_writer *w)
{
    return w->tokens;
}

int shard_writer_commit(struct shard_writer *w, struct shard_header *ret_header,
                        struct gs_error *err)
{
    unsigned char raw[SHARD_HEADER_SIZE];
    struct shard_header h;
    int rc = flush_buf(w, err);

    if (rc < 0)
        goto out_abort;
    h = (struct shard_header){.version = SHARD_VERSION,
                              .dtype = w->dtype,
                              .vocab = w->vocab,
                              .tokens = w->tokens,
                              .crc32c = w->crc};
    encode_header(&h, raw);
    rc = pwrite_all(w->fd, raw, sizeof(raw), 0);
    if (rc == 0 && fsync(w->fd) < 0)
        rc = -errno;
    if (rc == 0 && rename(w->tmp_path, w->path) < 0)
        rc = -errno;
    if (rc < 0) {
        gs_error_set(err, rc, 0, 0, "shard %s: cannot write: %s", w->path, gs_strerror(rc));
        goto out_abort;
    }
    rc = fsync_parent(w->path);
    if (rc < 0)
        gs_error_set(err, rc, 0, 0, "shard %s: cannot sync its directory: %s", w->path,
                     gs_strerror(rc));
    else if (ret_header != NULL)
        *ret_header = h;
    writer_free(w);
    return rc;
out_abort:
    shard_writer_abort(w);
    return rc;
}

void shard_writer_abort(struct shard_writer *w)
{
    if (w == NULL)
        return;
    unlink(w->tmp_path);
    writer_free(w);
}

int shard_write(const char *path, enum shard_dtype dtype, uint32_t vocab, const uint32_t *tokens,
                size_t n, struct shard_header *ret_header, struct gs_error *err)
{
    struct shard_writer *w;
    int rc = shard_writer_open(path, dtype, vocab, &w, err);

    if (rc < 0)
        return rc;
    rc = shard_writer_append(w, tokens, n, err);
    if (rc < 0) {
        shard_writer_abort(w);
        return rc;
    }
    return shard_writer_commit(w, ret_header, err);
}

/* --- reading --- */

/* Checks a raw header and the file size against it; fills *h. */
static int decode_header(const char *path, const unsigned char *p, uint64_t file_size,
                         struct shard_header *h, struct gs_error *err)
{
    uint64_t want;

    if (memcmp(p, SHARD_MAGIC, 8) != 0)
        return gs_error_set(err, -EBADMSG, 0, 0, "shard %s: not a gsched shard (bad magic)", path);
    if (get_le32(p + 60) != gs_crc32c(0, p, 60))
        return gs_error_set(err, -EBADMSG, 0, 0, "shard %s: header checksum mismatch", path);
    h->version = get_le32(p + 8);
    if (h->version != SHARD_VERSION)
        return gs_error_set(err, -EBADMSG, 0, 0,
                            "shard %s: format version %" PRIu32 ", this gsched reads %d", path,
                            h->version, SHARD_VERSION);
    h->dtype = (enum shard_dtype)p[12];
    if (p[12] != SHARD_U8 && p[12] != SHARD_U16 && p[12] != SHARD_U32)
        return gs_error_set(err, -EBADMSG, 0, 0, "shard %s: unknown token dtype code %u", path,
                            p[12]);
    h->vocab = get_le32(p + 16);
    if (!shard_vocab_fits(h->dtype, h->vocab))
        return gs_error_set(err, -EBADMSG, 0, 0, "shard %s: vocab %" PRIu32 " does not fit %s",
                            path, h->vocab, shard_dtype_name(h->dtype));
    h->tokens = get_le64(p + 24);
    h->crc32c = get_le32(p + 32);
    if (h->tokens > (UINT64_MAX - SHARD_HEADER_SIZE) / (uint64_t)h->dtype)
        return gs_error_set(err, -EBADMSG, 0, 0, "shard %s: impossible token count %" PRIu64, path,
                            h->tokens);
    want = SHARD_HEADER_SIZE + h->tokens * (uint64_t)h->dtype;
    if (file_size < want)
        return gs_error_set(err, -EBADMSG, 0, 0,
                            "shard %s: truncated: %" PRIu64 " bytes, the header says %" PRIu64
                            " (%" PRIu64 " %s tokens)",
                            path, file_size, want, h->tokens, shard_dtype_name(h->dtype));
    if (file_size > want)
        return gs_error_set(err, -EBADMSG, 0, 0,
                            "shard %s: %" PRIu64 " bytes after the %" PRIu64 " tokens", path,
                            file_size - want, h->tokens);
    return 0;
}

/* Decodes n tokens of width w from raw into out, checking each id against vocab. */
static int decode_tokens(const struct shard_file *s, const unsigned char *raw, size_t n,
                         uint64_t first, int32_t *out, struct gs_error *err)
{
    size_t w = (size_t)s->hdr.dtype;

    for (size_t i = 0; i < n; i++) {
        uint32_t id = 0;

        for (size_t b = 0; b < w; b++)
            id |= (uint32_t)raw[i * w + b] << (8 * b);
        if (id >= s->hdr.vocab)
            return gs_error_set(err, -EBADMSG, 0, 0,
                                "shard %s: token %" PRIu64 " is id %" PRIu32
                                ", not below vocab %" PRIu32,
                                s->path, first + i, id, s->hdr.vocab);
        out[i] = (int32_t)id;
    }
    return 0;
}

/* Reads every token: the checksum must match and every id be below the vocab. */
static int verify(struct shard_file *s, struct gs_error *err)
{
    unsigned char *raw = malloc(READ_CHUNK_TOKENS * 4);
    int32_t *ids = malloc(READ_CHUNK_TOKENS * sizeof(*ids));
    size_t w = (size_t)s->hdr.dtype;
    uint32_t crc = 0;
    int rc = 0;

    if (raw == NULL || ids == NULL) {
        rc = gs_error_set(err, -ENOMEM, 0, 0, "shard %s: out of memory", s->path);
        goto out;
    }
    for (uint64_t at = 0; at < s->hdr.tokens && rc == 0; at += READ_CHUNK_TOKENS) {
        size_t n = s->hdr.tokens - at < READ_CHUNK_TOKENS ? (size_t)(s->hdr.tokens - at)
                                                          : READ_CHUNK_TOKENS;

        rc = pread_all(s->fd, raw, n * w, (off_t)(SHARD_HEADER_SIZE + at * w));
        if (rc < 0) {
            gs_error_set(err, rc, 0, 0, "shard %s: cannot read: %s", s->path, gs_strerror(rc));
            goto out;
        }
        crc = gs_crc32c(crc, raw, n * w);
        rc = decode_tokens(s, raw, n, at, ids, err);
    }
    if (rc == 0 && crc != s->hdr.crc32c)
        rc = gs_error_set(err, -EBADMSG, 0, 0,
                          "shard %s: token checksum mismatch: crc32c %08" PRIx32
                          ", the header says %08" PRIx32,
                          s->path, crc, s->hdr.crc32c);
out:
    free(raw);
    free(ids);
    return rc;
}

int shard_open(const char *path, unsigned flags, struct shard_file **ret_shard,
               struct gs_error *err)
{
    unsigned char raw[SHARD_HEADER_SIZE];
    struct shard_file *s = calloc(1, sizeof(*s));
    struct stat st;
    int rc;

    if (s == NULL || (s->path = strdup(path)) == NULL) {
        free(s);
        return gs_error_set(err, -ENOMEM, 0, 0, "shard %s: out of memory", path);
    }
    s->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (s->fd < 0 || fstat(s->fd, &st) < 0) {
        rc = -errno;
        gs_error_set(err, rc, 0, 0, "shard %s: cannot open: %s", path, gs_strerror(rc));
        goto out_close;
    }
    if ((uint64_t)st.st_size < SHARD_HEADER_SIZE) {
        rc = gs_error_set(err, -EBADMSG, 0, 0,
                          "shard %s: truncated: %lld bytes, shorter than the %d-byte header", path,
                          (long long)st.st_size, SHARD_HEADER_SIZE);
        goto out_close;
    }
    rc = pread_all(s->fd, raw, sizeof(raw), 0);
    if (rc < 0) {
        gs_error_set(err, rc, 0, 0, "shard %s: cannot read: %s", path, gs_strerror(rc));
        goto out_close;
    }
    rc = decode_header(path, raw, (uint64_t)st.st_size, &s->hdr, err);
    if (rc == 0 && (flags & SHARD_VERIFY))
        rc = verify(s, err);
    if (rc < 0)
        goto out_close;
    *ret_shard = s;
    return 0;
out_close:
    shard_close(s);
    return rc;
}

void shard_close(struct shard_file *s)
{
    if (s == NULL)
        return;
    if (s->fd >= 0)
        close(s->fd);
    free(s->path);
    free(s);
}

const struct shard_header *shard_header(const struct shard_file *s)
{
    return &s->hdr;
}

int shard_read(struct shard_file *s, uint64_t first, size_t count, int32_t *out,
               struct gs_error *err)
{
    unsigned char raw[4096];
    size_t w = (size_t)s->hdr.dtype, per = sizeof(raw) / w;
    int rc;

    if (first > s->hdr.tokens || count > s->hdr.tokens - first)
        return gs_error_set(err, -ERANGE, 0, 0,
                            "shard %s: tokens %" PRIu64 "..+%zu pass its end (%" PRIu64 ")",
                            s->path, first, count, s->hdr.tokens);
    for (size_t done = 0; done < count; done += per) {
        size_t n = count - done < per ? count - done : per;

        rc = pread_all(s->fd, raw, n * w, (off_t)(SHARD_HEADER_SIZE + (first + done) * w));
        if (rc < 0)
            return gs_error_set(err, -EIO, 0, 0, "shard %s: cannot read tokens: %s", s->path,
                                rc == -EIO ? "file is shorter than its header says"
                                           : gs_strerror(rc));
        rc = decode_tokens(s, raw, n, first + done, out + done, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}
