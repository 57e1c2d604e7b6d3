/*
 * toml.h: TOML 1.0.0 parser. Job files, node configs and the scheduler's own config are TOML;
 * everything that reads them goes through this header.
 *
 * gs_toml_parse() turns a whole document (bytes plus length, need not be NUL-terminated) into
 * a read-only tree owned by a struct gs_toml_doc. Every value in the tree, every key and every
 * string lives until gs_toml_free(); pointers returned by the getters are borrowed from the
 * document. Tables keep their keys in document order and are indexed by hash once they grow,
 * so lookups stay cheap in large tables.
 *
 * Each value remembers where it starts in the source (1-based line and column, the column
 * counted in Unicode characters, a tab counting as one) and each table entry also remembers
 * where its key starts, so that validators built on top can report
 * "job.toml:7:12: unknown key 'gpu_per_node'".
 *
 * A value's position: scalars, arrays and inline tables start at their first character; a
 * table defined by a [header] or an array-of-tables element defined by [[header]] starts at
 * the header's '['; a table created implicitly (by a dotted key, or as a parent named in a
 * header) starts at the key part that created it.
 *
 * Nesting is limited to GS_TOML_MAX_DEPTH levels below the root (arrays, inline tables,
 * dotted keys and header names all count), so neither the parser nor callers that recurse
 * over the tree can exhaust the stack.
 *
 * Threading: a document is immutable after parsing, so any number of threads may read one
 * concurrently. gs_toml_parse() touches no global state and may run in several threads at
 * once (it parses floats under a thread-local "C" locale).
 */
#ifndef GS_TOML_H
#define GS_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Deepest nesting below the root that gs_toml_parse() accepts. */
#define GS_TOML_MAX_DEPTH 128

struct gs_toml_doc;
struct gs_toml_value;

enum gs_toml_type {
    GS_TOML_NONE = 0,       /* what gs_toml_type() says of a NULL (missing) value */
    GS_TOML_TABLE,          /* [table], inline table or the root */
    GS_TOML_ARRAY,          /* [ ... ] or an array of tables */
    GS_TOML_STRING,         /* any of the four string kinds, escapes decoded */
    GS_TOML_INTEGER,        /* int64_t */
    GS_TOML_FLOAT,          /* double */
    GS_TOML_BOOL,           /* true / false */
    GS_TOML_DATETIME,       /* offset date-time: 1979-05-27T07:32:00-07:00 */
    GS_TOML_DATETIME_LOCAL, /* local date-time: 1979-05-27T07:32:00 */
    GS_TOML_DATE_LOCAL,     /* local date: 1979-05-27 */
    GS_TOML_TIME_LOCAL,     /* local time: 07:32:00 */
};

/*
 * A date, time or both, as written. Fields of parts that are absent are zero. Fractional
 * seconds beyond nanoseconds are truncated. second may be 60 (a leap second, as RFC 3339
 * allows). offset_minutes is east of UTC ("Z" and "+00:00" are both 0).
 */
struct gs_toml_datetime {
    int year, month, day;     /* when has_date: 0000-9999, 1-12, 1-28/29/30/31 */
    int hour, minute, second; /* when has_time: 0-23, 0-59, 0-60 */
    int nanosecond;           /* when has_time: 0-999999999 */
    int offset_minutes;       /* when has_offset: -1439..1439 */
    bool has_date, has_time, has_offset;
};

/*
 * Parses len bytes of TOML at text (a NUL is not a terminator: it is rejected like any
 * other control character; a leading UTF-8 byte order mark is skipped). On success stores a
 * new document in *ret_doc, which the caller frees with gs_toml_free(), clears err and
 * returns 0. On failure returns -EINVAL for any syntax, encoding or semantic error (err gets
 * the line:col of the problem and a lowercase message such as "duplicate key 'name' (first
 * defined at 3:1)"), or -ENOMEM; *ret_doc is left untouched. err may be NULL.
 * Integers must fit in int64_t and floats in a double: larger ones are errors, not clamped
 * or turned into infinity. Multi-line strings keep their newlines as "\n" (CRLF included).
 */
int gs_toml_parse(const char *text, size_t len, struct gs_toml_doc **ret_doc, struct gs_error *err);

/*
 * gs_toml_parse of the file at path. Returns 0 with *ret_doc, or a negative errno with err's
 * message naming the place: "PATH: cannot open: ...", "PATH: cannot read: ..." or
 * "PATH:LINE:COL: what" (err's line and col stay 0: the message holds the place).
 */
int gs_toml_parse_file(const char *path, struct gs_toml_doc **ret_doc, struct gs_error *err);

/* Frees the document and everything borrowed from it; NULL allowed. */
void gs_toml_free(struct gs_toml_doc *doc);

/* The root table; NULL only when doc is NULL. */
const struct gs_toml_value *gs_toml_root(const struct gs_toml_doc *doc);

/*
 * Type of a value; GS_TOML_NONE for NULL, so gs_toml_type(gs_toml_get(t, "k")) tells a
 * missing key from a present one.
 */
enum gs_toml_type gs_toml_type(const struct gs_toml_value *v);

/* "table", "array", "string", "integer", "float", "boolean", "offset date-time",
 * "local date-time", "local date", "local time"; "none" for GS_TOML_NONE. Never NULL. */
const char *gs_toml_type_name(enum gs_toml_type type);

/* Source position of a value (see the top of this file); 0 when v is NULL. */
int gs_toml_line(const struct gs_toml_value *v);
int gs_toml_col(const struct gs_toml_value *v);

/* Number of entries of a table or elements of an array; 0 for anything else or NULL. */
size_t gs_toml_count(const struct gs_toml_value *v);

/* The i-th value of a table or array, in document order; NULL when out of range. */
const struct gs_toml_value *gs_toml_at(const struct gs_toml_value *v, size_t i);

/*
 * The i-th key of a table, NUL-terminated; NULL when v is not a table or i is out of range.
 * Quoted keys may hold a NUL ("\u0000"): ret_len (NULL allowed) receives the full length.
 */
const char *gs_toml_key_at(const struct gs_toml_value *table, size_t i, size_t *ret_len);

/* Where the i-th key of a table starts; 0 when out of range. */
int gs_toml_key_line(const struct gs_toml_value *table, size_t i);
int gs_toml_key_col(const struct gs_toml_value *table, size_t i);

/* Looks key up in a table; NULL when missing or when table is not a table (or NULL). */
const struct gs_toml_value *gs_toml_get(const struct gs_toml_value *table, const char *key);
/* The same for a key of len bytes that may hold NULs. */
const struct gs_toml_value *gs_toml_getn(const struct gs_toml_value *table, const char *key,
                                         size_t len);

/*
 * Follows a dotted path of keys through nested tables ("resources.gpus_per_node"). Path
 * parts are taken literally between the dots (no quoting, no whitespace trimming), so this
 * suits bare keys. Returns NULL when any part is missing, empty or not a table on the way.
 */
const struct gs_toml_value *gs_toml_get_path(const struct gs_toml_value *table, const char *path);

/*
 * Typed getters. Each returns 0 and writes its output only on success, -ENOENT when v is
 * NULL (a missing key passed straight from gs_toml_get) and -EINVAL when v has another type.
 */

/* String contents (NUL-terminated, but may hold NULs: use *ret_len, which may be NULL). */
int gs_toml_as_string(const struct gs_toml_value *v, const char **ret_str, size_t *ret_len);
int gs_toml_as_int(const struct gs_toml_value *v, int64_t *ret_int);
/* Accepts floats and also integers (converted to the nearest double). */
int gs_toml_as_float(const struct gs_toml_value *v, double *ret_float);
int gs_toml_as_bool(const struct gs_toml_value *v, bool *ret_bool);
/* Accepts all four date/time types; the has_ flags say which parts are present. */
int gs_toml_as_datetime(const struct gs_toml_value *v, struct gs_toml_datetime *ret_dt);

#endif
