/*
 * toml_parse.c: the structure of a TOML document: the up-front encoding check, keys, table
 * headers, key/value pairs, arrays and inline tables, and every rule about which tables and
 * keys may be defined, extended or redefined. Scalars (strings, numbers, dates) are read by
 * toml_scalar.c; the tree and its arena live in toml.c.
 *
 * The whole input is checked for valid UTF-8 and for forbidden control characters before
 * parsing starts, so the parser proper can treat every byte sequence it meets as well-formed
 * text and every '\r' as the start of "\r\n".
 *
 * Redefinition rules follow TOML 1.0 as toml-test reads it. Each table carries flags
 * (TOML_F_* in toml_impl.h):
 *   - a [header] may define a table that does not exist yet or that only exists implicitly
 *     (as a parent named in an earlier header); never one defined by a header, by dotted
 *     keys, or inline;
 *   - a header may pass through any table except an inline one, and through an array of
 *     tables (into its last element), never through a static array or a scalar;
 *   - dotted keys may create tables, and pass through tables that are implicit or that dotted
 *     keys created in the same section (since the last header); never through a table
 *     defined by a header, an inline table or an array;
 *   - [[header]] appends only to an array that [[header]] created.
 * Nesting depth is checked whenever a value is created (new_value), which bounds the
 * recursion of parse_value/parse_array/parse_inline_table.
 */
#include "common/toml_impl.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for a key quoted in an error message; longer keys are cut with "...". */
#define KEY_TEXT_MAX 96

static int parse_value(struct toml_parser *p, unsigned depth, struct gs_toml_value **ret_value);

/* A line or column number from a count, stopping at INT_MAX. */
static int clamp_number(size_t n)
{
    return n > INT_MAX ? INT_MAX : (int)n;
}

/*
 * The exact position of any offset, scanning from the start of the input. Only errors ask
 * for positions this way, once per parse, so it need not be fast.
 */
struct toml_pos toml_pos_at(const struct toml_parser *p, size_t pos)
{
    size_t line = 1, col = 1;

    if (pos > p->len)
        pos = p->len;
    for (size_t i = 0; i < pos; i++) {
        unsigned char c = (unsigned char)p->text[i];

        if (c == '\n') {
            line++;
            col = 1;
        } else if ((c & 0xC0) != 0x80) {
            col++;
        }
    }
    return (struct toml_pos){clamp_number(line), clamp_number(col)};
}

/*
 * toml_here() where a subtraction does not give the column: the input has non-ASCII text
 * somewhere, so characters are counted (UTF-8 continuation bytes not), resuming from the last
 * count on the same line so that a long line is counted once, not once per value on it.
 */
struct toml_pos toml_counted_pos(struct toml_parser *p)
{
    size_t at = p->line_start, col = 1;

    if (p->count_line_start == p->line_start && p->count_pos >= at && p->count_pos <= p->pos) {
        at = p->count_pos;
        col = p->count_col;
    }
    for (; at < p->pos; at++)
        col += ((unsigned char)p->text[at] & 0xC0) != 0x80;
    p->count_line_start = p->line_start;
    p->count_pos = p->pos;
    p->count_col = col;
    return (struct toml_pos){p->line, clamp_number(col)};
}

/* Notes that a line starts at offset start, the parser having just read its newline. */
static void new_line(struct toml_parser *p, size_t start)
{
    p->line += p->line < INT_MAX;
    p->line_start = start;
}

void toml_track_lines(struct toml_parser *p, size_t from, size_t to)
{
    const char *nl;

    while ((nl = memchr(p->text + from, '\n', to - from)) != NULL) {
        from = (size_t)(nl - p->text) + 1;
        new_line(p, from);
    }
}

int toml_fail(struct toml_parser *p, struct toml_pos pos, const char *fmt, ...)
{
    char msg[GS_ERROR_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    gs_error_set(p->err, -EINVAL, pos.line, pos.col, "%s", msg);
    return -EINVAL;
}

int toml_oom(struct toml_parser *p)
{
    gs_error_set(p->err, -ENOMEM, 0, 0, "out of memory");
    return -ENOMEM;
}

const char *toml_describe_here(const struct toml_parser *p, char *out, size_t size)
{
    int c = toml_peek(p);
    int n = 1;

    if (c < 0)
        return "end of input";
    if (c == '\n' || c == '\r')
        return "newline";
    if (c == '\t')
        return "tab";
    if (c >= 0xF0)
        n = 4;
    else if (c >= 0xE0)
        n = 3;
    else if (c >= 0xC0)
        n = 2;
    if ((size_t)n > p->len - p->pos)
        n = (int)(p->len - p->pos);
    snprintf(out, size, "'%.*s'", n, p->text + p->pos);
    return out;
}

static TOML_NOINLINE int too_deep(struct toml_parser *p, struct toml_pos pos)
{
    return toml_fail(p, pos, "nesting too deep (more than %d levels)", GS_TOML_MAX_DEPTH);
}

/* Inline: it runs for every value, and its callers have a frame to share. */
static inline int new_value(struct toml_parser *p, enum gs_toml_type type, struct toml_pos pos,
                            unsigned depth, struct gs_toml_value **ret_value)
{
    struct gs_toml_value *v;

    if (depth > GS_TOML_MAX_DEPTH)
        return too_deep(p, pos);
    v = toml_alloc(p->doc, sizeof(*v));
    if (v == NULL)
        return toml_oom(p);
    memset(v, 0, sizeof(*v));
    v->type = type;
    v->line = pos.line;
    v->col = pos.col;
    v->depth = (uint16_t)depth;
    *ret_value = v;
    return 0;
}

/* ---- encoding ---- */

/* Length of the well-formed UTF-8 sequence that starts s (avail bytes), 0 when malformed. */
static size_t utf8_seq_len(const unsigned char *s, size_t avail)
{
    unsigned char lo = 0x80, hi = 0xBF;
    size_t n, i;

    if (s[0] >= 0xC2 && s[0] <= 0xDF)
        n = 2;
    else if (s[0] >= 0xE0 && s[0] <= 0xEF)
        n = 3;
    else if (s[0] >= 0xF0 && s[0] <= 0xF4)
        n = 4;
    else
        return 0;
    if (s[0] == 0xE0)
        lo = 0xA0; /* overlong */
    else if (s[0] == 0xED)
        hi = 0x9F; /* surrogates */
    else if (s[0] == 0xF0)
        lo = 0x90; /* overlong */
    else if (s[0] == 0xF4)
        hi = 0x8F; /* beyond U+10FFFF */
    if (avail < n || s[1] < lo || s[1] > hi)
        return 0;
    for (i = 2; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    }
    return n;
}

/* A byte of 0x80 or more at s[*i]: one well-formed UTF-8 sequence, which *i moves past. */
static int check_utf8(struct toml_parser *p, size_t *i)
{
    const unsigned char *s = (const unsigned char *)p->text;
    unsigned char c = s[*i];
    size_t n;

    p->has_high = true;
    n = utf8_seq_len(s + *i, p->len - *i);
    if (n == 0 && (c < 0xC2 || c > 0xF4))
        return toml_fail(p, toml_pos_at(p, *i), "invalid utf-8 byte 0x%02x", c);
    if (n == 0)
        return toml_fail(p, toml_pos_at(p, *i), "invalid utf-8 sequence starting with byte 0x%02x",
                         c);
    *i += n;
    return 0;
}

/* Checks the character at s[*i] and moves *i past it. */
static int check_char(struct toml_parser *p, size_t *i)
{
    const unsigned char *s = (const unsigned char *)p->text;
    unsigned char c = s[*i];

    if (c >= 0x80)
        return check_utf8(p, i);
    if (c == '\r' && (*i + 1 == p->len || s[*i + 1] != '\n'))
        return toml_fail(p, toml_pos_at(p, *i), "carriage return not followed by line feed");
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F)
        return toml_fail(p, toml_pos_at(p, *i), "control character U+%04X is not allowed", c);
    (*i)++;
    return 0;
}

/*
 * Offset of the first byte from i that check_char() must see, a block at a time, copying
 * each block read into the document's copy of the input on the way.
 */
static size_t skip_plain_blocks(const struct toml_parser *p, size_t i)
{
    const char *text = p->text;
    char *kept = p->kept;
    size_t len = p->len;

    while (len - i >= TOML_BLOCK_SIZE) {
        toml_block b = toml_block_load(text + i);
        toml_mask flagged = toml_block_special(b);

        memcpy(kept + i, text + i, TOML_BLOCK_SIZE);
        /* LFs are fine: only some blocks have one, so they are taken out only then */
        if (flagged != 0 && (flagged &= ~toml_block_eq(b, '\n')) != 0)
            return i + toml_mask_first(flagged);
        i += TOML_BLOCK_SIZE;
    }
    return i;
}

/*
 * Rejects malformed UTF-8, control characters other than tab, and CR without LF, notes
 * whether there is any non-ASCII text (see toml_here()), and fills p->kept: the pass reads
 * every byte anyway, so the copy costs a store per block.
 */
static int check_encoding(struct toml_parser *p)
{
    size_t i = 0, at;
    int rc = 0;

    while (rc == 0 && i < p->len) {
        i = skip_plain_blocks(p, i);
        if (i == p->len)
            break;
        at = i;
        rc = check_char(p, &i);
        /* a character may run past the last block copied, or sit in the last few bytes */
        memcpy(p->kept + at, p->text + at, i - at);
    }
    return rc;
}

/* ---- whitespace, comments, newlines ---- */

static void skip_ws(struct toml_parser *p)
{
    size_t i = p->pos;

    while (i < p->len && (p->text[i] == ' ' || p->text[i] == '\t'))
        i++;
    p->pos = i;
}

static bool at_newline(const struct toml_parser *p)
{
    int c = toml_peek(p);

    return c == '\n' || c == '\r'; /* check_encoding made every '\r' part of "\r\n" */
}

static void skip_newline(struct toml_parser *p)
{
    p->pos += toml_peek(p) == '\r' ? 2 : 1;
    new_line(p, p->pos);
}

static inline void skip_comment(struct toml_parser *p)
{
    const char *nl;

    if (toml_peek(p) != '#')
        return;
    nl = memchr(p->text + p->pos, '\n', p->len - p->pos);
    p->pos = nl == NULL ? p->len : (size_t)(nl - p->text);
    if (p->pos > 0 && p->text[p->pos - 1] == '\r')
        p->pos--;
}

static void skip_ws_comments_newlines_loop(struct toml_parser *p)
{
    for (;;) {
        skip_ws(p);
        skip_comment(p);
        if (!at_newline(p))
            return;
        skip_newline(p);
    }
}

/* Whitespace, comments and newlines, as allowed between array elements. */
static inline void skip_ws_comments_newlines(struct toml_parser *p)
{
    int c = toml_peek(p);

    /* usually there is nothing to skip, as in "[1, 2]" after the 1, or one space */
    if (c == ' ' && toml_peek_at(p, 1) > ' ' && toml_peek_at(p, 1) != '#') {
        p->pos++;
        return;
    }
    if (c == ' ' || c == '\t' || c == '#' || c == '\n' || c == '\r')
        skip_ws_comments_newlines_loop(p);
}

/* After a key/value pair or header: optional whitespace and comment, then newline or end. */
static TOML_NOINLINE int no_newline(struct toml_parser *p, const char *after)
{
    char what[16];

    return toml_fail(p, toml_here(p), "expected newline after %s, found %s", after,
                     toml_describe_here(p, what, sizeof(what)));
}

static int end_line(struct toml_parser *p, const char *after)
{
    skip_ws(p);
    skip_comment(p);
    if (toml_peek(p) < 0)
        return 0;
    if (at_newline(p)) {
        skip_newline(p);
        return 0;
    }
    return no_newline(p, after);
}

/* ---- keys ---- */

/* c is a byte value or -1 (end of input). */
static bool is_bare_key_char(int c)
{
    return c >= 0 && (toml_char_class[c] & TOML_CH_BARE);
}

static void text_put(char *out, size_t size, size_t *len, char c)
{
    if (*len + 1 < size)
        out[(*len)++] = c;
}

/* Writes one key part as it would be typed: bare when possible, else double-quoted. */
static void key_part_text(const struct toml_key_part *part, char *out, size_t size, size_t *len)
{
    bool bare = part->len > 0;
    size_t i;

    for (i = 0; i < part->len && bare; i++)
        bare = is_bare_key_char((unsigned char)part->name[i]);
    if (!bare)
        text_put(out, size, len, '"');
    for (i = 0; i < part->len; i++) {
        unsigned char c = (unsigned char)part->name[i];

        if (!bare && (c == '"' || c == '\\'))
            text_put(out, size, len, '\\');
        text_put(out, size, len, c < 0x20 || c == 0x7F ? '?' : (char)c);
    }
    if (!bare)
        text_put(out, size, len, '"');
}

/* The first n parts of the key being parsed, dotted, for messages. */
static const char *key_text(const struct toml_parser *p, size_t n, char *out, size_t size)
{
    size_t len = 0;

    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            text_put(out, size, &len, '.');
        key_part_text(&p->parts[i], out, size, &len);
    }
    out[len] = '\0';
    if (len + 1 >= size && size > 4) {
        /* full, so assume it was cut: end with "..." at a character boundary */
        len = size - 4;
        while (len > 0 && ((unsigned char)out[len] & 0xC0) == 0x80)
            len--;
        memcpy(out + len, "...", 4);
    }
    return out;
}

/* End of the bare key that starts at offset i, a block at a time. */
static size_t bare_key_end(const struct toml_parser *p, size_t i)
{
    while (p->len - i >= TOML_BLOCK_SIZE) {
        toml_mask others = toml_block_non_bare(toml_block_load(p->text + i));

        if (others != 0)
            return i + toml_mask_first(others);
        i += TOML_BLOCK_SIZE;
    }
    while (i < p->len && is_bare_key_char((unsigned char)p->text[i]))
        i++;
    return i;
}

static TOML_NOINLINE int no_key(struct toml_parser *p, struct toml_pos pos)
{
    char what[16];

    return toml_fail(p, pos, "expected a key, found %s", toml_describe_here(p, what, sizeof(what)));
}

static int parse_key_part(struct toml_parser *p, struct toml_key_part *part)
{
    size_t end = p->pos;
    int c = toml_peek(p);

    part->pos = toml_here(p);
    part->in_arena = c == '"' || c == '\'';
    if (part->in_arena)
        return toml_parse_string(p, false, &part->name, &part->len);
    if (!is_bare_key_char(c))
        return no_key(p, part->pos);
    end = bare_key_end(p, end);
    part->name = p->text + p->pos;
    part->len = end - p->pos;
    p->pos = end;
    return 0;
}

/* Makes a key part that is about to become a table entry a string of the document. */
static void part_key(struct toml_parser *p, struct toml_key_part *part)
{
    if (!part->in_arena) {
        part->name = toml_keep(p, (size_t)(part->name - p->text), part->len);
        part->in_arena = true;
    }
}

/* A simple or dotted key into p->parts; leaves p->pos after the whitespace that follows. */
static int parse_key(struct toml_parser *p)
{
    int rc;

    p->nparts = 0;
    for (;;) {
        if (p->nparts == GS_TOML_MAX_DEPTH)
            return toml_fail(p, toml_here(p), "key has too many parts (more than %d)",
                             GS_TOML_MAX_DEPTH);
        rc = parse_key_part(p, &p->parts[p->nparts]);
        if (rc < 0)
            return rc;
        p->nparts++;
        skip_ws(p);
        if (toml_peek(p) != '.')
            return 0;
        p->pos++;
        skip_ws(p);
    }
}

/* ---- tables ---- */

static const char *article(enum gs_toml_type type)
{
    const char *name = gs_toml_type_name(type);

    return strchr("aeiou", name[0]) != NULL ? "an" : "a";
}

/* Adds a new table under parts[i] of the current key to parent. */
static int add_table(struct toml_parser *p, struct gs_toml_value *parent, size_t i, unsigned flags,
                     struct toml_pos pos, struct gs_toml_value **ret_table)
{
    struct toml_key_part *part = &p->parts[i];
    struct gs_toml_value *t = NULL;
    int rc;

    rc = new_value(p, GS_TOML_TABLE, pos, parent->depth + 1u, &t);
    if (rc < 0)
        return rc;
    t->flags = (uint8_t)flags;
    t->section = p->section;
    part_key(p, part);
    rc = toml_table_add(p->doc, parent, part->name, part->len, part->pos.line, part->pos.col, t);
    if (rc < 0)
        return toml_oom(p);
    *ret_table = t;
    return 0;
}

/* Why parts[0..i] of a key cannot name a table to add to or pass through. */
static int not_a_table(struct toml_parser *p, size_t i, const struct gs_toml_value *v)
{
    char key[KEY_TEXT_MAX];

    key_text(p, i + 1, key, sizeof(key));
    if (v->type == GS_TOML_TABLE)
        return toml_fail(p, p->parts[i].pos, "cannot extend inline table '%s' (defined at %d:%d)",
                         key, v->line, v->col);
    return toml_fail(p, p->parts[i].pos, "key '%s' is already defined as %s %s at %d:%d", key,
                     article(v->type), gs_toml_type_name(v->type), v->line, v->col);
}

/* One step of a dotted key: into the table named by parts[i], creating it when missing. */
static int dotted_step(struct toml_parser *p, struct gs_toml_value *table, size_t i,
                       struct gs_toml_value **ret_table)
{
    const struct toml_key_part *part = &p->parts[i];
    struct toml_entry *e = toml_table_find(table, part->name, part->len);
    struct gs_toml_value *t;
    char key[KEY_TEXT_MAX];

    if (e == NULL)
        return add_table(p, table, i, TOML_F_DOTTED, part->pos, ret_table);
    t = e->value;
    if (t->type != GS_TOML_TABLE || (t->flags & TOML_F_INLINE))
        return not_a_table(p, i, t);
    if ((t->flags & TOML_F_HEADER) || ((t->flags & TOML_F_DOTTED) && t->section != p->section))
        return toml_fail(p, part->pos,
                         "cannot add to table '%s' with dotted keys: it was defined at %d:%d",
                         key_text(p, i + 1, key, sizeof(key)), t->line, t->col);
    t->flags |= TOML_F_DOTTED;
    t->section = p->section;
    *ret_table = t;
    return 0;
}

/* One step of a header's name: into parts[i], creating an implicit table when missing. */
static int header_step(struct toml_parser *p, struct gs_toml_value *table, size_t i,
                       struct gs_toml_value **ret_table)
{
    const struct toml_key_part *part = &p->parts[i];
    struct toml_entry *e = toml_table_find(table, part->name, part->len);
    struct gs_toml_value *v;

    if (e == NULL)
        return add_table(p, table, i, 0, part->pos, ret_table);
    v = e->value;
    if (v->type == GS_TOML_ARRAY && (v->flags & TOML_F_AOT)) {
        *ret_table = v->u.array.items[v->u.array.count - 1];
        return 0;
    }
    if (v->type != GS_TOML_TABLE || (v->flags & TOML_F_INLINE))
        return not_a_table(p, i, v);
    *ret_table = v;
    return 0;
}

/* Why the last part of a [header] or [[header]] cannot be (re)defined. */
static int redefined(struct toml_parser *p, const struct gs_toml_value *v, bool aot)
{
    const struct toml_key_part *last = &p->parts[p->nparts - 1];
    char key[KEY_TEXT_MAX];

    key_text(p, p->nparts, key, sizeof(key));
    if (v->type == GS_TOML_TABLE && (v->flags & TOML_F_INLINE))
        return toml_fail(p, last->pos, "cannot redefine inline table '%s' (defined at %d:%d)", key,
                         v->line, v->col);
    if (v->type == GS_TOML_TABLE && aot)
        return toml_fail(p, last->pos, "'%s' is already a table (defined at %d:%d)", key, v->line,
                         v->col);
    if (v->type == GS_TOML_TABLE && (v->flags & TOML_F_DOTTED))
        return toml_fail(p, last->pos, "table '%s' already defined by dotted keys at %d:%d", key,
                         v->line, v->col);
    if (v->type == GS_TOML_TABLE)
        return toml_fail(p, last->pos, "table '%s' already defined at %d:%d", key, v->line, v->col);
    if (v->type == GS_TOML_ARRAY && (v->flags & TOML_F_AOT))
        return toml_fail(p, last->pos, "'%s' is already an array of tables (defined at %d:%d)", key,
                         v->line, v->col);
    if (v->type == GS_TOML_ARRAY && aot)
        return toml_fail(p, last->pos, "cannot append to static array '%s' (defined at %d:%d)", key,
                         v->line, v->col);
    return toml_fail(p, last->pos, "key '%s' is already defined as %s %s at %d:%d", key,
                     article(v->type), gs_toml_type_name(v->type), v->line, v->col);
}

/* [header]: defines the table named by p->parts under parent. */
static int define_table(struct toml_parser *p, struct gs_toml_value *parent, struct toml_pos at,
                        struct gs_toml_value **current)
{
    const struct toml_key_part *last = &p->parts[p->nparts - 1];
    struct toml_entry *e = toml_table_find(parent, last->name, last->len);
    struct gs_toml_value *t;

    if (e == NULL)
        return add_table(p, parent, p->nparts - 1, TOML_F_HEADER, at, current);
    t = e->value;
    if (t->type != GS_TOML_TABLE || (t->flags & (TOML_F_HEADER | TOML_F_DOTTED | TOML_F_INLINE)))
        return redefined(p, t, false);
    /* implicit so far: this header is where it is defined */
    t->flags |= TOML_F_HEADER;
    t->line = at.line;
    t->col = at.col;
    *current = t;
    return 0;
}

/* [[header]]: appends a new table to the array of tables named by p->parts under parent. */
static int define_aot_element(struct toml_parser *p, struct gs_toml_value *parent,
                              struct toml_pos at, struct gs_toml_value **current)
{
    struct toml_key_part *last = &p->parts[p->nparts - 1];
    struct toml_entry *e = toml_table_find(parent, last->name, last->len);
    struct gs_toml_value *array = NULL, *t = NULL;
    int rc;

    if (e != NULL) {
        array = e->value;
        if (array->type != GS_TOML_ARRAY || !(array->flags & TOML_F_AOT))
            return redefined(p, array, true);
    } else {
        rc = new_value(p, GS_TOML_ARRAY, at, parent->depth + 1u, &array);
        if (rc < 0)
            return rc;
        array->flags = TOML_F_AOT;
        part_key(p, last);
        if (toml_table_add(p->doc, parent, last->name, last->len, last->pos.line, last->pos.col,
                           array) < 0)
            return toml_oom(p);
    }
    rc = new_value(p, GS_TOML_TABLE, at, array->depth + 1u, &t);
    if (rc < 0)
        return rc;
    t->flags = TOML_F_HEADER;
    if (toml_array_push(p->doc, array, t) < 0)
        return toml_oom(p);
    *current = t;
    return 0;
}

/* [a.b.c] or [[a.b.c]]; *current becomes the table that following key/value pairs fill. */
static int parse_header(struct toml_parser *p, struct gs_toml_value **current)
{
    struct toml_pos at = toml_here(p);
    bool aot = toml_peek_at(p, 1) == '[';
    struct gs_toml_value *parent = p->doc->root;
    char what[16];
    int rc;

    p->pos += aot ? 2 : 1;
    skip_ws(p);
    rc = parse_key(p);
    if (rc < 0)
        return rc;
    if (toml_peek(p) != ']' || (aot && toml_peek_at(p, 1) != ']'))
        return toml_fail(p, toml_here(p), "expected '%s' to close the table header, found %s",
                         aot ? "]]" : "]", toml_describe_here(p, what, sizeof(what)));
    p->pos += aot ? 2 : 1;
    p->section++;
    for (size_t i = 0; i + 1 < p->nparts; i++) {
        rc = header_step(p, parent, i, &parent);
        if (rc < 0)
            return rc;
    }
    if (aot)
        return define_aot_element(p, parent, at, current);
    return define_table(p, parent, at, current);
}

/* ---- key/value pairs and compound values ---- */

static TOML_NOINLINE int duplicate_key(struct toml_parser *p, const struct toml_entry *e)
{
    char key[KEY_TEXT_MAX];

    return toml_fail(p, p->parts[p->nparts - 1].pos, "duplicate key '%s' (first defined at %d:%d)",
                     key_text(p, p->nparts, key, sizeof(key)), e->key_line, e->key_col);
}

static TOML_NOINLINE int no_equals(struct toml_parser *p)
{
    char key[KEY_TEXT_MAX], what[16];

    return toml_fail(p, toml_here(p), "expected '=' after key '%s', found %s",
                     key_text(p, p->nparts, key, sizeof(key)),
                     toml_describe_here(p, what, sizeof(what)));
}

/* key = value, into table (the current table, or an inline table being read). */
static int parse_keyval(struct toml_parser *p, struct gs_toml_value *table)
{
    struct gs_toml_value *parent = table, *value;
    struct toml_key_part last;
    struct toml_entry *e;
    int rc;

    rc = parse_key(p);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i + 1 < p->nparts; i++) {
        rc = dotted_step(p, parent, i, &parent);
        if (rc < 0)
            return rc;
    }
    last = p->parts[p->nparts - 1];
    e = toml_table_find(parent, last.name, last.len);
    if (e != NULL)
        return duplicate_key(p, e);
    if (toml_peek(p) != '=')
        return no_equals(p);
    p->pos++;
    skip_ws(p);
    /* p->parts is free for nested keys from here on; last holds what is still needed */
    rc = parse_value(p, parent->depth + 1u, &value);
    if (rc < 0)
        return rc;
    part_key(p, &last);
    if (toml_table_add(p->doc, parent, last.name, last.len, last.pos.line, last.pos.col, value) < 0)
        return toml_oom(p);
    return 0;
}

static int array_error(struct toml_parser *p, struct toml_pos open)
{
    char what[16];

    if (toml_peek(p) < 0)
        return toml_fail(p, open, "unterminated array");
    return toml_fail(p, toml_here(p), "expected ',' or ']' in array, found %s",
                     toml_describe_here(p, what, sizeof(what)));
}

static TOML_NOINLINE int parse_array(struct toml_parser *p, unsigned depth,
                                     struct gs_toml_value **ret_value)
{
    struct toml_pos open = toml_here(p);
    struct gs_toml_value *array = NULL, *item = NULL;
    int rc;

    rc = new_value(p, GS_TOML_ARRAY, open, depth, &array);
    if (rc < 0)
        return rc;
    p->pos++;
    for (;;) {
        skip_ws_comments_newlines(p);
        if (toml_peek(p) == ']')
            break;
        rc = parse_value(p, depth + 1, &item);
        if (rc < 0)
            return rc;
        if (toml_array_push(p->doc, array, item) < 0)
            return toml_oom(p);
        skip_ws_comments_newlines(p);
        if (toml_peek(p) == ']')
            break;
        if (toml_peek(p) != ',')
            return array_error(p, open);
        p->pos++;
    }
    p->pos++;
    *ret_value = array;
    return 0;
}

static int inline_table_error(struct toml_parser *p, struct toml_pos open)
{
    char what[16];

    if (toml_peek(p) < 0)
        return toml_fail(p, open, "unterminated inline table");
    if (at_newline(p))
        return toml_fail(p, toml_here(p), "newline not allowed in inline table (opened at %d:%d)",
                         open.line, open.col);
    return toml_fail(p, toml_here(p), "expected ',' or '}' in inline table, found %s",
                     toml_describe_here(p, what, sizeof(what)));
}

static TOML_NOINLINE int parse_inline_table(struct toml_parser *p, unsigned depth,
                                            struct gs_toml_value **ret_value)
{
    struct toml_pos open = toml_here(p);
    struct gs_toml_value *table = NULL;
    int rc;

    rc = new_value(p, GS_TOML_TABLE, open, depth, &table);
    if (rc < 0)
        return rc;
    table->flags = TOML_F_INLINE;
    p->pos++;
    skip_ws(p);
    while (toml_peek(p) != '}') {
        if (at_newline(p) || toml_peek(p) < 0)
            return inline_table_error(p, open);
        rc = parse_keyval(p, table);
        if (rc < 0)
            return rc;
        skip_ws(p);
        if (toml_peek(p) == '}')
            break;
        if (toml_peek(p) != ',')
            return inline_table_error(p, open);
        p->pos++;
        skip_ws(p);
        if (toml_peek(p) == '}')
            return toml_fail(p, toml_here(p), "trailing comma not allowed in inline table");
    }
    p->pos++;
    *ret_value = table;
    return 0;
}

static int parse_value(struct toml_parser *p, unsigned depth, struct gs_toml_value **ret_value)
{
    struct gs_toml_value *v = NULL;
    int c = toml_peek(p);
    int rc;

    if (c == '[')
        return parse_array(p, depth, ret_value);
    if (c == '{')
        return parse_inline_table(p, depth, ret_value);
    rc = new_value(p, GS_TOML_STRING, toml_here(p), depth, &v);
    if (rc < 0)
        return rc;
    if (c == '"' || c == '\'')
        rc = toml_parse_string(p, true, &v->u.str.ptr, &v->u.str.len);
    else
        rc = toml_parse_scalar(p, v);
    if (rc < 0)
        return rc;
    *ret_value = v;
    return 0;
}

/* ---- document ---- */

static int parse_document(struct toml_parser *p)
{
    struct gs_toml_value *current = p->doc->root;
    int c, rc;

    if (p->len >= 3 && memcmp(p->text, "\xEF\xBB\xBF", 3) == 0)
        p->pos = 3;
    for (;;) {
        skip_ws(p);
        c = toml_peek(p);
        if (c < 0)
            return 0;
        if (c == '[')
            rc = parse_header(p, &current);
        else if (c == '#' || at_newline(p))
            rc = 0;
        else
            rc = parse_keyval(p, current);
        if (rc < 0)
            return rc;
        rc = end_line(p, c == '[' ? "table header" : "value");
        if (rc < 0)
            return rc;
    }
}

/* Room for the document's copy of the input, which check_encoding() fills. */
static int alloc_kept(struct toml_parser *p)
{
    if (p->len == SIZE_MAX)
        return toml_oom(p);
    p->kept = toml_alloc_bytes(p->doc, p->len + 1);
    if (p->kept == NULL)
        return toml_oom(p);
    p->kept[p->len] = '\0';
    return 0;
}

static void parser_init(struct toml_parser *p, const char *text, size_t len,
                        struct gs_toml_doc *doc, struct gs_error *err)
{
    memset(p, 0, sizeof(*p));
    p->text = text;
    p->len = len;
    p->doc = doc;
    p->err = err;
    gs_buf_init(&p->scratch);
    p->line = 1;
    p->count_col = 1;
    p->c_locale = (locale_t)0;
}

static void parser_release(struct toml_parser *p)
{
    gs_buf_release(&p->scratch);
    if (p->c_locale != (locale_t)0)
        freelocale(p->c_locale);
}

int gs_toml_parse(const char *text, size_t len, struct gs_toml_doc **ret_doc, struct gs_error *err)
{
    struct toml_parser p;
    struct gs_toml_doc *doc;
    int rc;

    gs_error_clear(err);
    if (ret_doc == NULL || (text == NULL && len > 0))
        return gs_error_set(err, -EINVAL, 0, 0, "invalid argument");
    doc = calloc(1, sizeof(*doc));
    if (doc == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
    parser_init(&p, text, len, doc, err);
    rc = new_value(&p, GS_TOML_TABLE, (struct toml_pos){1, 1}, 0, &doc->root);
    if (rc == 0)
        rc = alloc_kept(&p);
    if (rc == 0)
        rc = check_encoding(&p);
    if (rc == 0)
        rc = parse_document(&p);
    parser_release(&p);
    if (rc < 0) {
        gs_toml_free(doc);
        return rc;
    }
    *ret_doc = doc;
    return 0;
}
