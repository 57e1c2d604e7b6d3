/*
 * toml_scalar.c: TOML's scalar values: the four string kinds with their escapes, integers
 * (decimal, hex, octal, binary), floats, booleans and the four date/time kinds.
 *
 * Called by toml_parse.c with p->pos on the first character of the token; each reader leaves
 * p->pos just past what it consumed and leaves checking what follows to the caller. The input
 * has already passed the encoding check (valid UTF-8, no control characters but tab, every
 * '\r' followed by '\n'), so string contents are copied through without re-validation.
 * Strings are decoded into p->scratch and then copied into the document's arena; numbers are
 * validated here digit by digit (underscores only between digits, no leading zeros) before
 * conversion, so strtod() only ever sees well-formed text.
 */
#include "common/toml_impl.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How much of an offending token an error message quotes. */
#define TOKEN_TEXT_MAX 40

/* ---- strings ---- */

static TOML_NOINLINE int put_growing(struct toml_parser *p, const char *s, size_t n)
{
    return gs_buf_append(&p->scratch, s, n) < 0 ? toml_oom(p) : 0;
}

/*
 * Appends to the scratch buffer, in place while it has room (keeping gs_buf's NUL after the
 * content), since decoding a string appends a short piece per escape or quote.
 */
static int put(struct toml_parser *p, const char *s, size_t n)
{
    struct gs_buf *b = &p->scratch;

    if (b->cap - b->len <= n)
        return put_growing(p, s, n);
    toml_copy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

static int put_utf8(struct toml_parser *p, uint32_t cp)
{
    char out[4];
    size_t n;

    if (cp < 0x80) {
        out[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return put(p, out, n);
}

static int hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/*
 * \uXXXX or \UXXXXXXXX at p->pos (the backslash); ndigits is 4 or 8. Errors point at the
 * backslash, whose position is worked out only then.
 */
static int unicode_escape(struct toml_parser *p, int ndigits)
{
    uint32_t cp = 0;

    for (int i = 0; i < ndigits; i++) {
        int d = hex_value(toml_peek_at(p, 2 + (size_t)i));

        if (d < 0)
            return toml_fail(p, toml_pos_at(p, p->pos), "invalid escape: \\%c needs %d hex digits",
                             ndigits == 4 ? 'u' : 'U', ndigits);
        cp = cp << 4 | (uint32_t)d;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF)
        return toml_fail(p, toml_pos_at(p, p->pos),
                         "invalid escape: U+%04X is a surrogate code point", cp);
    if (cp > 0x10FFFF)
        return toml_fail(p, toml_pos_at(p, p->pos), "invalid escape: U+%X is beyond U+10FFFF", cp);
    p->pos += 2 + (size_t)ndigits;
    return put_utf8(p, cp);
}

/* An escape sequence at p->pos (the backslash) of a basic string. */
static int escape(struct toml_parser *p)
{
    int c = toml_peek_at(p, 1);
    char decoded;

    switch (c) {
    case 'b':
        decoded = '\b';
        break;
    case 't':
        decoded = '\t';
        break;
    case 'n':
        decoded = '\n';
        break;
    case 'f':
        decoded = '\f';
        break;
    case 'r':
        decoded = '\r';
        break;
    case '"':
        decoded = '"';
        break;
    case '\\':
        decoded = '\\';
        break;
    case 'u':
        return unicode_escape(p, 4);
    case 'U':
        return unicode_escape(p, 8);
    default:
        if (c > ' ' && c < 0x7F)
            return toml_fail(p, toml_pos_at(p, p->pos), "invalid escape sequence '\\%c'", c);
        return toml_fail(p, toml_pos_at(p, p->pos), "invalid escape sequence after '\\'");
    }
    p->pos += 2;
    return put(p, &decoded, 1);
}

/* Errors about a string point at its opening quote, at offset open. */
static int unterminated(struct toml_parser *p, size_t open)
{
    if (toml_peek(p) < 0)
        return toml_fail(p, toml_pos_at(p, open), "unterminated string");
    return toml_fail(p, toml_pos_at(p, open),
                     "unterminated string (single-line strings cannot hold a newline)");
}

/* Bytes of b that end a run of plain content in a string with quote q (see plain_run()). */
static inline toml_mask run_stops(toml_block b, unsigned char q, bool multi)
{
    toml_mask stops = toml_block_line_breaks(b, multi) | toml_block_eq(b, q);

    if (q == '"')
        stops |= toml_block_eq(b, '\\');
    return stops;
}

/*
 * End of the run from offset i of bytes that a string with quote q holds as they are: up to
 * q, a backslash (basic strings only), a CR (whose LF is stored alone) or, in single-line
 * strings, an LF. A block at a time while that many bytes are left. Inline, so that each
 * caller gets a copy for its constant q and multi.
 */
static inline __attribute__((always_inline)) size_t plain_run(const struct toml_parser *p, size_t i,
                                                              unsigned char q, bool multi)
{
    while (p->len - i >= TOML_BLOCK_SIZE) {
        toml_mask stops = run_stops(toml_block_load(p->text + i), q, multi);

        if (stops != 0)
            return i + toml_mask_first(stops);
        i += TOML_BLOCK_SIZE;
    }
    for (; i < p->len; i++) {
        unsigned char c = (unsigned char)p->text[i];

        if (c == q || c == '\r' || (c == '\n' && !multi) || (c == '\\' && q == '"'))
            break;
    }
    return i;
}

static int basic_string(struct toml_parser *p, size_t open)
{
    int c, rc;

    p->pos++;
    for (;;) {
        size_t start = p->pos;

        p->pos = plain_run(p, start, '"', false);
        c = toml_peek(p);
        rc = put(p, p->text + start, p->pos - start);
        if (rc < 0)
            return rc;
        if (c == '"') {
            p->pos++;
            return 0;
        }
        if (c != '\\')
            return unterminated(p, open);
        rc = escape(p);
        if (rc < 0)
            return rc;
    }
}

static int literal_string(struct toml_parser *p, size_t open)
{
    size_t start = p->pos + 1;
    int c;

    p->pos = plain_run(p, start, '\'', false);
    c = toml_peek(p);
    if (c != '\'')
        return unterminated(p, open);
    p->pos++;
    return put(p, p->text + start, p->pos - 1 - start);
}

/* Length of the run of quote characters at p->pos. */
static size_t quote_run(const struct toml_parser *p)
{
    char q = p->text[p->pos];
    size_t n = 1;

    while (p->len - p->pos > n && p->text[p->pos + n] == q)
        n++;
    return n;
}

/*
 * A run of quote characters inside a multi-line string. Fewer than three are content; three
 * to five close the string, the extra one or two being content; more is an error.
 */
static int ml_quotes(struct toml_parser *p, bool *done)
{
    size_t n = quote_run(p);

    if (n > 5)
        return toml_fail(p, toml_pos_at(p, p->pos + 5),
                         "too many quotes at the end of a "
                         "multi-line string");
    *done = n >= 3;
    p->pos += n;
    return put(p, p->text + p->pos - n, n >= 3 ? n - 3 : n);
}

/* A newline right after the opening delimiter is not part of the string. */
static void skip_first_newline(struct toml_parser *p)
{
    if (toml_peek(p) == '\n')
        p->pos++;
    else if (toml_peek(p) == '\r')
        p->pos += 2;
}

static bool is_ws_or_newline(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A backslash in a multi-line basic string: an escape, or a line-ending backslash. */
static int ml_escape(struct toml_parser *p)
{
    size_t ahead = 1;

    while (toml_peek_at(p, ahead) == ' ' || toml_peek_at(p, ahead) == '\t')
        ahead++;
    if (toml_peek_at(p, ahead) != '\n' && toml_peek_at(p, ahead) != '\r')
        return escape(p);
    /* drops the backslash and every space, tab and newline up to the next content */
    p->pos += ahead;
    while (is_ws_or_newline(toml_peek(p)))
        p->pos++;
    return 0;
}

/* Multi-line strings; escapes only in the basic kind. CRLF is stored as LF. */
static int ml_string(struct toml_parser *p, size_t open)
{
    int q = toml_peek(p), c, rc;
    bool done = false;
    size_t start;

    p->pos += 3;
    skip_first_newline(p);
    start = p->pos; /* of the content not yet put */
    while (!done) {
        p->pos = q == '"' ? plain_run(p, p->pos, '"', true) : plain_run(p, p->pos, '\'', true);
        c = toml_peek(p);
        if (c == q && quote_run(p) < 3) {
            /* one or two quotes are content: the run goes on */
            p->pos += quote_run(p);
            continue;
        }
        rc = put(p, p->text + start, p->pos - start);
        if (rc < 0)
            return rc;
        if (c < 0)
            return toml_fail(p, toml_pos_at(p, open), "unterminated multi-line string");
        if (c == q) {
            rc = ml_quotes(p, &done);
        } else if (c == '\r') {
            p->pos += 2;
            rc = put(p, "\n", 1);
        } else {
            rc = ml_escape(p);
        }
        if (rc < 0)
            return rc;
        start = p->pos;
    }
    return 0;
}

/* Any string kind through p->scratch, for escapes, line breaks and errors. */
static int decoded_string(struct toml_parser *p, bool multi, const char **ret_str, size_t *ret_len)
{
    size_t open = p->pos;
    int q = toml_peek(p), rc;
    const char *copy;

    gs_buf_reset(&p->scratch);
    if (multi)
        rc = ml_string(p, open);
    else if (q == '"')
        rc = basic_string(p, open);
    else
        rc = literal_string(p, open);
    if (rc < 0)
        return rc;
    copy = toml_strdup(p->doc, p->scratch.data, p->scratch.len);
    if (copy == NULL)
        return toml_oom(p);
    *ret_str = copy;
    *ret_len = p->scratch.len;
    return 0;
}

int toml_parse_string(struct toml_parser *p, bool allow_multiline, const char **ret_str,
                      size_t *ret_len)
{
    int q = toml_peek(p);
    bool multi = toml_peek_at(p, 1) == q && toml_peek_at(p, 2) == q;
    size_t end;
    int rc;

    if (multi && !allow_multiline)
        return toml_fail(p, toml_here(p), "multi-line strings cannot be used as keys");
    if (multi) {
        end = p->pos;
        rc = decoded_string(p, true, ret_str, ret_len);
        if (rc == 0)
            toml_track_lines(p, end, p->pos);
        return rc;
    }
    /* most strings hold nothing to decode: they are kept as they are in the input's copy */
    if (q == '"')
        end = plain_run(p, p->pos + 1, '"', false);
    else
        end = plain_run(p, p->pos + 1, '\'', false);
    if (end == p->len || p->text[end] != q)
        return decoded_string(p, false, ret_str, ret_len);
    *ret_str = toml_keep(p, p->pos + 1, end - p->pos - 1);
    *ret_len = end - p->pos - 1;
    p->pos = end + 1;
    return 0;
}

/* ---- numbers and booleans ---- */

/* c is a byte value or -1 (end of input). */
static bool is_token_char(int c)
{
    return c >= 0 && (toml_char_class[c] & TOML_CH_TOKEN);
}

/* Length of the number-like token at p->pos. */
static size_t token_len(const struct toml_parser *p)
{
    size_t i = p->pos;

    while (i < p->len && is_token_char((unsigned char)p->text[i]))
        i++;
    return i - p->pos;
}

/* The n-byte token at p->pos for a message, cut to TOKEN_TEXT_MAX characters with "...". */
static const char *token_text(const struct toml_parser *p, size_t n, char *out, size_t size)
{
    if (n > TOKEN_TEXT_MAX)
        snprintf(out, size, "%.*s...", TOKEN_TEXT_MAX, p->text + p->pos);
    else
        snprintf(out, size, "%.*s", (int)n, p->text + p->pos);
    return out;
}

static int bad_token(struct toml_parser *p, struct toml_pos at, const char *what, size_t n)
{
    char found[16], token[TOKEN_TEXT_MAX + 4];

    if (n == 0)
        return toml_fail(p, at, "expected a value, found %s",
                         toml_describe_here(p, found, sizeof(found)));
    return toml_fail(p, at, "invalid %s '%s'", what, token_text(p, n, token, sizeof(token)));
}

static int too_big(struct toml_parser *p, struct toml_pos at, size_t n)
{
    char token[TOKEN_TEXT_MAX + 4];

    return toml_fail(p, at, "integer '%s' does not fit in 64 bits",
                     token_text(p, n, token, sizeof(token)));
}

static int digit_value(int c)
{
    int d = hex_value(c);

    return d < 0 ? 99 : d;
}

static bool is_base_digit(int c, int base)
{
    /* decimal is by far the most common: spare it the hex table walk */
    if (base == 10)
        return toml_is_digit(c);
    return digit_value(c) < base;
}

/*
 * Scans digits of base with single underscores between them, from s[*i]. Returns false on a
 * misplaced underscore; *ndigits receives the number of digits (0 when none are there).
 */
static bool scan_digits(const char *s, size_t n, size_t *i, int base, size_t *ndigits)
{
    size_t count = 0;

    while (*i < n) {
        if (is_base_digit((unsigned char)s[*i], base)) {
            count++;
            (*i)++;
            continue;
        }
        if (s[*i] != '_')
            break;
        if (count == 0 || *i + 1 >= n || !is_base_digit((unsigned char)s[*i + 1], base))
            return false;
        (*i)++;
    }
    *ndigits = count;
    return true;
}

/* Accumulates the digits of s (underscores skipped) in base, up to limit. */
static bool accumulate(const char *s, size_t n, int base, uint64_t limit, uint64_t *ret)
{
    uint64_t value = 0;

    for (size_t i = 0; i < n; i++) {
        uint64_t d;

        if (s[i] == '_')
            continue;
        d = (uint64_t)digit_value((unsigned char)s[i]);
        if (value > (limit - d) / (uint64_t)base)
            return false;
        value = value * (uint64_t)base + d;
    }
    *ret = value;
    return true;
}

/* 0x..., 0o..., 0b...: never signed, never above INT64_MAX. */
static int radix_integer(struct toml_parser *p, struct toml_pos at, size_t n,
                         struct gs_toml_value *v)
{
    const char *s = p->text + p->pos;
    int base = s[1] == 'x' ? 16 : s[1] == 'o' ? 8 : 2;
    size_t i = 2, ndigits;
    uint64_t value;

    if (!scan_digits(s, n, &i, base, &ndigits))
        return toml_fail(p, at, "underscores in a number must be between digits");
    if (ndigits == 0 || i != n)
        return bad_token(p, at, "integer", n);
    if (!accumulate(s + 2, n - 2, base, INT64_MAX, &value))
        return too_big(p, at, n);
    v->type = GS_TOML_INTEGER;
    v->u.integer = (int64_t)value;
    p->pos += n;
    return 0;
}

static int decimal_integer(struct toml_parser *p, struct toml_pos at, size_t n,
                           struct gs_toml_value *v)
{
    const char *s = p->text + p->pos;
    bool neg = s[0] == '-';
    size_t skip = s[0] == '-' || s[0] == '+';
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t mag;

    if (!accumulate(s + skip, n - skip, 10, limit, &mag))
        return too_big(p, at, n);
    v->type = GS_TOML_INTEGER;
    if (!neg)
        v->u.integer = (int64_t)mag;
    else
        v->u.integer = mag > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)mag;
    p->pos += n;
    return 0;
}

/* strtod() under the "C" locale, whatever the process's LC_NUMERIC says. */
static double strtod_c(struct toml_parser *p, const char *text)
{
    locale_t saved;
    double d;

    if (p->c_locale == (locale_t)0)
        p->c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (p->c_locale == (locale_t)0)
        return strtod(text, NULL);
    saved = uselocale(p->c_locale);
    d = strtod(text, NULL);
    uselocale(saved);
    return d;
}

/*
 * Powers of ten that a double holds exactly. With FLT_EVAL_METHOD 0 (no wider intermediate
 * precision), an exact significand times or divided by one of them is a single correctly
 * rounded operation, so it yields the double nearest the decimal, which is what strtod() gives.
 */
static const double exact_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

#define EXACT_POW10_MAX 22
/* Significands below this are exact in a double (2^53). */
#define EXACT_SIGNIFICAND_LIMIT ((uint64_t)1 << 53)

/* The exponent after 'e' or 'E' at s[i..n), which decimal_shape() has checked. */
static bool exponent_value(const char *s, size_t n, size_t i, int *ret)
{
    bool neg = s[i] == '-';
    int value = 0;

    i += s[i] == '-' || s[i] == '+';
    for (; i < n; i++) {
        if (s[i] == '_')
            continue;
        if (value > 9999)
            return false; /* far beyond what the fast path takes */
        value = value * 10 + (s[i] - '0');
    }
    *ret = neg ? -value : value;
    return true;
}

/*
 * Converts a well-formed decimal float of n bytes without strtod() when that is exact (see
 * exact_pow10); false leaves the harder cases to strtod().
 */
static bool exact_float(const char *s, size_t n, double *ret)
{
    size_t i = s[0] == '-' || s[0] == '+';
    uint64_t sig = 0;
    size_t frac_digits = 0;
    int exp = 0;
    bool in_frac = false;
    double d;

    if (FLT_EVAL_METHOD != 0)
        return false;
    for (; i < n && s[i] != 'e' && s[i] != 'E'; i++) {
        if (s[i] == '_' || s[i] == '.') {
            in_frac |= s[i] == '.';
            continue;
        }
        if (sig >= EXACT_SIGNIFICAND_LIMIT / 10)
            return false;
        sig = sig * 10 + (uint64_t)(s[i] - '0');
        frac_digits += in_frac;
    }
    if (frac_digits > 9999 || (i < n && !exponent_value(s, n, i + 1, &exp)))
        return false;
    exp -= (int)frac_digits;
    if (exp < -EXACT_POW10_MAX || exp > EXACT_POW10_MAX)
        return false;
    d = (double)sig;
    d = exp < 0 ? d / exact_pow10[-exp] : d * exact_pow10[exp];
    *ret = s[0] == '-' ? -d : d;
    return true;
}

static int decimal_float(struct toml_parser *p, struct toml_pos at, size_t n,
                         struct gs_toml_value *v)
{
    const char *s = p->text + p->pos;
    char token[TOKEN_TEXT_MAX + 4];
    double d;

    if (exact_float(s, n, &v->u.real)) {
        v->type = GS_TOML_FLOAT;
        p->pos += n;
        return 0;
    }
    gs_buf_reset(&p->scratch);
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '_' && gs_buf_putc(&p->scratch, s[i]) < 0)
            return toml_oom(p);
    }
    d = strtod_c(p, p->scratch.data);
    if (isinf(d))
        return toml_fail(p, at, "float '%s' is out of range",
                         token_text(p, n, token, sizeof(token)));
    v->type = GS_TOML_FLOAT;
    v->u.real = d;
    p->pos += n;
    return 0;
}

/* inf and nan, with an optional sign. */
static bool special_float(struct toml_parser *p, size_t n, struct gs_toml_value *v)
{
    const char *s = p->text + p->pos;
    size_t skip = s[0] == '-' || s[0] == '+';
    double sign = s[0] == '-' ? -1.0 : 1.0;

    if (n - skip != 3)
        return false;
    if (memcmp(s + skip, "inf", 3) == 0)
        v->u.real = sign * INFINITY;
    else if (memcmp(s + skip, "nan", 3) == 0)
        v->u.real = copysign(NAN, sign);
    else
        return false;
    v->type = GS_TOML_FLOAT;
    p->pos += n;
    return true;
}

/* Checks the shape of a decimal integer or float of n bytes; *is_float says which. */
static int decimal_shape(struct toml_parser *p, struct toml_pos at, size_t n, bool *is_float)
{
    const char *s = p->text + p->pos;
    size_t i = s[0] == '-' || s[0] == '+', int_start = i, nd;
    char token[TOKEN_TEXT_MAX + 4];

    *is_float = false;
    if (!scan_digits(s, n, &i, 10, &nd))
        return toml_fail(p, at, "underscores in a number must be between digits");
    if (nd == 0)
        return bad_token(p, at, "number", n);
    if (s[int_start] == '0' && nd > 1)
        return toml_fail(p, at, "leading zeros are not allowed in '%s'",
                         token_text(p, n, token, sizeof(token)));
    if (i < n && s[i] == '.') {
        i++;
        *is_float = true;
        if (!scan_digits(s, n, &i, 10, &nd))
            return toml_fail(p, at, "underscores in a number must be between digits");
        if (nd == 0)
            return toml_fail(p, at, "a float needs digits after its decimal point");
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        *is_float = true;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (!scan_digits(s, n, &i, 10, &nd))
            return toml_fail(p, at, "underscores in a number must be between digits");
        if (nd == 0)
            return toml_fail(p, at, "a float needs digits in its exponent");
    }
    return i == n ? 0 : bad_token(p, at, "number", n);
}

/* Fewer than 19 digits always fit in a uint64_t (and, for integers, in an int64_t). */
#define SHORT_DIGITS_MAX 18
/* Exponents the fast path reads; anything longer goes the general way. */
#define SHORT_EXP_DIGITS_MAX 4

/* A number as the fast path reads it: value = digits * 10^exp10. */
struct short_number {
    uint64_t digits;
    int exp10;
    bool is_float;
};

/*
 * Index past the digits of s from i and the single underscores between them; *value
 * accumulates the digits (wrapping when there are too many) and *count counts them.
 */
static inline size_t run_of_digits(const char *s, size_t n, size_t i, uint64_t *value,
                                   size_t *count)
{
    uint64_t v = *value;
    size_t digits = 0, start = i;

    for (;;) {
        for (; i < n && toml_is_digit((unsigned char)s[i]); i++)
            v = v * 10 + (uint64_t)(s[i] - '0');
        digits += i - start;
        if (digits == 0 || i + 1 >= n || s[i] != '_' || !toml_is_digit((unsigned char)s[i + 1]))
            break;
        start = ++i;
    }
    *value = v;
    *count = digits;
    return i;
}

/* The exponent after 'e' or 'E' at s[i]; 0 when it has no digits or too many. */
static size_t short_exponent(const char *s, size_t n, size_t i, struct short_number *num)
{
    bool neg = i < n && s[i] == '-';
    uint64_t exp = 0;
    size_t ndigits;

    i += i < n && (s[i] == '-' || s[i] == '+');
    i = run_of_digits(s, n, i, &exp, &ndigits);
    if (ndigits == 0 || ndigits > SHORT_EXP_DIGITS_MAX)
        return 0;
    num->exp10 += neg ? -(int)exp : (int)exp;
    num->is_float = true;
    return i;
}

/*
 * Reads [+-]digits[.digits][(e|E)[+-]digits] from s (n bytes), underscores only between
 * digits, without leading zeros or more than SHORT_DIGITS_MAX digits, up to a byte that
 * cannot continue a token. Returns its length, or 0 for anything else, which the general
 * rules then parse (and report if wrong).
 */
static size_t short_shape(const char *s, size_t n, struct short_number *num)
{
    size_t first = s[0] == '-' || s[0] == '+', i, ndigits, nfrac;

    i = run_of_digits(s, n, first, &num->digits, &ndigits);
    if (ndigits == 0 || (s[first] == '0' && ndigits > 1))
        return 0;
    if (i < n && s[i] == '.') {
        i = run_of_digits(s, n, i + 1, &num->digits, &nfrac);
        if (nfrac == 0)
            return 0;
        ndigits += nfrac;
        num->exp10 = -(int)nfrac;
        num->is_float = true;
    }
    if (ndigits > SHORT_DIGITS_MAX)
        return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E'))
        i = short_exponent(s, n, i + 1, num);
    if (i == 0 || (i < n && is_token_char((unsigned char)s[i])))
        return 0;
    return i;
}

/*
 * The decimal integers and floats that most documents hold, in one pass and without
 * strtod() (floats only when exact_float's reasoning applies). Returns false, having consumed
 * nothing, for everything else.
 */
static bool short_number(struct toml_parser *p, struct gs_toml_value *v)
{
    const char *s = p->text + p->pos;
    struct short_number num = {0, 0, false};
    size_t n = short_shape(s, p->len - p->pos, &num);
    double d;

    if (n == 0)
        return false;
    if (!num.is_float) {
        v->type = GS_TOML_INTEGER;
        v->u.integer = *s == '-' ? -(int64_t)num.digits : (int64_t)num.digits;
    } else {
        if (FLT_EVAL_METHOD != 0 || num.digits > EXACT_SIGNIFICAND_LIMIT ||
            num.exp10 < -EXACT_POW10_MAX || num.exp10 > EXACT_POW10_MAX)
            return false;
        d = (double)num.digits;
        d = num.exp10 < 0 ? d / exact_pow10[-num.exp10] : d * exact_pow10[num.exp10];
        v->type = GS_TOML_FLOAT;
        v->u.real = *s == '-' ? -d : d;
    }
    p->pos += n;
    return true;
}

static int parse_number(struct toml_parser *p, struct toml_pos at, struct gs_toml_value *v)
{
    const char *s = p->text + p->pos;
    size_t n, skip;
    bool is_float;
    int rc;

    n = token_len(p);
    if (n == 0)
        return bad_token(p, at, "number", 0);
    if (special_float(p, n, v))
        return 0;
    skip = s[0] == '-' || s[0] == '+';
    if (n - skip >= 2 && s[skip] == '0' &&
        (s[skip + 1] == 'x' || s[skip + 1] == 'o' || s[skip + 1] == 'b')) {
        if (skip)
            return toml_fail(p, at, "hexadecimal, octal and binary integers cannot have a sign");
        return radix_integer(p, at, n, v);
    }
    rc = decimal_shape(p, at, n, &is_float);
    if (rc < 0)
        return rc;
    return is_float ? decimal_float(p, at, n, v) : decimal_integer(p, at, n, v);
}

static int parse_bool(struct toml_parser *p, struct toml_pos at, struct gs_toml_value *v)
{
    size_t n = token_len(p);

    if (n == 4 && memcmp(p->text + p->pos, "true", 4) == 0)
        v->u.boolean = true;
    else if (n == 5 && memcmp(p->text + p->pos, "false", 5) == 0)
        v->u.boolean = false;
    else
        return bad_token(p, at, "value", n);
    v->type = GS_TOML_BOOL;
    p->pos += n;
    return 0;
}

/* ---- dates and times ---- */

/* Exactly n digits (not followed by another digit) into *ret. */
static bool take_digits(struct toml_parser *p, size_t n, int *ret)
{
    const char *s = p->text + p->pos;
    size_t avail = p->len - p->pos;
    int value = 0;

    if (avail < n)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!toml_is_digit((unsigned char)s[i]))
            return false;
        value = value * 10 + (s[i] - '0');
    }
    if (avail > n && toml_is_digit((unsigned char)s[n]))
        return false;
    p->pos += n;
    *ret = value;
    return true;
}

static bool take_char(struct toml_parser *p, int c)
{
    if (toml_peek(p) != c)
        return false;
    p->pos++;
    return true;
}

static int days_in_month(int year, int month)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

    return month == 2 && leap ? 29 : days[month - 1];
}

static int parse_date(struct toml_parser *p, struct toml_pos at, struct gs_toml_datetime *dt)
{
    if (!take_digits(p, 4, &dt->year) || !take_char(p, '-') || !take_digits(p, 2, &dt->month) ||
        !take_char(p, '-') || !take_digits(p, 2, &dt->day))
        return toml_fail(p, at, "invalid date (expected YYYY-MM-DD)");
    if (dt->month < 1 || dt->month > 12)
        return toml_fail(p, at, "invalid date: month %02d is out of range", dt->month);
    if (dt->day < 1 || dt->day > days_in_month(dt->year, dt->month))
        return toml_fail(p, at, "invalid date: %04d-%02d has no day %02d", dt->year, dt->month,
                         dt->day);
    dt->has_date = true;
    return 0;
}

/* What n fractional digits of a second are multiplied by to make nanoseconds (n >= 1). */
static const int to_nanoseconds[10] = {0,     100000000, 10000000, 1000000, 100000,
                                       10000, 1000,      100,      10,      1};

/* Optional fractional seconds after the '.'; digits past nanoseconds are dropped. */
static int parse_fraction(struct toml_parser *p, struct toml_pos at, struct gs_toml_datetime *dt)
{
    int ndigits = 0;

    while (toml_is_digit(toml_peek(p))) {
        if (ndigits < 9) {
            dt->nanosecond = dt->nanosecond * 10 + (toml_peek(p) - '0');
            ndigits++;
        }
        p->pos++;
    }
    if (ndigits == 0)
        return toml_fail(p, at, "invalid time: expected digits after '.'");
    dt->nanosecond *= to_nanoseconds[ndigits];
    return 0;
}

static int parse_time(struct toml_parser *p, struct toml_pos at, struct gs_toml_datetime *dt)
{
    if (!take_digits(p, 2, &dt->hour) || !take_char(p, ':') || !take_digits(p, 2, &dt->minute) ||
        !take_char(p, ':') || !take_digits(p, 2, &dt->second))
        return toml_fail(p, at, "invalid time (expected HH:MM:SS)");
    if (dt->hour > 23 || dt->minute > 59 || dt->second > 60)
        return toml_fail(p, at, "invalid time: %02d:%02d:%02d is out of range", dt->hour,
                         dt->minute, dt->second);
    dt->has_time = true;
    if (take_char(p, '.'))
        return parse_fraction(p, at, dt);
    return 0;
}

/* Optional Z or +HH:MM / -HH:MM after a date-time. */
static int parse_offset(struct toml_parser *p, struct toml_pos at, struct gs_toml_datetime *dt)
{
    int c = toml_peek(p), hours, minutes;

    if (c == 'Z' || c == 'z') {
        p->pos++;
        dt->has_offset = true;
        return 0;
    }
    if (c != '+' && c != '-')
        return 0;
    p->pos++;
    if (!take_digits(p, 2, &hours) || !take_char(p, ':') || !take_digits(p, 2, &minutes))
        return toml_fail(p, at, "invalid time offset (expected Z or +HH:MM)");
    if (hours > 23 || minutes > 59)
        return toml_fail(p, at, "invalid time offset: %02d:%02d is out of range", hours, minutes);
    dt->offset_minutes = (c == '-' ? -1 : 1) * (hours * 60 + minutes);
    dt->has_offset = true;
    return 0;
}

/* A local date, local date-time or offset date-time (the date part comes first). */
static int parse_datetime(struct toml_parser *p, struct toml_pos at, struct gs_toml_value *v)
{
    struct gs_toml_datetime dt = {0};
    int c, rc;

    rc = parse_date(p, at, &dt);
    if (rc < 0)
        return rc;
    c = toml_peek(p);
    v->type = GS_TOML_DATE_LOCAL;
    if (c == 'T' || c == 't' || (c == ' ' && toml_is_digit(toml_peek_at(p, 1)))) {
        p->pos++;
        rc = parse_time(p, at, &dt);
        if (rc == 0)
            rc = parse_offset(p, at, &dt);
        if (rc < 0)
            return rc;
        v->type = dt.has_offset ? GS_TOML_DATETIME : GS_TOML_DATETIME_LOCAL;
    }
    v->u.dt = dt;
    return 0;
}

static int parse_local_time(struct toml_parser *p, struct toml_pos at, struct gs_toml_value *v)
{
    struct gs_toml_datetime dt = {0};
    int rc;

    rc = parse_time(p, at, &dt);
    if (rc < 0)
        return rc;
    v->type = GS_TOML_TIME_LOCAL;
    v->u.dt = dt;
    return 0;
}

/* What kind of token starts at p->pos, by the shape of its first bytes. */
enum scalar_kind { KIND_DATE, KIND_TIME, KIND_OTHER };

static enum scalar_kind scalar_kind(const struct toml_parser *p)
{
    const char *s = p->text + p->pos;
    size_t avail = p->len - p->pos;

    /* YYYY- starts a date (and maybe a date-time), HH: a local time */
    if (avail < 3 || !toml_is_digit((unsigned char)s[0]) || !toml_is_digit((unsigned char)s[1]))
        return KIND_OTHER;
    if (s[2] == ':')
        return KIND_TIME;
    if (avail >= 5 && toml_is_digit((unsigned char)s[2]) && toml_is_digit((unsigned char)s[3]) &&
        s[4] == '-')
        return KIND_DATE;
    return KIND_OTHER;
}

int toml_parse_scalar(struct toml_parser *p, struct gs_toml_value *v)
{
    /* errors point where the value starts, which the caller has already worked out */
    struct toml_pos at = {v->line, v->col};
    int c = toml_peek(p);
    enum scalar_kind kind = scalar_kind(p);

    if (kind == KIND_DATE)
        return parse_datetime(p, at, v);
    if (kind == KIND_TIME)
        return parse_local_time(p, at, v);
    if (c == 't' || c == 'f')
        return parse_bool(p, at, v);
    if ((toml_is_digit(c) || c == '+' || c == '-') && short_number(p, v))
        return 0;
    if (toml_is_digit(c) || c == '+' || c == '-' || c == 'i' || c == 'n')
        return parse_number(p, at, v);
    return bad_token(p, at, "value", token_len(p));
}
