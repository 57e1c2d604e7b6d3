/*
 * toml2json: reads a TOML document on stdin and prints it on stdout as the tagged JSON of
 * toml-test (github.com/toml-lang/toml-test), which is how the conformance runner drives
 * gsched's parser (common/toml.h).
 *
 * Tables become JSON objects, arrays JSON arrays, and every scalar an object
 * {"type": T, "value": "<text>"} with T one of string, integer, float, bool, datetime,
 * datetime-local, date-local, time-local. Floats are printed with 17 significant digits so
 * they read back to the same double; infinities and NaN as "inf", "-inf", "nan".
 *
 * Exit status: 0 on success; 1 when the input is not valid TOML ("<stdin>:LINE:COL: message"
 * on stderr); 2 on a read or write error or when out of memory. The output is built in
 * memory and written at once, so nothing is printed for an invalid document.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"
#include "common/error.h"
#include "common/toml.h"

/* -errno of the failed stdio call, -EIO when stdio did not say. */
static int stdio_error(void)
{
    return errno > 0 ? -errno : -EIO;
}

static int read_all(FILE *in, struct gs_buf *out)
{
    char chunk[65536];
    size_t n;
    int rc;

    errno = 0;
    for (;;) {
        n = fread(chunk, 1, sizeof(chunk), in);
        if (n > 0) {
            rc = gs_buf_append(out, chunk, n);
            if (rc < 0)
                return rc;
        }
        if (n < sizeof(chunk))
            break;
    }
    return ferror(in) ? stdio_error() : 0;
}

static int put_date(struct gs_buf *out, const struct gs_toml_datetime *dt)
{
    return gs_buf_printf(out, "%04d-%02d-%02d", dt->year, dt->month, dt->day);
}

/* HH:MM:SS plus the fraction, without trailing zeros. */
static int put_time(struct gs_buf *out, const struct gs_toml_datetime *dt)
{
    char frac[16];
    int len;

    if (dt->nanosecond == 0)
        return gs_buf_printf(out, "%02d:%02d:%02d", dt->hour, dt->minute, dt->second);
    len = snprintf(frac, sizeof(frac), "%09d", dt->nanosecond);
    while (len > 1 && frac[len - 1] == '0')
        len--;
    return gs_buf_printf(out, "%02d:%02d:%02d.%.*s", dt->hour, dt->minute, dt->second, len, frac);
}

static int put_offset(struct gs_buf *out, const struct gs_toml_datetime *dt)
{
    int minutes = dt->offset_minutes < 0 ? -dt->offset_minutes : dt->offset_minutes;

    if (dt->offset_minutes == 0)
        return gs_buf_putc(out, 'Z');
    return gs_buf_printf(out, "%c%02d:%02d", dt->offset_minutes < 0 ? '-' : '+', minutes / 60,
                         minutes % 60);
}

/* The text of a date/time value, in RFC 3339 form with 'T' between date and time. */
static int put_datetime_text(struct gs_buf *out, const struct gs_toml_value *v)
{
    struct gs_toml_datetime dt;
    int rc = gs_toml_as_datetime(v, &dt);

    if (rc == 0 && dt.has_date)
        rc = put_date(out, &dt);
    if (rc == 0 && dt.has_date && dt.has_time)
        rc = gs_buf_putc(out, 'T');
    if (rc == 0 && dt.has_time)
        rc = put_time(out, &dt);
    if (rc == 0 && dt.has_offset)
        rc = put_offset(out, &dt);
    return rc;
}

static int put_float_text(struct gs_buf *out, double d)
{
    if (isnan(d))
        return gs_buf_append_str(out, "nan");
    if (isinf(d))
        return gs_buf_append_str(out, d < 0 ? "-inf" : "inf");
    return gs_buf_printf(out, "%.17g", d);
}

static const char *tag_of(enum gs_toml_type type)
{
    switch (type) {
    case GS_TOML_STRING:
        return "string";
    case GS_TOML_INTEGER:
        return "integer";
    case GS_TOML_FLOAT:
        return "float";
    case GS_TOML_BOOL:
        return "bool";
    case GS_TOML_DATETIME:
        return "datetime";
    case GS_TOML_DATETIME_LOCAL:
        return "datetime-local";
    case GS_TOML_DATE_LOCAL:
        return "date-local";
    case GS_TOML_TIME_LOCAL:
        return "time-local";
    default:
        return NULL;
    }
}

/* The value's text as the "value" member wants it, quoted. */
static int put_scalar_text(struct gs_buf *out, const struct gs_toml_value *v)
{
    struct gs_buf text = GS_BUF_INIT;
    const char *s;
    size_t len;
    int64_t i;
    double d;
    bool b;
    int rc;

    if (gs_toml_as_string(v, &s, &len) == 0)
        return gs_json_put_string(out, s, len);
    if (gs_toml_type(v) == GS_TOML_INTEGER && gs_toml_as_int(v, &i) == 0)
        rc = gs_buf_printf(&text, "%" PRId64, i);
    else if (gs_toml_type(v) == GS_TOML_FLOAT && gs_toml_as_float(v, &d) == 0)
        rc = put_float_text(&text, d);
    else if (gs_toml_as_bool(v, &b) == 0)
        rc = gs_buf_append_str(&text, b ? "true" : "false");
    else
        rc = put_datetime_text(&text, v);
    if (rc == 0)
        rc = gs_json_put_string(out, text.data, text.len);
    gs_buf_release(&text);
    return rc;
}

static int put_value(struct gs_buf *out, const struct gs_toml_value *v);

static int put_table(struct gs_buf *out, const struct gs_toml_value *table)
{
    size_t n = gs_toml_count(table), len;
    int rc = gs_buf_putc(out, '{');

    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *key = gs_toml_key_at(table, i, &len);

        if (i > 0)
            rc = gs_buf_putc(out, ',');
        if (rc == 0)
            rc = gs_json_put_string(out, key, len);
        if (rc == 0)
            rc = gs_buf_putc(out, ':');
        if (rc == 0)
            rc = put_value(out, gs_toml_at(table, i));
    }
    return rc < 0 ? rc : gs_buf_putc(out, '}');
}

static int put_array(struct gs_buf *out, const struct gs_toml_value *array)
{
    size_t n = gs_toml_count(array);
    int rc = gs_buf_putc(out, '[');

    for (size_t i = 0; i < n && rc == 0; i++) {
        if (i > 0)
            rc = gs_buf_putc(out, ',');
        if (rc == 0)
            rc = put_value(out, gs_toml_at(array, i));
    }
    return rc < 0 ? rc : gs_buf_putc(out, ']');
}

/* Recursion is bounded: the parser refuses documents nested deeper than GS_TOML_MAX_DEPTH. */
static int put_value(struct gs_buf *out, const struct gs_toml_value *v)
{
    const char *tag = tag_of(gs_toml_type(v));
    int rc;

    if (gs_toml_type(v) == GS_TOML_TABLE)
        return put_table(out, v);
    if (gs_toml_type(v) == GS_TOML_ARRAY)
        return put_array(out, v);
    if (tag == NULL)
        return -EINVAL;
    rc = gs_buf_printf(out, "{\"type\":\"%s\",\"value\":", tag);
    if (rc == 0)
        rc = put_scalar_text(out, v);
    return rc < 0 ? rc : gs_buf_putc(out, '}');
}

static int write_all(FILE *f, const struct gs_buf *b)
{
    errno = 0;
    if (b->len > 0 && fwrite(b->data, 1, b->len, f) != b->len)
        return stdio_error();
    return fflush(f) == 0 && !ferror(f) ? 0 : stdio_error();
}

int main(void)
{
    struct gs_buf input = GS_BUF_INIT, output = GS_BUF_INIT;
    struct gs_toml_doc *doc = NULL;
    struct gs_error err;
    char line[GS_ERROR_MSG_MAX + 64];
    int status = 2, rc;

    rc = read_all(stdin, &input);
    if (rc < 0) {
        fprintf(stderr, "toml2json: cannot read stdin: %s\n", gs_strerror(rc));
        goto out;
    }
    rc = gs_toml_parse(input.data, input.len, &doc, &err);
    if (rc < 0) {
        fprintf(stderr, "%s\n", gs_error_format(&err, "<stdin>", line, sizeof(line)));
        status = rc == -EINVAL ? 1 : 2;
        goto out;
    }
    rc = put_value(&output, gs_toml_root(doc));
    if (rc == 0)
        rc = gs_buf_putc(&output, '\n');
    if (rc == 0)
        rc = write_all(stdout, &output);
    if (rc < 0) {
        fprintf(stderr, "toml2json: cannot write output: %s\n", gs_strerror(rc));
        goto out;
    }
    status = 0;
out:
    gs_toml_free(doc);
    gs_buf_release(&output);
    gs_buf_release(&input);
    return status;
}
