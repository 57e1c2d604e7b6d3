/*
 * buf.h: growable byte buffer (in the manner of git's strbuf).
 *
 * A struct gs_buf is caller-owned storage: gs_buf_init() before use, gs_buf_release() after.
 * data is always NUL-terminated once anything was appended (data[len] == '\0'), so text can be
 * passed to libc directly; binary content may contain NULs. After a failed append the buffer is
 * unchanged. Not thread-safe: one owner at a time.
 *
 * The first failure is sticky (as SQLite's StrAccum keeps accError): once an append fails,
 * later appends change nothing and return the same code, until gs_buf_reset or
 * gs_buf_release. So a formatter may write a whole record straight through and check once,
 * with gs_buf_error, at the end.
 */
#ifndef GS_BUF_H
#define GS_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

struct gs_buf {
    char *data; /* NULL until the first growth */
    size_t len; /* bytes in use, not counting the terminating NUL */
    size_t cap; /* bytes allocated, including room for the NUL */
    int err;    /* the first failure's code (negative errno), 0 while none */
};

#define GS_BUF_INIT ((struct gs_buf){NULL, 0, 0, 0})

void gs_buf_init(struct gs_buf *b);
/* Frees the storage and returns b to the initial state; NULL allowed. */
void gs_buf_release(struct gs_buf *b);
/* Makes room for extra more bytes (plus the NUL). Returns 0 or -ENOMEM. */
int gs_buf_reserve(struct gs_buf *b, size_t extra);
int gs_buf_append(struct gs_buf *b, const void *data, size_t len);
int gs_buf_append_str(struct gs_buf *b, const char *s);
int gs_buf_putc(struct gs_buf *b, char c);
int gs_buf_printf(struct gs_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int gs_buf_vprintf(struct gs_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* Appends everything left in f (until EOF). Returns 0, -EIO on a read error, or -ENOMEM. */
int gs_buf_read_stream(struct gs_buf *b, FILE *f);
/* 0, or the code of the first append that failed since the buffer was empty. */
static inline int gs_buf_error(const struct gs_buf *b)
{
    return b->err;
}
/* Marks the buffer failed with code (a negative errno), for a writer whose own step failed
 * (an allocation beside the buffer's); the first code stays. Returns the buffer's code. */
int gs_buf_fail(struct gs_buf *b, int code);
/* Empties the buffer but keeps its storage; clears a failure. */
void gs_buf_reset(struct gs_buf *b);
/* Drops the first n bytes (all of them when n >= len), moving the rest to the front. */
void gs_buf_consume(struct gs_buf *b, size_t n);
/* Shortens the content to len bytes (no-op when len >= b->len). */
void gs_buf_truncate(struct gs_buf *b, size_t len);
/*
 * Hands the storage to the caller, who frees it with free(); the buffer is left empty and
 * initialised. Never returns NULL (an empty buffer yields a malloc'd "") unless out of memory
 * or the buffer has failed (gs_buf_error; it is then released). ret_len may be NULL.
 */
char *gs_buf_detach(struct gs_buf *b, size_t *ret_len);

/* Appends argv as a shell would need it typed: words with specials in '...'. 0/-ENOMEM. */
int gs_buf_argv_join(struct gs_buf *b, char *const *argv, size_t n);

#endif
