/*
 * tensorfile.c: reading and writing ".gstf" named-tensor files (see tensorfile.h). The reader
 * copies each tensor into its own 64-byte-aligned slot of one allocation: names make tensor
 * data land at any offset in the file, and float arrays must not be read unaligned.
 */
#define _POSIX_C_SOURCE 200809L

#include "trainer/tensorfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/crc32c.h"
#include "common/path.h"

#define MAGIC "GSTF"
#define ALIGN 64

struct trn_tf {
    struct trn_tensor *t;
    char **names;
    size_t n;
    void *arena;
};

static size_t dtype_size(enum trn_tf_dtype d)
{
    return d == TRN_TF_U8 ? 1 : 4;
}

size_t trn_tensor_count(const struct trn_tensor *t)
{
    size_t n = 1;

    for (uint32_t i = 0; i < t->rank; i++)
        n *= t->dims[i];
    return n;
}

size_t trn_tensor_bytes(const struct trn_tensor *t)
{
    return trn_tensor_count(t) * dtype_size(t->dtype);
}

size_t trn_tf_size(const struct trn_tensor *t, size_t n)
{
    size_t size = 12 + 4; /* header, CRC */

    for (size_t i = 0; i < n; i++)
        size += 2 + strlen(t[i].name) + 2 + 4 * (size_t)t[i].rank + trn_tensor_bytes(&t[i]);
    return size;
}

static unsigned char *put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
    return p + 4;
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Host order is little-endian on every machine gsched builds for; checked, not assumed. */
static bool little_endian(void)
{
    const uint32_t one = 1;

    return *(const unsigned char *)&one == 1;
}

int trn_tf_serialize(void *buf, size_t size, const struct trn_tensor *t, size_t n)
{
    unsigned char *p = buf;

    if (!little_endian() || size < trn_tf_size(t, n) || n > UINT32_MAX)
        return -EINVAL;
    memcpy(p, MAGIC, 4);
    p = put_u32(p + 4, 2);
    p = put_u32(p, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(t[i].name), bytes = trn_tensor_bytes(&t[i]);

        if (len > UINT16_MAX || t[i].rank > TRN_TF_MAX_RANK || t[i].dtype > TRN_TF_U8)
            return -EINVAL;
        *p++ = (unsigned char)len;
        *p++ = (unsigned char)(len >> 8);
        memcpy(p, t[i].name, len);
        p += len;
        *p++ = (unsigned char)t[i].dtype;
        *p++ = (unsigned char)t[i].rank;
        for (uint32_t d = 0; d < t[i].rank; d++)
            p = put_u32(p, t[i].dims[d]);
        if (bytes > 0)
            memcpy(p, t[i].data, bytes);
        p += bytes;
    }
    put_u32(p, gs_crc32c(0, buf, (size_t)(p - (unsigned char *)buf)));
    return 0;
}

static int fsync_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash == NULL ? strdup(".") : strndup(path, (size_t)(slash - path) + 1);
    int fd, rc = 0;

    if (dir == NULL)
        return -ENOMEM;
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) < 0)
        rc = -errno;
    if (fd >= 0)
        close(fd);
    free(dir);
    return rc;
}

int trn_write_file_durably(const char *path, const void *data, size_t len)
{
    return trn_write_file_durably_timed(path, data, len, NULL);
}

int trn_write_file_durably_timed(const char *path, const void *data, size_t len,
                                 struct trn_write_times *times)
{
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    int fd = -1, rc = 0;

    if (times != NULL)
        *times = (struct trn_write_times){0};
    if (tmp == NULL)
        return -ENOMEM;
    if (times != NULL)
        times->start = gs_clock_mono_ns();
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = -errno;
        goto out;
    }
    rc = gs_write_all(fd, data, len);
    if (times != NULL)
        times->written = gs_clock_mono_ns();
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    fd = -1;
    if (times != NULL)
        times->synced = gs_clock_mono_ns();
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    if (rc == 0)
        rc = fsync_dir_of(path);
    if (times != NULL)
        times->renamed = gs_clock_mono_ns();
out:
    if (rc < 0)
        unlink(tmp);
    free(tmp);
    return rc;
}

/* --- reading ---------------------------------------------------------------------------- */

static int bad(struct gs_buf *err, const char *name, const char *what, size_t at)
{
    if (err != NULL)
        gs_buf_printf(err, "%s: %s (at byte %zu)", name, what, at);
    return -EINVAL;
}

void trn_tf_close(struct trn_tf *tf)
{
    if (tf == NULL)
        return;
    for (size_t i = 0; i < tf->n; i++)
        free(tf->names[i]);
    free(tf->names);
    free(tf->t);
    free(tf->arena);
    free(tf);
}

/* First pass: every header inside the image; the arena size the data needs. */
static int scan(const unsigned char *p, size_t len, const char *name, uint32_t n, size_t *ret_arena,
                struct gs_buf *err)
{
    size_t off = 12, arena = 0;

    for (uint32_t i = 0; i < n; i++) {
        struct trn_tensor t = {0};
        size_t nlen, count = 1;

        if (len - off < 2)
            return bad(err, name, "truncated tensor header", off);
        nlen = (size_t)p[off] | (size_t)p[off + 1] << 8;
        if (len - off - 2 < nlen + 2)
            return bad(err, name, "truncated tensor name", off);
        off += 2 + nlen;
        t.dtype = p[off];
        t.rank = p[off + 1];
        off += 2;
        if (t.dtype > TRN_TF_U8 || t.rank > TRN_TF_MAX_RANK)
            return bad(err, name, "bad tensor dtype or rank", off - 2);
        if (len - off < 4 * (size_t)t.rank)
            return bad(err, name, "truncated tensor dims", off);
        for (uint32_t d = 0; d < t.rank; d++, off += 4) {
            t.dims[d] = get_u32(p + off);
            /* No product of dims may overflow: anything past the file's size is wrong. */
            if (t.dims[d] != 0 && count > len / dtype_size(t.dtype) / t.dims[d])
                return bad(err, name, "tensor larger than the file", off);
            count *= t.dims[d];
        }
        if (len - off < trn_tensor_bytes(&t))
            return bad(err, name, "truncated tensor data", off);
        off += trn_tensor_bytes(&t);
        arena += (trn_tensor_bytes(&t) + ALIGN - 1) / ALIGN * ALIGN;
    }
    if (off != len)
        return bad(err, name, "trailing bytes after the last tensor", off);
    *ret_arena = arena;
    return 0;
}

int trn_tf_parse(const void *data, size_t len, const char *name, struct trn_tf **ret,
                 struct gs_buf *err)
{
    const unsigned char *p = data;
    struct trn_tf *tf = NULL;
    uint32_t version, n;
    size_t arena = 0, off = 12, slot = 0;
    int rc;

    if (!little_endian())
        return bad(err, name, "this machine is big-endian", 0);
    if (len < 12 || memcmp(p, MAGIC, 4) != 0)
        return bad(err, name, "not a gsched tensor file (no GSTF magic)", 0);
    version = get_u32(p + 4);
    n = get_u32(p + 8);
    if (version != 1 && version != 2)
        return bad(err, name, "unknown tensor file version", 4);
    if (version == 2) {
        if (len < 16)
            return bad(err, name, "truncated", len);
        len -= 4;
        if (gs_crc32c(0, p, len) != get_u32(p + len))
            return bad(err, name, "checksum mismatch: the file is corrupt", len);
    }
    rc = scan(p, len, name, n, &arena, err);
    if (rc < 0)
        return rc;
    tf = calloc(1, sizeof(*tf));
    if (tf == NULL)
        return -ENOMEM;
    tf->t = calloc(n + 1, sizeof(*tf->t));
    tf->names = calloc(n + 1, sizeof(*tf->names));
    if (arena > 0 && posix_memalign(&tf->arena, ALIGN, arena) != 0)
        tf->arena = NULL;
    if (tf->t == NULL || tf->names == NULL || (arena > 0 && tf->arena == NULL))
        goto oom;
    for (; tf->n < n; tf->n++) {
        struct trn_tensor *t = &tf->t[tf->n];
        size_t nlen = (size_t)p[off] | (size_t)p[off + 1] << 8, bytes;

        tf->names[tf->n] = strndup((const char *)p + off + 2, nlen);
        if (tf->names[tf->n] == NULL)
            goto oom;
        off += 2 + nlen;
        t->name = tf->names[tf->n];
        t->dtype = p[off];
        t->rank = p[off + 1];
        off += 2;
        for (uint32_t d = 0; d < t->rank; d++, off += 4)
            t->dims[d] = get_u32(p + off);
        bytes = trn_tensor_bytes(t);
        t->data = (char *)tf->arena + slot;
        if (bytes > 0)
            memcpy((char *)tf->arena + slot, p + off, bytes);
        off += bytes;
        slot += (bytes + ALIGN - 1) / ALIGN * ALIGN;
    }
    *ret = tf;
    return 0;
oom:
    trn_tf_close(tf);
    return -ENOMEM;
}

int trn_tf_open(const char *path, struct trn_tf **ret, struct gs_buf *err)
{
    struct stat st;
    void *data = NULL;
    size_t got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

    if (fd < 0 || fstat(fd, &st) < 0) {
        rc = -errno;
        goto out;
    }
    data = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
    if (data == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, (char *)data + got, (size_t)st.st_size - got);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r < 0 ? -errno : -EIO;
            goto out;
        }
        got += (size_t)r;
    }
    rc = trn_tf_parse(data, got, path, ret, err);
    free(data);
    data = NULL;
out:
    if (rc < 0 && rc != -EINVAL && err != NULL)
        gs_buf_printf(err, "%s: %s", path, strerror(-rc));
    if (fd >= 0)
        close(fd);
    free(data);
    return rc;
}

size_t trn_tf_ntensors(const struct trn_tf *tf)
{
    return tf->n;
}

const struct trn_tensor *trn_tf_at(const struct trn_tf *tf, size_t i)
{
    return i < tf->n ? &tf->t[i] : NULL;
}

const struct trn_tensor *trn_tf_find(const struct trn_tf *tf, const char *name)
{
    for (size_t i = 0; i < tf->n; i++) {
        if (strcmp(tf->t[i].name, name) == 0)
            return &tf->t[i];
    }
    return NULL;
}

const struct trn_tensor *trn_tf_expect(const struct trn_tf *tf, const char *name,
                                       enum trn_tf_dtype dtype, size_t count, struct gs_buf *err)
{
    const struct trn_tensor *t = trn_tf_find(tf, name);

    if (t != NULL && t->dtype == dtype && trn_tensor_count(t) == count)
        return t;
    if (err == NULL)
        return NULL;
    if (t == NULL)
        gs_buf_printf(err, "tensor %s is missing", name);
    else
        gs_buf_printf(err, "tensor %s has %zu elements of dtype %d, expected %zu of dtype %d", name,
                      trn_tensor_count(t), (int)t->dtype, count, (int)dtype);
    return NULL;
}
