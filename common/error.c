/*
 * error.c: struct gs_error helpers (see error.h for the conventions).
 * No allocation, no globals; safe from any thread.
 */
#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void gs_error_clear(struct gs_error *err)
{
    if (err == NULL)
        return;
    memset(err, 0, sizeof(*err));
}

int gs_error_set(struct gs_error *err, int code, int line, int col, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return code;
    err->code = code;
    err->line = line;
    err->col = col;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return code;
}

char *gs_error_format(const struct gs_error *err, const char *name, char *out, size_t size)
{
    if (size == 0)
        return out;
    if (name == NULL)
        name = "<input>";
    if (err->line > 0)
        snprintf(out, size, "%s:%d:%d: %s", name, err->line, err->col, err->msg);
    else
        snprintf(out, size, "%s: %s", name, err->msg);
    return out;
}

const char *gs_strerror(int code)
{
    /* The glibc table behind strerror() is read-only; only unknown codes format into a
     * shared buffer, so map those to one fixed string instead. */
    int e = code < 0 ? -code : code;

    if (e == 0)
        return "success";
    if (e >= 1 && e < 4096) {
        const char *s = strerror(e);
        if (s != NULL && strncmp(s, "Unknown error", 13) != 0)
            return s;
    }
    return "unknown error";
}
