/*
 * buf.c: growable byte buffer. Growth doubles capacity so appends are amortised O(1); every
 * size computation is checked for overflow because lengths may come from the network. Every
 * append goes through gs_buf_reserve, which is where a failure is recorded and, once recorded,
 * returned.
 */
#include "common/buf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gs_buf_init(struct gs_buf *b)
{
    *b = GS_BUF_INIT;
}

void gs_buf_release(struct gs_buf *b)
{
    if (b == NULL)
        return;
    free(b->data);
    gs_buf_init(b);
}

int gs_buf_reserve(struct gs_buf *b, size_t extra)
{
    size_t need, cap;
    char *p;

    if (b->err != 0)
        return b->err;
    if (extra > SIZE_MAX - 1 - b->len)
        return gs_buf_fail(b, -ENOMEM);
    need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    cap = b->cap < 64 ? 64 : b->cap;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    p = realloc(b->data, cap);
    if (p == NULL)
        return gs_buf_fail(b, -ENOMEM);
    if (b->data == NULL)
        p[0] = '\0';
    b->data = p;
    b->cap = cap;
    return 0;
}

int gs_buf_append(struct gs_buf *b, const void *data, size_t len)
{
    int rc = gs_buf_reserve(b, len);

    if (rc < 0)
        return rc;
    if (len > 0)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int gs_buf_append_str(struct gs_buf *b, const char *s)
{
    return gs_buf_append(b, s, strlen(s));
}

int gs_buf_putc(struct gs_buf *b, char c)
{
    return gs_buf_append(b, &c, 1);
}

int gs_buf_vprintf(struct gs_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    int n, rc;

    rc = gs_buf_reserve(b, 64);
    if (rc < 0)
        return rc;
    va_copy(ap2, ap);
    n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        b->data[b->len] = '\0';
        return gs_buf_fail(b, -EINVAL);
    }
    if ((size_t)n >= b->cap - b->len) {
        rc = gs_buf_reserve(b, (size_t)n);
        if (rc < 0) {
            b->data[b->len] = '\0';
            return rc;
        }
        vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    }
    b->len += (size_t)n;
    return 0;
}

int gs_buf_printf(struct gs_buf *b, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = gs_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

int gs_buf_fail(struct gs_buf *b, int code)
{
    if (b->err == 0)
        b->err = code < 0 ? code : -EINVAL;
    return b->err;
}

void gs_buf_reset(struct gs_buf *b)
{
    b->err = 0;
    b->len = 0;
    if (b->data != NULL)
        b->data[0] = '\0';
}

void gs_buf_consume(struct gs_buf *b, size_t n)
{
    if (n >= b->len) {
        gs_buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

void gs_buf_truncate(struct gs_buf *b, size_t len)
{
    if (len >= b->len)
        return;
    b->len = len;
    b->data[len] = '\0';
}

char *gs_buf_detach(struct gs_buf *b, size_t *ret_len)
{
    char *p;

    /* A failed buffer holds a record cut short: the caller gets the failure, not the cut. */
    if (b->err != 0) {
        gs_buf_release(b);
        return NULL;
    }
    if (b->data == NULL && gs_buf_reserve(b, 0) < 0)
        return NULL;
    p = b->data;
    if (ret_len != NULL)
        *ret_len = b->len;
    gs_buf_init(b);
    return p;
}

int gs_buf_read_stream(struct gs_buf *b, FILE *f)
{
    char chunk[8192];
    size_t n;
    int rc = 0;

    while (rc == 0 && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        rc = gs_buf_append(b, chunk, n);
    if (rc == 0 && ferror(f))
        rc = -EIO;
    return rc;
}

static bool shell_safe(const char *s)
{
    if (s[0] == '\0')
        return false;
    for (const char *p = s; *p != '\0'; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("-_./=:,+%@", *p) != NULL))
            return false;
    }
    return true;
}

static void append_quoted(struct gs_buf *b, const char *s)
{
    if (shell_safe(s)) {
        gs_buf_append_str(b, s);
        return;
    }
    gs_buf_putc(b, '\'');
    for (const char *p = s; *p != '\0'; p++) {
        if (*p == '\'')
            gs_buf_append_str(b, "'\\''");
        else
            gs_buf_putc(b, *p);
    }
    gs_buf_putc(b, '\'');
}

int gs_buf_argv_join(struct gs_buf *b, char *const *argv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            gs_buf_putc(b, ' ');
        append_quoted(b, argv[i]);
    }
    return gs_buf_error(b);
}
