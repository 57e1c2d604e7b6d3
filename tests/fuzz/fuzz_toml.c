/*
 * fuzz_toml.c: libFuzzer harness for the TOML parser (common/toml.h), which every job file,
 * node configuration and gsched.toml goes through.
 *
 * The input is the document, bytes and length as gs_toml_parse() takes them (no NUL
 * terminator, so a read past the end is an ASan report). An accepted document is walked
 * through every public getter, the way validators walk it, then freed; a rejected one must
 * come with an error message. Nothing leaks either way (LeakSanitizer checks).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads one scalar through its getter; the getter must agree with gs_toml_type(). */
static void read_scalar(const struct gs_toml_value *v)
{
    struct gs_toml_datetime dt;
    const char *str;
    size_t len;
    int64_t i;
    double f;
    bool b;
    int rc = 0;

    switch (gs_toml_type(v)) {
    case GS_TOML_STRING:
        rc = gs_toml_as_string(v, &str, &len);
        break;
    case GS_TOML_INTEGER:
        rc = gs_toml_as_int(v, &i);
        break;
    case GS_TOML_FLOAT:
        rc = gs_toml_as_float(v, &f);
        break;
    case GS_TOML_BOOL:
        rc = gs_toml_as_bool(v, &b);
        break;
    default:
        rc = gs_toml_as_datetime(v, &dt);
        break;
    }
    if (rc != 0)
        abort();
}

/* Visits every value below v (depth is bounded by GS_TOML_MAX_DEPTH). */
static void walk(const struct gs_toml_value *v)
{
    enum gs_toml_type type = gs_toml_type(v);
    size_t n = gs_toml_count(v);
    size_t len;

    if (type != GS_TOML_TABLE && type != GS_TOML_ARRAY) {
        read_scalar(v);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (type == GS_TOML_TABLE) {
            const char *key = gs_toml_key_at(v, i, &len);

            if (key == NULL || gs_toml_getn(v, key, len) == NULL || gs_toml_key_line(v, i) < 1)
                abort();
        }
        walk(gs_toml_at(v, i));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gs_toml_doc *doc = NULL;
    struct gs_error err;
    int rc;

    gs_error_clear(&err);
    rc = gs_toml_parse((const char *)data, size, &doc, &err);
    if (rc == -EINVAL && err.msg[0] == '\0')
        abort(); /* every syntax error says why */
    if (rc < 0)
        return 0;
    walk(gs_toml_root(doc));
    gs_toml_free(doc);
    return 0;
}
