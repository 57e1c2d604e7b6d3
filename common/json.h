/*
 * json.h: writing JSON (the CLI's --json output, toml2json). Appends to a gs_buf; commas and
 * nesting are tracked by the writer, so callers just say what comes next:
 *
 *     gs_json_init(&j, &out);
 *     gs_json_object_begin(&j);
 *     gs_json_key(&j, "id");  gs_json_uint(&j, 42);
 *     gs_json_key(&j, "gpus"); gs_json_array_begin(&j); gs_json_int(&j, 0); gs_json_array_end(&j);
 *     gs_json_object_end(&j);
 *     rc = gs_json_finish(&j);   -> {"id":42,"gpus":[0]}
 *
 * Errors are sticky: after the first failure (out of memory, or a misuse such as a value
 * where a key is due) every call is a no-op and gs_json_finish() returns that error. Strings
 * are written as given (UTF-8 passes through); quotes, backslashes and control characters
 * are escaped. Caller-owned storage; not thread-safe.
 */
#ifndef GS_JSON_H
#define GS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define GS_JSON_MAX_DEPTH 64

struct gs_json {
    struct gs_buf *out;
    int depth;
    int rc;
    bool after_key;
    bool has_items[GS_JSON_MAX_DEPTH + 1]; /* a comma is due before the next item */
    bool in_object[GS_JSON_MAX_DEPTH + 1];
};

void gs_json_init(struct gs_json *j, struct gs_buf *out);
void gs_json_object_begin(struct gs_json *j);
void gs_json_object_end(struct gs_json *j);
void gs_json_array_begin(struct gs_json *j);
void gs_json_array_end(struct gs_json *j);
void gs_json_key(struct gs_json *j, const char *key);
void gs_json_string(struct gs_json *j, const char *s); /* NULL writes null */
void gs_json_stringn(struct gs_json *j, const char *s, size_t len);
void gs_json_int(struct gs_json *j, int64_t v);
void gs_json_uint(struct gs_json *j, uint64_t v);
void gs_json_double(struct gs_json *j, double v); /* non-finite values write null */
void gs_json_bool(struct gs_json *j, bool v);
void gs_json_null(struct gs_json *j);
/* A key and its value in one call, for the common case of an object's scalar members. */
void gs_json_kv_string(struct gs_json *j, const char *key, const char *s);
void gs_json_kv_int(struct gs_json *j, const char *key, int64_t v);
void gs_json_kv_uint(struct gs_json *j, const char *key, uint64_t v);
void gs_json_kv_bool(struct gs_json *j, const char *key, bool v);

/* 0 when everything was written and every object and array was closed. */
int gs_json_finish(struct gs_json *j);

/* Appends s (len bytes) as a JSON string literal. Returns 0 or -ENOMEM. */
int gs_json_put_string(struct gs_buf *out, const char *s, size_t len);

#endif
