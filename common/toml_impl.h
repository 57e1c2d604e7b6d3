/*
 * toml_impl.h: internals shared by the TOML parser's files; nothing outside common/toml*.c
 * includes this.
 *
 *   toml.c         document model: arena, tables with a hash index, arrays, public getters
 *   toml_parse.c   document structure: encoding check, keys, headers, arrays, inline tables
 *                  and every rule about defining a table or key twice
 *   toml_scalar.c  strings, numbers, booleans and dates/times
 *
 * Memory: a document owns one arena (a list of chunks). Every value, key, string and growable
 * vector of a document is carved from it and nothing is freed one by one: gs_toml_free()
 * drops the chunks. A vector that grows is copied to a new block and the old block stays in
 * the arena, which costs at most as much again as the final size and means that error paths
 * never leak and never need to walk a half-built tree.
 */
#ifndef GS_TOML_IMPL_H
#define GS_TOML_IMPL_H

#include <locale.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"
#include "common/toml.h"

/* How a table or array came to be; decides what may later extend or redefine it. */
enum {
    TOML_F_HEADER = 1 << 0, /* table defined by [header] (or an [[header]] element) */
    TOML_F_DOTTED = 1 << 1, /* table created or extended by dotted keys, in .section */
    TOML_F_INLINE = 1 << 2, /* inline table: closed once its '}' is read */
    TOML_F_AOT = 1 << 3,    /* array created by [[header]]: further headers may append */
};

struct toml_entry {
    const char *key; /* arena copy, NUL-terminated */
    size_t key_len;
    uint32_t hash;
    int key_line, key_col;
    struct gs_toml_value *value;
};

struct toml_table {
    struct toml_entry *entries; /* document order */
    size_t count, cap;
    size_t *slots; /* open addressing, entry index + 1, 0 = empty; NULL while small */
    size_t nslots; /* power of two, at least twice count */
};

struct toml_array {
    struct gs_toml_value **items;
    size_t count, cap;
};

struct gs_toml_value {
    enum gs_toml_type type;
    int line, col;
    uint16_t depth;   /* levels below the root */
    uint8_t flags;    /* TOML_F_*, tables and arrays only */
    uint32_t section; /* header count when TOML_F_DOTTED was last set */
    union {
        struct toml_table table;
        struct toml_array array;
        struct {
            const char *ptr; /* arena copy, NUL-terminated */
            size_t len;
        } str;
        int64_t integer;
        double real;
        bool boolean;
        struct gs_toml_datetime dt;
    } u;
};

struct toml_chunk;

struct gs_toml_doc {
    struct toml_chunk *chunks; /* head is the chunk small allocations come from */
    struct gs_toml_value *root;
};

/* toml.c: the model. Allocation failures return NULL / -ENOMEM. */
void *toml_alloc(struct gs_toml_doc *doc, size_t size);
const char *toml_strdup(struct gs_toml_doc *doc, const char *s, size_t len);
struct toml_entry *toml_table_find(const struct gs_toml_value *table, const char *key, size_t len);
/* Appends an entry; key must already live in the arena and must not be present yet. */
int toml_table_add(struct gs_toml_doc *doc, struct gs_toml_value *table, const char *key,
                   size_t key_len, int key_line, int key_col, struct gs_toml_value *value);
int toml_array_push(struct gs_toml_doc *doc, struct gs_toml_value *array,
                    struct gs_toml_value *item);

/* A place in the source, as reported to users. */
struct toml_pos {
    int line, col;
};

/* One part of a (possibly dotted) key, decoded into the arena. */
struct toml_key_part {
    const char *name;
    size_t len;
    struct toml_pos pos;
};

struct toml_parser {
    const char *text;
    size_t len;
    size_t pos; /* next byte to read */
    struct gs_toml_doc *doc;
    struct gs_error *err;
    struct gs_buf scratch; /* string decoding, float digits */
    uint32_t section;      /* number of headers read so far */
    /* line:col are computed lazily, scanning forward from the last place asked about */
    size_t mark_pos;
    int mark_line, mark_col;
    /* the key being parsed; consumed before its value is parsed, so nesting may reuse it */
    struct toml_key_part parts[GS_TOML_MAX_DEPTH];
    size_t nparts;
    locale_t c_locale; /* created on the first float, (locale_t)0 until then */
};

static inline int toml_peek(const struct toml_parser *p)
{
    return p->pos < p->len ? (unsigned char)p->text[p->pos] : -1;
}

static inline int toml_peek_at(const struct toml_parser *p, size_t ahead)
{
    return p->len - p->pos > ahead ? (unsigned char)p->text[p->pos + ahead] : -1;
}

static inline bool toml_is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* toml_parse.c: positions and errors, shared with toml_scalar.c. */
struct toml_pos toml_pos_at(struct toml_parser *p, size_t pos);
struct toml_pos toml_here(struct toml_parser *p);
/* Records -EINVAL at pos with a message and returns -EINVAL. */
int toml_fail(struct toml_parser *p, struct toml_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int toml_oom(struct toml_parser *p);
/* Writes a short description of the character at p->pos ("'x'", "newline", "end of input"). */
const char *toml_describe_here(const struct toml_parser *p, char *out, size_t size);

/* toml_scalar.c: each reads one token at p->pos and leaves p->pos just past it. */
/* Any of the four string kinds; multi-line ones only when allow_multiline. Result in arena. */
int toml_parse_string(struct toml_parser *p, bool allow_multiline, const char **ret_str,
                      size_t *ret_len);
/* Integer, float, boolean or date/time into v, whose type it sets. */
int toml_parse_scalar(struct toml_parser *p, struct gs_toml_value *v);

#endif
