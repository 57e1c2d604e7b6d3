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
 * never leak and never need to walk a half-built tree. The head chunk's free space is handed
 * out from both ends: aligned blocks from the front, strings (which need no alignment) from
 * the back. Both fast paths are inline below because the parser allocates for every value.
 * The input itself is copied into the arena once (during the encoding check, which reads
 * every byte anyway), and bare keys and strings without escapes stay in that copy
 * (toml_keep()) instead of being copied one by one.
 *
 * Speed: the parser works on bytes. It counts lines as it reads newlines, so a position's
 * column is a subtraction (characters are counted only in input with non-ASCII text), and
 * the up-front encoding check and string scanning look at a block of bytes at a time (the
 * toml_block helpers below), since almost all of a document is ASCII without control
 * characters.
 */
#ifndef GS_TOML_IMPL_H
#define GS_TOML_IMPL_H

#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/buf.h"
#include "common/error.h"
#include "common/toml.h"

/*
 * For slow paths (growing, errors) of hot functions, and for the bulky branches of a small
 * hot function: kept out of line, so that the common path around them needs fewer registers
 * saved and restored on every call.
 */
#define TOML_NOINLINE __attribute__((noinline))

/* How a table or array came to be; decides what may later extend or redefine it. */
enum {
    TOML_F_HEADER = 1 << 0, /* table defined by [header] (or an [[header]] element) */
    TOML_F_DOTTED = 1 << 1, /* table created or extended by dotted keys, in .section */
    TOML_F_INLINE = 1 << 2, /* inline table: closed once its '}' is read */
    TOML_F_AOT = 1 << 3,    /* array created by [[header]]: further headers may append */
};

struct toml_entry {
    const char *key; /* in the arena, NUL-terminated */
    size_t key_len;
    uint32_t hash; /* set once the table has an index: small tables never hash */
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
    char *free_start;          /* the head chunk's free space, NULL before the first chunk */
    size_t free_len;           /* free_start stays aligned: see toml_alloc() */
    struct gs_toml_value *root;
};

/* Every block toml_alloc() returns is aligned for any type. */
#define TOML_ALIGN ((size_t) _Alignof(max_align_t))

/* toml.c: the model. Allocation failures return NULL / -ENOMEM. */
void *toml_alloc_slow(struct gs_toml_doc *doc, size_t size);
char *toml_alloc_bytes_slow(struct gs_toml_doc *doc, size_t size);

static inline void *toml_alloc(struct gs_toml_doc *doc, size_t size)
{
    size_t rounded = (size + TOML_ALIGN - 1) & ~(TOML_ALIGN - 1);
    void *block = doc->free_start;

    /* rounded is 0 for size 0 and when the rounding wrapped; both go the slow way */
    if (rounded - 1 >= doc->free_len)
        return toml_alloc_slow(doc, size);
    doc->free_start += rounded;
    doc->free_len -= rounded;
    return block;
}

/* Unaligned bytes, for strings: taken from the far end of the free space. */
static inline char *toml_alloc_bytes(struct gs_toml_doc *doc, size_t size)
{
    if (size - 1 >= doc->free_len)
        return toml_alloc_bytes_slow(doc, size);
    doc->free_len -= size;
    return doc->free_start + doc->free_len;
}

/*
 * memcpy() for the short keys and strings that make up most of a document: two fixed-size
 * copies that may overlap, which compilers emit as plain moves, instead of a library call.
 */
static inline void toml_copy(char *dst, const char *src, size_t len)
{
    if (len >= 8 && len <= 16) {
        memcpy(dst, src, 8);
        memcpy(dst + len - 8, src + len - 8, 8);
    } else if (len >= 4 && len < 8) {
        memcpy(dst, src, 4);
        memcpy(dst + len - 4, src + len - 4, 4);
    } else if (len < 4) {
        for (size_t i = 0; i < len; i++)
            dst[i] = src[i];
    } else {
        memcpy(dst, src, len);
    }
}

/* A NUL-terminated arena copy of len bytes at s. */
static inline const char *toml_strdup(struct gs_toml_doc *doc, const char *s, size_t len)
{
    char *copy;

    if (len == SIZE_MAX)
        return NULL;
    copy = toml_alloc_bytes(doc, len + 1);
    if (copy == NULL)
        return NULL;
    toml_copy(copy, s, len);
    copy[len] = '\0';
    return copy;
}
/* Tables up to this many entries are searched linearly, without an index. */
#define TOML_LINEAR_MAX 8

bool toml_same_long_bytes(const char *a, const char *b, size_t len);

/* memcmp(a, b, len) == 0 for the short keys of most tables, without a call (see toml_copy). */
static inline bool toml_same_bytes(const char *a, const char *b, size_t len)
{
    uint64_t a8[2], b8[2];
    uint32_t a4[2], b4[2];

    if (len >= 8 && len <= 16) {
        memcpy(&a8[0], a, 8);
        memcpy(&a8[1], a + len - 8, 8);
        memcpy(&b8[0], b, 8);
        memcpy(&b8[1], b + len - 8, 8);
        return a8[0] == b8[0] && a8[1] == b8[1];
    }
    if (len >= 4 && len < 8) {
        memcpy(&a4[0], a, 4);
        memcpy(&a4[1], a + len - 4, 4);
        memcpy(&b4[0], b, 4);
        memcpy(&b4[1], b + len - 4, 4);
        return a4[0] == b4[0] && a4[1] == b4[1];
    }
    if (len < 4) {
        for (size_t i = 0; i < len; i++) {
            if (a[i] != b[i])
                return false;
        }
        return true;
    }
    return toml_same_long_bytes(a, b, len);
}

static inline bool toml_entry_is(const struct toml_entry *e, const char *key, size_t len)
{
    return e->key_len == len && toml_same_bytes(e->key, key, len);
}

struct toml_entry *toml_table_find_indexed(const struct gs_toml_value *table, const char *key,
                                           size_t len);

/* Inline, as the parser looks every key up (duplicates) before adding it. */
static inline struct toml_entry *toml_table_find(const struct gs_toml_value *table, const char *key,
                                                 size_t len)
{
    const struct toml_table *t = &table->u.table;

    if (t->slots != NULL)
        return toml_table_find_indexed(table, key, len);
    for (size_t i = 0; i < t->count; i++) {
        if (toml_entry_is(&t->entries[i], key, len))
            return &t->entries[i];
    }
    return NULL;
}

/* toml_table_add() when the table must grow or is (to be) indexed. */
int toml_table_add_slow(struct gs_toml_doc *doc, struct gs_toml_value *table, const char *key,
                        size_t key_len, int key_line, int key_col, struct gs_toml_value *value);

/* Appends an entry; key must already live in the arena and must not be present yet. */
static inline int toml_table_add(struct gs_toml_doc *doc, struct gs_toml_value *table,
                                 const char *key, size_t key_len, int key_line, int key_col,
                                 struct gs_toml_value *value)
{
    struct toml_table *t = &table->u.table;

    /* a small table with room needs neither growing nor indexing */
    if (t->count == t->cap || t->count >= TOML_LINEAR_MAX)
        return toml_table_add_slow(doc, table, key, key_len, key_line, key_col, value);
    t->entries[t->count++] = (struct toml_entry){key, key_len, 0, key_line, key_col, value};
    return 0;
}

/* Doubles the room for items of a full array. */
int toml_array_grow(struct gs_toml_doc *doc, struct gs_toml_value *array);

static inline int toml_array_push(struct gs_toml_doc *doc, struct gs_toml_value *array,
                                  struct gs_toml_value *item)
{
    if (array->u.array.count == array->u.array.cap && toml_array_grow(doc, array) < 0)
        return -ENOMEM;
    array->u.array.items[array->u.array.count++] = item;
    return 0;
}

/* A place in the source, as reported to users. */
struct toml_pos {
    int line, col;
};

/*
 * One part of a (possibly dotted) key. A bare key points into the input (not NUL-terminated)
 * and is kept as a document string only when it becomes a new table entry, since most parts
 * of a header or dotted key name a table that exists already; quoted keys are decoded into
 * the arena straight away.
 */
struct toml_key_part {
    const char *name;
    size_t len;
    bool in_arena; /* name is a document string, NUL-terminated */
    struct toml_pos pos;
};

struct toml_parser {
    const char *text;
    size_t len;
    size_t pos; /* next byte to read */
    struct gs_toml_doc *doc;
    struct gs_error *err;
    struct gs_buf scratch; /* string decoding, float digits */
    char *kept;            /* the document's copy of the input (see toml_keep()), len + 1 bytes */
    uint32_t section;      /* number of headers read so far */
    /*
     * Where the parser is, as line and start of line, kept up to date as it reads newlines,
     * so that toml_here() is a subtraction; counting characters is needed only when the input
     * holds non-ASCII text (has_high), and then resumes from the last count on the line.
     */
    int line;
    size_t line_start;
    bool has_high;
    size_t count_line_start, count_pos, count_col;
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

/* Classes of input bytes, for the loops that scan keys and number-like tokens. */
enum {
    TOML_CH_BARE = 1 << 0,  /* may appear in a bare key: A-Z a-z 0-9 _ - */
    TOML_CH_TOKEN = 1 << 1, /* may appear in a number, date or boolean token: bare or . + */
};

/* toml.c: TOML_CH_* of each byte value, for the scans that go byte by byte. */
extern const unsigned char toml_char_class[256];

/*
 * Scanning a block of input bytes at once, for the encoding check and for string contents.
 * A test gives a mask of the bytes it matches, in which toml_mask_first() finds the first.
 * With SSE2 (every x86-64) a block is 16 bytes; elsewhere SWAR ("SIMD within a register")
 * does 8 in a uint64_t, the word loaded little-endian so that byte k of the text is bits
 * 8k..8k+7 whatever the machine's byte order, each test flagging bit 7 of a matching byte.
 * The SWAR tests are exact: each byte is computed on its own, no borrow crosses into the next.
 */
#if defined(__SSE2__)
#include <emmintrin.h>

#define TOML_BLOCK_SIZE 16
typedef __m128i toml_block;
typedef uint32_t toml_mask; /* bit k: byte k matched */

static inline toml_block toml_block_load(const char *s)
{
    return _mm_loadu_si128((const __m128i *)(const void *)s);
}

static inline toml_mask toml_block_eq(toml_block b, unsigned char c)
{
    return (toml_mask)_mm_movemask_epi8(_mm_cmpeq_epi8(b, _mm_set1_epi8((char)c)));
}

/* Control characters, DEL and non-ASCII bytes (which compare below 0x20 as signed). */
static inline toml_mask toml_block_special(toml_block b)
{
    __m128i low = _mm_cmplt_epi8(b, _mm_set1_epi8(0x20));

    return (toml_mask)_mm_movemask_epi8(_mm_or_si128(low, _mm_cmpeq_epi8(b, _mm_set1_epi8(0x7F))));
}

/* CR, and LF too unless cr_only. */
static inline toml_mask toml_block_line_breaks(toml_block b, bool cr_only)
{
    toml_mask crs = toml_block_eq(b, '\r');

    return cr_only ? crs : crs | toml_block_eq(b, '\n');
}

/* Bytes in lo..hi: b - lo wraps around below lo, and is then above hi - lo. */
static inline __m128i toml_block_in_range(toml_block b, unsigned char lo, unsigned char hi)
{
    __m128i t = _mm_sub_epi8(b, _mm_set1_epi8((char)lo));

    return _mm_cmpeq_epi8(_mm_min_epu8(t, _mm_set1_epi8((char)(hi - lo))), t);
}

/* Bytes that cannot be in a bare key: all but A-Z a-z 0-9 _ -. */
static inline toml_mask toml_block_non_bare(toml_block b)
{
    /* OR-ing 0x20 maps A-Z onto a-z and nothing else into a-z */
    __m128i alpha = toml_block_in_range(_mm_or_si128(b, _mm_set1_epi8(0x20)), 'a', 'z');
    __m128i digit = toml_block_in_range(b, '0', '9');
    __m128i punct =
        _mm_or_si128(_mm_cmpeq_epi8(b, _mm_set1_epi8('_')), _mm_cmpeq_epi8(b, _mm_set1_epi8('-')));
    __m128i bare = _mm_or_si128(_mm_or_si128(alpha, digit), punct);

    return ~(toml_mask)_mm_movemask_epi8(bare) & 0xFFFF;
}

static inline unsigned toml_mask_first(toml_mask m)
{
    return (unsigned)__builtin_ctz(m);
}
#else
#define TOML_BLOCK_SIZE 8
typedef uint64_t toml_block;
typedef uint64_t toml_mask; /* 0x80 in each matched byte */

#define TOML_ONES ((uint64_t)0x0101010101010101u)
#define TOML_HIGHS (TOML_ONES * 0x80)

static inline toml_block toml_block_load(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;

    /* compilers turn this into one load (plus a byte swap on big-endian machines) */
    return (uint64_t)u[0] | (uint64_t)u[1] << 8 | (uint64_t)u[2] << 16 | (uint64_t)u[3] << 24 |
           (uint64_t)u[4] << 32 | (uint64_t)u[5] << 40 | (uint64_t)u[6] << 48 |
           (uint64_t)u[7] << 56;
}

static inline toml_mask toml_block_eq(toml_block w, unsigned char c)
{
    uint64_t x = w ^ (TOML_ONES * c);

    return ~(((x | TOML_HIGHS) - TOML_ONES) | x) & TOML_HIGHS;
}

/* Bytes below c (c <= 0x80). */
static inline toml_mask toml_block_below(toml_block w, unsigned char c)
{
    return ~(((w | TOML_HIGHS) - TOML_ONES * c) | w) & TOML_HIGHS;
}

/* Bytes at or above c (1 <= c <= 0x80). */
static inline toml_mask toml_block_at_least(toml_block w, unsigned char c)
{
    return (((w & ~TOML_HIGHS) + TOML_ONES * (0x80 - c)) | w) & TOML_HIGHS;
}

/* Bytes that cannot be in a bare key: all but A-Z a-z 0-9 _ -. */
static inline toml_mask toml_block_non_bare(toml_block w)
{
    /* OR-ing 0x20 maps A-Z onto a-z and nothing else into a-z */
    uint64_t folded = w | (TOML_ONES * 0x20);
    uint64_t alpha = toml_block_at_least(folded, 'a') & toml_block_below(folded, 'z' + 1);
    uint64_t digit = toml_block_at_least(w, '0') & toml_block_below(w, '9' + 1);

    return ~(alpha | digit | toml_block_eq(w, '_') | toml_block_eq(w, '-')) & TOML_HIGHS;
}

/* Control characters, DEL and non-ASCII bytes. */
static inline toml_mask toml_block_special(toml_block w)
{
    /* adding 1 to the low seven bits carries into bit 7 only from 0x7F */
    uint64_t del_or_high = (((w & ~TOML_HIGHS) + TOML_ONES) | w) & TOML_HIGHS;

    return toml_block_below(w, 0x20) | del_or_high;
}

/*
 * CR, and LF too unless cr_only. Only for text past the encoding check, which leaves tab, LF
 * and CR as the only bytes below 0x0E: so 0x0A..0x0D are line breaks and 0x0D alone is CR.
 */
static inline toml_mask toml_block_line_breaks(toml_block w, bool cr_only)
{
    return toml_block_below(w, 0x0E) & ~toml_block_below(w, cr_only ? 0x0D : 0x0A);
}

static inline unsigned toml_mask_first(toml_mask m)
{
    return (unsigned)__builtin_ctzll(m) / 8;
}
#endif

/*
 * Bytes [start, start + len) of the input as a NUL-terminated string of the document, taken
 * from its copy of the input: the NUL goes over the byte that follows, which for a bare key
 * or a string without escapes is a delimiter (quote, '=', '.', ']', space...) that no other
 * kept string holds. Saves a copy per key and string.
 */
static inline const char *toml_keep(struct toml_parser *p, size_t start, size_t len)
{
    p->kept[start + len] = '\0';
    return p->kept + start;
}

/* toml_parse.c: positions and errors, shared with toml_scalar.c. */
/* The position of any offset, by a scan from the start: for errors only. */
struct toml_pos toml_pos_at(const struct toml_parser *p, size_t pos);
struct toml_pos toml_counted_pos(struct toml_parser *p);
/* Catches up on the newlines in [from, to), which a multi-line string has just read. */
void toml_track_lines(struct toml_parser *p, size_t from, size_t to);

/*
 * The position of p->pos. Valid wherever the parser stands between tokens or at the start
 * of one (every newline read there is noted), not inside a multi-line string.
 */
static inline struct toml_pos toml_here(struct toml_parser *p)
{
    size_t offset = p->pos - p->line_start;

    if (!p->has_high && offset < INT_MAX)
        return (struct toml_pos){p->line, (int)offset + 1};
    return toml_counted_pos(p);
}

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
/* Integer, float, boolean or date/time into v, whose type it sets; v->line:col is p->pos. */
int toml_parse_scalar(struct toml_parser *p, struct gs_toml_value *v);

#endif
