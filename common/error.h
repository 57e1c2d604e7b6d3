/*
 * error.h: gsched's error conventions, shared by every module.
 *
 * Functions return 0 on success or a negative errno code (-EINVAL, -ENOMEM, -EIO, ...).
 * Errors that come from user input (a job file, a command-line option, a network frame) also
 * carry a place and a message in a struct gs_error, filled by the function that found the
 * problem, so that callers can print "job.toml:7:12: resources.gpus_per_node must be ...".
 * A struct gs_error is caller-owned storage; nothing in it needs freeing.
 */
#ifndef GS_ERROR_H
#define GS_ERROR_H

#include <errno.h>
#include <stddef.h>

#define GS_ERROR_MSG_MAX 256

struct gs_error {
    int code;                   /* negative errno, 0 when no error was recorded */
    int line;                   /* 1-based source line, 0 when the error has no place */
    int col;                    /* 1-based column in characters, 0 when unknown */
    char msg[GS_ERROR_MSG_MAX]; /* one line, no trailing newline, no place prefix */
};

/* Clears err (NULL allowed). */
void gs_error_clear(struct gs_error *err);

/*
 * Records code, place and a printf-style message in err (NULL allowed: then only the code is
 * returned). Returns code, so "return gs_error_set(err, -EINVAL, l, c, "...")" reads naturally.
 * A message longer than GS_ERROR_MSG_MAX - 1 bytes is truncated.
 */
int gs_error_set(struct gs_error *err, int code, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/*
 * Writes "NAME:LINE:COL: MSG" (or "NAME: MSG" when the error has no place) into out, which
 * holds size bytes; name may be NULL. Returns out.
 */
char *gs_error_format(const struct gs_error *err, const char *name, char *out, size_t size);

/* strerror() for a negative errno code; thread-safe, never NULL. */
const char *gs_strerror(int code);

#endif
