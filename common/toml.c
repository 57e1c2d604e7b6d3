/*
 * toml.c: the TOML document model behind toml.h: the arena every document allocates from,
 * tables (entries in document order plus an open-addressing hash index once they hold more
 * than a few keys), arrays, and the public read-only getters.
 *
 * Parsing lives in toml_parse.c and toml_scalar.c; see toml_impl.h for how the pieces fit.
 * A document is immutable once gs_toml_parse() returns it, so the getters take const
 * pointers and are safe from any number of threads.
 */
#include "common/toml_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

/* Small allocations share chunks of this size; bigger ones get a chunk of their own. */
#define CHUNK_SIZE (64 * 1024)

/* Both classes: what a bare key holds can also continue a number token. */
#define BARE_TOKEN (TOML_CH_BARE | TOML_CH_TOKEN)

const unsigned char toml_char_class[256] = {
    ['-'] = BARE_TOKEN, ['_'] = BARE_TOKEN, ['.'] = TOML_CH_TOKEN, ['+'] = TOML_CH_TOKEN,
    ['A'] = BARE_TOKEN, ['B'] = BARE_TOKEN, ['C'] = BARE_TOKEN,    ['D'] = BARE_TOKEN,
    ['E'] = BARE_TOKEN, ['F'] = BARE_TOKEN, ['G'] = BARE_TOKEN,    ['H'] = BARE_TOKEN,
    ['I'] = BARE_TOKEN, ['J'] = BARE_TOKEN, ['K'] = BARE_TOKEN,    ['L'] = BARE_TOKEN,
    ['M'] = BARE_TOKEN, ['N'] = BARE_TOKEN, ['O'] = BARE_TOKEN,    ['P'] = BARE_TOKEN,
    ['Q'] = BARE_TOKEN, ['R'] = BARE_TOKEN, ['S'] = BARE_TOKEN,    ['T'] = BARE_TOKEN,
    ['U'] = BARE_TOKEN, ['V'] = BARE_TOKEN, ['W'] = BARE_TOKEN,    ['X'] = BARE_TOKEN,
    ['Y'] = BARE_TOKEN, ['Z'] = BARE_TOKEN, ['a'] = BARE_TOKEN,    ['b'] = BARE_TOKEN,
    ['c'] = BARE_TOKEN, ['d'] = BARE_TOKEN, ['e'] = BARE_TOKEN,    ['f'] = BARE_TOKEN,
    ['g'] = BARE_TOKEN, ['h'] = BARE_TOKEN, ['i'] = BARE_TOKEN,    ['j'] = BARE_TOKEN,
    ['k'] = BARE_TOKEN, ['l'] = BARE_TOKEN, ['m'] = BARE_TOKEN,    ['n'] = BARE_TOKEN,
    ['o'] = BARE_TOKEN, ['p'] = BARE_TOKEN, ['q'] = BARE_TOKEN,    ['r'] = BARE_TOKEN,
    ['s'] = BARE_TOKEN, ['t'] = BARE_TOKEN, ['u'] = BARE_TOKEN,    ['v'] = BARE_TOKEN,
    ['w'] = BARE_TOKEN, ['x'] = BARE_TOKEN, ['y'] = BARE_TOKEN,    ['z'] = BARE_TOKEN,
    ['0'] = BARE_TOKEN, ['1'] = BARE_TOKEN, ['2'] = BARE_TOKEN,    ['3'] = BARE_TOKEN,
    ['4'] = BARE_TOKEN, ['5'] = BARE_TOKEN, ['6'] = BARE_TOKEN,    ['7'] = BARE_TOKEN,
    ['8'] = BARE_TOKEN, ['9'] = BARE_TOKEN,
};

/* The free space of the head chunk is tracked in the document (free_start, free_len). */
struct toml_chunk {
    struct toml_chunk *next;
    max_align_t data[];
};

static struct toml_chunk *chunk_new(size_t cap)
{
    struct toml_chunk *c;

    if (cap > SIZE_MAX - sizeof(*c))
        return NULL;
    c = malloc(sizeof(*c) + cap);
    if (c == NULL)
        return NULL;
    c->next = NULL;
    return c;
}

/* Links a chunk of its own for a block too big to share one, behind the head. */
static void *alloc_big(struct gs_toml_doc *doc, size_t size)
{
    struct toml_chunk *big = chunk_new(size);

    if (big == NULL)
        return NULL;
    if (doc->chunks == NULL) {
        doc->chunks = big;
    } else {
        /* behind the head, so the head keeps serving small requests */
        big->next = doc->chunks->next;
        doc->chunks->next = big;
    }
    return big->data;
}

/* Starts a new head chunk; what was left free in the old one is given up. */
static int new_head(struct gs_toml_doc *doc)
{
    struct toml_chunk *c = chunk_new(CHUNK_SIZE);

    if (c == NULL)
        return -ENOMEM;
    c->next = doc->chunks;
    doc->chunks = c;
    doc->free_start = (char *)c->data;
    doc->free_len = CHUNK_SIZE;
    return 0;
}

/* toml_alloc() when the head chunk has no room, or size is 0 or absurd. */
void *toml_alloc_slow(struct gs_toml_doc *doc, size_t size)
{
    if (size == 0)
        size = 1; /* a distinct block, never NULL */
    if (size > SIZE_MAX - TOML_ALIGN)
        return NULL;
    size = (size + TOML_ALIGN - 1) & ~(TOML_ALIGN - 1);
    if (size > CHUNK_SIZE / 4)
        return alloc_big(doc, size);
    if (new_head(doc) < 0)
        return NULL;
    return toml_alloc(doc, size);
}

char *toml_alloc_bytes_slow(struct gs_toml_doc *doc, size_t size)
{
    if (size == 0)
        size = 1;
    if (size > CHUNK_SIZE / 4)
        return toml_alloc_slow(doc, size);
    if (new_head(doc) < 0)
        return NULL;
    return toml_alloc_bytes(doc, size);
}

/*
 * Makes room for one more element of a vector: returns items itself when there is room, else
 * a copy in a block twice the size (updating *cap), or NULL when out of memory.
 */
static void *vec_grow(struct gs_toml_doc *doc, void *items, size_t count, size_t *cap,
                      size_t elem_size)
{
    size_t new_cap;
    void *grown;

    if (count < *cap)
        return items;
    /* 8 is past most tables and arrays of a job file, which then never regrow */
    new_cap = *cap == 0 ? 8 : *cap * 2;
    if (new_cap < *cap || new_cap > SIZE_MAX / elem_size)
        return NULL;
    grown = toml_alloc(doc, new_cap * elem_size);
    if (grown == NULL)
        return NULL;
    if (count > 0)
        memcpy(grown, items, count * elem_size);
    *cap = new_cap;
    return grown;
}

/* FNV-1a, 32 bits. */
static uint32_t key_hash(const char *key, size_t len)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)key[i];
        h *= 16777619u;
    }
    return h;
}

struct toml_entry *toml_table_find_indexed(const struct gs_toml_value *table, const char *key,
                                           size_t len)
{
    const struct toml_table *t = &table->u.table;
    uint32_t h = key_hash(key, len);
    size_t mask = t->nslots - 1;

    for (size_t i = h & mask; t->slots[i] != 0; i = (i + 1) & mask) {
        struct toml_entry *e = &t->entries[t->slots[i] - 1];

        if (e->hash == h && toml_entry_is(e, key, len))
            return e;
    }
    return NULL;
}

bool toml_same_long_bytes(const char *a, const char *b, size_t len)
{
    return memcmp(a, b, len) == 0;
}

static void index_put(struct toml_table *t, size_t entry)
{
    size_t mask = t->nslots - 1;
    size_t i = t->entries[entry].hash & mask;

    while (t->slots[i] != 0)
        i = (i + 1) & mask;
    t->slots[i] = entry + 1;
}

/* Rebuilds the index with room for at least twice the entries (after the next insert). */
static int index_rebuild(struct gs_toml_doc *doc, struct toml_table *t)
{
    size_t nslots = 16;
    size_t *slots;

    while (nslots / 2 < t->count + 1) {
        if (nslots > SIZE_MAX / 2 / sizeof(*slots))
            return -ENOMEM;
        nslots *= 2;
    }
    slots = toml_alloc(doc, nslots * sizeof(*slots));
    if (slots == NULL)
        return -ENOMEM;
    memset(slots, 0, nslots * sizeof(*slots));
    if (t->slots == NULL) {
        /* entries added while the table was small were not hashed */
        for (size_t i = 0; i < t->count; i++)
            t->entries[i].hash = key_hash(t->entries[i].key, t->entries[i].key_len);
    }
    t->slots = slots;
    t->nslots = nslots;
    for (size_t i = 0; i < t->count; i++)
        index_put(t, i);
    return 0;
}

/* Grows the entries or the index of t so that one more entry fits. */
static int table_make_room(struct gs_toml_doc *doc, struct toml_table *t)
{
    struct toml_entry *entries;

    entries = vec_grow(doc, t->entries, t->count, &t->cap, sizeof(*t->entries));
    if (entries == NULL)
        return -ENOMEM;
    t->entries = entries;
    if (t->count >= TOML_LINEAR_MAX && (t->slots == NULL || (t->count + 1) * 2 > t->nslots))
        return index_rebuild(doc, t);
    return 0;
}

int toml_table_add_slow(struct gs_toml_doc *doc, struct gs_toml_value *table, const char *key,
                        size_t key_len, int key_line, int key_col, struct gs_toml_value *value)
{
    struct toml_table *t = &table->u.table;
    struct toml_entry *e;

    if (table_make_room(doc, t) < 0)
        return -ENOMEM;
    e = &t->entries[t->count++];
    *e = (struct toml_entry){key, key_len, 0, key_line, key_col, value};
    if (t->slots != NULL) {
        e->hash = key_hash(key, key_len);
        index_put(t, t->count - 1);
    }
    return 0;
}

int toml_array_grow(struct gs_toml_doc *doc, struct gs_toml_value *array)
{
    struct toml_array *a = &array->u.array;
    struct gs_toml_value **items;

    items = vec_grow(doc, a->items, a->count, &a->cap, sizeof(*a->items));
    if (items == NULL)
        return -ENOMEM;
    a->items = items;
    return 0;
}

void gs_toml_free(struct gs_toml_doc *doc)
{
    struct toml_chunk *c, *next;

    if (doc == NULL)
        return;
    for (c = doc->chunks; c != NULL; c = next) {
        next = c->next;
        free(c);
    }
    free(doc);
}

const struct gs_toml_value *gs_toml_root(const struct gs_toml_doc *doc)
{
    return doc == NULL ? NULL : doc->root;
}

enum gs_toml_type gs_toml_type(const struct gs_toml_value *v)
{
    return v == NULL ? GS_TOML_NONE : v->type;
}

const char *gs_toml_type_name(enum gs_toml_type type)
{
    switch (type) {
    case GS_TOML_NONE:
        return "none";
    case GS_TOML_TABLE:
        return "table";
    case GS_TOML_ARRAY:
        return "array";
    case GS_TOML_STRING:
        return "string";
    case GS_TOML_INTEGER:
        return "integer";
    case GS_TOML_FLOAT:
        return "float";
    case GS_TOML_BOOL:
        return "boolean";
    case GS_TOML_DATETIME:
        return "offset date-time";
    case GS_TOML_DATETIME_LOCAL:
        return "local date-time";
    case GS_TOML_DATE_LOCAL:
        return "local date";
    case GS_TOML_TIME_LOCAL:
        return "local time";
    }
    return "unknown";
}

int gs_toml_line(const struct gs_toml_value *v)
{
    return v == NULL ? 0 : v->line;
}

int gs_toml_col(const struct gs_toml_value *v)
{
    return v == NULL ? 0 : v->col;
}

size_t gs_toml_count(const struct gs_toml_value *v)
{
    if (v == NULL)
        return 0;
    if (v->type == GS_TOML_TABLE)
        return v->u.table.count;
    if (v->type == GS_TOML_ARRAY)
        return v->u.array.count;
    return 0;
}

const struct gs_toml_value *gs_toml_at(const struct gs_toml_value *v, size_t i)
{
    if (i >= gs_toml_count(v))
        return NULL;
    if (v->type == GS_TOML_TABLE)
        return v->u.table.entries[i].value;
    return v->u.array.items[i];
}

static const struct toml_entry *entry_at(const struct gs_toml_value *table, size_t i)
{
    if (table == NULL || table->type != GS_TOML_TABLE || i >= table->u.table.count)
        return NULL;
    return &table->u.table.entries[i];
}

const char *gs_toml_key_at(const struct gs_toml_value *table, size_t i, size_t *ret_len)
{
    const struct toml_entry *e = entry_at(table, i);

    if (e == NULL)
        return NULL;
    if (ret_len != NULL)
        *ret_len = e->key_len;
    return e->key;
}

int gs_toml_key_line(const struct gs_toml_value *table, size_t i)
{
    const struct toml_entry *e = entry_at(table, i);

    return e == NULL ? 0 : e->key_line;
}

int gs_toml_key_col(const struct gs_toml_value *table, size_t i)
{
    const struct toml_entry *e = entry_at(table, i);

    return e == NULL ? 0 : e->key_col;
}

const struct gs_toml_value *gs_toml_getn(const struct gs_toml_value *table, const char *key,
                                         size_t len)
{
    const struct toml_entry *e;

    if (table == NULL || table->type != GS_TOML_TABLE || (key == NULL && len > 0))
        return NULL;
    e = toml_table_find(table, key, len);
    return e == NULL ? NULL : e->value;
}

const struct gs_toml_value *gs_toml_get(const struct gs_toml_value *table, const char *key)
{
    if (key == NULL)
        return NULL;
    return gs_toml_getn(table, key, strlen(key));
}

const struct gs_toml_value *gs_toml_get_path(const struct gs_toml_value *table, const char *path)
{
    const struct gs_toml_value *v = table;
    const char *part = path, *dot;

    if (path == NULL)
        return NULL;
    for (;;) {
        dot = strchr(part, '.');
        if (dot == NULL)
            break;
        if (dot == part)
            return NULL;
        v = gs_toml_getn(v, part, (size_t)(dot - part));
        part = dot + 1;
    }
    if (*part == '\0')
        return NULL;
    return gs_toml_getn(v, part, strlen(part));
}

static int check_type(const struct gs_toml_value *v, enum gs_toml_type type)
{
    if (v == NULL)
        return -ENOENT;
    return v->type == type ? 0 : -EINVAL;
}

int gs_toml_as_string(const struct gs_toml_value *v, const char **ret_str, size_t *ret_len)
{
    int rc = check_type(v, GS_TOML_STRING);

    if (rc < 0)
        return rc;
    *ret_str = v->u.str.ptr;
    if (ret_len != NULL)
        *ret_len = v->u.str.len;
    return 0;
}

int gs_toml_as_int(const struct gs_toml_value *v, int64_t *ret_int)
{
    int rc = check_type(v, GS_TOML_INTEGER);

    if (rc < 0)
        return rc;
    *ret_int = v->u.integer;
    return 0;
}

int gs_toml_as_float(const struct gs_toml_value *v, double *ret_float)
{
    if (v == NULL)
        return -ENOENT;
    if (v->type == GS_TOML_FLOAT)
        *ret_float = v->u.real;
    else if (v->type == GS_TOML_INTEGER)
        *ret_float = (double)v->u.integer;
    else
        return -EINVAL;
    return 0;
}

int gs_toml_as_bool(const struct gs_toml_value *v, bool *ret_bool)
{
    int rc = check_type(v, GS_TOML_BOOL);

    if (rc < 0)
        return rc;
    *ret_bool = v->u.boolean;
    return 0;
}

int gs_toml_as_datetime(const struct gs_toml_value *v, struct gs_toml_datetime *ret_dt)
{
    if (v == NULL)
        return -ENOENT;
    switch (v->type) {
    case GS_TOML_DATETIME:
    case GS_TOML_DATETIME_LOCAL:
    case GS_TOML_DATE_LOCAL:
    case GS_TOML_TIME_LOCAL:
        *ret_dt = v->u.dt;
        return 0;
    default:
        return -EINVAL;
    }
}

int gs_toml_parse_file(const char *path, struct gs_toml_doc **ret_doc, struct gs_error *err)
{
    struct gs_buf text = GS_BUF_INIT;
    struct gs_error perr;
    FILE *f = fopen(path, "rb");
    int rc;

    if (f == NULL) {
        rc = -errno;
        return gs_error_set(err, rc, 0, 0, "%s: cannot open: %s", path, gs_strerror(rc));
    }
    rc = gs_buf_read_stream(&text, f);
    fclose(f);
    if (rc < 0) {
        gs_error_set(err, rc, 0, 0, "%s: cannot read: %s", path, gs_strerror(rc));
        goto out;
    }
    rc = gs_toml_parse(text.data != NULL ? text.data : "", text.len, ret_doc, &perr);
    if (rc < 0)
        gs_error_set(err, rc, 0, 0, "%s:%d:%d: %s", path, perr.line, perr.col, perr.msg);
out:
    gs_buf_release(&text);
    return rc;
}
