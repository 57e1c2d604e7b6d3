/*
 * json.c: the JSON writer (see json.h). Each value first settles its separator: a comma
 * when the enclosing container already has an item, nothing right after a key.
 */
#include "common/json.h"

#include <errno.h>
#include <math.h>
#include <string.h>

void gs_json_init(struct gs_json *j, struct gs_buf *out)
{
    memset(j, 0, sizeof(*j));
    j->out = out;
}

static void set_rc(struct gs_json *j, int rc)
{
    if (j->rc == 0 && rc < 0)
        j->rc = rc;
}

/* Writes what must precede a value; false when a value is not allowed here. */
static bool before_value(struct gs_json *j)
{
    if (j->rc < 0)
        return false;
    if (j->in_object[j->depth] && !j->after_key) {
        set_rc(j, -EINVAL); /* a value inside an object needs a key first */
        return false;
    }
    if (j->depth == 0 && j->has_items[0]) {
        set_rc(j, -EINVAL); /* one top-level value only */
        return false;
    }
    if (!j->after_key && j->has_items[j->depth])
        set_rc(j, gs_buf_putc(j->out, ','));
    j->after_key = false;
    j->has_items[j->depth] = true;
    return j->rc == 0;
}

static void open_container(struct gs_json *j, char brace, bool object)
{
    if (!before_value(j))
        return;
    if (j->depth == GS_JSON_MAX_DEPTH) {
        set_rc(j, -EINVAL);
        return;
    }
    set_rc(j, gs_buf_putc(j->out, brace));
    j->depth++;
    j->has_items[j->depth] = false;
    j->in_object[j->depth] = object;
}

static void close_container(struct gs_json *j, char brace, bool object)
{
    if (j->rc < 0)
        return;
    if (j->depth == 0 || j->in_object[j->depth] != object || j->after_key) {
        set_rc(j, -EINVAL);
        return;
    }
    j->depth--;
    set_rc(j, gs_buf_putc(j->out, brace));
}

void gs_json_object_begin(struct gs_json *j)
{
    open_container(j, '{', true);
}

void gs_json_object_end(struct gs_json *j)
{
    close_container(j, '}', true);
}

void gs_json_array_begin(struct gs_json *j)
{
    open_container(j, '[', false);
}

void gs_json_array_end(struct gs_json *j)
{
    close_container(j, ']', false);
}

void gs_json_key(struct gs_json *j, const char *key)
{
    if (j->rc < 0)
        return;
    if (!j->in_object[j->depth] || j->after_key) {
        set_rc(j, -EINVAL);
        return;
    }
    if (j->has_items[j->depth])
        set_rc(j, gs_buf_putc(j->out, ','));
    set_rc(j, gs_json_put_string(j->out, key, strlen(key)));
    set_rc(j, gs_buf_putc(j->out, ':'));
    j->has_items[j->depth] = true;
    j->after_key = true;
}

void gs_json_stringn(struct gs_json *j, const char *s, size_t len)
{
    if (before_value(j))
        set_rc(j, gs_json_put_string(j->out, s, len));
}

void gs_json_string(struct gs_json *j, const char *s)
{
    if (s == NULL)
        gs_json_null(j);
    else
        gs_json_stringn(j, s, strlen(s));
}

void gs_json_int(struct gs_json *j, int64_t v)
{
    if (before_value(j))
        set_rc(j, gs_buf_printf(j->out, "%lld", (long long)v));
}

void gs_json_uint(struct gs_json *j, uint64_t v)
{
    if (before_value(j))
        set_rc(j, gs_buf_printf(j->out, "%llu", (unsigned long long)v));
}

void gs_json_double(struct gs_json *j, double v)
{
    if (!isfinite(v)) {
        gs_json_null(j);
        return;
    }
    if (before_value(j))
        set_rc(j, gs_buf_printf(j->out, "%.17g", v));
}

void gs_json_bool(struct gs_json *j, bool v)
{
    if (before_value(j))
        set_rc(j, gs_buf_append_str(j->out, v ? "true" : "false"));
}

void gs_json_null(struct gs_json *j)
{
    if (before_value(j))
        set_rc(j, gs_buf_append_str(j->out, "null"));
}

void gs_json_kv_string(struct gs_json *j, const char *key, const char *s)
{
    gs_json_key(j, key);
    gs_json_string(j, s);
}

void gs_json_kv_int(struct gs_json *j, const char *key, int64_t v)
{
    gs_json_key(j, key);
    gs_json_int(j, v);
}

void gs_json_kv_uint(struct gs_json *j, const char *key, uint64_t v)
{
    gs_json_key(j, key);
    gs_json_uint(j, v);
}

void gs_json_kv_bool(struct gs_json *j, const char *key, bool v)
{
    gs_json_key(j, key);
    gs_json_bool(j, v);
}

int gs_json_finish(struct gs_json *j)
{
    if (j->rc == 0 && (j->depth != 0 || j->after_key))
        j->rc = -EINVAL;
    return j->rc;
}

int gs_json_put_string(struct gs_buf *out, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    int rc = gs_buf_putc(out, '"');

    for (size_t i = 0; i < len && rc == 0; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};

        if (c == '"' || c == '\\')
            rc = gs_buf_append(out, (char[]){'\\', (char)c}, 2);
        else if (c == '\n')
            rc = gs_buf_append(out, "\\n", 2);
        else if (c == '\t')
            rc = gs_buf_append(out, "\\t", 2);
        else if (c == '\r')
            rc = gs_buf_append(out, "\\r", 2);
        else if (c < 0x20 || c == 0x7f)
            rc = gs_buf_append(out, esc, 6);
        else
            rc = gs_buf_putc(out, (char)c);
    }
    return rc < 0 ? rc : gs_buf_putc(out, '"');
}
